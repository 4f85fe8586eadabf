"""dbperf layout: the static map, the findings logic, bad input (unit); the demo program's report under valgrind
and Debian's mariadbd static map (e2e)."""

from __future__ import annotations

import json
import shutil
import struct
import subprocess
import sys
from pathlib import Path

import pytest
from elftools.elf.constants import SH_FLAGS
from elftools.elf.elffile import ELFFile

from dbperf.cli import main
from dbperf.layout.check import unattributed_line
from dbperf.layout.dynamic import NO_SECTION, Access, DynamicCounts, parse_filter_output, parse_filter_output_many
from dbperf.layout.findings import findings, linker_script
from dbperf.layout.fix import work_dir
from dbperf.layout.static_map import GlobalObject, StaticMap, static_map
from tests.conftest import run_cli

MARIADBD = Path("/usr/sbin/mariadbd")


def _elf_header(machine: int) -> bytes:
    """A 64-bit little-endian ELF header with no sections and no segments."""
    ident = b"\x7fELF" + bytes([2, 1, 1, 0]) + bytes(8)
    return ident + struct.pack("<HHIQQQIHHHHHH", 2, machine, 1, 0, 0, 0, 0, 64, 56, 0, 64, 0, 0)


def _map(objects: list[GlobalObject]) -> StaticMap:
    return StaticMap("/x/app", "EM_X86_64", "ET_DYN", 64, ".symtab", objects, [(0, 0, 0x10000)], "", "")


def _obj(name: str, address: int, size: int = 8, stores: int = 0) -> GlobalObject:
    return GlobalObject(name, address, size, ".data", "data", "GLOBAL", source=f"app.c:{address & 0xff}",
                        store_sites=stores)


def _counts(per: dict[str, dict[int, tuple[int, int]]]) -> DynamicCounts:
    return DynamicCounts("simulated", "test", ["app"], 0.0,
                         {n: {t: Access(*la) for t, la in th.items()} for n, th in per.items()})


def _in_process(monkeypatch, capsys, *args: str) -> tuple[int, str]:
    """The CLI in this process (a subprocess costs seconds of start-up on a loaded machine): exit code, stderr."""
    monkeypatch.setattr(sys, "argv", ["dbperf", *args])
    monkeypatch.setattr("dbperf.cli.interrupts.install", lambda: None)  # leave pytest's signal handlers alone
    with pytest.raises(SystemExit) as exited:
        main()
    return int(exited.value.code or 0), capsys.readouterr().err


@pytest.mark.unit
def test_only_the_line_with_a_hot_written_object_and_a_read_mostly_one_read_by_another_thread_is_a_finding():
    objs = [_obj("flag", 0x4000), _obj("rnd", 0x4008, stores=1),       # MySQL bug #97777's pattern
            _obj("table", 0x4040, 64),                                   # read-mostly alone
            _obj("ops", 0x4080, stores=1),                               # hot-written alone
            _obj("config", 0x40c0, stores=1), _obj("limit", 0x40c8),     # written once, beside a read one
            _obj("own", 0x4100, stores=1), _obj("mine", 0x4108)]         # written and read by the same thread
    counts = _counts({"flag": {3: (50_000, 0)}, "rnd": {2: (200_000, 200_000)}, "table": {3: (50_000, 0)},
                      "ops": {2: (200_000, 200_000)}, "config": {1: (0, 1)}, "limit": {3: (50_000, 0)},
                      "own": {2: (0, 10_000)}, "mine": {2: (10_000, 0)}})
    found = findings(_map(objs), counts)
    assert [f.line for f in found] == ["0x4000"]
    f = found[0]
    assert f.objects == ["flag", "rnd"]
    assert f.cost == 50_000 * 200_000
    assert [r["name"] for r in f.read_mostly] == ["flag"] and [w["name"] for w in f.hot_written] == ["rnd"]
    assert "app.c:0" in f.remedy and ".data.read_mostly" in f.remedy and "aligned(64)" in f.remedy


@pytest.mark.unit
def test_findings_are_ranked_by_cost_and_an_object_spanning_lines_is_in_each():
    objs = [_obj("a", 0x1000), _obj("w1", 0x1008), _obj("big", 0x1030, 0x20), _obj("w2", 0x1048)]
    counts = _counts({"a": {1: (10, 0)}, "w1": {2: (0, 5000)}, "big": {1: (1000, 0)}, "w2": {2: (0, 5000)}})
    found = findings(_map(objs), counts)
    assert [f.line for f in found] == ["0x1000", "0x1040"]
    assert found[0].cost == (10 + 1000) * 5000 and found[1].cost == 1000 * 5000


@pytest.mark.unit
def test_filter_output_is_mapped_back_to_link_time_addresses():
    objs = [_obj("flag", 0x4100), _obj("rnd", 0x4108)]
    text = "MAP 0 108000 10a000 0\nMAP 0 10b000 10d000 2000\nC 3 10c100 7 0\nC 2 10c108 5 5\nC 2 10c200 1 1\n" \
           "T 100 13 4\n"
    per, totals = parse_filter_output(text, _map(objs))
    assert per["flag"][3].loads == 7 and per["rnd"][2].stores == 5
    assert totals.unattributed == 2 and totals.threads == 2 and totals.records == 100


@pytest.mark.unit
def test_accesses_in_no_symbol_are_counted_by_the_section_they_fall_in():
    static = _map([_obj("flag", 0x4100)])
    static.sections = [(0x1000, 0x2000, ".rodata"), (0x4000, 0x4180, ".data"), (0x4180, 0x4300, ".got")]
    text = "MAP 0 108000 10d000 0\nC 1 10c100 3 0\nC 1 10c200 4 0\nC 2 10c2f8 0 1\nC 1 109000 2 0\n" \
           "C 1 10c108 5 0\nC 1 10c400 6 0\nT 30 21 2\n"
    per, totals = parse_filter_output(text, static)
    assert per["flag"][1].loads == 3
    assert totals.unattributed == 18
    assert totals.unattributed_by_section == {NO_SECTION: 6, ".data": 5, ".got": 5, ".rodata": 2}
    assert list(totals.unattributed_by_section) == [NO_SECTION, ".got", ".data", ".rodata"]  # most first
    counts = DynamicCounts("simulated", "test", ["app"], 0.0, counted=totals.counted, unattributed=totals.unattributed,
                           unattributed_by_section=totals.unattributed_by_section)
    assert unattributed_line(counts) == \
        "18 of them in no symbol (85.7%), by section: (no section) 33%, .got 28%, .data 28%, .rodata 11%"


@pytest.mark.unit
@pytest.mark.skipif(shutil.which("cc") is None, reason="needs the C compiler")
def test_the_static_map_knows_each_allocated_section_of_a_real_binary(tmp_path):
    (tmp_path / "t.c").write_text(MOVED)
    exe = tmp_path / "t"
    subprocess.run(["cc", "-O2", str(tmp_path / "t.c"), "-o", str(exe)], check=True)
    static = static_map(exe)
    by_name = {o.name: o for o in static.objects}
    assert static.section_at(by_name["counter"].address) == by_name["counter"].section
    with exe.open("rb") as f:
        sections = [(s.name, s["sh_addr"], s["sh_size"]) for s in ELFFile(f).iter_sections()
                    if s["sh_flags"] & SH_FLAGS.SHF_ALLOC and s["sh_size"] and not s["sh_flags"] & SH_FLAGS.SHF_TLS]
    assert {".text", ".data", ".got", ".rodata"} <= {name for name, _, _ in sections}
    for name, start, size in sections:
        assert static.section_at(start) == name and static.section_at(start + size - 1) == name
    assert static.section_at(max(start + size for _, start, size in sections) + 0x10000) is None


@pytest.mark.unit
def test_filter_output_of_a_binary_and_a_library_is_split_by_mapping():
    app = _map([_obj("flag", 0x4100)])
    lib = _map([_obj("lib_counter", 0x2040)])
    text = "MAP 0 108000 10d000 0\nMAP 1 4000000 4003000 0\nC 2 10c100 3 0\nC 2 4002040 0 9\nC 1 4002048 1 0\n" \
           "T 50 13 2\n"
    (app_per, app_totals), (lib_per, lib_totals) = parse_filter_output_many(text, [app, lib])
    assert set(app_per) == {"flag"} and app_per["flag"][2].loads == 3
    assert set(lib_per) == {"lib_counter"} and lib_per["lib_counter"][2].stores == 9
    assert lib_totals.unattributed == 1 and app_totals.counted == 3 and lib_totals.counted == 10


@pytest.mark.unit
def test_linker_script_gathers_the_named_objects_in_an_aligned_section_after_data():
    text = linker_script(["flag", "limit"], 128)
    assert "*(.data.flag .data.rel.local.flag .data.rel.flag .bss.flag)" in text
    assert "ALIGN(128)" in text and "INSERT AFTER .data;" in text


@pytest.mark.unit
def test_the_fix_keeps_its_rebuild_and_ab_beside_the_json_file(tmp_path):
    beside = work_dir(tmp_path / "study" / "sqlite.json", "ab")
    assert beside.parent == tmp_path / "study" and beside.name.startswith("sqlite-ab-") and beside.is_dir()
    assert work_dir(tmp_path / "study" / "sqlite.json", "ab") != beside, "a second fix does not reuse the first's"
    alone = work_dir(None, "fix")
    try:
        assert alone.name.startswith("dbperf-layout-fix-") and alone.is_dir()
    finally:
        alone.rmdir()


MOVED = """#include <stdio.h>
int flag = 7;           /* initialised: .data.flag */
int inited;             /* zero: .bss.inited, written once at start, as MariaDB's thr_timer_inited */
int counter = 3;
int main(void) { inited = 1; counter++; printf("%d %d %d\\n", flag, inited, counter); return 0; }
"""


@pytest.mark.unit
@pytest.mark.skipif(shutil.which("cc") is None, reason="needs the C compiler")
@pytest.mark.parametrize("hardening", [[], ["-Wl,-z,relro,-z,now"]])
def test_the_fragment_moves_data_and_bss_objects_and_they_stay_writable_with_z_now(tmp_path, hardening):
    """With -z now the read-only-after-relocation segment ends right before .data: a section inserted there
    faulted on the first write to a moved object (MariaDB's build, whose factorial test program crashed)."""
    (tmp_path / "t.c").write_text(MOVED)
    (tmp_path / "f.ld").write_text(linker_script(["flag", "inited"], 64))
    exe = tmp_path / "t"
    subprocess.run(["cc", "-O2", "-fdata-sections", *hardening, f"-Wl,-T,{tmp_path / 'f.ld'}", str(tmp_path / "t.c"),
                    "-o", str(exe)], check=True)
    ran = subprocess.run([str(exe)], capture_output=True, text=True)
    assert ran.returncode == 0 and ran.stdout == "7 1 4\n"
    with exe.open("rb") as f:
        elf = ELFFile(f)
        section = elf.get_section_by_name(".data.read_mostly")
        assert section is not None and section["sh_addr"] % 64 == 0 and section["sh_size"] % 64 == 0
        symbols = {s.name: s["st_value"] for s in elf.get_section_by_name(".symtab").iter_symbols()}
    start, end = section["sh_addr"], section["sh_addr"] + section["sh_size"]
    assert start <= symbols["flag"] < end and start <= symbols["inited"] < end
    assert not start <= symbols["counter"] < end


@pytest.mark.unit
@pytest.mark.parametrize(("content", "message"), [
    (b"hello, not an ELF\n" * 4, "not an ELF file"),
    (_elf_header(62), "no symbols at all"),
    (_elf_header(0x2345), "unknown architecture"),
])
def test_bad_binaries_are_one_line_and_exit_2(tmp_path, monkeypatch, capsys, content, message):
    path = tmp_path / "bad"
    path.write_bytes(content)
    code, err = _in_process(monkeypatch, capsys, "layout", str(path))
    assert code == 2, err
    assert message in err and len(err.strip().splitlines()) == 1, err


@pytest.mark.unit
@pytest.mark.parametrize("args", [["layout"], ["layout", "/bin/true", "--line", "96"],
                                  ["layout", "/bin/true", "--fix"], ["layout", "--experiment", "x.toml"],
                                  ["layout", "/bin/true", "--mode", "psychic"]])
def test_bad_options_are_one_line_and_exit_2(monkeypatch, capsys, args):
    code, err = _in_process(monkeypatch, capsys, *args)
    assert code == 2 and len(err.strip().splitlines()) == 1, err


@pytest.mark.e2e
@pytest.mark.skipif(shutil.which("valgrind") is None, reason="valgrind not installed")
def test_failing_workload_is_one_line_and_exit_2():
    proc = run_cli("layout", "/bin/false", "--run", "", timeout=600)
    assert proc.returncode == 2 and "workload failed" in proc.stderr, proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


@pytest.mark.e2e
@pytest.mark.skipif(shutil.which("valgrind") is None, reason="valgrind not installed")
def test_demo_report_flags_exactly_the_seeded_line(tmp_path):
    out = tmp_path / "layout.json"
    proc = run_cli("layout", "--demo", "--json", str(out), timeout=900)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(out.read_text())
    assert data["dynamic"]["mode"] == "simulated"
    assert len(data["findings"]) == 1, data["findings"]
    f = data["findings"][0]
    assert set(f) >= {"line", "objects", "cost", "remedy"}
    assert set(f["objects"]) == {"demo_search_enabled", "demo_rnd_counter"}
    assert [r["name"] for r in f["read_mostly"]] == ["demo_search_enabled"]
    assert f["read_mostly"][0]["source"].startswith("demo.c:")
    assert f["cost"] > 0 and "demo_search_enabled" in f["remedy"]
    kinds = {o["name"]: o["kind"] for o in data["objects"]}
    assert kinds["demo_tls_count"] == "tls" and kinds["demo_primes"] == "read-only"
    per = data["dynamic"]["per_object"]
    # The decoys were really exercised: read, written (once or hot), and still not flagged.
    assert sum(t["loads"] for t in per["demo_table"].values()) >= 50_000
    assert sum(t["stores"] for t in per["demo_ops"].values()) >= 50_000
    assert sum(t["stores"] for t in per["demo_config_word"].values()) == 1
    assert "demo_search_enabled" in proc.stdout
    by_section = data["dynamic"]["unattributed_by_section"]
    assert sum(s["accesses"] for s in by_section) == data["dynamic"]["unattributed_accesses"]


@pytest.mark.e2e
@pytest.mark.skipif(not MARIADBD.is_file(), reason="Debian's mariadbd is not installed")
def test_stripped_mariadbd_static_map_comes_from_dynsym(tmp_path):
    out = tmp_path / "m.json"
    proc = run_cli("layout", str(MARIADBD), "--json", str(out), timeout=600)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(out.read_text())
    assert data["symbol_table"] == ".dynsym" and data["line_size"] == 64
    assert len(data["objects"]) > 1000 and data["findings"] == []
    assert any(o["written_in_code"] for o in data["objects"])
    assert "static suspects" in proc.stdout


@pytest.mark.e2e
@pytest.mark.skipif(shutil.which("valgrind") is None, reason="valgrind not installed")
def test_demo_fix_moves_the_flag_rechecks_and_measures(tmp_path):
    out = tmp_path / "fix.json"
    proc = run_cli("layout", "--demo", "--fix", "--json", str(out), timeout=1200)
    assert proc.returncode == 0, proc.stderr
    fix = json.loads(out.read_text())["fix"]
    assert fix["moved"] == ["demo_search_enabled"] and fix["gone"] and fix["findings_after"] == []
    assert fix["sections_after"] == {"demo_search_enabled": ".data.read_mostly"}
    assert "INSERT AFTER .data" in fix["linker_script"] and "-fdata-sections" in fix["flags"]
    assert tmp_path in Path(fix["fixed_binary"]).parents, "the rebuilt demo is kept beside the JSON that names it"
    # the A/B's base is the same object linked without the fragment
    assert fix["relink"] is True and fix["base_flags"] == ["-fdata-sections"] and fix["objects"]["equal"] is True
    assert Path(fix["base_binary"]).parent == Path(fix["fixed_binary"]).parent
    assert {o.name: o.section for o in static_map(Path(fix["base_binary"]), None).objects}[
        "demo_search_enabled"] != ".data.read_mostly"
    ab = fix["ab"]
    assert len(ab["original"]) == len(ab["fixed"]) >= 5 and all(x > 0 for x in ab["original"] + ab["fixed"])
    assert "after the fix:" in proc.stdout and "A/B" in proc.stdout


@pytest.mark.e2e
@pytest.mark.skipif(shutil.which("valgrind") is None, reason="valgrind not installed")
def test_experiment_counts_a_lab_target_driven_by_a_catalog_benchmark(tmp_path, write_experiment):
    system = Path("/usr/lib/x86_64-linux-gnu/libsqlite3.so.0")
    if not system.is_file():
        pytest.skip("the system SQLite is not installed")
    exp = write_experiment(f"""
[run]
benchmarks = ["point-query"]
table_size = 1000
time = "0.5s"
warmup = "0s"

[[target]]
name = "sys"
library = "{system}"
""")
    out = tmp_path / "e.json"
    proc = run_cli("layout", "--experiment", str(exp), "--target", "sys", "--benchmark", "point-query",
                   "--json", str(out), timeout=1200)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(out.read_text())
    assert data["cell"]["threads"] == 2 and data["cell"]["benchmark"] == "point-query"
    assert Path(data["binary"]).resolve() == system.resolve()
    dyn = data["dynamic"]
    assert dyn["mode"] == "simulated" and dyn["threads"] >= 2 and dyn["records_in_binary"] > 0
    assert isinstance(data["findings"], list)
    bad = run_cli("layout", "--experiment", str(exp), "--target", "nope", "--benchmark", "point-query")
    assert bad.returncode == 2 and "no target 'nope'" in bad.stderr


@pytest.mark.e2e
@pytest.mark.skipif(shutil.which("valgrind") is None, reason="valgrind not installed")
def test_a_named_shared_library_is_mapped_and_counted_too(tmp_path):
    from dbperf.layout.build import demo

    libc = Path("/lib/x86_64-linux-gnu/libc.so.6")
    if not libc.is_file():
        pytest.skip("no x86-64 glibc here")
    out = tmp_path / "lib.json"
    proc = run_cli("layout", str(demo()), "--lib", str(libc), "--run", "20000", "--json", str(out), timeout=900)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(out.read_text())
    assert [f["objects"] for f in data["findings"]] == [["demo_search_enabled", "demo_rnd_counter"]]
    (lib,) = data["libraries"]
    assert lib["binary"] == str(libc) and lib["symbol_table"] == ".dynsym"
    assert lib["dynamic"]["records_in_binary"] > 0


PERF_SCRIPT = """\
27348 PERF_RECORD_MMAP2 27348/27348: [0x55e0c0bf0000(0x5000) @ 0 fe:00 10142651 2052805185]: r--p /x/app
27348 PERF_RECORD_MMAP2 27348/27348: [0x7f0fdf1dd000(0x1e2000) @ 0 fe:00 326269 0]: r--p /usr/lib/libc.so.6
27348 PERF_RECORD_MMAP2 27348/27348: [0x55e0c0bf5000(0x1000) @ 0x55e0c0bf5000 00:00 0 0]: rw-p //anon
27349 cpu/mem-loads,ldlat=30/P:     55e0c0bf4100      1e05080021 |OP LOAD|LVL L1 hit|SNP None|TLB L1 or L2 hit
27349 cpu/mem-loads,ldlat=30/P:     55e0c0bf4100      1e05080021 |OP LOAD|LVL L1 hit|SNP None|TLB L1 or L2 hit
27350 ibs_op//:     55e0c0bf4108      2e05080021 |OP STORE|LVL L1 hit|SNP None|TLB N/A
27350 ibs_op//:     55e0c0bf5010      2e05080021 |OP STORE|LVL L1 hit|SNP None|TLB N/A
27350 page-faults:     55e0c0bf4100      1e05080021 |OP N/A|LVL N/A or N/A|SNP N/A|TLB N/A
"""


@pytest.mark.unit
def test_perf_mem_samples_are_mapped_back_like_the_trace():
    from dbperf.layout.sampled import perf_script_to_filter

    static = _map([_obj("flag", 0x4100), _obj("rnd", 0x4108), _obj("bss_word", 0x5010)])
    text, stats = perf_script_to_filter(PERF_SCRIPT, ["/x/app"])
    assert stats == {"samples": 5, "unclassified": 1}
    per, totals = parse_filter_output(text, static)
    assert per["flag"][27349].loads == 2 and per["rnd"][27350].stores == 1 and per["bss_word"][27350].stores == 1
    assert totals.mapped == 2


@pytest.mark.e2e
@pytest.mark.skipif(shutil.which("perf") is None, reason="perf not installed")
def test_perf_script_mmap_events_of_this_perf_are_understood(tmp_path):
    """No PMU here for perf mem, but `perf record -d` of software page faults writes the same mmap events."""
    import subprocess

    from dbperf.layout.build import demo
    from dbperf.layout.sampled import perf_script_to_filter

    exe = demo()
    data = tmp_path / "perf.data"
    rec = subprocess.run(["perf", "record", "-d", "-e", "page-faults", "-o", str(data), "--", str(exe), "1000"],
                         capture_output=True, text=True, timeout=300)
    if rec.returncode != 0:
        pytest.skip(f"perf record cannot run here: {rec.stderr.strip()[-200:]}")
    out = subprocess.run(["perf", "script", "-i", str(data), "-F", "tid,event,addr,data_src", "--show-mmap-events"],
                         capture_output=True, text=True, timeout=300, check=True).stdout
    text, stats = perf_script_to_filter(out, [str(exe.resolve())])
    assert text.startswith("MAP 0 ") and stats["samples"] > 0
