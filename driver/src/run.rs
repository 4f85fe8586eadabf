//! The measured hot loop: one connection per thread, a warmup, then a timed closed loop of events.

use std::collections::BTreeSet;
use std::sync::{Arc, Barrier, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use rand::distributions::{Distribution, Uniform};
use rand::rngs::SmallRng;
use rand::SeedableRng;

use crate::engine::{Connection, Engine, Value};
use crate::job::{Job, Latency, RunResult, Usage, Workload};
use crate::params::{self, CompiledBind};
use crate::procstat::{self, ServerSample};
use crate::{process, usage};

const MAX_ERROR_SAMPLES: usize = 5;

struct PreparedStatement {
    /// Statement id per table (index = table number - 1).
    ids: Vec<usize>,
    binds: Vec<CompiledBind>,
    repeat: u32,
}

struct ThreadTally {
    events: u64,
    rows: u64,
    errors: u64,
    error_samples: BTreeSet<String>,
    latency_ns: Histogram<u64>,
}

fn prepare_all(conn: &mut dyn Connection, w: &Workload, tables: u32) -> Result<Vec<PreparedStatement>, String> {
    w.statements
        .iter()
        .map(|s| {
            let ids = (1..=tables)
                .map(|t| conn.prepare(&s.sql.replace("{table}", &t.to_string())))
                .collect::<Result<Vec<_>, _>>()?;
            Ok(PreparedStatement { ids, binds: params::compile(&s.binds)?, repeat: s.repeat })
        })
        .collect()
}

/// One event: its statements (each repetition draws a fresh table and parameters), inside BEGIN/COMMIT if asked.
fn run_event(
    conn: &mut dyn Connection,
    stmts: &[PreparedStatement],
    begin: Option<&str>,
    rng: &mut SmallRng,
    table_pick: &Uniform<usize>,
    slots: &mut [i64],
    values: &mut Vec<Value>,
) -> Result<u64, String> {
    if let Some(begin) = begin {
        conn.batch(begin)?;
    }
    let mut rows = 0;
    for s in stmts {
        for _ in 0..s.repeat {
            let table = table_pick.sample(rng);
            params::fill(&s.binds, rng, slots, values);
            match conn.execute(s.ids[table], values) {
                Ok(r) => rows += r,
                Err(e) => {
                    if begin.is_some() {
                        let _ = conn.batch("ROLLBACK");
                    }
                    return Err(e);
                }
            }
        }
    }
    if begin.is_some() {
        if let Err(e) = conn.batch("COMMIT") {
            let _ = conn.batch("ROLLBACK");
            return Err(e);
        }
    }
    Ok(rows)
}

fn us(ns: u64) -> f64 {
    ns as f64 / 1000.0
}

pub fn run(job: &Job) -> Result<RunResult, String> {
    let workload = job.workload.clone().ok_or("run job has no workload")?;
    if job.threads == 0 || job.tables == 0 || job.table_size == 0 {
        return Err("threads, tables and table_size must be positive".into());
    }
    let counted = job.events.is_some();
    if !counted && (job.time_s.is_nan() || job.time_s <= 0.0 || job.warmup_s.is_nan() || job.warmup_s < 0.0) {
        return Err("time must be positive and warmup not negative".into());
    }
    if job.thp_disable {
        process::disable_thp()?;
    }
    let engine = Arc::new(Engine::open(job)?);
    let queries_per_event: u64 =
        workload.statements.iter().map(|s| s.repeat as u64).sum::<u64>() + if workload.transaction { 2 } else { 0 };

    // Connect and prepare on every thread before the clock starts, then release all threads at once. Thread 0 is
    // the calling thread, so that a 1-thread cell is a single-threaded process as a minimal C client would be
    // (glibc's malloc and stdio skip their locks until a second thread exists).
    let gate = Arc::new(Barrier::new(job.threads as usize));
    let start_at: Arc<Mutex<Option<Instant>>> = Arc::new(Mutex::new(None));
    let window = match job.events {
        // Counted mode: the window never closes on its own (a century), the event limit ends the loop.
        Some(n) => Window {
            warmup: Duration::ZERO,
            measured: Duration::from_secs(100 * 365 * 86_400),
            limit: Some(n),
            deterministic: job.deterministic,
            server_pid: job.server_pid,
        },
        None => Window {
            warmup: Duration::from_secs_f64(job.warmup_s),
            measured: Duration::from_secs_f64(job.time_s),
            limit: None,
            deterministic: job.deterministic,
            server_pid: job.server_pid,
        },
    };
    let run_started = Instant::now();
    let mut handles = Vec::new();
    for t in 1..job.threads {
        let (engine, gate, start_at, workload) = (engine.clone(), gate.clone(), start_at.clone(), workload.clone());
        let (tables, seed) = (job.tables, job.seed);
        handles.push(thread::spawn(move || {
            client_loop(&engine, &workload, tables, seed, t, &gate, &start_at, window, false).map(|(tally, ..)| tally)
        }));
    }
    let own = client_loop(&engine, &workload, job.tables, job.seed, 0, &gate, &start_at, window, true);

    let mut total =
        ThreadTally { events: 0, rows: 0, errors: 0, error_samples: BTreeSet::new(), latency_ns: new_histogram() };
    let mut setup_error = None;
    let (own_tally, client_usage, server) = match own {
        Ok((tally, usage, server)) => (Ok(tally), usage, server),
        Err(e) => (Err(e), None, None),
    };
    let mut outcomes = vec![own_tally];
    for h in handles {
        outcomes.push(h.join().map_err(|_| "a driver thread panicked".to_string())?);
    }
    for outcome in outcomes {
        match outcome {
            Ok(t) => {
                total.events += t.events;
                total.rows += t.rows;
                total.errors += t.errors;
                total.error_samples.extend(t.error_samples);
                total.latency_ns.add(&t.latency_ns).map_err(|e| format!("merging histograms: {e}"))?;
            }
            Err(e) => setup_error = Some(e),
        }
    }
    if let Some(e) = setup_error {
        return Err(e);
    }
    let secs = if job.deterministic {
        0.0
    } else if counted {
        run_started.elapsed().as_secs_f64()
    } else {
        window.measured.as_secs_f64()
    };
    let h = &total.latency_ns;
    let latency = if h.is_empty() || job.deterministic {
        Latency::default()
    } else {
        Latency {
            min_us: us(h.min()),
            mean_us: h.mean() / 1000.0,
            p50_us: us(h.value_at_quantile(0.50)),
            p95_us: us(h.value_at_quantile(0.95)),
            p99_us: us(h.value_at_quantile(0.99)),
            max_us: us(h.max()),
        }
    };
    Ok(RunResult {
        engine_version: engine.version(),
        threads: job.threads,
        duration_s: secs,
        events: total.events,
        queries: total.events * queries_per_event,
        rows: total.rows,
        errors: total.errors,
        error_samples: total.error_samples.into_iter().take(MAX_ERROR_SAMPLES).collect(),
        qps: if secs > 0.0 { (total.events * queries_per_event) as f64 / secs } else { 0.0 },
        eps: if secs > 0.0 { total.events as f64 / secs } else { 0.0 },
        latency,
        client_usage: if job.deterministic { Usage::default() } else { client_usage.unwrap_or_default() },
        process: process::facts(job.thp_disable),
        server_usage: server.map(|s| s.usage),
        server_processes: server.map(|s| s.processes),
    })
}

#[derive(Clone, Copy)]
struct Window {
    warmup: Duration,
    measured: Duration,
    /// Counted mode: stop after this many events, count them all.
    limit: Option<u64>,
    /// Record no latencies (see Job::deterministic).
    deterministic: bool,
    /// The server whose processes are measured alongside the driver.
    server_pid: Option<u32>,
}

/// One client: connect, prepare, wait at the gate, then run events until the window closes. Events that end
/// inside the measured window are counted. The thread that `takes_usage` samples the process's getrusage when
/// the measured window opens and when its loop ends, so the CPU and context switches cover the counted events.
#[allow(clippy::too_many_arguments)]
fn client_loop(
    engine: &Engine,
    workload: &Workload,
    tables: u32,
    seed: u64,
    index: u32,
    gate: &Barrier,
    start_at: &Mutex<Option<Instant>>,
    window: Window,
    takes_usage: bool,
) -> Result<(ThreadTally, Option<Usage>, Option<ServerSample>), String> {
    let setup = (|| {
        let mut conn = engine.connect()?;
        let stmts =
            prepare_all(conn.as_mut(), workload, tables).map_err(|e| format!("workload {}: {e}", workload.name))?;
        Ok::<_, String>((conn, stmts))
    })();
    if takes_usage {
        *start_at.lock().unwrap() = Some(Instant::now());
    }
    gate.wait();
    let (mut conn, stmts) = setup?;
    let t0 = start_at.lock().unwrap().expect("start time set before the gate opens");
    let (warm_end, end) = (t0 + window.warmup, t0 + window.warmup + window.measured);
    let mut rng = SmallRng::seed_from_u64(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15).wrapping_add(index as u64));
    let table_pick = Uniform::new(0usize, tables as usize);
    let mut slots = vec![0i64; workload.slots];
    let mut values = Vec::new();
    let begin = workload.transaction.then(|| engine.begin_sql(workload.writes));
    let mut tally =
        ThreadTally { events: 0, rows: 0, errors: 0, error_samples: BTreeSet::new(), latency_ns: new_histogram() };
    let mut before = None;
    let mut server_before = None;
    // Closed loop: the next event starts when the previous one ends, so one clock read per event suffices.
    let mut started = Instant::now();
    loop {
        match window.limit {
            Some(n) if tally.events + tally.errors >= n => break,
            None if started >= end => break,
            _ => {}
        }
        if takes_usage && before.is_none() && started >= warm_end {
            server_before = window.server_pid.map(procstat::sample);
            before = Some(usage::process());
            started = Instant::now();
        }
        let outcome = run_event(conn.as_mut(), &stmts, begin, &mut rng, &table_pick, &mut slots, &mut values);
        let done = Instant::now();
        if window.limit.is_some() || (started >= warm_end && done <= end) {
            match outcome {
                Ok(rows) => {
                    tally.events += 1;
                    tally.rows += rows;
                    if !window.deterministic {
                        tally.latency_ns.saturating_record((done - started).as_nanos() as u64);
                    }
                }
                Err(e) => {
                    tally.errors += 1;
                    if tally.error_samples.len() < MAX_ERROR_SAMPLES {
                        tally.error_samples.insert(e);
                    }
                }
            }
        }
        started = done;
    }
    let usage = before.map(|b| usage::delta(usage::process(), b));
    let server = server_before.map(|b| {
        let after = procstat::sample(window.server_pid.expect("sampled before"));
        ServerSample { usage: usage::delta(after.usage, b.usage), processes: after.processes }
    });
    Ok((tally, usage, server))
}

/// Event latencies in ns from 1 ns to one hour at 3 significant digits; longer events saturate at one hour.
fn new_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 3_600_000_000_000, 3).expect("static bounds are valid")
}
