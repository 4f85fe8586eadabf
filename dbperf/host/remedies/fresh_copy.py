"""fresh-copy: a fresh copy of the loaded data before every cell, reads too (write cells get one anyway): each cell's
file is newly written, its pages newly placed in the page cache, instead of one copy every read cell shares. Not
with `writes = "cumulative"`, where reads must see the writes before them."""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from dbperf.host.remedies import CellPlace, Remedy


def _prepare(place: CellPlace) -> dict[str, Any]:
    if place.restored:  # a write cell's own restore made the fresh copy already
        return {"restored": True, "copy_s": 0.0}
    started = time.monotonic()
    place.restore()
    return {"restored": True, "copy_s": round(time.monotonic() - started, 4)}


def _conflict(facts: Mapping[str, Any]) -> str | None:
    return "writes = \"cumulative\": reads must see the writes before them" if facts.get("cumulative") else None


REMEDY = Remedy(name="fresh-copy", what="a fresh copy of the loaded data before every cell, reads included",
                prepare=_prepare, conflict=_conflict, stage=0)
