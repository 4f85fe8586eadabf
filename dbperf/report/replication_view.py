"""The replication lab's report: the apply study (trx/s applied per worker count, mode and durability, as
[Nielsen 2014-03-13]'s chart in table form), the stale-read study (fractions of stale reads without and with the
wait, the wait's latency), the kind's own studies, and the failures with their servers' log tails. One summary
(`replication_summary`) feeds every format (replication_report.py), so they never disagree. What differs by kind of
replication (its rows' own fields, tables, notes and charts) is the kind's view, asked (replication_kind_view.py;
binlog_view.py, streaming_view.py), by the name the run's engine gives."""

from __future__ import annotations

import statistics
from collections import defaultdict
from typing import Any

from dbperf import engines
from dbperf.records import ApplyRecord, ResultsRecord, StaleReadsRecord, StaleReadsResult, to_builtins
from dbperf.report import binlog_view, streaming_view
from dbperf.report.replication_kind_view import KindView, StudyTable, spread
from dbperf.run_meta import ReplicationMeta, RunMeta

# The report's side of each kind of replication, by the name an engine's descriptor gives (Engine.replication).
VIEWS: dict[str, KindView] = {v.name: v for v in (binlog_view.VIEW, streaming_view.VIEW)}
ApplyKey = tuple[Any, ...]  # (durability, commit wait count and µs, benchmark, client threads, workers, mode)
# How every figure of repeated runs is given (the section's `repeats`, said in the JSON beside them).
INTERVALS = ("each rate, latency and fdatasync rate is the median of its runs; X_min and X_max are the range of "
             "X_runs (the min-max of n runs, which covers the median with probability 1 - 2^(1-n): 75% at 3); the "
             "stale fractions pool the runs' reads (a study gives them Wilson's 95% interval)")


def kind_view(engine: str | None) -> KindView:
    """The view of the kind of replication of a run's engine (results written before replication runs named their
    engine were MariaDB's)."""
    return VIEWS[str(engines.replication_of(engine))]


def _failure(r: ApplyRecord | StaleReadsRecord) -> dict[str, Any]:
    if isinstance(r, StaleReadsRecord):
        return {"study": "stale-reads", "wait": r.wait, "error": r.error, "server_log_tail": r.server_log_tail}
    if r.state_engine:
        return {"study": "cross-engine", "error": r.error, "server_log_tail": r.server_log_tail,
                "durability": r.durability, "state_engine": r.state_engine}
    return {"study": "apply", "error": r.error, "server_log_tail": r.server_log_tail, "durability": r.durability,
            "workers": r.workers, "mode": r.mode}


def _sorted_out(records: list[ResultsRecord]) -> tuple[dict[ApplyKey, list[ApplyRecord]],
                                                       dict[ApplyKey, list[ApplyRecord]], list[dict[str, Any]]]:
    """The apply study's ok records by group, the cross-engine study's by group, and every failure in order."""
    groups: dict[ApplyKey, list[ApplyRecord]] = defaultdict(list)
    failures: list[dict[str, Any]] = []
    cross: dict[ApplyKey, list[ApplyRecord]] = defaultdict(list)
    for r in records:
        if not isinstance(r, ApplyRecord | StaleReadsRecord):
            continue
        if r.status != "ok":
            failures.append(_failure(r))
        elif isinstance(r, ApplyRecord) and r.state_engine:
            cross[(r.durability, r.state_engine, r.table_engine, r.benchmark, r.client_threads)].append(r)
        elif isinstance(r, ApplyRecord):
            groups[(r.durability, r.commit_wait_count, r.commit_wait_usec, r.benchmark, r.client_threads,
                    r.workers, r.mode)].append(r)
    return groups, cross, failures


def _variables(runs: list[ApplyRecord]) -> dict[str, Any]:
    """The settings the group ran with, as the servers read them back (runs from before they were kept: none)."""
    return {"variables": runs[0].variables} if runs[0].variables else {}


def _apply_rows(groups: dict[ApplyKey, list[ApplyRecord]], cpus: int, kind: KindView) -> list[dict[str, Any]]:
    """A row per group: the median rate of its runs, their range, and the kind's own fields; then the speed-ups."""
    apply: list[dict[str, Any]] = []
    for (durability, count, usec, benchmark, threads, workers, mode), runs in groups.items():
        rates = [r.trx_per_s for r in runs]
        apply.append({"workers": workers, "mode": mode, "durability": durability,
                      **spread("trx_per_s", rates), "n": len(runs), "benchmark": benchmark,
                      "client_threads": threads, "commit_wait_count": count, "commit_wait_usec": usec,
                      "transactions": statistics.median(r.transactions for r in runs),
                      "apply_s": statistics.median(r.apply_s for r in runs),
                      **spread("primary_trx_per_s", [r.primary_trx_per_s for r in runs]),
                      **kind.row_fields(runs, workers, cpus), **_variables(runs)})
    kind.speedups(apply)
    return apply


def _median_latency(latencies: list[Any]) -> dict[str, float] | None:
    """Each percentile's median over the runs (one run: its own); None where no run has the latency."""
    kept: list[dict[str, float]] = [to_builtins(x) for x in latencies if x is not None]
    return {k: statistics.median(d[k] for d in kept) for k in kept[0]} if kept else None


def _pooled(key: str, results: list[StaleReadsResult]) -> dict[str, Any]:
    """One side of the probe (key: without_wait, with_wait) over its runs: the reads pooled, the fraction stale
    among them, the background load's and the reads' latencies' medians."""
    reads, stale = sum(res.reads for res in results), sum(res.stale for res in results)
    return {key: stale / reads if reads else None, f"reads_{key}": reads, f"stale_{key}": stale,
            f"runs_{key}": len(results),
            f"background_trx_per_s_{key}": statistics.median(res.background_trx_per_s for res in results),
            f"read_latency_us_{key}": _median_latency([res.read_latency for res in results])}


def _waited(results: list[StaleReadsResult]) -> dict[str, Any]:
    """The wait's cost over the runs: each percentile's median, p50 and p99 with their range; its timeouts."""
    waits = [res.wait_latency for res in results if res.wait_latency is not None]
    fields: dict[str, Any] = {
        "wait_latency_us": _median_latency(waits),
        "gtid_fetch_latency_us": _median_latency([res.gtid_fetch_latency for res in results]),
        "wait_timeouts": sum(res.wait_timeouts for res in results)}
    if waits:
        fields.update({**spread("wait_p50_us", [w.p50_us for w in waits]),
                       **spread("wait_p99_us", [w.p99_us for w in waits])})
    return fields


def _stale(records: list[ResultsRecord], kind: KindView, engine: str) -> dict[str, Any]:
    """The stale-read study: the fraction of stale reads without and with the wait (the runs' reads pooled), the
    latencies (each percentile's median over the runs; the wait's p50 and p99 with their range), the load."""
    stale: dict[str, Any] = {"without_wait": None, "with_wait": None, "wait_latency_us": None}
    runs: dict[bool, list[tuple[StaleReadsRecord, StaleReadsResult]]] = {False: [], True: []}
    for r in records:
        if isinstance(r, StaleReadsRecord) and r.status == "ok" and r.result is not None:
            runs[r.wait].append((r, r.result))
    for wait, mine in runs.items():
        if not mine:
            continue
        results = [res for _, res in mine]
        stale.update(_pooled("with_wait" if wait else "without_wait", results))
        stale.update(_waited(results) if wait else
                     {"write_latency_us": _median_latency([res.write_latency for res in results])})
        last = mine[-1][0]
        stale.update(background_threads=last.background_threads, background_rate=last.background_rate,
                     durability=last.durability, workers=last.workers, mode=last.mode)
    stale.update(kind.stale_fields(stale, engine))
    return stale


def _cross_rows(groups: dict[ApplyKey, list[ApplyRecord]]) -> list[dict[str, Any]]:
    """A row per way of keeping the GTID state and durability: the median rate of its runs with their range;
    vs_single_engine: its median over the same durability's with the GTID state in MyRocks too."""
    cross: list[dict[str, Any]] = []
    for (durability, state, table, benchmark, threads), runs in groups.items():
        cross.append({"table_engine": table, "state_engine": state, "durability": durability,
                      **spread("trx_per_s", [r.trx_per_s for r in runs]), "n": len(runs),
                      "apply_s": statistics.median(r.apply_s for r in runs),
                      "transactions": statistics.median(r.transactions for r in runs), "benchmark": benchmark,
                      "client_threads": threads, **_variables(runs)})
    for row in cross:
        same = next((c for c in cross if c["durability"] == row["durability"] and c["state_engine"] == "rocksdb"),
                    None)
        row["vs_single_engine"] = round(row["trx_per_s"] / same["trx_per_s"], 3) if same else None
    return cross


def _fdatasync(info: ReplicationMeta) -> dict[str, Any]:
    """The device's fdatasync rate: the median of its runs with their range (one value before runs were kept)."""
    if info.fdatasync_runs:
        return spread("fdatasync_per_s", info.fdatasync_runs)
    return {"fdatasync_per_s": info.fdatasync_per_s}


def replication_summary(meta: RunMeta, records: list[ResultsRecord]) -> dict[str, Any]:
    """The `replication` object of `dbperf report --format json`."""
    info = meta.replication or ReplicationMeta()
    cpus = int(info.cpus or 0)
    engine = info.engine or engines.MARIADB.name  # results from before the lab replicated PostgreSQL
    kind = kind_view(engine)
    groups, cross, failures = _sorted_out(records)
    return {"engine": engine, "apply": _apply_rows(groups, cpus, kind), "stale_reads": _stale(records, kind, engine),
            "cross_engine": _cross_rows(cross), "failures": failures, "cpus": cpus, **_fdatasync(info),
            "intervals": INTERVALS, "apply_method": info.apply_method,
            "cores_note": kind.cores_note(cpus), "replicas": info.replicas, "transactions": info.transactions}


def study_tables(s: dict[str, Any]) -> tuple[list[StudyTable], list[str]]:
    """The summary's tables and notes, in the order every format shows them."""
    kind = kind_view(s.get("engine"))
    sections: list[StudyTable] = []
    notes: list[str] = []
    if s["apply"]:
        sections += kind.apply_tables(s)
        notes += [note for note in (s.get("cores_note"), s.get("apply_method")) if note]
    st = s["stale_reads"]
    if st["without_wait"] is not None or st["with_wait"] is not None:
        table, note = kind.stale_table(st)
        sections.append(table)
        notes.append(note)
    own, own_notes = kind.other_tables(s)
    sections += own
    notes += own_notes
    if s.get("fdatasync_per_s"):
        runs = s.get("fdatasync_per_s_runs") or []
        spread_said = (f", median of {len(runs)} runs of 2 s, {s['fdatasync_per_s_min']:,.0f}–"
                       f"{s['fdatasync_per_s_max']:,.0f}" if len(runs) > 1 else ", 2 s")
        notes.append(f"fdatasync rate of the data directory's device: {s['fdatasync_per_s']:,.0f}/s (16 KB random "
                     f"writes round robin over five 1 MB files{spread_said}; [Nielsen 2017-05-12] measured 120/s on "
                     "its SSD): it bounds durable commits per second.")
    for f in s["failures"]:
        notes.append(f"FAILED {f['study']}: {f['error']}" + (f"\n{f['server_log_tail']}" if f.get("server_log_tail")
                                                             else ""))
    return sections, notes

