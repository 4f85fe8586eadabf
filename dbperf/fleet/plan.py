"""Which targets run on which host: `[fleet] hosts` run the whole matrix each (hosts become a dimension); a target
with `host = "..."` runs on that host only. Each host gets its part as an experiment of its own, run there exactly as
`dbperf run` would run it (repeats interleaved across that host's targets)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from dbperf.errors import UserError
from dbperf.experiment.model import Experiment
from dbperf.runner.matrix import CellKey, plan_cells


@dataclass
class HostPart:
    host: str
    experiment: Experiment

    @property
    def cells(self) -> list[CellKey]:
        return [c.key for c in plan_cells(self.experiment)]


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
