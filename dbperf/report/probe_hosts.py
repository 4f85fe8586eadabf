"""Probe results of many hosts side by side (`dbperf probe --fleet`): one column per host, as seed 001 lays out its
PRNG and spin-delay figures across machines (median ns per operation, min–max in the JSON)."""

from __future__ import annotations

from typing import Any

from rich.console import Console

from dbperf.report.escape import term
from dbperf.report.probe_view import _figures, _key, _table


def render_hosts(results: dict[str, dict[str, Any]], console: Console) -> None:
    ok = {h: r for h, r in results.items() if "error" not in r}
    for host, r in results.items():
        if "error" in r:
            console.print(f"[bold]{term(host)}[/bold]: [red]probe failed[/red]: {term(r['error'])}", highlight=False)
            continue
        h = r["host"]
        tsc = r.get("tsc_ghz")
        console.print(f"[bold]{term(host)}[/bold]: {term(h['model'])}, {h['cores']} cores, "
                      f"{'virtualised' if h['virtualised'] else 'bare metal'}, {term(h['compiler'])}"
                      + (f", TSC {tsc['median']:.3f} GHz" if tsc else ""), highlight=False)
    hosts = list(ok)
    if not hosts:
        return
    repeats = {r["repeats"] for r in ok.values()}
    console.print(f"[dim]median ns per operation of {'/'.join(map(str, sorted(repeats)))} repeats on each host, "
                  "wall clock (CLOCK_MONOTONIC), pinned threads; min–max in --json[/dim]")
    for family in dict.fromkeys(f for r in ok.values() for f in r["families"]):
        t = _table(f"\n{family}", ["figure", *[term(h) for h in hosts]])
        by_host = {h: {_key(f): f for f in _figures(ok[h], family)} for h in hosts}
        for key in dict.fromkeys(k for figures in by_host.values() for k in figures):
            label = f"{key[0]}: {key[1]}" + (f" X={key[2]}" if key[2] is not None else "") + (
                f" @{key[3]} B" if key[3] is not None else "")
            cells = []
            for h in hosts:
                f = by_host[h].get(key)
                cells.append("-" if f is None else f"{f['ns_per_op']['median']:,.2f}")
            t.add_row(term(label), *cells)
        skipped = [h for h in hosts if "skipped" in ok[h]["families"].get(family, {})]
        console.print(t)
        for h in skipped:
            console.print(f"  {term(h)}: skipped ({term(ok[h]['families'][family]['skipped'])})", highlight=False)
