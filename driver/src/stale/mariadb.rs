//! The stale-read probe on MariaDB (stale/run.rs runs the loop): the write on the primary in autocommit; with `wait`,
//! the write's GTID is fetched on the primary (`@@last_gtid`) and waited for on the replica
//! (`SELECT MASTER_GTID_WAIT(gtid, timeout)`) before the read. Prepared statements on the driver's blocking wire
//! client (engine/mywire.rs).

use std::time::Instant;

use crate::engine::dsn::password;
use crate::engine::mywire::{options, MyWire, Scalar};
use crate::engine::{Connection, Value};
use crate::stale::{elapsed_ns, Probe, StaleJob, Writer};

fn connect(dsn: &str, what: &str) -> Result<MyWire, String> {
    let opts = options(dsn, password().as_deref())?;
    MyWire::open(&opts, &format!("the {what}"), true)
}

/// The first value as an integer: None for no row or NULL.
fn int(v: Option<Scalar>, what: &str) -> Result<Option<i64>, String> {
    match v {
        None => Ok(None),
        Some(Scalar::Int(x)) => Ok(Some(x)),
        Some(Scalar::Text(t)) => Err(format!("{what}: expected an integer, got {t:?}")),
    }
}

pub struct MyProbe {
    primary: MyWire,
    replicas: Vec<MyWire>,
    write: usize,
    gtid: usize,
    read_primary: usize,
    reads: Vec<usize>,
    waits: Vec<usize>,
    wait: bool,
}

impl MyProbe {
    pub fn open(job: &StaleJob) -> Result<MyProbe, String> {
        let mut primary = connect(&job.primary_dsn, "primary")?;
        let mut replicas = job.replica_dsns.iter().map(|d| connect(d, "replica")).collect::<Result<Vec<_>, _>>()?;
        let write = primary.prepare(&format!("UPDATE {} SET v = ? WHERE id = 1", job.probe_table))?;
        let gtid = primary.prepare("SELECT @@last_gtid")?;
        let read_sql = format!("SELECT v FROM {} WHERE id = 1", job.probe_table);
        let read_primary = primary.prepare(&read_sql)?;
        let mut reads = Vec::new();
        let mut waits = Vec::new();
        for r in replicas.iter_mut() {
            reads.push(r.prepare(&read_sql)?);
            waits.push(r.prepare("SELECT MASTER_GTID_WAIT(?, ?)")?);
        }
        Ok(MyProbe { primary, replicas, write, gtid, read_primary, reads, waits, wait: job.wait })
    }
}

impl Probe for MyProbe {
    fn start_value(&mut self) -> Result<i64, String> {
        let start = self.primary.query_first(self.read_primary, &[])?;
        int(start, "the probe row")?.ok_or_else(|| "the probe row is missing on the primary".into())
    }

    fn write(&mut self, value: i64) -> Result<(), String> {
        self.primary.execute(self.write, &[Value::Int(value)]).map(|_| ()).map_err(|e| format!("probe write: {e}"))
    }

    fn wait(&mut self, r: usize, timeout_s: f64) -> Result<Option<(u64, u64, bool)>, String> {
        if !self.wait {
            return Ok(None);
        }
        let t = Instant::now();
        let pos = self.primary.query_first(self.gtid, &[]).map_err(|e| format!("@@last_gtid: {e}"))?;
        let fetch_ns = elapsed_ns(t);
        let pos = match pos {
            Some(Scalar::Text(p)) => p,
            Some(Scalar::Int(x)) => x.to_string(),
            None => return Err("@@last_gtid is empty after a write (is the binlog on?)".into()),
        };
        // The timeout as text: the server converts it to the number MASTER_GTID_WAIT takes.
        let args = [Value::Text(pos), Value::Text(timeout_s.to_string())];
        let t = Instant::now();
        let waited =
            self.replicas[r].query_first(self.waits[r], &args).map_err(|e| format!("MASTER_GTID_WAIT: {e}"))?;
        let waited = int(waited, "MASTER_GTID_WAIT")?;
        Ok(Some((fetch_ns, elapsed_ns(t), waited != Some(0))))
    }

    fn read(&mut self, r: usize) -> Result<Option<i64>, String> {
        let v = self.replicas[r].query_first(self.reads[r], &[]).map_err(|e| format!("replica read: {e}"))?;
        int(v, "replica read")
    }

    fn replicas(&self) -> usize {
        self.replicas.len()
    }

    fn waits_in_commit(&self) -> bool {
        false
    }
}

struct MyWriter {
    conn: MyWire,
    stmt: usize,
}

impl Writer for MyWriter {
    fn update(&mut self, id: u64) -> Result<(), String> {
        self.conn.execute(self.stmt, &[Value::Int(id as i64)]).map(|_| ()).map_err(|e| format!("background write: {e}"))
    }
}

pub fn open_writer(dsn: &str) -> Result<Box<dyn Writer>, String> {
    let mut conn = connect(dsn, "primary (background writer)")?;
    let stmt = conn.prepare("UPDATE sbtest1 SET k = k + 1 WHERE id = ?")?;
    Ok(Box::new(MyWriter { conn, stmt }))
}
