"""Where an engine registers (issue 61): its descriptor (dbperf/engines/<engine>.py and its line in ENGINES), its
server lifecycle and its build recipe, each a file found by import (servers/<engine>.py's SERVER,
buildlab/recipes/<engine>.py's RECIPE), and its driver connection (Rust). The found files and the descriptors agree."""

from __future__ import annotations

import pytest

from dbperf import engines
from dbperf.buildlab.recipes import recipes
from dbperf.servers.lifecycle import LabServer
from dbperf.servers.registry import LAB_SERVERS

pytestmark = pytest.mark.unit


def test_every_server_engine_has_its_lifecycle_found_in_a_file_of_its_own():
    assert set(LAB_SERVERS) == set(engines.SERVER_NAMES)
    for name, cls in LAB_SERVERS.items():
        assert issubclass(cls, LabServer) and cls.engine == name
        assert cls.__module__ == f"dbperf.servers.{name}"


def test_the_shared_lifecycle_bases_are_not_engines():
    # mysql_family.py's base and lifecycle.py's classes hold no SERVER: only an engine's own module is found
    assert {cls.__name__ for cls in LAB_SERVERS.values()} == {"PostgresServer", "MariaDBServer", "MySQLServer"}


def test_every_engine_that_builds_from_source_has_its_recipe_and_a_lab_server():
    buildable = {e.name for e in engines.ENGINES.values() if e.builds_from_source}
    assert set(recipes()) == buildable and buildable <= set(LAB_SERVERS)
