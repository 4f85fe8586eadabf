"""What a study figure's measure gives (measures/: one kind a file) and what it reads with: the value (or the fact)
and its evidence, the run that measured it, a path into a step's JSON, the verdict of a compared cell under the
run's own rule, and the builds a value rests on. A figure that was not measured says why (NotMeasured)."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

from dbperf.run_meta import HostMeta, RunMeta
from dbperf.stats.rule_history import RuleChange, under_run_rule
from dbperf.stats.verdict import CellVerdict, deciding
from dbperf.studies.builds import build_problems
from dbperf.studies.evidence import Interval

SEGMENT = re.compile(r"^([^\[\]]+)(?:\[([^\]]*)\])?$")


class NotMeasured(Exception):
    """Why a figure has no value (its step failed, or did not produce it)."""


@dataclass(frozen=True)
class Measured:
    value: float | None
    verdict: str | None = None  # the lab's verdict where the figure is a compared cell
    text: str | None = None  # a measured fact that is not a number (a version found, whether a finding is gone)
    interval: Interval | None = None  # where the value lies (evidence.py); None: `why_none` says why
    why_none: str | None = None
    decided: bool | None = None  # a compared cell's verdict decided (None: no verdict applies)
    samples: dict[int, float] | None = None  # per repeat (round), to pair with another cell of the same rounds
    builds: tuple[str, ...] = ()  # the build keys the value rests on (their manifests: studies/builds.py)
    problems: tuple[str, ...] = ()  # what is wrong with those builds, said on the figure
    # The run that measured it where that is not the step's own run (a diff step's worst cell, whose rQPS and verdict
    # a versions run kept on record measured): the figure names that run, not the one that read it back.
    run: Provenance | None = None


@dataclass(frozen=True)
class Provenance:
    """The run that measured a figure: its folder, command, when, and the host (summary.Host.to_json: vendor and
    model, family/model/stepping, microcode, kernel, vCPUs, load average at its start and end)."""
    directory: str | None
    command: str | None
    started: str | None
    ended: str | None
    host: dict[str, Any]
    # How it was established when not by the run itself (read back later from its results' meta.json), and what
    # that leaves unknown (the load average a study run keeps and a results directory does not).
    note: str | None = None

    @classmethod
    def from_json(cls, doc: dict[str, Any]) -> Provenance:
        return cls(doc.get("directory"), doc.get("command"), doc.get("started"), doc.get("ended"),
                   dict(doc.get("host") or {}), doc.get("note"))

    @classmethod
    def of_results(cls, meta: RunMeta, folder: str | None) -> Provenance:
        """The run a results directory's meta.json describes (a results directory keeps no load average)."""
        h = meta.host or HostMeta()
        host = {"cpu": h.cpu_model, "cpu_id": h.cpu_id, "microcode": h.microcode, "cores": h.cores,
                "virtualised": h.virtualised, "kernel": h.kernel, "load_start": None, "load_end": None}
        return cls(folder, None, meta.started_at, meta.finished_at, host,
                   note="established from its results' meta.json kept beside the record (host, start and end); "
                        "a results directory keeps no load average, and the study run's command was not kept")

    @property
    def label(self) -> str:
        """The host column of a record: which CPU (and generation), how many vCPUs, which run, its load."""
        h = self.host
        cpu = str(h.get("cpu") or "?") + (f" ({h['cpu_id']})" if h.get("cpu_id") else " (generation not recorded)")
        when = (self.started or "?")[:16].replace("T", " ")
        load = (f"load {_load1(h.get('load_start'))} → {_load1(h.get('load_end'))}"
                if h.get("load_start") or h.get("load_end") else "load not recorded")
        return f"{cpu}, {h.get('cores', '?')} vCPUs{', VM' if h.get('virtualised') else ''}; run of {when} UTC, {load}"


def _load1(load: Any) -> str:
    """The 1-minute load average of a host's (1, 5, 15) triple, or that it was not recorded."""
    return f"{float(load[0]):.2f}" if isinstance(load, (list, tuple)) and load else "not recorded"




def walk(doc: Any, path: str) -> Any:
    """`a.b[k=v,k2=v2].c`: keys of objects; `[k=v]` picks the first element of a list whose fields match (as text);
    `[3]` an index."""
    node = doc
    for part in path.split("."):
        m = SEGMENT.match(part)
        if m is None:
            raise NotMeasured(f"bad path segment {part!r}")
        key, select = m.groups()
        if not isinstance(node, dict) or key not in node:
            raise NotMeasured(f"no {key!r} in the results")
        node = node[key]
        if select is None:
            continue
        if not isinstance(node, list):
            raise NotMeasured(f"{key!r} is not a list")
        if select.isdigit():
            if int(select) >= len(node):
                raise NotMeasured(f"{key}[{select}]: out of range")
            node = node[int(select)]
            continue
        wanted = dict(p.split("=", 1) for p in select.split(",") if "=" in p)
        node = next((x for x in node if isinstance(x, dict)
                     and all(str(x.get(k)) == v for k, v in wanted.items())), None)
        if node is None:
            raise NotMeasured(f"no {key} entry with {select}")
    return node


def number(value: Any, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise NotMeasured(f"{what} is not a number ({value!r})")
    return float(value)



def run_verdict(wall: CellVerdict | None, cpu: CellVerdict | None,
                started: str | None) -> tuple[CellVerdict | None, RuleChange | None]:
    """The deciding verdict as the run's own rule gives it (stats/rule_history.py), and the later change that made
    the call today's rule makes, if one did."""
    wall_then, wall_change = under_run_rule(wall, started)
    cpu_then, cpu_change = under_run_rule(cpu, started)
    now = deciding(wall, cpu)
    then = deciding(wall_then, cpu_then)
    change = wall_change or cpu_change
    if now is not None and now.decided and (then is None or not then.decided) and change is not None:
        return then, change
    return then, None


def verdict_interval(v: CellVerdict | None) -> Interval | str:
    if v is None or v.rule != "sequential" or v.lower is None or v.upper is None:
        return "too few rounds for the sequential rule's interval"
    kind = "interval at planned looks" if v.planned else "anytime-valid interval"
    return Interval(1 + v.lower, 1 + v.upper,
                    f"the sequential rule's {1 - v.alpha:.1%} {kind} of the wall clock's per-round ratio, "
                    f"{v.paired.n if v.paired else '?'} rounds", coverage=1 - v.alpha)


def interval_or_why(found: Interval | str) -> dict[str, Any]:
    return {"interval": found} if isinstance(found, Interval) else {"why_none": found}


def builds_of(meta: RunMeta, names: list[str | None]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The build keys of the named targets of a run, and what is wrong with them."""
    keys, problems = [], []
    for t in meta.targets:
        if t.name in names and isinstance(t.build, dict):
            if t.build.get("key"):
                keys.append(str(t.build["key"]))
            problems += build_problems(t.build)
    return tuple(dict.fromkeys(keys)), tuple(dict.fromkeys(problems))

