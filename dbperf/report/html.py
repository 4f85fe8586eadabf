"""`dbperf report DIR --format html`: the run's report as one self-contained page. The tables are the layout's
(matrix_layout.py: the rQPS matrix, each target's absolute figures, counters, notes), rendered as HTML; the charts
(charts.py) draw the same Matrix: the rQPS heat map coloured by verdict, every repeat with its center and CI, CPU per
query stacked, latency percentiles, per-interval throughput where the driver reported it, counters with their mode;
then the run's metadata."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from dbperf.records import to_builtins
from dbperf.report import charts
from dbperf.report.formats.html import block_html
from dbperf.report.html_page import Page, key_values, legend_swatches, table, text
from dbperf.report.matrix_layout import build_report
from dbperf.run_meta import RunMeta
from dbperf.stats.cell_verdict import VERDICT_COLOURS
from dbperf.stats.rqps_matrix import Matrix

VERDICT_MEANINGS = {
    "base": "the base target",
    "faster": "faster than the base by more than both the noise threshold (randomization test, ClickHouse's rule; "
              "hover says whether the paired or unpaired view decided) and the minimum effect",
    "slower": "slower than the base, decided likewise",
    "same": "no change of the minimum effect or more, and one would have been seen",
    "unstable": "the noise threshold exceeds the minimum effect by a wide margin: too noisy to decide",
    "undecided": "too few repeats (8 a side, or 8 rounds), or a change the noise could still hide",
    "failed": "no successful repeat",
}
RUN_FIELDS = ("status", "started_at", "finished_at", "experiment", "base", "aggregate", "tables", "table_size",
              "threads", "time_s", "warmup_s", "repeats", "seed", "prepared", "data_restore", "runtime_dir")
TARGET_FIELDS = ("engine", "engine_version", "source", "library", "library_sha256", "dsn", "binaries",
                 "settings", "trained_on", "process_variant", "restarts")


def _build_text(build: dict[str, Any] | None) -> str:
    if not build:
        return "-"
    if build.get("release"):
        r = build["release"]
        return f"released binaries {r.get('engine')}@{r.get('version')}"
    parts = [str(build.get("label") or " ".join(build.get("flags") or []))]
    compiler = (build.get("compiler") or {}).get("version")
    if compiler:
        parts.append(f"({compiler})")
    if build.get("pgo"):
        parts.append(f"PGO trained on {', '.join((build['pgo'] or {}).get('training_set', []))}")
    return " ".join(parts)


def metadata_html(meta: RunMeta) -> str:
    host = to_builtins(meta.host) if meta.host else {}
    out = ["<h3>Host</h3>", key_values(sorted(host.items()))]
    if meta.driver:
        out += ["<h3>Driver</h3>", key_values([("dbperf-driver", meta.driver)])]
    run = [(k, v) for k in RUN_FIELDS if (v := getattr(meta, k)) is not None]  # those this run recorded
    out += ["<h3>Run</h3>", key_values(run)]
    out += ["<h3>Targets</h3>", _targets_table(meta), "<h3>Benchmarks</h3>", _benchmarks_table(meta)]
    return "\n".join(out)


def _targets_table(meta: RunMeta) -> str:
    rows = [(t.name, t.engine or "-", t.engine_version or "-", t.library or t.binaries or t.dsn or "-",
             _build_text(t.build), " ".join(f"{k}={v}" for k, v in (t.settings or [])) or "-",
             " ".join(f"{k}={v}" for k, v in (t.process_variant or {}).items() if v) or "-")
            for t in meta.targets]
    return table(("target", "engine", "version", "library / binaries / DSN", "build", "settings", "process variant"),
                 rows, text_columns=7)


def _benchmarks_table(meta: RunMeta) -> str:
    rows = [(b.name, b.group, "-" if b.phase is None else b.phase,
             "-" if b.queries_per_event is None else b.queries_per_event, " ; ".join(b.sql)) for b in meta.benchmarks]
    return table(("benchmark", "group", "phase", "queries/event", "SQL"), rows, text_columns=5)


def to_html(m: Matrix, meta: RunMeta) -> str:
    page = Page(f"dbperf: {build_report(m, meta).heading}")
    add_run(page, m, meta, page.section)
    return page.render()


def to_html_hosts(hosts: list[tuple[str, Matrix, RunMeta]], meta: RunMeta) -> str:
    """A fleet run: one page, a part per host (its heading, then the sections a single run's page has, as
    subsections), in the fleet's order."""
    page = Page(f"dbperf: {meta.experiment or 'fleet run'} on {len(hosts)} hosts")
    for i, (heading, m, view) in enumerate(hosts, 1):
        page.section(f"host-{i}", heading)
        add_run(page, m, view, functools.partial(host_subsection, page, f"host-{i}-"))
    return page.render()


def host_subsection(page: Page, prefix: str, anchor: str, title: str) -> None:
    page.subsection(prefix + anchor, title)


def add_run(page: Page, m: Matrix, meta: RunMeta, section: Callable[[str, str], None]) -> None:
    """One run's sections (`section` starts each one: a page section, or a host's subsection)."""
    report = build_report(m, meta)
    rqps, *rest = report.blocks
    if report.warning:
        page.add(f'<p class="warning">{text(report.warning)}</p>')
    section("rqps", "rQPS matrix")
    page.add(page.figure(charts.rqps_heatmap(m)))
    page.add(legend_swatches(VERDICT_COLOURS, VERDICT_MEANINGS))
    page.add("<pre>" + text("\n".join(report.legend)) + "</pre>")
    page.add(block_html(rqps))
    for line in report.findings:
        page.add(f"<p>{text(line)}</p>")
    for note in report.matrix_notes:
        page.add(f'<p class="note">{text(note)}</p>')

    section("repeats", "Repeats per benchmark")
    page.add('<p class="note">Every repeat of every target is a point; the bar marks the center with its 95% CI on '
             "the median (order statistics, n ≥ 6), or min–max where n is too small for a CI (hover says which).</p>")
    page.add('<div class="grid">' + "".join(page.figure(charts.repeats_figure(m, b, t)) for _, b, t in m.rows())
             + "</div>")

    section("cpu", "CPU per query")
    page.add(page.figure(charts.cpu_figure(m)))
    section("latency", "Latency")
    page.add(page.figure(charts.latency_figure(m)))

    series = [f for _, b, t in m.rows() if (f := charts.intervals_figure(m, b, t)) is not None]
    if series:
        section("throughput", "Throughput per interval")
        page.add('<div class="grid">' + "".join(page.figure(f) for f in series) + "</div>")

    counters = charts.counters_figure(m)
    if counters is not None:
        section("counters", "Counters")
        page.add(page.figure(counters))

    section("figures", "Figures per target")
    for block in rest:
        page.add(f"<h3>{text(block.title)}</h3>")
        if block.subtitle:
            page.add(f'<p class="note">{text(block.subtitle)}</p>')
        page.add(block_html(block))
    for note in report.notes:
        page.add(f'<p class="note">{text(note)}</p>')

    section("metadata", "Run metadata")
    page.add(metadata_html(meta))
