"""--fix: relink with the remedy (the read-mostly objects of every finding gathered in their own line-aligned
section by a generated GNU ld fragment), rerun the layout check (the finding must be gone), and A/B the workload:
the usual rQPS for a target the lab builds (SQLite's library, or a server built from source), the demo's own
reader-CPU figure for the demo program.

The A/B's base is the target built with -fdata-sections (each object a section of its own, which the fragment
can move), a build of its own in the cache; the fixed build is that build's objects linked again with the fragment
(the target's `ldflags`: builder.py for SQLite, the base's kept build tree for a server), so the A/B differs by
the layout alone. A target whose recipe compiles every object with -fdata-sections already (MySQL's cmake does)
has its stock build as the base: no build of its own. What -fdata-sections costs against the stock build is another
question, a run of its own
(`base_cost` in the JSON names its experiment). A PGO or BOLT server, built in fresh folders with no kept tree to
relink in, is rebuilt whole with both flags and A/B'd against the target as written (`relink: false`)."""

from __future__ import annotations

import contextlib
import hashlib
import json
import re
import statistics
import subprocess
import tempfile
import tomllib
from pathlib import Path
from typing import Any

from rich.console import Console
from scipy.stats import mannwhitneyu

from dbperf.buildlab.paths import cache_root
from dbperf.buildlab.server_build_checks import spec_recipe
from dbperf.errors import UserError
from dbperf.experiment import toml_text
from dbperf.experiment.model import Experiment, Target
from dbperf.host.facts import sha256_of
from dbperf.layout import build
from dbperf.layout.check import check, render, result_json, write_json
from dbperf.layout.dynamic import TraceBudget
from dbperf.layout.findings import Finding, linker_script
from dbperf.layout.lab import MIN_THREADS, built_target, count_target
from dbperf.layout.server_trace import traced_binary
from dbperf.layout.static_map import StaticMap
from dbperf.report.outgoing import draw_report
from dbperf.runner.resume import stopped_on_budget
from dbperf.storage.results import EXPERIMENT, META, read_results
from dbperf.usecases.report import report_view
from dbperf.usecases.run import run_experiment

FIXED_SUFFIX = "-read-mostly"
BASE_SUFFIX = "-data-sections"
BASE_FLAGS = ["-fdata-sections"]  # each object a section of its own, named after it: what the fragment moves
DEMO_AB_ITERATIONS = "20000000"
DEMO_AB_REPEATS = 7


def moved_objects(found: list[Finding]) -> list[str]:
    return list(dict.fromkeys(r["name"] for f in found for r in f.read_mostly))


def write_script(names: list[str], line: int) -> Path:
    """The fragment in a content-addressed file, so that the build lab's cache key (which holds the flags) changes
    with its content."""
    text = linker_script(names, line)
    path = cache_root() / "layout" / "scripts" / f"{hashlib.sha256(text.encode()).hexdigest()[:16]}.ld"
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.is_file():
        path.write_text(text)
    return path


def fix_flags(script: Path) -> list[str]:
    """Every flag of the fixed build beyond the target's: the base's and the link's."""
    return [*BASE_FLAGS, *link_flags(script)]


def link_flags(script: Path) -> list[str]:
    return [f"-Wl,-T,{script}"]


def relinks(target: Target) -> bool:
    """Whether the fix of `target` relinks its -fdata-sections build: SQLite's always (the build lab keeps its
    object), a server's when it is built in a kept tree (not PGO nor BOLT, made in fresh folders)."""
    spec = target.server_build
    return spec is None or not (spec.pgo or spec.bolt)


def work_dir(json_file: Path | None, kind: str) -> Path:
    """Where the fix keeps what it builds and measures (the rebuilt demo, the A/B's experiment and results): beside
    the --json file when there is one (a study's directory keeps its A/B with it), else a new directory in the
    system's temporary one. Kept either way: the JSON points at it."""
    if json_file is None:
        return Path(tempfile.mkdtemp(prefix=f"dbperf-layout-{kind}-"))
    json_file.parent.mkdir(parents=True, exist_ok=True)
    return Path(tempfile.mkdtemp(prefix=f"{json_file.stem}-{kind}-", dir=json_file.parent))


def _placed(names: list[str], fixed: StaticMap) -> dict[str, str]:
    """Where the fixed build put each moved object (its section), so that the proof does not rest on the finding
    merely moving elsewhere."""
    sections = {o.name: o.section for o in fixed.objects}
    return {n: sections.get(n, "missing") for n in names}


def _still_flagged(names: list[str], found: list[Finding]) -> list[str]:
    return [r["name"] for f in found for r in f.read_mostly if r["name"] in names]


def _say(console: Console, text: str) -> None:
    console.print(text, markup=False, highlight=False, soft_wrap=True)


def _demo_ns(exe: Path) -> float:
    proc = subprocess.run([str(exe), DEMO_AB_ITERATIONS], capture_output=True, text=True, timeout=600)
    m = re.match(r"([0-9.]+) ns/iteration reader CPU", proc.stdout)
    if proc.returncode != 0 or m is None:
        raise UserError(f"{exe} failed in the A/B (exit {proc.returncode}): {proc.stderr.strip()[:200]}")
    return float(m.group(1))


def demo_fix(binary: Path, run: str, line: int | None, json_file: Path | None, mode: str, out: Console,
             err: Console, budget: TraceBudget | None = None) -> None:
    static, counts, found = check(binary, run, line, mode, budget=budget, err=err)
    _say(out, "before the fix:")
    render(static, counts, found, out)
    if not found:
        raise UserError("--fix: the demo program has no finding to fix")
    names = moved_objects(found)
    script = write_script(names, static.line)
    fixed_dir = work_dir(json_file, "fix")
    obj = build.demo_object(BASE_FLAGS, fixed_dir)
    digest = sha256_of(str(obj))
    base = build.demo_link(obj, [*BASE_FLAGS], fixed_dir / "demo-base")
    fixed = build.demo_link(obj, fix_flags(script), fixed_dir / "demo")
    objects = {"count": 1, "equal": sha256_of(str(obj)) == digest, "sha256": digest}
    _say(err, f"dbperf: compiled the demo with {' '.join(BASE_FLAGS)} once, linked it as the A/B's base and "
              f"again with {' '.join(link_flags(script))} (moves {', '.join(names)})")
    static2, counts2, found2 = check(fixed, run, line, mode, budget=budget, err=err)
    _say(out, "after the fix:")
    render(static2, counts2, found2, out)
    left = _still_flagged(names, found2)
    placed = _placed(names, static2)
    _say(out, f"moved objects now in: {', '.join(f'{n} {sec}' for n, sec in placed.items())}; still flagged: "
              f"{', '.join(left) or 'none'}")
    ab = _demo_ab(base, fixed, out)
    data = result_json(static, counts, found, {
        "fix": {"moved": names, "linker_script": script.read_text(), "flags": fix_flags(script),
                "findings_after": [f.line for f in found2], "still_flagged": left, "gone": not left,
                "sections_after": placed, "fixed_binary": str(fixed), "ab": ab, "relink": True,
                "base_flags": BASE_FLAGS, "base_binary": str(base), "base_key": None,  # not a build lab's build
                "objects": objects, "base_cost": None}})
    if json_file is not None:
        write_json(json_file, data)
    if left:
        raise UserError(f"--fix: {', '.join(left)} still flagged after the rebuild")


def _demo_ab(original: Path, fixed: Path, out: Console) -> dict[str, Any]:
    """Both builds natively, interleaved A B A B ..., the reader thread's CPU ns per iteration while the writer
    hammers its counter. `original`: the A/B's base, the fixed build's object linked without the fragment."""
    a: list[float] = []
    b: list[float] = []
    for _ in range(DEMO_AB_REPEATS):
        a.append(_demo_ns(original))
        b.append(_demo_ns(fixed))
    ma, mb = statistics.median(a), statistics.median(b)
    p = float(mannwhitneyu(a, b, alternative="two-sided").pvalue)
    verdict = ("faster" if mb < ma else "slower") if p < 0.05 else "no significant difference"
    _say(out, f"A/B, reader thread CPU time, {DEMO_AB_REPEATS} interleaved runs of {DEMO_AB_ITERATIONS} reader "
              f"iterations each: original (-fdata-sections, no fragment) {ma:.2f} ns/iteration "
              f"({min(a):.2f}–{max(a):.2f}), fixed {mb:.2f} ({min(b):.2f}–{max(b):.2f}); fixed/original "
              f"{mb / ma:.3f}, Mann-Whitney p={p:.3g}: {verdict}")
    return {"unit": "ns of reader thread CPU time per iteration (CLOCK_THREAD_CPUTIME_ID)", "original": a,
            "fixed": b, "median_original": ma,
            "median_fixed": mb, "ratio_fixed_over_original": mb / ma, "p_value": p, "verdict": verdict}


def _raw_target(experiment: Path, name: str) -> tuple[dict[str, Any], dict[str, Any]]:
    raw = tomllib.loads(experiment.read_text())
    for t in raw.get("target", []):
        if t.get("name") == name:
            return raw.get("run", {}), t
    raise UserError(f"{experiment}: no target {name!r}")


def _anchored(raw: dict[str, Any], base: Path) -> dict[str, Any]:
    """The target's own files (`patches`, `tree`) as absolute paths: the A/B experiment is read from its work
    folder, not from the experiment's."""
    out = dict(raw)
    if "patches" in raw:
        names = [raw["patches"]] if isinstance(raw["patches"], str) else raw["patches"]
        out["patches"] = [str(base / Path(n).expanduser()) for n in names]
    if "tree" in raw:
        out["tree"] = str(base / Path(raw["tree"]).expanduser())
    return out


def _targets(experiment: Path, target: Target, benchmark: str, threads: int
             ) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """The [run] of the fix's experiments (the one benchmark at the counted thread count, the original [run]'s
    time, repeats and data), the target as written, and its build with -fdata-sections (the A/B's base)."""
    run, raw = _raw_target(experiment, target.name)
    raw = _anchored(raw, experiment.resolve().parent)
    if "source" not in raw:
        raise UserError(f"--fix: target {target.name!r} has no 'source': the lab can only rebuild what it builds")
    cflags = [*raw.get("cflags", [])]
    if stock_data_sections(target) is None:
        cflags += [f for f in BASE_FLAGS if f not in cflags]
    base = {**raw, "name": target.name + BASE_SUFFIX, "cflags": cflags}
    return {**run, "benchmarks": [benchmark], "threads": [threads]}, raw, base


def stock_data_sections(target: Target) -> str | None:
    """Why the target's stock build has every object in a section of its own already (its recipe's word: MySQL's
    cmake gives -fdata-sections to every compile), None when it needs BASE_FLAGS: then the A/B's base is the stock
    build itself, the same build key, and the fixed build relinks its objects. The fix's own check shows it held:
    the moved objects are found in the fragment's section after (`sections_after`), which an object sharing a
    section with others could not be."""
    spec = target.server_build
    recipe = spec_recipe(spec) if spec is not None else None
    return recipe.data_sections if recipe is not None else None


def ab_experiment(experiment: Path, target: Target, benchmark: str, threads: int, script: Path) -> str:
    """The A/B experiment: the target built with -fdata-sections (the base) and the same objects linked again with
    the fragment (`ldflags`); for a target that cannot be relinked (relinks()), the target as written and the
    target rebuilt with both flags."""
    run, raw, base = _targets(experiment, target, benchmark, threads)
    if relinks(target):
        if raw.get("ldflags"):  # its base would be a relink itself, and the fix's not of the A/B's base
            raise UserError(f"--fix: target {target.name!r} has ldflags of its own; the fix relinks its "
                            "-fdata-sections build with the fragment alone: drop them")
        fixed = {**base, "name": target.name + FIXED_SUFFIX, "ldflags": link_flags(script)}
    else:
        base = raw
        fixed = {**raw, "name": target.name + FIXED_SUFFIX, "cflags": [*raw.get("cflags", []), *fix_flags(script)]}
    return toml_text.document({"run": {**run, "base": base["name"]}, "target": [base, fixed]})


def base_cost_experiment(experiment: Path, target: Target, benchmark: str, threads: int) -> str | None:
    """The optional run that measures the A/B's base against the stock build (the target as written): what
    -fdata-sections alone costs, kept apart from the fix's A/B; None when the target has the flag already."""
    run, raw, base = _targets(experiment, target, benchmark, threads)
    if base["cflags"] == raw.get("cflags", []):
        return None
    return toml_text.document({"run": {**run, "base": target.name}, "target": [raw, base]})


def checked_file(target: Target) -> Path:
    """What the layout check reads of a target: a server's binary, else SQLite's library."""
    return traced_binary(target) if target.is_server else Path(target.library)


def refuse_unbuildable(target: Target) -> None:
    """--fix rebuilds the target with the remedy: only what the build lab builds from source."""
    if target.is_server and target.server_build is None:
        raise UserError(f"--fix: target {target.name!r} is a server the lab does not build (a package or a "
                        "release): give a target with source = \"mariadb@debian-src\" to rebuild it with the remedy")


def target_fix(experiment: Path, exp: Experiment, target: Target, benchmark: str, found: list[Finding],
               static: StaticMap, line: int | None, mode: str, out: Console, err: Console,
               budget: TraceBudget | None = None, json_file: Path | None = None) -> dict[str, Any]:
    """The --fix of a target the lab builds; the caller has refused the others (refuse_unbuildable) before the
    count, which takes minutes for a server."""
    if not found:
        raise UserError(f"--fix: {target.name} has no finding on {benchmark}: nothing to fix")
    names = moved_objects(found)
    script = write_script(names, static.line)
    threads = max(MIN_THREADS, *exp.threads)
    work = work_dir(json_file, "ab")
    ab_file = work / "ab.toml"
    ab_file.write_text(ab_experiment(experiment, target, benchmark, threads, script))
    if relinks(target):
        base_words = ("its stock build (the A/B's base: every object in a section of its own already)"
                      if stock_data_sections(target) else f"{target.name} with {' '.join(BASE_FLAGS)} (the A/B's base)")
        _say(err, f"dbperf: building {base_words}, then relinking its objects with {' '.join(link_flags(script))} "
                  f"(moves {', '.join(names)})")
    else:
        _say(err, f"dbperf: rebuilding {target.name} with {' '.join(fix_flags(script))} (moves {', '.join(names)}; "
                  "a PGO or BOLT build has no kept tree to relink in)")
    ab_exp, fixed, manifests = built_target(ab_file, target.name + FIXED_SUFFIX, err)
    relinked: dict[str, Any] = _relinked(target, ab_exp, manifests, out) if relinks(target) else {
        "relink": False, "why_not": "a PGO or BOLT server build is made in a fresh folder, with no kept tree to "
                                    "relink in: rebuilt whole with both flags, A/B against the target as written",
        "base_cost": None}
    if relinks(target):
        cost = base_cost_experiment(experiment, target, benchmark, threads)
        relinked["base_cost"] = _base_cost(cost, work, out)
    static2, counts2, found2, _ = count_target(ab_exp, fixed, benchmark, checked_file(fixed), line, mode, err,
                                               budget)
    _say(out, "after the fix:")
    render(static2, counts2, found2, out)
    left = _still_flagged(names, found2)
    placed = _placed(names, static2)
    _say(out, f"moved objects now in: {', '.join(f'{n} {sec}' for n, sec in placed.items())}; still flagged: "
              f"{', '.join(left) or 'none'}")
    # Not into the history: the A/B's targets carry the user's target's name but a rebuilt library and the check's
    # own settings, and would land in that target's series as one of its runs.
    end = run_experiment(ab_file, work / "results", keep_data=False, err=err, record=False)
    if end.exit_code:
        raise UserError(f"--fix: the A/B run failed (exit {end.exit_code}); results in {end.directory}")
    draw_report(report_view(end.directory), out, err)
    _, records, _ = read_results(end.directory)
    return {"moved": names, "linker_script": script.read_text(), "flags": fix_flags(script),
            "findings_after": [f.line for f in found2], "still_flagged": left, "gone": not left,
            "sections_after": placed, "fixed_library": str(checked_file(fixed)), "ab_results": str(end.directory),
            "ab_cells": len(records), **relinked}


def _relinked(target: Target, ab_exp: Experiment, manifests: dict[str, dict[str, Any]],
              out: Console) -> dict[str, Any]:
    """What the JSON and the report say of the relink: the A/B's base (its build key and flags), the fixed build's
    key, and the objects both were linked from (how many, and whether the fixed build's are the base's by their
    sha256); a UserError when the fixed build is not a relink of the base."""
    base_name, fixed_name = target.name + BASE_SUFFIX, target.name + FIXED_SUFFIX
    base, fixed = manifests[base_name], manifests[fixed_name]
    record = fixed.get("relink") or {}
    if record.get("base_key") != base["key"]:
        raise UserError(f"--fix: {fixed_name} is not a relink of {base_name} (its manifest names base "
                        f"{record.get('base_key')!r}, the base's key is {base['key']!r})")
    objects = {"count": record["object_count"], "equal": record["objects_equal"],
               "compiled": record.get("objects_compiled", 0)}
    same = {True: "sha256 equal to the base's", False: "NOT the base's (sha256 differ)",
            None: "the base's not recorded (built before builds recorded them)"}[objects["equal"]]
    base_target = next(t for t in ab_exp.targets if t.name == base_name)
    _say(out, f"relink: {fixed_name} is {objects['count']:,} object(s) of {base_name} linked again with the fragment "
              f"({same}; {objects['compiled']:,} compiled by the relink); the A/B's base is {base_name}, built with "
              f"{' '.join(BASE_FLAGS)}, build key {base['key']}")
    stock = stock_data_sections(target)
    return {"relink": True, "base_key": base["key"], "base_flags": BASE_FLAGS, "fixed_key": fixed["key"],
            **({"base_is_stock": stock} if stock else {}),
            "base_library": str(checked_file(base_target)), "objects": objects}


def _base_cost(text: str | None, work: Path, out: Console) -> dict[str, Any] | None:
    """The experiment that measures the A/B's base against the stock build, written beside the A/B and said, not
    run: a question of its own, and for a server another build to wait for."""
    if text is None:
        _say(out, "the target is built with -fdata-sections already: the A/B's base is its stock build")
        return None
    path = work / "base-cost.toml"
    path.write_text(text)
    command = f"dbperf run {path} --out {work / 'base-cost'}"
    _say(out, f"what -fdata-sections costs against the stock build, if wanted (a run of its own): {command}")
    return {"experiment": str(path), "command": command}


def fix_ab_to_extend(json_file: Path) -> Path | None:
    """The results of the --fix A/B a layout check's JSON names, when its automatic rounds stopped on their budget
    with cells undecided (what --extend reopens); None otherwise, or when the JSON has no A/B."""
    with contextlib.suppress(OSError, ValueError, KeyError, TypeError, RecursionError):
        results = Path(json.loads(json_file.read_text(encoding="utf-8"))["fix"]["ab_results"])
        return results if stopped_on_budget(results) else None
    return None


def extend_fix_ab(json_file: Path, extend_s: float, out: Console, err: Console, yes: bool = False) -> int:
    """--extend of a layout --fix A/B (a study's layout step): its undecided cells get `extend_s` more budget
    (dbperf run --extend; the run stays out of the history as the A/B did), the report is drawn again on `out` and
    the JSON's cell count updated; the rebuild and the check are kept. The run's exit code (dbperf run's: 128 + N
    when interrupted)."""
    data = json.loads(json_file.read_text(encoding="utf-8"))
    results = Path(data["fix"]["ab_results"])
    _say(err, f"dbperf: extending the A/B in {results} by {extend_s:g} s (--extend)")
    end = run_experiment(results / EXPERIMENT, results, keep_data=False, yes=yes, err=err, record=False,
                         extend_s=extend_s)
    if (results / META).is_file():
        _say(out, f"the A/B extended by {extend_s:g} s (--extend):")
        draw_report(report_view(results), out, err)
        _, records, _ = read_results(results)
        data["fix"]["ab_cells"] = len(records)
        write_json(json_file, data)
    return end.exit_code
