//! What a client thread (or, merged, every thread) measured of one side, and how an event is counted into it: the
//! interval's tally gets the event, its latency and (open loop) its lag; the side keeps its per-kind counts,
//! statement times, error samples and the CPU of its measured slices.

use std::collections::BTreeSet;

use crate::event::{Kind, StatementTime};
use crate::job::Workload;
use crate::series::Tally;
use crate::stalls::SideStalls;
use crate::usage::ThreadCpu;

pub(crate) const MAX_ERROR_SAMPLES: usize = 5;

/// How a run counts its events, the same for every event of it.
#[derive(Clone, Copy)]
pub(crate) struct Rules {
    /// Record no latencies (see Job::deterministic).
    pub(crate) deterministic: bool,
    /// Open loop: latency counts from when the event was due, and the lag before it started is kept.
    pub(crate) open: bool,
    /// Open loop: events slower than this (ns, from when they were due) are late.
    pub(crate) limit_ns: Option<u64>,
}

/// When a counted event was due, started and ended (ticks; a closed loop's events are due when they start).
#[derive(Clone, Copy)]
pub(crate) struct Times {
    pub(crate) due: u64,
    pub(crate) started: u64,
    pub(crate) done: u64,
}

pub(crate) struct SideOut {
    pub(crate) total: Tally,
    pub(crate) error_samples: BTreeSet<String>,
    /// Per kind, per statement slot (BEGIN, statements..., COMMIT).
    pub(crate) statement_times: Vec<Vec<StatementTime>>,
    pub(crate) kind_events: Vec<u64>,
    /// CPU time of the measured slices (a slices run's side).
    pub(crate) cpu: ThreadCpu,
    /// Open loop: the sum of the lags, the events late, and what was due in the window but never started.
    pub(crate) lag_sum_ns: u128,
    pub(crate) late: u64,
    pub(crate) backlog: u64,
    /// A slices run's side: its time past its slices' ends, and its turn checkpoints.
    pub(crate) stalls: SideStalls,
    rules: Rules,
}

impl SideOut {
    pub(crate) fn new(specs: &[&Workload], rules: Rules) -> SideOut {
        SideOut {
            total: Tally::new(),
            error_samples: BTreeSet::new(),
            statement_times: specs.iter().map(|k| vec![StatementTime::default(); k.statements.len() + 2]).collect(),
            kind_events: vec![0; specs.len()],
            cpu: ThreadCpu::default(),
            lag_sum_ns: 0,
            late: 0,
            backlog: 0,
            stalls: SideStalls::default(),
            rules,
        }
    }

    pub(crate) fn add(&mut self, other: SideOut) -> Result<(), String> {
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
        self.lag_sum_ns += other.lag_sum_ns;
        self.late += other.late;
        self.backlog += other.backlog;
        self.stalls.add(&other.stalls);
        Ok(())
    }

    /// A counted event: into the interval's tally `cur` and this side's per-kind counts; `times` are its statement
    /// times (kinds that are `timed`). `PLAIN`: a closed loop over one kind of one execution (`event::plain`), whose
    /// per-kind count is its total, set by `plain_kind_events` at the end.
    #[inline(always)]
    pub(crate) fn count<const PLAIN: bool>(
        &mut self,
        cur: &mut Tally,
        (k, kind): (usize, &Kind),
        outcome: Result<u64, String>,
        at: Times,
        times: &[StatementTime],
    ) {
        let rules = self.rules;
        match outcome {
            Ok(rows) => {
                cur.events += 1;
                cur.queries += kind.queries;
                cur.rows += rows;
                if !PLAIN {
                    self.kind_events[k] += 1;
                }
                if rules.deterministic {
                    return;
                }
                let latency = at.done.saturating_sub(at.due);
                cur.latency_ns.record(latency);
                if !PLAIN && rules.open {
                    let lag = at.started.saturating_sub(at.due);
                    self.lag_sum_ns += lag as u128;
                    cur.lag_max_ns = cur.lag_max_ns.max(lag);
                    if rules.limit_ns.is_some_and(|l| latency > l) {
                        self.late += 1;
                    }
                }
                if !PLAIN && kind.timed {
                    for (a, b) in self.statement_times[k].iter_mut().zip(times) {
                        a.add(b);
                    }
                }
            }
            Err(e) => {
                cur.errors += 1;
                if !PLAIN && rules.open {
                    self.lag_sum_ns += at.started.saturating_sub(at.due) as u128;
                }
                if self.error_samples.len() < MAX_ERROR_SAMPLES {
                    self.error_samples.insert(e);
                }
            }
        }
    }

    /// The per-kind count of a plain loop's one kind, once its total is final.
    pub(crate) fn plain_kind_events(&mut self) {
        self.kind_events[0] = self.total.events;
    }
}
