//! The stale-read probe on MariaDB (stale/run.rs runs the loop): the write on the primary in autocommit; with `wait`,
//! the write's GTID is fetched on the primary (`@@last_gtid`) and waited for on the replica
//! (`SELECT MASTER_GTID_WAIT(gtid, timeout)`) before the read. Prepared statements on the driver's blocking wire
//! client (engine/mywire.rs). MySQL's probe (stale/mysql.rs) is this one with its own `GtidWait`: the two differ only
//! in how the write's position is read and waited for.

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

/// How a server of the MySQL family waits for a write on a replica: the write's position read on the primary, then
/// waited for on the replica with the timeout in seconds; the wait returns 0 once the replica has applied it
/// (MariaDB's MASTER_GTID_WAIT -1 on a timeout, MySQL's WAIT_FOR_EXECUTED_GTID_SET 1: both count as a timeout).
pub struct GtidWait {
    pub position_sql: &'static str,
    pub position_name: &'static str,
    pub wait_sql: &'static str,
    pub wait_name: &'static str,
}

/// MariaDB: @@last_gtid is this session's last write, exactly the probe's.
pub const WAIT: GtidWait = GtidWait {
    position_sql: "SELECT @@last_gtid",
    position_name: "@@last_gtid",
    wait_sql: "SELECT MASTER_GTID_WAIT(?, ?)",
    wait_name: "MASTER_GTID_WAIT",
};

/// The position as one token: MySQL breaks a long GTID set with newlines after its commas.
pub fn one_line(position: &str) -> String {
    position.split_whitespace().collect()
}

/// Whether the wait's result is a timeout: anything but 0 (a timeout's -1 or 1; NULL).
pub fn timed_out(waited: Option<i64>) -> bool {
    waited != Some(0)
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
    how: &'static GtidWait,
}

impl MyProbe {
    pub fn open(job: &StaleJob, how: &'static GtidWait) -> Result<MyProbe, String> {
        let mut primary = connect(&job.primary_dsn, "primary")?;
        let mut replicas = job.replica_dsns.iter().map(|d| connect(d, "replica")).collect::<Result<Vec<_>, _>>()?;
        let write = primary.prepare(&format!("UPDATE {} SET v = ? WHERE id = 1", job.probe_table))?;
        let gtid = primary.prepare(how.position_sql)?;
        let read_sql = format!("SELECT v FROM {} WHERE id = 1", job.probe_table);
        let read_primary = primary.prepare(&read_sql)?;
        let mut reads = Vec::new();
        let mut waits = Vec::new();
        for r in replicas.iter_mut() {
            reads.push(r.prepare(&read_sql)?);
            waits.push(r.prepare(how.wait_sql)?);
        }
        Ok(MyProbe { primary, replicas, write, gtid, read_primary, reads, waits, wait: job.wait, how })
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
        let how = self.how;
        let t = Instant::now();
        let pos = self.primary.query_first(self.gtid, &[]).map_err(|e| format!("{}: {e}", how.position_name))?;
        let fetch_ns = elapsed_ns(t);
        let pos = match pos {
            Some(Scalar::Text(p)) => one_line(&p),
            Some(Scalar::Int(x)) => x.to_string(),
            None => return Err(format!("{} is empty after a write (is the binlog on?)", how.position_name)),
        };
        // The timeout as text: the server converts it to the number the wait takes.
        let args = [Value::Text(pos), Value::Text(timeout_s.to_string())];
        let t = Instant::now();
        let waited =
            self.replicas[r].query_first(self.waits[r], &args).map_err(|e| format!("{}: {e}", how.wait_name))?;
        let waited = int(waited, how.wait_name)?;
        Ok(Some((fetch_ns, elapsed_ns(t), timed_out(waited))))
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
