//! A plain run: one connection per thread on one engine, a warmup, then a timed loop of events: closed (the next
//! event starts when the previous one ends) or open (events are due at a rate, and their latency counts from when
//! they were due); or a counted run of a number of events. Its threads run the one client loop (client.rs) as one
//! side in one slice.

use std::time::{Instant, SystemTime};

use crate::client::{self, Clients, Plan, Shared};
use crate::engine::factory::Engine;
use crate::job::{Job, OpenLoop, RunResult, Usage, Workload};
use crate::result::{side_result, Measured};
use crate::schedule::MAX_RATE;
use crate::series::{us, Board};
use crate::side_out::SideOut;
use crate::{process, steady};

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
    if job.turn_checkpoint {
        return Err(
            "turn_checkpoint checkpoints a slices run's sides in their own turns; this job has no slices".into()
        );
    }
    let counted = job.events.is_some();
    if job.thp_disable {
        process::disable_thp()?;
    }
    let engine = Engine::open(job)?;
    let plan = Plan::new(job, None);
    let steady = plan.steady.map(|_| steady::Shared::new(job.threads));
    let board = Board::new(job.threads, job.interval_s.max(1e-9), job.time_s, job.rate.is_some());
    let run_started = Instant::now();
    let in_memory = job.engine == "sqlite" && job.database == ":memory:";
    let (engines, servers, boards) = (std::slice::from_ref(&engine), [job.server_pid], std::slice::from_ref(&board));
    let shared = Shared::new((engines, &servers), &workload, boards, plan, steady.as_ref());
    let Clients { sides, sampled, warmup_s, steady, t0 } = client::run_clients(&shared, in_memory.then_some(job))?;
    let out = sides.into_iter().next().expect("a plain run has one side");
    let secs = if job.deterministic {
        0.0
    } else if counted {
        run_started.elapsed().as_secs_f64()
    } else {
        plan.measured.as_secs_f64()
    };
    let (client_usage, server) = match sampled {
        Some(s) if !job.deterministic => (s.usage, s.servers.into_iter().next().flatten()),
        Some(s) => (Usage::default(), s.servers.into_iter().next().flatten()),
        None => (Usage::default(), None),
    };
    let window_start_unix_s = if job.deterministic {
        0.0
    } else {
        let now = SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).map_or(0.0, |d| d.as_secs_f64());
        now - t0.elapsed().as_secs_f64() + warmup_s
    };
    let open_loop = open_loop(job, &out, secs);
    let intervals = if plan.interval.is_some() { board.into_intervals() } else { Vec::new() };
    let measured = Measured {
        secs,
        client_usage,
        server,
        intervals,
        interval_s: if plan.interval.is_some() { job.interval_s } else { 0.0 },
        warmup_s: if job.deterministic { 0.0 } else { warmup_s },
        window_start_unix_s,
        steady,
        open_loop,
        turns: None,
    };
    side_result(job, &workload, &engine, out, measured)
}

/// What an open-loop run asked for and got, over its `secs` of measured window.
fn open_loop(job: &Job, out: &SideOut, secs: f64) -> Option<OpenLoop> {
    let rate = job.rate?;
    let total = &out.total;
    let attempted = total.events + total.errors;
    let asked = rate * secs;
    Some(OpenLoop {
        rate_asked: rate,
        arrivals: job.arrivals,
        rate_achieved: if secs > 0.0 { attempted as f64 / secs } else { 0.0 },
        backlog_events: out.backlog,
        skipped: total.skipped,
        late: out.late,
        latency_limit_us: job.latency_limit_s.map(|l| l * 1e6),
        lag_mean_us: if attempted > 0 { out.lag_sum_ns as f64 / attempted as f64 / 1000.0 } else { 0.0 },
        lag_max_us: us(total.lag_max_ns),
        sustained: out.backlog as f64 <= (job.threads as f64).max(0.01 * asked) && total.skipped as f64 <= 0.01 * asked,
    })
}
