"""A SQLite PGO build whose profile is empty is refused (issue 46), never cached as good: by the profile's proof
(buildlab/profile_proof.py: the sentinel sqlite3VdbeExec never ran), and, with the proof set aside, by the
deterministic guard (buildlab/pgo_guard.py): compiled for size everywhere, the build executes more instructions per
query than its base on the training workload. Real SQLite from crates.io, gcc, valgrind and the driver; -O1, as
tests/test_buildlab.py, to keep the compiles short."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from dbperf.buildlab import builder
from dbperf.buildlab.sqlite_source import resolve
from dbperf.errors import UserError
from dbperf.experiment.build_variants import BuildSpec
from dbperf.host.compiler import find_compiler
from dbperf.host.driver import library_info

pytestmark = pytest.mark.e2e

VERSION = "3.54.1"
SPEC = BuildSpec(VERSION, ("O2", "pgo"), ("-O1",), ("train-mix",), pgo_train_seconds=1.0)


@pytest.fixture
def empty_training(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    """A build cache of its own, and a training that only opens the instrumented library: a profile of nothing."""
    monkeypatch.setenv("DBPERF_CACHE", str(tmp_path / "cache"))

    def nothing(library: Path, workloads: Any, seconds: float, log: Path | None = None) -> list[dict[str, Any]]:
        library_info("sqlite", str(library))
        return []

    monkeypatch.setattr(builder, "run_training", nothing)
    return resolve(VERSION)


def _entry(source: Any) -> Path:
    return builder.builds_dir() / builder.build_key(SPEC, source, find_compiler())


def test_an_empty_profile_is_refused_by_the_proof_and_not_cached(empty_training):
    with pytest.raises(UserError) as refused:
        builder.build(SPEC, empty_training)
    message = str(refused.value)
    assert "\n" not in message
    assert message.startswith(f"{SPEC.label()}: the PGO profile is not proven, so the build is refused: sentinel "
                              "function(s) sqlite3VdbeExec never ran in the training")
    assert not (_entry(empty_training) / "manifest.json").exists()


def test_an_empty_profile_past_the_proof_is_refused_by_the_guard(empty_training, monkeypatch):
    monkeypatch.setattr(builder, "prove", lambda training: {"set aside": True})
    with pytest.raises(UserError) as refused:
        builder.build(SPEC, empty_training)
    message = str(refused.value)
    assert "\n" not in message
    assert message.startswith(f"{SPEC.label()}: the PGO build is refused: on its own training workload it executes ")
    assert "instructions per query, its base without PGO" in message and message.endswith("not fewer")
    assert not (_entry(empty_training) / "manifest.json").exists()
    # its base was built, proven nothing, and is cached as the plain build it is
    base = builder.build(builder.base_spec(SPEC), empty_training)
    assert base.cached and base.manifest["pgo"] is None
