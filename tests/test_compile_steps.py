"""Compile steps by source directory, read from a configured build.ninja (buildlab/compile_steps.py): what the lean
MySQL recipe's savings were counted with."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from dbperf.buildlab.compile_steps import steps_by_directory
from tests.conftest import REPO

pytestmark = pytest.mark.unit

NINJA = """\
rule CXX_COMPILER__sql_main_Release
build sql/CMakeFiles/sql_main.dir/item.cc.o: CXX_COMPILER__sql_main_Release /s/sql/item.cc || order_deps
build sql/CMakeFiles/sql_main.dir/sql_yacc.cc.o: CXX_COMPILER__sql_main_Release /b/sql/sql_yacc.cc
build extra/icu/CMakeFiles/icuuc.dir/a.cpp.o: CXX_COMPILER__icuuc_Release /s/extra/icu/icu-77/source/common/a.cpp
build extra/icu/CMakeFiles/icuuc.dir/b.cpp.o: CXX_COMPILER__icuuc_Release /s/extra/icu/icu-77/source/common/b.cpp
build storage/ndb/x.c.o: C_COMPILER__ndbclient_static_Release /s/storage/ndb/src/x.c
build storage/csv/ha_tina.cc.o: CXX_COMPILER__csv_Release /s/storage/ha_tina.cc
build sql/mysqld: CXX_EXECUTABLE_LINKER__mysqld_Release sql/CMakeFiles/sql_main.dir/item.cc.o
build mysys/CMakeFiles/mysys.dir/my_alloc.cc.o: CXX_COMPILER__mysys_Release /s/mysys/my_alloc.cc
"""


def test_compile_edges_are_counted_by_directory_and_links_are_not():
    got = steps_by_directory(NINJA, "/s/")
    assert got == {"sql": 1, "(generated)": 1, "extra/icu": 2, "storage/ndb": 1, "storage": 1, "mysys": 1}


def test_the_script_prints_both_builds_side_by_side(tmp_path):
    (tmp_path / "a.ninja").write_text(NINJA)
    (tmp_path / "b.ninja").write_text("\n".join(line for line in NINJA.splitlines() if "/icu/" not in line))
    out = subprocess.run([sys.executable, str(REPO / "scripts" / "compile_steps.py"), "/s", str(tmp_path / "a.ninja"),
                          str(tmp_path / "b.ninja")], capture_output=True, text=True, timeout=60, cwd=REPO,
                         env={**os.environ, "PYTHONPATH": str(REPO)}, check=True).stdout.splitlines()
    assert out[0].split() == ["extra/icu", "2", "0"] and out[-1].split() == ["total", "7", "5"]
