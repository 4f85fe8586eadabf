"""A study's [headline] also: another experiment step's line of the same target under the headline, in the form
`study NAME STEP: geomean rQPS <x>, decided <d> of <n>, slower <s>` (the PGO study's PostgreSQL under MariaDB's),
in summary.md, summary.html and study.json, and kept from the record when a run narrowed by --step left it out."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

import pytest

from dbperf.errors import UserError
from dbperf.studies.figures import Headline, Row, step_headlines
from dbperf.studies.model import load_study, parse_study
from dbperf.studies.record import record_study
from dbperf.studies.summary import Host, RunFacts, html_summary, summary
from tests.synthetic import write_run

pytestmark = pytest.mark.unit

HOST = Host("AMD EPYC 7B13", 2, True, "simulated", "perf cannot count cycles", "6.1", (0.5, 0.4, 0.3),
            (0.6, 0.5, 0.4), cpu_id="family 25, model 1, stepping 1", microcode="0xa0011d1")
POSTGRES_LINE = "study pgo-server postgres: geomean rQPS 1.070, decided 10 of 14, slower 0"


def test_the_pgo_study_names_postgres_and_mysql_under_its_headline() -> None:
    assert load_study("pgo-server").also_headlines == ("postgres", "mysql")


def test_the_step_line_follows_the_headline_in_markdown_and_html() -> None:
    study = load_study("pgo-server")
    facts = RunFacts(HOST, "2026-11-27 02:00 UTC", "dbperf study run pgo-server", "full",
                     Headline("pgo", 1.0512, 13, 14, 0), [("mariadb", "ran")],
                     also={"postgres": Headline("pgo", 1.0704, 10, 14, 0)})
    lines = summary(study, [Row("w", "x", "1.44", "1.05", "faster", 1.05)], facts).splitlines()
    assert lines[:2] == ["study pgo-server: geomean rQPS 1.051, decided 13 of 14, slower 0", POSTGRES_LINE]
    assert lines[-1] == "ratio 1.051"  # the headline's, not the step line's
    assert POSTGRES_LINE in html_summary(study, [], facts, [])


def test_the_step_line_is_tallied_from_the_steps_results(tmp_path: Path) -> None:
    benchmarks = ["point-query", "range-covered-si", "read-only-10"]
    write_run(tmp_path / "postgres", ["O2", "pgo"], benchmarks, 6, engine="postgres", server=True)
    lines = step_headlines(load_study("pgo-server"), tmp_path)
    assert set(lines) == {"postgres", "mysql"} and lines["postgres"].compared == len(benchmarks)
    assert lines["mysql"].geomean is None and lines["mysql"].compared == 0  # its step did not run here
    assert lines["postgres"].geomean is not None
    missing = step_headlines(load_study("pgo-server"), tmp_path / "nothing")
    assert missing["postgres"].geomean is None and missing["postgres"].compared == 0  # not measured, said as such


def test_a_step_line_naming_no_experiment_step_is_a_one_line_error(tmp_path: Path) -> None:
    text = load_study("pgo-server").path.read_text().replace('also = ["postgres", "mysql"]', 'also = ["nope"]')
    path = tmp_path / "pgo-server.toml"
    path.write_text(text)
    (tmp_path / "experiments").symlink_to(load_study("pgo-server").path.parent / "experiments")
    with pytest.raises(UserError, match=r"\[headline\] also: 'nope' must name an experiment step"):
        parse_study(path)


def test_a_narrowed_run_keeps_the_records_step_line_for_a_step_it_left_out(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    benchmarks = ["point-query", "range-covered-si"]
    pg = _run(tmp_path / "pg", {"postgres"}, {"postgres": asdict(Headline("pgo", 1.07, 10, 14, 0))})
    write_run(pg / "postgres", ["O2", "pgo"], benchmarks, 6, engine="postgres", server=True)
    record_study("pgo-server", pg, docs, force=True)
    maria = _run(tmp_path / "maria", {"mariadb"}, {})
    write_run(maria / "mariadb", ["O2", "pgo"], benchmarks, 6, engine="mariadb", server=True)
    record_study("pgo-server", maria, docs, force=True)
    merged = json.loads((docs / "pgo-server.json").read_text())
    assert merged["also_headlines"]["postgres"]["geomean"] == 1.07
    assert POSTGRES_LINE in (docs / "pgo-server.md").read_text()


def _run(directory: Path, measured: set[str], also: dict) -> Path:
    """A pgo-server study.json narrowed by --step to `measured`, as `dbperf study run --step` writes it."""
    study = load_study("pgo-server")
    left = {s.name: "--step" for s in study.steps if s.name not in measured}
    figures = [asdict(Row(f.what, f.section, f.published, "not measured: left out (--step)", "–", left_out=True))
               for f in study.figures]
    run = {"dbperf_study": 1, "study": "pgo-server", "title": study.title, "mode": "full", "quick": False,
           "smoke": False, "started": "2026-11-27T01:00:00+00:00", "ended": "2026-11-27T01:00:00+00:00",
           "directory": str(directory), "command": "dbperf study run pgo-server", "left_out": left,
           "host": HOST.to_json(), "figures": figures, "also_headlines": also, "exit_code": 0,
           "steps": [{"name": s.name, "ended": "not run (--step)" if s.name in left else "ran"} for s in study.steps],
           "headline": asdict(Headline("pgo", 1.05, 13, 14, 0)) if "mariadb" in measured else None}
    directory.mkdir(parents=True)
    (directory / "study.json").write_text(json.dumps(run))
    (directory / "summary.md").write_text("# Study pgo-server: t\n")
    return directory
