"""The replication lab's report as a View: the study tables and notes of replication_view.py, any format; JSON the
summary under `replication` (with the run's status, skipped lines and meta), CSV the apply rows, HTML the page with
[Nielsen 2014-03-13]'s chart (replication_html.py)."""

from __future__ import annotations

from typing import Any

from dbperf.records import ResultsRecord
from dbperf.report.model import Block, Row, Section, View
from dbperf.report.replication_html import replication_page
from dbperf.report.replication_view import replication_summary, study_tables
from dbperf.run_meta import RunMeta, meta_dict

CSV_FIELDS = ("durability", "commit_wait_count", "commit_wait_usec", "benchmark", "client_threads", "workers", "mode",
              "transactions", "trx_per_s", "trx_per_s_min", "trx_per_s_max", "n", "vs_serial", "primary_trx_per_s")


def replication_view(meta: RunMeta, records: list[ResultsRecord], skipped: list[dict[str, Any]]) -> View:
    s = replication_summary(meta, records)
    tables, notes = study_tables(s)
    sections = tuple(Section(title=t.title, block=Block("", "", t.header, tuple(Row(r) for r in t.rows),
                                                        t.text_columns)) for t in tables)
    return View("report", "replication lab", sections,
                subtitle=f"{meta.experiment or ''}  status {meta.status}",
                notes=tuple(notes) if sections or notes else ("no replication results yet",),
                rows=tuple({f: row[f] for f in CSV_FIELDS} for row in s["apply"]), columns=CSV_FIELDS,
                document={"status": meta.status, "replication": s, "cells": [], "skipped_lines": skipped,
                          "meta": meta_dict(meta)},
                page=lambda: replication_page(meta, records))
