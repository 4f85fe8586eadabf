"""An experiment's `[replication]` section, checked (the keys are declared in dbperf/experiment/keys.py). The
primary's write load is the experiment's `[run]` benchmarks (write workloads) at its `threads`; the lab's one
target says which MariaDB, MySQL or PostgreSQL and its settings, which the primary and every replica share. What
`workers`, `modes` and `durability` may name depends on the kind of replication the engine's servers use (its
rules: binlog_rules.py for MariaDB's and MySQL's binlog replicas, streaming_rules.py for PostgreSQL's standbys)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from dbperf import engines
from dbperf.engines.mariadb import MARIADB
from dbperf.errors import UserError
from dbperf.experiment import binlog_rules, keys, streaming_rules
from dbperf.experiment.replication_rules import SectionRules, names

STUDIES = ("apply", "stale-reads", "cross-engine")
DEFAULT_STUDIES = ("apply", "stale-reads")
# Each kind of replication's rules, by the name an engine's descriptor gives it (Engine.replication).
KINDS: dict[str, SectionRules] = {r.name: r for r in (binlog_rules.RULES, streaming_rules.RULES)}


def rules(engine: str) -> SectionRules:
    """The rules of the kind of replication the lab runs on `engine`'s servers, as that engine has them. The section
    of an engine the lab does not replicate is read as MariaDB's: check_replication_experiment then refuses its
    target."""
    return KINDS.get(engines.replication_of(engine) or "", binlog_rules.RULES).of_engine(engine)


@dataclass(frozen=True)
class ReplicationSpec:
    studies: tuple[str, ...] = DEFAULT_STUDIES
    replicas: int = 1
    transactions: int = 20_000
    workers: tuple[int, ...] = binlog_rules.DEFAULT_WORKERS
    modes: tuple[str, ...] = binlog_rules.DEFAULT_MODES
    durability: tuple[str, ...] = binlog_rules.RULES.durability
    commit_wait_counts: tuple[int, ...] = (0,)
    commit_wait_usec: int = binlog_rules.DEFAULT_COMMIT_WAIT_USEC
    repeats: int = 3  # every measurement of every study, so that each figure has the range of its runs
    stale_reads: int = 2000
    background_threads: int = 1
    background_rate: float = 200.0
    stale_durability: str = "binlog-crash-safe"
    wait_timeout_s: float = 10.0

    def apply_measurements(self, benchmarks: int, thread_counts: int) -> int:
        return (self.repeats * len(self.durability) * len(self.commit_wait_counts) * benchmarks * thread_counts
                * sum(1 if w == 0 else len(self.modes) for w in self.workers))


def parse_replication(raw: Any, where: str, engine: str = MARIADB.name) -> ReplicationSpec:
    """The section for `engine`: the apply keys, durability variants and studies its kind of replication has
    (binlog_rules.py, streaming_rules.py); a UserError, one line, for what it does not."""
    where = f"{where} [replication]"
    if not isinstance(raw, dict):
        raise UserError(f"{where}: expected a table")
    values = keys.checked(raw, keys.REPLICATION, where)
    kind = rules(engine)
    apply = kind.apply_keys(raw, values, where)
    studies = names(raw, "studies", STUDIES, DEFAULT_STUDIES, where)
    refused = next((kind.refused_studies[s] for s in studies if s in kind.refused_studies), None)
    if refused:
        raise UserError(f"{where}.studies: {refused}")
    rate = raw.get("background_rate", 200.0)
    if isinstance(rate, bool) or not isinstance(rate, (int, float)) or not 0 <= rate <= 1e6:
        raise UserError(f"{where}.background_rate: expected transactions per second from 0 to 1000000, got {rate!r}")
    durability = names(raw, "durability", kind.durability, kind.durability, where)
    stale_durability = raw.get("stale_durability", durability[0])
    if stale_durability not in kind.durability:
        raise UserError(f"{where}.stale_durability: unknown {stale_durability!r} "
                        f"(known: {', '.join(kind.durability)})")
    return ReplicationSpec(
        studies=studies,
        replicas=values.get("replicas", 1),
        transactions=values.get("transactions", 20_000),
        workers=apply.workers,
        modes=apply.modes,
        durability=durability,
        commit_wait_counts=apply.commit_wait_counts,
        commit_wait_usec=apply.commit_wait_usec,
        repeats=values.get("repeats", 3),
        stale_reads=values.get("stale_reads", 2000),
        background_threads=values.get("background_threads", 1),
        background_rate=float(rate),
        stale_durability=stale_durability,
        wait_timeout_s=values.get("wait_timeout", 10.0),
    )


def check_replication_experiment(spec: ReplicationSpec, targets: list[Any], benchmarks: list[Any],
                                 where: str) -> None:
    """A replication run has one target of an engine the lab replicates, which it starts; the apply study's load is
    write workloads."""
    if len(targets) != 1:
        raise UserError(f"{where}: a [replication] experiment has exactly one [[target]] (the primary and its "
                        f"replicas run it), got {len(targets)}")
    (t,) = targets
    kind = t.descriptor
    if kind.replication is None:
        titles = sorted(e.title for e in engines.ENGINES.values() if e.replication)
        replicated = " or ".join([", ".join(titles[:-1]), titles[-1]] if len(titles) > 1 else titles)
        raise UserError(f"{where} target {t.name!r}: the replication lab runs {replicated}, not {t.engine}")
    if t.dsn is not None:
        raise UserError(f"{where} target {t.name!r}: the replication lab starts its own servers; a dsn cannot be "
                        "replicated by it")
    owned = rules(t.engine).lab_settings
    for key in t.config:
        if key.replace("-", "_").lower() in owned:
            raise UserError(f"{where} target {t.name!r} config.{key}: the replication lab sets this itself "
                            "(durability, workers and commit wait are [replication] keys)")
    if "apply" in spec.studies or "cross-engine" in spec.studies:
        reads = [b.name for b in benchmarks if b.phase == "read"]
        if reads:
            raise UserError(f"{where} [run].benchmarks: {reads[0]!r} does not write; the apply and cross-engine "
                            "studies replicate write workloads (update-index, write-only, ...)")
