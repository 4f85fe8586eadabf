"""A JSON file nested deeper than the json module goes ([[[[...) is an unreadable file like any other, never a
RecursionError traceback: a run's meta.json when resumed or extended, a bisect's path, a stored probe result."""

from __future__ import annotations

from pathlib import Path

import pytest

from dbperf.errors import UserError

pytestmark = pytest.mark.unit

DEEP = "[" * 200_000 + "]" * 200_000


def test_a_deeply_nested_meta_json_is_not_a_run_stopped_on_its_budget(tmp_path: Path) -> None:
    from dbperf.runner.resume import stopped_on_budget

    (tmp_path / "meta.json").write_text(DEEP)
    assert stopped_on_budget(tmp_path) is False


def test_a_deeply_nested_probe_result_is_one_line(tmp_path: Path) -> None:
    from dbperf.usecases.probe import load_probes

    (tmp_path / "probes.json").write_text(DEEP)
    with pytest.raises(UserError, match="nested too deeply"):
        load_probes(tmp_path)
