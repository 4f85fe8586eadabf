"""A study figure's measure, one tagged struct per `from` kind (dbperf/studies/measures/): each decodes from its
TOML table, refuses in one line what names nothing of its study, and reads its value from what its step wrote."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import msgspec
import pytest

from dbperf.errors import UserError
from dbperf.host.topology import HostShape
from dbperf.run_meta import RunMeta
from dbperf.stats.rqps_matrix import Matrix, build_matrix
from dbperf.storage.results import read_results
from dbperf.studies.measured import NotMeasured
from dbperf.studies.measures import decoded, kind_names, overridden
from dbperf.studies.measures.base import MeasureChecking
from dbperf.studies.measures.cell import CellMeasure
from dbperf.studies.measures.geomean import GeomeanMeasure
from dbperf.studies.measures.in_json import JsonMeasure
from dbperf.studies.measures.probe import ProbeMeasure

pytestmark = pytest.mark.unit


class FakeReader:
    """What a measure reads with (measures.base.Reading): a step's JSON given, a step's results from a directory."""

    def __init__(self, doc: Any = None, results: Path | None = None, exact: str | None = None) -> None:
        self.doc, self.results, self._exact = doc, results, exact

    def load_json(self, path: Path) -> Any:
        return self.doc

    def step_json(self, step: str, file: str | None = None) -> Any:
        return self.doc

    def exact(self, step: str) -> str | None:
        return self._exact

    def matrix(self, step: str, results_from: str | None = None, base: str | None = None) -> Matrix:
        meta, records, _ = read_results(self.results)  # type: ignore[arg-type]
        return build_matrix(meta if base is None else msgspec.structs.replace(meta, base=base), records)

    def meta(self, step: str, results_from: str | None = None, base: str | None = None) -> RunMeta:
        return read_results(self.results)[0]  # type: ignore[arg-type]

    def host_shape(self, step: str) -> HostShape:
        raise NotMeasured("no host")


AT = MeasureChecking("mine.toml [[figure]] 1", steps={"probes", "run", "static"}, families={"probes": ("barriers",)},
              targets={"run": {"old", "new"}}, catalog={"point-query": {}, "update-index": {}})


def _refused(raw: dict[str, Any]) -> str:
    """The one line a measure naming what the study does not have is refused with."""
    with pytest.raises(UserError) as e:
        decoded(raw, AT.where).check(AT)
    assert "\n" not in str(e.value)
    return str(e.value)


def test_the_kinds_are_found_by_import_and_a_measure_of_no_kind_is_refused():
    assert set(kind_names()) == {"probe", "cell", "geomean", "json"}
    with pytest.raises(UserError, match=r"measure .from. must be one of .*got .guess."):
        decoded({"from": "guess", "step": "run"}, AT.where)
    with pytest.raises(UserError, match="a cell measure: Object contains unknown field `path`"):
        decoded({"from": "cell", "step": "run", "path": "a"}, AT.where)
    with pytest.raises(UserError, match="measure must be a table"):
        decoded("cell", AT.where)


def test_a_measure_is_written_back_as_it_was_read_and_overridden_key_by_key():
    raw = {"from": "cell", "step": "run", "target": "new", "benchmark": "point-query"}
    m = decoded(raw, AT.where)
    assert msgspec.to_builtins(m) == raw
    assert overridden(m, {"target": "old"}, AT.where) == CellMeasure(step="run", target="old", benchmark="point-query")
    assert overridden(m, {}, AT.where) is m


PROBES = {"families": {"barriers": {"figures": [
    {"group": "state-update", "name": "pthread mutex", "threads": 1, "ns_per_op": 30.0, "repeats": 5,
     "ticks_per_op": {"median": 90.0, "min": 80.0, "max": 95.0}},
    {"group": "state-update", "name": "pthread mutex", "threads": 2, "ns_per_op": 60.0}]},
    "spin": {"skipped": "no PMU"}}}


def test_a_probe_measure_decodes_checks_its_family_and_reads_its_figure():
    m = decoded({"from": "probe", "step": "probes", "family": "barriers", "group": "state-update",
                 "name": "pthread mutex", "threads": 2}, AT.where)
    assert isinstance(m, ProbeMeasure) and m.describes_host and not m.reads_results
    m.check(AT)
    assert "a probe measure names a family its probe step runs" in _refused(
        {"from": "probe", "step": "probes", "family": "spin", "group": "g", "name": "n"})
    assert "needs the figure's group and name" in _refused({"from": "probe", "step": "probes", "family": "barriers"})
    assert m.read(FakeReader(PROBES)).value == 60.0  # the one of 2 threads
    spread = msgspec.structs.replace(m, threads=1, field="ticks_per_op").read(FakeReader(PROBES))
    assert spread.value == 90.0 and spread.interval is not None and spread.interval.low == 80.0
    with pytest.raises(NotMeasured, match="probe spin skipped: no PMU"):
        msgspec.structs.replace(m, family="spin").read(FakeReader(PROBES))
    with pytest.raises(NotMeasured, match="not in the results"):
        msgspec.structs.replace(m, threads=8).read(FakeReader(PROBES))


def test_a_cell_measure_decodes_checks_its_target_and_benchmark_and_reads_its_rqps(tmp_path):
    from tests.synthetic import write_run
    write_run(tmp_path / "run", ["old", "new"], ["point-query"], 12, speed={"new": 0.8}, noise=0.002)
    m = decoded({"from": "cell", "step": "run", "target": "new", "benchmark": "point-query"}, AT.where)
    assert isinstance(m, CellMeasure) and m.reads_results and m.run_step() == "run"
    m.check(AT)
    assert "target 'newer' is not in step 'run'" in _refused(
        {"from": "cell", "step": "run", "target": "newer", "benchmark": "point-query"})
    assert "benchmark 'dance' is not in the catalog" in _refused(
        {"from": "cell", "step": "run", "target": "new", "benchmark": "dance"})
    assert "measure step 'gone' is not a step of the study" in _refused(
        {"from": "cell", "step": "gone", "target": "new", "benchmark": "point-query"})
    measured = m.read(FakeReader(results=tmp_path / "run"))
    assert measured.value == pytest.approx(0.8, rel=0.02) and measured.verdict == "slower" and measured.decided
    assert m.reread({"run"}) and not m.reread({"other"})
    assert m.evidence_kept(results={"run"}, outputs=()) and not m.evidence_kept(results=(), outputs={"run"})


def test_a_geomean_measure_decodes_checks_its_target_and_reads_over_every_benchmark(tmp_path):
    from tests.synthetic import write_run
    write_run(tmp_path / "run", ["old", "new"], ["point-query", "update-index"], 12, speed={"new": 0.8},
              noise=0.002)
    m = decoded({"from": "geomean", "step": "run", "target": "new"}, AT.where)
    assert isinstance(m, GeomeanMeasure)
    m.check(AT)
    assert "target 'newest' is not in step 'run'" in _refused({"from": "geomean", "step": "run", "target": "newest"})
    assert "a geomean measure names an experiment step" in _refused(
        {"from": "geomean", "step": "probes", "target": "new"})
    measured = m.read(FakeReader(results=tmp_path / "run"))
    assert measured.value == pytest.approx(0.8, rel=0.02)
    assert measured.verdict is not None and measured.verdict.startswith("decided 2 of 2")


def test_a_json_measure_decodes_checks_its_paths_and_reads_a_value_a_fact_or_an_absence():
    m = decoded({"from": "json", "step": "static", "path": "a.b[k=x].v",
                 "spread": ["a.low", "a.high", "a.runs"]}, AT.where)
    assert isinstance(m, JsonMeasure) and not m.reads_results and m.run_step() is None
    m.check(AT)
    assert "a json measure needs a path" in _refused({"from": "json", "step": "static"})
    assert "spread is a list of 3 paths" in _refused({"from": "json", "step": "static", "path": "a",
                                                      "spread": ["a", "b"]})
    doc = {"a": {"b": [{"k": "y", "v": 1}, {"k": "x", "v": 2.5}], "low": 2.0, "high": 3.0, "runs": [1, 2, 3],
                 "none": None, "found": True}}
    measured = m.read(FakeReader(doc))
    assert measured.value == 2.5 and measured.interval is not None and measured.interval.coverage == 0.75
    assert JsonMeasure(step="static", path="a.found").read(FakeReader(doc)).text == "yes"
    assert JsonMeasure(step="static", path="a.none", empty="none found").read(FakeReader(doc)).text == "none found"
    with pytest.raises(NotMeasured, match=r"a\.none is empty"):
        JsonMeasure(step="static", path="a.none").read(FakeReader(doc))
    exact = JsonMeasure(step="static", path="a.low").read(FakeReader(doc, exact="counted"))
    assert exact.interval is not None and exact.interval.exact
    assert json.loads(msgspec.json.encode(m))["from"] == "json"
