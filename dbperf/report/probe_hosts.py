"""Probe results of many hosts side by side (`dbperf probe --fleet`): one column per host, as [Callaghan 2024-10-23]
lays out its PRNG and spin-delay figures across machines (median ns per operation, min–max in the JSON)."""

from __future__ import annotations

from typing import Any

from dbperf.report.model import Section, View
from dbperf.report.probe_view import figure_key, figures_of, probe_csv_rows, table


def _host_line(host: str, r: dict[str, Any]) -> str:
    if "error" in r:
        return f"{host}: probe failed: {r['error']}"
    h = r["host"]
    tsc = r.get("tsc_ghz")
    return (f"{host}: {h['model']}, {h['cores']} cores, {'virtualised' if h['virtualised'] else 'bare metal'}"
            f", {h['compiler']}" + (f", TSC {tsc['median']:.3f} GHz" if tsc else ""))


def _label(key: tuple[Any, ...]) -> str:
    return f"{key[0]}: {key[1]}" + (f" X={key[2]}" if key[2] is not None else "") + (
        f" @{key[3]} B" if key[3] is not None else "")


def _family(ok: dict[str, dict[str, Any]], family: str) -> list[Section]:
    """A family's figures, a column per host, and the hosts that skipped it."""
    hosts = list(ok)
    by_host = {h: {figure_key(f): f for f in figures_of(ok[h], family)} for h in hosts}
    rows = [(_label(key), *["-" if (f := by_host[h].get(key)) is None else f"{f['ns_per_op']['median']:,.2f}"
                            for h in hosts])
            for key in dict.fromkeys(k for figures in by_host.values() for k in figures)]
    skipped = tuple(f"{h}: skipped ({ok[h]['families'][family]['skipped']})" for h in hosts
                    if "skipped" in ok[h]["families"].get(family, {}))
    return [table(family, ["figure", *hosts], rows), *([Section(text=skipped)] if skipped else [])]


def probe_hosts_view(results: dict[str, dict[str, Any]]) -> View:
    ok = {h: r for h, r in results.items() if "error" not in r}
    lines = tuple(_host_line(host, r) for host, r in results.items())
    repeats = "/".join(map(str, sorted({r["repeats"] for r in ok.values()})))
    notes = (f"median ns per operation of {repeats} repeats on each host, wall clock (CLOCK_MONOTONIC), pinned "
             "threads; min–max in --json",) if ok else ()
    sections = [Section(text=lines, notes=notes)]
    for family in dict.fromkeys(f for r in ok.values() for f in r["families"]):
        sections += _family(ok, family)
    return View("probes", "", tuple(sections), rows=probe_csv_rows(ok), document=results)
