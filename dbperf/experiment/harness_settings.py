"""The [run] keys of harness fidelity (`writes`, `post_write`, `post_write_wait`), turned into Experiment fields."""

from __future__ import annotations

from typing import Any

HARNESS_WAIT_BASE_S = 60.0
HARNESS_WAIT_PER_MILLION_ROWS_S = 1.0
HARNESS_WAIT_MAX_S = 1200.0


def harness_wait_s(rows: int) -> float:
    """The harness's sleep after its post-write step: 60 s + 1 s per million rows, at most 1200 s
    ([Callaghan, mytools])."""
    return min(HARNESS_WAIT_BASE_S + HARNESS_WAIT_PER_MILLION_ROWS_S * rows / 1e6, HARNESS_WAIT_MAX_S)


def harness_settings(values: dict[str, Any], rows: int) -> dict[str, Any]:
    """`values` is [run] as checked by the key table; `rows` = tables × table_size."""
    writes = values.get("writes", "restore")
    wait = values.get("post_write_wait", "harness")
    return {
        "writes": writes,
        "post_write": values.get("post_write", writes == "cumulative"),
        "post_write_wait_s": harness_wait_s(rows) if wait == "harness" else float(wait),
    }
