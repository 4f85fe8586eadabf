"""Studies (`dbperf study`): every study file loads and names what exists; bad study files are one line; figures are
read back from what steps wrote (never made up); the summary table escapes what was named; a study is put on
record and a later run compares against it; --smoke is a mode of its own (the quick overrides, then the smoke ones),
refused at load when it would build a server or run long, and never put on record. The e2e and server tests run every
study in smoke mode for real (under a minute each once the released binaries are cached), so that a study cannot
rot."""

from __future__ import annotations

import gzip
import json
import os
import shutil
from dataclasses import asdict, replace
from pathlib import Path

import msgspec
import pytest

from dbperf.errors import UserError
from dbperf.host.cpu_identity import cpu_caveat
from dbperf.metrics import CPU, WALL, Metric
from dbperf.studies import evidence, model
from dbperf.studies.figures import NotMeasured, Row, not_a_floor, rows, walk
from dbperf.studies.model import load_study, parse_study, study_names
from dbperf.studies.record import BY_HAND, compare_with_record, record_study
from dbperf.studies.steps import kind_names
from dbperf.studies.study_record import CATCHES
from dbperf.studies.summary import Host, RunFacts, host_differences, summary, table
from tests.conftest import NEEDS_SERVERS, run_cli

ISSUE_STUDIES = {"release-regression", "pgo-server", "tuning-ladder", "barriers-spin", "read-mostly-globals",
                 "replication"}
HOST = Host("AMD EPYC 7B13", 2, True, "simulated", "perf cannot count cycles", "6.1", (0.5, 0.4, 0.3),
            (0.6, 0.5, 0.4), cpu_id="family 25, model 1, stepping 1", microcode="0xa0011d1")


@pytest.mark.unit
def test_the_six_studies_of_the_issue_are_there():
    assert set(study_names()) >= ISSUE_STUDIES


@pytest.mark.unit
@pytest.mark.parametrize("name", sorted(ISSUE_STUDIES))
def test_every_study_file_loads_and_refers_to_real_benchmarks_keys_and_targets(name):
    # parse_study checks the steps' benchmarks against the catalog, probe families, and each experiment step (and its
    # --quick version) through the experiment parser, and each figure against the steps and their targets.
    study = load_study(name)
    assert study.figures and study.steps and study.duration and study.sources
    for step in study.steps:
        assert step.kind in kind_names()
    for f in study.figures:
        assert f.measure.step in {s.name for s in study.steps}


@pytest.mark.unit
def test_the_studies_that_build_from_source_say_so():
    assert {n for n in study_names() if load_study(n).long} == {"pgo-server", "tuning-ladder"}


TINY = 'table_size = 1000\ntime = "0.5s"\nwarmup = "0.2s"\nrepeats = 2\n'  # runs as is under --smoke


def _write(tmp_path: Path, body: str, name: str = "mine") -> Path:
    path = tmp_path / f"{name}.toml"
    path.write_text(body)
    return path


GOOD = """
name = "mine"
title = "t"
duration = "a minute"
description = "d"
[[step]]
name = "probes"
kind = "probe"
families = ["barriers"]
smoke = { scale = 0.01 }
[[figure]]
what = "w"
section = "§3"
published = "81 cycles"
measure = { from = "probe", step = "probes", family = "barriers", group = "state-update", name = "pthread mutex" }
"""


@pytest.mark.unit
@pytest.mark.parametrize(("change", "message"), [
    (("kind = \"probe\"", "kind = \"dance\""), "kind must be one of"),
    (("families = [\"barriers\"]", "families = [\"nope\"]"), "families must name probe families"),
    (("families = [\"barriers\"]", "families = [\"barriers\"]\nbogus = 1"), "unknown key 'bogus'"),
    # the two keys that cited the lab's private notes are retired: a study cites public sources only
    (("title = \"t\"\n", "title = \"t\"\nbrief = \"§3\"\n"), "unknown key 'brief'"),
    (("title = \"t\"\n", "title = \"t\"\nseeds = [\"002\"]\n"), "unknown key 'seeds'"),
    (("step = \"probes\", family", "step = \"other\", family"), "measure step 'other' is not a step"),
    (("family = \"barriers\"", "family = \"spin\""), "names a family its probe step runs"),
    (("name = \"mine\"", "name = \"yours\""), "must be the file's name"),
    (("[[figure]]", "[[figure]]\nexpect = 3"), "expect must be"),
    (("[[figure]]", "[[figure]]\nexpect = { min = \"2\" }"), "expect must be"),
    (("[[figure]]", "[[figure]]\ndigits = \"two\""), "digits must be"),
    (("title = \"t\"\n", ""), "'title' must be a non-empty string"),
    (("[[figure]]", "[[figure]]\nquick = { skip = true }"), "its skip, the reason"),
])
def test_a_bad_study_file_is_a_one_line_error(tmp_path, change, message):
    old, new = change
    with pytest.raises(UserError, match=message):
        parse_study(_write(tmp_path, GOOD.replace(old, new, 1)))


@pytest.mark.unit
def test_a_study_experiment_naming_an_unknown_benchmark_or_target_is_refused(tmp_path):
    exp = tmp_path / "e.toml"
    exp.write_text(f'[run]\nbenchmarks = ["point-query"]\n{TINY}[[target]]\nname = "a"\n[[target]]\nname = "b"\n')
    body = ('name = "mine"\ntitle = "t"\nduration = "d"\ndescription = "d"\n'
            '[[step]]\nname = "run"\nkind = "experiment"\nexperiment = "e.toml"\n{quick}\n'
            '[[figure]]\nwhat = "w"\nsection = "§1"\npublished = "0.56"\n'
            'measure = {{ from = "cell", step = "run", target = "{target}", benchmark = "point-query" }}\n')
    parse_study(_write(tmp_path, body.format(quick="", target="b")))
    with pytest.raises(UserError, match="target 'c' is not in step 'run'"):
        parse_study(_write(tmp_path, body.format(quick="", target="c")))
    with pytest.raises(UserError, match=r"\(--quick\).*no-such"):
        parse_study(_write(tmp_path, body.format(quick='quick = { run = { benchmarks = ["no-such"] } }',
                                                 target="b")))
    with pytest.raises(UserError, match=r"target 'z' is not in e\.toml"):
        parse_study(_write(tmp_path, body.format(quick='quick = { targets = ["z"] }', target="b")))


@pytest.mark.unit
def test_an_unknown_study_names_the_known_ones():
    with pytest.raises(UserError, match=r"no such study.*barriers-spin"):
        load_study("nope")


@pytest.mark.unit
def test_walk_selects_by_fields_and_index_and_says_what_is_missing():
    doc = {"apply": [{"workers": 0, "vs_serial": 1.0}, {"workers": 4, "durability": "a", "vs_serial": 1.7}],
           "x": [10, 20]}
    assert walk(doc, "apply[workers=4,durability=a].vs_serial") == 1.7
    assert walk(doc, "x[1]") == 20
    with pytest.raises(NotMeasured, match="no apply entry with workers=8"):
        walk(doc, "apply[workers=8].vs_serial")
    with pytest.raises(NotMeasured, match="no 'nope'"):
        walk(doc, "nope")


def _probes(directory: Path, mutex_ns: float, none_ns: float) -> None:
    figures = [{"group": "state-update", "name": n, "repeats": 7, "ns_per_op": {"median": v, "min": v, "max": v},
                "ticks_per_op": {"median": v * 2, "min": v * 2, "max": v * 2}}
               for n, v in (("pthread mutex", mutex_ns), ("no barrier (not SMP safe)", none_ns))]
    (directory / "probes").mkdir(parents=True)
    (directory / "probes" / "probes.json").write_text(json.dumps({"families": {
        "barriers": {"figures": figures}, "spin": {"skipped": "x86-only probe, this host is aarch64"}}}))


NONE = 'name = "no barrier (not SMP safe)"'
RATIO = ("""
[[figure]]
what = "mutex against none"
section = "§3"
published = "5.0×"
measure = { from = "probe", step = "probes", family = "barriers", group = "state-update", name = "pthread mutex" }
""" f'per = {{ from = "probe", step = "probes", family = "barriers", group = "state-update", {NONE} }}' """
unit = "×"
expect = { min = 2.0 }
claim = "a mutex costs several stores"
""")


@pytest.mark.unit
def test_figures_are_read_back_with_ratios_scales_and_claims(tmp_path):
    study = parse_study(_write(tmp_path, GOOD.replace('families = ["barriers"]', 'families = ["barriers", "spin"]')
                               .replace('published = "81 cycles"', 'published = "2.26 s"\nscale = 0.1\nunit = "s"')
                               + RATIO + RATIO.replace("min = 2.0", "max = 2.0").replace("mutex against", "b")
                               + '\n[[figure]]\nwhat = "pause"\nsection = "§4"\npublished = "120 cycles"\n'
                               'measure = { from = "probe", step = "probes", family = "spin", group = "pause", '
                               'name = "PAUSE" }\n'))
    _probes(tmp_path / "run", 20.0, 4.0)
    got = rows(study, tmp_path / "run")
    assert [r.measured for r in got[:3]] == ["2.00 s", "5.00×", "5.00×"]
    # The probes' 7 repeats all gave one value: the ratio's interval is that value, inside the range, and covers
    # with (1 - 2^-6)^2 = 96.9% (a range of 5 repeats a side would cover with 87.9%: no word), so it holds.
    assert got[1].verdict.startswith("holds: a mutex costs several stores (interval 5–5, ratio of two ranges")
    assert got[1].coverage == pytest.approx((1 - 2 ** -6) ** 2)
    assert got[1].value == pytest.approx(5.0) and (got[1].low, got[1].high) == (pytest.approx(5.0), pytest.approx(5.0))
    assert got[2].verdict.startswith("does not hold")
    assert got[3].measured.startswith("not measured: probe spin skipped: x86-only") and got[3].value is None


@pytest.mark.unit
def test_a_figure_of_a_step_that_wrote_nothing_is_not_measured(tmp_path):
    got = rows(parse_study(_write(tmp_path, GOOD)), tmp_path / "empty")
    assert got[0].measured.startswith("not measured: probes.json was not written") and got[0].verdict == "–"


@pytest.mark.unit
def test_the_summary_table_escapes_what_was_named():
    evil = Row("a | b <script>`x`", "§3", "81 | cycles", "1.0 ms", "holds: <b>", 1.0)
    lines = table([evil], Host("CPU | </td>", 2, False, "hardware", "", "6", (0, 0, 0)))
    assert lines[0] == "| published figure | measured here | verdict | host |"
    row = lines[2]
    assert row.count(" | ") == 3  # four cells: every pipe that was named is escaped
    assert "<script>" not in row and "&lt;script&gt;" in row and "\\`x\\`" in row and "\\|" in row
    assert "&lt;b&gt;" in row and "&lt;/td&gt;" in row


@pytest.mark.unit
def test_the_html_summary_escapes_what_was_named_and_links_the_reports():
    from dbperf.studies.summary import html_summary
    study = load_study("barriers-spin")
    run = RunFacts(HOST, "now", "dbperf study run barriers-spin", "quick", None, [("probes", "<b>ran</b>")],
                   rewritten="<i>later</i>")
    page = html_summary(study, [Row("<img src=x onerror=alert(1)>", "§3", "81 & more", "1.0", "holds")], run,
                        ['versions-report.html"><script>'])
    assert "<img src=x" not in page and "&lt;img src=x onerror=alert(1)&gt;" in page
    assert "<b>ran</b>" not in page and "81 &amp; more" in page
    assert '<a href="versions-report.html&quot;&gt;&lt;script&gt;">' in page
    assert "Summary written again &lt;i&gt;later&lt;/i&gt; from the same results" in page


@pytest.mark.unit
def test_host_differences_name_vendor_vm_counters_cores_and_load():
    """Said per source the figures cite, from the sources table: never "the published runs measured Intel" of a
    source measured on AMD."""
    text = host_differences(HOST, ["Nielsen 2014-01-20", "Callaghan 2024-10-23"])
    for said in ("This CPU is AMD EPYC 7B13", "[Nielsen 2014-01-20]: measured on Intel", "virtual machine",
                 "No hardware counters here (perf cannot count cycles)", "This host has 2 cores",
                 "0.50 / 0.40 / 0.30", "at the end 0.60"):
        assert said in text
    assert "[Callaghan 2024-10-23]: measured on" not in text  # mostly AMD hosts, as this one
    amd_only = host_differences(HOST, ["Callaghan 2024-10-23"])
    assert "Intel" not in amd_only and "This CPU is" not in amd_only
    intel = host_differences(Host("Intel Xeon", 32, False, "hardware", "", "6", (1, 1, 1)), ["Nielsen 2014-01-20"])
    assert "AMD" not in intel and "virtual machine" not in intel and "counters here" not in intel
    assert "Load average at the start" in host_differences(HOST, ["no such key"])  # a section that is no source


@pytest.mark.unit
def test_the_summary_has_the_headline_first_and_the_ratio_last():
    from dbperf.studies.figures import Headline
    study = load_study("pgo-server")
    doc = summary(study, [Row("w", "§2", "1.44", "1.05", "faster", 1.05)],
                  RunFacts(HOST, "2026-11-23 20:00 UTC", "dbperf study run pgo-server", "full",
                           Headline("pgo", 1.0512, 13, 14, 0), [("mariadb", "ran")]))
    lines = doc.strip().splitlines()
    assert lines[0] == "study pgo-server: geomean rQPS 1.051, decided 13 of 14, slower 0"
    assert lines[-1] == "ratio 1.051"
    assert "| w (§2): 1.44 | 1.05 | faster | AMD EPYC 7B13, 2 cores, VM |" in doc
    # how the cells were decided, even when the wall clock decided them all
    assert "Of the 13 decided, 13 on the wall clock (QPS) and 0 on CPU time only" in doc and "1 undecided." in doc


@pytest.mark.unit
def test_the_headline_counts_a_cell_decided_on_cpu_time_only_and_says_so_under_its_first_line(monkeypatch):
    """The first line counts a cell as decided by either metric (a verdict's rule); the line under it says how many
    only CPU time decided, so that a reader does not take them for QPS verdicts."""
    from types import SimpleNamespace

    from dbperf.studies import figures
    from dbperf.studies.figures import Headline, headline

    def cell(rqps: float, verdict: str, metric: Metric, decided: bool = True) -> SimpleNamespace:
        v = SimpleNamespace(decided=decided, verdict=verdict, metric=metric, level_shift=None)
        wall_undecided = SimpleNamespace(decided=False, verdict="undecided", metric=WALL, level_shift=None)
        return SimpleNamespace(rqps=rqps, verdict_detail=v if metric.headline else wall_undecided,
                               cpu_verdict_detail=None if metric.headline else v)
    cells = {("pgo", "point-query", 1): cell(1.10, "faster", WALL),
             ("pgo", "range-covered-pk", 1): cell(1.09, "faster", CPU),
             ("pgo", "random-points-10", 1): cell(1.05, "undecided", WALL, decided=False),
             ("pgo", "train-mix", 1): cell(1.50, "faster", WALL),  # trained on: left out
             ("O2-aa", "point-query", 1): cell(1.0, "same", CPU),  # the base's A/A copy: not changed here
             ("O2-aa", "range-covered-pk", 1): cell(1.06, "faster", WALL)}  # ... but here: the base was slow
    matrix = SimpleNamespace(cells=cells, was_trained_on=lambda _t, b: b == "train-mix", base="O2")
    monkeypatch.setattr(figures.Reader, "matrix", lambda _self, _step, *_: matrix)
    monkeypatch.setattr(figures.Reader, "meta", lambda _self, _step, *_: SimpleNamespace(started_at=None, targets=[]))
    found = headline(load_study("pgo-server"), Path("/nonexistent"))
    assert found == Headline("pgo", pytest.approx((1.10 * 1.09 * 1.05) ** (1 / 3)), 2, 3, 0, 1, faster=2,
                             aa_compared=2, aa_changed=("range-covered-pk",), aa_overlap=1)
    doc = summary(load_study("pgo-server"), [], RunFacts(HOST, "now", "dbperf study run pgo-server", "full", found,
                                                         [("mariadb", "ran")]))
    assert doc.splitlines()[:3] == [
        "study pgo-server: geomean rQPS 1.080, decided 2 of 3, slower 0", "",
        "Of the 2 decided, 1 on the wall clock (QPS) and 1 on CPU time only (queries per CPU second; their wall clock "
        "undecided); 1 undecided. The A/A copy of the base changed 1 of 2 cells (range-covered-pk): on that benchmark "
        "two servers of the same build differed by as much as a verdict, so 1 of the decided cells above says nothing "
        "of the build there."]
    # a headline recorded before the lab counted the A/A copy says nothing of it
    assert "A/A" not in replace(found, aa_compared=None, aa_changed=None).decided_by()


def _study_run(directory: Path, value: float) -> None:
    directory.mkdir(parents=True)
    (directory / "summary.md").write_text("# Study barriers-spin: t\n\n| a | b |\n")
    (directory / "study.json").write_text(json.dumps({
        "study": "barriers-spin", "quick": True, "started": "2026-11-23T20:00:00+00:00", "ended": "x",
        "directory": str(directory), "host": HOST.to_json(),
        "figures": [{"what": "PAUSE latency", "measured": f"{value} TSC ticks", "value": value}]}))


@pytest.mark.unit
def test_a_recorded_run_is_dated_with_its_host_and_a_later_run_is_compared_with_it(tmp_path):
    docs = tmp_path / "docs"
    _study_run(tmp_path / "run1", 60.0)
    page, data = record_study("barriers-spin", tmp_path / "run1", docs)
    text = page.read_text()
    # generated from the JSON (the study's own title), not copied from the run's summary.md
    assert text.startswith("# Study barriers-spin: Barriers and spin loops") and "2026-11-23T20:00:00+00:00" in text
    assert "AMD EPYC 7B13 (2 cores" in text and data.name == "barriers-spin.json"
    kept = json.loads(data.read_text())["host"]
    assert (kept["cpu_id"], kept["microcode"]) == ("family 25, model 1, stepping 1", "0xa0011d1")
    lines = compare_with_record("barriers-spin", [Row("PAUSE latency", "§4", "x", "90.0 TSC ticks", "", 90.0)],
                                HOST, docs)
    assert lines is not None and "| PAUSE latency | 60.0 TSC ticks | 90.0 TSC ticks | 1.500 |" in lines
    assert "on AMD EPYC 7B13, 2 cores, VM (family 25, model 1, stepping 1; microcode 0xa0011d1)" in lines[0]
    assert "generation" not in lines[0]  # the same CPU: no caveat
    moved = compare_with_record("barriers-spin", [], replace(HOST, cpu_id="family 25, model 17, stepping 1"), docs)
    assert moved is not None and "generation differs under one model name" in moved[0]
    assert compare_with_record("barriers-spin", [], HOST, tmp_path / "none") is None
    with pytest.raises(UserError, match="the file exists; add --force"):
        record_study("barriers-spin", tmp_path / "run1", docs)
    with pytest.raises(UserError, match="holds a run of study 'barriers-spin', not 'replication'"):
        record_study("replication", tmp_path / "run1", docs)
    with pytest.raises(UserError, match="not a study run"):
        record_study("barriers-spin", tmp_path, docs)


def _pgo_run(directory: Path, started: str, host: Host, measured_steps: set[str], value: float) -> dict:
    """A pgo-server study.json (and its summary.md) whose figures of `measured_steps` read `value`, the others left
    out by --step, as `dbperf study run pgo-server --step ...` writes them."""
    from dataclasses import asdict

    from dbperf.studies.figures import Headline, Provenance
    study = load_study("pgo-server")
    left = {s.name: "--step" for s in study.steps if s.name not in measured_steps}
    figures = []
    for f in study.figures:
        steps = {m.step for m in f.measures("full") if m is not None}
        # as write_summary writes them: each figure this run measured names the run
        run_ref = Provenance(str(directory), "dbperf study run pgo-server", started, started, host.to_json())
        figures.append(asdict(Row(f.what, f.section, f.published, f"{value:.3f}", "faster", value, run=run_ref)
                              if steps <= measured_steps else
                              Row(f.what, f.section, f.published,
                                  f"not measured: step {sorted(steps & left.keys())[0]} was not run (--step)", "–",
                                  left_out=True)))
    run = {"dbperf_study": 1, "study": "pgo-server", "title": study.title, "mode": "full", "quick": False,
           "smoke": False, "started": started, "ended": started, "directory": str(directory),
           "command": "dbperf study run pgo-server" + "".join(f" --step {s}" for s in sorted(measured_steps)),
           "left_out": left, "host": host.to_json(),
           "steps": [{"name": s.name, "ended": "not run (--step)" if s.name in left else f"ran ({value})"}
                     for s in study.steps],
           "figures": figures,
           "headline": asdict(Headline("pgo", value, 13, 14, 0, 1)) if "mariadb" in measured_steps else None,
           "exit_code": 0}
    directory.mkdir(parents=True)
    (directory / "study.json").write_text(json.dumps(run))
    (directory / "summary.md").write_text("# Study pgo-server: t\n\nthe run's own summary\n")
    return run


@pytest.mark.unit
def test_a_run_narrowed_by_step_goes_on_record_on_top_of_the_record_keeping_the_steps_it_left_out(tmp_path):
    """pgo-server takes longer than one sitting at its own budget: its MariaDB step, run again, goes on record
    and the PostgreSQL figures on record stay, each row saying which run (host, date) measured it."""
    docs = tmp_path / "docs"
    intel = Host("Intel Xeon", 2, True, "simulated", "no PMU", "6.1", (0.5, 0.5, 0.5), (0.9, 0.9, 0.9))
    _pgo_run(tmp_path / "whole", "2026-11-23T23:32:55+00:00", intel, {"mariadb", "postgres"}, 1.02)
    page, data = record_study("pgo-server", tmp_path / "whole", docs)
    page.write_text(page.read_text() + f"\n{BY_HAND}\n\n## An analysis (written by hand)\n\nProse.\n")
    # A record from before a step was added to the study (the counters) does not claim that step's figures.
    whole = json.loads(data.read_text())
    data.write_text(json.dumps({**whole, "steps": [s for s in whole["steps"] if s["name"] != "postgres-counters"]}))
    _pgo_run(tmp_path / "maria", "2026-11-25T16:57:00+00:00", HOST, {"mariadb"}, 1.07)
    with pytest.raises(UserError, match="the file exists; add --force"):
        record_study("pgo-server", tmp_path / "maria", docs)
    record_study("pgo-server", tmp_path / "maria", docs, force=True)
    merged = json.loads(data.read_text())
    figures = {f["what"]: f for f in merged["figures"]}
    maria = figures["MariaDB point-query rQPS, -O2 + PGO / -O2"]
    pg = figures["PostgreSQL point-query rQPS, -O2 + PGO / -O2"]
    counters = figures["MariaDB I1 misses per instruction, -O2 → -O2 + PGO"]
    assert maria["value"] == 1.07 and maria["run"]["started"] == "2026-11-25T16:57:00+00:00"  # this run's
    # Kept from the record, which measured it: it names that run (folder, command, times, host with its load).
    assert pg["value"] == 1.02 and pg["host"] is None
    assert (pg["run"]["started"], pg["run"]["directory"]) == ("2026-11-23T23:32:55+00:00", str(tmp_path / "whole"))
    assert pg["run"]["host"]["cpu"] == "Intel Xeon" and pg["run"]["host"]["load_end"] == [0.9, 0.9, 0.9]
    # Left out by both runs: still not measured, never a number from nowhere.
    assert counters["value"] is None and counters["measured"].startswith("not measured")
    steps = {s["name"]: s["ended"] for s in merged["steps"]}
    assert steps["mariadb"] == "ran (1.07)"
    assert steps["postgres"] == ("kept from the run on record (Intel Xeon, 2 cores, VM; run of 2026-11-23 23:32 UTC): "
                                 "ran (1.02)")
    assert merged["kept_from_record"]["steps"] == ["mariadb-counters", "mysql", "mysql-counters", "postgres",
                                                   "postgres-counters"]
    assert merged["kept_from_record"]["started"] == "2026-11-23T23:32:55+00:00"
    assert merged["headline"]["geomean"] == 1.07  # the headline's step ran here
    text = page.read_text()
    assert text.startswith("# Study pgo-server: ")
    assert "study pgo-server: geomean rQPS 1.070, decided 13 of 14, slower 0" in text
    assert ("| 1.020 | faster | Intel Xeon (generation not recorded), 2 vCPUs, VM; run of 2026-11-23 23:32 UTC, "
            "load 0.50 → 0.90 |") in text
    assert ("| 1.070 | faster | AMD EPYC 7B13 (family 25, model 1, stepping 1), 2 vCPUs, VM; run of 2026-11-25 16:57 "
            "UTC, load 0.50 → 0.60 |") in text
    assert "The figures come from 2 runs on 2 CPUs (AMD EPYC 7B13, family 25, model 1, stepping 1; Intel Xeon, " \
           "generation not recorded): compare shapes across them, not figures." in text
    assert steps["mariadb-counters"] == "not run (--step)"  # neither run ran it: not "kept from the run on record"
    assert "The figures of step(s) mariadb-counters, mysql, mysql-counters, postgres, postgres-counters, which " \
           "the last run left out (--step), were kept from the record before it." in text
    # The page is generated whole from the JSON: the hand-written analysis moved to the study's notebook, linked.
    assert BY_HAND not in text and "Prose." not in text and "[the notebook](notebooks/pgo-server.md)" in text
    notebook = (docs / "notebooks" / "pgo-server.md").read_text()
    assert notebook.startswith("# Notebook: pgo-server") and notebook.rstrip().endswith(
        "## An analysis (written by hand)\n\nProse.")
    # The merged record is the next merge's record: a later PostgreSQL run keeps these MariaDB figures, and the
    # PostgreSQL step's end is said once, not wrapped again.
    _pgo_run(tmp_path / "pg", "2026-11-26T10:00:00+00:00", HOST, {"postgres"}, 0.97)
    record_study("pgo-server", tmp_path / "pg", docs, force=True)
    again = {f["what"]: f for f in json.loads(data.read_text())["figures"]}
    assert again["MariaDB point-query rQPS, -O2 + PGO / -O2"]["value"] == 1.07
    assert again["MariaDB point-query rQPS, -O2 + PGO / -O2"]["run"]["started"] == "2026-11-25T16:57:00+00:00"
    assert again["PostgreSQL point-query rQPS, -O2 + PGO / -O2"]["value"] == 0.97
    assert json.loads(data.read_text())["headline"]["geomean"] == 1.07  # kept with its step
    assert "runs on 2 CPUs" not in page.read_text()  # the kept figures' runs were on this run's CPU
    # A third run (the counters) on top of that merge: its kept figures come from two runs, and the sentence says so.
    _pgo_run(tmp_path / "counters", "2026-11-26T12:00:00+00:00", HOST, {"mariadb-counters", "postgres-counters"},
             0.9)
    record_study("pgo-server", tmp_path / "counters", docs, force=True)
    assert "The figures come from 3 runs. The host column names the run that measured each figure" in \
        page.read_text()
    third = {f["what"]: f for f in json.loads(data.read_text())["figures"]}
    assert third["MariaDB I1 misses per instruction, -O2 → -O2 + PGO"]["value"] == 0.9
    assert third["PostgreSQL point-query rQPS, -O2 + PGO / -O2"]["run"]["started"] == "2026-11-26T10:00:00+00:00"
    # A figure the record's run could not measure though it ran the step (a target added to the study since) keeps
    # that run's reason and name, not this run's "was not run".
    doc = json.loads(data.read_text())
    partial = "PostgreSQL geomean rQPS over the 14 held-out reads, -O2 + PGO with partial training / -O2"
    why = "not measured: step 'postgres' ran no target pgo-partial (a run from before the study had it?)"
    for f in doc["figures"]:
        if f["what"] == partial:
            f.update(measured=why, value=None, verdict="–", host=None, run=None)
    data.write_text(json.dumps(doc))
    _pgo_run(tmp_path / "maria2", "2026-11-26T13:00:00+00:00", HOST, {"mariadb"}, 1.05)
    record_study("pgo-server", tmp_path / "maria2", docs, force=True)
    kept = {f["what"]: f for f in json.loads(data.read_text())["figures"]}[partial]
    assert kept["measured"] == why and kept["run"] is None  # no measurement: no run to name
    # A quick run does not go on top of a full record.
    quick = tmp_path / "quick"
    _pgo_run(quick, "2026-11-26T11:00:00+00:00", HOST, {"mariadb"}, 1.0)
    doc = json.loads((quick / "study.json").read_text())
    (quick / "study.json").write_text(json.dumps({**doc, "mode": "quick", "quick": True}))
    with pytest.raises(UserError, match=r"a quick run narrowed by --step .* cannot be put on top of a full record"):
        record_study("pgo-server", quick, docs, force=True)


@pytest.mark.unit
def test_a_record_keeps_its_steps_results_so_that_a_later_run_is_compared_with_them_on_any_clone(tmp_path,
                                                                                                 monkeypatch,
                                                                                                 run_cli_here):
    """The results directories of a recorded run's steps are copied beside the record (results.jsonl compressed), so
    that `dbperf compare` against the recorded run does not need the host whose /tmp held it; a later run of the
    study is compared with them cell by cell, each target against itself, with a report."""
    from dbperf.storage.results import KEPT_RESULTS, keep_results, read_results
    from dbperf.studies.study_record import read_record
    from dbperf.studies.study_run import steps_against_record
    from tests.synthetic import write_run

    docs = tmp_path / "docs"
    benchmarks = ["point-query", "hot-points", "range-covered-pk"]
    _pgo_run(tmp_path / "run1", "2026-11-25T20:00:00+00:00", HOST, {"mariadb", "postgres"}, 1.1)
    write_run(tmp_path / "run1" / "mariadb", ["O2", "pgo"], benchmarks, 20, speed={"pgo": 1.1}, noise=0.01,
              server=True)
    page, data = record_study("pgo-server", tmp_path / "run1", docs)
    kept = docs / "pgo-server" / "mariadb"
    assert json.loads(data.read_text())["results"] == {"mariadb": "pgo-server/mariadb"}  # postgres wrote none
    assert (kept / KEPT_RESULTS).is_file() and not (kept / "results.jsonl").exists()
    assert (kept / KEPT_RESULTS).stat().st_size < (tmp_path / "run1" / "mariadb" / "results.jsonl").stat().st_size
    assert " Its steps' results are kept in `docs/studies/pgo-server/`." in page.read_text()
    _, original, _ = read_results(tmp_path / "run1" / "mariadb")
    _, copied, skipped = read_results(kept)
    assert copied == original and not skipped and len(copied) == 2 * 3 * 20
    first = (kept / KEPT_RESULTS).read_bytes()
    keep_results(tmp_path / "run1" / "mariadb", kept)
    assert (kept / KEPT_RESULTS).read_bytes() == first  # no timestamp: keeping the same run again changes nothing
    # A copy that fails (the disk full) leaves the record as it was: page, figures and copies.
    broken = tmp_path / "broken"
    _pgo_run(broken, "2026-11-25T21:00:00+00:00", HOST, {"mariadb", "postgres"}, 1.2)
    write_run(broken / "mariadb", ["O2", "pgo"], benchmarks, 3, server=True)
    page_before, data_before = page.read_text(), data.read_text()

    def disk_full(*_args, **_kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr("dbperf.storage.results.gzip.compress", disk_full)
    with pytest.raises(UserError, match="cannot keep the results: No space left on device"):
        record_study("pgo-server", broken, docs, force=True)
    monkeypatch.undo()
    assert (page.read_text(), data.read_text()) == (page_before, data_before)
    assert (kept / KEPT_RESULTS).read_bytes() == first
    assert sorted(p.name for p in (docs / "pgo-server").iterdir()) == ["mariadb"]
    # The section against the record names the kept copy, not the recording host's /tmp.
    lines = compare_with_record("pgo-server", [], HOST, docs)
    assert lines is not None and f"`dbperf compare {kept} THIS_RUN/mariadb`" in lines[0]
    assert "/run1" not in lines[0]
    # A later run: its MariaDB step against the kept one, -O2 at the same speed, PGO's gain gone.
    pgo = load_study("pgo-server")
    later = tmp_path / "later"
    write_run(later / "mariadb", ["O2", "pgo"], benchmarks, 20, seed=2, speed={"pgo": 1.0}, noise=0.01, server=True)
    said = steps_against_record(pgo, read_record(data), later, "full", force=False, docs=docs)
    assert said[0] == "" and len(said) == 2
    assert said[1].startswith("- step mariadb, this run against the recorded one, cell by cell (each target against "
                              "itself), 6 cells: ") and "; report mariadb-against-record.html; " in said[1]
    assert "6 cells: 3 slower, " in said[1]  # pgo lost its 10%: its three cells decided slower against the record
    assert said[1].endswith(f"`dbperf compare {kept} {later / 'mariadb'}`")
    report = (later / "mariadb-against-record.html").read_text()
    assert report.startswith("<!DOCTYPE html>") and "hot-points" in report
    # A quick run is not compared cell by cell with a full record: other cells, other benchmarks.
    said = steps_against_record(pgo, read_record(data), later, "quick", force=True, docs=docs)
    assert said[1].startswith("- step mariadb: not compared cell by cell: this is a quick run, the record a full one")
    # A step that cannot be compared (its targets renamed since) is a line of the summary, not the summary lost.
    other = tmp_path / "other"
    write_run(other / "mariadb", ["x", "y"], benchmarks, 3, server=True)
    said = steps_against_record(pgo, read_record(data), other, "full", force=False, docs=docs)
    assert said[1].startswith("- step mariadb: not compared with the record (") and "no target name in common" in \
        said[1]
    # The recorded run itself, its summary written again: not compared with itself.
    assert steps_against_record(pgo, read_record(data), tmp_path / "run1", "full", force=False,
                                docs=docs) == [
        "", "- step mariadb: the results kept on record are this run's own"]
    assert not (tmp_path / "run1" / "mariadb-against-record.html").exists()
    proc = run_cli_here("compare", str(kept), str(later / "mariadb"), "--format", "json")
    assert proc.returncode == 0, proc.stderr
    assert {t for t in json.loads(proc.stdout)["targets"]} == {"O2", "pgo"}
    # A line of a kept copy that cannot be used is said, naming the file read: the copy, not results.jsonl.
    edited = tmp_path / "edited"
    shutil.copytree(kept, edited)
    (edited / KEPT_RESULTS).write_bytes(gzip.compress(gzip.decompress(first) + b"{not json\n"))
    proc = run_cli_here("report", str(edited), "--format", "json")
    assert proc.returncode == 0 and f"{edited / KEPT_RESULTS}: 1 line(s) skipped" in proc.stderr, proc.stderr
    # A run narrowed by --step keeps the record's copy of the step it left out, and adds its own.
    _pgo_run(tmp_path / "pg", "2026-11-26T10:00:00+00:00", HOST, {"postgres"}, 0.9)
    write_run(tmp_path / "pg" / "postgres", ["O2", "pgo"], benchmarks, 6, engine="postgres", server=True)
    record_study("pgo-server", tmp_path / "pg", docs, force=True)
    assert json.loads(data.read_text())["results"] == {"mariadb": "pgo-server/mariadb",
                                                       "postgres": "pgo-server/postgres"}
    assert (kept / KEPT_RESULTS).read_bytes() == first
    # A whole run recorded again replaces the record: a step with no results in it does not keep an older copy.
    _pgo_run(tmp_path / "whole", "2026-11-27T10:00:00+00:00", HOST, {s.name for s in load_study("pgo-server").steps},
             1.0)
    write_run(tmp_path / "whole" / "postgres", ["O2", "pgo"], benchmarks, 6, seed=3, engine="postgres", server=True)
    record_study("pgo-server", tmp_path / "whole", docs, force=True)
    assert json.loads(data.read_text())["results"] == {"postgres": "pgo-server/postgres"} and not kept.exists()
    # A damaged kept copy is one line, not a traceback.
    damaged = docs / "pgo-server" / "postgres" / KEPT_RESULTS
    data_bytes = bytearray(damaged.read_bytes())
    data_bytes[len(data_bytes) // 2] ^= 0xFF
    damaged.write_bytes(bytes(data_bytes))
    with pytest.raises(UserError, match=r"results\.jsonl\.gz: cannot read"):
        read_results(damaged.parent)
    # A kept copy cut short is one line, not a traceback.
    cut = docs / "pgo-server" / "postgres" / KEPT_RESULTS
    cut.write_bytes(cut.read_bytes()[:100])
    with pytest.raises(UserError, match=r"results\.jsonl\.gz: cannot read"):
        read_results(cut.parent)


@pytest.mark.unit
def test_a_full_run_narrowed_by_step_replaces_a_quick_record_without_keeping_anything_of_it(tmp_path):
    """release-regression's record was a --quick run (a check that the study runs); its full run takes longer than a
    sitting and goes on record step by step: the first full step replaces the quick record, not merges into it."""
    docs = tmp_path / "docs"
    quick = tmp_path / "quick"
    _pgo_run(quick, "2026-11-23T20:00:00+00:00", HOST, {"mariadb", "postgres"}, 1.01)
    doc = json.loads((quick / "study.json").read_text())
    doc.pop("mode")  # as records from before study.json kept its mode: `quick` only
    (quick / "study.json").write_text(json.dumps({**doc, "quick": True}))
    from tests.synthetic import write_run
    write_run(quick / "postgres", ["O2", "pgo"], ["point-query"], 3, engine="postgres", server=True)
    record_study("pgo-server", quick, docs)
    assert (docs / "pgo-server" / "postgres").is_dir()
    _pgo_run(tmp_path / "full", "2026-11-26T10:00:00+00:00", HOST, {"mariadb"}, 1.1)
    write_run(tmp_path / "full" / "mariadb", ["O2", "pgo"], ["point-query"], 3, server=True)
    record_study("pgo-server", tmp_path / "full", docs, force=True)
    now = json.loads((docs / "pgo-server.json").read_text())
    assert "kept_from_record" not in now and now["mode"] == "full"
    # Nothing of the quick run is kept: not its figures, not its results; no copy is left half made.
    assert now["results"] == {"mariadb": "pgo-server/mariadb"} and not (docs / "pgo-server" / "postgres").exists()
    assert sorted(p.name for p in (docs / "pgo-server").iterdir()) == ["mariadb"]
    figures = {f["what"]: f for f in now["figures"]}
    assert figures["MariaDB point-query rQPS, -O2 + PGO / -O2"]["value"] == 1.1
    pg = figures["PostgreSQL point-query rQPS, -O2 + PGO / -O2"]
    assert pg["value"] is None and pg["measured"] == "not measured: step postgres was not run (--step)"


@pytest.mark.unit
@pytest.mark.parametrize(("args", "message"), [
    (["study", "run", "nope"], "study 'nope': no such study"),
    (["study", "record", "nope", "/tmp"], "study 'nope': no such study"),
    (["study", "record", "barriers-spin", "/nonexistent-dir"], "not a study run"),
])
def test_bad_study_input_is_one_line_and_exit_2(run_cli_here, args, message):
    proc = run_cli_here(*args)
    assert proc.returncode == 2, proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1 and message in proc.stderr


@pytest.mark.unit
def test_study_list_names_every_study(run_cli_here):
    proc = run_cli_here("study", "list")
    assert proc.returncode == 0, proc.stderr
    for name in ISSUE_STUDIES:
        assert name in proc.stdout


@pytest.mark.unit
def test_a_failed_step_is_said_in_the_summary_and_the_study_still_ends_with_it(tmp_path):
    from dbperf.studies.study_run import INCOMPLETE, run_study
    study = parse_study(_write(tmp_path, """
name = "mine"
title = "t"
duration = "a second"
description = "d"
[[step]]
name = "static"
kind = "layout"
binary = "/nonexistent/mariadbd"
[[figure]]
what = "lines"
section = "§6"
published = "found by readelf"
measure = { from = "json", step = "static", path = "static_candidate_lines" }
"""))
    end = run_study(study, tmp_path / "out", "full")
    assert end.exit_code == INCOMPLETE
    assert "- static: failed: /nonexistent/mariadbd: not found" in end.summary
    assert "| lines (§6): found by readelf | not measured: static.json was not written" in end.summary
    assert (tmp_path / "out" / "summary.md").read_text() == end.summary
    assert json.loads((tmp_path / "out" / "study.json").read_text())["steps"][0]["ended"].startswith("failed")


@pytest.mark.unit
def test_the_worst_cell_is_the_lowest_rqps_against_the_base_leaving_the_aa_copy_out(tmp_path):
    from dbperf.studies.figures import Reader
    from tests.synthetic import write_run
    exp = tmp_path / "e.toml"
    exp.write_text(f'[run]\nbenchmarks = ["point-query"]\n{TINY}[[target]]\nname = "a"\n')
    study = parse_study(_write(tmp_path, 'name = "mine"\ntitle = "t"\nduration = "d"\n'
                               'description = "d"\n[[step]]\nname = "versions"\nkind = "experiment"\n'
                               'experiment = "e.toml"\n[[step]]\nname = "diff"\nkind = "diff"\nof = "versions"\n'
                               'queries = 500\n'))
    write_run(tmp_path / "run" / "versions", ["v1", "v1-aa", "v2", "v3"], ["point-query", "update-index"], 12,
              speed={"v1-aa": 0.5, "v2": 0.9, "v3": 0.7}, noise=0.001)
    reader = Reader(study, tmp_path / "run")
    base, target, benchmark, rqps, verdict = reader.worst_cell("versions")
    assert (base, target, verdict) == ("v1", "v3", "slower") and rqps == pytest.approx(0.7, rel=0.02)
    assert benchmark in ("point-query", "update-index")
    # A lower rQPS the lab did not decide does not beat a cell decided slower: the diff explains a regression.
    for c in reader.matrix("versions").cells.values():
        if c.target == "v3" and c.verdict_detail is not None:
            c.verdict_detail = replace(c.verdict_detail, verdict="undecided")
    _, target, _, _, verdict = reader.worst_cell("versions")
    assert (target, verdict) == ("v2", "slower")
    # With no cell decided slower (one round: no verdict at all), the lowest rQPS, and its verdict says so.
    write_run(tmp_path / "one" / "versions", ["v1", "v2", "v3"], ["point-query"], 1, speed={"v2": 0.9, "v3": 0.7})
    _, target, _, _, verdict = Reader(study, tmp_path / "one").worst_cell("versions")
    assert (target, verdict) == ("v3", None)
    with pytest.raises(UserError, match="'of' must name experiment steps before it"):
        parse_study(_write(tmp_path, study.path.read_text().replace('of = "versions"', 'of = "diff"')))


@pytest.mark.unit
def test_a_diff_of_several_steps_explains_the_worst_cell_of_those_that_ran(tmp_path):
    """A study cut into steps of two hours (release-regression's three) diffs the worst cell of all of them: decided
    slower first, then the lowest rQPS; a step that did not run (--quick leaves some out) is passed over."""
    from dbperf.studies.figures import Reader
    from dbperf.studies.steps.base import StepRun
    from dbperf.studies.steps.diff import _worst
    from tests.synthetic import write_run
    exp = tmp_path / "e.toml"
    exp.write_text(f'[run]\nbenchmarks = ["point-query"]\n{TINY}[[target]]\nname = "a"\n')
    head = ('name = "mine"\ntitle = "t"\nduration = "d"\ndescription = "d"\n'
            + "".join(f'[[step]]\nname = "{n}"\nkind = "experiment"\nexperiment = "e.toml"\n'
                      for n in ("a", "b", "c")))
    study = parse_study(_write(tmp_path, head + '[[step]]\nname = "diff"\nkind = "diff"\nof = ["a", "b", "c"]\n'
                               'queries = 500\n'))
    write_run(tmp_path / "run" / "a", ["v1", "v2"], ["point-query"], 12, speed={"v2": 0.6}, noise=0.3)
    write_run(tmp_path / "run" / "b", ["v1", "v3"], ["point-query"], 12, speed={"v3": 0.8}, noise=0.001)
    run = StepRun(study, study.step("diff"), "full", tmp_path / "run", yes=True, err=None)  # type: ignore[arg-type]
    looked, of, (base, target, _, rqps, verdict) = _worst(Reader(study, tmp_path / "run"), run, ["a", "b", "c"])
    # a's 0.6 is lower, but only b's cell is decided slower: the diff explains a regression
    assert looked == ["a", "b"] and (of, base, target, verdict) == ("b", "v1", "v3", "slower")
    assert rqps == pytest.approx(0.8, rel=0.02)
    with pytest.raises(UserError, match="nothing to diff"):
        _worst(Reader(study, tmp_path / "none"), run, ["a", "b", "c"])
    # One results folder kept for steps that each name their targets (measured at once, before the study was cut into
    # steps): each step's worst cell is among its own targets, so the diff names the step the target belongs to.
    (tmp_path / "e3.toml").write_text(f'[run]\nbenchmarks = ["point-query"]\n{TINY}'
                                      + "".join(f'[[target]]\nname = "{n}"\n' for n in ("v1", "v2", "v3")))
    own = parse_study(_write(tmp_path, head.split("[[step]]")[0]
                             + "".join(f'[[step]]\nname = "{n}"\nkind = "experiment"\nexperiment = "e3.toml"\n'
                                       f'targets = ["v1", "{t}"]\n' for n, t in (("a", "v2"), ("b", "v3")))
                             + '[[step]]\nname = "diff"\nkind = "diff"\nof = ["a", "b"]\nqueries = 500\n'))
    write_run(tmp_path / "all", ["v1", "v2", "v3"], ["point-query"], 12, speed={"v2": 0.9, "v3": 0.7}, noise=0.001)
    reader = Reader(own, tmp_path / "run-own", {"a": tmp_path / "all", "b": tmp_path / "all"})
    assert reader.worst_cell("a", ["v1", "v2"])[1] == "v2" and reader.worst_cell("a")[1] == "v3"
    run = StepRun(own, own.step("diff"), "full", tmp_path / "run-own", yes=True, err=None)  # type: ignore[arg-type]
    _, of, (_, target, _, _, _) = _worst(reader, run, ["a", "b"])
    assert (of, target) == ("b", "v3")
    with pytest.raises(UserError, match="'of' must name experiment steps before it"):
        parse_study(_write(tmp_path, head + '[[step]]\nname = "diff"\nkind = "diff"\nof = ["a", "diff"]\n'
                           'queries = 500\n'))
    with pytest.raises(UserError, match="'of' must name an experiment step before it"):
        parse_study(_write(tmp_path, head + '[[step]]\nname = "n"\nkind = "counters"\nof = ["a"]\n'
                           'benchmark = "point-query"\n'))



@pytest.mark.unit
def test_a_diff_run_alone_reads_the_cells_its_run_left_out_from_the_results_kept_on_record(tmp_path):
    """`--step diff` in a sitting of its own: the experiment steps it did not measure are read where the record keeps
    them, and the diff names that run (its folder, start, CPU), since the cell's rQPS and verdict are that run's."""
    from dbperf.studies.model import load_study
    from dbperf.studies.steps.base import StepRun
    from dbperf.studies.steps.diff import _kept_on_record, _source
    study = load_study("release-regression")
    run = StepRun(study, study.step("diff"), "full", tmp_path, yes=True, err=None)  # type: ignore[arg-type]
    steps = ["versions-13-14", "versions-15-16", "versions-17-18"]
    kept = _kept_on_record(run, steps)
    assert sorted(kept) == steps and all(p.name == "versions" and (p / "meta.json").is_file() for p in kept.values())
    source = _source(kept["versions-17-18"])
    assert source is not None and "docs/studies/release-regression/versions" in source
    assert "2026-11-26T05:44" in source and "family 25, model 17" in source
    # a step this run measured is read from this run, never from the record
    (tmp_path / "versions-13-14").mkdir()
    (tmp_path / "versions-13-14" / "meta.json").write_text("{}")
    assert sorted(_kept_on_record(run, steps)) == steps[1:]
    assert _source(None) is None

@pytest.mark.unit
def test_a_json_figure_names_the_run_that_measured_its_value_where_the_step_only_read_it_back(tmp_path):
    """A diff run alone picks its worst cell from results kept on record: the cell's verdict is the kept run's, so a
    figure of it (measured_by) names that run, its CPU and start, never the diff run; a diff whose cells its own run
    measured (cell_run null), or an output from before it named one, leaves the figure to the study run."""
    from dbperf.storage.results import read_meta
    from dbperf.studies.figures import Provenance, Reader, row
    from dbperf.studies.model import load_study
    from dbperf.studies.steps.base import StepRun
    from dbperf.studies.steps.diff import _kept_on_record
    study = load_study("release-regression")
    step = StepRun(study, study.step("diff"), "full", tmp_path, yes=True, err=None)  # type: ignore[arg-type]
    kept = _kept_on_record(step, ["versions-15-16"])["versions-15-16"]
    run = asdict(Provenance.of_results(read_meta(kept), "docs/studies/release-regression/versions"))
    figure = next(f for f in study.figures if getattr(f.measure, "path", None) == "verdict")
    doc = {"of": "versions-15-16", "benchmark": "scan", "verdict": "slower", "cell_run": run}
    (tmp_path / "diff.json").write_text(json.dumps(doc))
    found = row(Reader(study, tmp_path), figure)
    assert found.measured == "slower" and found.run is not None
    assert found.run.started is not None and found.run.started.startswith("2026-11-26T05:44")
    assert found.run.host["cpu_id"] == "family 25, model 17, stepping 1" and found.run.note
    assert "run of 2026-11-26 05:44 UTC, load not recorded" in found.run.label
    for older in ({**doc, "cell_run": None}, {k: v for k, v in doc.items() if k != "cell_run"}):
        (tmp_path / "diff.json").write_text(json.dumps(older))
        assert row(Reader(study, tmp_path), figure).run is None
    (tmp_path / "e.toml").write_text(f'[run]\nbenchmarks = ["point-query"]\n{TINY}[[target]]\nname = "a"\n')
    with pytest.raises(UserError, match=r"a json measure: Expected `str \| null`, got `int` - at `\$\.measured_by`"):
        parse_study(_write(tmp_path, HEAD + '[[step]]\nname = "x"\nkind = "experiment"\nexperiment = "e.toml"\n'
                           '[[step]]\nname = "p"\nkind = "diff"\nof = ["x"]\nqueries = 500\n'
                           '[[figure]]\nwhat = "w"\nsection = "§1"\npublished = "1"\n'
                           'measure = { from = "json", step = "p", path = "a", measured_by = 3 }\n'))


@pytest.mark.unit
def test_a_cell_measure_with_a_base_is_that_target_against_another_from_the_same_rounds(tmp_path):
    """A ladder's rung alone: its rQPS against the rung below, with the lab's verdict, not against the run's base."""
    from dbperf.studies.figures import Reader
    from tests.synthetic import write_run
    (tmp_path / "e.toml").write_text(f'[run]\nbenchmarks = ["point-query"]\n{TINY}'
                                     + "".join(f'[[target]]\nname = "{n}"\n' for n in ("a", "b", "c")))
    body = (HEAD + '[[step]]\nname = "ladder"\nkind = "experiment"\nexperiment = "e.toml"\n'
            '[[figure]]\nwhat = "c alone"\nsection = "§5"\npublished = "1.1"\n'
            'measure = { from = "cell", step = "ladder", target = "c", benchmark = "point-query", base = "b" }\n')
    study = parse_study(_write(tmp_path, body))
    write_run(tmp_path / "run" / "ladder", ["a", "b", "c"], ["point-query"], 12, speed={"b": 1.5, "c": 1.8},
              noise=0.002)
    reader = Reader(study, tmp_path / "run")
    alone = reader.measure(study.figures[0].measure)
    assert alone.value == pytest.approx(1.8 / 1.5, rel=0.02) and alone.verdict == "faster"
    against_base = reader.measure(msgspec.structs.replace(study.figures[0].measure, base=None))
    assert against_base.value == pytest.approx(1.8, rel=0.02)
    with pytest.raises(UserError, match="base 'z' is not a target of step 'ladder'"):
        parse_study(_write(tmp_path, body.replace('base = "b"', 'base = "z"')))


@pytest.mark.unit
def test_a_geomean_measure_is_one_target_over_every_benchmark_with_its_decided_cells_counted(tmp_path):
    """Which release turned slower across the whole harness: a target's geomean rQPS over every benchmark, and how
    many of its cells the lab decided slower and faster (the figures of each release in release-regression)."""
    from dbperf.studies.figures import Reader
    from tests.synthetic import write_run
    benchmarks = ["point-query", "hot-points", "update-index", "insert"]
    (tmp_path / "e.toml").write_text(f'[run]\nbenchmarks = {json.dumps(benchmarks)}\n{TINY}'
                                     + "".join(f'[[target]]\nname = "{n}"\n' for n in ("old", "new")))
    body = (HEAD + '[[step]]\nname = "versions"\nkind = "experiment"\nexperiment = "e.toml"\n'
            'smoke = { run = { benchmarks = ["point-query"] } }\n'
            '[[figure]]\nwhat = "new over every benchmark"\nsection = "§1"\npublished = "about 0.95"\n'
            'measure = { from = "geomean", step = "versions", target = "new" }\n')
    study = parse_study(_write(tmp_path, body))
    write_run(tmp_path / "run" / "versions", ["old", "new"], benchmarks, 16, speed={"new": 0.8}, noise=0.005)
    measured = Reader(study, tmp_path / "run").measure(study.figures[0].measure)
    assert measured.value == pytest.approx(0.8, rel=0.02)
    assert measured.verdict == "decided 4 of 4 (4 on the wall clock, 0 on CPU time only): 4 slower, 0 faster"
    # A run from before the study named the target: said, not a number.
    with pytest.raises(NotMeasured, match="step 'versions' ran no target newest"):
        Reader(study, tmp_path / "run").measure(msgspec.structs.replace(study.figures[0].measure, target="newest"))
    with pytest.raises(UserError, match="target 'newer' is not in step 'versions'"):
        parse_study(_write(tmp_path, body.replace('target = "new"', 'target = "newer"')))
    with pytest.raises(UserError, match="a geomean measure: Object contains unknown field `results_from`"):
        parse_study(_write(tmp_path, body.replace('target = "new" }', 'target = "new", results_from = "x" }')))
    # A benchmark with no rQPS (its cells failed) is said: the geomean is not over every benchmark.
    results = tmp_path / "run" / "versions" / "results.jsonl"
    lines = results.read_text().splitlines()
    results.write_text("\n".join(x for x in lines if not ('"target":"new"' in x and '"benchmark":"insert"' in x)))
    short = Reader(study, tmp_path / "run").measure(study.figures[0].measure)
    assert short.verdict == ("decided 3 of 3 (3 on the wall clock, 0 on CPU time only): 3 slower, 0 faster; over 3 of "
                             "4 benchmarks, the others without rQPS")


SMOKE_STEP = """
[[step]]
name = "run"
kind = "experiment"
experiment = "e.toml"
{step}
[[figure]]
what = "w"
section = "§1"
published = "0.56"
measure = {{ from = "cell", step = "run", target = "b", benchmark = "point-query" }}
[[figure]]
what = "w2"
section = "§1"
published = "0.9"
measure = {{ from = "cell", step = "run", target = "b", benchmark = "update-index" }}
"""
HEAD = 'name = "mine"\ntitle = "t"\nduration = "d"\ndescription = "d"\n'
SLOW = ('[run]\nbenchmarks = ["point-query", "update-index"]\ntable_size = 100000\ntime = "10s"\nrepeats = "auto"\n'
        'budget = "30m"\n[[target]]\nname = "a"\nsource = "postgres@debian-src"\nbuild = ["O2"]\n'
        '[[target]]\nname = "b"\nsource = "postgres@debian-src"\nbuild = ["O2", "pgo"]\n')
FAST = ('[run]\nbenchmarks = ["point-query"]\ntable_size = 1000\ntime = "0.5s"\nwarmup = "0.2s"\nrepeats = 2\n'
        '[[target]]\nname = "a"\nsource = "postgres@14.0"\n[[target]]\nname = "b"\nsource = "postgres@14.0"\n')


@pytest.mark.unit
def test_smoke_overrides_go_on_top_of_the_quick_ones_key_by_key():
    step = model.Step("run", "experiment", {"experiment": "e.toml", "aa": True, "run": {"time": "10s", "budget": "1h",
                                                                                      "table_size": 100_000}},
                      quick={"run": {"time": "1s", "table_size": 10_000}, "targets": ["a", "b"]},
                      smoke={"aa": False, "run": {"table_size": 1000}})
    assert step.effective("full") == step.settings
    assert step.effective("quick") == {"experiment": "e.toml", "aa": True, "targets": ["a", "b"],
                                       "run": {"time": "1s", "budget": "1h", "table_size": 10_000}}
    assert step.effective("smoke") == {"experiment": "e.toml", "aa": False, "targets": ["a", "b"],
                                       "run": {"time": "1s", "budget": "1h", "table_size": 1000}}


@pytest.mark.unit
def test_a_figure_the_short_runs_skip_is_left_out_with_its_reason_and_measured_in_the_full_run(tmp_path):
    study = parse_study(_write(tmp_path, GOOD.replace("[[figure]]", '[[figure]]\nquick = { skip = "not rebuilt" }')))
    assert model.left_out(study, "quick") == {0: "the --quick run leaves it out (not rebuilt)"}
    assert model.left_out(study, "smoke") == {0: "the --smoke run leaves it out (not rebuilt)"}
    assert model.left_out(study, "full") == {}
    assert study.figures[0].measures("quick")[0] == study.figures[0].measure  # skip is no override of measure


@pytest.mark.unit
def test_a_smoke_experiment_replaces_the_targets_drops_the_auto_budget_and_says_what_it_leaves_out(tmp_path):
    (tmp_path / "e.toml").write_text(SLOW)
    (tmp_path / "e-smoke.toml").write_text(FAST)
    study = parse_study(_write(tmp_path, HEAD + SMOKE_STEP.format(
        step='smoke = { experiment = "e-smoke.toml", run = { repeats = 2 } }')))
    doc = model.experiment_doc(study, study.step("run"), "smoke")
    assert [t["source"] for t in doc["target"]] == ["postgres@14.0", "postgres@14.0"]
    assert "budget" not in doc["run"] and doc["run"]["repeats"] == 2
    assert model.experiment_doc(study, study.step("run"), "full")["run"]["budget"] == "30m"
    assert model.left_out(study, "smoke") == {1: "the --smoke run leaves out update-index"}
    assert model.left_out(study, "full") == {}


@pytest.mark.unit
@pytest.mark.parametrize(("smoke", "message"), [
    ("", "target 'a' builds a server from source"),
    ('smoke = { experiment = "e-fast-but-wide.toml" }', r"benchmarks 2 \(at most 1\)"),
])
def test_a_study_whose_smoke_run_would_build_a_server_or_run_long_is_refused(tmp_path, smoke, message):
    (tmp_path / "e.toml").write_text(SLOW)
    (tmp_path / "e-fast-but-wide.toml").write_text(FAST.replace('["point-query"]', '["point-query", "update-index"]'))
    with pytest.raises(UserError, match=rf"step 'run': too long for --smoke \({message}.*give the step smoke = "):
        parse_study(_write(tmp_path, HEAD + SMOKE_STEP.format(step=smoke)))


@pytest.mark.unit
@pytest.mark.parametrize(("smoke", "message"), [
    ("smoke = { scale = 0.5 }", r"probe scale 0\.5 \(at most 0\.1\)"),
    ("smoke = { scale = 0.01, repeats = 9 }", r"probe repeats 9 \(at most 5\)"),
    ("", r"probe scale 1 \(at most 0\.1\)"),
])
def test_a_probe_step_too_long_for_smoke_is_refused(tmp_path, smoke, message):
    body = GOOD.replace("smoke = { scale = 0.01 }", smoke)
    with pytest.raises(UserError, match=message):
        parse_study(_write(tmp_path, body))


@pytest.mark.unit
def test_every_study_smoke_run_builds_no_server_and_names_only_cached_releases():
    # CI's downloads stay small: the smoke runs use the releases the lab's cache already holds (or Debian's packages).
    # mariadb@10.1.23: release-regression's InnoDB lineage needs a second MariaDB release, its oldest (a smaller jar
    # than 10.11.5's, fetched once; test_server_releases runs a cell on it too)
    cached = {"postgres@13.23", "postgres@14.0", "mariadb@10.1.23", "mariadb@11.4.5"}
    for name in sorted(ISSUE_STUDIES):
        study = load_study(name)
        for step in study.steps:
            if step.kind == "experiment" and not step.skipped("smoke"):
                for t in model.experiment_doc(study, step, "smoke")["target"]:
                    assert "debian-src" not in str(t.get("source", "")), (name, t)
                    assert t.get("source") is None or t["source"] in cached or t["source"].startswith("sqlite@"), t


@pytest.mark.unit
def test_a_smoke_run_says_so_first_and_in_its_json_and_cannot_be_recorded(tmp_path, run_cli_here):
    from dbperf.studies.figures import Headline
    study = load_study("pgo-server")
    doc = summary(study, [Row("w", "§2", "1.44", "1.05", "undecided", 1.05)],
                  RunFacts(HOST, "now", "dbperf study run pgo-server --smoke", "smoke", Headline("pgo", 1.0, 0, 1, 0),
                           [("mariadb", "ran")]))
    assert doc.startswith("SMOKE RUN: ") and "not results" in doc.splitlines()[0]
    assert doc.splitlines()[2].startswith("study pgo-server: geomean rQPS")
    _study_run(tmp_path / "run", 60.0)
    run = json.loads((tmp_path / "run" / "study.json").read_text())
    (tmp_path / "run" / "study.json").write_text(json.dumps({**run, "mode": "smoke", "smoke": True}))
    with pytest.raises(UserError, match=r"a smoke run .* not results"):
        record_study("barriers-spin", tmp_path / "run", tmp_path / "docs")
    assert not (tmp_path / "docs").exists()
    proc = run_cli_here("study", "record", "barriers-spin", str(tmp_path / "run"), "--docs", str(tmp_path / "docs"))
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1 and "smoke run" in proc.stderr


@pytest.mark.unit
def test_quick_and_smoke_together_are_refused(run_cli_here):
    proc = run_cli_here("study", "run", "barriers-spin", "--quick", "--smoke")
    assert proc.returncode == 2 and "two modes" in proc.stderr and len(proc.stderr.strip().splitlines()) == 1


def _smoke(name: str, tmp_path: Path, measured: str, env: dict[str, str] | None = None) -> dict:
    """Runs `dbperf study run NAME --smoke` for real; checks the summary and study.json; returns study.json."""
    out = tmp_path / "study"
    proc = run_cli("study", "run", name, "--smoke", "--out", str(out), timeout=600, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    text = (out / "summary.md").read_text()
    assert text == proc.stdout and text.startswith("SMOKE RUN: ")
    assert "| published figure | measured here | verdict | host |" in text
    assert "SMOKE RUN: " in (out / "summary.html").read_text()
    record = json.loads((out / "study.json").read_text())
    assert record["study"] == name and record["mode"] == "smoke" and record["smoke"] is True
    assert not any(s["ended"].startswith(("failed", "interrupted")) for s in record["steps"]), record["steps"]
    figures = {f["what"]: f for f in record["figures"]}
    assert figures[measured]["value"] is not None and figures[measured]["value"] > 0, figures[measured]
    assert figures[measured]["measured"] in text
    return record



@pytest.mark.e2e
@pytest.mark.skipif(shutil.which("cc") is None and shutil.which("gcc") is None, reason="needs a C compiler")
def test_smoke_barriers_spin(tmp_path, run_cli_here):
    """Also what a run of a study leaves and says, on this one (the smoke mode is the quick one's overrides and
    then its own: a --quick run of the same study takes several times as long and runs the same code)."""
    record = _smoke("barriers-spin", tmp_path, "pthread mutex against no barrier")
    assert all(f["value"] is not None for f in record["figures"])  # every probe is measured, even tiny
    out = tmp_path / "study"
    assert "## How this host differs" in (out / "summary.md").read_text()
    mutex = {f["what"]: f for f in record["figures"]}["pthread mutex against no barrier"]
    # The word is the one the evidence on record gives (evidence.word of its value, interval and the published
    # range), never a word fixed here: what a host measures is not what a test may assert.
    claim = next(f for f in load_study("barriers-spin").figures if f.what == "pthread mutex against no barrier")
    assert mutex["low"] is not None and mutex["high"] is not None and mutex["interval"], mutex
    interval = evidence.Interval(mutex["low"], mutex["high"], mutex["interval"], coverage=mutex["coverage"])
    # a new run is held to the latest catches: no word on an interval covering less than a word needs
    assert record["checks"] == CATCHES
    given = ("not judged" if (claim.floor and not_a_floor(mutex["checked"], interval)) or not interval.enough
             else evidence.word(claim.expect, mutex["checked"], interval, mutex["decided"]))
    assert mutex["verdict"].startswith(given + ":"), (given, mutex["verdict"])
    assert (out / "probes" / "probes.json").is_file()  # what was measured stays
    assert "pthread mutex against no barrier" in (out / "summary.html").read_text()
    again = run_cli_here("study", "run", "barriers-spin", "--smoke", "--out", str(out))
    assert again.returncode == 2 and "already holds a study run" in again.stderr


@pytest.mark.e2e
@pytest.mark.skipif(not Path("/usr/sbin/mariadbd").exists() or shutil.which("valgrind") is None,
                    reason="the study maps the system's mariadbd and traces SQLite under valgrind (make setup)")
def test_smoke_read_mostly_globals(tmp_path):
    history = tmp_path / "history.sqlite"
    record = _smoke("read-mostly-globals", tmp_path,
                    "demo: lines flagged (read-mostly object beside a hot-written one)",
                    env={"DBPERF_HISTORY": str(history)})
    figures = {f["what"]: f for f in record["figures"]}
    assert figures["mariadbd static map: lines mixing written and never-written objects"]["value"] is not None
    # SQLite's --fix ran its A/B (a results directory with cells) and left the user's history alone: its targets
    # bear the user's target's name, with a rebuilt library.
    sqlite = json.loads((tmp_path / "study" / "sqlite.json").read_text())
    assert sqlite["fix"]["ab_cells"] > 0 and Path(sqlite["fix"]["ab_results"]).is_dir()
    assert not history.exists()


@pytest.mark.server
@NEEDS_SERVERS
def test_smoke_release_regression(tmp_path):
    record = _smoke("release-regression", tmp_path, "point-query rQPS, newest against oldest")
    figures = {f["what"]: f for f in record["figures"]}
    assert figures["update-index rQPS, newest against oldest"]["left_out"]  # said so, not made up
    assert figures["bisect: how it ended"]["text"]
    # the InnoDB lineage: MariaDB's oldest and newest measured on its read; its bisects by simulated work said left out
    assert figures["MariaDB point-query rQPS, 11.4.5 / 10.1.23"]["value"] > 0
    assert figures["MariaDB update-index rQPS, 11.4.5 / 10.1.23"]["left_out"]
    ended = {s["name"]: s["ended"] for s in record["steps"]}
    assert ended["mariadb-bisect-simulated"] == "not run in the --smoke run (its skip = true)"


@pytest.mark.server
@NEEDS_SERVERS
def test_smoke_pgo_server(tmp_path):
    record = _smoke("pgo-server", tmp_path, "MariaDB point-query rQPS, -O2 + PGO / -O2")
    assert record["headline"]["compared"] == 1 and record["headline"]["geomean"] > 0
    figures = {f["what"]: f for f in record["figures"]}
    assert figures["PostgreSQL point-query rQPS, -O2 + PGO / -O2"]["value"] > 0
    for engine in ("MariaDB", "PostgreSQL"):  # the server's user CPU per query, read from the same cells
        user = figures[f"{engine} point-query server user CPU per query, -O2 → -O2 + PGO"]
        assert user["value"] > 0 and " µs → " in user["measured"], user
    share = figures["MariaDB point-query, -O2: the server's user CPU as a share of all CPU per query (client + server)"]
    assert 0 < share["value"] < 100, share
    for engine in ("MariaDB", "PostgreSQL"):  # the counters steps skip the smoke run (cachegrind starting servers)
        i1 = figures[f"{engine} I1 misses per instruction, -O2 → -O2 + PGO"]
        assert i1["left_out"] and "was not run (--smoke)" in i1["measured"], i1
    ended = {s["name"]: s["ended"] for s in record["steps"]}
    assert ended["mariadb-counters"] == ended["postgres-counters"] == "not run in the --smoke run (its skip = true)"


@pytest.mark.server
@NEEDS_SERVERS
def test_smoke_tuning_ladder(tmp_path):
    _smoke("tuning-ladder", tmp_path, "+ jemalloc (LD_PRELOAD)")


@pytest.mark.server
@NEEDS_SERVERS
def test_smoke_replication(tmp_path):
    record = _smoke("replication", tmp_path, "MariaDB apply rate, 4 workers against 1 SQL thread, durable (binlog, "
                                             "crash-safe)")
    figures = {f["what"]: f for f in record["figures"]}
    assert figures["PostgreSQL stale reads with synchronous_commit = remote_apply"]["value"] is not None
    # every step measures its figures, the group-commit wait and the 1-client primary among them; MySQL's step, built
    # from source, skips the smoke run
    twelve = next(w for w in figures if "12 workers against 1 SQL thread" in w)  # the post's 10x, a vCPU a worker
    assert [w for w, f in figures.items() if f["value"] is None and not w.startswith("MySQL ") and w != twelve] == []
    if (os.cpu_count() or 1) < 12:
        assert figures[twelve]["measured"] == ("not reproducible here: 12 threads need 12 vCPUs; this host has "
                                               f"{os.cpu_count()}")
    mysql = [f for w, f in figures.items() if w.startswith("MySQL ")]
    assert len(mysql) == 8 and all(f["left_out"] and "was not run (--smoke)" in f["measured"] for f in mysql)


TWO_STEPS = """
name = "mine"
title = "t"
duration = "a second"
description = "d"
[[step]]
name = "a"
kind = "layout"
binary = "/nonexistent/a"
[[step]]
name = "b"
kind = "layout"
binary = "/nonexistent/b"
[[figure]]
what = "lines of a"
section = "§6"
published = "p"
measure = { from = "json", step = "a", path = "static_candidate_lines" }
[[figure]]
what = "lines of b"
section = "§6"
published = "p"
measure = { from = "json", step = "b", path = "static_candidate_lines" }
"""


@pytest.mark.unit
def test_step_runs_only_the_named_steps_and_says_the_others_were_not_run(tmp_path):
    import io

    from rich.console import Console

    from dbperf.studies.study_run import INCOMPLETE, Limits, run_study
    study = parse_study(_write(tmp_path, TWO_STEPS))
    err = io.StringIO()
    end = run_study(study, tmp_path / "out", "full", err=Console(file=err, width=300),
                    limits=Limits(steps=("b",)))
    # The study's duration is the whole study's: the start line says which part of it runs.
    assert err.getvalue().startswith("dbperf: study mine: step(s) b of 2 (--step; the whole study: ")
    assert "- a: not run (--step)" in end.summary and "- b: failed: /nonexistent/b: not found" in end.summary
    assert "| lines of a (§6): p | not measured: step a was not run (--step)" in end.summary
    assert "dbperf study run mine --step b" in end.summary
    assert end.exit_code == INCOMPLETE  # b failed; a, left out on purpose, does not count
    with pytest.raises(UserError, match=r"^--step c: study mine has no such step \(its steps: a, b\)$"):
        run_study(study, tmp_path / "again", "full", limits=Limits(steps=("c",)))
    assert not (tmp_path / "again").exists()


@pytest.mark.unit
def test_budget_caps_an_experiment_steps_automatic_repeats_and_leaves_fixed_repeats_alone(tmp_path):
    import tomllib

    from dbperf.studies.study_run import experiment_file
    for repeats, budget, capped in (('"auto"', '"90m"', "600s"), ('"auto"', '"5m"', "300s"), ("3", None, None)):
        (tmp_path / "e.toml").write_text(f'[run]\nbenchmarks = ["point-query"]\nrepeats = {repeats}\n'
                                         + (f"budget = {budget}\n" if budget else "") + '[[target]]\nname = "a"\n')
        study = parse_study(_write(tmp_path, 'name = "mine"\ntitle = "t"\nduration = "d"\n'
                                   'description = "d"\n[[step]]\nname = "x"\nkind = "experiment"\n'
                                   'experiment = "e.toml"\n'
                                   'smoke = { run = { table_size = 1000, time = "0.5s", warmup = "0.2s"'
                                   + (', budget = "20s"' if budget else "") + ' } }\n'))
        run = tomllib.loads(experiment_file(study, study.step("x"), "full", tmp_path, 600).read_text())["run"]
        assert run.get("budget") == capped


@pytest.mark.unit
def test_a_step_a_mode_skips_is_said_and_its_figures_do_not_fail_the_run(tmp_path):
    from dbperf.studies.study_run import run_study
    study = parse_study(_write(tmp_path, TWO_STEPS.replace('binary = "/nonexistent/b"',
                                                           'binary = "/nonexistent/b"\nsmoke = { skip = true }')))
    end = run_study(study, tmp_path / "out", "smoke")
    assert "- b: not run in the --smoke run (its skip = true)" in end.summary
    assert "| lines of b (§6): p | not measured: step b was not run (--smoke)" in end.summary
    assert "- a: failed" in end.summary  # the step that ran and failed still counts
    with pytest.raises(UserError, match="skip must be true or false"):
        parse_study(_write(tmp_path, TWO_STEPS.replace('binary = "/nonexistent/b"',
                                                       'binary = "/nonexistent/b"\nsmoke = { skip = "yes" }')))


@pytest.mark.unit
def test_every_step_kind_is_a_module_of_its_own_with_its_keys_and_its_runner():
    """A kind is a file of dbperf/studies/steps/ (its KIND found by import): its name is its module's, it says its
    keys, and it runs (its own `run`, not the base's)."""
    from dbperf.studies.steps import base, step_kinds
    kinds = step_kinds()
    assert set(kinds) == {"probe", "layout", "experiment", "bisect", "diff", "counters"}
    for name, kind in kinds.items():
        assert type(kind).__module__ == f"dbperf.studies.steps.{name}"
        assert kind.keys and type(kind).run is not base.StepKind.run
    assert [k for k, kind in kinds.items() if kind.has_cells] == ["experiment"]


@pytest.mark.unit
def test_a_summary_is_written_again_with_a_figure_added_after_the_run_and_keeps_the_runs_facts(tmp_path,
                                                                                               monkeypatch):
    import dbperf.studies.study_run as study_run
    from dbperf.studies.study_run import INCOMPLETE, Limits, run_study, summarise
    definition = TWO_STEPS.replace('binary = "/nonexistent/b"', 'binary = "/nonexistent/b"\nsmoke = { skip = true }')
    (tmp_path / "defs").mkdir()
    study = parse_study(_write(tmp_path / "defs", definition))
    out = tmp_path / "out"
    first = run_study(study, out, "smoke", limits=Limits(steps=("a",)))
    record = json.loads((out / "study.json").read_text())
    assert record["command"] == "dbperf study run mine --smoke --step a" and record["left_out"] == {"b": "--step"}
    # The step wrote what a later figure reads: the figure, added to the study, is read back from it.
    (out / "a.json").write_text(json.dumps({"static_candidate_lines": [1, 2, 3]}))
    added = definition + '[[figure]]\nwhat = "added later"\nsection = "§6"\npublished = "p"\n' \
                         'measure = { from = "json", step = "a", path = "static_candidate_lines" }\n'
    monkeypatch.setattr(study_run, "load_study", lambda name: parse_study(_write(tmp_path / "defs", added, name)))
    again = summarise(out)
    assert "| added later (§6): p | 3.00 | shown beside the published one |" in again.summary
    assert "added later" not in first.summary
    assert "`dbperf study run mine --smoke --step a`" in again.summary and "Summary written again" in again.summary
    assert "| lines of b (§6): p | not measured: step b was not run (--step)" in again.summary
    assert "- a: failed" in again.summary and again.exit_code == INCOMPLETE  # the run's failed step still counts
    rewritten = json.loads((out / "study.json").read_text())
    assert rewritten["started"] == record["started"] and rewritten["host"] == record["host"]
    assert record["exit_code"] == rewritten["exit_code"] == INCOMPLETE
    assert rewritten["rewritten"] and (out / "summary.md").read_text() == again.summary
    assert "added later" in (out / "summary.html").read_text()


@pytest.mark.unit
def test_a_summary_written_again_keeps_the_runs_exit_code_and_reads_an_older_runs_from_its_steps(tmp_path,
                                                                                                  monkeypatch):
    import dbperf.studies.study_run as study_run
    from dbperf.studies.study_run import INCOMPLETE, Limits, run_study, summarise
    (tmp_path / "defs").mkdir()
    monkeypatch.setattr(study_run, "load_study", lambda name: parse_study(_write(tmp_path / "defs", TWO_STEPS, name)))
    out = tmp_path / "out"
    run_study(parse_study(_write(tmp_path / "defs", TWO_STEPS)), out, "full", limits=Limits(steps=("a",)))
    record = json.loads((out / "study.json").read_text())

    def written_again(**changes: object) -> int:
        (out / "study.json").write_text(json.dumps({**{k: v for k, v in record.items() if k != "exit_code"},
                                                    **changes}))
        end = summarise(out)
        assert json.loads((out / "study.json").read_text())["exit_code"] == end.exit_code
        return end.exit_code

    assert written_again(exit_code=143) == 143  # stopped by SIGTERM: not turned into a plain failure
    assert written_again() == INCOMPLETE  # an older record: its failed step says so
    # An older record whose steps all ran or were left out on purpose, their figures read back: a clean run.
    (out / "a.json").write_text(json.dumps({"static_candidate_lines": [1, 2]}))
    steps = [{"name": "a", "ended": "ran"}, {"name": "b", "ended": "not run (--step)"}]
    assert written_again(steps=steps) == 0


@pytest.mark.unit
@pytest.mark.parametrize(("content", "message"), [
    (None, "not a study run (study.json missing"),
    ("{", "unreadable study run"),
    ('{"study": "barriers-spin"}', "not a study run's record (no study name or mode)"),
    ('{"study": "nope", "mode": "full"}', "study 'nope': no such study"),
])
def test_study_summary_of_a_directory_that_is_not_a_study_run_is_one_line_and_exit_2(tmp_path, run_cli_here, content,
                                                                                       message):
    if content is not None:
        (tmp_path / "study.json").write_text(content)
    proc = run_cli_here("study", "summary", str(tmp_path))
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1 and message in proc.stderr, proc.stderr


@pytest.mark.unit
def test_a_run_compared_with_the_record_says_when_the_cpu_may_not_be_the_same() -> None:
    """One model name ("AMD EPYC" in a VM) covers several generations: the comparison says so when the record's
    family/model differs, when the record predates the lab keeping it, and when the model name itself differs."""
    def caveat(then: Host, now: Host) -> str:
        return cpu_caveat(then.identity, now.identity, "on record", "here") or ""
    assert cpu_caveat(HOST.identity, HOST.identity, "on record", "here") is None
    genoa = replace(HOST, cpu_id="family 25, model 17, stepping 1", microcode="0x1000065")
    assert "(family 25, model 1, stepping 1 on record, family 25, model 17, stepping 1 here)" in caveat(HOST, genoa)
    old = replace(HOST, cpu_id=None, microcode=None)
    assert "generation is not known on record" in caveat(old, genoa)
    assert "model 17, stepping 1 here" in caveat(old, genoa)
    assert "generation is not known here" in caveat(genoa, old)
    assert cpu_caveat(old.identity, old.identity, "on record", "here") is None  # neither knows: nothing to say
    assert "The CPUs differ (Intel Xeon, 2 cores on record" in caveat(replace(old, cpu="Intel Xeon"), old)
    def round_trip(host: Host) -> Host:  # as study.json holds it
        return Host.from_json(json.loads(json.dumps(host.to_json())))
    assert round_trip(genoa) == genoa and round_trip(old) == old
    assert genoa.described == "AMD EPYC 7B13, 2 cores, VM (family 25, model 17, stepping 1; microcode 0x1000065)"
    assert old.described == old.short


@pytest.mark.unit
def test_a_record_keeps_a_layout_fixs_ab_run_beside_it(tmp_path):
    """read-mostly-globals' --fix A/B runs (DIR/<step>-ab-*/results, beside the step's JSON) are results like an
    experiment step's: the record keeps a copy, so that `dbperf compare` can put a later A/B beside it."""
    from dbperf.studies.record import step_results
    from tests.synthetic import write_run

    run = tmp_path / "rmg"
    run.mkdir()
    (run / "summary.md").write_text("# Study read-mostly-globals: t\n\n| a | b |\n")
    (run / "study.json").write_text(json.dumps({
        "study": "read-mostly-globals", "mode": "full", "started": "2026-11-26T09:00:00+00:00", "ended": "x",
        "directory": str(run), "host": HOST.to_json(), "figures": []}))
    write_run(run / "sqlite-ab-x1y2z3" / "results", ["sqlite", "sqlite-fixed"], ["point-query"], 9)
    study = load_study("read-mostly-globals")
    assert step_results(run, study.step("sqlite")) == run / "sqlite-ab-x1y2z3" / "results"
    assert step_results(run, study.step("demo")) is None  # its A/B is the demo's own timing, not a results run
    docs = tmp_path / "docs"
    _, data = record_study("read-mostly-globals", run, docs)
    assert json.loads(data.read_text())["results"] == {"sqlite": "read-mostly-globals/sqlite"}
    kept = docs / "read-mostly-globals" / "sqlite"
    assert (kept / "meta.json").is_file() and (kept / "results.jsonl.gz").is_file()


@pytest.mark.unit
def test_a_summary_names_the_run_that_measured_each_figure_and_study_check_accepts_it(tmp_path, monkeypatch):
    """study.json's figures carry their run (folder, command, times, host with its load); `dbperf study check DIR`
    reads the run's words and provenance back and finds nothing to say."""
    from dbperf.studies import check, study_run
    from dbperf.studies.study_run import summarise
    study = parse_study(_write(tmp_path, GOOD + RATIO))
    monkeypatch.setattr(study_run, "load_study", lambda _name: study)
    monkeypatch.setattr(check, "load_study", lambda _name: study)
    run = tmp_path / "run"
    _probes(run, 20.0, 4.0)
    (run / "study.json").write_text(json.dumps({
        "study": "mine", "mode": "full", "started": "2026-11-28T10:00:00+00:00", "ended": "2026-11-28T10:01:00+00:00",
        "directory": str(run), "command": "dbperf study run mine", "host": HOST.to_json(),
        "steps": [{"name": "probes", "ended": "ran"}], "exit_code": 0}))
    summarise(run, study)
    figures = json.loads((run / "study.json").read_text())["figures"]
    assert [f["run"]["directory"] for f in figures] == [str(run), str(run)]
    assert figures[1]["run"]["host"]["load_end"] == [0.6, 0.5, 0.4] and figures[1]["checked"] == pytest.approx(5.0)
    assert check.check_run(run).defects == []
    (run / "probes" / "probes.json").unlink()  # a run's folder keeps every step's output: one deleted is a defect
    defects = check.check_run(run).defects
    assert len(defects) == 2 and all("its kept evidence is missing or unreadable (not measured: probes.json was "
                                     "not written" in d for d in defects), defects


@pytest.mark.unit
def test_a_study_whose_step_cannot_run_is_refused_before_its_folder_is_claimed(tmp_path):
    """As `dbperf run` looks at its targets before it claims --out, so does a study at each experiment step it will
    run: a MySQL install that is not there is said in one line, naming the step, and nothing is created."""
    from dbperf.studies.study_run import Limits, run_study
    (tmp_path / "e.toml").write_text(f'[run]\nbenchmarks = ["point-query"]\n{TINY}'
                                     '[[target]]\nname = "a"\nengine = "mysql"\nbinaries = "/nonexistent"\n')
    study = parse_study(_write(tmp_path, 'name = "mine"\ntitle = "t"\nduration = "d"\n'
                               'description = "d"\n[[step]]\nname = "servers"\nkind = "experiment"\n'
                               'experiment = "e.toml"\n'))
    with pytest.raises(UserError, match=r"^study mine step servers: target 'a': .*MySQL server not found.*"
                                        r"\(--step runs the others\)$"):
        run_study(study, tmp_path / "out", "full")
    assert not (tmp_path / "out").exists()
    with pytest.raises(UserError, match="no such step"):  # --step names what runs: a step left out is not checked
        run_study(study, tmp_path / "out", "full", limits=Limits(steps=("other",)))


@pytest.mark.unit
def test_a_run_whose_decided_verdicts_the_kept_run_on_record_contradicts_goes_on_record_only_said(tmp_path):
    """The record keeps the MariaDB step's run, which decided pgo faster; a later run of the step decides it slower:
    recording it is refused in one line naming the cell, unless --contradicted, and then the page names it."""
    from tests.synthetic import write_run
    docs = tmp_path / "docs"
    _pgo_run(tmp_path / "first", "2026-11-23T23:32:55+00:00", HOST, {"mariadb"}, 1.1)
    write_run(tmp_path / "first" / "mariadb", ["O2", "pgo"], ["point-query"], 20, noise=0.01, speed={"pgo": 1.15})
    record_study("pgo-server", tmp_path / "first", docs)
    _pgo_run(tmp_path / "second", "2026-11-25T16:57:00+00:00", HOST, {"mariadb"}, 0.9)
    write_run(tmp_path / "second" / "mariadb", ["O2", "pgo"], ["point-query"], 20, noise=0.01, seed=2,
              speed={"pgo": 0.85})
    with pytest.raises(UserError, match=r"1 cell\(s\) decided against the run on record before it \(mariadb: pgo "
                                        r"point-query: decided faster in one run and slower in another"):
        record_study("pgo-server", tmp_path / "second", docs, force=True)
    record_study("pgo-server", tmp_path / "second", docs, force=True, contradicted=True)
    (line,) = json.loads((docs / "pgo-server.json").read_text())["contradictions"]
    assert line.startswith("mariadb: pgo point-query: decided faster in one run and slower in another: faster")
    assert "**Contradicted** (put on record with --contradicted): 1 cell(s)" in (docs / "pgo-server.md").read_text()
    # A run that agrees with the record goes on record as before.
    _pgo_run(tmp_path / "third", "2026-11-26T10:00:00+00:00", HOST, {"mariadb"}, 0.9)
    write_run(tmp_path / "third" / "mariadb", ["O2", "pgo"], ["point-query"], 20, noise=0.01, seed=3,
              speed={"pgo": 0.85})
    record_study("pgo-server", tmp_path / "third", docs, force=True)
    assert "contradictions" not in json.loads((docs / "pgo-server.json").read_text())
