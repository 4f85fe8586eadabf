"""`dbperf build --versions sqlite --scan N` over crate releases, some too old to bundle SQLite: the scan stops at
the first such release and says so, instead of aborting (buildlab/sqlite_source.py). Nothing fetched."""

from __future__ import annotations

import pytest

from dbperf.buildlab import sqlite_source
from dbperf.buildlab.sqlite_source import NoAmalgamation, SqliteSource, scan_versions

pytestmark = pytest.mark.unit


def test_a_scan_stops_at_the_first_crate_without_an_amalgamation(monkeypatch):
    monkeypatch.setattr(sqlite_source, "crate_versions", lambda: ["0.35.0", "0.34.0", "0.5.0", "0.4.0"])
    monkeypatch.setattr(sqlite_source, "known_versions", lambda: {"0.35.0": "3.54.1"})
    fetched: list[str] = []

    def fetch(crate: str) -> SqliteSource:
        fetched.append(crate)
        if crate in ("0.5.0", "0.4.0"):
            raise NoAmalgamation(f"libsqlite3-sys {crate} bundles no SQLite amalgamation")
        return SqliteSource("3.53.0", "libsqlite3-sys", crate, "", "/x", "")

    monkeypatch.setattr(sqlite_source, "fetch", fetch)
    assert scan_versions(60) == ({"0.35.0": "3.54.1", "0.34.0": "3.53.0"}, "0.5.0")
    assert fetched == ["0.34.0", "0.5.0"]  # the known one not fetched again; nothing older than the first without
    assert scan_versions(2) == ({"0.35.0": "3.54.1", "0.34.0": "3.53.0"}, None)
