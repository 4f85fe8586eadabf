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
use crate::job::{Job, Latency, RunResult, Workload};
use crate::params::{self, CompiledBind};
use crate::usage;

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
    if job.time_s.is_nan() || job.time_s <= 0.0 || job.warmup_s.is_nan() || job.warmup_s < 0.0 {
        return Err("time must be positive and warmup not negative".into());
    }
    let engine = Arc::new(Engine::open(job)?);
    let queries_per_event: u64 =
        workload.statements.iter().map(|s| s.repeat as u64).sum::<u64>() + if workload.transaction { 2 } else { 0 };

    // Connect and prepare on every thread before the clock starts, then release all threads at once.
    let gate = Arc::new(Barrier::new(job.threads as usize + 1));
    let start_at: Arc<Mutex<Option<Instant>>> = Arc::new(Mutex::new(None));
    let warmup = Duration::from_secs_f64(job.warmup_s);
    let measured = Duration::from_secs_f64(job.time_s);
    let mut handles = Vec::new();
    for t in 0..job.threads {
        let (engine, gate, start_at, workload) = (engine.clone(), gate.clone(), start_at.clone(), workload.clone());
        let (tables, seed) = (job.tables, job.seed);
        handles.push(thread::spawn(move || -> Result<ThreadTally, String> {
            let setup = (|| {
                let mut conn = engine.connect()?;
                let stmts = prepare_all(conn.as_mut(), &workload, tables)
                    .map_err(|e| format!("workload {}: {e}", workload.name))?;
                Ok::<_, String>((conn, stmts))
            })();
            gate.wait();
            let (mut conn, stmts) = setup?;
            let t0 = start_at.lock().unwrap().expect("start time set before the gate opens");
            let (warm_end, end) = (t0 + warmup, t0 + warmup + measured);
            let mut rng = SmallRng::seed_from_u64(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15).wrapping_add(t as u64));
            let table_pick = Uniform::new(0usize, tables as usize);
            let mut slots = vec![0i64; workload.slots];
            let mut values = Vec::new();
            let begin = workload.transaction.then(|| engine.begin_sql(workload.writes));
            let mut tally = ThreadTally {
                events: 0,
                rows: 0,
                errors: 0,
                error_samples: BTreeSet::new(),
                latency_ns: new_histogram(),
            };
            loop {
                let started = Instant::now();
                if started >= end {
                    break;
                }
                let outcome =
                    run_event(conn.as_mut(), &stmts, begin, &mut rng, &table_pick, &mut slots, &mut values);
                let done = Instant::now();
                if started < warm_end || done > end {
                    continue;
                }
                match outcome {
                    Ok(rows) => {
                        tally.events += 1;
                        tally.rows += rows;
                        tally.latency_ns.saturating_record((done - started).as_nanos() as u64);
                    }
                    Err(e) => {
                        tally.errors += 1;
                        if tally.error_samples.len() < MAX_ERROR_SAMPLES {
                            tally.error_samples.insert(e);
                        }
                    }
                }
            }
            Ok(tally)
        }));
    }
    let t0 = Instant::now();
    *start_at.lock().unwrap() = Some(t0);
    gate.wait();
    sleep_until(t0 + warmup);
    let before = usage::process();
    sleep_until(t0 + warmup + measured);
    let after = usage::process();

    let mut total = ThreadTally {
        events: 0,
        rows: 0,
        errors: 0,
        error_samples: BTreeSet::new(),
        latency_ns: new_histogram(),
    };
    let mut setup_error = None;
    for h in handles {
        match h.join().map_err(|_| "a driver thread panicked".to_string())? {
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
    let secs = measured.as_secs_f64();
    let h = &total.latency_ns;
    let latency = if h.is_empty() {
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
        qps: (total.events * queries_per_event) as f64 / secs,
        eps: total.events as f64 / secs,
        latency,
        client_usage: usage::delta(after, before),
    })
}

fn sleep_until(t: Instant) {
    let now = Instant::now();
    if t > now {
        thread::sleep(t - now);
    }
}

/// Event latencies in ns from 1 ns to one hour at 3 significant digits; longer events saturate at one hour.
fn new_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 3_600_000_000_000, 3).expect("static bounds are valid")
}
