"""The `remedies` keys: [run]'s list (absent: the lab's defaults, host/remedies DEFAULTS) and a target's
own, which replaces it. A remedy a target names itself and cannot take is an error of one line; one it inherits from
[run] and cannot take (a server target, where the engine does not run in the driver; a target that sets its own huge
pages) is left out and said so in the target's `remedies_not_applied`, which the run's metadata keeps."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from dbperf.errors import UserError
from dbperf.experiment.model import Target
from dbperf.host.remedies import DEFAULTS, REMEDIES, check_remedies


def _why_not(name: str, target: Target, cumulative: bool) -> str | None:
    r = REMEDIES[name]
    if r.in_process_only and target.is_server:
        return "it acts on the process that runs the engine: the driver runs SQLite, not a server"
    return r.conflict({"hugepages": target.process.hugepages, "cumulative": cumulative})


def with_remedies(targets: list[Target], raw_targets: list[dict[str, Any]], run: dict[str, Any], cumulative: bool,
                  where: str) -> list[Target]:
    inherited = check_remedies(run["remedies"], f"{where} [run].remedies") if "remedies" in run else DEFAULTS
    out = []
    for target, raw in zip(targets, raw_targets, strict=True):
        twhere = f"{where} target {target.name!r}.remedies"
        own = "remedies" in raw
        names = check_remedies(raw["remedies"], twhere) if own else inherited
        for n in names:
            clash = next((x for x in REMEDIES[n].excludes if x in names), None)
            if clash:
                raise UserError(f"{twhere if own else where + ' [run].remedies'}: {n} and {clash} cannot be combined")
        applied, skipped = [], {}
        for n in names:
            why = _why_not(n, target, cumulative)
            if why and own:
                raise UserError(f"{twhere}: {n}: {why}")
            if why:
                skipped[n] = why
            else:
                applied.append(n)
        out.append(replace(target, remedies=tuple(applied), remedies_not_applied=skipped))
    return out
