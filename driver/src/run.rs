//! The measured hot loop: one connection per thread, a warmup, then a timed loop of events: closed (the next
//! event starts when the previous one ends) or open (events are due at a rate, and their latency counts from
//! when they were due).

use std::collections::BTreeSet;
use std::sync::{Arc, Barrier, Mutex};
use std::thread;
use std::time::{Duration, Instant, SystemTime};

use crate::rng::WyRand;
use rand::distributions::{Distribution, Uniform, WeightedIndex};
use rand::SeedableRng;

use crate::engine::factory::Engine;
use crate::engine::{Connection, Value};
use crate::job::{Job, Latency, MixCount, OpenLoop, RunResult, StatementLatency, Usage, Workload};
use crate::params::{self, CompiledBind};
use crate::procstat::{self, ServerSample};
use crate::schedule::{Arrivals, Schedule, MAX_RATE};
use crate::series::{self, us, Board, Tally};
use crate::steady::{self, Lead, SteadyReport};
use crate::{process, tick, usage};

pub(crate) const MAX_ERROR_SAMPLES: usize = 5;

pub(crate) struct PreparedStatement {
    /// Statement id per table (index = table number - 1).
    pub(crate) ids: Vec<usize>,
    pub(crate) binds: Vec<CompiledBind>,
    repeat: u32,
}

/// One kind of event of the workload (a mix has several), prepared on one connection.
pub(crate) struct Kind {
    pub(crate) stmts: Vec<PreparedStatement>,
    begin: Option<&'static str>,
    pub(crate) queries: u64,
    /// Per-statement times are taken (a clock read per statement) only for events of more than one statement.
    pub(crate) timed: bool,
    /// One statement, run once, outside a transaction: the event is that execution (run_event's short way).
    pub(crate) single: bool,
}

/// Sum and max of one statement's execution times, in ns, and how many executions.
#[derive(Clone, Copy, Default)]
pub(crate) struct StatementTime {
    executions: u64,
    sum_ns: u64,
    max_ns: u64,
}

impl StatementTime {
    pub(crate) fn add(&mut self, o: &StatementTime) {
        self.executions += o.executions;
        self.sum_ns += o.sum_ns;
        self.max_ns = self.max_ns.max(o.max_ns);
    }
}

/// What one thread measured.
struct ThreadOut {
    total: Tally,
    error_samples: BTreeSet<String>,
    lag_sum_ns: u128,
    late: u64,
    backlog: u64,
    /// Per kind, per statement slot (BEGIN, statements..., COMMIT).
    statement_times: Vec<Vec<StatementTime>>,
    kind_events: Vec<u64>,
    /// From the shared start to the measured window (fixed, or decided by the steady-state monitor).
    warmup_s: f64,
    /// Thread 0 of a steady-state cell: how the warm-up ended.
    steady: Option<SteadyReport>,
}

fn kind_queries(w: &Workload) -> u64 {
    w.statements.iter().map(|s| s.repeat as u64).sum::<u64>() + if w.transaction { 2 } else { 0 }
}

/// The event kinds of a workload: its mix, or itself.
pub(crate) fn kinds_of(w: &Workload) -> Vec<&Workload> {
    if w.mix.is_empty() {
        vec![w]
    } else {
        w.mix.iter().collect()
    }
}

pub(crate) fn prepare_kind(
    conn: &mut dyn Connection,
    engine: &Engine,
    w: &Workload,
    tables: u32,
) -> Result<Kind, String> {
    let stmts = w
        .statements
        .iter()
        .map(|s| {
            let ids = (1..=tables)
                .map(|t| conn.prepare(&s.sql.replace("{table}", &t.to_string())))
                .collect::<Result<Vec<_>, _>>()?;
            Ok(PreparedStatement { ids, binds: params::compile(&s.binds)?, repeat: s.repeat })
        })
        .collect::<Result<Vec<_>, String>>()
        .map_err(|e| format!("workload {}: {e}", w.name))?;
    let timed = w.statements.len() + if w.transaction { 2 } else { 0 } > 1;
    let single = !w.transaction && w.statements.len() == 1 && w.statements[0].repeat == 1;
    let begin = w.transaction.then(|| engine.begin_sql(w.writes));
    Ok(Kind { stmts, begin, queries: kind_queries(w), timed, single })
}

/// Adds the time since `*last` (a tick) to statement slot `i` and moves `*last` on.
#[inline]
fn lap(times: &mut Option<(&mut [StatementTime], u64)>, i: usize) {
    if let Some((buf, last)) = times {
        let now = tick::now();
        let ns = now.saturating_sub(*last);
        let t = &mut buf[i];
        t.executions += 1;
        t.sum_ns += ns;
        t.max_ns = t.max_ns.max(ns);
        *last = now;
    }
}

/// One event: its statements (each repetition draws a fresh table and parameters), inside BEGIN/COMMIT if asked.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
pub(crate) fn run_event(
    conn: &mut dyn Connection,
    kind: &Kind,
    rng: &mut WyRand,
    table_pick: &Uniform<usize>,
    tables: usize,
    slots: &mut [i64],
    values: &mut Vec<Value>,
    mut times: Option<(&mut [StatementTime], u64)>,
) -> Result<u64, String> {
    if let Some(begin) = kind.begin {
        conn.batch(begin)?;
        lap(&mut times, 0);
    }
    let mut rows = 0;
    for (i, s) in kind.stmts.iter().enumerate() {
        for _ in 0..s.repeat {
            let table = if tables == 1 { 0 } else { table_pick.sample(rng) };
            params::fill(&s.binds, rng, slots, values);
            match conn.execute(s.ids[table], values) {
                Ok(r) => rows += r,
                Err(e) => {
                    if kind.begin.is_some() {
                        let _ = conn.batch("ROLLBACK");
                    }
                    return Err(e);
                }
            }
            lap(&mut times, i + 1);
        }
    }
    if kind.begin.is_some() {
        if let Err(e) = conn.batch("COMMIT") {
            let _ = conn.batch("ROLLBACK");
            return Err(e);
        }
        lap(&mut times, kind.stmts.len() + 1);
    }
    Ok(rows)
}

pub(crate) fn check_job(job: &Job, workload: &Workload) -> Result<(), String> {
    if job.threads == 0 || job.tables == 0 || job.table_size == 0 {
        return Err("threads, tables and table_size must be positive".into());
    }
    if job.events.is_none() && (job.time_s.is_nan() || job.time_s <= 0.0 || job.warmup_s.is_nan() || job.warmup_s < 0.0)
    {
        return Err("time must be positive and warmup not negative".into());
    }
    if !job.interval_s.is_finite() || job.interval_s < 0.0 {
        return Err(format!("interval_s must be 0 (no time series) or positive, got {}", job.interval_s));
    }
    if let Some(p) = job.percentiles.iter().find(|p| !(p.is_finite() && **p > 0.0 && **p <= 100.0)) {
        return Err(format!("percentile {p} is not in (0, 100]"));
    }
    if let Some(rate) = job.rate {
        if !rate.is_finite() || rate <= 0.0 {
            return Err(format!("rate must be a positive number of events per second, got {rate}"));
        }
        if rate > MAX_RATE {
            return Err(format!("rate {rate} is above the {MAX_RATE:e} events/s the driver can schedule"));
        }
        if job.events.is_some() {
            return Err("an open-loop rate needs a timed window, not an event count".into());
        }
        // Below one event in the window a thread's gap overflows to infinity and the schedule degenerates into
        // an unthrottled closed loop while the result says open loop: refuse it (the lab refuses it first).
        let gap_ns = 1e9 * job.threads as f64 / rate;
        if !gap_ns.is_finite() || rate * job.time_s < 1.0 {
            return Err(format!("rate {rate} is less than one event in the {} s window", job.time_s));
        }
    }
    if let Some(l) = job.latency_limit_s {
        if !l.is_finite() || l <= 0.0 {
            return Err(format!("latency_limit must be positive, got {l}"));
        }
    }
    for m in &workload.mix {
        if !m.mix.is_empty() {
            return Err(format!("mix entry {}: a mix cannot nest another mix", m.name));
        }
        if !(m.weight.is_finite() && m.weight > 0.0) {
            return Err(format!("mix entry {}: weight must be positive, got {}", m.name, m.weight));
        }
    }
    if let Some(steady) = &job.steady {
        if job.events.is_some() || job.deterministic {
            return Err("a steady-state warm-up needs a timed window (not an event count, not deterministic)".into());
        }
        steady.check(job.warmup_s)?;
    } else if job.window_fd.is_some() {
        return Err("window_fd tells the lab when a steady-state warm-up ends: it needs steady".into());
    }
    if job.engine == "sqlite" && job.database == ":memory:" {
        if job.schema.is_none() {
            return Err("an in-memory SQLite run needs the schema to load its tables into it".into());
        }
        if job.threads != 1 {
            return Err("an in-memory SQLite database belongs to one connection: run it with 1 thread".into());
        }
    }
    if workload.mix.is_empty() && workload.statements.is_empty() {
        return Err(format!("workload {} has no statements", workload.name));
    }
    Ok(())
}

pub fn run(job: &Job) -> Result<RunResult, String> {
    let workload = job.workload.clone().ok_or("run job has no workload")?;
    check_job(job, &workload)?;
    let counted = job.events.is_some();
    if job.thp_disable {
        process::disable_thp()?;
    }
    let engine = Arc::new(Engine::open(job)?);

    // Connect and prepare on every thread before the clock starts, then release all threads at once. Thread 0 is
    // the calling thread, so that a 1-thread cell is a single-threaded process as a minimal C client would be
    // (glibc's malloc and stdio skip their locks until a second thread exists).
    let gate = Arc::new(Barrier::new(job.threads as usize));
    let start_at: Arc<Mutex<Option<Instant>>> = Arc::new(Mutex::new(None));
    let series_on = !counted && !job.deterministic && job.interval_s > 0.0;
    let window = Window {
        warmup: if counted { Duration::ZERO } else { Duration::from_secs_f64(job.warmup_s) },
        // Counted mode: the window never closes on its own (a century), the event limit ends the loop.
        measured: if counted { Duration::from_secs(100 * 365 * 86_400) } else { Duration::from_secs_f64(job.time_s) },
        limit: job.events,
        deterministic: job.deterministic,
        server_pid: job.server_pid,
        interval: series_on.then(|| Duration::from_secs_f64(job.interval_s)),
        rate: job.rate.map(|r| (r / job.threads as f64, job.arrivals)),
        latency_limit: job.latency_limit_s.map(Duration::from_secs_f64),
        threads: job.threads,
        seed: job.seed,
        tables: job.tables,
        steady: if counted { None } else { job.steady },
        window_fd: job.window_fd,
        start_fd: job.start_fd,
    };
    let shared = window.steady.map(|_| Arc::new(steady::Shared::new(job.threads)));
    let board = Arc::new(Board::new(job.threads, job.interval_s.max(1e-9), job.time_s, job.rate.is_some()));
    let run_started = Instant::now();
    let mut handles = Vec::new();
    for t in 1..job.threads {
        let (engine, gate, start_at, workload, board, shared) =
            (engine.clone(), gate.clone(), start_at.clone(), workload.clone(), board.clone(), shared.clone());
        handles.push(thread::spawn(move || {
            let loop_ = Loop { engine: &engine, workload: &workload, gate: &gate, start_at: &start_at, board: &board };
            client_loop(&loop_, t, window, shared.as_deref(), false, None).map(|(out, ..)| out)
        }));
    }
    let in_memory = job.engine == "sqlite" && job.database == ":memory:";
    let loop_ = Loop { engine: &engine, workload: &workload, gate: &gate, start_at: &start_at, board: &board };
    let own = client_loop(&loop_, 0, window, shared.as_deref(), true, in_memory.then_some(job));

    let kinds = kinds_of(&workload);
    let mut total = Tally::new();
    let mut samples = BTreeSet::new();
    let (mut lag_sum_ns, mut late, mut backlog) = (0u128, 0u64, 0u64);
    let mut statement_times: Vec<Vec<StatementTime>> =
        kinds.iter().map(|k| vec![StatementTime::default(); k.statements.len() + 2]).collect();
    let mut kind_events = vec![0u64; kinds.len()];
    let mut setup_error = None;
    let (mut own_out, client_usage, server) = match own {
        Ok((out, usage, server)) => (Ok(out), usage, server),
        Err(e) => (Err(e), None, None),
    };
    let (warmup_s, steady) = match own_out.as_mut() {
        Ok(out) => (out.warmup_s, out.steady.take()),
        Err(_) => (0.0, None),
    };
    let mut outcomes = vec![own_out];
    for h in handles {
        outcomes.push(h.join().map_err(|_| "a driver thread panicked".to_string())?);
    }
    for outcome in outcomes {
        match outcome {
            Ok(t) => {
                total.add(&t.total)?;
                samples.extend(t.error_samples);
                lag_sum_ns += t.lag_sum_ns;
                late += t.late;
                backlog += t.backlog;
                for (mine, theirs) in statement_times.iter_mut().zip(&t.statement_times) {
                    for (a, b) in mine.iter_mut().zip(theirs) {
                        a.add(b);
                    }
                }
                for (a, b) in kind_events.iter_mut().zip(&t.kind_events) {
                    *a += b;
                }
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
    let h = &total.latency_ns.to_histogram();
    let latency = if job.deterministic { Latency::default() } else { series::latency(h, &job.percentiles) };
    let statements = statement_report(&kinds, &statement_times);
    let mix = mix_report(&workload, &kind_events);
    let open_loop = job.rate.map(|rate| {
        let attempted = total.events + total.errors;
        let asked = rate * secs;
        OpenLoop {
            rate_asked: rate,
            arrivals: job.arrivals,
            rate_achieved: if secs > 0.0 { attempted as f64 / secs } else { 0.0 },
            backlog_events: backlog,
            skipped: total.skipped,
            late,
            latency_limit_us: job.latency_limit_s.map(|l| l * 1e6),
            lag_mean_us: if attempted > 0 { lag_sum_ns as f64 / attempted as f64 / 1000.0 } else { 0.0 },
            lag_max_us: us(total.lag_max_ns),
            sustained: backlog as f64 <= (job.threads as f64).max(0.01 * asked) && total.skipped as f64 <= 0.01 * asked,
        }
    });
    let window_start_unix_s = match *start_at.lock().unwrap() {
        Some(t0) if !job.deterministic => {
            let now = SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).map_or(0.0, |d| d.as_secs_f64());
            now - t0.elapsed().as_secs_f64() + warmup_s
        }
        _ => 0.0,
    };
    let histogram = if job.deterministic || h.is_empty() { None } else { Some(series::encode(h)?) };
    let intervals = if series_on {
        Arc::try_unwrap(board).map_err(|_| "interval board still shared")?.into_intervals()
    } else {
        Vec::new()
    };
    Ok(RunResult {
        engine_version: engine.version(),
        threads: job.threads,
        duration_s: secs,
        events: total.events,
        queries: total.queries,
        rows: total.rows,
        errors: total.errors,
        error_samples: samples.into_iter().take(MAX_ERROR_SAMPLES).collect(),
        qps: if secs > 0.0 { total.queries as f64 / secs } else { 0.0 },
        eps: if secs > 0.0 { total.events as f64 / secs } else { 0.0 },
        latency,
        client_usage: if job.deterministic { Usage::default() } else { client_usage.unwrap_or_default() },
        process: process::facts(job.thp_disable),
        page_cache: engine.page_cache_at_end(),
        server_usage: server.map(|s| s.usage),
        server_processes: server.map(|s| s.processes),
        intervals,
        interval_s: if series_on { job.interval_s } else { 0.0 },
        warmup_s: if job.deterministic { 0.0 } else { warmup_s },
        window_start_unix_s,
        steady,
        histogram,
        statements,
        mix,
        open_loop,
    })
}

/// Events per kind of a weighted mix (none for a workload of one kind).
pub(crate) fn mix_report(workload: &Workload, kind_events: &[u64]) -> Vec<MixCount> {
    if workload.mix.is_empty() {
        return Vec::new();
    }
    kinds_of(workload)
        .iter()
        .zip(kind_events)
        .map(|(k, n)| MixCount { event: k.name.clone(), weight: k.weight, events: *n })
        .collect()
}

pub(crate) fn statement_report(kinds: &[&Workload], times: &[Vec<StatementTime>]) -> Vec<StatementLatency> {
    let mut out = Vec::new();
    for (k, slots) in kinds.iter().zip(times) {
        let mut labels: Vec<String> = vec![if k.transaction { "BEGIN".into() } else { String::new() }];
        labels.extend(k.statements.iter().map(|s| s.sql.clone()));
        labels.push(if k.transaction { "COMMIT".into() } else { String::new() });
        for (label, t) in labels.into_iter().zip(slots) {
            if t.executions > 0 {
                out.push(StatementLatency {
                    event: k.name.clone(),
                    sql: label,
                    executions: t.executions,
                    mean_us: t.sum_ns as f64 / t.executions as f64 / 1000.0,
                    max_us: us(t.max_ns),
                });
            }
        }
    }
    out
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
    /// Length of one interval of the time series, if there is one.
    interval: Option<Duration>,
    /// Open loop: this thread's events per second and their arrivals.
    rate: Option<(f64, Arrivals)>,
    latency_limit: Option<Duration>,
    threads: u32,
    seed: u64,
    tables: u32,
    /// Warm up until the throughput settles (steady.rs), `warmup` being the least warm-up.
    steady: Option<steady::SteadyJob>,
    /// Where thread 0 tells the lab that the measured window opens (steady state only).
    window_fd: Option<i32>,
    /// Duet runs: where thread 0 says it is ready and waits for the lab's start (start.rs).
    start_fd: Option<i32>,
}

/// What every client thread of a cell shares.
struct Loop<'a> {
    engine: &'a Engine,
    workload: &'a Workload,
    gate: &'a Barrier,
    start_at: &'a Mutex<Option<Instant>>,
    board: &'a Board,
}

/// A thread's place in the time series: the interval it is counting, handed to the board when time moves on.
struct Clock<'a> {
    board: &'a Board,
    on: bool,
    index: usize,
    count: usize,
    /// Ticks (tick.rs): when the current interval ends, and an interval's length.
    next_boundary: u64,
    step: u64,
    cur: Tally,
    total: Tally,
}

impl Clock<'_> {
    /// Hands in every interval that ended before `t`.
    #[inline]
    fn advance_to(&mut self, t: u64) -> Result<(), String> {
        while self.on && t >= self.next_boundary && self.index + 1 < self.count {
            self.hand_in()?;
            self.index += 1;
            self.next_boundary += self.step;
        }
        Ok(())
    }

    fn hand_in(&mut self) -> Result<(), String> {
        if self.on {
            self.board.hand_in(self.index, &self.cur)?;
        }
        self.total.add(&self.cur)?;
        self.cur.reset();
        Ok(())
    }

    /// The end of the loop: the current interval and every later one (empty) are handed in.
    fn finish(mut self) -> Result<Tally, String> {
        self.hand_in()?;
        while self.on && self.index + 1 < self.count {
            self.index += 1;
            self.hand_in()?;
        }
        Ok(self.total)
    }
}

/// The next open-loop event: its due tick and the clock reading it starts at (after sleeping until it is due, if
/// it is not yet), the schedule moved past it; None when it falls due after the window closes.
fn take_due(s: &mut Schedule, anchor: &tick::Anchor, end_t: u64, now: u64) -> Option<(u64, u64)> {
    let due = anchor.tick(s.due());
    if due >= end_t {
        return None;
    }
    let mut now = now;
    if now < due {
        thread::sleep(Duration::from_nanos(due - now));
        now = tick::now();
    }
    s.advance();
    Some((due, now))
}

/// One client: connect, prepare, wait at the gate, then run events until the window closes. Closed loop: events
/// that start after the warmup and end inside the measured window are counted. Open loop: events that start (or
/// are skipped) inside the measured window are counted, their latency from when they were due, which may lie in the
/// warm-up: a target that cannot keep up serves the warm-up's queue in the window, and that queueing is in the
/// latency (counting by due time instead left such a window empty). The thread that `takes_usage` samples the
/// process's getrusage when the measured window opens and when its loop ends, so the CPU and context switches
/// cover the counted events. With a steady-state warm-up the measured window opens when thread 0's monitor says so
/// (steady.rs): until then every thread counts its completed events for the monitor and checks whether it has.
fn client_loop(
    shared_loop: &Loop,
    index: u32,
    window: Window,
    steady_shared: Option<&steady::Shared>,
    takes_usage: bool,
    preload: Option<&Job>,
) -> Result<(ThreadOut, Option<Usage>, Option<ServerSample>), String> {
    let Loop { engine, workload, gate, start_at, board } = *shared_loop;
    let kind_specs = kinds_of(workload);
    let setup = (|| {
        let mut conn = engine.connect_for_loop()?;
        // In-memory SQLite: the database lives and dies with this connection, so its tables are loaded here,
        // before the clock starts (1 thread only, checked in check_job).
        if let Some(job) = preload {
            let schema = job.schema.as_ref().expect("checked in check_job");
            crate::load::load_into(conn.as_dyn(), engine, job, schema)?;
        }
        let kinds = kind_specs
            .iter()
            .map(|w| prepare_kind(conn.as_dyn(), engine, w, window.tables))
            .collect::<Result<Vec<_>, _>>()?;
        Ok::<_, String>((conn, kinds))
    })();
    // Duet runs: once every thread has set up, thread 0 waits for the lab to release this process and its partner.
    let released = match window.start_fd {
        Some(fd) => {
            gate.wait();
            if index == 0 {
                crate::start::wait_for_start(fd)
            } else {
                Ok(())
            }
        }
        None => Ok(()),
    };
    if takes_usage {
        *start_at.lock().unwrap() = Some(Instant::now());
    }
    gate.wait();
    let t0 = start_at.lock().unwrap().expect("start time set before the gate opens");
    if setup.is_err() && index == 0 {
        if let Some(s) = steady_shared {
            s.give_up(t0);
        }
    }
    let (mut conn, mut kinds) = setup?;
    released?;
    let read = params::referenced_slots(kinds.iter().flat_map(|k| &k.stmts).flat_map(|s| &s.binds));
    for s in kinds.iter_mut().flat_map(|k| &mut k.stmts) {
        params::drop_unread_slots(&mut s.binds, &read);
    }
    // Steady state: the window is not known yet; until it is, both ends lie beyond any real run (a century).
    let mut known = window.steady.is_none();
    let (mut warm_end, mut end) = if known {
        (t0 + window.warmup, t0 + window.warmup + window.measured)
    } else {
        let never = t0 + Duration::from_secs(100 * 365 * 86_400);
        (never, never)
    };
    let mut lead = if index == 0 {
        window.steady.map(|j| Lead::new(j, window.warmup.as_secs_f64(), window.window_fd))
    } else {
        None
    };
    let mut warm_events = 0u64;
    let seed = window.seed;
    let mut rng = WyRand::seed_from_u64(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15).wrapping_add(index as u64));
    let tables = window.tables as usize;
    let table_pick = Uniform::new(0usize, tables);
    let weights = WeightedIndex::new(kind_specs.iter().map(|k| k.weight)).map_err(|e| format!("mix weights: {e}"))?;
    let slot_count = kind_specs.iter().map(|k| k.slots).max().unwrap_or(0);
    let mut slots = vec![0i64; slot_count];
    let mut values = Vec::new();
    let mut out = ThreadOut {
        total: Tally::new(),
        error_samples: BTreeSet::new(),
        lag_sum_ns: 0,
        late: 0,
        backlog: 0,
        statement_times: kinds.iter().map(|k| vec![StatementTime::default(); k.stmts.len() + 2]).collect(),
        kind_events: vec![0; kinds.len()],
        warmup_s: 0.0,
        steady: None,
    };
    let mut scratch: Vec<StatementTime> = Vec::new();
    // From here on, times are ticks (tick.rs); the Instants of the window convert through this thread's anchor.
    let anchor = tick::Anchor::new();
    let (mut warm_end_t, mut end_t) = (anchor.tick(warm_end), anchor.tick(end));
    let step = tick::nanos(window.interval.unwrap_or(window.measured));
    let mut clock = Clock {
        board,
        on: window.interval.is_some(),
        index: 0,
        count: if window.interval.is_some() { board.count() } else { 1 },
        next_boundary: warm_end_t.saturating_add(step),
        step,
        cur: Tally::new(),
        total: Tally::new(),
    };
    let mut schedule = window.rate.map(|(r, a)| Schedule::new(r, a, t0, seed, index, window.threads));
    let limit_ns = window.latency_limit.map(|l| l.as_nanos() as u64);
    let mut before = None;
    let mut server_before = None;
    // Closed loop: the next event starts when the previous one ends, so one clock read per event suffices.
    let mut started = tick::now();
    // The plain case, most cells (a closed loop over one one-statement event on one table, its window known from
    // the start): a loop of its own without the general one's per-event choices, which cost the driver about a
    // fifth of its own instructions per event (cachegrind). It counts exactly what the general loop counts.
    let plain = known && schedule.is_none() && kinds.len() == 1 && kinds[0].single && tables == 1;
    if plain {
        let (s, queries) = (&kinds[0].stmts[0], kinds[0].queries);
        let id = s.ids[0];
        // Counted mode ends on `limit` events (its window never closes); timed mode on the window (no limit).
        let (limit, mut finished) = (window.limit.unwrap_or(u64::MAX), 0u64);
        let mut sample_at_window = takes_usage;
        let lone = params::lone_uniform(&s.binds);
        if lone.is_some() {
            values = vec![Value::Int(0)];
        }
        loop {
            if finished >= limit || started >= end_t {
                break;
            }
            if sample_at_window && started >= warm_end_t {
                server_before = window.server_pid.map(procstat::sample);
                before = Some(usage::process());
                sample_at_window = false;
                started = tick::now();
            }
            match lone {
                Some(u) => values[0] = Value::Int(u.sample(&mut rng)),
                None => params::fill(&s.binds, &mut rng, &mut slots, &mut values),
            }
            let outcome = conn.execute(id, &values);
            let done = tick::now();
            if window.limit.is_some() || (started >= warm_end_t && done <= end_t) {
                finished += 1;
                clock.advance_to(done)?;
                match outcome {
                    Ok(rows) => {
                        let t = &mut clock.cur;
                        t.events += 1;
                        t.queries += queries;
                        t.rows += rows;
                        if !window.deterministic {
                            t.latency_ns.record(done.saturating_sub(started));
                        }
                    }
                    Err(e) => {
                        clock.cur.errors += 1;
                        if out.error_samples.len() < MAX_ERROR_SAMPLES {
                            out.error_samples.insert(e);
                        }
                    }
                }
            }
            started = done;
        }
    } else {
        loop {
            if !known {
                // Only during a steady-state warm-up: thread 0 samples and decides, the others look whether it has.
                let now = if schedule.is_some() { tick::now() } else { started };
                let shared = steady_shared.expect("steady state has its shared counters");
                let decided = match lead.as_mut() {
                    Some(l) => l.step(shared, t0, anchor.instant(now)),
                    None => shared.warm_end(t0),
                };
                if let Some(w) = decided {
                    (warm_end, end, known) = (w, w + window.measured, true);
                    (warm_end_t, end_t) = (anchor.tick(warm_end), anchor.tick(end));
                    clock.next_boundary = warm_end_t.saturating_add(step);
                }
            }
            let due = if let Some(s) = schedule.as_mut() {
                let now = tick::now();
                if now >= end_t {
                    break;
                }
                let Some((mut due, mut now)) = take_due(s, &anchor, end_t, now) else {
                    break;
                };
                if takes_usage && before.is_none() && now >= warm_end_t {
                    server_before = window.server_pid.map(procstat::sample);
                    before = Some(usage::process());
                    now = tick::now();
                }
                if let Some(l) = limit_ns {
                    if now.saturating_sub(due) > l {
                        // This event and every later one already past the limit are skipped at once (counted when
                        // skipped in the measured window), so a rate far beyond the target's costs what one it keeps
                        // does.
                        let skipped = 1 + s.skip_before(anchor.instant(now - l));
                        if now >= warm_end_t {
                            clock.advance_to(now)?;
                            clock.cur.skipped += skipped;
                        }
                        // The first event kept (due at or after now − limit) runs, judged by the same clock reading
                        // as pgbench -L does: read again, the clock would put it past the limit too whenever the
                        // skipping took longer than the gap between arrivals, and no event would ever run.
                        let Some(kept) = take_due(s, &anchor, end_t, now) else {
                            break;
                        };
                        (due, now) = kept;
                    }
                }
                started = now;
                due
            } else {
                match window.limit {
                    Some(n) if clock.cur.events + clock.cur.errors >= n => break,
                    None if started >= end_t => break,
                    _ => {}
                }
                if takes_usage && before.is_none() && started >= warm_end_t {
                    server_before = window.server_pid.map(procstat::sample);
                    before = Some(usage::process());
                    started = tick::now();
                }
                started
            };
            let k = if kinds.len() == 1 { 0 } else { weights.sample(&mut rng) };
            let kind = &kinds[k];
            let outcome = if kind.single {
                // The common event (a point query, an update): one execution, no loops, no per-statement times.
                let s = &kind.stmts[0];
                let table = if tables == 1 { 0 } else { table_pick.sample(&mut rng) };
                params::fill(&s.binds, &mut rng, &mut slots, &mut values);
                conn.execute(s.ids[table], &values)
            } else {
                let times = if kind.timed {
                    scratch.clear();
                    scratch.resize(kind.stmts.len() + 2, StatementTime::default());
                    Some((scratch.as_mut_slice(), started))
                } else {
                    None
                };
                run_event(conn.as_dyn(), kind, &mut rng, &table_pick, tables, &mut slots, &mut values, times)
            };
            let done = tick::now();
            if !known && outcome.is_ok() {
                warm_events += 1;
                steady_shared.expect("steady state has its shared counters").count(index as usize, warm_events);
            }
            let counted = window.limit.is_some()
                || if schedule.is_some() { started >= warm_end_t } else { started >= warm_end_t && done <= end_t };
            if counted {
                clock.advance_to(done)?;
                match outcome {
                    Ok(rows) => {
                        let t = &mut clock.cur;
                        t.events += 1;
                        t.queries += kind.queries;
                        t.rows += rows;
                        out.kind_events[k] += 1;
                        if !window.deterministic {
                            let latency = done.saturating_sub(due);
                            t.latency_ns.record(latency);
                            if schedule.is_some() {
                                let lag = started.saturating_sub(due);
                                out.lag_sum_ns += lag as u128;
                                t.lag_max_ns = t.lag_max_ns.max(lag);
                                if limit_ns.is_some_and(|l| latency > l) {
                                    out.late += 1;
                                }
                            }
                            if kind.timed {
                                for (a, b) in out.statement_times[k].iter_mut().zip(&scratch) {
                                    a.add(b);
                                }
                            }
                        }
                    }
                    Err(e) => {
                        clock.cur.errors += 1;
                        if schedule.is_some() {
                            out.lag_sum_ns += started.saturating_sub(due) as u128;
                        }
                        if out.error_samples.len() < MAX_ERROR_SAMPLES {
                            out.error_samples.insert(e);
                        }
                    }
                }
            }
            if schedule.is_none() {
                started = done;
            }
        }
    }
    if plain {
        out.kind_events[0] = clock.total.events + clock.cur.events; // the plain loop's only kind
    }
    let usage = before.map(|b| usage::delta(usage::process(), b));
    let server = server_before.map(|b| {
        let after = procstat::sample(window.server_pid.expect("sampled before"));
        ServerSample { usage: usage::delta(after.usage, b.usage), processes: after.processes }
    });
    // Open loop: what was due before the window closed but never started (in the window or queued since the
    // warm-up) is the queue the target left behind.
    if let (Some(s), true) = (schedule.as_mut(), known) {
        out.backlog = s.skip_before(end);
    }
    out.total = clock.finish()?;
    out.warmup_s = if window.limit.is_some() { 0.0 } else { (warm_end - t0).as_secs_f64() };
    out.steady = lead.and_then(|l| l.outcome);
    Ok((out, usage, server))
}
