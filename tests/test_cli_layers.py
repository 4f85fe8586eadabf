"""The CLI is the roof: one module per command group, each short, and nothing below it imports it; the use cases
under it know nothing of Typer (issue 24)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "dbperf"
MAX_CLI_LINES = 250


def _imports(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found |= {node.module, *(f"{node.module}.{a.name}" for a in node.names)}
    return found


def _under(imports: set[str], package: str) -> list[str]:
    return sorted(i for i in imports if i == package or i.startswith(package + "."))


@pytest.mark.unit
def test_every_module_of_the_cli_is_short():
    modules = sorted((PACKAGE / "cli").glob("*.py"))
    assert len(modules) > 5
    long = {p.name: n for p in modules if (n := len(p.read_text().splitlines())) > MAX_CLI_LINES}
    assert not long, f"CLI modules over {MAX_CLI_LINES} lines: {long}"


@pytest.mark.unit
def test_nothing_below_the_cli_imports_it():
    offenders = {str(p.relative_to(PACKAGE)): _under(_imports(p), "dbperf.cli")
                 for p in PACKAGE.rglob("*.py") if "cli" not in p.relative_to(PACKAGE).parts[:1]}
    assert not {k: v for k, v in offenders.items() if v}


@pytest.mark.unit
def test_the_use_cases_know_nothing_of_typer():
    modules = sorted((PACKAGE / "usecases").glob("*.py"))
    assert modules
    for p in modules:
        imports = _imports(p)
        assert not _under(imports, "typer") and not _under(imports, "dbperf.cli"), p.name


@pytest.mark.unit
def test_a_report_drawn_without_the_cli_says_its_skipped_lines_on_stderr(tmp_path):
    """layout --fix draws its A/B's report as the use case returns it: the table on `out`, the notes on `err`."""
    import io

    from rich.console import Console

    from dbperf.report.outgoing import draw_report
    from dbperf.usecases.report import report_view
    from tests.synthetic import write_run
    directory = write_run(tmp_path / "run", ["a", "b"], ["point-query"], 3)
    with (directory / "results.jsonl").open("a") as f:
        f.write("{not json\n")
    out, err = io.StringIO(), io.StringIO()
    draw_report(report_view(directory), Console(file=out, width=200), Console(file=err, width=200))
    assert "point-query" in out.getvalue() and "skipped" not in out.getvalue()
    assert "results.jsonl: 1 line(s) skipped" in err.getvalue()
