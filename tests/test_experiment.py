from pathlib import Path

import pytest

from dbperf.errors import UserError
from dbperf.experiment.durations import parse_duration
from dbperf.experiment.spec import parse_experiment

pytestmark = pytest.mark.unit

GOOD = """
[run]
benchmarks = ["point-query", "writes"]
threads = [1, 2]
time = "1.5s"
warmup = "500ms"
repeats = 4

[[target]]
name = "a"

[[target]]
name = "b"
config = { journal_mode = "WAL", cache_size = -20000, foreign_keys = true }
"""


@pytest.mark.parametrize(("text", "seconds"), [("10s", 10.0), ("500ms", 0.5), ("2m", 120.0), (3, 3.0),
                                                ("1.5s", 1.5), ("1h", 3600.0), ("7", 7.0)])
def test_durations(text, seconds):
    assert parse_duration(text, "x") == seconds


@pytest.mark.parametrize("text", ["ten seconds", "5 parsecs", "", True, "-1s", [1]])
def test_bad_durations(text):
    with pytest.raises(UserError, match=r"run\.time|cannot parse|negative"):
        parse_duration(text, "run.time")


@pytest.mark.parametrize("text", ["２０ms", "20ｍs", "٢٠s"])
def test_durations_are_ascii(text):
    """float() reads other scripts' digits; no tool the lab drives does: refused, not taken as 20 ms."""
    with pytest.raises(UserError, match=r"\[run\]\.slice: .*write durations in ASCII digits and units"):
        parse_duration(text, "[run].slice")


def test_each_duration_says_its_own_limit(write_experiment):
    """"per cell" belongs to time and warmup; a slice or a timeout over a week is not counted per cell."""
    with pytest.raises(UserError) as err:
        parse_experiment(write_experiment(GOOD.replace('repeats = 4', 'repeats = 4\norder = "slices"\nslice = "200h"')))
    assert str(err.value).endswith("[run].slice: '200h' is longer than a week")
    with pytest.raises(UserError) as err:
        parse_experiment(write_experiment(GOOD.replace('time = "1.5s"', 'time = "200h"')))
    assert str(err.value).endswith("[run].time: '200h' is longer than a week per cell")


def test_good_experiment(write_experiment):
    e = parse_experiment(write_experiment(GOOD))
    assert e.base == "a" and e.threads == (1, 2) and e.time_s == 1.5 and e.warmup_s == 0.5 and e.repeats == 4
    assert [t.name for t in e.targets] == ["a", "b"]
    assert e.targets[1].config == {"journal_mode": "WAL", "cache_size": "-20000", "foreign_keys": "ON"}
    assert e.benchmarks[0].name == "point-query" and e.benchmarks[-1].name == "insert"
    # multi-threaded SQLite defaults to WAL unless the target says otherwise
    assert ("journal_mode", "WAL") in e.targets[0].settings(2)
    assert e.targets[0].settings(1) == []


@pytest.mark.parametrize(("edit", "message"), [
    (lambda s: s.replace('repeats = 4', 'repeats = 0'), "[run].repeats: expected an integer >= 1"),
    (lambda s: s.replace('time = "1.5s"', 'time = "soon"'), "[run].time: cannot parse duration 'soon'"),
    (lambda s: s.replace('"point-query"', '"point-queries"'), "unknown benchmark 'point-queries'"),
    (lambda s: s.replace("repeats = 4", "repeats = 4\ncolour = 1"), "[run]: unknown key 'colour'"),
    (lambda s: s.replace('name = "b"', 'name = "a"'), "target name 'a' is used twice"),
    (lambda s: s.replace('name = "b"', 'name = "b"\nlibrary = "/nonexistent/libsqlite3.so"'),
     "library /nonexistent/libsqlite3.so not found"),
    (lambda s: s.replace("journal_mode", '"Journal-Mode"'), "is not a PRAGMA name"),
    (lambda s: s.replace('"WAL"', '"WAL; DROP TABLE x"'), "is not a plain word, number or size"),
    (lambda s: s.replace('name = "b"', 'name = "b"\nengine = "oracle"'), "unknown engine 'oracle'"),
    (lambda s: s.replace("[run]", "[run]\nbase = \"c\""), "[run].base: 'c' is not a target"),
    (lambda s: s.replace("[[target]]", "[[targets]]"), "unknown section 'targets'"),
    (lambda s: s.replace("threads = [1, 2]", "threads = [0]"), "[run].threads"),
    (lambda s: s.replace("[run]", "[run"), "malformed TOML"),
])
def test_bad_experiments_name_the_problem_and_where(write_experiment, edit, message):
    path = write_experiment(edit(GOOD))
    with pytest.raises(UserError) as err:
        parse_experiment(path)
    assert message in str(err.value)
    assert str(path) in str(err.value)


def test_missing_file():
    with pytest.raises(UserError, match="cannot read"):
        parse_experiment(Path("/nonexistent/exp.toml"))


SERVER = """
[run]
benchmarks = ["point-query"]

[[target]]
name = "pg"
engine = "postgres"
config = { shared_buffers = "1GB", jit = false }
"""


def test_server_target(write_experiment):
    (t,) = parse_experiment(write_experiment(SERVER)).targets
    assert t.is_server and t.config == {"shared_buffers": "1GB", "jit": "OFF"} and t.dsn is None


@pytest.mark.parametrize(("edit", "message"), [
    (lambda s: s.replace('"1GB"', '"1GB\'; DROP"'), "is not a plain word, number or size"),
    (lambda s: s.replace('name = "pg"', 'name = "pg"\ndsn = "postgresql://u:pw@h/db"'), "keep the password out"),
    (lambda s: s.replace('name = "pg"', 'name = "pg"\ndsn = "mysql://u@h/db"'), "expected postgresql://"),
    (lambda s: s.replace('name = "pg"', 'name = "pg"\nlibrary = "/x.so"'), "'library' is for SQLite targets"),
    (lambda s: s.replace('name = "pg"', 'name = "pg"\nport = 70000'), "expected a port number"),
    (lambda s: s.replace('name = "pg"', 'name = "pg"\npassword_env = "X"'), "are for external targets"),
])
def test_bad_server_targets(write_experiment, edit, message):
    with pytest.raises(UserError) as err:
        parse_experiment(write_experiment(edit(SERVER)))
    assert message in str(err.value)


def test_sqlite_target_refuses_server_keys(write_experiment):
    with pytest.raises(UserError, match="'dsn' is for server engines"):
        parse_experiment(write_experiment(GOOD.replace('name = "b"', 'name = "b"\ndsn = "postgresql://h/db"')))
