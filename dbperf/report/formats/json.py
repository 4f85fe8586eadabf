"""JSON: the view's own document where it has one (its field names are an interface scripts read), else the view's
name, title, data and flat rows."""

from __future__ import annotations

import json

from dbperf.report.formats.format import Format
from dbperf.report.model import View


def render(view: View) -> str:
    doc = view.document if view.document is not None else {"view": view.name, "title": view.title, **view.data,
                                                              "rows": list(view.rows)}
    return json.dumps(doc, indent=2, default=str) + "\n"


FORMAT = Format("json", "json", render=render)
