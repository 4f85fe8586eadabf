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
from dbperf.records import ApplyRecord, ResultsRecord, StaleReadsRecord, to_builtins
from dbperf.report import binlog_view, streaming_view
from dbperf.report.replication_kind_view import KindView, StudyTable
from dbperf.run_meta import ReplicationMeta, RunMeta

# The report's side of each kind of replication, by the name an engine's descriptor gives (Engine.replication).
VIEWS: dict[str, KindView] = {v.name: v for v in (binlog_view.VIEW, streaming_view.VIEW)}
ApplyKey = tuple[Any, ...]  # (durability, commit wait count and µs, benchmark, client threads, workers, mode)


def kind_view(engine: str | None) -> KindView:
    """The view of the kind of replication of a run's engine (results written before replication runs named their
    engine were MariaDB's)."""
    return VIEWS[str(engines.replication_of(engine))]


def _latency(lat: Any) -> dict[str, float] | None:
    return None if lat is None else to_builtins(lat)


def _failure(r: ApplyRecord | StaleReadsRecord) -> dict[str, Any]:
    if isinstance(r, StaleReadsRecord):
        return {"study": "stale-reads", "wait": r.wait, "error": r.error, "server_log_tail": r.server_log_tail}
    if r.state_engine:
        return {"study": "cross-engine", "error": r.error, "server_log_tail": r.server_log_tail,
                "durability": r.durability, "state_engine": r.state_engine}
    return {"study": "apply", "error": r.error, "server_log_tail": r.server_log_tail, "durability": r.durability,
            "workers": r.workers, "mode": r.mode}


def _sorted_out(records: list[ResultsRecord]) -> tuple[dict[ApplyKey, list[ApplyRecord]], list[dict[str, Any]],
                                                       list[dict[str, Any]]]:
    """The apply study's ok records by group, the cross-engine study's ok rows, and every failure in order."""
    groups: dict[ApplyKey, list[ApplyRecord]] = defaultdict(list)
    failures: list[dict[str, Any]] = []
    cross: list[dict[str, Any]] = []
    for r in records:
        if not isinstance(r, ApplyRecord | StaleReadsRecord):
            continue
        if r.status != "ok":
            failures.append(_failure(r))
        elif isinstance(r, ApplyRecord) and r.state_engine:
            cross.append({"table_engine": r.table_engine, "state_engine": r.state_engine,
                          "durability": r.durability, "trx_per_s": r.trx_per_s, "apply_s": r.apply_s,
                          "transactions": r.transactions, "benchmark": r.benchmark,
                          "client_threads": r.client_threads})
        elif isinstance(r, ApplyRecord):
            groups[(r.durability, r.commit_wait_count, r.commit_wait_usec, r.benchmark, r.client_threads,
                    r.workers, r.mode)].append(r)
    return groups, cross, failures


def _apply_rows(groups: dict[ApplyKey, list[ApplyRecord]], cpus: int, kind: KindView) -> list[dict[str, Any]]:
    """A row per group: the median rate of its runs, their range, and the kind's own fields; then the speed-ups."""
    apply: list[dict[str, Any]] = []
    for (durability, count, usec, benchmark, threads, workers, mode), runs in groups.items():
        rates = [r.trx_per_s for r in runs]
        apply.append({"workers": workers, "mode": mode, "durability": durability,
                      "trx_per_s": statistics.median(rates), "trx_per_s_min": min(rates),
                      "trx_per_s_max": max(rates), "trx_per_s_runs": rates, "n": len(runs), "benchmark": benchmark,
                      "client_threads": threads, "commit_wait_count": count, "commit_wait_usec": usec,
                      "transactions": statistics.median(r.transactions for r in runs),
                      "apply_s": statistics.median(r.apply_s for r in runs),
                      "primary_trx_per_s": statistics.median(r.primary_trx_per_s for r in runs),
                      **kind.row_fields(runs, workers, cpus)})
    kind.speedups(apply)
    return apply


def _stale(records: list[ResultsRecord], kind: KindView, engine: str) -> dict[str, Any]:
    """The stale-read study: the fraction of stale reads without and with the wait, the latencies, the load."""
    stale: dict[str, Any] = {"without_wait": None, "with_wait": None, "wait_latency_us": None}
    for r in records:
        if not (isinstance(r, StaleReadsRecord) and r.status == "ok" and r.result is not None):
            continue
        res = r.result
        fraction = res.stale / res.reads if res.reads else None
        if r.wait:
            stale.update(with_wait=fraction, wait_latency_us=_latency(res.wait_latency),
                         gtid_fetch_latency_us=_latency(res.gtid_fetch_latency), wait_timeouts=res.wait_timeouts,
                         reads_with_wait=res.reads, stale_with_wait=res.stale,
                         background_trx_per_s_with_wait=res.background_trx_per_s,
                         read_latency_us_with_wait=_latency(res.read_latency))
        else:
            stale.update(without_wait=fraction, reads_without_wait=res.reads, stale_without_wait=res.stale,
                         background_trx_per_s_without_wait=res.background_trx_per_s,
                         write_latency_us=_latency(res.write_latency),
                         read_latency_us_without_wait=_latency(res.read_latency))
        stale.update(background_threads=r.background_threads, background_rate=r.background_rate,
                     durability=r.durability, workers=r.workers, mode=r.mode)
    stale.update(kind.stale_fields(stale, engine))
    return stale


def _cross_speedups(cross: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """vs_single_engine: each row's rate over the same durability's with the GTID state in MyRocks too."""
    for row in cross:
        same = next((c for c in cross if c["durability"] == row["durability"] and c["state_engine"] == "rocksdb"),
                    None)
        row["vs_single_engine"] = round(row["trx_per_s"] / same["trx_per_s"], 3) if same else None
    return cross


def replication_summary(meta: RunMeta, records: list[ResultsRecord]) -> dict[str, Any]:
    """The `replication` object of `dbperf report --format json`."""
    info = meta.replication or ReplicationMeta()
    cpus = int(info.cpus or 0)
    engine = info.engine or engines.MARIADB.name  # results from before the lab replicated PostgreSQL
    kind = kind_view(engine)
    groups, cross, failures = _sorted_out(records)
    return {"engine": engine, "apply": _apply_rows(groups, cpus, kind), "stale_reads": _stale(records, kind, engine),
            "cross_engine": _cross_speedups(cross), "failures": failures, "cpus": cpus,
            "fdatasync_per_s": info.fdatasync_per_s, "apply_method": info.apply_method,
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
        notes.append(f"fdatasync rate of the data directory's device: {s['fdatasync_per_s']:,.0f}/s (16 KB random "
                     "writes round robin over five 1 MB files, 2 s; [Nielsen 2017-05-12] measured 120/s on its "
                     "SSD): it bounds durable commits per second.")
    for f in s["failures"]:
        notes.append(f"FAILED {f['study']}: {f['error']}" + (f"\n{f['server_log_tail']}" if f.get("server_log_tail")
                                                             else ""))
    return sections, notes

