//! The stale-read probe's loop: the probes, timed, and the background writers on their open-loop schedule. The
//! engine's part is behind `Probe` and `Writer` (stale/mod.rs).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Barrier};
use std::thread;
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use crate::stale::factory::{open_probe, open_writer};
use crate::stale::{elapsed_ns, Percentiles, StaleJob, StaleResult};

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

pub fn stale_reads(job: &StaleJob) -> Result<StaleResult, String> {
    if job.replica_dsns.is_empty() || job.reads == 0 || job.table_size == 0 {
        return Err("stale-reads needs a replica, reads > 0 and table_size > 0".into());
    }
    if !job.probe_table.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
        return Err(format!("probe table {:?} is not a plain name", job.probe_table));
    }
    let mut probe = open_probe(job)?;
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
    // An engine that waits inside the commit (PostgreSQL): the wait's latency is that of the write.
    let in_commit = probe.waits_in_commit();
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
