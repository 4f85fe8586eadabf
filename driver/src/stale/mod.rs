//! The stale-read probe of the replication lab (dbperf/replication/stale_reads.py): one client writes a row on the
//! primary and reads the same row on a replica at once, `reads` times, optionally waiting for the write's GTID on
//! the replica first (`SELECT MASTER_GTID_WAIT(@@last_gtid of the write, timeout)`), while background threads keep
//! writing other rows on the primary. A native loop, so that the gap between the write's commit and the read is the
//! network's and the servers', not an interpreter's. Its own job and result, apart from `Job`. MariaDB here;
//! PostgreSQL in stale/postgres.rs, where the wait is the commit itself (`synchronous_commit = remote_apply`).
//!
//! Usage: dbperf-driver stale-reads JOB.json (or `-`)

pub mod postgres;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Barrier};
use std::thread;
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use mysql::prelude::Queryable;
use mysql::{Conn, Opts};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use serde::{Deserialize, Serialize};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StaleJob {
    /// "mariadb" (the default) or "postgres".
    #[serde(default = "default_engine")]
    pub engine: String,
    /// mysql://user@host:port/db (postgresql://... for PostgreSQL) of the primary and of each replica (read round robin); the password is
    /// DBPERF_PASSWORD's, the same for every server of the lab's cluster.
    pub primary_dsn: String,
    pub replica_dsns: Vec<String>,
    /// A table `probe(id INT PRIMARY KEY, v BIGINT)` holding row id = 1, created by the lab.
    pub probe_table: String,
    pub reads: u64,
    pub wait: bool,
    pub wait_timeout_s: f64,
    /// Background writers: `UPDATE sbtest1 SET k = k + 1 WHERE id = ?` in autocommit, uniform ids.
    pub background_threads: u32,
    /// Their total rate in transactions per second, spread over the threads on a fixed schedule (open loop);
    /// 0: as fast as they go (a replica slower than the primary then falls further behind with every probe).
    pub background_rate: f64,
    pub table_size: u64,
    pub seed: u64,
}

fn default_engine() -> String {
    "mariadb".into()
}

#[derive(Debug, Serialize, Default)]
pub struct Percentiles {
    pub p50_us: f64,
    pub p95_us: f64,
    pub p99_us: f64,
    pub max_us: f64,
    pub mean_us: f64,
}

#[derive(Debug, Serialize)]
pub struct StaleResult {
    pub reads: u64,
    pub stale: u64,
    /// MASTER_GTID_WAIT returned -1 (the replica did not reach the GTID within the timeout); 0 on PostgreSQL,
    /// whose remote_apply wait has no timeout.
    pub wait_timeouts: u64,
    /// Round trip of `SELECT MASTER_GTID_WAIT(...)` on the replica; on PostgreSQL the commit under remote_apply
    /// (the write and its wait, one round trip); absent without wait.
    pub wait_latency: Option<Percentiles>,
    /// Round trip of fetching @@last_gtid on the primary after the write (what the technique adds there).
    pub gtid_fetch_latency: Option<Percentiles>,
    /// Commit of the probe's write on the primary (PostgreSQL with wait: including the remote_apply wait).
    pub write_latency: Percentiles,
    /// The replica read alone.
    pub read_latency: Percentiles,
    pub background_transactions: u64,
    pub background_trx_per_s: f64,
    pub elapsed_s: f64,
}

const PASSWORD_ENV: &str = "DBPERF_PASSWORD";

pub fn password() -> Option<String> {
    std::env::var(PASSWORD_ENV).ok()
}

fn connect(dsn: &str, what: &str) -> Result<Conn, String> {
    let opts: Opts = crate::engine::my::options(dsn, password().as_deref())?;
    Conn::new(opts).map_err(|e| format!("cannot connect to the {what}: {e}"))
}

/// One engine's connections of the probe: the writer on the primary and a reader on each replica.
pub trait Probe {
    /// The probe row's value on the primary before the first probe.
    fn start_value(&mut self) -> Result<i64, String>;
    /// The probe's write on the primary, committed (with the engine's wait when it is part of the commit).
    fn write(&mut self, value: i64) -> Result<(), String>;
    /// After the write, waits until replica `r` has applied it, when that is a step of its own:
    /// Some((fetch_ns, wait_ns, timed_out)); None when the engine waits in the commit (or without wait).
    fn wait(&mut self, r: usize, timeout_s: f64) -> Result<Option<(u64, u64, bool)>, String>;
    /// The probe row's value on replica `r`.
    fn read(&mut self, r: usize) -> Result<Option<i64>, String>;
    fn replicas(&self) -> usize;
}

/// A background writer's connection: `UPDATE sbtest1 SET k = k + 1 WHERE id = ?`, committed without a wait.
pub trait Writer {
    fn update(&mut self, id: u64) -> Result<(), String>;
}

struct MyProbe {
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
    fn open(job: &StaleJob) -> Result<MyProbe, String> {
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

fn open_writer(engine: &str, dsn: &str) -> Result<Box<dyn Writer>, String> {
    if engine == "postgres" {
        return postgres::open_writer(dsn);
    }
    let mut conn = connect(dsn, "primary (background writer)")?;
    let stmt = conn.prep("UPDATE sbtest1 SET k = k + 1 WHERE id = ?").map_err(|e| e.to_string())?;
    Ok(Box::new(MyWriter { conn, stmt }))
}

fn histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 3_600_000_000_000, 3).expect("static bounds are valid")
}

fn percentiles(h: &Histogram<u64>) -> Percentiles {
    if h.is_empty() {
        return Percentiles::default();
    }
    let us = |ns: u64| ns as f64 / 1000.0;
    Percentiles {
        p50_us: us(h.value_at_quantile(0.50)),
        p95_us: us(h.value_at_quantile(0.95)),
        p99_us: us(h.value_at_quantile(0.99)),
        max_us: us(h.max()),
        mean_us: h.mean() / 1000.0,
    }
}

struct Background {
    engine: String,
    dsn: String,
    table_size: u64,
    seed: u64,
    /// Seconds between two writes of this thread; 0: none.
    interval_s: f64,
    ready: Arc<Barrier>,
    stop: Arc<AtomicBool>,
    done: Arc<AtomicU64>,
}

fn background(b: Background) -> Result<(), String> {
    let setup = open_writer(&b.engine, &b.dsn);
    b.ready.wait(); // connected (or failed) before the probes start
    let mut conn = setup?;
    let mut rng = SmallRng::seed_from_u64(b.seed);
    let started = Instant::now();
    let mut n = 0u64;
    while !b.stop.load(Ordering::Relaxed) {
        if b.interval_s > 0.0 {
            let due = started + Duration::from_secs_f64(n as f64 * b.interval_s);
            let now = Instant::now();
            if due > now {
                thread::sleep(due - now);
            }
        }
        let id = rng.gen_range(1..=b.table_size);
        conn.update(id)?;
        b.done.fetch_add(1, Ordering::Relaxed);
        n += 1;
    }
    Ok(())
}

pub fn elapsed_ns(t: Instant) -> u64 {
    t.elapsed().as_nanos() as u64
}

pub fn stale_reads(job: &StaleJob) -> Result<StaleResult, String> {
    if job.replica_dsns.is_empty() || job.reads == 0 || job.table_size == 0 {
        return Err("stale-reads needs a replica, reads > 0 and table_size > 0".into());
    }
    if !job.probe_table.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
        return Err(format!("probe table {:?} is not a plain name", job.probe_table));
    }
    let mut probe: Box<dyn Probe> = match job.engine.as_str() {
        "mariadb" | "mysql" => Box::new(MyProbe::open(job)?),
        "postgres" => Box::new(postgres::PgProbe::open(job)?),
        other => return Err(format!("stale-reads: engine {other:?} is not supported")),
    };
    let mut value = probe.start_value()?;

    let stop = Arc::new(AtomicBool::new(false));
    let done = Arc::new(AtomicU64::new(0));
    let ready = Arc::new(Barrier::new(job.background_threads as usize + 1));
    let interval_s = if job.background_rate > 0.0 { job.background_threads as f64 / job.background_rate } else { 0.0 };
    let mut writers = Vec::new();
    for t in 0..job.background_threads {
        let b = Background {
            engine: job.engine.clone(),
            dsn: job.primary_dsn.clone(),
            table_size: job.table_size,
            seed: job.seed.wrapping_add(t as u64 + 1),
            interval_s,
            ready: ready.clone(),
            stop: stop.clone(),
            done: done.clone(),
        };
        writers.push(thread::spawn(move || background(b)));
    }
    ready.wait();
    let (mut h_write, mut h_read, mut h_wait, mut h_gtid) = (histogram(), histogram(), histogram(), histogram());
    let (mut stale, mut timeouts) = (0u64, 0u64);
    let started = Instant::now();
    let background_before = done.load(Ordering::Relaxed);
    let outcome = (|| -> Result<(), String> {
        for i in 0..job.reads {
            value += 1;
            let r = (i as usize) % probe.replicas();
            let t = Instant::now();
            probe.write(value)?;
            h_write.saturating_record(elapsed_ns(t));
            if let Some((fetch_ns, wait_ns, timed_out)) = probe.wait(r, job.wait_timeout_s)? {
                h_gtid.saturating_record(fetch_ns);
                h_wait.saturating_record(wait_ns);
                timeouts += u64::from(timed_out);
            }
            let t = Instant::now();
            let seen = probe.read(r)?;
            h_read.saturating_record(elapsed_ns(t));
            if seen.unwrap_or(i64::MIN) < value {
                stale += 1;
            }
        }
        Ok(())
    })();
    let elapsed_s = started.elapsed().as_secs_f64();
    let background_transactions = done.load(Ordering::Relaxed) - background_before;
    stop.store(true, Ordering::Relaxed);
    for w in writers {
        w.join().map_err(|_| "a background writer panicked".to_string())??;
    }
    outcome?;
    // PostgreSQL waits inside the commit: the wait's latency is that of the write.
    let in_commit = job.engine == "postgres";
    Ok(StaleResult {
        reads: job.reads,
        stale,
        wait_timeouts: timeouts,
        wait_latency: job.wait.then(|| percentiles(if in_commit { &h_write } else { &h_wait })),
        gtid_fetch_latency: (job.wait && !in_commit).then(|| percentiles(&h_gtid)),
        write_latency: percentiles(&h_write),
        read_latency: percentiles(&h_read),
        background_transactions,
        background_trx_per_s: if elapsed_s > 0.0 { background_transactions as f64 / elapsed_s } else { 0.0 },
        elapsed_s,
    })
}

pub fn main(path: &str) -> Result<String, String> {
    let text = if path == "-" {
        let mut s = String::new();
        std::io::Read::read_to_string(&mut std::io::stdin(), &mut s).map_err(|e| format!("reading stdin: {e}"))?;
        s
    } else {
        std::fs::read_to_string(path).map_err(|e| format!("reading {path}: {e}"))?
    };
    let job: StaleJob = serde_json::from_str(&text).map_err(|e| format!("bad stale-reads job: {e}"))?;
    serde_json::to_string(&stale_reads(&job)?).map_err(|e| e.to_string())
}
