"""`dbperf report`'s views come from one table of view builders (usecases/report.py VIEWS): a view name is looked up
once, the builder given the run as read; the use case returns the view and prints nothing, the CLI sends it out."""

from __future__ import annotations

import pytest

from dbperf.report.intervals_view import intervals_view
from dbperf.report.outgoing import ReportView
from dbperf.report.resources_view import resources_view
from dbperf.storage.results import read_results
from dbperf.usecases import report
from tests.synthetic import write_run

pytestmark = pytest.mark.unit


@pytest.fixture
def run(tmp_path):
    return write_run(tmp_path / "run", ["a", "b"], ["point-query", "range-sum"], 3)


def test_the_table_holds_every_view_in_the_order_messages_list_them():
    assert list(report.VIEWS) == ["run", "resources", "intervals", "ladder"]
    assert [name for name, builder in report.VIEWS.items() if builder.says_status] == ["run"]


@pytest.mark.parametrize("name", ["run", "resources", "intervals", "ladder"])
def test_each_view_name_is_built_by_its_builder_and_nothing_is_printed(run, name, capsys):
    made = report.report_view(run, name)
    assert isinstance(made, ReportView) and made.directory == run
    view = made.view()
    assert made.view() is view  # built once, when first drawn or written
    assert capsys.readouterr() == ("", "")  # the use case returns; the CLI prints
    meta, records, _ = read_results(run)
    direct = {"resources": lambda: resources_view(meta, records), "intervals": lambda: intervals_view(records)}
    if name in direct:
        assert view == direct[name]()
    assert view.sections


def test_the_run_and_the_ladder_views_differ_and_follow_the_aggregate(run):
    run_view = report.report_view(run, "run").view()
    ladder = report.report_view(run, "ladder").view()
    assert run_view.name != ladder.name
    assert report.report_view(run, "run", aggregate="trimmed").view() != run_view


def test_a_view_name_the_table_does_not_hold_is_a_programming_error_naming_the_views(run):
    with pytest.raises(ValueError, match=r"no report view 'glance' \(views: run, resources, intervals, ladder\)"):
        report.report_view(run, "glance")


@pytest.mark.parametrize(("name", "noted"), [("run", True), ("resources", False), ("ladder", False)])
def test_only_the_run_view_says_a_status_read_back(tmp_path, name, noted):
    died = write_run(tmp_path / "died", ["a", "b"], ["point-query"], 3, meta_extra={"status": "running"})
    (died / ".lock").write_text("4242\n")  # left by a lab that died: nobody holds it
    made = report.report_view(died, name)
    assert any("the lab died" in n for n in made.notes) == noted
