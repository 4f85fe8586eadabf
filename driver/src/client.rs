//! The driver's one client loop. Each client thread holds a connection per side with the workload prepared on it
//! (`Hold`), draws and runs its events (`Draws`), counts them into its side (`SideOut`) and takes its turns among
//! the slices (`Turn`): a plain run is one side in one slice, its warm-up and then its measured window; a slices run
//! is several sides taking turns (slices.rs). What varies with the run is data: an open loop's schedule, a steady
//! state's undecided warm-up, a counted run's limit, an interval series' clock.
//!
//! Closed loop: an event counts when it starts in a measured slice (and, in a plain run, ends before the window
//! closes). Open loop: events that start (or are skipped) inside the measured window are counted, their latency from
//! when they were due, which may lie in the warm-up: a target that cannot keep up serves the warm-up's queue in the
//! window, and that queueing is in the latency (counting by due time instead left such a window empty). Thread 0
//! samples the process's getrusage and every side's server when the measured window opens and when its loop ends,
//! so the CPU and context switches cover the counted events. With a steady-state warm-up the measured window opens
//! when thread 0's monitor says so (steady.rs): until then every thread counts its completed events for the monitor
//! and checks whether it has.

use std::sync::{Barrier, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use crate::engine::factory::Engine;
use crate::event::{self, hold, kinds_of, Draws, Hold};
use crate::job::{Job, Usage, Workload};
use crate::procstat::{self, ServerSample};
use crate::schedule::{Arrivals, Schedule};
use crate::series::{Board, Clock};
use crate::side_out::{Rules, SideOut, Times};
use crate::steady::{self, Lead, SteadyJob, SteadyReport};
use crate::turn::{Slicing, Turn};
use crate::turn_checkpoint::TurnCheckpoints;
use crate::{tick, usage};

/// A window that never closes on its own: a century.
const NEVER: Duration = Duration::from_secs(100 * 365 * 86_400);

/// How the run's threads run, the same for all of them.
#[derive(Clone, Copy)]
pub(crate) struct Plan {
    /// A slices run's turns; None: a plain run, one side, its window from `warmup` and `measured`.
    pub(crate) slicing: Option<Slicing>,
    pub(crate) warmup: Duration,
    pub(crate) measured: Duration,
    /// Counted mode: stop after this many events, count them all.
    pub(crate) limit: Option<u64>,
    pub(crate) rules: Rules,
    /// Length of one interval of a plain run's time series, if it has one.
    pub(crate) interval: Option<Duration>,
    /// Open loop: this thread's events per second and their arrivals.
    pub(crate) rate: Option<(f64, Arrivals)>,
    pub(crate) threads: u32,
    pub(crate) seed: u64,
    pub(crate) tables: u32,
    /// Warm up until the throughput settles (steady.rs), `warmup` being the least warm-up.
    pub(crate) steady: Option<SteadyJob>,
    /// Where thread 0 tells the lab that the measured window opens (steady state only).
    pub(crate) window_fd: Option<i32>,
    /// Duet runs: where thread 0 says it is ready and waits for the lab's start (start.rs).
    pub(crate) start_fd: Option<i32>,
}

impl Plan {
    /// The plan of `job` (checked): a plain run's, or with `slicing` a slices run's.
    pub(crate) fn new(job: &Job, slicing: Option<Slicing>) -> Plan {
        let counted = job.events.is_some();
        let series_on = !counted && !job.deterministic && job.interval_s > 0.0 && slicing.is_none();
        Plan {
            slicing,
            warmup: if counted { Duration::ZERO } else { Duration::from_secs_f64(job.warmup_s) },
            // Counted mode: the window never closes on its own, the event limit ends the loop.
            measured: if counted { NEVER } else { Duration::from_secs_f64(job.time_s) },
            limit: job.events,
            rules: Rules {
                deterministic: job.deterministic,
                open: job.rate.is_some(),
                limit_ns: job.latency_limit_s.map(|l| tick::nanos(Duration::from_secs_f64(l))),
            },
            interval: series_on.then(|| Duration::from_secs_f64(job.interval_s)),
            rate: job.rate.map(|r| (r / job.threads as f64, job.arrivals)),
            threads: job.threads,
            seed: job.seed,
            tables: job.tables,
            steady: if counted { None } else { job.steady },
            window_fd: job.window_fd,
            start_fd: job.start_fd,
        }
    }
}

/// What every client thread of a run shares.
pub(crate) struct Shared<'a> {
    /// One per side.
    pub(crate) engines: &'a [Engine],
    pub(crate) workload: &'a Workload,
    /// A slices run: one per side, an interval per measured slice; a plain run: its one time series.
    pub(crate) boards: &'a [Board],
    /// Per side, the lab's pid of its server (None: SQLite, or a server the lab did not start).
    pub(crate) servers: &'a [Option<u32>],
    pub(crate) plan: Plan,
    pub(crate) steady: Option<&'a steady::Shared>,
    /// A slices run with turn_checkpoint: each side checkpointed at the start of its turns.
    pub(crate) checkpoints: Option<&'a TurnCheckpoints>,
    gate: Barrier,
    start_at: Mutex<Option<Instant>>,
}

impl<'a> Shared<'a> {
    pub(crate) fn new(
        (engines, servers): (&'a [Engine], &'a [Option<u32>]),
        workload: &'a Workload,
        boards: &'a [Board],
        plan: Plan,
        steady: Option<&'a steady::Shared>,
    ) -> Shared<'a> {
        let gate = Barrier::new(plan.threads as usize);
        Shared { engines, workload, boards, servers, plan, steady, checkpoints: None, gate, start_at: Mutex::new(None) }
    }

    /// Every thread has set up (or failed to): thread 0 waits for the lab's start (duets) and takes the common
    /// start, then all are released at once. The start, and whether the lab released the run.
    fn start(&self, index: u32, failed: bool) -> (Instant, Result<(), String>) {
        let released = match self.plan.start_fd {
            Some(fd) => {
                self.gate.wait();
                if index == 0 {
                    crate::start::wait_for_start(fd)
                } else {
                    Ok(())
                }
            }
            None => Ok(()),
        };
        if index == 0 {
            *self.start_at.lock().unwrap() = Some(Instant::now());
        }
        self.gate.wait();
        let t0 = self.start_at.lock().unwrap().expect("start time set before the gate opens");
        if failed && index == 0 {
            if let Some(s) = self.steady {
                s.give_up(t0);
            }
        }
        (t0, released)
    }
}

/// What thread 0 samples over the measured window: the process's usage, and each side's server's.
pub(crate) struct Sampled {
    pub(crate) usage: Usage,
    pub(crate) servers: Vec<Option<ServerSample>>,
}

/// What the run's threads measured: each side's counts merged, and what thread 0 alone knows.
pub(crate) struct Clients {
    pub(crate) sides: Vec<SideOut>,
    pub(crate) sampled: Option<Sampled>,
    /// From the common start to the measured window (fixed, or decided by the steady-state monitor).
    pub(crate) warmup_s: f64,
    pub(crate) steady: Option<SteadyReport>,
    pub(crate) t0: Instant,
}

/// Runs the client threads and merges what they measured. Thread 0 is the calling thread, so that a 1-thread run
/// is a single-threaded process as a minimal C client would be (glibc's malloc and stdio skip their locks until a
/// second thread exists). `preload`: thread 0's in-memory SQLite database is loaded from this job.
pub(crate) fn run_clients(shared: &Shared, preload: Option<&Job>) -> Result<Clients, String> {
    thread::scope(|scope| {
        let handles: Vec<_> = (1..shared.plan.threads).map(|t| scope.spawn(move || client(shared, t, None))).collect();
        let own = client(shared, 0, preload);
        let specs = kinds_of(shared.workload);
        let mut sides: Vec<SideOut> = shared.engines.iter().map(|_| SideOut::new(&specs, shared.plan.rules)).collect();
        let (mut merged, mut lead, mut setup_error) = (Vec::new(), None, None);
        let mut outcomes = vec![own];
        for h in handles {
            outcomes.push(h.join().map_err(|_| "a driver thread panicked".to_string())?);
        }
        for outcome in outcomes {
            match outcome {
                Ok(out) => {
                    merged.push(out.sides);
                    lead = lead.or(out.lead);
                }
                Err(e) => setup_error = Some(e),
            }
        }
        if let Some(e) = setup_error {
            return Err(e);
        }
        for outs in merged {
            for (m, o) in sides.iter_mut().zip(outs) {
                m.add(o)?;
            }
        }
        let (sampled, warmup_s, steady) = lead.ok_or("thread 0 reported nothing")?;
        let t0 = shared.start_at.lock().unwrap().expect("set by thread 0");
        Ok(Clients { sides, sampled, warmup_s, steady, t0 })
    })
}

/// One thread's result: its sides' counts, and (thread 0) its samples, warm-up and steady state.
struct ClientOut {
    sides: Vec<SideOut>,
    lead: Option<(Option<Sampled>, f64, Option<SteadyReport>)>,
}

/// One client: connect and prepare on every side, wait at the gate, then run events until the run ends.
fn client(shared: &Shared, index: u32, preload: Option<&Job>) -> Result<ClientOut, String> {
    let plan = shared.plan;
    let specs = kinds_of(shared.workload);
    let setup = shared.engines.iter().map(|e| hold(e, &specs, plan.tables, preload)).collect::<Result<Vec<_>, _>>();
    let (t0, released) = shared.start(index, setup.is_err());
    let mut holds = setup?;
    released?;
    let mut draws = Draws::new(&specs, plan.seed, index, plan.tables)?;
    let mut thread = Thread::new(shared, index, t0, &specs);
    // The plain case, most cells (a closed loop over one one-statement event on one table, its window known from
    // the start): the loop compiled without the choices it does not make, which cost the driver about a quarter
    // of its own instructions per event (cachegrind). It counts exactly what the general loop counts.
    let plain = thread.known && thread.schedule.is_none() && event::plain(&holds, plan.tables);
    if plain {
        thread.run::<true>(&mut holds, &mut draws)?;
    } else {
        thread.run::<false>(&mut holds, &mut draws)?;
    }
    thread.finish(plain)
}

/// A client thread's state between events.
struct Thread<'s> {
    shared: &'s Shared<'s>,
    index: u32,
    t0: Instant,
    anchor: tick::Anchor,
    turn: Turn<'s>,
    clock: Clock<'s>,
    outs: Vec<SideOut>,
    schedule: Option<Schedule>,
    /// Thread 0 of a steady-state run: the monitor that ends the warm-up.
    lead: Option<Lead>,
    /// The measured window's place is known (always, but during a steady-state warm-up).
    known: bool,
    warm_events: u64,
    /// Thread 0: what it sampled when the measured window opened.
    before: Option<(Vec<Option<ServerSample>>, Usage)>,
}

impl<'s> Thread<'s> {
    fn new(shared: &'s Shared<'s>, index: u32, t0: Instant, specs: &[&Workload]) -> Thread<'s> {
        let plan = shared.plan;
        // From here on, times are ticks (tick.rs); the Instants of the window convert through this thread's anchor.
        let anchor = tick::Anchor::new();
        let known = plan.steady.is_none();
        let (turn, clock) = match plan.slicing {
            Some(slicing) => (Turn::new(slicing, Some(shared.boards), anchor.tick(t0), false), Clock::new(None, 0, 1)),
            None => {
                // Steady state: the window is not known yet; until it is, its start lies beyond any real run.
                let warm = if known { plan.warmup } else { NEVER };
                let slicing = Slicing::window(tick::nanos(warm), tick::nanos(plan.measured));
                let bounded = plan.rate.is_none() && plan.limit.is_none();
                let turn = Turn::new(slicing, None, anchor.tick(t0), bounded);
                let step = tick::nanos(plan.interval.unwrap_or(plan.measured));
                let clock = Clock::new(plan.interval.map(|_| &shared.boards[0]), turn.window(), step);
                (turn, clock)
            }
        };
        let lead = if index == 0 {
            plan.steady.map(|j| Lead::new(j, plan.warmup.as_secs_f64(), plan.window_fd))
        } else {
            None
        };
        Thread {
            shared,
            index,
            t0,
            anchor,
            turn,
            clock,
            outs: shared.engines.iter().map(|_| SideOut::new(specs, plan.rules)).collect(),
            schedule: plan.rate.map(|(r, a)| Schedule::new(r, a, t0, plan.seed, index, plan.threads)),
            lead,
            known,
            warm_events: 0,
            before: None,
        }
    }

    /// The loop: each event on the connection of the slice's side, until the last slice ends (or the limit).
    fn run<const PLAIN: bool>(&mut self, holds: &mut [Hold], draws: &mut Draws) -> Result<(), String> {
        let limit = self.shared.plan.limit.unwrap_or(u64::MAX);
        let mut finished = 0u64;
        // Closed loop: the next event starts when the previous one ends, so one clock read per event suffices.
        let mut started = tick::now();
        loop {
            if !PLAIN && !self.known {
                self.settle(started);
            }
            let mut due = started;
            if !PLAIN && self.schedule.is_some() {
                match self.pace()? {
                    Some(next) => (due, started) = next,
                    None => break,
                }
            } else if started >= self.turn.end {
                if !self.switch(started)? {
                    break;
                }
                if let Some(c) = self.shared.checkpoints {
                    let side = self.turn.slice.side;
                    c.at_turn_start(&self.turn, &mut holds[side], &mut self.outs[side])?;
                }
                started = tick::now(); // the switch's own time (and the checkpoint's) is in no event's latency
                due = started;
            }
            if finished >= limit {
                break;
            }
            let side = self.turn.slice.side;
            let hold = &mut holds[side];
            let (k, outcome) = draws.event::<PLAIN>(hold, started);
            let done = tick::now();
            if !PLAIN && !self.known && outcome.is_ok() {
                self.warm_events += 1;
                self.shared.steady.expect("a steady state's counters").count(self.index as usize, self.warm_events);
            }
            if self.turn.slice.measured.is_some() && done <= self.turn.closes {
                finished += 1;
                self.clock.advance_to(done)?;
                let at = Times { due, started, done };
                self.outs[side].count::<PLAIN>(&mut self.clock.cur, (k, &hold.kinds[k]), outcome, at, &draws.scratch);
            }
            if PLAIN || self.schedule.is_none() {
                started = done;
            }
        }
        Ok(())
    }

    /// At `now`, past the slice's end: into the slice `now` lies in (thread 0 samples when it is the measured
    /// window's first). False: the run has ended.
    fn switch(&mut self, now: u64) -> Result<bool, String> {
        if !self.turn.move_to(now, &mut self.outs, &mut self.clock)? {
            return Ok(false);
        }
        if self.index == 0 && self.before.is_none() && self.turn.slice.measured.is_some() {
            self.before = Some((procstat::sample_each(self.shared.servers), usage::process()));
        }
        Ok(true)
    }

    /// During a steady-state warm-up, between events: thread 0 samples and decides, the others look whether it has.
    fn settle(&mut self, started: u64) {
        let now = if self.schedule.is_some() { tick::now() } else { started };
        let shared = self.shared.steady.expect("steady state has its shared counters");
        let decided = match self.lead.as_mut() {
            Some(l) => l.step(shared, self.t0, self.anchor.instant(now)),
            None => shared.warm_end(self.t0),
        };
        if let Some(w) = decided {
            let warm_end = self.anchor.tick(w);
            self.turn.settle(warm_end);
            self.clock.restart_at(warm_end);
            self.known = true;
        }
    }

    /// Open loop: the next event's due tick and the tick it starts at, after sleeping until it is due and skipping
    /// what is already past the latency limit. None: the run has ended.
    fn pace(&mut self) -> Result<Option<(u64, u64)>, String> {
        let last = self.turn.last();
        let now = tick::now();
        if now >= last {
            return Ok(None);
        }
        let s = self.schedule.as_mut().expect("an open loop's schedule");
        let Some((due, mut now)) = take_due(s, &self.anchor, last, now) else {
            return Ok(None);
        };
        if now >= self.turn.end {
            if !self.switch(now)? {
                return Ok(None);
            }
            now = tick::now();
        }
        match self.shared.plan.rules.limit_ns {
            Some(l) if now.saturating_sub(due) > l => self.skip_late(now, l),
            _ => Ok(Some((due, now))),
        }
    }

    /// Open loop, at `now`, an event already more than `limit` (ns) past due: it and every later one already past the
    /// limit are skipped at once (counted when skipped in the measured window), so a rate far beyond the target's
    /// costs what one it keeps does. The first event kept (due at or after now − limit) runs, judged by the same clock
    /// reading as pgbench -L does: read again, the clock would put it past the limit too whenever the skipping took
    /// longer than the gap between arrivals, and no event would ever run.
    fn skip_late(&mut self, now: u64, limit: u64) -> Result<Option<(u64, u64)>, String> {
        let s = self.schedule.as_mut().expect("an open loop's schedule");
        let skipped = 1 + s.skip_before(self.anchor.instant(now - limit));
        if self.turn.slice.measured.is_some() {
            self.clock.advance_to(now)?;
            self.clock.cur.skipped += skipped;
        }
        Ok(take_due(s, &self.anchor, self.turn.last(), now))
    }

    /// The thread's result, once its loop has ended (the `plain` loop, or the general one).
    fn finish(mut self, plain: bool) -> Result<ClientOut, String> {
        let servers = self.shared.servers;
        let sampled = self.before.take().map(|(before, b)| {
            let usage = usage::delta(usage::process(), b);
            let after = procstat::sample_each(servers);
            let servers = before
                .into_iter()
                .zip(after)
                .map(|(b, a)| Some(ServerSample { usage: usage::delta(a?.usage, b?.usage), processes: a?.processes }))
                .collect();
            Sampled { usage, servers }
        });
        // Open loop: what was due before the window closed but never started (in the window or queued since the
        // warm-up) is the queue the target left behind.
        if let (Some(s), true) = (self.schedule.as_mut(), self.known) {
            self.outs[0].backlog = s.skip_before(self.anchor.instant(self.turn.last()));
        }
        // A plain run's intervals are its clock's; a slices run's were handed in at every switch (its clock's is empty).
        self.outs[0].total.add(&self.clock.finish()?)?;
        if plain {
            self.outs.iter_mut().for_each(SideOut::plain_kind_events);
        }
        let warmup_s = if self.shared.plan.limit.is_some() { 0.0 } else { self.turn.window_ns() as f64 / 1e9 };
        let lead = (self.index == 0).then(|| (sampled, warmup_s, self.lead.and_then(|l| l.outcome)));
        Ok(ClientOut { sides: self.outs, lead })
    }
}

/// The next open-loop event: its due tick and the clock reading it starts at (after sleeping until it is due, if
/// it is not yet), the schedule moved past it; None when it falls due after the run ends (`end_t`).
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
