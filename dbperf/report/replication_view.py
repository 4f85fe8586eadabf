"""The replication lab's report: the apply-rate study as [Nielsen 2014-03-13]'s chart in table form (trx/s applied per
worker count, mode and durability, with the speed-up over the single SQL thread), the stale-read study (fractions of
stale reads without and with MASTER_GTID_WAIT, the wait's latency), and the failures with their servers' log tails. One
summary (`replication_summary`) feeds every format (replication_report.py), so they never disagree."""

from __future__ import annotations

import statistics
from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from dbperf import engines
from dbperf.records import ApplyRecord, ResultsRecord, StaleReadsRecord, to_builtins
from dbperf.run_meta import ReplicationMeta, RunMeta

OVER_CORES = "‡"


def _cores_note(cpus: int) -> str:
    return (f"This host has {cpus} CPUs (primary, replica and client share them): parallel apply cannot run more "
            f"than {cpus} transactions on CPU at once, so a gain past {cpus} workers ({OVER_CORES}) can only come "
            "from overlapping commit waits (fsync, group commit), never from more CPU. The 10x at 12+ workers of "
            "[Nielsen 2014-03-13] was measured on a many-core server; this table does not and cannot show that here.")


PG_WORKERS_NOTE = ("not applicable: PostgreSQL replays physical WAL in one process (the startup process) and has "
                   "no parallel-apply setting for it; the mode is recovery_prefetch")


def _pg_note(cpus: int) -> str:
    return ("PostgreSQL streaming replication: the standby replays the WAL in one process (the startup process); "
            "there is no parallel-apply knob for physical replication, so workers is 1 and 'vs 0 workers' does not "
            "apply (n/a). The real knobs are recovery_prefetch (the mode; PG 15+) and maintenance_io_concurrency "
            "(its depth, in the target's config); logical replication's streaming = parallel "
            "(max_parallel_apply_workers_per_subscription, PG 16+) applies only to large in-progress transactions "
            f"and is not measured here. This host has {cpus} CPUs, shared by primary, standby and client.")


def _peak(values: list[Any]) -> Any:
    present = [v for v in values if v is not None]
    return max(present) if present else None


def _latency(lat: Any) -> dict[str, float] | None:
    return None if lat is None else to_builtins(lat)


def replication_summary(meta: RunMeta, records: list[ResultsRecord]) -> dict[str, Any]:
    """The `replication` object of `dbperf report --format json`."""
    info = meta.replication or ReplicationMeta()
    cpus = int(info.cpus or 0)
    engine = info.engine or engines.MARIADB.name  # results from before the lab replicated PostgreSQL
    streaming = engines.streaming_replication(engine)
    groups: dict[tuple[Any, ...], list[ApplyRecord]] = defaultdict(list)
    failures: list[dict[str, Any]] = []
    cross: list[dict[str, Any]] = []
    for r in records:
        if isinstance(r, ApplyRecord) and r.state_engine:
            if r.status == "ok":
                cross.append({"table_engine": r.table_engine, "state_engine": r.state_engine,
                              "durability": r.durability, "trx_per_s": r.trx_per_s, "apply_s": r.apply_s,
                              "transactions": r.transactions, "benchmark": r.benchmark,
                              "client_threads": r.client_threads})
            else:
                failures.append({"study": "cross-engine", "error": r.error, "server_log_tail": r.server_log_tail,
                                 "durability": r.durability, "state_engine": r.state_engine})
        elif isinstance(r, ApplyRecord):
            if r.status == "ok":
                groups[(r.durability, r.commit_wait_count, r.commit_wait_usec, r.benchmark, r.client_threads,
                        r.workers, r.mode)].append(r)
            else:
                failures.append({"study": "apply", "error": r.error, "server_log_tail": r.server_log_tail,
                                 "durability": r.durability, "workers": r.workers, "mode": r.mode})
        elif isinstance(r, StaleReadsRecord) and r.status != "ok":
            failures.append({"study": "stale-reads", "wait": r.wait, "error": r.error,
                             "server_log_tail": r.server_log_tail})
    serial: dict[tuple[Any, ...], float] = {}
    apply: list[dict[str, Any]] = []
    for key, runs in groups.items():
        durability, count, usec, benchmark, threads, workers, mode = key
        rates = [r.trx_per_s for r in runs]
        row = {"workers": workers, "mode": mode, "durability": durability, "trx_per_s": statistics.median(rates),
               "trx_per_s_min": min(rates), "trx_per_s_max": max(rates), "trx_per_s_runs": rates, "n": len(runs),
               "benchmark": benchmark, "client_threads": threads, "commit_wait_count": count,
               "commit_wait_usec": usec, "transactions": statistics.median(r.transactions for r in runs),
               "apply_s": statistics.median(r.apply_s for r in runs),
               "primary_trx_per_s": statistics.median(r.primary_trx_per_s for r in runs),
               "workers_exceed_cpus": bool(cpus) and workers > cpus and not streaming}
        if streaming:
            series = [to_builtins(x) for x in (runs[0].lag_series or [])]
            delays = [r.resume_delay_s for r in runs if r.resume_delay_s is not None]
            row.update(workers_note=PG_WORKERS_NOTE, wal_bytes=statistics.median(r.wal_bytes for r in runs),
                       resume_delay_s=statistics.median(delays) if delays else None,
                       peak_replay_behind_bytes=_peak([x["replay_behind_bytes"] for x in series]),
                       peak_replay_lag_s=_peak([x.get("replay_lag_s") for x in series]), lag_series=series)
        if workers == 0:
            serial[(durability, count, benchmark, threads)] = row["trx_per_s"]
        apply.append(row)
    for row in apply:
        if streaming:
            row["vs_serial"] = None
            continue
        base = serial.get((row["durability"], row["commit_wait_count"], row["benchmark"], row["client_threads"]))
        row["vs_serial"] = round(row["trx_per_s"] / base, 3) if base else None
    stale: dict[str, Any] = {"without_wait": None, "with_wait": None, "wait_latency_us": None}
    for r in records:
        if isinstance(r, StaleReadsRecord) and r.status == "ok" and r.result is not None:
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
    if streaming:
        stale["wait"] = "synchronous_commit = remote_apply"
        with_wait, without = stale.get("wait_latency_us"), stale.get("write_latency_us")
        if with_wait and without:
            # The wait is in the commit: what it adds is the commit under remote_apply minus the commit under local.
            stale["wait_added_us"] = {p: round(with_wait[p] - without[p], 1) for p in ("p50_us", "p95_us", "p99_us")}
    else:
        stale["wait"] = "MASTER_GTID_WAIT"
    for row in cross:
        same = next((c for c in cross if c["durability"] == row["durability"] and c["state_engine"] == "rocksdb"),
                    None)
        row["vs_single_engine"] = round(row["trx_per_s"] / same["trx_per_s"], 3) if same else None
    note = _pg_note(cpus) if streaming else _cores_note(cpus) if cpus else None
    return {"engine": engine, "apply": apply, "stale_reads": stale, "cross_engine": cross, "failures": failures,
            "cpus": cpus, "fdatasync_per_s": info.fdatasync_per_s, "apply_method": info.apply_method,
            "cores_note": note, "replicas": info.replicas,
            "transactions": info.transactions}


@dataclass(frozen=True)
class StudyTable:
    title: str
    header: tuple[str, ...]
    rows: list[tuple[str, ...]]
    text_columns: int


def _num(x: float | None, digits: int = 0) -> str:
    return "-" if x is None else f"{x:,.{digits}f}"


def study_tables(s: dict[str, Any]) -> tuple[list[StudyTable], list[str]]:
    sections: list[StudyTable] = []
    notes: list[str] = []
    streaming = engines.streaming_replication(s.get("engine"))
    if s["apply"] and streaming:
        _pg_apply_sections(s, sections, notes)
    elif s["apply"]:
        rows: list[tuple[str, ...]] = []
        order = sorted(s["apply"], key=lambda r: (r["durability"], r["commit_wait_count"], r["benchmark"],
                                                  r["client_threads"], r["workers"], r["mode"]))
        for r in order:
            wait = f"{r['commit_wait_count']}/{r['commit_wait_usec']}µs" if r["commit_wait_count"] else "0"
            workers = f"{r['workers']}{OVER_CORES if r['workers_exceed_cpus'] else ''}"
            rows.append((r["durability"], wait, f"{r['benchmark']} t={r['client_threads']}", workers, r["mode"],
                         _num(r["transactions"]), _num(r["trx_per_s"]),
                         f"{_num(r['trx_per_s_min'])}–{_num(r['trx_per_s_max'])}", str(r["n"]),
                         "-" if r["vs_serial"] is None else f"{r['vs_serial']:.2f}x",
                         _num(r["primary_trx_per_s"])))
        sections.append(StudyTable("replica apply rate (trx/s applied, median of n)",
                                ("durability", "commit wait", "primary load", "workers", "mode", "trx", "trx/s",
                                 "min–max", "n", "vs 0 workers", "primary trx/s"), rows, 5))
        if s.get("cores_note"):
            notes.append(s["cores_note"])
        if s.get("apply_method"):
            notes.append(s["apply_method"])
    st = s["stale_reads"]
    if streaming and (st["without_wait"] is not None or st["with_wait"] is not None):
        _pg_stale_section(st, sections, notes)
    elif st["without_wait"] is not None or st["with_wait"] is not None:
        rows = []  # the stale-read table
        for label, key in (("without wait", "without_wait"), ("MASTER_GTID_WAIT", "with_wait")):
            if st[key] is None:
                continue
            lat = st.get("wait_latency_us") if key == "with_wait" else None
            rows.append((label, _num(st.get(f"reads_{key}")), _num(st.get(f"stale_{key}")), f"{st[key]:.2%}",
                         *(_num(lat[p], 1) if lat else "-" for p in ("p50_us", "p95_us", "p99_us", "max_us")),
                         _num(st.get("wait_timeouts")) if key == "with_wait" else "-",
                         _num(st.get(f"background_trx_per_s_{key}"))))
        sections.append(StudyTable("stale reads (write on the primary, read the row on a replica at once)",
                                ("probe", "reads", "stale", "stale fraction", "wait p50 µs", "p95 µs", "p99 µs",
                                 "max µs", "timeouts", "background trx/s"), rows, 1))
        rate = st.get("background_rate")
        notes.append(f"stale reads: {st.get('background_threads')} background writer thread(s) on the primary "
                     f"({f'{rate:,.0f} trx/s target' if rate else 'unthrottled'}); "
                     f"replicas {st.get('durability')}, {st.get('workers')} workers ({st.get('mode')}); the probe "
                     "loop is native (dbperf-driver stale-reads); the wait's latency is the round trip of SELECT "
                     "MASTER_GTID_WAIT on the replica (fetching @@last_gtid on the primary is a further p50 "
                     f"{_num((st.get('gtid_fetch_latency_us') or {}).get('p50_us'), 1)} µs).")
    if s.get("cross_engine"):
        rows = [(c["durability"], c["table_engine"], c["state_engine"], f"{c['benchmark']} t={c['client_threads']}",
                 _num(c["transactions"]), _num(c["trx_per_s"]), f"{c['apply_s']:.2f}",
                 "-" if c["vs_single_engine"] is None else f"{c['vs_single_engine']:.2f}x") for c in s["cross_engine"]]
        sections.append(StudyTable("cross-engine commits (replica apply, one SQL thread)",
                                ("durability", "tables", "GTID state", "primary load", "trx", "trx/s", "apply s",
                                 "vs state in rocksdb"), rows, 4))
        notes.append("cross-engine: GTID state innodb = mysql.gtid_slave_pos in InnoDB while the tables are MyRocks "
                     "(every replicated commit spans two engines); auto = gtid_pos_auto_engines = innodb,rocksdb "
                     "(a state table per engine); rocksdb = mysql.gtid_slave_pos in MyRocks. fsync: sync_binlog = 1 "
                     "and both engines' flush_log_at_trx_commit = 1; no-fsync: 0 and 2.")
    if s.get("fdatasync_per_s"):
        notes.append(f"fdatasync rate of the data directory's device: {s['fdatasync_per_s']:,.0f}/s (16 KB random "
                     "writes round robin over five 1 MB files, 2 s; [Nielsen 2017-05-12] measured 120/s on its "
                     "SSD): it bounds durable commits per second.")
    for f in s["failures"]:
        notes.append(f"FAILED {f['study']}: {f['error']}" + (f"\n{f['server_log_tail']}" if f.get("server_log_tail")
                                                             else ""))
    return sections, notes


MB = 1 << 20
LAG_POINTS = 8  # samples shown per measurement in the lag-over-time table


def _pg_apply_sections(s: dict[str, Any], sections: list[StudyTable], notes: list[str]) -> None:
    """PostgreSQL's apply table (workers 1, not applicable; WAL volume and peak lag) and the lag over time."""
    rows: list[tuple[str, ...]] = []
    lag_rows: list[tuple[str, ...]] = []
    order = sorted(s["apply"], key=lambda r: (r["durability"], r["benchmark"], r["client_threads"], r["mode"]))
    for r in order:
        peak_lag = r.get("peak_replay_lag_s")
        rows.append((r["durability"], f"{r['benchmark']} t={r['client_threads']}", "1 (n/a)", r["mode"],
                     _num(r["transactions"]), _num(r["trx_per_s"]),
                     f"{_num(r['trx_per_s_min'])}–{_num(r['trx_per_s_max'])}", str(r["n"]),
                     _num(r["apply_s"], 3), _num(r.get("resume_delay_s"), 3), _num((r.get("wal_bytes") or 0) / MB, 1),
                     _num((r.get("peak_replay_behind_bytes") or 0) / MB, 1),
                     "-" if peak_lag is None else f"{peak_lag:.2f}", _num(r["primary_trx_per_s"])))
        series = r.get("lag_series") or []
        if series:
            last = len(series) - 1
            picked = [series[i] for i in sorted({round(k * last / (LAG_POINTS - 1)) for k in range(LAG_POINTS)})]
            label = f"{r['durability']} {r['mode']}"
            for x in picked:
                lag = x.get("replay_lag_s")
                lag_rows.append((label, f"{x['t_s']:.1f}", x["phase"], _num(x["replay_behind_bytes"] / MB, 2),
                                 _num(x["receive_behind_bytes"] / MB, 2), "-" if lag is None else f"{lag:.3f}"))
                label = ""
    sections.append(StudyTable("standby apply rate (trx/s replayed, median of n)",
                            ("durability", "primary load", "workers", "mode", "trx", "trx/s", "min–max", "n",
                             "replay s", "resume delay s", "WAL MB", "peak behind MB", "peak replay_lag s",
                             "primary trx/s"), rows, 4))
    if lag_rows:
        sections.append(StudyTable("replay lag over time (first run of each row; load: replay paused, apply: resumed)",
                                ("measurement", "t s", "phase", "not replayed MB", "not received MB",
                                 "replay_lag s"), lag_rows, 3))
    if s.get("cores_note"):
        notes.append(s["cores_note"])
    if s.get("apply_method"):
        notes.append(s["apply_method"])


def _pg_stale_section(st: dict[str, Any], sections: list[StudyTable], notes: list[str]) -> None:
    """PostgreSQL's stale reads: the wait is the commit under remote_apply, so both rows show the commit's latency."""
    rows: list[tuple[str, ...]] = []
    for label, key in (("without wait (commit: local)", "without_wait"),
                       ("synchronous_commit = remote_apply", "with_wait")):
        if st[key] is None:
            continue
        lat = st.get("wait_latency_us") if key == "with_wait" else st.get("write_latency_us")
        rows.append((label, _num(st.get(f"reads_{key}")), _num(st.get(f"stale_{key}")), f"{st[key]:.2%}",
                     *(_num(lat[p], 1) if lat else "-" for p in ("p50_us", "p95_us", "p99_us", "max_us")),
                     _num(st.get(f"background_trx_per_s_{key}"))))
    sections.append(StudyTable("stale reads (write on the primary, read the row on a standby at once)",
                            ("probe", "reads", "stale", "stale fraction", "commit p50 µs", "p95 µs", "p99 µs",
                             "max µs", "background trx/s"), rows, 1))
    added = st.get("wait_added_us")
    rate = st.get("background_rate")
    notes.append(f"stale reads: {st.get('background_threads')} background writer thread(s) on the primary "
                 f"({f'{rate:,.0f} trx/s target' if rate else 'unthrottled'}, synchronous_commit = local); standbys "
                 f"{st.get('durability')}, {st.get('mode')}, all listed in synchronous_standby_names (FIRST n); the "
                 "probe loop is native (dbperf-driver stale-reads). The wait is part of the commit: the commit "
                 "round trip under remote_apply against the same under local"
                 + (f", so the wait adds p50 {_num(added['p50_us'], 1)} µs, p95 {_num(added['p95_us'], 1)} µs, "
                    f"p99 {_num(added['p99_us'], 1)} µs (differences of percentiles)." if added else ".")
                 + " remote_apply has no timeout: a standby that dies fails the study (the lab ends the waiting "
                   "sessions).")
