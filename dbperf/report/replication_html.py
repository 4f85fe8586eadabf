"""The replication lab's HTML report (`dbperf report DIR --format html`): the same summary and tables as the terminal
(replication_view.py), as a ChartPage the HTML format draws, with the charts of the run's kind of replication
(its view's `figures`: [Nielsen 2014-03-13]'s chart of trx/s applied against the worker count for MariaDB's binlog
replicas, binlog_view.py; for PostgreSQL's standbys, one bar per durability and mode, since there are no workers to
vary, and the replay lag over time of each measurement, streaming_view.py)."""

from __future__ import annotations

from dbperf import engines
from dbperf.records import ResultsRecord
from dbperf.report.model import Block, ChartPage, Row, Section
from dbperf.report.replication_view import kind_view, replication_summary, study_tables
from dbperf.run_meta import RunMeta


def replication_page(meta: RunMeta, records: list[ResultsRecord]) -> ChartPage:
    s = replication_summary(meta, records)
    tables, notes = study_tables(s)
    engine = engines.engine(s.get("engine") or engines.MARIADB.name).title
    sections = [Section(notes=(f"status {meta.status}",))]
    if s["apply"]:
        sections.append(Section(title="apply rate", anchor="apply-chart",
                                figures=tuple(kind_view(s.get("engine")).figures(s))))
    sections += [Section(title=t.title, anchor=f"table{i + 1}",
                         block=Block("", "", t.header, tuple(Row(r) for r in t.rows), t.text_columns))
                 for i, t in enumerate(tables)]
    if notes:
        sections.append(Section(title="notes", anchor="notes", notes=tuple(notes)))
    if not tables and not notes:
        sections.append(Section(notes=("no replication results yet",)))
    return ChartPage(f"dbperf replication lab ({engine}): {meta.experiment or ''}", tuple(sections))
