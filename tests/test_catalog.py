from pathlib import Path

import pytest

from dbperf.catalog.registry import AFTER_WRITES, builtin, expand_group, resolve
from dbperf.catalog.workload import compile_statements, parse_workload_file
from dbperf.errors import UserError

pytestmark = pytest.mark.unit

# The microbenchmarks of the published harness ([Callaghan 2023-03-27], [Callaghan, mytools]; docs/sources.md).
HARNESS_NAMES = [
    "point-query", "random-points-10", "random-points-100", "random-points-1000", "hot-points",
    "points-covered-pk", "points-covered-si", "points-notcovered-pk", "points-notcovered-si", "range-covered-pk",
    "range-covered-si", "range-notcovered-pk", "range-notcovered-si", "read-only-10", "read-only-100",
    "read-only-10000", "scan", "update-index", "update-nonindex", "update-one", "update-zipf", "update-inlist",
    "write-only", "read-write-10", "read-write-100", "delete", "insert",
]


def test_catalog_ships_every_benchmark_of_the_harness():
    assert set(HARNESS_NAMES) <= set(builtin())


def test_sysbench_query_counting():
    c = builtin()
    assert c["point-query"].queries_per_event == 1
    assert c["read-only-100"].queries_per_event == 16  # BEGIN, 10 points, 4 ranges, COMMIT
    assert c["write-only"].queries_per_event == 6
    assert c["read-write-10"].queries_per_event == 20


def test_in_lists_and_ranges_expand_into_binds():
    c = builtin()
    job = compile_statements(c["random-points-1000"], table_size=5000)
    (stmt,) = job["statements"]
    assert stmt["sql"].count("?") == 1000 == len(stmt["binds"])
    assert all(b["gen"] == {"kind": "uniform", "lo": 1, "hi": 5000} for b in stmt["binds"])
    rng = compile_statements(c["range-covered-si"], table_size=5000)["statements"][0]
    assert rng["sql"] == "SELECT k FROM sbtest{table} WHERE k BETWEEN ? AND ?"
    lo, hi = rng["binds"]
    assert hi["gen"] == {"kind": "ref", "slot": lo["slot"], "add": 99}


def test_hot_points_are_100_adjacent_ids_from_the_middle():
    binds = compile_statements(builtin()["hot-points"], table_size=1000)["statements"][0]["binds"]
    assert [b["gen"]["value"] for b in binds] == list(range(500, 600))


def test_write_only_reinserts_the_row_it_deleted():
    stmts = compile_statements(builtin()["write-only"], table_size=100)["statements"]
    delete, insert = stmts[2], stmts[3]
    slot = delete["binds"][0]["slot"]
    assert insert["binds"][0]["gen"] == {"kind": "ref", "slot": slot, "add": 0}
    assert builtin()["write-only"].writes and builtin()["write-only"].transaction


def test_variants_override_description_and_generator():
    c = builtin()
    assert c["update-zipf"].statements[0].params["id"]["gen"] == "zipf"
    assert c["update-one"].statements[0].params["id"] == {"gen": "hot", "start": "middle", "count": 1}
    assert c["update-one"].description != c["update-nonindex"].description


def test_groups_follow_the_harness_order():
    names = [w.name for w in expand_group("all")]
    first_write = names.index("update-index")
    assert names.index("point-query") < first_write < names.index("point-query" + AFTER_WRITES)
    assert names[-2:] == ["delete", "insert"]
    assert all(w.phase == "read" for w in expand_group("reads"))


def test_reads_listed_after_writes_are_renamed(tmp_path: Path):
    got = [w.name for w in resolve(["point-query", "update-index", "scan"], tmp_path, "x")]
    assert got == ["point-query", "update-index", "scan" + AFTER_WRITES]


def test_display_sql_shows_placeholders():
    assert builtin()["points-covered-si"].display_sql() == ["SELECT k FROM sbtest{table} WHERE k IN (?×100)"]
    assert builtin()["read-only-10"].display_sql()[0] == "BEGIN"


def test_user_workload_file_by_path(tmp_path: Path):
    path = tmp_path / "mine.toml"
    path.write_text('name = "count-k"\ngroup = "range"\n[[statement]]\n'
                    'sql = "SELECT COUNT(*) FROM sbtest{table} WHERE k < {k}"\nparams.k = { gen = "uniform" }\n')
    (w,) = resolve(["mine.toml"], tmp_path, "exp")
    assert w.name == "count-k" and w.group == "range"


@pytest.mark.parametrize(("body", "message"), [
    ('[[statement]]\nsql = "SELECT 1 WHERE {x}"\nparams.x = { gen = "gauss" }\n', "unknown generator 'gauss'"),
    ('[[statement]]\nsql = "SELECT 1"\nparams.x = { gen = "uniform" }\n', "'x' is not used"),
    ('[[statement]]\nsql = "SELECT {y}"\n', "placeholder {y} has no parameter"),
    ('[[statement]]\nsql = "SELECT ?"\n', "not '?'"),
    ('group = "fast"\n[[statement]]\nsql = "SELECT 1"\n', "group must be one of"),
    ('colour = 1\n[[statement]]\nsql = "SELECT 1"\n', "unknown key 'colour'"),
    ('[[statement]]\nsql = "SELECT {x}"\nparams.x = { gen = "uniform", count = 0 }\n', "positive integer"),
    ('[[statement]]\nsql = "SELECT ${nope}"\n', "unknown variable ${nope}"),
    ("[[statement]\n", "malformed TOML"),
])
def test_bad_workload_files_are_refused_with_the_reason(tmp_path: Path, body: str, message: str):
    path = tmp_path / "bad.toml"
    path.write_text(body)
    with pytest.raises(UserError, match=None) as err:
        parse_workload_file(path)
    assert message in str(err.value)
    assert str(path) in str(err.value)
