//! The stale-read probe on MariaDB (stale/run.rs runs the loop): the write on the primary in autocommit; with `wait`,
//! the write's GTID is fetched on the primary (`@@last_gtid`) and waited for on the replica
//! (`SELECT MASTER_GTID_WAIT(gtid, timeout)`) before the read. Prepared statements of the `mysql` crate.

use std::time::Instant;

use mysql::prelude::Queryable;
use mysql::{Conn, Opts, OptsBuilder};

use crate::engine::dsn::password;
use crate::stale::{elapsed_ns, Probe, StaleJob, Writer};

fn options(dsn: &str, password: Option<&str>) -> Result<Opts, String> {
    let opts = Opts::from_url(dsn).map_err(|e| format!("bad MySQL DSN: {e}"))?;
    let mut builder = OptsBuilder::from_opts(opts).prefer_socket(false);
    if let Some(p) = password {
        builder = builder.pass(Some(p));
    }
    Ok(builder.into())
}

fn connect(dsn: &str, what: &str) -> Result<Conn, String> {
    let opts: Opts = options(dsn, password().as_deref())?;
    Conn::new(opts).map_err(|e| format!("cannot connect to the {what}: {e}"))
}

pub struct MyProbe {
    primary: Conn,
    replicas: Vec<Conn>,
    write: mysql::Statement,
    gtid: mysql::Statement,
    reads: Vec<mysql::Statement>,
    waits: Vec<mysql::Statement>,
    table: String,
    wait: bool,
}

impl MyProbe {
    pub fn open(job: &StaleJob) -> Result<MyProbe, String> {
        let mut primary = connect(&job.primary_dsn, "primary")?;
        let mut replicas = job.replica_dsns.iter().map(|d| connect(d, "replica")).collect::<Result<Vec<_>, _>>()?;
        let write =
            primary.prep(format!("UPDATE {} SET v = ? WHERE id = 1", job.probe_table)).map_err(|e| e.to_string())?;
        let gtid = primary.prep("SELECT @@last_gtid").map_err(|e| e.to_string())?;
        let mut reads = Vec::new();
        let mut waits = Vec::new();
        for r in replicas.iter_mut() {
            reads.push(r.prep(format!("SELECT v FROM {} WHERE id = 1", job.probe_table)).map_err(|e| e.to_string())?);
            waits.push(r.prep("SELECT MASTER_GTID_WAIT(?, ?)").map_err(|e| e.to_string())?);
        }
        Ok(MyProbe { primary, replicas, write, gtid, reads, waits, table: job.probe_table.clone(), wait: job.wait })
    }
}

impl Probe for MyProbe {
    fn start_value(&mut self) -> Result<i64, String> {
        let start: Option<i64> = self
            .primary
            .query_first(format!("SELECT v FROM {} WHERE id = 1", self.table))
            .map_err(|e| e.to_string())?;
        start.ok_or_else(|| "the probe row is missing on the primary".into())
    }

    fn write(&mut self, value: i64) -> Result<(), String> {
        self.primary.exec_drop(&self.write, (value,)).map_err(|e| format!("probe write: {e}"))
    }

    fn wait(&mut self, r: usize, timeout_s: f64) -> Result<Option<(u64, u64, bool)>, String> {
        if !self.wait {
            return Ok(None);
        }
        let t = Instant::now();
        let pos: Option<String> = self.primary.exec_first(&self.gtid, ()).map_err(|e| format!("@@last_gtid: {e}"))?;
        let fetch_ns = elapsed_ns(t);
        let pos = pos.ok_or("@@last_gtid is empty after a write (is the binlog on?)")?;
        let t = Instant::now();
        let waited: Option<i64> = self.replicas[r]
            .exec_first(&self.waits[r], (pos, timeout_s))
            .map_err(|e| format!("MASTER_GTID_WAIT: {e}"))?;
        Ok(Some((fetch_ns, elapsed_ns(t), waited != Some(0))))
    }

    fn read(&mut self, r: usize) -> Result<Option<i64>, String> {
        self.replicas[r].exec_first(&self.reads[r], ()).map_err(|e| format!("replica read: {e}"))
    }

    fn replicas(&self) -> usize {
        self.replicas.len()
    }

    fn waits_in_commit(&self) -> bool {
        false
    }
}

struct MyWriter {
    conn: Conn,
    stmt: mysql::Statement,
}

impl Writer for MyWriter {
    fn update(&mut self, id: u64) -> Result<(), String> {
        self.conn.exec_drop(&self.stmt, (id,)).map_err(|e| format!("background write: {e}"))
    }
}

pub fn open_writer(dsn: &str) -> Result<Box<dyn Writer>, String> {
    let mut conn = connect(dsn, "primary (background writer)")?;
    let stmt = conn.prep("UPDATE sbtest1 SET k = k + 1 WHERE id = ?").map_err(|e| e.to_string())?;
    Ok(Box::new(MyWriter { conn, stmt }))
}
