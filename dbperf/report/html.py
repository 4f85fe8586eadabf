"""`dbperf report DIR --format html`: the run's report as one self-contained page. The tables are the layout's
(matrix_layout.py: the rQPS matrix, each target's absolute figures, counters, notes), rendered as HTML; the charts
(charts.py) draw the same Matrix: the rQPS heat map coloured by verdict, every repeat with its center and CI, CPU per
query stacked, latency percentiles, per-interval throughput where the driver reported it, counters with their mode;
then the run's metadata."""

from __future__ import annotations

from typing import Any

from dbperf.records import to_builtins
from dbperf.report import charts
from dbperf.report.formats.html import chart_page
from dbperf.report.html_page import plain
from dbperf.report.matrix_layout import build_report
from dbperf.report.model import Block, ChartPage, Row, Section, Swatch
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


def metadata_sections(meta: RunMeta) -> list[Section]:
    """Host, driver, run settings, targets and benchmarks, each a captioned table."""
    host = to_builtins(meta.host) if meta.host else {}
    out = [_key_values("Host", sorted(host.items()))]
    if meta.driver:
        out.append(_key_values("Driver", [("dbperf-driver", meta.driver)]))
    out.append(_key_values("Run", [(k, v) for k in RUN_FIELDS if (v := getattr(meta, k)) is not None]))
    return [*out, Section(title="Targets", rank="caption", block=_targets_block(meta)),
            Section(title="Benchmarks", rank="caption", block=_benchmarks_block(meta))]


def _key_values(title: str, items: list[tuple[str, object]]) -> Section:
    return Section(title=title, rank="caption", block=Block("", "", ("field", "value"),
                                                              tuple(Row((k, plain(v))) for k, v in items), 2))


def _targets_block(meta: RunMeta) -> Block:
    rows = tuple(Row((t.name, t.engine or "-", t.engine_version or "-", t.library or t.binaries or t.dsn or "-",
                      _build_text(t.build), " ".join(f"{k}={v}" for k, v in (t.settings or [])) or "-",
                      " ".join(f"{k}={v}" for k, v in (t.process_variant or {}).items() if v) or "-"))
                 for t in meta.targets)
    return Block("", "", ("target", "engine", "version", "library / binaries / DSN", "build", "settings",
                          "process variant"), rows, 7)


def _benchmarks_block(meta: RunMeta) -> Block:
    rows = tuple(Row((b.name, b.group, "-" if b.phase is None else b.phase,
                      "-" if b.queries_per_event is None else str(b.queries_per_event), " ; ".join(b.sql)))
                 for b in meta.benchmarks)
    return Block("", "", ("benchmark", "group", "phase", "queries/event", "SQL"), rows, 5)


def run_page(m: Matrix, meta: RunMeta) -> ChartPage:
    return ChartPage(f"dbperf: {build_report(m, meta).heading}", tuple(run_sections(m, meta)))


def hosts_page(hosts: list[tuple[str, Matrix, RunMeta]], meta: RunMeta) -> ChartPage:
    """A fleet run: one page, a part per host (its heading, then the sections a single run's page has, as
    subsections), in the fleet's order."""
    sections = [s for i, (heading, m, view) in enumerate(hosts, 1)
                for s in (Section(title=heading, anchor=f"host-{i}", rank="part"),
                          *run_sections(m, view, f"host-{i}-"))]
    return ChartPage(f"dbperf: {meta.experiment or 'fleet run'} on {len(hosts)} hosts", tuple(sections))


def to_html(m: Matrix, meta: RunMeta) -> str:
    return chart_page(run_page(m, meta))


def run_sections(m: Matrix, meta: RunMeta, prefix: str | None = None) -> list[Section]:
    """One run's sections: the page's own (`prefix` None), or a host's under its part, as captions whose anchors
    start with `prefix`."""
    report = build_report(m, meta)
    rqps, *rest = report.blocks

    def part(anchor: str, title: str, **more: Any) -> Section:
        if prefix is None:
            return Section(title=title, anchor=anchor, **more)
        return Section(title=title, anchor=prefix + anchor, rank="caption", **more)

    swatches = tuple(Swatch(k, c, VERDICT_MEANINGS.get(k, "")) for k, c in VERDICT_COLOURS.items())
    out = [Section(warning=report.warning)] if report.warning else []
    out += [part("rqps", "rQPS matrix", figures=(charts.rqps_heatmap(m),), swatches=swatches, lines=report.legend,
                 wrap=True, block=rqps, text=report.findings, notes=report.matrix_notes),
            part("repeats", "Repeats per benchmark", subtitle=REPEATS_NOTE, grid=True,
                 figures=tuple(charts.repeats_figure(m, b, t) for _, b, t in m.rows())),
            part("cpu", "CPU per query", figures=(charts.cpu_figure(m),)),
            part("latency", "Latency", figures=(charts.latency_figure(m),))]
    series = tuple(f for _, b, t in m.rows() if (f := charts.intervals_figure(m, b, t)) is not None)
    if series:
        out.append(part("throughput", "Throughput per interval", figures=series, grid=True))
    counters = charts.counters_figure(m)
    if counters is not None:
        out.append(part("counters", "Counters", figures=(counters,)))
    out.append(part("figures", "Figures per target"))
    out += [Section(title=b.title, subtitle=b.subtitle, rank="caption", block=b) for b in rest]
    if report.notes:
        out.append(Section(notes=report.notes))
    return [*out, part("metadata", "Run metadata"), *metadata_sections(meta)]


REPEATS_NOTE = ("Every repeat of every target is a point; the bar marks the center with its 95% CI on the median "
                "(order statistics, n ≥ 6), or min–max where n is too small for a CI (hover says which).")
