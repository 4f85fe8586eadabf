//! Slices runs (`order = "slices"`, dbperf/runner/slices.py): several SQLite builds, or several servers, measured
//! from one process, taking turns every `slice_s`. Where the host's speed changes within a second (docs/verdicts.md:
//! one process's 0.1 s samples correlate at +0.66 0.1 s apart and not at all 2 s apart), two builds alternating every
//! 20 ms meet the same host, where two processes a second apart do not.
//!
//! A run's sides are all SQLite or all servers. A SQLite side is a library file of its own (dlopen maps one file
//! once, whatever its path, so two sides on one file are refused), with its own database and settings. A server side
//! is a server of its own (its engine, DSN and password's variable; two sides on one DSN or one server pid are
//! refused), opened through the engine factory as an ordinary run opens it; sides may be different server engines
//! (the workload is one for all: the lab refuses engines whose SQL differs). Where the lab gives a side's server pid,
//! thread 0 samples every side's server (its process tree's CPU) when the measured window opens and when the run
//! ends: each server over the whole window, its own sides' slices and the others'. Every client thread opens one
//! connection per side and prepares the workload on each; then all threads are released together.
//!
//! From the common start, time is cut into rounds of one slice per side, side 0 first, each `slice_s` long: first the
//! warm-up, `warmup_s` of slices per side, then the measured window, `time_s` per side; where `slice_s` does not divide
//! a phase, its last round's slices are shorter, so that every side gets exactly its time. A thread switches to the
//! connection of the slice's side at the first event it starts in a new slice, and an event counts for the side whose
//! slice it started in (one that runs over into the next slice takes that much of it: every slice loses and gains so
//! alike). Each side's result is what an ordinary run reports: its counts and latencies, its threads' CPU time (read at
//! every switch), and one interval per slice of its own. run.rs's loop is left as it is: this loop is a sibling, not a
//! mode of it.

use std::collections::BTreeSet;
use std::os::unix::fs::MetadataExt;
use std::sync::{Arc, Barrier, Mutex};
use std::thread;
use std::time::{Instant, SystemTime};

use rand::distributions::{Distribution, Uniform, WeightedIndex};
use rand::SeedableRng;

use crate::engine::dsn::label;
use crate::engine::factory::{Connected, Engine};
use crate::engine::Value;
use crate::job::{Job, RunResult, SliceSide, SlicesResult, Usage, Workload};
use crate::params;
use crate::procstat::{self, ServerSample};
use crate::rng::WyRand;
use crate::run::{self, Kind, StatementTime, MAX_ERROR_SAMPLES};
use crate::series::{self, Board, Interval, Tally};
use crate::usage::{self, ThreadCpu};
use crate::{process, tick};

/// Below this a run would be mostly switching: a switch hands the slice's counts in and reads the thread's CPU.
const MIN_SLICE_S: f64 = 0.001;

/// One phase of the run (the warm-up or the measured window), as time from the common start: `full` rounds of one
/// slice per side, then, where the slice does not divide a side's time, one round of `rest_ns` slices.
#[derive(Clone, Copy, Debug)]
struct Phase {
    start_ns: u64,
    full: u64,
    rest_ns: u64,
}

impl Phase {
    fn new(start_ns: u64, per_side_ns: u64, slice_ns: u64) -> Phase {
        Phase { start_ns, full: per_side_ns / slice_ns, rest_ns: per_side_ns % slice_ns }
    }

    fn rounds(&self) -> u64 {
        self.full + u64::from(self.rest_ns > 0)
    }
}

/// How a run is cut into slices; pure arithmetic (tested below).
#[derive(Clone, Copy, Debug)]
pub struct Slicing {
    sides: u64,
    slice_ns: u64,
    warm: Phase,
    measured: Phase,
}

/// One slice: its side, where it lies in ns from the common start, and (in the measured window) its place among its
/// side's measured slices.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Slice {
    pub side: usize,
    pub start_ns: u64,
    pub end_ns: u64,
    pub measured: Option<usize>,
}

fn nanos(s: f64) -> u64 {
    (s * 1e9).round() as u64
}

impl Slicing {
    pub fn new(sides: usize, slice_s: f64, warmup_s: f64, time_s: f64) -> Result<Slicing, String> {
        if !(slice_s.is_finite() && slice_s >= MIN_SLICE_S) {
            return Err(format!("slices: slice_s must be at least {MIN_SLICE_S} s, got {slice_s}"));
        }
        if sides == 0 {
            return Err("slices: the job lists no side".into());
        }
        let (k, slice_ns) = (sides as u64, nanos(slice_s));
        let warm = Phase::new(0, nanos(warmup_s), slice_ns);
        let measured = Phase::new(k * nanos(warmup_s), nanos(time_s), slice_ns);
        if measured.rounds() == 0 {
            return Err(format!("slices: time_s {time_s} is shorter than a nanosecond"));
        }
        Ok(Slicing { sides: k, slice_ns, warm, measured })
    }

    /// Slices in the whole run, the warm-up's and the measured window's.
    pub fn count(&self) -> u64 {
        self.sides * (self.warm.rounds() + self.measured.rounds())
    }

    /// Slice `i` (0 ≤ i < count): side i mod sides.
    pub fn slice(&self, i: u64) -> Slice {
        let warm_slices = self.sides * self.warm.rounds();
        let (phase, j, measured) =
            if i < warm_slices { (&self.warm, i, false) } else { (&self.measured, i - warm_slices, true) };
        let (round, side) = (j / self.sides, j % self.sides);
        let len = if round < phase.full { self.slice_ns } else { phase.rest_ns };
        let start_ns = phase.start_ns + round * self.sides * self.slice_ns + side * len;
        Slice { side: side as usize, start_ns, end_ns: start_ns + len, measured: measured.then_some(round as usize) }
    }

    /// When the measured window opens, in ns from the common start.
    pub fn window_ns(&self) -> u64 {
        self.measured.start_ns
    }

    /// Each side's measured time: its time_s, to the nanosecond.
    pub fn per_side_ns(&self) -> u64 {
        self.measured.full * self.slice_ns + self.measured.rest_ns
    }

    /// Side `side`'s measured slices as its interval series: (end, length), in seconds from the window's opening.
    pub fn spans(&self, side: usize) -> Vec<(f64, f64)> {
        let first = self.sides * self.warm.rounds() + side as u64;
        (0..self.measured.rounds())
            .map(|round| self.slice(first + round * self.sides))
            .map(|s| ((s.end_ns - self.window_ns()) as f64 / 1e9, (s.end_ns - s.start_ns) as f64 / 1e9))
            .collect()
    }
}

/// Why slices cannot run this job (one line), else its sides.
fn check<'a>(job: &'a Job, workload: &Workload) -> Result<&'a [SliceSide], String> {
    let sides = job.slices.as_deref().ok_or("not a slices job")?;
    let own_side = !(job.library.is_empty() && job.database.is_empty() && job.settings.is_empty())
        || job.dsn.is_some()
        || job.server_pid.is_some()
        || job.password_env.is_some();
    let refusal: Option<String> = if own_side {
        Some(
            "each side's library, database and settings, or its dsn, server pid and password's variable, go in \
             `slices`; the job's own stay empty"
                .into(),
        )
    } else if job.rate.is_some() {
        Some(
            "an open-loop rate: its schedule would run across every side's slices; slices runs are closed loops".into(),
        )
    } else if job.steady.is_some() {
        Some("a steady-state warm-up ends when the process settles, not per side; give a fixed warmup_s".into())
    } else if job.events.is_some() || job.deterministic {
        Some("events (counted) and deterministic runs count work, not time; slices are time".into())
    } else if job.start_fd.is_some() || job.window_fd.is_some() {
        Some("start_fd and window_fd are for runs of several processes (duets) or a steady state".into())
    } else {
        None
    };
    if let Some(why) = refusal {
        return Err(format!("slices: {why}"));
    }
    run::check_job(job, workload)?;
    match same_kind(job, sides)? {
        SideKind::Sqlite => distinct(sides)?,
        SideKind::Server => distinct_servers(sides)?,
    }
    Ok(sides)
}

/// What a side is: a SQLite library loaded into this process, or a server it connects to.
#[derive(Clone, Copy, Debug, PartialEq)]
enum SideKind {
    Sqlite,
    Server,
}

/// The engine a side runs: its own, or the job's.
fn engine_of<'a>(job: &'a Job, side: &'a SliceSide) -> &'a str {
    side.engine.as_deref().unwrap_or(&job.engine)
}

/// The kind of every side, which must be one: a run holds SQLite libraries or connections to servers, not both (a
/// SQLite side runs on the client's CPU, a server's on its own: their slices would not measure alike).
fn same_kind(job: &Job, sides: &[SliceSide]) -> Result<SideKind, String> {
    let mut first: Option<(SideKind, &str)> = None;
    for (j, side) in sides.iter().enumerate() {
        let engine = engine_of(job, side);
        let kind = match engine {
            "sqlite" => SideKind::Sqlite,
            "postgres" | "mariadb" | "mysql" => SideKind::Server,
            other => {
                return Err(format!(
                    "slices: side {j}'s engine {other:?} is not one this driver runs (sqlite, postgres, mariadb, mysql)"
                ))
            }
        };
        match first {
            None => first = Some((kind, engine)),
            Some((k, e0)) if k != kind => {
                return Err(format!(
                    "slices: side 0 is {e0} and side {j} {engine}: a run's sides are all SQLite libraries or all \
                     servers"
                ))
            }
            Some(_) => {}
        }
    }
    first.map(|(k, _)| k).ok_or_else(|| "slices: the job lists no side".to_string())
}

/// Two sides on one library file would run one copy of it (dlopen maps a file once, by device and inode), and two
/// on one database file would have two copies of SQLite's per-process lock table, each blind to the other's locks.
fn distinct(sides: &[SliceSide]) -> Result<(), String> {
    for (j, b) in sides.iter().enumerate() {
        if b.library.is_empty() {
            return Err(format!("slices: side {j} names no library"));
        }
        if b.dsn.is_some() || b.server_pid.is_some() || b.password_env.is_some() {
            return Err(format!("slices: side {j} is a SQLite library; a dsn, server pid or password is a server's"));
        }
        if b.database.is_empty() || b.database == ":memory:" {
            return Err(format!("slices: side {j} needs a database file (an in-memory one lives in one connection)"));
        }
        for (i, a) in sides[..j].iter().enumerate() {
            if same_file(&a.library, &b.library) {
                return Err(format!(
                    "slices: sides {i} and {j} load the same library file {} (dlopen maps a file once: both would run \
                     one copy); give each side a copy of its own",
                    b.library
                ));
            }
            if same_file(&a.database, &b.database) {
                return Err(format!(
                    "slices: sides {i} and {j} use the same database {}; give each its own",
                    b.database
                ));
            }
        }
    }
    Ok(())
}

/// Two server sides on one DSN (or one server) would measure one server twice, each side's writes in the other's
/// tables; a server side names no library, database or settings (its settings are its server's configuration).
fn distinct_servers(sides: &[SliceSide]) -> Result<(), String> {
    for (j, b) in sides.iter().enumerate() {
        if !(b.library.is_empty() && b.database.is_empty() && b.settings.is_empty()) {
            return Err(format!(
                "slices: side {j} is a server: it names a dsn, not a library, database or settings (its settings are \
                 its server's configuration)"
            ));
        }
        let Some(dsn) = b.dsn.as_deref().filter(|d| !d.is_empty()) else {
            return Err(format!("slices: side {j} is a server and names no dsn"));
        };
        for (i, a) in sides[..j].iter().enumerate() {
            if a.dsn == b.dsn || (b.server_pid.is_some() && a.server_pid == b.server_pid) {
                return Err(format!(
                    "slices: sides {i} and {j} connect to the same server ({}); give each its own",
                    label(dsn)
                ));
            }
        }
    }
    Ok(())
}

fn same_file(a: &str, b: &str) -> bool {
    match (std::fs::metadata(a), std::fs::metadata(b)) {
        (Ok(x), Ok(y)) => x.dev() == y.dev() && x.ino() == y.ino(),
        _ => a == b,
    }
}

/// The job an ordinary run of this side would have: the engine factory opens the side from it.
fn side_job(job: &Job, side: &SliceSide) -> Job {
    let (library, database, settings) = (side.library.clone(), side.database.clone(), side.settings.clone());
    let (engine, dsn, password_env) = (engine_of(job, side).to_string(), side.dsn.clone(), side.password_env.clone());
    Job {
        engine,
        library,
        database,
        settings,
        dsn,
        server_pid: side.server_pid,
        password_env,
        slices: None,
        ..job.clone()
    }
}

/// What every client thread shares.
struct Shared<'a> {
    engines: &'a [Engine],
    workload: &'a Workload,
    gate: &'a Barrier,
    start_at: &'a Mutex<Option<Instant>>,
    boards: &'a [Board],
    /// Per side, the lab's pid of its server (None: SQLite, or a server the lab did not start).
    servers: &'a [Option<u32>],
    slicing: Slicing,
    seed: u64,
    tables: u32,
}

/// What thread 0 samples over the measured window: the process's usage, and each side's server's.
struct Sampled {
    usage: Usage,
    servers: Vec<Option<ServerSample>>,
}

/// One side as a client thread holds it: a connection of its own and the workload prepared on it.
struct Hold {
    conn: Connected,
    kinds: Vec<Kind>,
}

fn hold(engine: &Engine, specs: &[&Workload], tables: u32) -> Result<Hold, String> {
    let mut conn = engine.connect_for_loop()?;
    let mut kinds =
        specs.iter().map(|w| run::prepare_kind(conn.as_dyn(), engine, w, tables)).collect::<Result<Vec<_>, _>>()?;
    let read = params::referenced_slots(kinds.iter().flat_map(|k| &k.stmts).flat_map(|s| &s.binds));
    for s in kinds.iter_mut().flat_map(|k| &mut k.stmts) {
        params::drop_unread_slots(&mut s.binds, &read);
    }
    Ok(Hold { conn, kinds })
}

/// What one thread (or, merged, every thread) measured of one side.
struct SideOut {
    total: Tally,
    error_samples: BTreeSet<String>,
    /// Per kind, per statement slot (BEGIN, statements..., COMMIT).
    statement_times: Vec<Vec<StatementTime>>,
    kind_events: Vec<u64>,
    /// CPU time of the measured slices.
    cpu: ThreadCpu,
}

impl SideOut {
    fn new(specs: &[&Workload]) -> SideOut {
        SideOut {
            total: Tally::new(),
            error_samples: BTreeSet::new(),
            statement_times: specs.iter().map(|k| vec![StatementTime::default(); k.statements.len() + 2]).collect(),
            kind_events: vec![0; specs.len()],
            cpu: ThreadCpu::default(),
        }
    }

    fn add(&mut self, other: SideOut) -> Result<(), String> {
        self.total.add(&other.total)?;
        self.error_samples.extend(other.error_samples);
        for (mine, theirs) in self.statement_times.iter_mut().zip(&other.statement_times) {
            for (a, b) in mine.iter_mut().zip(theirs) {
                a.add(b);
            }
        }
        for (a, b) in self.kind_events.iter_mut().zip(&other.kind_events) {
            *a += b;
        }
        self.cpu.add(other.cpu);
        Ok(())
    }

    /// A counted event: into the slice's tally and this side's per-kind counts.
    #[inline(always)]
    fn count(
        &mut self,
        cur: &mut Tally,
        kind: (usize, &Kind),
        outcome: Result<u64, String>,
        ns: u64,
        times: &[StatementTime],
    ) {
        let (k, kind) = kind;
        match outcome {
            Ok(rows) => {
                cur.events += 1;
                cur.queries += kind.queries;
                cur.rows += rows;
                cur.latency_ns.record(ns);
                self.kind_events[k] += 1;
                if kind.timed {
                    for (a, b) in self.statement_times[k].iter_mut().zip(times) {
                        a.add(b);
                    }
                }
            }
            Err(e) => {
                cur.errors += 1;
                if self.error_samples.len() < MAX_ERROR_SAMPLES {
                    self.error_samples.insert(e);
                }
            }
        }
    }
}

/// A thread's drawing of events: its generator, the choices of table and kind, and the buffers that every event's
/// parameters and statement times reuse (nothing is allocated per event).
struct Draws {
    rng: WyRand,
    table_pick: Uniform<usize>,
    tables: usize,
    weights: WeightedIndex<f64>,
    slots: Vec<i64>,
    values: Vec<Value>,
    scratch: Vec<StatementTime>,
}

impl Draws {
    fn new(specs: &[&Workload], seed: u64, index: u32, tables: u32) -> Result<Draws, String> {
        let weights = WeightedIndex::new(specs.iter().map(|k| k.weight)).map_err(|e| format!("mix weights: {e}"))?;
        Ok(Draws {
            rng: WyRand::seed_from_u64(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15).wrapping_add(index as u64)),
            table_pick: Uniform::new(0usize, tables as usize),
            tables: tables as usize,
            weights,
            slots: vec![0i64; specs.iter().map(|k| k.slots).max().unwrap_or(0)],
            values: Vec::new(),
            scratch: Vec::new(),
        })
    }

    /// One event on `hold`, as run.rs's general loop runs it: the kind drawn, and its outcome (rows, or the error).
    #[inline(always)]
    fn event(&mut self, hold: &mut Hold, started: u64) -> (usize, Result<u64, String>) {
        let k = if hold.kinds.len() == 1 { 0 } else { self.weights.sample(&mut self.rng) };
        let kind = &hold.kinds[k];
        if kind.single {
            let s = &kind.stmts[0];
            let table = if self.tables == 1 { 0 } else { self.table_pick.sample(&mut self.rng) };
            params::fill(&s.binds, &mut self.rng, &mut self.slots, &mut self.values);
            return (k, hold.conn.execute(s.ids[table], &self.values));
        }
        let times = if kind.timed {
            self.scratch.clear();
            self.scratch.resize(kind.stmts.len() + 2, StatementTime::default());
            Some((self.scratch.as_mut_slice(), started))
        } else {
            None
        };
        let (rng, pick, slots, values) = (&mut self.rng, &self.table_pick, &mut self.slots, &mut self.values);
        (k, run::run_event(hold.conn.as_dyn(), kind, rng, pick, self.tables, slots, values, times))
    }
}

/// A thread's place in the slices: the slice it is in, its end (a tick), and the counts of it so far.
struct Turn<'a> {
    slicing: Slicing,
    boards: &'a [Board],
    t0: u64,
    i: u64,
    slice: Slice,
    end: u64,
    cur: Tally,
    cpu_mark: ThreadCpu,
}

impl Turn<'_> {
    fn new(slicing: Slicing, boards: &[Board], t0: u64) -> Turn<'_> {
        let slice = slicing.slice(0);
        let end = t0 + slice.end_ns;
        Turn { slicing, boards, t0, i: 0, slice, end, cur: Tally::new(), cpu_mark: usage::thread() }
    }

    /// At an event's start `now`, at or past the slice's end: the thread's CPU since the last switch counted for
    /// the slice it leaves (the one whose event it was running), every slice ended since handed in (one the thread
    /// spent inside a single event, empty), up to the slice `now` lies in. False: the run has ended.
    #[cold]
    fn move_to(&mut self, now: u64, outs: &mut [SideOut]) -> Result<bool, String> {
        let cpu = usage::thread();
        if self.slice.measured.is_some() {
            outs[self.slice.side].cpu.add(cpu.since(self.cpu_mark));
        }
        self.cpu_mark = cpu;
        loop {
            if let Some(n) = self.slice.measured {
                self.boards[self.slice.side].hand_in(n, &self.cur)?;
                outs[self.slice.side].total.add(&self.cur)?;
            }
            self.cur.reset();
            self.i += 1;
            if self.i == self.slicing.count() {
                return Ok(false);
            }
            self.slice = self.slicing.slice(self.i);
            self.end = self.t0 + self.slice.end_ns;
            if now < self.end {
                return Ok(true);
            }
        }
    }
}

/// One client thread: a connection per side, the gate, then events on the connection of the slice's side until the
/// last slice ends. The thread that `takes_usage` samples the process's getrusage and every side's server over the
/// measured window (one reading of /proc for all the servers, at the first switch into the window: the time it
/// takes is the first measured slice's, whose side alternates from round to round as slice 0's does).
fn client(shared: &Shared, index: u32, takes_usage: bool) -> Result<(Vec<SideOut>, Option<Sampled>), String> {
    let specs = run::kinds_of(shared.workload);
    let setup = shared.engines.iter().map(|e| hold(e, &specs, shared.tables)).collect::<Result<Vec<_>, _>>();
    if takes_usage {
        *shared.start_at.lock().unwrap() = Some(Instant::now());
    }
    shared.gate.wait();
    let t0 = shared.start_at.lock().unwrap().expect("start time set before the gate opens");
    let mut holds = setup?;
    let mut draws = Draws::new(&specs, shared.seed, index, shared.tables)?;
    let mut outs: Vec<SideOut> = holds.iter().map(|_| SideOut::new(&specs)).collect();
    let mut turn = Turn::new(shared.slicing, shared.boards, tick::Anchor::new().tick(t0));
    let mut before = None;
    let mut started = tick::now();
    loop {
        if started >= turn.end {
            if !turn.move_to(started, &mut outs)? {
                break;
            }
            if takes_usage && before.is_none() && turn.slice.measured.is_some() {
                before = Some((procstat::sample_each(shared.servers), usage::process()));
            }
            started = tick::now(); // the switch's own time is in no event's latency
            continue;
        }
        let side = turn.slice.side;
        let hold = &mut holds[side];
        let (k, outcome) = draws.event(hold, started);
        let done = tick::now();
        if turn.slice.measured.is_some() {
            outs[side].count(&mut turn.cur, (k, &hold.kinds[k]), outcome, done.saturating_sub(started), &draws.scratch);
        }
        started = done;
    }
    let sampled = before.map(|(servers, b)| {
        let usage = usage::delta(usage::process(), b);
        let after = procstat::sample_each(shared.servers);
        let servers = servers
            .into_iter()
            .zip(after)
            .map(|(b, a)| Some(ServerSample { usage: usage::delta(a?.usage, b?.usage), processes: a?.processes }))
            .collect();
        Sampled { usage, servers }
    });
    Ok((outs, sampled))
}

pub fn run(job: &Job) -> Result<SlicesResult, String> {
    let workload = job.workload.clone().ok_or("run job has no workload")?;
    let sides = check(job, &workload)?;
    let slicing = Slicing::new(sides.len(), job.slice_s, job.warmup_s, job.time_s)?;
    if job.thp_disable {
        process::disable_thp()?;
    }
    let engines = Arc::new(sides.iter().map(|s| Engine::open(&side_job(job, s))).collect::<Result<Vec<_>, _>>()?);
    let servers: Arc<Vec<Option<u32>>> = Arc::new(sides.iter().map(|s| s.server_pid).collect());
    let boards: Arc<Vec<Board>> =
        Arc::new((0..sides.len()).map(|s| Board::with_spans(job.threads, slicing.spans(s))).collect());
    let gate = Arc::new(Barrier::new(job.threads as usize));
    let start_at: Arc<Mutex<Option<Instant>>> = Arc::new(Mutex::new(None));
    // Thread 0 is the calling thread, as in run.rs: a 1-thread run is a single-threaded process.
    let mut handles = Vec::new();
    for t in 1..job.threads {
        let (engines, boards, gate, start_at, workload, servers) =
            (engines.clone(), boards.clone(), gate.clone(), start_at.clone(), workload.clone(), servers.clone());
        let (seed, tables) = (job.seed, job.tables);
        handles.push(thread::spawn(move || {
            let (gate, start_at) = (&gate, &start_at);
            let shared = Shared {
                engines: &engines,
                workload: &workload,
                gate,
                start_at,
                boards: &boards,
                servers: &servers,
                slicing,
                seed,
                tables,
            };
            client(&shared, t, false).map(|(outs, _)| outs)
        }));
    }
    let shared = Shared {
        engines: &engines,
        workload: &workload,
        gate: &gate,
        start_at: &start_at,
        boards: &boards,
        servers: &servers,
        slicing,
        seed: job.seed,
        tables: job.tables,
    };
    let own = client(&shared, 0, true);
    let mut merged: Vec<SideOut> = sides.iter().map(|_| SideOut::new(&run::kinds_of(&workload))).collect();
    let mut setup_error = None;
    let (own, sampled) = match own {
        Ok((outs, sampled)) => (Ok(outs), sampled),
        Err(e) => (Err(e), None),
    };
    let (client_usage, servers) = match sampled {
        Some(Sampled { usage, servers }) => (usage, servers),
        None => (Usage::default(), vec![None; sides.len()]),
    };
    let mut outcomes = vec![own];
    for h in handles {
        outcomes.push(h.join().map_err(|_| "a driver thread panicked".to_string())?);
    }
    for outcome in outcomes {
        match outcome {
            Ok(outs) => {
                for (m, o) in merged.iter_mut().zip(outs) {
                    m.add(o)?;
                }
            }
            Err(e) => setup_error = Some(e),
        }
    }
    if let Some(e) = setup_error {
        return Err(e);
    }
    let t0 = start_at.lock().unwrap().expect("set by thread 0");
    let boards = Arc::try_unwrap(boards).map_err(|_| "slice boards still shared")?;
    let window = Window {
        warmup_s: slicing.window_ns() as f64 / 1e9,
        per_side_s: slicing.per_side_ns() as f64 / 1e9,
        start_unix_s: unix_now() - t0.elapsed().as_secs_f64() + slicing.window_ns() as f64 / 1e9,
    };
    let results = merged
        .into_iter()
        .zip(boards)
        .zip(engines.iter().zip(servers))
        .map(|((out, board), (engine, server))| {
            side_result(job, &workload, (engine, server), out, board.into_intervals(), &window)
        })
        .collect::<Result<Vec<_>, String>>()?;
    Ok(SlicesResult {
        slice_s: job.slice_s,
        threads: job.threads,
        duration_s: window.per_side_s * sides.len() as f64,
        warmup_s: window.warmup_s,
        window_start_unix_s: window.start_unix_s,
        client_usage,
        process: process::facts(job.thp_disable),
        sides: results,
    })
}

fn unix_now() -> f64 {
    SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).map_or(0.0, |d| d.as_secs_f64())
}

/// The process's window, as every side's result says it.
struct Window {
    warmup_s: f64,
    per_side_s: f64,
    start_unix_s: f64,
}

/// One side's result, as an ordinary run's: its window is its own measured slices (duration_s = time_s), its
/// client CPU its threads' CPU time in them, its intervals its slices; the process facts are the shared process's.
/// Its server's usage (a server side the lab started) is the server's over the process's whole measured window.
fn side_result(
    job: &Job,
    workload: &Workload,
    (engine, server): (&Engine, Option<ServerSample>),
    out: SideOut,
    intervals: Vec<Interval>,
    window: &Window,
) -> Result<RunResult, String> {
    let secs = window.per_side_s;
    let total = &out.total;
    let h = &total.latency_ns.to_histogram();
    let per_s = |n: u64| if secs > 0.0 { n as f64 / secs } else { 0.0 };
    Ok(RunResult {
        engine_version: engine.version(),
        threads: job.threads,
        duration_s: secs,
        events: total.events,
        queries: total.queries,
        rows: total.rows,
        errors: total.errors,
        error_samples: out.error_samples.into_iter().take(MAX_ERROR_SAMPLES).collect(),
        qps: per_s(total.queries),
        eps: per_s(total.events),
        latency: series::latency(h, &job.percentiles),
        client_usage: out.cpu.usage(),
        process: process::facts(job.thp_disable),
        page_cache: engine.page_cache_at_end(),
        server_usage: server.map(|s| s.usage),
        server_processes: server.map(|s| s.processes),
        intervals,
        interval_s: job.slice_s,
        warmup_s: window.warmup_s,
        window_start_unix_s: window.start_unix_s,
        steady: None,
        histogram: if h.is_empty() { None } else { Some(series::encode(h)?) },
        statements: run::statement_report(&run::kinds_of(workload), &out.statement_times),
        mix: run::mix_report(workload, &out.kind_events),
        open_loop: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const SQLITE: &str = "/usr/lib/x86_64-linux-gnu/libsqlite3.so.0";

    fn ms(s: &Slice) -> (usize, u64, u64, Option<usize>) {
        (s.side, s.start_ns / 1_000_000, s.end_ns / 1_000_000, s.measured)
    }

    #[test]
    fn slices_take_turns_warm_up_first() {
        let s = Slicing::new(2, 0.1, 0.3, 0.5).unwrap();
        assert_eq!(s.count(), 16);
        assert_eq!(ms(&s.slice(0)), (0, 0, 100, None));
        assert_eq!(ms(&s.slice(5)), (1, 500, 600, None));
        assert_eq!(ms(&s.slice(6)), (0, 600, 700, Some(0)));
        assert_eq!(ms(&s.slice(15)), (1, 1500, 1600, Some(4)));
        assert_eq!(s.window_ns(), 600_000_000);
        assert_eq!(s.per_side_ns(), 500_000_000);
        let spans = s.spans(1);
        assert_eq!(spans.len(), 5);
        assert!((spans[0].0 - 0.2).abs() < 1e-9 && (spans[4].0 - 1.0).abs() < 1e-9);
        assert!(spans.iter().all(|&(_, len)| (len - 0.1).abs() < 1e-9));
    }

    #[test]
    fn a_last_shorter_round_gives_every_side_exactly_its_time() {
        let s = Slicing::new(2, 0.1, 0.0, 0.25).unwrap();
        let all: Vec<_> = (0..s.count()).map(|i| ms(&s.slice(i))).collect();
        assert_eq!(
            all,
            vec![
                (0, 0, 100, Some(0)),
                (1, 100, 200, Some(0)),
                (0, 200, 300, Some(1)),
                (1, 300, 400, Some(1)),
                (0, 400, 450, Some(2)),
                (1, 450, 500, Some(2)),
            ]
        );
        assert!((s.spans(0)[2].1 - 0.05).abs() < 1e-9);
    }

    #[test]
    fn slices_tile_the_run_and_each_side_gets_its_warmup_and_time() {
        for (k, slice_s, warmup_s, time_s) in
            [(1, 0.1, 0.0, 1.0), (2, 0.1, 0.35, 2.0), (3, 0.07, 0.2, 0.5), (4, 1.0, 0.3, 0.2)]
        {
            let s = Slicing::new(k, slice_s, warmup_s, time_s).unwrap();
            let (mut warm, mut measured) = (vec![0u64; k], vec![0u64; k]);
            let mut at = 0;
            for i in 0..s.count() {
                let x = s.slice(i);
                assert_eq!((x.start_ns, x.side), (at, i as usize % k), "slice {i} of {k} sides");
                at = x.end_ns;
                match x.measured {
                    Some(_) => measured[x.side] += x.end_ns - x.start_ns,
                    None => warm[x.side] += x.end_ns - x.start_ns,
                }
            }
            assert!(warm.iter().all(|&w| w == nanos(warmup_s)), "{warm:?}");
            assert!(measured.iter().all(|&m| m == nanos(time_s)), "{measured:?}");
            assert_eq!(at, s.window_ns() + k as u64 * s.per_side_ns());
            let spans: Vec<_> = (0..k).map(|side| s.spans(side).iter().map(|x| x.1).sum::<f64>()).collect();
            assert!(spans.iter().all(|t| (t - time_s).abs() < 1e-9), "{spans:?}");
        }
    }

    #[test]
    fn a_slice_too_short_or_no_side_is_refused() {
        assert!(Slicing::new(2, 0.0001, 0.0, 1.0).unwrap_err().contains("at least 0.001"));
        assert!(Slicing::new(2, f64::NAN, 0.0, 1.0).is_err());
        assert!(Slicing::new(0, 0.1, 0.0, 1.0).unwrap_err().contains("no side"));
    }

    fn job(extra: serde_json::Value) -> Job {
        let mut job = serde_json::json!({
            "mode": "run", "engine": "sqlite", "tables": 1, "table_size": 10, "time_s": 0.5, "warmup_s": 0.1,
            "slices": [{"library": "/a/lib1.so", "database": "/a/1.db"},
                       {"library": "/a/lib2.so", "database": "/a/2.db"}],
            "workload": {"name": "w", "transaction": false, "writes": false, "slots": 0,
                         "statements": [{"sql": "SELECT 1", "binds": []}]}});
        job.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
        serde_json::from_value(job).unwrap()
    }

    fn refusal(extra: serde_json::Value) -> String {
        let job = job(extra);
        check(&job, job.workload.as_ref().unwrap()).map(|_| ()).unwrap_err()
    }

    #[test]
    fn what_slices_cannot_do_is_refused_in_one_line() {
        let plain = job(serde_json::json!({}));
        assert!(check(&plain, plain.workload.as_ref().unwrap()).is_ok());
        for (extra, says) in [
            (serde_json::json!({"engine": "postgres"}), "side 0 is a server: it names a dsn, not a library"),
            (serde_json::json!({"engine": "oracle"}), "side 0's engine \"oracle\" is not one this driver runs"),
            (serde_json::json!({"dsn": "postgresql://u@h:1/db"}), "the job's own stay empty"),
            (serde_json::json!({"password_env": "X"}), "the job's own stay empty"),
            (
                serde_json::json!({"slices": [{"library": "/a/1.so", "database": "/a/1.db"},
                                              {"engine": "postgres", "dsn": "postgresql://u@h:1/db"}]}),
                "side 0 is sqlite and side 1 postgres: a run's sides are all SQLite libraries or all servers",
            ),
            (
                serde_json::json!({"slices": [{"library": "/a/1.so", "database": "/a/1.db", "password_env": "P"},
                                              {"library": "/a/2.so", "database": "/a/2.db"}]}),
                "side 0 is a SQLite library; a dsn, server pid or password is a server's",
            ),
            (serde_json::json!({"rate": 100.0}), "open-loop rate"),
            (
                serde_json::json!({"steady": {"tolerance": 0.05, "window": 3, "interval_s": 1.0,
                                              "max_warmup_s": 30.0}}),
                "steady-state",
            ),
            (serde_json::json!({"events": 100}), "events (counted)"),
            (serde_json::json!({"deterministic": true}), "deterministic"),
            (serde_json::json!({"start_fd": 3}), "start_fd"),
            (serde_json::json!({"library": "/a/lib1.so"}), "the job's own stay empty"),
            (
                serde_json::json!({"slices": [{"library": "/a/lib.so", "database": "/a/1.db"},
                                              {"library": "/a/lib.so", "database": "/a/2.db"}]}),
                "sides 0 and 1 load the same library file /a/lib.so",
            ),
            (
                serde_json::json!({"slices": [{"library": "/a/1.so", "database": "/a/x.db"},
                                              {"library": "/a/2.so", "database": "/a/x.db"}]}),
                "sides 0 and 1 use the same database /a/x.db",
            ),
            (serde_json::json!({"slices": [{"library": "/a/1.so", "database": ":memory:"}]}), "needs a database file"),
        ] {
            let why = refusal(extra.clone());
            assert!(why.starts_with("slices: ") && why.contains(says), "{extra}: {why}");
            assert!(!why.contains('\n'));
        }
    }

    fn servers(sides: serde_json::Value) -> Job {
        job(serde_json::json!({"engine": "postgres", "slices": sides}))
    }

    #[test]
    fn server_sides_each_name_a_server_of_their_own() {
        let pg = |port: u16, pid: u32, var: &str| {
            serde_json::json!({"engine": "postgres", "dsn": format!("postgresql://dbperf@127.0.0.1:{port}/sbtest"),
                               "server_pid": pid, "password_env": var})
        };
        let two = servers(serde_json::json!([pg(5001, 11, "P1"), pg(5002, 12, "P2")]));
        assert_eq!(check(&two, two.workload.as_ref().unwrap()).unwrap().len(), 2);
        // different server engines in one run: the driver holds both (the lab checks that their SQL is one)
        let mixed = servers(serde_json::json!([pg(5001, 11, "P1"),
            {"engine": "mariadb", "dsn": "mysql://dbperf@127.0.0.1:3306/sbtest", "server_pid": 13}]));
        assert!(check(&mixed, mixed.workload.as_ref().unwrap()).is_ok());
        for (sides, says) in [
            (serde_json::json!([pg(5001, 11, "P1"), pg(5001, 12, "P2")]), "sides 0 and 1 connect to the same server"),
            (serde_json::json!([pg(5001, 11, "P1"), pg(5002, 11, "P2")]), "sides 0 and 1 connect to the same server"),
            (serde_json::json!([pg(5001, 11, "P1"), {"engine": "postgres"}]), "side 1 is a server and names no dsn"),
            (
                serde_json::json!([pg(5001, 11, "P1"), {"engine": "postgres", "dsn": "postgresql://u@h:2/d",
                                                        "settings": [["a", "b"]]}]),
                "side 1 is a server: it names a dsn, not a library, database or settings",
            ),
        ] {
            let job = servers(sides.clone());
            let why = check(&job, job.workload.as_ref().unwrap()).map(|_| ()).unwrap_err();
            assert!(why.starts_with("slices: ") && why.contains(says) && !why.contains('\n'), "{sides}: {why}");
        }
        // a side's job is what an ordinary run of its server would get
        let side: SliceSide = serde_json::from_value(pg(5002, 12, "P2")).unwrap();
        let one = side_job(&two, &side);
        assert_eq!(
            (one.engine.as_str(), one.dsn.as_deref()),
            ("postgres", Some("postgresql://dbperf@127.0.0.1:5002/sbtest"))
        );
        assert_eq!((one.server_pid, one.password_env.as_deref(), one.slices.is_none()), (Some(12), Some("P2"), true));
    }

    #[test]
    fn a_server_sides_password_is_in_its_own_variable_which_must_be_set() {
        let side: SliceSide = serde_json::from_value(serde_json::json!({
            "engine": "postgres", "dsn": "postgresql://dbperf@127.0.0.1:1/sbtest",
            "password_env": "DBPERF_TEST_SLICES_UNSET_PASSWORD"}))
        .unwrap();
        let job = side_job(&servers(serde_json::json!([])), &side);
        let why = Engine::open(&job).err().expect("no password: refused before connecting");
        assert!(why.contains("DBPERF_TEST_SLICES_UNSET_PASSWORD is not set"), "{why}");
    }

    #[test]
    fn one_library_file_under_two_names_is_the_same_file() {
        let dir = std::env::temp_dir().join(format!("dbperf-slices-same-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let (a, b) = (dir.join("lib.so"), dir.join("alias.so"));
        std::fs::write(&a, b"x").unwrap();
        std::os::unix::fs::symlink(&a, &b).unwrap();
        let sides = [
            SliceSide { library: a.to_str().unwrap().into(), database: "/a/1.db".into(), ..Default::default() },
            SliceSide { library: b.to_str().unwrap().into(), database: "/a/2.db".into(), ..Default::default() },
        ];
        assert!(distinct(&sides).unwrap_err().contains("same library file"));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// The slices loop's share of an event (drawing it, executing it on SQLite, counting it) allocates nothing once
    /// its buffers are sized, like run.rs's (no_alloc.rs). SQLite's own memory is malloc's, not counted.
    #[test]
    fn an_events_bookkeeping_allocates_nothing() {
        if !std::path::Path::new(SQLITE).exists() {
            return;
        }
        let select = |name: &str| {
            serde_json::json!({"name": name, "transaction": false, "writes": false, "slots": 0,
                               "statements": [{"sql": "SELECT ?", "binds": [{"gen": {"kind": "uniform", "lo": 1,
                                                                                      "hi": 100}, "slot": null}]}]})
        };
        let j = job(serde_json::json!({"workload": {"name": "mix", "transaction": false, "writes": false, "slots": 0,
                                                    "statements": [], "mix": [select("a"), select("b")]}}));
        let side = SliceSide { library: SQLITE.into(), database: ":memory:".into(), ..Default::default() };
        let engine = Engine::open(&side_job(&j, &side)).unwrap();
        let specs = run::kinds_of(j.workload.as_ref().unwrap());
        let (mut hold, mut draws) = (hold(&engine, &specs, 1).unwrap(), Draws::new(&specs, 1, 0, 1).unwrap());
        let (mut out, mut cur) = (SideOut::new(&specs), Tally::new());
        let mut one = |hold: &mut Hold, draws: &mut Draws, out: &mut SideOut| {
            let started = tick::now();
            let (k, outcome) = draws.event(hold, started);
            let done = tick::now();
            out.count(&mut cur, (k, &hold.kinds[k]), outcome, done - started, &draws.scratch);
        };
        one(&mut hold, &mut draws, &mut out); // the first use sizes the buffers
        let before = crate::no_alloc::allocations();
        for _ in 0..10_000 {
            one(&mut hold, &mut draws, &mut out);
        }
        assert_eq!(crate::no_alloc::allocations() - before, 0, "allocations in 10,000 events");
        assert_eq!(out.kind_events.iter().sum::<u64>(), 10_001);
    }

    /// Two copies of Debian's SQLite side by side, two threads: every side measured, its time its own, one interval
    /// per slice. No timing is asserted beyond that each side completed events.
    #[test]
    fn two_copies_of_one_sqlite_take_turns_in_one_process() {
        if !std::path::Path::new(SQLITE).exists() {
            return; // Debian's libsqlite3-0, installed by `make setup`
        }
        let dir = std::env::temp_dir().join(format!("dbperf-slices-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let mut sides = Vec::new();
        for i in 0..2 {
            let (library, database) = (dir.join(format!("lib{i}.so")), dir.join(format!("{i}.db")));
            std::fs::copy(SQLITE, &library).unwrap();
            let side = SliceSide {
                library: library.to_str().unwrap().into(),
                database: database.to_str().unwrap().into(),
                ..Default::default()
            };
            let engine = Engine::open(&side_job(&job(serde_json::json!({"slices": []})), &side)).unwrap();
            let mut c = engine.connect().unwrap();
            c.batch("CREATE TABLE sbtest1 (id INTEGER PRIMARY KEY, k INTEGER)").unwrap();
            for id in 1..=10 {
                c.batch(&format!("INSERT INTO sbtest1 VALUES ({id}, {id})")).unwrap();
            }
            sides.push(serde_json::json!({"library": side.library, "database": side.database,
                                          "settings": [["journal_mode", "WAL"]]}));
        }
        let job = job(serde_json::json!({
            "threads": 2, "time_s": 0.2, "warmup_s": 0.04, "slice_s": 0.02, "slices": sides,
            "workload": {"name": "w", "transaction": false, "writes": false, "slots": 0,
                         "statements": [{"sql": "SELECT k FROM sbtest{table} WHERE id = ?",
                                         "binds": [{"gen": {"kind": "uniform", "lo": 1, "hi": 10}, "slot": null}]}]}}));
        let r = run(&job).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(r.sides.len(), 2);
        assert!((r.duration_s - 0.4).abs() < 1e-9 && (r.warmup_s - 0.08).abs() < 1e-9);
        for (i, side) in r.sides.iter().enumerate() {
            assert!(side.events > 0 && side.errors == 0, "side {i}: {} events, {:?}", side.events, side.error_samples);
            assert!((side.duration_s - 0.2).abs() < 1e-9);
            assert_eq!(side.intervals.len(), 10, "side {i}: one interval per slice");
            assert_eq!(side.intervals.iter().map(|iv| iv.events).sum::<u64>(), side.events);
            let first = if i == 0 { 0.02 } else { 0.04 };
            assert!((side.intervals[0].t_s - first).abs() < 1e-9, "side {i} starts at {}", side.intervals[0].t_s);
            assert!(side.client_usage.user_us + side.client_usage.system_us > 0.0);
        }
    }
}
