"""CSV: one line per flat record of the view (`View.rows`), columns in the order the records first name them."""

from __future__ import annotations

import csv
import io

from dbperf.report.formats.format import Format
from dbperf.report.model import View


def render(view: View) -> str:
    columns: dict[str, None] = dict.fromkeys(view.columns)
    for row in view.rows:
        columns.update(dict.fromkeys(row))
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=list(columns), lineterminator="\n", restval="")
    writer.writeheader()
    writer.writerows(view.rows)
    return buf.getvalue()


FORMAT = Format("csv", "csv", render=render)
