"""Every example experiment parses, and the ones the README and the documentation site (docs/) point to exist: the
files they name stay valid as keys change."""

import re
from pathlib import Path

import pytest

from dbperf.experiment.spec import parse_experiment

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = sorted((ROOT / "examples").glob("*.toml"))
DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.name for p in EXAMPLES])
def test_example_parses(path: Path):
    e = parse_experiment(path)
    assert e.targets and e.benchmarks and e.base in [t.name for t in e.targets]


def test_examples_named_in_the_documentation_exist():
    named = {m for doc in DOCUMENTS for m in re.findall(r"examples/[\w.-]+\.toml", doc.read_text())}
    assert "examples/demo.toml" in named  # the README's quick start and the demo page show it
    assert sorted(n for n in named if not (ROOT / n).is_file()) == []


def test_readme_quick_start_is_short_and_its_commands_exist():
    readme = (ROOT / "README.md").read_text()
    assert len(readme.splitlines()) <= 300  # the rest lives in docs/
    makefile = (ROOT / "Makefile").read_text()
    for target in ("demo", "test"):
        assert f"make {target}" in readme
        assert re.search(rf"^{target}:", makefile, re.M), target
    assert "$(VENV)/bin/dbperf run examples/demo.toml" in makefile  # make demo runs the demo, on SQLite
