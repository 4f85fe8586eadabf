"""The history store's listings as Views: `dbperf history list` (the runs) and `dbperf history show` (one run's
stored results). JSON is the store's records as they are (their field names are what scripts read)."""

from __future__ import annotations

from pathlib import Path

from dbperf.history.store import Result, Run
from dbperf.report.model import Block, Row, Section, View
from dbperf.run_meta import RunMeta


def runs_view(path: Path, runs: list[Run]) -> View:
    block = Block("", "", ("run", "started", "host", "status", "targets", "benchmarks", "results", "experiment",
                           "directory"),
                  tuple(Row((str(r.id), r.started_at or "-", r.host, r.status or "-", str(r.targets), str(r.benchmarks),
                             str(r.rows), r.experiment or "-", r.directory)) for r in runs), text_columns=0,
                  left=(1, 2, 3, 7, 8))
    return View("history", f"history: {path}", (Section(block=block),), rows=tuple(r.__dict__ for r in runs),
                document=[r.__dict__ for r in runs])


def _figure(value: float | None, fmt: str) -> str:
    return "-" if value is None else format(value, fmt)


def stored_run_view(run: int, meta: RunMeta, results: list[Result]) -> View:
    block = Block("", "", ("target", "engine", "version", "build", "config", "benchmark", "threads", "QPS", "n",
                           "rQPS", "verdict"),
                  tuple(Row(tuple(str(v) for v in (
                      r.target, r.engine, r.version, r.build, r.config, r.benchmark, r.threads,
                      _figure(r.qps_center, ",.0f"), r.n, _figure(r.rqps, ".2f"), r.verdict or "-"))) for r in results),
                  text_columns=6, left=(10,))
    return View("run", f"run {run}", (Section(block=block),),
                subtitle=f"{meta.started_at or '-'}  host {(meta.host.hostname if meta.host else None) or '-'}  "
                         f"status {meta.status or '-'}",
                rows=tuple(r.__dict__ for r in results),
                document={"run": run, "results": [r.__dict__ for r in results]})
