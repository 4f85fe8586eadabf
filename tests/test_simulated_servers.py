"""The simulated tier on server targets (issue 49), end to end on Debian's PostgreSQL and MariaDB: a run with
`simulated = true` writes the servers' records (PostgreSQL's backend under cachegrind, mariadbd under callgrind, N
queries minus 0), the A/A copy reuses the base's figures, and a second count of the same cell agrees within the
tier's stated tolerance (0.5%). The second count is `dbperf profile --mode simulated` of each server, whose own
output (the counting's method, tool and cache geometry, its top functions) is checked on it: a server started
under valgrind is the slow part, so each is counted twice in all, not four times."""

from __future__ import annotations

import json
import shutil

import pytest

from tests.conftest import NEEDS_SERVERS, run_cli

EXPERIMENT = ('[run]\nbenchmarks = ["point-query"]\ntable_size = 2000\ntime = "0.5s"\nwarmup = "0.2s"\n'
              'repeats = 2\nsimulated = true\nbase = "pg"\n'
              '[[target]]\nname = "pg"\nengine = "postgres"\n'
              '[[target]]\nname = "maria"\nengine = "mariadb"\n')
TOLERANCE = 0.005  # the issue's: two counts of one cell within 0.5%


def _simulated(directory) -> dict[str, dict]:
    lines = (directory / "results.jsonl").read_text().splitlines()
    return {r["target"]: r for r in map(json.loads, lines) if r.get("type") == "simulated"}


@pytest.mark.server
@NEEDS_SERVERS
@pytest.mark.skipif(shutil.which("valgrind") is None, reason="valgrind not installed")
def test_a_server_run_with_the_simulated_tier_counts_both_servers_deterministically(write_experiment, tmp_path):
    exp = write_experiment(EXPERIMENT)
    out = tmp_path / "run"
    proc = run_cli("run", str(exp), "--aa", "--out", str(out), "--yes", timeout=2400)
    assert proc.returncode == 0, proc.stderr
    records = _simulated(out)
    assert set(records) == {"pg", "pg-aa", "maria"}, records
    pg, maria, copy = records["pg"], records["maria"], records["pg-aa"]
    assert not pg.get("error") and not maria.get("error"), (pg, maria)
    assert "backend" in pg["method"] and "mariadbd" in maria["method"]
    # A point query through the protocol costs the server tens of thousands of instructions, not a few, not millions
    for r in (pg, maria):
        assert 5_000 < r["per_query"]["instructions"] < 2_000_000, r
        assert r["per_query"]["estimated_cycles"] >= r["per_query"]["instructions"]
    assert copy["reused_from"] == "pg" and copy["per_query"] == pg["per_query"]
    report = run_cli("report", str(out), "--format", "json", timeout=300)
    assert report.returncode == 0, report.stderr

    # the same cell counted again by `dbperf profile` (the tier's queries: 3,000 point queries) agrees
    profiles = {}
    for target, record in (("pg", pg), ("maria", maria)):
        again = tmp_path / f"{target}.json"
        proc = run_cli("profile", str(exp), "--target", target, "--benchmark", "point-query", "--queries",
                       str(record["queries"]), "--mode", "simulated", "--json", str(again), timeout=2400)
        assert proc.returncode == 0, proc.stderr
        profiles[target] = p = json.loads(again.read_text())
        assert p["mode"] == "simulated" and p["queries"] == record["queries"] and p["per_query"]["i1_misses"] > 0
        assert p["per_query"]["instructions"] == pytest.approx(record["per_query"]["instructions"], rel=TOLERANCE), \
            target
        if target == "pg":
            assert "not timed natively" in proc.stdout
    # PostgreSQL: the backends' N-minus-0 windows under cachegrind, not timed natively, and not claimed to be
    p = profiles["pg"]
    assert "backend" in p["method"] and p["top_by_instructions"] and p["slowdown"]["native_s"] is None
    assert p["per_query"]["instructions"] < 1_000_000
    # MariaDB: callgrind with the pinned cache geometry, the connection held open, the server's own functions on top
    p = profiles["maria"]
    assert "callgrind" in p["tool"] and "--I1=32768,8,64" in p["tool"] and "held open" in p["method"]
    assert any("alloc_root" in f["function"] or "JOIN::" in f["function"] for f in p["top_by_instructions"])


@pytest.mark.unit
def test_a_server_run_says_why_it_has_no_cost_model(tmp_path):
    """The host's model is fitted on in-process SQLite: a run of servers only is not told to calibrate."""
    import msgspec

    from dbperf.records import SimulatedRecord
    from dbperf.stats.rqps_matrix import build_matrix
    from dbperf.storage.results import read_results
    from tests.synthetic import write_run
    run = write_run(tmp_path / "run", ["a", "b"], ["point-query"], 3, engine="postgres", engine_version="15.18",
                    server=True)
    with (run / "results.jsonl").open("ab") as f:
        for t in ("a", "b"):
            f.write(msgspec.json.encode(SimulatedRecord(type="simulated", target=t, benchmark="point-query",
                                                        tier="simulated", per_query={"instructions": 40_000.0,
                                                                                     "estimated_cycles": 52_000.0}))
                    + b"\n")
    meta, records, _ = read_results(run)
    m = build_matrix(meta, records)
    assert m.cost_model is None and "no cost model for servers" in (m.cost_model_note or "")
    assert "dbperf calibrate` makes one" not in (m.cost_model_note or "")
