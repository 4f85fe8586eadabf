"""Which targets run on which host: `[fleet] hosts` run the whole matrix each (hosts become a dimension); a target
with `host = "..."` runs on that host only. Each host gets its part as an experiment of its own, run there exactly as
`dbperf run` would run it (repeats interleaved across that host's targets), with `[run].cpus` planned for the CPUs
that host may use (`with_host_cpus`)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace

from dbperf.errors import UserError
from dbperf.experiment.model import Experiment
from dbperf.host.cpus import plan_cpus
from dbperf.runner.plan import RunPlan
from dbperf.runner.resume import CellKey


@dataclass
class HostPart:
    host: str
    experiment: Experiment

    @property
    def cells(self) -> list[CellKey]:
        return [c.key for c in RunPlan.of(self.experiment).cells()]


def fleet_hosts(e: Experiment, default: Sequence[str] = ()) -> list[str]:
    """Hosts the experiment names ([fleet] hosts, then targets' `host`), or `default` (`fleet local`'s workers)
    when it names none."""
    named = list(e.fleet.hosts) if e.fleet else []
    hosts = named or list(default)
    for t in e.targets:
        if t.host and t.host not in hosts:
            hosts.append(t.host)
    return hosts


def split(e: Experiment, default: Sequence[str] = ()) -> list[HostPart]:
    """Every host's part of the matrix. A target without `host` runs on every host of [fleet] hosts (or of
    `default`)."""
    everywhere = list(e.fleet.hosts) if e.fleet and e.fleet.hosts else list(default)
    parts = []
    for host in fleet_hosts(e, default):
        targets = tuple(t for t in e.targets if t.host == host or (t.host is None and host in everywhere))
        if not targets:
            continue
        names = [t.name for t in targets]
        parts.append(HostPart(host, replace(e, targets=targets, base=e.base if e.base in names else names[0])))
    unplaced = [t.name for t in e.targets if t.host is None and not everywhere]
    if unplaced:
        raise UserError(f"{e.path}: target {unplaced[0]!r} has no host: give [fleet] hosts = [...] or the target "
                        "host = \"...\"")
    if not parts:
        raise UserError(f"{e.path}: no host to run on")
    return parts


def host_experiment(e: Experiment, host: str, allowed: Iterable[int]) -> Experiment:
    """`e` with `[run].cpus` planned for `host`, which may use the CPUs `allowed`. The controller read the file
    without planning it (its own CPUs bound nothing); the driver and servers are pinned on the host, and duets are
    formed (or not) there."""
    return replace(e, cpus=plan_cpus(e.cpus_setting, f"host {host!r}: {e.path} [run].cpus", frozenset(allowed)))


def with_host_cpus(parts: Sequence[HostPart], hosts_cpus: Mapping[str, Iterable[int]]) -> list[HostPart]:
    """Every part with `cpus` planned for its host's CPUs (host name -> the CPUs it may use, asked there), before
    its cells are planned: a duet's cells, and so the cell keys, depend on them."""
    return [HostPart(p.host, host_experiment(p.experiment, p.host, hosts_cpus[p.host])) for p in parts]
