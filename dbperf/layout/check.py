"""`dbperf layout`: the static map, the dynamic counts under a workload, the findings, and the report (terminal or
JSON)."""

from __future__ import annotations

import json
import shlex
import shutil
import subprocess
from collections import Counter
from dataclasses import asdict
from pathlib import Path
from typing import Any

from rich.console import Console

from dbperf.errors import UserError
from dbperf.layout.dynamic import (
    DynamicCounts,
    TraceBudget,
    TraceInterrupted,
    count_simulated_many,
    memory_sampling_available,
)
from dbperf.layout.findings import MIN_HOT_STORES, Finding, findings, hot_stores
from dbperf.layout.sampled import count_sampled_many
from dbperf.layout.static_map import StaticMap, static_map
from dbperf.output_file import write_file
from dbperf.report import formats
from dbperf.report.model import Block, Row, Section, View

SHOW_CANDIDATES = 15


def demangled(names: list[str]) -> dict[str, str]:
    """C++ names as people read them (binutils' c++filt, one process for all); unchanged where it is missing."""
    mangled = [n for n in dict.fromkeys(names) if n.startswith("_Z")]
    if not mangled or shutil.which("c++filt") is None:
        return {}
    proc = subprocess.run(["c++filt"], input="\n".join(mangled) + "\n", capture_output=True, text=True, timeout=120)
    out = proc.stdout.splitlines()
    if proc.returncode != 0 or len(out) != len(mangled):
        return {}
    return {m: d for m, d in zip(mangled, out, strict=True) if m != d}


def parse_run(args: str) -> list[str]:
    try:
        return shlex.split(args)
    except ValueError as e:
        raise UserError(f"--run: cannot split {args!r}: {e}") from None


def dynamic_counts(static: StaticMap, command: list[str], mode: str, env: dict[str, str] | None = None,
                   cwd: Path | None = None, budget: TraceBudget | None = None,
                   err: Console | None = None) -> DynamicCounts:
    return dynamic_counts_many([static], command, mode, env, cwd, budget, err)[0]


def dynamic_counts_many(statics: list[StaticMap], command: list[str], mode: str, env: dict[str, str] | None = None,
                        cwd: Path | None = None, budget: TraceBudget | None = None,
                        err: Console | None = None) -> list[DynamicCounts]:
    """Simulated counts, or refuses the hardware path with perf's reason (not implemented without a PMU to test on
    is not the same as silently simulating)."""
    ok, reason = (False, "not probed") if mode == "simulated" else memory_sampling_available()
    if mode == "hardware" and not ok:
        raise UserError(f"hardware memory sampling asked for, but {reason}")
    if ok:
        sampled = count_sampled_many(statics, command, env=env, cwd=cwd, budget=budget)
        for counts in sampled:
            counts.mode_reason = reason
        return sampled
    simulated_reason = "asked for simulated counts" if mode == "simulated" else (
        f"no precise memory sampling here ({reason})")
    try:
        all_counts = count_simulated_many(statics, command, env=env, budget=budget, cwd=cwd, err=err)
    except TraceInterrupted as interrupted:
        for counts in interrupted.counts:
            counts.mode_reason = simulated_reason
        raise
    for counts in all_counts:
        counts.mode_reason = simulated_reason
    return all_counts


def result_json(static: StaticMap, counts: DynamicCounts | None, found: list[Finding],
                extra: dict[str, Any] | None = None) -> dict[str, Any]:
    kinds = Counter(o.kind for o in static.objects)
    readable = demangled([o.name for o in static.objects])
    return {
        "binary": static.path, "machine": static.machine, "line_size": static.line,
        "symbol_table": static.symbol_table, "dwarf": static.dwarf, "stores": static.stores,
        "objects_by_kind": dict(kinds), "static_seconds": static.seconds,
        "static_candidate_lines": [
            {"line": hex(a), "objects": [{"name": o.name, "written_in_code": o.written_in_code} for o in objs]}
            for a, objs in static.candidate_lines()],
        "dynamic": None if counts is None else {
            "mode": counts.mode, "mode_reason": counts.mode_reason, "tool": counts.tool, "command": counts.command,
            "seconds": counts.seconds, "trace": None if counts.trace is None else counts.trace.as_json(),
            "memory_records": counts.records, "records_in_binary": counts.counted, "threads": counts.threads,
            "unattributed_accesses": counts.unattributed, "unattributed_by_section": [
                {"section": name, "accesses": n} for name, n in counts.unattributed_by_section.items()],
            "hot_written_means": f">= {hot_stores(counts)} stores",
            "per_object": {name: {str(t): {"loads": a.loads, "stores": a.stores} for t, a in sorted(per.items())}
                           for name, per in sorted(counts.per_object.items())}},
        "findings": [asdict(f) for f in found],
        "objects": [{"name": o.name, "address": hex(o.address), "size": o.size, "section": o.section,
                     "kind": o.kind, "binding": o.binding, "source": o.source,
                     "written_in_code": o.written_in_code,
                     **({"demangled": readable[o.name]} if o.name in readable else {})}
                    for o in sorted(static.objects, key=lambda o: o.address)],
        **(extra or {}),
    }


def unattributed_line(counts: DynamicCounts, shown: int = 5) -> str:
    """Where the accesses no symbol names fall, by section: GOT and PLT slots, string literals in .rodata and
    page padding have no symbol, and a large share elsewhere means a symbol table that misses objects."""
    parts = [f"{name} {n / counts.unattributed:.0%}" for name, n in
             list(counts.unattributed_by_section.items())[:shown]]
    more = len(counts.unattributed_by_section) - shown
    share = f" ({counts.unattributed / counts.counted:.1%})" if counts.counted else ""
    return (f"{counts.unattributed:,} of them in no symbol{share}, by section: {', '.join(parts)}"
            f"{f', {more} more' if more > 0 else ''}")


def _map_section(static: StaticMap) -> Section:
    kinds = Counter(o.kind for o in static.objects)
    return Section(lines=(
        f"{static.path}: {static.machine}, {static.line}-byte lines, {len(static.objects)} objects from "
        f"{static.symbol_table} ({', '.join(f'{n} {k}' for k, n in sorted(kinds.items()))}); TLS and read-only "
        "objects set apart", f"  {static.dwarf}", f"  {static.stores}",
        f"  static map in {static.seconds.get('total', 0.0):.2f} s "
        f"({', '.join(f'{k} {v:.2f} s' for k, v in static.seconds.items() if k != 'total')})"))


def _suspect_sections(static: StaticMap) -> list[Section]:
    """No workload ran: the lines that mix objects written in code with objects nothing stores to."""
    candidates = static.candidate_lines()
    sections = [Section(lines=(
        f"{len(candidates)} lines mix objects written in code with objects no instruction stores to (static "
        "suspects). No workload was run, so nothing is known to be hot: give --run \"ARGS\" or --experiment to "
        "count accesses and get findings.",))]
    shown = candidates[:SHOW_CANDIDATES]
    readable = demangled([o.name for _, objs in shown for o in objs])
    if candidates:
        sections.append(Section(title="static suspects (first lines by address)", block=Block(
            "", "", ("line", "objects (* written in code)"), tuple(
                Row((hex(a), ", ".join(readable.get(o.name, o.name) + ("*" if o.written_in_code else "")
                                       for o in objs))) for a, objs in shown), text_columns=2)))
    return sections


def _findings_sections(static: StaticMap, found: list[Finding]) -> list[Section]:
    """The findings, costliest first, and the remedy of each."""
    readable = demangled([n for f in found for n in f.objects])
    rows = []
    for i, f in enumerate(found, 1):
        reads = "; ".join(f"{readable.get(r['name'], r['name'])}{' ' + r['source'] if r['source'] else ''} "
                          f"{sum(r['loads_by_thread'].values()):,}" for r in f.read_mostly)
        writes = "; ".join(f"{readable.get(w['name'], w['name'])}{' ' + w['source'] if w['source'] else ''} "
                           f"{sum(w['stores_by_thread'].values()):,}" for w in f.hot_written)
        rows.append(Row((str(i), f.line, reads, writes, f"{f.cost:.3g}")))
    return [Section(title=f"findings, costliest first ({static.line}-byte lines)", block=Block(
                "", "", ("#", "line", "read-mostly (loads)", "hot-written (stores)", "cost"), tuple(rows),
                text_columns=4)),
            Section(lines=(
                "cost = loads of the read-mostly objects × stores to the line by other threads (simulated counts)",
                *[f"remedy {i}: {f.remedy}" for i, f in enumerate(found, 1)]))]


def check_view(static: StaticMap, counts: DynamicCounts | None, found: list[Finding]) -> View:
    """The map, the counts and the findings (or the static suspects when no workload ran) as a View."""
    sections = [_map_section(static)]
    if counts is None:
        return View("layout", "", tuple(sections + _suspect_sections(static)))
    sections.append(Section(lines=(
        f"dynamic counts, {counts.mode} ({counts.mode_reason}): {counts.tool}; {counts.threads} threads, "
        f"{counts.counted:,} of {counts.records:,} loads/stores in the binary, {counts.seconds:.1f} s",
        *([f"  {counts.trace.summary()}"] if counts.trace is not None else []),
        *([f"  {unattributed_line(counts)}"] if counts.unattributed else []))))
    if not found:
        sections.append(Section(lines=("no finding: no hot-written object shares a line with objects other threads "
                                       "load",)))
        return View("layout", "", tuple(sections))
    return View("layout", "", tuple(sections + _findings_sections(static, found)))


def render(static: StaticMap, counts: DynamicCounts | None, found: list[Finding], console: Console) -> None:
    formats.draw(check_view(static, counts, found), console)


def write_json(path: Path, data: dict[str, Any]) -> None:
    """The --json file, written whole by output_file's rules (a regular file only, never replacing a symlink or a
    device); `path` was checked before the analysis (cli/layout.py), so what is replaced here is the lab's own."""
    write_file(path, json.dumps(data, indent=2) + "\n", True, path.name, "--json")


Checked = tuple[StaticMap, DynamicCounts | None, list[Finding]]


def check(binary: Path, run: str | None, line: int | None, mode: str = "auto",
          min_hot_stores: int = MIN_HOT_STORES, budget: TraceBudget | None = None,
          err: Console | None = None) -> Checked:
    return check_many(binary, [], run, line, mode, min_hot_stores, budget, err)[0]


def _not_a_binary(path: Path) -> str:
    """Why `path` cannot be mapped, as the file system sees it (a directory or a device is not "missing")."""
    if path.is_dir():
        return "is a directory, not an ELF binary or library"
    if path.exists():
        return "is not a regular file (a device, FIFO or socket), not an ELF binary or library"
    return "no such file"


def check_many(binary: Path, libraries: list[Path], run: str | None, line: int | None, mode: str = "auto",
               min_hot_stores: int = MIN_HOT_STORES, budget: TraceBudget | None = None,
               err: Console | None = None) -> list[Checked]:
    """BINARY and the shared libraries named with it: each one's static map, and under `run` (BINARY started with
    these arguments) each one's counts and findings, from one traced run."""
    for path in (binary, *libraries):
        if not path.is_file():
            raise UserError(f"{path}: {_not_a_binary(path)}")
    statics = [static_map(p, line) for p in (binary, *libraries)]
    if run is None:
        return [(s, None, []) for s in statics]
    command = [str(binary.absolute()), *parse_run(run)]
    try:
        all_counts = dynamic_counts_many(statics, command, mode, budget=budget, err=err)
    except TraceInterrupted as interrupted:
        interrupted.checked = [(s, c, findings(s, c, min_hot_stores))
                               for s, c in zip(statics, interrupted.counts, strict=True)]
        raise
    return [(s, c, findings(s, c, min_hot_stores)) for s, c in zip(statics, all_counts, strict=True)]
