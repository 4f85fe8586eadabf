"""A probe step: micro-benchmarks of probe families (dbperf probe), into DIR/<step>/probes.json."""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

from dbperf.errors import UserError
from dbperf.probes.catalog import FAMILIES
from dbperf.probes.run import run_probes
from dbperf.studies.steps.base import Checking, Over, StepEnd, StepKind, StepRun
from dbperf.usecases.probe import store_probes
from dbperf.usecases.progress import say


class ProbeKind(StepKind):
    name = "probe"
    keys = ("families", "repeats", "scale")
    smoke_limits: ClassVar[dict[str, float]] = {"probe_scale": 0.1, "probe_repeats": 5}

    def check(self, s: dict[str, Any], at: Checking) -> None:
        unknown = [f for f in s.get("families", []) if f not in FAMILIES]
        if unknown or not s.get("families"):
            raise UserError(f"{at.where}: families must name probe families ({', '.join(FAMILIES)})")

    def smoke(self, s: dict[str, Any], over: Over, where: str) -> None:
        over(float(s.get("scale", 1.0)), "probe_scale", "probe scale")
        over(int(s.get("repeats", 5)), "probe_repeats", "probe repeats")

    def families(self, settings: dict[str, Any]) -> tuple[str, ...]:
        return tuple(settings.get("families", []))

    def own_file(self, directory: Path, step: str) -> Path:
        return directory / step / "probes.json"

    def run(self, run: StepRun) -> StepEnd:
        s = run.settings
        result = run_probes(list(s["families"]), repeats=int(s.get("repeats", 5)), scale=float(s.get("scale", 1.0)),
                            on_family=lambda f: say(f"dbperf: probing {f.name}: {f.description}", run.err),
                            announce=lambda said: say(f"dbperf: {said}", run.err))
        store_probes(run.directory / run.name, result, force=False)
        return StepEnd(f"probes {', '.join(s['families'])}, {result['repeats']} repeats, scale {result['scale']:g}")


KIND = ProbeKind()
