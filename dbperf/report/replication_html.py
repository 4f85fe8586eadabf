"""The replication lab's HTML report (`dbperf report DIR --format html`): the same summary and tables as the terminal
(replication_view.py), on the self-contained page of html_page.py, with the charts of the run's kind of replication
(its view's `figures`: [Nielsen 2014-03-13]'s chart of trx/s applied against the worker count for MariaDB's binlog
replicas, binlog_view.py; for PostgreSQL's standbys, one bar per durability and mode, since there are no workers to
vary, and the replay lag over time of each measurement, streaming_view.py)."""

from __future__ import annotations

from dbperf import engines
from dbperf.records import ResultsRecord
from dbperf.report.html_page import Page, table, text
from dbperf.report.replication_view import kind_view, replication_summary, study_tables
from dbperf.run_meta import RunMeta


def replication_html(meta: RunMeta, records: list[ResultsRecord]) -> str:
    s = replication_summary(meta, records)
    sections, notes = study_tables(s)
    engine = engines.engine(s.get("engine") or engines.MARIADB.name).title
    page = Page(f"dbperf replication lab ({engine}): {meta.experiment or ''}")
    page.add(f'<p class="note">status {text(meta.status)}</p>')
    if s["apply"]:
        page.section("apply-chart", "apply rate")
        for figure in kind_view(s.get("engine")).figures(s):
            page.add(page.figure(figure))
    for i, sec in enumerate(sections):
        page.section(f"table{i + 1}", sec.title)
        page.add(table(sec.header, sec.rows, sec.text_columns))
    if notes:
        page.section("notes", "notes")
        page.add("".join(f'<p class="note">{text(n)}</p>'.replace("\n", "<br>") for n in notes))
    if not sections and not notes:
        page.add('<p class="note">no replication results yet</p>')
    return page.render()
