"""The partial PGO build's compiler launcher (buildlab/profile_launcher.py): which source a compile compiles, where it
lies against the source tree and the build folder, and what runs for it (the stage's flags, or ccache as the
base build ran it)."""

from __future__ import annotations

import pytest

from dbperf.buildlab.profile_launcher import command, profiled, scope_path, source_of

pytestmark = pytest.mark.unit

SRC, BUILD = "/nonexistent-src", "/nonexistent-src/lab-build"
STAGE: dict[str, object] = {"source": SRC, "build": BUILD, "directories": ["sql", "storage/innobase/"],
                            "flags": ["-fprofile-generate=/p", "-ftest-coverage"], "ccache": "/usr/bin/ccache"}
GCC = ["/usr/bin/g++", "-DMYSQL_SERVER", "-I/nonexistent-src/include", "-O2", "-MD", "-MT", "x.o", "-MF", "x.o.d",
       "-o", "x.o"]


@pytest.mark.parametrize(("source", "relative"), [
    (f"{SRC}/sql/item.cc", "sql/item.cc"),
    ("../sql/item.cc", "sql/item.cc"),  # relative to the compile's folder (the build folder)
    (f"{BUILD}/sql/sql_yacc.cc", "sql/sql_yacc.cc"),  # generated into the build folder: its path there
    ("sql/sql_yacc.cc", "sql/sql_yacc.cc"),
    (f"{SRC}/sqlx/a.cc", "sqlx/a.cc"),
    (f"{SRC}/storage/myisam/../innobase/btr/btr0cur.cc", "storage/innobase/btr/btr0cur.cc"),
    ("/usr/share/x/a.c", None),  # outside both
    (f"{SRC}-other/sql/a.cc", None),  # a sibling whose name starts as the tree's
    ("../../elsewhere/sql/a.cc", None),
])
def test_a_sources_path_is_relative_to_the_source_or_to_the_build_folder(source, relative):
    assert scope_path(source, BUILD, SRC, BUILD) == relative


@pytest.mark.parametrize(("relative", "expected"), [
    ("sql/item.cc", True), ("sql/sql_yacc.cc", True), ("storage/innobase/btr/btr0cur.cc", True),
    ("sqlx/a.cc", False), ("sql.cc", False), ("storage/innobase_x/a.cc", False), ("storage/myisam/mi_open.c", False),
    ("mysys/my_alloc.cc", False), (None, False),
])
def test_only_whole_path_components_name_a_profile_directory(relative, expected):
    assert profiled(relative, ["sql", "storage/innobase/"]) is expected


def test_the_source_is_the_argument_after_dash_c():
    assert source_of([*GCC, "-c", f"{SRC}/sql/item.cc"]) == f"{SRC}/sql/item.cc"
    assert source_of(["/usr/bin/g++", "x.o", "-o", "mysqld"]) is None  # a link
    assert source_of(["/usr/bin/gcc", "-c"]) is None
    assert source_of(["/usr/bin/gcc", "-c", "-o", "x.o"]) is None


def test_a_profiled_compile_gets_the_stages_flags_and_any_other_runs_as_the_base_through_ccache():
    hot = [*GCC, "-c", f"{SRC}/sql/item.cc"]
    assert command(STAGE, hot, BUILD) == [*hot, "-fprofile-generate=/p", "-ftest-coverage"]
    generated = [*GCC, "-c", f"{BUILD}/storage/innobase/pars0grm.cc"]
    assert command(STAGE, generated, BUILD)[-2:] == ["-fprofile-generate=/p", "-ftest-coverage"]
    for other in ([*GCC, "-c", f"{SRC}/sqlx/a.cc"], [*GCC, "-c", f"{SRC}/strings/ctype.cc"],
                  ["/usr/bin/g++", "a.o", "-o", "mysqld"]):
        assert command(STAGE, other, BUILD) == ["/usr/bin/ccache", *other]
    assert command({**STAGE, "ccache": ""}, [*GCC, "-c", f"{SRC}/vio/vio.cc"], BUILD) == [*GCC, "-c",
                                                                                         f"{SRC}/vio/vio.cc"]
