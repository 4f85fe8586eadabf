//! The stale-read probe of the replication lab (dbperf/replication/stale_reads.py): one client writes a row on the
//! primary and reads the same row on a replica at once, `reads` times, optionally waiting until the replica has
//! applied the write first, while background threads keep writing other rows on the primary. A native loop, so that
//! the gap between the write's commit and the read is the network's and the servers', not an interpreter's. Its own
//! job and result, apart from `Job`.
//!
//! This module holds the job, the result and what the loop needs of an engine (`Probe`, `Writer`); one file per
//! engine implements them (`mariadb`: waits for the write's GTID on the replica; `mysql`: the same probe, waiting for
//! the primary's gtid_executed after the write; `postgres`: waits in the commit),
//! `factory` picks the engine's, and `run` is the loop. Dependencies point one way: the engines use this module,
//! the factory uses the engines, the loop uses the factory, and this module uses none of them.
//!
//! Usage: dbperf-driver stale-reads JOB.json (or `-`)

pub mod factory;
pub mod mariadb;
pub mod mysql;
pub mod postgres;
pub mod run;

use std::time::Instant;

use serde::{Deserialize, Serialize};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StaleJob {
    /// "mariadb" (the default), "mysql" or "postgres".
    #[serde(default = "default_engine")]
    pub engine: String,
    /// mysql://user@host:port/db (postgresql://... for PostgreSQL) of the primary and of each replica (read round
    /// robin); the password is DBPERF_PASSWORD's, the same for every server of the lab's cluster.
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
    /// The GTID wait returned non-zero (MASTER_GTID_WAIT -1, WAIT_FOR_EXECUTED_GTID_SET 1: the replica did not
    /// reach the position within the timeout); 0 on PostgreSQL, whose remote_apply wait has no timeout.
    pub wait_timeouts: u64,
    /// Round trip of `SELECT MASTER_GTID_WAIT(...)` (MySQL: WAIT_FOR_EXECUTED_GTID_SET) on the replica; on PostgreSQL the commit under remote_apply
    /// (the write and its wait, one round trip); absent without wait.
    pub wait_latency: Option<Percentiles>,
    /// Round trip of fetching @@last_gtid (MySQL: @@GLOBAL.gtid_executed) on the primary after the write (what the
    /// technique adds there).
    pub gtid_fetch_latency: Option<Percentiles>,
    /// Commit of the probe's write on the primary (PostgreSQL with wait: including the remote_apply wait).
    pub write_latency: Percentiles,
    /// The replica read alone.
    pub read_latency: Percentiles,
    pub background_transactions: u64,
    pub background_trx_per_s: f64,
    pub elapsed_s: f64,
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
    /// The engine waits inside the commit (PostgreSQL's remote_apply): the wait's latency is that of the write.
    fn waits_in_commit(&self) -> bool;
}

/// A background writer's connection: `UPDATE sbtest1 SET k = k + 1 WHERE id = ?`, committed without a wait.
pub trait Writer {
    fn update(&mut self, id: u64) -> Result<(), String>;
}

pub fn elapsed_ns(t: Instant) -> u64 {
    t.elapsed().as_nanos() as u64
}
