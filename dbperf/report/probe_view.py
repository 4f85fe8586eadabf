"""Probe results as Views, laid out as the published tables where there is one (docs/sources.md), and two hosts
side by side. JSON is the probe result as stored (probes.json); CSV one line per figure."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from dbperf.report.model import Block, Row, Section, View

# [Nielsen 2013-11-28]: 1e8 iterations of the thread-state update (wall s, cycles/iter), for comparison.
PUBLISHED_BARRIERS = {
    "two locked cmpxchg (original)": (3.70, 81),
    "write barriers only (seqlock)": (0.53, 12),
    "no barrier (not SMP safe)": (0.45, 10),
    "pthread mutex": (2.26, 50),
}
NO_BARRIER = "no barrier (not SMP safe)"


def _range(f: dict[str, Any], key: str, factor: float = 1.0, digits: int = 2) -> str:
    s = f[key]
    return f"{s['median'] * factor:,.{digits}f} [{s['min'] * factor:,.{digits}f}–{s['max'] * factor:,.{digits}f}]"


def figures_of(result: dict[str, Any], family: str, group: str | None = None) -> list[dict[str, Any]]:
    fam = result["families"].get(family) or {}
    return [f for f in fam.get("figures", []) if group is None or f["group"] == group]


def table(title: str, columns: list[str], rows: Sequence[Sequence[str]], text: tuple[str, ...] = ()) -> Section:
    return Section(title=title, text=text, block=Block("", "", tuple(columns), tuple(Row(tuple(r)) for r in rows)))


def host_lines(result: dict[str, Any]) -> tuple[str, ...]:
    h = result["host"]
    tsc = result.get("tsc_ghz")
    tsc_text = (f"TSC {tsc['median']:.3f} GHz [{tsc['min']:.3f}–{tsc['max']:.3f}] against CLOCK_MONOTONIC"
                if tsc else "no TSC")
    invariant = "" if h["tsc"]["invariant"] else " (TSC NOT invariant: tick figures may drift)"
    caches = ", ".join(f"L{c['level']} {c['type'].lower()} {c['size']}" for c in h.get("caches", []))
    return (f"{h['model']}, {h['cores']} cores, microcode {h.get('microcode')}, "
            f"{'virtualised' if h['virtualised'] else 'bare metal'}, kernel {h['kernel']}",
            f"caches: {caches or 'unknown'}; {tsc_text}{invariant}; {h['compiler']} -O2")


def _host_section(result: dict[str, Any], title: str = "") -> Section:
    return Section(title=title, text=host_lines(result),
                   notes=(f"every figure: median of {result['repeats']} repeats [min–max], wall clock "
                          "(CLOCK_MONOTONIC) and TSC ticks, pinned threads",))


def probe_csv_rows(results: dict[str, dict[str, Any]]) -> tuple[dict[str, Any], ...]:
    rows = []
    for host, r in results.items():
        for family, fam in r.get("families", {}).items():
            for f in fam.get("figures", []):
                rows.append({**({"host": host} if host else {}), "family": family, "group": f["group"],
                             "name": f["name"], "x": f.get("x"), "offset": f.get("offset"),
                             "flag_offset": f.get("flag_offset"),
                             **{f"{key}_{stat}": (f.get(key) or {}).get(stat) for key in ("ns_per_op", "ticks_per_op")
                                for stat in ("median", "min", "max")}})
    return tuple(rows)


def probe_view(result: dict[str, Any]) -> View:
    sections = [_host_section(result)]
    for name, fam in result["families"].items():
        if "skipped" in fam:
            sections.append(Section(title=name, subtitle=f"skipped ({fam['skipped']})"))
            continue
        sections += {"barriers": _barriers, "spin": _spin, "sharing": _sharing}.get(name, _generic)(result, name)
    return View("probes", "", tuple(sections), rows=probe_csv_rows({"": result}), document=result)


def _barriers(result: dict[str, Any], name: str) -> list[Section]:
    updates = figures_of(result, name, "state-update")
    base = next((f for f in updates if f["name"] == NO_BARRIER), None)
    rows = []
    for f in updates:
        overhead = f["ticks_per_op"]["median"] - base["ticks_per_op"]["median"] if base else None
        published = PUBLISHED_BARRIERS.get(f["name"], ("-", "-"))
        rows.append((f["name"], _range(f, "ns_per_op", 1e8 / 1e9), _range(f, "ticks_per_op", digits=1),
                     "–" if f["name"] == NO_BARRIER or overhead is None else f"{overhead:,.1f}",
                     str(published[0]), str(published[1])))
    ops = figures_of(result, name, "single-op")
    empty = next((f for f in ops if f["name"] == "empty loop"), None)
    single = []
    for f in ops:
        over = f["ticks_per_op"]["median"] - empty["ticks_per_op"]["median"] if empty else None
        single.append((f["name"], _range(f, "ns_per_op"), _range(f, "ticks_per_op", digits=1),
                       "–" if f is empty or over is None else f"{over:,.1f}"))
    return [table("thread-state update: 1e8 iterations, beside [Nielsen 2013-11-28]'s",
                  ["variant", "wall s / 1e8", "TSC ticks/iter", "overhead ticks", "published: wall s",
                   "published: cycles/iter"],
                  rows),
            table("single operations (loop overhead included; 'empty loop' is that overhead)",
                  ["operation", "ns/op", "TSC ticks/op", "ticks over empty loop"], single)]


def _spin(result: dict[str, Any], name: str) -> list[Section]:
    pause = tuple(f"PAUSE: {_range(f, 'ticks_per_op', digits=1)} TSC ticks, {_range(f, 'ns_per_op')} ns "
                  "(about 10–15 cycles before Skylake, 120–150 after: [Intel optimization manual])"
                  for f in figures_of(result, name, "pause"))
    delays = figures_of(result, name, "ut_delay")
    by_x: dict[int, dict[str, dict[str, Any]]] = {}
    for f in delays:
        by_x.setdefault(f["x"], {})[f["name"]] = f
    names = sorted({f["name"] for f in delays})
    columns = ["X", *[f"{n} (×{next(f['multiplier'] for f in delays if f['name'] == n)} PAUSE)" for n in names]]
    rows = [(str(x), *[_range(by_x[x][n], "ns_per_op", 1e-3) for n in names]) for x in sorted(by_x)]
    backoff = []
    for f in figures_of(result, name, "backoff"):
        old, new = f["mean_0_to_n_minus_1"], f["mean_0_to_n"]
        unit = by_x.get(1, {}).get("InnoDB")
        per_unit = unit["ns_per_op"]["median"] / 1000 if unit else None
        extra = (f"; with InnoDB's loop here that is {old * per_unit:.2f} µs against {new * per_unit:.2f} µs per "
                 "backoff" if per_unit else "")
        n = int(f["n"])
        backoff.append(f"backoff delay drawn as random(0..{n - 1}): mean {old:.3f}; as random(0..{n}): mean "
                       f"{new:.3f}: {new / old - 1:+.1%} longer{extra}")
    return [table("ut_delay(X) in µs (about 1 µs per unit on most CPUs: [Callaghan 2024-10-23])", columns, rows,
                  text=pause),
            Section(text=tuple(backoff))]


def _generic(result: dict[str, Any], name: str) -> list[Section]:
    return [table(name, ["figure", "ns/op", "TSC ticks/op"],
                  [(f"{f['group']}: {f['name']}", _range(f, "ns_per_op"), _range(f, "ticks_per_op", digits=1))
                   for f in figures_of(result, name)])]


def _sharing(result: dict[str, Any], name: str) -> list[Section]:
    counters = figures_of(result, name, "counters")
    far = next((f for f in counters if f.get("offset") == 128), None)
    rows = []
    for f in counters:
        ratio = f["ns_per_op"]["median"] / far["ns_per_op"]["median"] if far else None
        rows.append((f["name"], _range(f, "ns_per_op"), "–" if ratio is None else f"{ratio:.2f}×"))
    flags = figures_of(result, name, "flag")
    own = next((f for f in flags if f.get("flag_offset") == 128), None)
    flag_rows = []
    for f in flags:
        ratio = f["ns_per_op"]["median"] / own["ns_per_op"]["median"] if own else None
        flag_rows.append((f["name"], _range(f, "ns_per_op"), "–" if ratio is None else f"{ratio:.2f}×"))
    return [table("two threads incrementing their own counters", ["layout", "ns/increment", "slowdown vs 128 B apart"],
                  rows),
            table("reading a read-mostly flag while another thread writes a counter ([MySQL bug #97777])",
                  ["layout", "ns/read", "slowdown"], flag_rows)]


def figure_key(f: dict[str, Any]) -> tuple:
    return (f["group"], f["name"], f.get("x"), f.get("offset"), f.get("flag_offset"))


def probe_compare_view(a: dict[str, Any], b: dict[str, Any], label_a: str, label_b: str) -> View:
    sections = [_host_section(r, f"{label}:") for label, r in ((label_a, a), (label_b, b))]
    for family in dict.fromkeys([*a["families"], *b["families"]]):
        fa = {figure_key(f): f for f in figures_of(a, family)}
        fb = {figure_key(f): f for f in figures_of(b, family)}
        rows = []
        for key in dict.fromkeys([*fa, *fb]):
            va = fa[key]["ns_per_op"]["median"] if key in fa else None
            vb = fb[key]["ns_per_op"]["median"] if key in fb else None
            label = f"{key[0]}: {key[1]}" + (f" X={key[2]}" if key[2] is not None else "")
            rows.append((label, "-" if va is None else f"{va:,.2f}", "-" if vb is None else f"{vb:,.2f}",
                         f"{vb / va:.2f}" if va and vb else "-"))
        sections.append(table(f"{family}: median ns/op", ["figure", label_a, label_b, "B / A"], rows))
    return View("probes-compare", "", tuple(sections), rows=probe_csv_rows({label_a: a, label_b: b}),
                document={"a": {"label": label_a, **a}, "b": {"label": label_b, **b}})
