"""The phases after a run (usecases/after_run.py): each asked for by the experiment, warned about when the run will
not give it anything, run only on a complete run's folder in order, an interrupt stopping the rest."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from rich.console import Console

from dbperf.experiment.model import Experiment, Target
from dbperf.usecases import after_run


def experiment(simulated: bool, explain: str | None) -> Experiment:
    t = Target(name="a", engine="sqlite", library="")
    e = Experiment(path=Path("exp.toml"), text="", benchmarks=(), targets=(t,), base="a", simulated=simulated)
    return e if explain is None else replace(e, explain=explain)


@pytest.mark.unit
def test_explain_disagreements_is_wanted_only_with_the_simulated_tier_and_warned_about_without_it():
    phase = after_run.ExplainDisagreements()
    assert phase.wanted(experiment(True, "disagreements"))
    assert not phase.wanted(experiment(False, "disagreements")) and not phase.wanted(experiment(True, None))
    (line,) = after_run.warnings(experiment(False, "disagreements"))
    assert "exp.toml: explain = \"disagreements\"" in line and "nothing will be explained" in line
    assert after_run.warnings(experiment(True, "disagreements")) == []


@pytest.mark.unit
def test_the_phases_run_in_order_and_an_interrupt_stops_the_rest(monkeypatch, tmp_path):
    ran: list[str] = []

    class Phase:
        def __init__(self, name: str, exit_code: int | None) -> None:
            self.name, self.exit_code = name, exit_code

        def wanted(self, e: Experiment) -> bool:
            return self.name != "unwanted"

        def warning(self, e: Experiment) -> str | None:
            return None

        def run(self, directory: Path, err: Console) -> int | None:
            ran.append(self.name)
            return self.exit_code

    monkeypatch.setattr(after_run, "PHASES", (Phase("first", None), Phase("unwanted", None), Phase("stops", 130),
                                              Phase("never", None)))
    assert after_run.run_after(experiment(True, None), tmp_path, Console(quiet=True)) == 130
    assert ran == ["first", "stops"]
