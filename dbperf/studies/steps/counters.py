"""A counters step: the counters per query (dbperf profile) of every target of an earlier experiment step on one
benchmark, into DIR/<step>.json."""

from __future__ import annotations

import json
from typing import Any, ClassVar

from dbperf.errors import UserError
from dbperf.output_file import write_file
from dbperf.studies.steps.base import Checking, Over, StepEnd, StepKind, StepRun, check_of
from dbperf.studies.steps.experiment import experiment_file
from dbperf.usecases.explain import MODES as COUNTER_MODES
from dbperf.usecases.explain import i1_counts, profile_targets


def _ratio(after: float | None, before: float | None) -> float | None:
    return after / before if after is not None and before else None


class CountersKind(StepKind):
    name = "counters"
    keys = ("of", "benchmark", "queries", "mode")
    smoke_limits: ClassVar[dict[str, float]] = {"counters_queries": 1_000}

    def exact(self, s: dict[str, Any]) -> str | None:
        if s.get("mode", "simulated") == "simulated":
            return "simulated counts (valgrind): deterministic, the same on every run of the same binaries"
        return None

    def check(self, s: dict[str, Any], at: Checking) -> None:
        check_of(s, at)
        if s.get("benchmark", "point-query") not in at.catalog:
            raise UserError(f"{at.where}: benchmark {s.get('benchmark')!r} is not in the catalog")
        queries = s.get("queries", 1)
        if isinstance(queries, bool) or not isinstance(queries, int) or queries < 1:
            raise UserError(f"{at.where}: queries must be a whole number of at least 1")
        if s.get("mode", "simulated") not in COUNTER_MODES:
            raise UserError(f"{at.where}: mode must be one of {', '.join(COUNTER_MODES)}")

    def smoke(self, s: dict[str, Any], over: Over, where: str) -> None:
        over(int(s.get("queries", 5_000)), "counters_queries", "queries")

    def run(self, run: StepRun) -> StepEnd:
        """Counters per query of every target of an earlier experiment step on one benchmark (dbperf profile), as
        DIR/<step>.json: each target's, and each target's against the base (instructions ×, I1 misses per
        instruction before → after). It needs the step's targets, not its results: run alone (--step), it profiles
        the experiment file the study defines."""
        study, name, s, directory, err = run.study, run.name, run.settings, run.directory, run.err
        bench, queries = str(s.get("benchmark", "point-query")), int(s.get("queries", 5000))
        counter_mode = str(s.get("mode", "simulated"))
        experiment = directory / f"{s['of']}.toml"  # the experiment as its step ran it
        if not experiment.is_file():
            experiment = experiment_file(study, study.step(str(s["of"])), run.mode, directory)
        base, profiles = profile_targets(experiment, bench, queries, counter_mode, err)
        counts = [i1_counts(p) for p in profiles]  # (instructions, I1 misses, I1 misses % of instructions) per query
        targets = [{"target": p.target, "mode": p.mode, "mode_reason": p.mode_reason, "tool": p.tool,
                    "method": p.method, "events": p.events, "queries": p.queries, "instructions": ir,
                    "i1_misses": i1, "i1_miss_pct_of_instructions": pct, "per_query": p.per_query}
                   for p, (ir, i1, pct) in zip(profiles, counts, strict=True)]
        base_ir, _, base_pct = counts[0]
        ratios = [{"target": p.target, "base": base, "instructions": _ratio(ir, base_ir),
                   "i1_miss_pct_before": base_pct, "i1_miss_pct_after": pct, "i1_miss_pct_ratio": _ratio(pct, base_pct)}
                  for p, (ir, _, pct) in zip(profiles[1:], counts[1:], strict=True)]
        doc = {"of": s["of"], "benchmark": bench, "queries": queries, "mode_asked": counter_mode,
               "mode": profiles[0].mode, "mode_reason": profiles[0].mode_reason, "tool": profiles[0].tool,
               "base": base, "targets": targets, "ratios": ratios}
        write_file(directory / f"{name}.json", json.dumps(doc, indent=2) + "\n", force=False, option="--out")
        said = ", ".join(f"{p.target} {base_pct:.2f}% → {pct:.2f}%"
                         for p, (_, _, pct) in zip(profiles[1:], counts[1:], strict=True)
                         if base_pct is not None and pct is not None)
        return StepEnd(f"{doc['mode']} counters of {len(targets)} target(s) on {bench}, {queries} queries each"
                       f"{f' (I1 misses per instruction against {base}: {said})' if said else ''}, in {name}.json")


KIND = CountersKind()
