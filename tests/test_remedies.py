"""Noise remedies (issue 50, dbperf/host/remedies/): named in the experiment file, applied before each cell of a SQLite
target, recorded in the cell's record with what the lab saw of them; `remedies = "none"` is today's run."""

from __future__ import annotations

import json

import pytest

from dbperf.errors import UserError
from dbperf.experiment.spec import parse_experiment
from dbperf.host import remedies
from dbperf.host.process_variants import kernel_thp_setting
from dbperf.host.remedies.pagecache_buffer import cache_pages
from tests.conftest import run_cli

RUN = '[run]\nbenchmarks = ["point-query"]\ntable_size = 3000\ntime = "0.3s"\nwarmup = "0.1s"\nrepeats = 2\n'


def _parse(write_experiment, body: str):
    return parse_experiment(write_experiment(body))


@pytest.mark.unit
def test_every_remedy_is_found_by_import_and_the_defaults_never_change_the_engine():
    assert {"heap-thp", "warm-file", "cold-file", "fresh-copy", "aslr-off", "cpu-free", "cpu-other",
            "pagecache-buffer"} <= set(remedies.NAMES)
    assert all(not remedies.remedy(n).changes_engine for n in remedies.DEFAULTS)
    assert remedies.remedy("pagecache-buffer").changes_engine


@pytest.mark.unit
def test_run_remedies_are_inherited_and_a_target_replaces_them(write_experiment):
    e = _parse(write_experiment, RUN + 'remedies = ["heap-thp", "warm-file"]\n'
               '[[target]]\nname = "a"\n[[target]]\nname = "b"\nremedies = "none"\n'
               '[[target]]\nname = "c"\nremedies = ["aslr-off"]\n')
    assert {t.name: t.remedies for t in e.targets} == {"a": ("heap-thp", "warm-file"), "b": (), "c": ("aslr-off",)}


@pytest.mark.unit
@pytest.mark.parametrize(("body", "message"), [
    (RUN + 'remedies = ["warp-drive"]\n[[target]]\nname = "a"\n', r"unknown remedy 'warp-drive' \(known: "),
    (RUN + 'remedies = "all"\n[[target]]\nname = "a"\n', r"expected a list of remedies"),
    (RUN + 'remedies = ["warm-file", "cold-file"]\n[[target]]\nname = "a"\n', r"warm-file and cold-file cannot be"),
    (RUN + 'writes = "cumulative"\n[[target]]\nname = "a"\nremedies = ["fresh-copy"]\n',
     r"fresh-copy: writes = \"cumulative\": reads must see the writes"),
    (RUN + '[[target]]\nname = "a"\nhugepages = "off"\nremedies = ["heap-thp"]\n',
     r"heap-thp: the target sets its own hugepages"),
    (RUN + 'remedies = ["heap-thp", "heap-thp"]\n[[target]]\nname = "a"\n', r"a remedy is named twice"),
])
def test_bad_remedies_are_one_line_errors(write_experiment, body, message):
    with pytest.raises(UserError, match=message):
        _parse(write_experiment, body)


@pytest.mark.unit
def test_a_server_target_does_not_take_the_runs_remedies_and_says_why(write_experiment):
    e = _parse(write_experiment, RUN + 'remedies = ["heap-thp"]\n[[target]]\nname = "lite"\n'
               '[[target]]\nname = "pg"\nengine = "postgres"\n')
    pg = next(t for t in e.targets if t.name == "pg")
    assert pg.remedies == () and list(pg.remedies_not_applied) == ["heap-thp"]
    assert "the driver runs SQLite, not a server" in pg.remedies_not_applied["heap-thp"]
    with pytest.raises(UserError, match=r"target 'pg'.remedies: heap-thp: it acts on the process"):
        _parse(write_experiment, RUN + '[[target]]\nname = "pg"\nengine = "postgres"\nremedies = ["heap-thp"]\n')


@pytest.mark.unit
def test_the_page_cache_buffer_holds_the_cache_the_settings_ask_for():
    assert cache_pages(()) == 500  # cache_size = -2000 KiB of 4 KiB pages
    assert cache_pages((("cache_size", "1000"),)) == 1000
    assert cache_pages((("cache_size", "-8000"), ("page_size", "8192"))) == 1000


@pytest.mark.unit
def test_remedies_are_applied_in_stage_order_and_say_what_they_did(tmp_path):
    database = tmp_path / "work.db"
    database.write_bytes(b"x" * 10_000)
    order: list[str] = []

    def restore() -> None:
        order.append("restore")
        database.write_bytes(b"y" * 20_000)

    place = remedies.CellPlace(database, restore, frozenset({0}), frozenset({0, 1}))
    applied = remedies.apply_remedies(("warm-file", "fresh-copy", "cpu-other", "aslr-off"), place)
    assert order == ["restore"]
    assert applied.evidence["warm-file"]["read_bytes"] == 20_000  # read after the fresh copy was made
    assert applied.cpus == frozenset({1}) and applied.prefix[-1] == "-R"
    assert remedies.apply_remedies(("cpu-free",), place).cpus is None
    written = remedies.CellPlace(database, restore, None, frozenset({0}), restored=True)  # a write cell's restore
    assert remedies.apply_remedies(("fresh-copy",), written).evidence["fresh-copy"]["restored"] is True
    assert order == ["restore"]  # not copied twice


@pytest.mark.e2e
def test_remedies_are_applied_and_recorded_and_none_is_todays_run(write_experiment, tmp_path):
    body = (RUN + '[[target]]\nname = "today"\nremedies = "none"\n'
            '[[target]]\nname = "remedied"\nremedies = ["heap-thp", "warm-file", "fresh-copy", "aslr-off"]\n'
            '[[target]]\nname = "buffer"\nremedies = ["pagecache-buffer"]\n')
    out = tmp_path / "out"
    proc = run_cli("run", str(write_experiment(body)), "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    cells = [r for r in map(json.loads, (out / "results.jsonl").read_text().splitlines()) if r.get("type", "cell") ==
             "cell"]
    assert cells and all(r["status"] == "ok" for r in cells), cells
    by_target: dict[str, list[dict]] = {}
    for r in cells:
        by_target.setdefault(r["target"], []).append(r)
    assert all("remedies" not in r for r in by_target["today"])  # today's record, unchanged
    assert all("page_cache" not in r["result"] or r["result"]["page_cache"] is None for r in by_target["today"])
    for r in by_target["remedied"]:
        done = r["remedies"]
        assert set(done) == {"heap-thp", "warm-file", "fresh-copy", "aslr-off"}
        assert done["warm-file"]["read_bytes"] > 200_000  # 3,000 rows of sbtest: the whole file, not a page
        assert done["fresh-copy"]["restored"] is True
        assert done["heap-thp"]["anon_huge_kb"] is not None and done["heap-thp"]["kernel_thp"] == kernel_thp_setting()
    for r in by_target["buffer"]:
        buffer = r["remedies"]["pagecache-buffer"]
        assert buffer["slots"] == 516 and buffer["slot_bytes"] >= 4096
        assert 0 < buffer["used_slots_high"] <= buffer["slots"]  # SQLite took its pages from the buffer
        # what the kernel backed the buffer with, read from the process's own mappings: whole 2 MB pages (how many
        # depends on what free huge pages the kernel had: not asserted, the record says it)
        assert buffer["huge_kb"] is not None and buffer["huge_kb"] % 2048 == 0, buffer
    meta = json.loads((out / "meta.json").read_text())
    facts = {t["name"]: t.get("remedies") for t in meta["targets"]}
    assert facts["today"] is None and facts["buffer"] == ["pagecache-buffer"]
    report = run_cli("report", str(out))
    assert report.returncode == 0 and "remedies=pagecache-buffer" in report.stdout, report.stdout + report.stderr


@pytest.mark.e2e
def test_aslr_off_runs_the_driver_without_randomisation(tmp_path):
    """The prefix the remedy adds really turns randomisation off for what it starts (the personality flag)."""
    import subprocess
    prefix = remedies.remedy("aslr-off").prefix
    personality = subprocess.run([*prefix, "cat", "/proc/self/personality"], capture_output=True, text=True,
                                 check=True).stdout.strip()
    assert int(personality, 16) & 0x0040000  # ADDR_NO_RANDOMIZE

