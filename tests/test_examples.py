"""Every example experiment parses: the files the README points to stay valid as keys change."""

from pathlib import Path

import pytest

from dbperf.experiment.spec import parse_experiment

pytestmark = pytest.mark.unit

EXAMPLES = sorted((Path(__file__).resolve().parents[1] / "examples").glob("*.toml"))


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.name for p in EXAMPLES])
def test_example_parses(path: Path):
    e = parse_experiment(path)
    assert e.targets and e.benchmarks and e.base in [t.name for t in e.targets]
