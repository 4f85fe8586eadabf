"""Probe results of many hosts side by side (`dbperf probe --fleet`): one column per host, as [Callaghan 2024-10-23]
lays out its PRNG and spin-delay figures across machines (median ns per operation, min–max in the JSON)."""

from __future__ import annotations

from typing import Any

from dbperf.report.model import Section, View
from dbperf.report.probe_view import figure_key, figures_of, probe_csv_rows, table


def probe_hosts_view(results: dict[str, dict[str, Any]]) -> View:
    ok = {h: r for h, r in results.items() if "error" not in r}
    lines = []
    for host, r in results.items():
        if "error" in r:
            lines.append(f"{host}: probe failed: {r['error']}")
            continue
        h = r["host"]
        tsc = r.get("tsc_ghz")
        lines.append(f"{host}: {h['model']}, {h['cores']} cores, {'virtualised' if h['virtualised'] else 'bare metal'}"
                     f", {h['compiler']}" + (f", TSC {tsc['median']:.3f} GHz" if tsc else ""))
    hosts = list(ok)
    sections = [Section(text=tuple(lines))]
    if hosts:
        repeats = {r["repeats"] for r in ok.values()}
        sections[0] = Section(text=tuple(lines), notes=(
            f"median ns per operation of {'/'.join(map(str, sorted(repeats)))} repeats on each host, wall clock "
            "(CLOCK_MONOTONIC), pinned threads; min–max in --json",))
    for family in dict.fromkeys(f for r in ok.values() for f in r["families"]):
        by_host = {h: {figure_key(f): f for f in figures_of(ok[h], family)} for h in hosts}
        rows = []
        for key in dict.fromkeys(k for figures in by_host.values() for k in figures):
            label = f"{key[0]}: {key[1]}" + (f" X={key[2]}" if key[2] is not None else "") + (
                f" @{key[3]} B" if key[3] is not None else "")
            rows.append((label, *["-" if (f := by_host[h].get(key)) is None else f"{f['ns_per_op']['median']:,.2f}"
                                  for h in hosts]))
        skipped = tuple(f"{h}: skipped ({ok[h]['families'][family]['skipped']})" for h in hosts
                        if "skipped" in ok[h]["families"].get(family, {}))
        sections.append(table(family, ["figure", *hosts], rows))
        if skipped:
            sections.append(Section(text=skipped))
    return View("probes", "", tuple(sections), rows=probe_csv_rows(ok), document=results)
