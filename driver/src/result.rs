//! A side's result as an ordinary run reports it, from what the client threads counted of it (side_out.rs): the
//! same for a plain run's one side and for each side of a slices run, which differ only in what `Measured` says.

use crate::engine::factory::Engine;
use crate::event::{kinds_of, StatementTime};
use crate::job::{Job, MixCount, OpenLoop, RunResult, StatementLatency, TurnStalls, Usage, Workload};
use crate::procstat::ServerSample;
use crate::series::{self, us, Interval, Latency};
use crate::side_out::{SideOut, MAX_ERROR_SAMPLES};
use crate::steady::SteadyReport;

/// What the kind of run decides about a side's result.
pub(crate) struct Measured {
    /// The side's measured time, in seconds.
    pub(crate) secs: f64,
    pub(crate) client_usage: Usage,
    pub(crate) server: Option<ServerSample>,
    pub(crate) intervals: Vec<Interval>,
    pub(crate) interval_s: f64,
    pub(crate) warmup_s: f64,
    pub(crate) window_start_unix_s: f64,
    pub(crate) steady: Option<SteadyReport>,
    pub(crate) open_loop: Option<OpenLoop>,
    /// A slices run's side: its time outside its own slices (stalls.rs).
    pub(crate) turns: Option<TurnStalls>,
}

/// One side's result; a deterministic run's has no latencies.
pub(crate) fn side_result(
    job: &Job,
    workload: &Workload,
    engine: &Engine,
    out: SideOut,
    m: Measured,
) -> Result<RunResult, String> {
    let (secs, total) = (m.secs, &out.total);
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
        latency: if job.deterministic { Latency::default() } else { series::latency(h, &job.percentiles) },
        client_usage: m.client_usage,
        process: crate::process::facts(job.thp_disable),
        page_cache: engine.page_cache_at_end(),
        server_usage: m.server.map(|s| s.usage),
        server_processes: m.server.map(|s| s.processes),
        intervals: m.intervals,
        interval_s: m.interval_s,
        warmup_s: m.warmup_s,
        window_start_unix_s: m.window_start_unix_s,
        steady: m.steady,
        histogram: if job.deterministic || h.is_empty() { None } else { Some(series::encode(h)?) },
        statements: statement_report(&kinds_of(workload), &out.statement_times),
        mix: mix_report(workload, &out.kind_events),
        open_loop: m.open_loop,
        turns: m.turns,
    })
}

/// Events per kind of a weighted mix (none for a workload of one kind).
fn mix_report(workload: &Workload, kind_events: &[u64]) -> Vec<MixCount> {
    if workload.mix.is_empty() {
        return Vec::new();
    }
    kinds_of(workload)
        .iter()
        .zip(kind_events)
        .map(|(k, n)| MixCount { event: k.name.clone(), weight: k.weight, events: *n })
        .collect()
}

/// Per statement of multi-statement events (pgbench -r): each one executed, its mean and max time.
fn statement_report(kinds: &[&Workload], times: &[Vec<StatementTime>]) -> Vec<StatementLatency> {
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
