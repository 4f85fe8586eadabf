"""A figure that declares what it requires of the host (`requires`) and a host that does not have it: the figure is
`not reproducible here` with the measured reason, and no number or word; from a fake host description for each
reason (threads beyond the vCPUs, vCPUs that share a core, no PMU, a release no registry serves), and from a fake
/sys topology. `study check` accepts the status only with its reason, of a figure that requires something."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dbperf.errors import UserError
from dbperf.host.topology import HostRequirement, HostShape, parse_requirement, this_host
from dbperf.run_meta import meta_dict
from dbperf.studies.check import _status_defects
from dbperf.studies.evidence import NOT_REPRODUCIBLE
from dbperf.studies.figures import Row, rows
from dbperf.studies.model import host_requirements, parse_study, study_list_view
from tests.synthetic import replication_meta

STUDY = """
name = "needs"
title = "t"
duration = "a minute"
description = "d"
[[step]]
name = "probes"
kind = "probe"
families = ["barriers"]
smoke = { scale = 0.01 }
[[figure]]
what = "w"
section = "§3"
published = "81 cycles"
measure = { from = "probe", step = "probes", family = "barriers", group = "state-update", name = "pthread mutex" }
expect = { min = 1.0 }
claim = "c"
"""

# One fake host per reason, and the requirement it fails; the reason said must be the measured one.
REASONS = [
    ({"vcpus": 2, "cores": 2}, "threads = 8", "8 threads need 8 vCPUs; this host has 2"),
    ({"vcpus": 4, "cores": 2, "shared": ["0-1", "2-3"]}, "threads = 4, own_cores = true",
     "need 4 cores; this host's 4 vCPUs are 2 cores (siblings 0-1, 2-3)"),
    ({"vcpus": 2, "cores": 2, "pmu": False, "pmu_reason": "perf cannot count cycles here"}, "pmu = true",
     "no PMU: perf cannot count cycles here"),
    ({"vcpus": 2, "cores": 2, "unserved": {"mysql": "no version of mysql-9.7 is served"}}, 'release = "mysql"',
     "no registry serves the mysql release: no version of mysql-9.7 is served"),
]


def _run(tmp_path: Path, requires: str, shape: dict) -> list[Row]:
    path = tmp_path / "needs.toml"
    path.write_text(STUDY + f"requires = {{ {requires} }}\n")
    figures = [{"group": "state-update", "name": "pthread mutex", "repeats": 7,  # a range covering 98%
                "ns_per_op": {"median": 20.0, "min": 19.0, "max": 21.0}}]
    (tmp_path / "run" / "probes").mkdir(parents=True)
    (tmp_path / "run" / "probes" / "probes.json").write_text(json.dumps(
        {"host": {"shape": shape}, "families": {"barriers": {"figures": figures}}}))
    return rows(parse_study(path), tmp_path / "run")


@pytest.mark.unit
@pytest.mark.parametrize(("shape", "requires", "reason"), REASONS)
def test_a_host_without_what_the_figure_requires_gives_the_measured_reason(tmp_path, shape, requires, reason):
    (got,) = _run(tmp_path, requires, shape)
    assert got.measured.startswith(f"{NOT_REPRODUCIBLE}: ") and reason in got.measured
    assert got.verdict == NOT_REPRODUCIBLE  # no word of the evidence rule
    assert got.value is None and not got.measured_anything
    assert _status_defects(True, got) == []  # study check accepts it


@pytest.mark.unit
def test_a_host_that_meets_the_requirement_measures_and_judges(tmp_path):
    shape = {"vcpus": 8, "cores": 8, "pmu": True, "unserved": {}}
    (got,) = _run(tmp_path, 'threads = 8, own_cores = true, pmu = true, release = "mysql"', shape)
    assert got.value == pytest.approx(20.0) and got.verdict.startswith("holds: c")


@pytest.mark.unit
def test_a_run_that_kept_no_host_description_is_not_measured_not_guessed(tmp_path):
    (got,) = _run(tmp_path, "threads = 2", None)  # type: ignore[arg-type]
    assert got.measured.startswith("not measured: step 'probes' kept no description of its host")


@pytest.mark.unit
def test_vcpus_sharing_a_core_are_read_from_the_kernels_sibling_lists(tmp_path):
    for cpu, siblings in ((0, "0,2"), (1, "1,3"), (2, "0,2"), (3, "1,3")):
        (tmp_path / f"cpu{cpu}" / "topology").mkdir(parents=True)
        (tmp_path / f"cpu{cpu}" / "topology" / "thread_siblings_list").write_text(siblings + "\n")
    host = this_host(False, "no perf", sys_cpu=tmp_path)
    assert (host.vcpus, host.cores, host.shared) == (4, 2, ("0,2", "1,3"))
    assert HostRequirement(threads=3, own_cores=True).unmet(host) is not None
    assert HostRequirement(threads=2, own_cores=True).unmet(host) is None
    assert HostRequirement(threads=4).unmet(host) is None
    assert HostShape.from_json(host.to_json()) == host


@pytest.mark.unit
@pytest.mark.parametrize("raw", [{}, {"cores": 2}, {"threads": 0}, {"threads": True}, {"pmu": "yes"},
                                 {"release": 3}, "8"])
def test_a_bad_requires_is_one_line(raw):
    with pytest.raises(UserError, match="requires") as e:
        parse_requirement(raw, "study.toml [[figure]] 1")
    assert "\n" not in str(e.value)


JSON_STUDY = """
name = "needs"
title = "t"
duration = "a minute"
description = "d"
[[step]]
name = "lab"
kind = "experiment"
experiment = "lab.toml"
[[figure]]
what = "w"
section = "§3"
published = "about 10× at 12+ workers"
measure = { from = "json", step = "lab", path = "apply.speedup" }
expect = { min = 5.0 }
claim = "c"
"""


def _json_run(tmp_path: Path, requires: str, meta: dict | None) -> list[Row]:
    tmp_path.mkdir(exist_ok=True)
    (tmp_path / "lab.toml").write_text('[run]\nbenchmarks = ["point-query"]\ntable_size = 1000\ntime = 1\nwarmup = 0\n'
                                         '[[target]]\nname = "a"\n')
    path = tmp_path / "needs.toml"
    path.write_text(JSON_STUDY + f"requires = {{ {requires} }}\n")
    step = tmp_path / "run" / "lab"
    step.mkdir(parents=True)
    (tmp_path / "run" / "lab-report.json").write_text(json.dumps({"apply": {"speedup": 1.6}}))
    if meta is not None:
        (step / "meta.json").write_text(json.dumps(meta_dict(replication_meta(meta))))
    return rows(parse_study(path), tmp_path / "run")


@pytest.mark.unit
def test_a_figure_of_an_experiment_step_needing_more_threads_than_its_runs_host_had_is_not_reproducible(tmp_path):
    """An experiment step describes no topology: its run's meta.json names the host's vCPUs, which `threads` is
    checked against; the figure then has the reason and no number, end to end."""
    (got,) = _json_run(tmp_path, "threads = 12", {"host": {"cores": 2}})
    assert got.measured == f"{NOT_REPRODUCIBLE}: 12 threads need 12 vCPUs; this host has 2"
    assert got.verdict == NOT_REPRODUCIBLE and got.value is None and _status_defects(True, got) == []
    (met,) = _json_run(tmp_path / "big", "threads = 12", {"host": {"cores": 16}})
    assert met.value == pytest.approx(1.6) and met.verdict.startswith("inconclusive: c")  # measured, then judged
    (unknown,) = _json_run(tmp_path / "old", "threads = 12", None)
    assert unknown.measured == "not measured: step 'lab' kept no meta.json naming its host's vCPUs"


@pytest.mark.unit
@pytest.mark.parametrize("requires", ["pmu = true", "threads = 2, own_cores = true", 'release = "mysql"'])
def test_requires_beyond_threads_on_a_figure_not_measured_by_a_probe_is_one_line(tmp_path, requires):
    path = tmp_path / "needs.toml"
    path.write_text(STUDY.replace('measure = { from = "probe", step = "probes", family = "barriers", '
                                  'group = "state-update", name = "pthread mutex" }',
                                  'measure = { from = "json", step = "probes", path = "a.b" }')
                    + f"requires = {{ {requires} }}\n")
    with pytest.raises(UserError, match='not measured from = "probe" may name threads only') as e:
        parse_study(path)
    assert "\n" not in str(e.value)


@pytest.mark.unit
def test_check_refuses_the_status_without_a_reason_or_of_a_figure_that_requires_nothing():
    bare = Row("w", measured=NOT_REPRODUCIBLE, verdict=NOT_REPRODUCIBLE)
    assert any("without the measured reason" in d for d in _status_defects(True, bare))
    said = Row("w", measured=f"{NOT_REPRODUCIBLE}: 8 threads need 8 vCPUs", verdict=NOT_REPRODUCIBLE)
    assert any("requires nothing" in d for d in _status_defects(False, said))
    with_number = Row("w", measured=f"{NOT_REPRODUCIBLE}: no PMU", verdict=NOT_REPRODUCIBLE, value=3.0)
    assert any("keeps a number" in d for d in _status_defects(True, with_number))


@pytest.mark.unit
def test_study_list_shows_each_studys_host_requirements(tmp_path):
    path = tmp_path / "needs.toml"
    path.write_text(STUDY + 'requires = { threads = 8, pmu = true }\n')
    assert host_requirements(parse_study(path)) == "8 vCPUs, a PMU"
    block = study_list_view().sections[0].block
    assert block.header[-1] == "needs"
    needs = {r.cells[0]: r.cells[-1] for r in block.rows}
    assert "2 vCPUs, a core per thread" in needs["barriers-spin"] and "a mysql release served" in needs["barriers-spin"]
    assert needs["replication"] == "12 vCPUs"  # the post's 12 workers, each on a vCPU
    assert needs["tuning-ladder"] == "–"
