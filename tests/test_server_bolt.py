"""BOLT for servers: which instrumentation each engine gets, which profile file is used (unit), and the reason, on a
small program that forks without exec the way PostgreSQL's postmaster does (unit, when bolt-16 is installed)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from dbperf.buildlab import server_bolt
from dbperf.errors import UserError


@pytest.mark.unit
def test_engines_that_fork_without_exec_are_instrumented_without_calls():
    assert server_bolt.instrument_options("postgres") == ["-instrument", "-instrumentation-file-append-pid",
                                                          "-instrument-calls=false"]
    assert server_bolt.instrument_options("mariadb") == ["-instrument", "-instrumentation-file-append-pid"]


@pytest.mark.unit
def test_the_profile_is_the_server_process_own_file(tmp_path):
    (tmp_path / "prof.100.fdata").write_text("1 main 10 1 main 20 0 7\n1 main 20 1 f 0 0 5\n")
    (tmp_path / "prof.101.fdata").write_text("1 main 10 1 main 20 0 3\n")  # a backend: an earlier snapshot
    own, facts = server_bolt.server_profile(tmp_path, 100, "t")
    assert own == tmp_path / "prof.100.fdata"
    assert facts == {"profile_files": 2, "profile_used": "prof.100.fdata", "profile_events": 12,
                     "other_files_max_events": 3}
    with pytest.raises(UserError, match=r"no profile of the server process itself \(prof.7.fdata among 2 "):
        server_bolt.server_profile(tmp_path, 7, "t")


# A parent that forks children which never exec; each child calls through function pointers to many targets (what
# makes bolt-16's runtime grow its shared indirect-call tables) and exits.
TARGETS = 64
FORKING = (
    "#include <stdio.h>\n#include <stdlib.h>\n#include <unistd.h>\n#include <sys/wait.h>\n"
    + "".join(f"static int f{i}(int x) {{ return x * {i + 1} ^ {i}; }}\n" for i in range(TARGETS))
    + f"static int (*fs[{TARGETS}])(int) = {{{', '.join(f'f{i}' for i in range(TARGETS))}}};\n"
    + """static int (*volatile s1)(int), (*volatile s2)(int);
static long work(int k) {
  long s = 0; unsigned r = 12345u * (k + 1);
  for (int i = 0; i < 100000; i++) {
    r = r * 1103515245u + 12345u;
    s1 = fs[(r >> 8) % 64]; s += s1(i);
    s2 = fs[(r >> 16) % 64]; s += s2(i);
  }
  return s;
}
int main(void) {
  int bad = 0, st;
  for (int k = 0; k < 8; k++)
    if (fork() == 0) { usleep(k * 300); exit(work(k) == 42); }
  while (wait(&st) > 0)
    if (!WIFEXITED(st)) bad++;
  printf("%d\\n", bad);
  return 0;
}
""")


@pytest.mark.unit
@pytest.mark.skipif(shutil.which(server_bolt.LLVM_BOLT) is None or shutil.which("gcc") is None,
                    reason="needs bolt-16 and gcc")
def test_a_forking_program_instrumented_as_the_lab_does_survives_and_its_parent_file_holds_everything(tmp_path):
    tools = server_bolt.bolt_tools()
    (tmp_path / "fork.c").write_text(FORKING)
    binary, instrumented, profile = tmp_path / "fork", tmp_path / "fork.inst", tmp_path / "prof"
    profile.mkdir()
    subprocess.run(["gcc", "-O2", "-fno-reorder-blocks-and-partition", "-Wl,-q", str(tmp_path / "fork.c"), "-o",
                    str(binary)], check=True, timeout=120)
    subprocess.run([tools["llvm_bolt"], str(binary), *server_bolt.instrument_options("postgres"),
                    f"-instrumentation-file={profile}/prof", "-o", str(instrumented)], check=True,
                   capture_output=True, timeout=300)
    for _ in range(2):
        proc = subprocess.Popen([str(instrumented)], stdout=subprocess.PIPE, text=True)
        out, _ = proc.communicate(timeout=300)
        assert proc.returncode == 0 and out.strip() == "0"  # no child killed by a signal
        own, facts = server_bolt.server_profile(profile, proc.pid, "fork")
        assert own == profile / f"prof.{proc.pid}.fdata"
        # The counters are shared: the parent, which exits last, wrote every child's work (8 x 100,000 loop trips).
        assert facts["profile_events"] >= facts["other_files_max_events"]
        assert facts["profile_events"] >= 8 * 100_000
        for p in Path(profile).iterdir():
            p.unlink()
