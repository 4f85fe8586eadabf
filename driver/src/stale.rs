//! The stale-read probe of the replication lab (dbperf/replication/stale_reads.py): one client writes a row on the
//! primary and reads the same row on a replica at once, `reads` times, optionally waiting for the write's GTID on
//! the replica first (`SELECT MASTER_GTID_WAIT(@@last_gtid of the write, timeout)`), while background threads keep
//! writing other rows on the primary. A native loop, so that the gap between the write's commit and the read is the
//! network's and the servers', not an interpreter's. MariaDB only; its own job and result, apart from `Job`.
//!
//! Usage: dbperf-driver stale-reads JOB.json (or `-`)

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
    /// mysql://user@host:port/db of the primary and of each replica (read round robin); the password is
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
    /// MASTER_GTID_WAIT returned -1 (the replica did not reach the GTID within the timeout).
    pub wait_timeouts: u64,
    /// Round trip of `SELECT MASTER_GTID_WAIT(...)` on the replica; absent without wait.
    pub wait_latency: Option<Percentiles>,
    /// Round trip of fetching @@last_gtid on the primary after the write (what the technique adds there).
    pub gtid_fetch_latency: Option<Percentiles>,
    /// Commit of the probe's write on the primary.
    pub write_latency: Percentiles,
    /// The replica read alone.
    pub read_latency: Percentiles,
    pub background_transactions: u64,
    pub background_trx_per_s: f64,
    pub elapsed_s: f64,
}

const PASSWORD_ENV: &str = "DBPERF_PASSWORD";

fn connect(dsn: &str, what: &str) -> Result<Conn, String> {
    let password = std::env::var(PASSWORD_ENV).ok();
    let opts: Opts = crate::my::options(dsn, password.as_deref())?;
    Conn::new(opts).map_err(|e| format!("cannot connect to the {what}: {e}"))
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
    let setup = connect(&b.dsn, "primary (background writer)").and_then(|mut conn| {
        let stmt = conn.prep("UPDATE sbtest1 SET k = k + 1 WHERE id = ?").map_err(|e| e.to_string())?;
        Ok((conn, stmt))
    });
    b.ready.wait(); // connected (or failed) before the probes start
    let (mut conn, stmt) = setup?;
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
        conn.exec_drop(&stmt, (id,)).map_err(|e| format!("background write: {e}"))?;
        b.done.fetch_add(1, Ordering::Relaxed);
        n += 1;
    }
    Ok(())
}

fn elapsed_ns(t: Instant) -> u64 {
    t.elapsed().as_nanos() as u64
}

pub fn stale_reads(job: &StaleJob) -> Result<StaleResult, String> {
    if job.replica_dsns.is_empty() || job.reads == 0 || job.table_size == 0 {
        return Err("stale-reads needs a replica, reads > 0 and table_size > 0".into());
    }
    if !job.probe_table.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
        return Err(format!("probe table {:?} is not a plain name", job.probe_table));
    }
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
    let start: Option<i64> =
        primary.query_first(format!("SELECT v FROM {} WHERE id = 1", job.probe_table)).map_err(|e| e.to_string())?;
    let mut value = start.ok_or("the probe row is missing on the primary")?;

    let stop = Arc::new(AtomicBool::new(false));
    let done = Arc::new(AtomicU64::new(0));
    let ready = Arc::new(Barrier::new(job.background_threads as usize + 1));
    let interval_s = if job.background_rate > 0.0 { job.background_threads as f64 / job.background_rate } else { 0.0 };
    let mut writers = Vec::new();
    for t in 0..job.background_threads {
        let b = Background {
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
            let r = (i as usize) % replicas.len();
            let t = Instant::now();
            primary.exec_drop(&write, (value,)).map_err(|e| format!("probe write: {e}"))?;
            h_write.saturating_record(elapsed_ns(t));
            if job.wait {
                let t = Instant::now();
                let pos: Option<String> = primary.exec_first(&gtid, ()).map_err(|e| format!("@@last_gtid: {e}"))?;
                h_gtid.saturating_record(elapsed_ns(t));
                let pos = pos.ok_or("@@last_gtid is empty after a write (is the binlog on?)")?;
                let t = Instant::now();
                let waited: Option<i64> = replicas[r]
                    .exec_first(&waits[r], (pos, job.wait_timeout_s))
                    .map_err(|e| format!("MASTER_GTID_WAIT: {e}"))?;
                h_wait.saturating_record(elapsed_ns(t));
                if waited != Some(0) {
                    timeouts += 1;
                }
            }
            let t = Instant::now();
            let seen: Option<i64> = replicas[r].exec_first(&reads[r], ()).map_err(|e| format!("replica read: {e}"))?;
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
    Ok(StaleResult {
        reads: job.reads,
        stale,
        wait_timeouts: timeouts,
        wait_latency: job.wait.then(|| percentiles(&h_wait)),
        gtid_fetch_latency: job.wait.then(|| percentiles(&h_gtid)),
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
