"""The servers' own functions the probes time: read from the release's Debian source package, never typed; each
excerpt's lines found by its first line and its braces (or its last line) and checked against the SHA-256 the
catalog recorded, a changed text stopping the probe with one line; the extracted functions compile and run in
their harness (the e2e tier fetches the MySQL 9.7 and MariaDB 10.11 source packages, once)."""

from __future__ import annotations

import os
import re

import pytest

from dbperf.errors import UserError
from dbperf.probes.build import probe_binary
from dbperf.probes.catalog import FAMILIES
from dbperf.probes.run import run_probes
from dbperf.probes.server_code import (
    ONE_LINE,
    RELEASES,
    Excerpt,
    ServerRelease,
    checked_text,
    digest,
    excerpt_lines,
    extracted,
)
from dbperf.probes.server_source import server_files

SOURCE = """\
#include "x.h"
/* a comment */
static inline int f(int n) {
  if (n) {
    return 1;
  }
  return 0;
}
#if defined(X)
#define Y 1
#endif
int counter = 0;
"""


@pytest.mark.unit
def test_an_excerpt_runs_to_its_closing_brace_its_last_line_or_is_one_line():
    braced = Excerpt("f", "x.c", "static inline int f(int n) {", "")
    assert excerpt_lines(SOURCE, braced) == "".join(SOURCE.splitlines(keepends=True)[2:8])
    block = Excerpt("Y", "x.c", "#if defined(X)", "", end="#endif")
    assert excerpt_lines(SOURCE, block) == "#if defined(X)\n#define Y 1\n#endif\n"
    assert excerpt_lines(SOURCE, Excerpt("counter", "x.c", "int counter = 0;", "", end=ONE_LINE)) == \
        "int counter = 0;\n"


@pytest.mark.unit
@pytest.mark.parametrize(("text", "said"), [
    (SOURCE.replace("int counter = 0;", "static inline int f(int n) {"), "occurs 2 times"),
    (SOURCE.replace("static inline int f", "inline int f"), "occurs 0 times"),
    (SOURCE.replace("  return 0;\n}\n", "  return 0;\n"), "no end after line 3"),
])
def test_an_excerpt_not_found_as_catalogued_is_one_line(text, said):
    with pytest.raises(UserError, match=re.escape(said)) as e:
        excerpt_lines(text, Excerpt("f", "x.c", "static inline int f(int n) {", ""))
    assert "\n" not in str(e.value)


@pytest.mark.unit
def test_a_function_whose_text_changed_stops_the_probe_with_one_line(tmp_path):
    lines = excerpt_lines(SOURCE, Excerpt("f", "x.c", "static inline int f(int n) {", ""))
    release = ServerRelease("mysql", "9.7", (Excerpt("f", "x.c", "static inline int f(int n) {", digest(lines),
                                                     namespace="ut"),))
    (tmp_path / "x.c").write_text(SOURCE)
    text = checked_text(release, tmp_path, "9.7.2-4")
    assert text.startswith("/* f: x.c, mysql 9.7.2-4 */\nnamespace ut {\nstatic inline int f")
    assert text.endswith("}\n}\n")
    (tmp_path / "x.c").write_text(SOURCE.replace("return 1;", "return 2;"))
    with pytest.raises(UserError, match=r"mysql 9\.7\.2-4: f \(x\.c\) is not the text the probe catalog was written "
                                        r"against \(mysql 9\.7;") as e:
        checked_text(release, tmp_path, "9.7.2-4")
    assert "\n" not in str(e.value) and "server_code.py" in str(e.value)


@pytest.mark.unit
def test_the_catalog_names_every_function_the_issue_asks_for_with_a_checksum():
    named = {e.what for r in RELEASES.values() for e in r.excerpts}
    assert {"ut_delay", "ut::random_from_interval", "ut::random_from_interval_fast", "ut_rnd_interval",
            "my_cpu_init"} <= named
    assert all(re.fullmatch(r"[0-9a-f]{64}", e.sha256) for r in RELEASES.values() for e in r.excerpts)
    assert {f.server for f in FAMILIES.values() if f.server} == set(RELEASES)


def _fetched_or_skip(engine: str):
    try:
        return server_files(engine, RELEASES[engine].paths())
    except UserError as e:  # the archive cannot be reached from here: nothing to compare with
        pytest.skip(f"{engine} source not fetched: {e}")


@pytest.mark.e2e
@pytest.mark.parametrize("engine", sorted(RELEASES))
def test_the_extracted_functions_match_the_fetched_source_and_compile(engine):
    tree, provenance = _fetched_or_skip(engine)
    release = RELEASES[engine]
    assert provenance["version"].split(":")[-1].startswith(release.series + ".")
    for e in release.excerpts:  # the text of each function's lines, from the fetched file, is the catalogued one
        assert digest(excerpt_lines((tree / e.path).read_text(errors="replace"), e)) == e.sha256, e.what
    text, said = extracted(release)
    assert [f["what"] for f in said["functions"]] == [e.what for e in release.excerpts]
    assert "ut_delay(" in text and said["package"] in ("mysql-9.7", "mariadb")
    (family,) = [f for f in FAMILIES.values() if f.server == engine]
    exe, cmd = probe_binary(family)
    assert os.access(exe, os.X_OK) and "-O2" in cmd and (exe.parent / "extracted.h").read_text() == text


@pytest.mark.e2e
@pytest.mark.parametrize(("engine", "prngs"), [
    ("mysql", {"ut::random_from_interval(0, 6)", "ut::random_from_interval_fast(0, 6)"}),
    ("mariadb", {"ut_rnd_interval(7)"}),
])
def test_the_servers_own_functions_are_timed_in_the_probe_harness(engine, prngs):
    _fetched_or_skip(engine)
    (family,) = [f.name for f in FAMILIES.values() if f.server == engine]
    result = run_probes([family], repeats=1, scale=0.001)["families"][family]
    assert result["server_source"]["engine"] == engine
    figures = result["figures"]
    assert {f["name"] for f in figures if f["group"] == "prng"} == prngs
    delays = sorted((f["x"], f["ns_per_op"]["median"], f["multiplier"]) for f in figures if f["group"] == "ut_delay")
    assert [x for x, _, _ in delays] == [1, 2, 3, 4, 5, 6] and all(ns > 0 for _, ns, _ in delays)
    assert {f["name"] for f in figures if f["group"] == "ut_delay"} == {f"ut_delay({x})" for x in range(1, 7)}
    assert {m for _, _, m in delays} <= {50, 25}  # MySQL's 50; MariaDB's 200/4 or 100/4
