"""`dbperf build --versions sqlite --scan N` over crate releases, some too old to bundle SQLite: the scan stops at
the first such release and says so, instead of aborting (buildlab/sqlite_source.py). Nothing fetched."""

from __future__ import annotations

import pytest

from dbperf.buildlab import sqlite_source
from dbperf.buildlab.sqlite_source import NoAmalgamation, SqliteSource, scan_versions


@pytest.mark.unit
def test_a_scan_stops_at_the_first_crate_without_an_amalgamation(monkeypatch):
    monkeypatch.setattr(sqlite_source, "crate_versions", lambda: ["0.35.0", "0.34.0", "0.5.0", "0.4.0"])
    monkeypatch.setattr(sqlite_source, "known_versions", lambda: {"0.35.0": "3.54.1"})
    fetched: list[str] = []

    def fetch(crate: str, announce=None) -> SqliteSource:
        fetched.append(crate)
        if crate in ("0.5.0", "0.4.0"):
            raise NoAmalgamation(f"libsqlite3-sys {crate} bundles no SQLite amalgamation")
        return SqliteSource("3.53.0", "libsqlite3-sys", crate, "", "/x", "")

    monkeypatch.setattr(sqlite_source, "fetch", fetch)
    assert scan_versions(60) == ({"0.35.0": "3.54.1", "0.34.0": "3.53.0"}, "0.5.0")
    assert fetched == ["0.34.0", "0.5.0"]  # the known one not fetched again; nothing older than the first without
    assert scan_versions(2) == ({"0.35.0": "3.54.1", "0.34.0": "3.53.0"}, None)


@pytest.mark.network
def test_a_crate_not_yet_downloaded_is_said_first_with_its_size_and_where_it_is_kept(tmp_path, monkeypatch):
    """cargo fetches the crate into its registry: a version cargo does not hold yet is announced (what, how large by
    the download server's Content-Length, where kept); once held, nothing is said."""
    monkeypatch.setenv("CARGO_HOME", str(tmp_path / "cargo"))
    monkeypatch.setenv("DBPERF_CACHE", str(tmp_path / "cache"))
    said: list[str] = []
    first = sqlite_source.fetch("0.39.1", said.append)
    assert first.sqlite_version and len(said) == 1, said
    assert said[0].startswith("downloading the crate libsqlite3-sys 0.39.1 (") and " MB) from crates.io" in said[0]
    assert said[0].endswith(f"kept in {tmp_path / 'cargo'}/registry")
    sqlite_source.fetch("0.39.1", said.append)
    assert len(said) == 1  # held by cargo now: no download, nothing said

