"""Where the lab keeps what it fetches and builds: $DBPERF_CACHE, else ~/.cache/dbperf."""

from __future__ import annotations

import os
from pathlib import Path


def cache_root() -> Path:
    root = Path(os.environ.get("DBPERF_CACHE") or Path.home() / ".cache" / "dbperf")
    root.mkdir(parents=True, exist_ok=True)
    return root
