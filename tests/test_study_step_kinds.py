"""A study step kind is a module of dbperf/studies/steps/ with a KIND (steps/base.StepKind): found by import, asked
by the loader (keys, checks, smoke limits), the runner (run, what a resume keeps) and the figures (its file), so
that a new kind is a new file and nothing else changes."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

import dbperf.studies.steps as steps
from dbperf.errors import UserError
from dbperf.studies.figures import rows
from dbperf.studies.model import parse_study
from dbperf.studies.steps import kind_names, step_kind, step_kinds
from dbperf.studies.study_run import INCOMPLETE, run_study

pytestmark = pytest.mark.unit

# A kind the lab does not have: it writes a number into DIR/<step>.json, and refuses more than 10 of them in --smoke.
COUNT_KIND = '''
from typing import Any, ClassVar
import json

from dbperf.errors import UserError
from dbperf.studies.steps.base import Checking, Over, StepEnd, StepKind, StepRun


class CountKind(StepKind):
    name = "count"
    keys = ("upto",)
    smoke_limits: ClassVar[dict[str, float]] = {"count_upto": 10}

    def check(self, s: dict[str, Any], at: Checking) -> None:
        if not isinstance(s.get("upto"), int):
            raise UserError(f"{at.where}: upto must be a whole number")

    def smoke(self, s: dict[str, Any], over: Over, where: str) -> None:
        over(s["upto"], "count_upto", "counted")

    def run(self, run: StepRun) -> StepEnd:
        (run.directory / f"{run.name}.json").write_text(json.dumps({"counted": run.settings["upto"]}))
        return StepEnd(f"counted to {run.settings['upto']}")


KIND = CountKind()
'''

STUDY = """
name = "mine"
title = "t"
duration = "a second"
description = "d"
[[step]]
name = "counting"
kind = "count"
upto = 100
smoke = { upto = 3 }
[[figure]]
what = "counted"
section = "§1"
published = "100"
measure = { from = "json", step = "counting", path = "counted" }
"""


@pytest.fixture
def count_kind(tmp_path: Path) -> Iterator[None]:
    """steps/count.py, as if it were a file of the package (its folder on the package's path)."""
    folder = tmp_path / "kinds"
    folder.mkdir()
    (folder / "count.py").write_text(COUNT_KIND)
    steps.__path__.append(str(folder))
    step_kinds.cache_clear()
    try:
        yield
    finally:
        steps.__path__.remove(str(folder))
        sys.modules.pop("dbperf.studies.steps.count", None)
        step_kinds.cache_clear()


def test_the_lab_s_kinds_each_a_module():
    assert set(kind_names()) == {"probe", "layout", "experiment", "bisect", "diff", "counters"}
    assert step_kind("bisect").own_file(Path("D"), "b") == Path("D/b/bisect.json")
    assert step_kind("experiment").own_file(Path("D"), "e") == Path("D/e-report.json")
    assert step_kind("layout").own_file(Path("D"), "l") == Path("D/l.json")


def test_a_new_kind_is_a_new_file_checked_run_and_read_back(tmp_path, count_kind):
    path = tmp_path / "mine.toml"
    path.write_text(STUDY)
    study = parse_study(path)
    assert "count" in kind_names() and study.steps[0].kind == "count"
    end = run_study(study, tmp_path / "out", "full", yes=True)
    assert end.exit_code == 0 and end.rows[0].value == 100.0
    assert json.loads((tmp_path / "out" / "study.json").read_text())["steps"] == [
        {"name": "counting", "ended": "counted to 100"}]
    assert rows(study, tmp_path / "out")[0].measured.startswith("100")
    # its keys, its check and its smoke limit are the loader's
    path.write_text(STUDY.replace("upto = 100", "upto = 100\nhow = 1"))
    with pytest.raises(UserError, match=r"unknown key 'how' .*known: name, kind, quick, smoke, upto"):
        parse_study(path)
    path.write_text(STUDY.replace("upto = 100", 'upto = "many"'))
    with pytest.raises(UserError, match="upto must be a whole number"):
        parse_study(path)
    path.write_text(STUDY.replace("smoke = { upto = 3 }", "smoke = { upto = 30 }"))
    with pytest.raises(UserError, match=r"too long for --smoke \(counted 30 \(at most 10\)\)"):
        parse_study(path)


def test_a_step_of_a_kind_that_fails_is_said_and_the_run_incomplete(tmp_path, count_kind, monkeypatch):
    path = tmp_path / "mine.toml"
    path.write_text(STUDY)
    study = parse_study(path)

    def fails(self: object, run: object) -> None:
        raise UserError("no counting today")

    monkeypatch.setattr(type(step_kind("count")), "run", fails)
    end = run_study(study, tmp_path / "out", "full", yes=True)
    assert end.exit_code == INCOMPLETE
    assert "- counting: failed: no counting today" in end.summary
