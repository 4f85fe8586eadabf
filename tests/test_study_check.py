"""`dbperf study check`: passes on the records as they are, and fails, in one line naming the defect, on each defect a
reviewer found in them, made in a copy of a record: a figure edited on the page, a word its evidence does not give,
a wrong run named, two CPUs under one figure, a figure on an unfit build left unmarked, a notebook section on it
without its banner, an internal word."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from dbperf.studies.check import check_record
from dbperf.studies.model import load_study
from dbperf.studies.record_page import notebook_path, record_page
from dbperf.studies.rerecord import rerecord
from dbperf.studies.study_record import read_record, record_text
from tests.conftest import run_cli

pytestmark = pytest.mark.unit

DOCS = Path(__file__).parent.parent / "docs" / "studies"
RECORDED = ("barriers-spin", "pgo-server", "read-mostly-globals", "release-regression", "replication", "tuning-ladder")


@pytest.fixture
def docs(tmp_path: Path) -> Path:
    copy = tmp_path / "studies"
    shutil.copytree(DOCS, copy)
    return copy


def _check(name: str, docs: Path) -> tuple[int, list[str]]:
    """As `dbperf study check NAME --docs DOCS` says it (in-process: a CLI call a defect would cost seconds each)."""
    checked = check_record(name, docs)
    return (1 if checked.defects else 0), [f"{checked.what}: {d}" for d in checked.defects]


def _edit_json(docs: Path, name: str, edit) -> None:
    """Edits the record's JSON, then writes its page again from it, so that only the edit is a defect."""
    path = docs / f"{name}.json"
    doc = json.loads(path.read_text())
    edit(doc)
    path.write_text(json.dumps(doc, indent=2) + "\n")
    (docs / f"{name}.md").write_text(record_page(load_study(name), read_record(path),
                                                 notebook_path(docs, name).is_file()))


def _figure(doc: dict, what: str) -> dict:
    return next(f for f in doc["figures"] if f["what"].startswith(what))


def test_the_records_on_record_pass_and_a_defect_fails_the_command(docs: Path) -> None:
    proc = run_cli("study", "check", "--docs", str(docs))
    assert proc.returncode == 0 and proc.stdout == "" and "Traceback" not in proc.stderr, proc.stdout
    assert [line.split(":")[1].strip() for line in proc.stderr.splitlines()] == [f"docs/studies/{n}" for n in RECORDED]
    notebook = docs / "notebooks" / "tuning-ladder.md"
    notebook.write_text(notebook.read_text() + "\nAs the seed's post says.\n")
    proc = run_cli("study", "check", "tuning-ladder", "--docs", str(docs))
    assert proc.returncode == 1 and len(proc.stdout.splitlines()) == 1 and "\"seed's\"" in proc.stdout
    assert proc.stderr.strip() == "dbperf: docs/studies/tuning-ladder: 14 figure(s), 1 defect(s)"


def test_a_figure_edited_on_the_page_is_found(docs: Path) -> None:
    page = docs / "tuning-ladder.md"
    page.write_text(page.read_text().replace("| 1.103 [", "| 1.203 [", 1))
    code, lines = _check("tuning-ladder", docs)
    assert code == 1 and len(lines) == 1 and "the page is not what its JSON gives" in lines[0] and "1.203" in lines[0]


def test_a_word_the_evidence_does_not_give_is_found(docs: Path) -> None:
    def holds(doc: dict) -> None:  # an unstable cell said to hold: the old range check on a point estimate
        f = _figure(doc, "+ tuned configuration: the cumulative gain")
        f["verdict"] = f["verdict"].replace("consistent:", "holds:")
    _edit_json(docs, "tuning-ladder", holds)
    code, lines = _check("tuning-ladder", docs)
    assert code == 1 and lines == [
        "docs/studies/tuning-ladder: figure 7 (+ tuned configuration: the cumulative gain): says 'holds' where its "
        "evidence gives 'consistent'"]


def test_a_figure_naming_the_wrong_run_is_found(docs: Path) -> None:
    def elsewhere(doc: dict) -> None:  # the MariaDB figures named as the PostgreSQL run's (the record's own)
        f = _figure(doc, "MariaDB point-query rQPS")
        f["run"] = {**f["run"], "host": {**doc["host"], "cpu_id": "family 25, model 1, stepping 1"},
                    "started": doc["started"], "ended": doc["ended"], "note": None}
    _edit_json(docs, "pgo-server", elsewhere)
    code, lines = _check("pgo-server", docs)
    assert code == 1
    assert any("its run's CPU (AMD EPYC, family 25, model 1, stepping 1) is not step mariadb's kept results' "
               "(AMD EPYC, family 25, model 17, stepping 1)" in line for line in lines)
    assert any("step mariadb's kept results started 2026-11-25T17:37:33+00:00, outside its run" in line
               for line in lines)


def test_a_figure_on_two_cpus_is_found(docs: Path) -> None:
    kept = docs / "pgo-server" / "postgres" / "meta.json"
    meta = json.loads(kept.read_text())
    meta["host"]["cpu_id"] = "family 25, model 1, stepping 1"  # as if the step had run on the other generation
    kept.write_text(json.dumps(meta))
    code, lines = _check("pgo-server", docs)
    assert code == 1 and any("is not step postgres's kept results'" in line for line in lines)


def test_a_figure_on_an_unfit_build_left_unmarked_is_found(docs: Path) -> None:
    def unmark(doc: dict) -> None:
        _figure(doc, "MariaDB point-query rQPS")["superseded"] = None
    _edit_json(docs, "pgo-server", unmark)
    code, lines = _check("pgo-server", docs)
    assert code == 1 and len(lines) == 1
    assert "rests on an unfit build and is not marked superseded: build 1a3860785c545e092d08" in lines[0]


def test_a_notebook_section_on_an_unfit_build_without_its_banner_is_found_and_put_back(docs: Path) -> None:
    notebook = docs / "notebooks" / "pgo-server.md"
    text = notebook.read_text()
    start = text.index('!!! warning "Superseded"\n    build 1a3860785c545e092d08')
    end = text.index("\n", text.index("\n", start) + 1)
    notebook.write_text(text[:start] + text[end + 1:])
    code, lines = _check("pgo-server", docs)
    assert code == 1 and len(lines) == 1 and "The MariaDB step at its own budget" in lines[0]
    rerecord("pgo-server", docs)
    code, lines = _check("pgo-server", docs)
    # The banner is back. Written again, the record opts into the latest catches, which it does not meet yet (its
    # headline's build is unfit, its notebook quotes numbers not on record, a step ran from a dirty tree).
    assert not any("carries no Superseded banner" in line for line in lines), lines


def test_an_internal_word_is_found(docs: Path) -> None:
    notebook = docs / "notebooks" / "tuning-ladder.md"
    notebook.write_text(notebook.read_text() + "\nAs the seed's post says (issue 46).\n")
    code, lines = _check("tuning-ladder", docs)
    assert code == 1 and len(lines) == 2 and "\"seed's\"" in lines[0] and "'issue 46'" in lines[1]


def test_a_headline_that_counts_more_than_the_run_decided_is_found(docs: Path) -> None:
    def more(doc: dict) -> None:  # the count a rule added after the run gives
        doc["headline"]["decided"] = 14
    _edit_json(docs, "pgo-server", more)
    code, lines = _check("pgo-server", docs)
    assert code == 1 and lines == [
        "docs/studies/pgo-server: headline of step mariadb: says decided 14 of 14, slower 0; its kept results give "
        "12 of 14, slower 0 (2 more by a later rule) under the run's rule"]


def test_a_record_written_again_is_what_it_was(docs: Path) -> None:
    before = (docs / "tuning-ladder.json").read_text()
    rerecord("tuning-ladder", docs)
    after = json.loads((docs / "tuning-ladder.json").read_text())
    assert [f["verdict"] for f in after["figures"]] == [f["verdict"] for f in json.loads(before)["figures"]]
    # what the record knew stays: each figure's run (its load averages, its times), the outputs it keeps
    assert [f.get("run") for f in after["figures"]] == [f.get("run") for f in json.loads(before)["figures"]]
    assert after.get("outputs") == json.loads(before).get("outputs")
    assert record_text(read_record(docs / "tuning-ladder.json")) == (docs / "tuning-ladder.json").read_text()


def test_bad_input_is_one_line(docs: Path) -> None:
    proc = run_cli("study", "check", "nosuch", "--docs", str(docs))
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1 and "no such study" in proc.stderr
    proc = run_cli("study", "record", "tuning-ladder", "--docs", str(docs))
    assert proc.returncode == 2 and "or --again" in proc.stderr


def test_a_figure_its_kept_step_output_does_not_give_is_found(docs: Path) -> None:
    """A diff's or a bisect's JSON is kept beside the record (record.put_step_outputs): its figures are read back from
    it, so an output edited after the record was written, or a record edited by hand, is found."""
    code, _ = _check("release-regression", docs)
    assert code == 0 and (docs / "release-regression" / "diff.json").is_file()
    assert (docs / "release-regression" / "bisect" / "bisect.json").is_file()
    kept = docs / "release-regression" / "diff.json"
    doc = json.loads(kept.read_text())
    doc["functions"][0]["function"] = "ut_delay"
    kept.write_text(json.dumps(doc))
    code, lines = _check("release-regression", docs)
    assert code == 1 and len(lines) == 1 and "what is kept of its steps gives 'ut_delay'" in lines[0]
    assert "the function whose cost per query changed most" in lines[0]


@pytest.mark.parametrize("kind", ["missing", "empty", "file"])
def test_docs_that_name_nothing_checkable_is_refused_in_one_line(tmp_path: Path, kind: str) -> None:
    """A typo in --docs would let `make lint` pass on nothing: a missing folder, a file, a folder with no record."""
    where = tmp_path / "studies"
    if kind == "empty":
        where.mkdir()
    elif kind == "file":
        where.write_text("x")
    proc = run_cli("study", "check", "--docs", str(where))
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    said = {"missing": "no such folder", "empty": "holds no study record", "file": "not a folder"}[kind]
    assert f"--docs {where}: {said}" in proc.stderr


def test_record_with_a_directory_and_again_names_that_mistake(docs: Path, tmp_path: Path) -> None:
    proc = run_cli("study", "record", "tuning-ladder", str(tmp_path), "--again", "--docs", str(docs))
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1
    assert f"give {tmp_path} or --again, not both" in proc.stderr


@pytest.mark.parametrize(("name", "what", "edited"), [
    ("pgo-server", "MySQL point-query rQPS, -O2 + PGO / -O2", ("0.700", 0.7)),
    ("barriers-spin", "state update, write barriers only (seqlock)", ("0.05 s / 1e8", 0.05)),
])
def test_a_figure_edited_in_the_json_with_its_page_written_again_is_found(docs: Path, name: str, what: str,
                                                                          edited: tuple[str, float]) -> None:
    """The page regenerated to match the edit, the word left as it was: only reading the figure back from what the
    record keeps of its steps (the results beside it, the probes' JSON) finds it."""
    path = docs / f"{name}.json"
    doc = json.loads(path.read_text())
    (figure,) = [f for f in doc["figures"] if f["what"] == what]
    was = figure["measured"]
    figure["measured"], figure["value"] = edited
    path.write_text(json.dumps(doc))
    record = read_record(path)
    (docs / f"{name}.md").write_text(record_page(load_study(name), record, notebook_path(docs, name).is_file()))
    defects = check_record(name, docs).defects
    assert any(f"({what}): the record says {edited[0]!r}, what is kept of its steps gives {was!r}" in d
               for d in defects), defects


def test_a_deleted_kept_output_is_found_and_one_never_kept_is_not(docs: Path) -> None:
    """The record lists the steps' JSON it keeps beside it (`outputs`): a deleted one is a defect (the file and each
    figure that read it), where a record that never kept it (written before outputs were) reads nothing back."""
    kept = docs / "barriers-spin" / "probes" / "probes.json"
    assert json.loads((docs / "barriers-spin.json").read_text())["outputs"] == {
        "probes": "barriers-spin/probes/probes.json"} and kept.is_file()
    kept.unlink()
    code, lines = _check("barriers-spin", docs)
    assert code == 1 and any(line.endswith("step probes: its output kept beside the record "
                                           f"({kept}) is missing") for line in lines), lines
    assert sum("its kept evidence is missing or unreadable" in line for line in lines) >= 1, lines
    _edit_json(docs, "barriers-spin", lambda doc: doc.pop("outputs"))  # as a record from before outputs were kept
    assert _check("barriers-spin", docs) == (0, [])



def test_a_word_on_an_interval_covering_under_90_percent_is_found(docs: Path) -> None:
    """A figure kept with "holds" whose interval is a min–max of 3 repeats (75%): no word rests on it, so the check
    says the evidence gives "consistent"; a record from before the coverage was kept apart is read from its
    interval's description the same way."""
    what = "full barriers against no barrier"

    def thin(doc: dict, keep_coverage: bool) -> None:
        figure = _figure(doc, what)
        assert figure["verdict"].startswith("holds")
        figure["interval"] = "min–max of 3 repeats (covers the median with 75.0%)"
        if keep_coverage:
            figure["coverage"] = 0.75
        else:
            figure.pop("coverage")

    for keep in (True, False):
        copy = docs.parent / f"copy-{keep}"
        shutil.copytree(docs, copy)
        _edit_json(copy, "barriers-spin", lambda doc, keep=keep: thin(doc, keep))
        code, lines = _check("barriers-spin", copy)
        # the record opts into the catches: no word at all on an interval under 90%
        assert code == 1 and any(f"({what}): says 'holds' on an interval that covers 75.0%" in line
                                 for line in lines), lines
