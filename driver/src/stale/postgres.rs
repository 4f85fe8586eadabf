//! The stale-read probe on PostgreSQL (stale/run.rs runs the loop): the write on the primary in autocommit, then the
//! read of the same row on a hot standby. The wait is the commit itself: with `wait` the probe's session commits
//! under `synchronous_commit = remote_apply` (the lab lists every standby in the primary's
//! `synchronous_standby_names`), so the commit returns once the standbys have replayed it; without, under `local`.
//! Background writers commit under `local` (they never wait for the standbys). Everything on the driver's blocking
//! wire protocol (engine/pgwire.rs), prepared, binary results.

use crate::engine::dsn::password;
use crate::engine::pgwire::{config, PgWire};
use crate::engine::{Connection, Value};
use crate::stale::{Probe, StaleJob, Writer};

fn open(dsn: &str, what: &str) -> Result<PgWire, String> {
    let cfg = config(dsn, password().as_deref())?;
    PgWire::open(&cfg, &format!("the {what}"), true)
}

pub struct PgProbe {
    primary: PgWire,
    replicas: Vec<PgWire>,
    write: usize,
    read_primary: usize,
    reads: Vec<usize>,
}

impl PgProbe {
    pub fn open(job: &StaleJob) -> Result<PgProbe, String> {
        let mut primary = open(&job.primary_dsn, "primary")?;
        let commit = if job.wait { "remote_apply" } else { "local" };
        primary.batch(&format!("SET synchronous_commit = {commit}"))?;
        let write = primary.prepare(&format!("UPDATE {} SET v = ? WHERE id = 1", job.probe_table))?;
        let read_sql = format!("SELECT v FROM {} WHERE id = 1", job.probe_table);
        let read_primary = primary.prepare(&read_sql)?;
        let mut replicas = Vec::new();
        let mut reads = Vec::new();
        for d in &job.replica_dsns {
            let mut r = open(d, "standby")?;
            reads.push(r.prepare(&read_sql)?);
            replicas.push(r);
        }
        Ok(PgProbe { primary, replicas, write, read_primary, reads })
    }
}

impl Probe for PgProbe {
    fn start_value(&mut self) -> Result<i64, String> {
        self.primary.query_first_int(self.read_primary, &[])?.ok_or_else(|| "the probe row is missing".into())
    }

    fn write(&mut self, value: i64) -> Result<(), String> {
        self.primary.execute(self.write, &[Value::Int(value)]).map(|_| ()).map_err(|e| format!("probe write: {e}"))
    }

    fn wait(&mut self, _r: usize, _timeout_s: f64) -> Result<Option<(u64, u64, bool)>, String> {
        Ok(None) // in the commit (remote_apply)
    }

    fn read(&mut self, r: usize) -> Result<Option<i64>, String> {
        self.replicas[r].query_first_int(self.reads[r], &[]).map_err(|e| format!("standby read: {e}"))
    }

    fn replicas(&self) -> usize {
        self.replicas.len()
    }

    fn waits_in_commit(&self) -> bool {
        true
    }
}

struct PgWriter {
    conn: PgWire,
    stmt: usize,
}

impl Writer for PgWriter {
    fn update(&mut self, id: u64) -> Result<(), String> {
        self.conn.execute(self.stmt, &[Value::Int(id as i64)]).map(|_| ()).map_err(|e| format!("background write: {e}"))
    }
}

pub fn open_writer(dsn: &str) -> Result<Box<dyn Writer>, String> {
    let mut conn = open(dsn, "primary (background writer)")?;
    conn.batch("SET synchronous_commit = local")?;
    let stmt = conn.prepare("UPDATE sbtest1 SET k = k + 1 WHERE id = ?")?;
    Ok(Box::new(PgWriter { conn, stmt }))
}
