"""Results directories written by the lab's own writer (storage.results.ResultsWriter) from made-up figures: for
report, history and speed tests that need runs of a given shape without running engines. The figures are random
but seeded; nothing here is presented as a measurement."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import msgspec
import numpy as np

from dbperf.records import CellRecord, Latency, RunResult, Usage
from dbperf.run_meta import RunMeta, run_meta
from dbperf.storage.results import ResultsWriter

GROUPS = ("point", "range", "write")


def write_run(directory: Path, targets: list[str], benchmarks: list[str], repeats: int, *, seed: int = 1,
              speed: dict[str, float] | None = None, noise: float = 0.03, engine: str = "sqlite",
              engine_version: str = "3.54.1", host: str = "synthetic-host",
              started_at: str = "2026-11-01T00:00:00+00:00", server: bool = False,
              meta_extra: dict[str, Any] | None = None) -> Path:
    """A complete results directory: every (target, benchmark) measured `repeats` times at 1 thread. `speed` scales
    a target's QPS (default 1.0)."""
    rng = random.Random(seed)
    speed = speed or {}
    meta = {
        "dbperf_results": 1, "status": "complete", "started_at": started_at, "finished_at": started_at,
        "experiment": "synthetic.toml", "host": {"hostname": host, "cpu_model": "synthetic CPU", "cores": 2},
        "driver": "dbperf-driver synthetic", "base": targets[0], "aggregate": "median", "tables": 1,
        "table_size": 1000, "threads": [1], "time_s": 1.0, "warmup_s": 0.1, "repeats": repeats, "seed": seed,
        "prepared": True,
        "benchmarks": [{"name": b, "group": GROUPS[i % 3], "phase": "read", "queries_per_event": 1,
                        "sql": [f"SELECT c FROM sbtest1 WHERE id=? -- {b}"]} for i, b in enumerate(benchmarks)],
        "targets": [{"name": t, "engine": engine, "engine_version": engine_version, "library": f"/lib/{t}.so",
                     "settings": [["journal_mode", "WAL"]], "build": {"flags": ["-O2"], "label": "O2",
                                                                     "compiler": {"version": "gcc 12"}}}
                    for t in targets],
        **(meta_extra or {}),
    }
    writer = ResultsWriter(directory)
    writer.write_meta(run_meta(meta), "# synthetic\n")
    base_qps = {b: random.Random(b).uniform(2_000, 200_000) for b in benchmarks}  # the same in every run
    for b in benchmarks:
        for r in range(1, repeats + 1):
            for t in targets:
                qps = base_qps[b] * speed.get(t, 1.0) * (1 + rng.gauss(0, noise))
                writer.append(_cell(t, b, r, qps, server))
    writer.close()
    return directory


def _cell(target: str, benchmark: str, repeat: int, qps: float, server: bool) -> CellRecord:
    queries = int(qps)
    cpu = 1e6 / qps * 0.9
    result = RunResult(
        qps=qps, eps=qps, queries=queries, errors=0,
        latency=Latency(p50_us=1e6 / qps, p99_us=3e6 / qps, max_us=20e6 / qps, p95_us=2e6 / qps),
        client_usage=Usage(user_us=cpu * queries * 0.6, system_us=cpu * queries * 0.4, voluntary_cs=queries // 100,
                           involuntary_cs=3),
        server_usage=Usage(user_us=cpu * queries, system_us=cpu * queries * 0.3, voluntary_cs=queries,
                           involuntary_cs=1) if server else None,
        duration_s=1.0, threads=1)
    return CellRecord(target=target, benchmark=benchmark, threads=1, repeat=repeat, status="ok", result=result)


def meta_of(fields: dict[str, Any]) -> RunMeta:
    """A test's hand-made meta.json fields as the RunMeta the reports take (no version, no shape check: a test's
    meta holds only what its report reads)."""
    return msgspec.convert(fields, RunMeta)


def replication_meta(fields: dict[str, Any]) -> RunMeta:
    """A replication lab's hand-made meta.json fields (its one target named as the lab names it) as a RunMeta."""
    return meta_of({"base": "lab", "targets": [{"name": "lab"}], **fields})


def make_matrix_dir(tmp: Path, name: str = "run", **kwargs: Any) -> Path:
    return write_run(tmp / name, **kwargs)


def round_pairs(rng: np.random.Generator, sequences: int, rounds: int, diff: float, noise: float,
                df: float = 3.0, shared: float = 0.10, drift: float = 0.05, ar: float = 0.8,
                within_round: float = 0.2) -> tuple[np.ndarray, np.ndarray]:
    """Seeded made-up QPS of a target and a base measured in interleaved rounds, shape (sequences, rounds) each:
    log QPS = level + diff (target only) + a per-round factor both sides share (Student t, `shared` scale) + the
    host's AR(1) drift across rounds (`drift` innovation sd, coefficient `ar`), shared too + each side's own noise
    (Student t with `df` degrees of freedom, scaled so that it alone gives the per-round log ratio sd `noise`).
    Plus what does not cancel: the host moves on between the round's two measurements (the order alternating
    from round to round) by `within_round` x noise, following an AR(1) of its own, so the ratios carry a small
    drift that is correlated across rounds and not symmetric given the past."""
    unit_t = np.sqrt(df / (df - 2))
    own = rng.standard_t(df, size=(sequences, rounds, 2)) / unit_t * noise / np.sqrt(2)
    factor = rng.standard_t(df, size=(sequences, rounds)) * shared
    host = np.zeros((sequences, rounds + 1))
    move = np.zeros((sequences, rounds + 1))
    host[:, 0] = rng.normal(0.0, drift / np.sqrt(1 - ar ** 2), sequences)
    move[:, 0] = rng.normal(0.0, 1.0, sequences)
    for i in range(1, rounds + 1):
        host[:, i] = ar * host[:, i - 1] + rng.normal(0.0, drift, sequences)
        move[:, i] = ar * move[:, i - 1] + rng.normal(0.0, np.sqrt(1 - ar ** 2), sequences)
    step = within_round * noise * np.diff(move, axis=1) / np.sqrt(2 * (1 - ar))  # unit variance, then scaled
    target_first = (np.arange(rounds) % 2 == 0)[None, :]
    level = np.log(100_000.0) + factor + host[:, :rounds]
    target = np.exp(level + diff + np.where(target_first, 0.0, step) + own[..., 0])
    base = np.exp(level + np.where(target_first, step, 0.0) + own[..., 1])
    return target, base
