"""The phases after a run (usecases/after_run.py): each asked for by the experiment, warned about when the run will
not give it anything, run only on a complete run's folder in order, an interrupt stopping the rest."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from rich.console import Console

from dbperf.errors import UserError
from dbperf.experiment.model import Experiment, Target
from dbperf.usecases import after_run
from tests.conftest import run_cli
from tests.refusal import assert_refused


def experiment(simulated: bool, explain: str | None) -> Experiment:
    t = Target(name="a", engine="sqlite", library="")
    e = Experiment(path=Path("exp.toml"), text="", benchmarks=(), targets=(t,), base="a", simulated=simulated)
    return e if explain is None else replace(e, explain=explain)


@pytest.mark.unit
def test_explain_disagreements_is_wanted_only_with_the_simulated_tier_and_refused_without_it():
    phase = after_run.ExplainDisagreements()
    assert phase.wanted(experiment(True, "disagreements"))
    assert not phase.wanted(experiment(False, "disagreements")) and not phase.wanted(experiment(True, None))
    with pytest.raises(UserError) as err:
        after_run.require_phases(experiment(False, "disagreements"))
    assert str(err.value).startswith("exp.toml: explain = \"disagreements\"")
    assert "nothing would be explained; add simulated = true (or --simulated), or drop explain" in str(err.value)
    after_run.require_phases(experiment(True, "disagreements"))


EXPLAINED = ('[run]\nbenchmarks = ["point-query"]\ntable_size = 1000\ntime = "0.2s"\nrepeats = 1\n'
             'explain = "disagreements"\n\n[[target]]\nname = "a"\n')


@pytest.mark.e2e
def test_explain_without_the_simulated_tier_is_refused_by_the_run_and_its_dry_run(write_experiment, tmp_path):
    exp, out = write_experiment(EXPLAINED), tmp_path / "out"
    says = "nothing would be explained; add simulated = true (or --simulated), or drop explain"
    assert_refused(run_cli("run", str(exp), "--out", str(out), timeout=120), 2, says, out)
    assert_refused(run_cli("run", str(exp), "--out", str(out), "--dry-run", timeout=120), 2, says, out)
    dry = run_cli("run", str(exp), "--out", str(out), "--dry-run", "--simulated", timeout=120)
    assert "explain" not in dry.stderr and "simulated tier: after the rounds" in dry.stdout, dry.stderr


@pytest.mark.unit
def test_the_phases_run_in_order_and_an_interrupt_stops_the_rest(monkeypatch, tmp_path):
    ran: list[str] = []

    class Phase:
        def __init__(self, name: str, exit_code: int | None) -> None:
            self.name, self.exit_code = name, exit_code

        def wanted(self, e: Experiment) -> bool:
            return self.name != "unwanted"

        def refusal(self, e: Experiment) -> str | None:
            return None

        def run(self, directory: Path, err: Console) -> int | None:
            ran.append(self.name)
            return self.exit_code

    monkeypatch.setattr(after_run, "PHASES", (Phase("first", None), Phase("unwanted", None), Phase("stops", 130),
                                              Phase("never", None)))
    assert after_run.run_after(experiment(True, None), tmp_path, Console(quiet=True)) == 130
    assert ran == ["first", "stops"]
