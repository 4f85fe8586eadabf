"""Terminal tables of probe results, laid out as the seeds' tables where there is one, and two hosts side by side."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table

from dbperf.report.escape import term

# BRIEF §3, seed 003: 1e8 iterations of the thread-state update, for comparison.
SEED_BARRIERS = {
    "two locked cmpxchg (original)": (3.70, 81),
    "write barriers only (seqlock)": (0.53, 12),
    "no barrier (not SMP safe)": (0.45, 10),
    "pthread mutex": (2.26, 50),
}
NO_BARRIER = "no barrier (not SMP safe)"


def _range(f: dict[str, Any], key: str, factor: float = 1.0, digits: int = 2) -> str:
    s = f[key]
    return f"{s['median'] * factor:,.{digits}f} [{s['min'] * factor:,.{digits}f}–{s['max'] * factor:,.{digits}f}]"


def _figures(result: dict[str, Any], family: str, group: str | None = None) -> list[dict[str, Any]]:
    fam = result["families"].get(family) or {}
    return [f for f in fam.get("figures", []) if group is None or f["group"] == group]


def _table(title: str, columns: list[str]) -> Table:
    t = Table(title=title, show_edge=False, pad_edge=False, title_justify="left")
    for i, c in enumerate(columns):
        t.add_column(c, justify="left" if i == 0 else "right")
    return t


def render_host(result: dict[str, Any], console: Console) -> None:
    h = result["host"]
    tsc = result.get("tsc_ghz")
    tsc_text = (f"TSC {tsc['median']:.3f} GHz [{tsc['min']:.3f}–{tsc['max']:.3f}] against CLOCK_MONOTONIC"
                if tsc else "no TSC")
    invariant = "" if h["tsc"]["invariant"] else " [yellow](TSC NOT invariant: tick figures may drift)[/yellow]"
    caches = ", ".join(f"L{c['level']} {c['type'].lower()} {c['size']}" for c in h.get("caches", []))
    console.print(f"[bold]{term(h['model'])}[/bold], {h['cores']} cores, microcode {term(h.get('microcode'))}, "
                  f"{'virtualised' if h['virtualised'] else 'bare metal'}, kernel {term(h['kernel'])}", highlight=False)
    console.print(f"caches: {term(caches or 'unknown')}; {tsc_text}{invariant}; {term(h['compiler'])} -O2",
                  highlight=False)
    console.print(f"[dim]every figure: median of {result['repeats']} repeats \\[min–max], wall clock "
                  "(CLOCK_MONOTONIC) and TSC ticks, pinned threads[/dim]")


def render_probes(result: dict[str, Any], console: Console) -> None:
    render_host(result, console)
    for name, fam in result["families"].items():
        if "skipped" in fam:
            console.print(f"\n[bold]{name}[/bold]: skipped ({fam['skipped']})", highlight=False)
            continue
        console.print()
        {"barriers": _barriers, "spin": _spin, "prng": _generic, "timers": _generic, "sharing": _sharing}.get(
            name, _generic)(result, name, console)


def _barriers(result: dict[str, Any], name: str, console: Console) -> None:
    updates = _figures(result, name, "state-update")
    base = next((f for f in updates if f["name"] == NO_BARRIER), None)
    t = _table("thread-state update (BRIEF §3): 1e8 iterations", [
        "variant", "wall s / 1e8", "TSC ticks/iter", "overhead ticks", "seed: wall s", "seed: cycles/iter"])
    for f in updates:
        overhead = f["ticks_per_op"]["median"] - base["ticks_per_op"]["median"] if base else None
        seed = SEED_BARRIERS.get(f["name"], ("-", "-"))
        t.add_row(f["name"], _range(f, "ns_per_op", 1e8 / 1e9), _range(f, "ticks_per_op", digits=1),
                  "–" if f["name"] == NO_BARRIER or overhead is None else f"{overhead:,.1f}",
                  str(seed[0]), str(seed[1]))
    console.print(t)
    ops = _figures(result, name, "single-op")
    empty = next((f for f in ops if f["name"] == "empty loop"), None)
    t = _table("single operations (loop overhead included; 'empty loop' is that overhead)",
               ["operation", "ns/op", "TSC ticks/op", "ticks over empty loop"])
    for f in ops:
        over = f["ticks_per_op"]["median"] - empty["ticks_per_op"]["median"] if empty else None
        t.add_row(f["name"], _range(f, "ns_per_op"), _range(f, "ticks_per_op", digits=1),
                  "–" if f is empty or over is None else f"{over:,.1f}")
    console.print(t)


def _spin(result: dict[str, Any], name: str, console: Console) -> None:
    pause = _figures(result, name, "pause")
    for f in pause:
        console.print(f"PAUSE: {_range(f, 'ticks_per_op', digits=1)} TSC ticks, {_range(f, 'ns_per_op')} ns "
                      "(BRIEF §4: about 10–15 cycles before Skylake, 120–150 after)", highlight=False)
    delays = _figures(result, name, "ut_delay")
    by_x: dict[int, dict[str, dict[str, Any]]] = {}
    for f in delays:
        by_x.setdefault(f["x"], {})[f["name"]] = f
    names = sorted({f["name"] for f in delays})
    t = _table("ut_delay(X) in µs (BRIEF §4: about 1 µs per unit on most CPUs)",
               ["X", *[f"{n} (×{next(f['multiplier'] for f in delays if f['name'] == n)} PAUSE)" for n in names]])
    for x in sorted(by_x):
        t.add_row(str(x), *[_range(by_x[x][n], "ns_per_op", 1e-3) for n in names])
    console.print(t)
    for f in _figures(result, name, "backoff"):
        old, new = f["mean_0_to_n_minus_1"], f["mean_0_to_n"]
        unit = by_x.get(1, {}).get("InnoDB")
        per_unit = unit["ns_per_op"]["median"] / 1000 if unit else None
        extra = (f"; with InnoDB's loop here that is {old * per_unit:.2f} µs against {new * per_unit:.2f} µs per "
                 "backoff" if per_unit else "")
        n = int(f["n"])
        console.print(f"backoff delay drawn as random(0..{n - 1}): mean {old:.3f}; as random(0..{n}): mean "
                      f"{new:.3f}: {new / old - 1:+.1%} longer{extra}", highlight=False)


def _generic(result: dict[str, Any], name: str, console: Console) -> None:
    t = _table(name, ["figure", "ns/op", "TSC ticks/op"])
    for f in _figures(result, name):
        t.add_row(f"{f['group']}: {f['name']}", _range(f, "ns_per_op"), _range(f, "ticks_per_op", digits=1))
    console.print(t)


def _sharing(result: dict[str, Any], name: str, console: Console) -> None:
    counters = _figures(result, name, "counters")
    far = next((f for f in counters if f.get("offset") == 128), None)
    t = _table("two threads incrementing their own counters", ["layout", "ns/increment", "slowdown vs 128 B apart"])
    for f in counters:
        ratio = f["ns_per_op"]["median"] / far["ns_per_op"]["median"] if far else None
        t.add_row(f["name"], _range(f, "ns_per_op"), "–" if ratio is None else f"{ratio:.2f}×")
    console.print(t)
    flags = _figures(result, name, "flag")
    own = next((f for f in flags if f.get("flag_offset") == 128), None)
    t = _table("reading a read-mostly flag while another thread writes a counter (seed 004)",
               ["layout", "ns/read", "slowdown"])
    for f in flags:
        ratio = f["ns_per_op"]["median"] / own["ns_per_op"]["median"] if own else None
        t.add_row(f["name"], _range(f, "ns_per_op"), "–" if ratio is None else f"{ratio:.2f}×")
    console.print(t)


def _key(f: dict[str, Any]) -> tuple:
    return (f["group"], f["name"], f.get("x"), f.get("offset"), f.get("flag_offset"))


def render_compare(a: dict[str, Any], b: dict[str, Any], label_a: str, label_b: str, console: Console) -> None:
    for label, r in ((label_a, a), (label_b, b)):
        console.print(f"[bold]{term(label)}[/bold]:", highlight=False)
        render_host(r, console)
    for family in dict.fromkeys([*a["families"], *b["families"]]):
        t = _table(f"\n{family}: median ns/op", ["figure", term(label_a), term(label_b), "B / A"])
        fa = {_key(f): f for f in _figures(a, family)}
        fb = {_key(f): f for f in _figures(b, family)}
        for key in dict.fromkeys([*fa, *fb]):
            va = fa[key]["ns_per_op"]["median"] if key in fa else None
            vb = fb[key]["ns_per_op"]["median"] if key in fb else None
            label = f"{key[0]}: {key[1]}" + (f" X={key[2]}" if key[2] is not None else "")
            t.add_row(label, "-" if va is None else f"{va:,.2f}", "-" if vb is None else f"{vb:,.2f}",
                      f"{vb / va:.2f}" if va and vb else "-")
        console.print(t)
