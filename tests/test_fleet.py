"""The fleet on a real Dask cluster: a scheduler and workers as separate processes on 127.0.0.1 (hosts local-1,
local-2 with cache directories of their own), running real SQLite cells with the driver."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import threading
import time
from pathlib import Path

import pytest
from rich.console import Console

from dbperf.errors import UserError
from dbperf.experiment.spec import parse_experiment
from dbperf.fleet import controller as fleet_controller
from dbperf.fleet.certs import make_certs
from dbperf.fleet.cluster import connect, connected_hosts
from dbperf.fleet.controller import LOST, Controller
from dbperf.fleet.local import local_fleet
from dbperf.fleet.plan import split, with_host_cpus
from dbperf.fleet.probe import allowed_cpus, probe_fleet
from dbperf.fleet.run import _run, run_fleet
from dbperf.host.cpus import CpuPlan
from dbperf.records import CellRecord, ResultsRecord
from dbperf.report.formats import draw
from dbperf.report.hosts import host_view
from dbperf.report.probe_hosts import probe_hosts_view
from dbperf.run_meta import FleetHostMeta, FleetMeta, RunMeta, TargetMeta
from dbperf.storage.results import read_results
from tests.conftest import DBPERF, REPO, run_cli

MATRIX = """
[run]
benchmarks = ["point-query", "update-index"]
table_size = 2000
time = "0.5s"
warmup = "0.1s"
repeats = 2

[[target]]
name = "A"

[[target]]
name = "B"
config = { journal_mode = "WAL" }
"""


def _gone_within(seconds: float, *words: str) -> bool:
    """No process whose command line holds every word, within `seconds`."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        alive = []
        for pid in filter(str.isdigit, os.listdir("/proc")):
            try:
                cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                continue
            if all(w in cmdline for w in words):
                alive.append(pid)
        if not alive:
            return True
        time.sleep(0.2)
    return False


def _cells(directory: Path) -> list[CellRecord]:
    _, records, skipped = read_results(directory)
    assert not skipped
    return [r for r in records if isinstance(r, CellRecord)]


@pytest.mark.e2e
@pytest.mark.parametrize("order", [None, "slices"])
def test_two_hosts_two_targets_every_record_carries_its_host(write_experiment, tmp_path: Path, order,
                                                             run_cli_here) -> None:
    """The same when each host's targets take turns in one driver (slices)."""
    out = tmp_path / "out"
    matrix = MATRIX if order is None else MATRIX.replace("[run]\n", f'[run]\norder = "{order}"\n')
    proc = run_cli("fleet", "local", "--workers", "2", str(write_experiment(matrix)), "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    cells = _cells(out)
    assert len(cells) == 2 * 2 * 2 * 2  # hosts × targets × benchmarks × repeats
    assert all(c.ok for c in cells)
    for host in ("local-1", "local-2"):
        mine = {(c.target, c.benchmark, c.repeat) for c in cells if c.host == host}
        assert len(mine) == 8, host
    lines = (out / "results.jsonl").read_text().splitlines()
    assert all(json.loads(line)["host"] in ("local-1", "local-2") for line in lines)
    meta = json.loads((out / "meta.json").read_text())
    assert meta["status"] == "complete" and (order is None or meta["order"] == order)
    for host in ("local-1", "local-2"):
        h = meta["fleet"]["hosts"][host]
        assert h["status"] == "complete"
        assert h["host"]["cores"] and h["host"]["cpu_model"]  # that host's metadata
        assert [t["name"] for t in h["targets"]] == ["A", "B"] and h["targets"][0]["engine_version"]
    assert "host local-1: complete" in proc.stdout and "host local-2: complete" in proc.stdout
    report = json.loads(run_cli_here("report", str(out), "--format", "json").stdout)
    assert [h["host"] for h in report["hosts"]] == ["local-1", "local-2"]
    assert all(c["rqps"] is not None for h in report["hosts"] for c in h["cells"])
    csv = run_cli_here("report", str(out), "--format", "csv").stdout.splitlines()
    assert csv[0].startswith("host,") and {row.split(",")[0] for row in csv[1:]} == {"local-1", "local-2"}
    page = tmp_path / "fleet.html"
    html = run_cli_here("report", str(out), "--format", "html", "-o", str(page))
    assert html.returncode == 0, html.stderr
    document = page.read_text()
    parts = re.findall(r'<h2 id="host-(\d)">([^<]*)</h2>', document)
    assert [n for n, _ in parts] == ["1", "2"] and "local-1" in parts[0][1] and "local-2" in parts[1][1]
    anchors = re.findall(r' id="(host-[^"]+)"', document)
    assert len(anchors) == len(set(anchors)) and "host-2-rqps" in anchors  # each host its own sections
    assert document.count('data-figure="1"') >= 2 * 3  # per host: heat map, repeats, CPU at least


@pytest.mark.e2e
def test_a_worker_killed_mid_run_fails_its_cell_the_other_host_completes_and_resume_finishes(
        write_experiment, tmp_path: Path) -> None:
    experiment = write_experiment(MATRIX)
    out = tmp_path / "out"
    console = Console(stderr=True)
    with local_fleet(2) as fleet:
        killed = threading.Event()

        def kill_local_2_after_its_first_cell() -> None:
            deadline = time.monotonic() + 240
            while time.monotonic() < deadline:
                text = (out / "results.jsonl").read_text() if (out / "results.jsonl").exists() else ""
                if '"host":"local-2"' in text:
                    os.kill(fleet.worker_pid("local-2"), signal.SIGKILL)
                    killed.set()
                    return
                time.sleep(0.05)

        killer = threading.Thread(target=kill_local_2_after_its_first_cell, daemon=True)
        killer.start()
        end = _run(parse_experiment(experiment), out, fleet.scheduler, None, console, ["local-1", "local-2"],
                   resume=False, keep_data=False, resume_hint="")
        assert killed.is_set()
        assert end.exit_code == 4  # a host did not complete
        cells = _cells(out)
        one = [c for c in cells if c.host == "local-1"]
        assert len(one) == 8 and all(c.ok for c in one)
        two = [c for c in cells if c.host == "local-2"]
        lost = [c for c in two if not c.ok]
        assert len(lost) == 1 and lost[0].error and lost[0].error.startswith(LOST), lost
        assert "local-2" in lost[0].error
        meta = json.loads((out / "meta.json").read_text())
        h2 = meta["fleet"]["hosts"]["local-2"]
        assert h2["status"] == "lost" and h2["reason"]
        assert h2["not_run"] == 8 - len(two) and h2["not_run"] > 0
        assert meta["fleet"]["hosts"]["local-1"]["status"] == "complete"
        assert meta["status"] == "incomplete"
        # the killed worker's child (which ran its matrix) saw its parent go and stopped, driver and all
        assert _gone_within(30, "dbperf.fleet.hostrun", "/fleet-local/local-2/")

        # The host returns: --resume runs its cells not run and the one the lost worker failed, nothing else.
        fleet.start_worker("local-2")
        end = _run(parse_experiment(experiment), out, fleet.scheduler, None, console, ["local-1", "local-2"],
                   resume=True, keep_data=False, resume_hint="")
        assert end.exit_code == 0
        cells = _cells(out)
        assert len([c for c in cells if c.host == "local-1"]) == 8  # not run again
        ok_two = {(c.target, c.benchmark, c.repeat) for c in cells if c.host == "local-2" and c.ok}
        assert len(ok_two) == 8
        assert json.loads((out / "meta.json").read_text())["status"] == "complete"
    # every process of the fleet is gone
    assert all(p.poll() is not None for p in fleet.processes.values())


@pytest.mark.e2e
def test_tls_fleet_runs_and_a_worker_without_the_lab_certificate_is_refused(write_experiment, tmp_path: Path) -> None:
    body = MATRIX.replace('benchmarks = ["point-query", "update-index"]', 'benchmarks = ["point-query"]').replace(
        "repeats = 2", "repeats = 1")
    experiment = write_experiment(body)
    out = tmp_path / "out"
    with local_fleet(1, tls=True) as fleet:
        assert fleet.scheduler.startswith("tls://") and fleet.certs
        # a worker whose certificate another CA signed: the scheduler refuses the handshake, it never joins
        other = tmp_path / "other-ca"
        make_certs(other)
        intruder = subprocess.run([*DBPERF, "worker", "--scheduler", fleet.scheduler, "--name", "intruder",
                                   "--certs", str(other), "--join-timeout", "5", "--cache", str(tmp_path / "c")],
                                  capture_output=True, text=True, cwd=REPO, timeout=120)
        assert intruder.returncode != 0
        # without any certificate: refused before it tries (nothing would cross the wire in clear)
        bare = run_cli("worker", "--scheduler", fleet.scheduler, "--name", "bare", "--join-timeout", "5")
        assert bare.returncode == 2 and "certificates" in bare.stderr and "Traceback" not in bare.stderr
        # the controller without the certificate cannot connect either
        with pytest.raises(UserError):
            connect(fleet.scheduler, other, timeout=5).close()
        client = connect(fleet.scheduler, fleet.certs)
        try:
            assert set(connected_hosts(client)) == {"local-1"}
        finally:
            client.close()
        end = _run(parse_experiment(experiment), out, fleet.scheduler, fleet.certs, Console(stderr=True),
                   ["local-1"], resume=False, keep_data=False, resume_hint="")
        assert end.exit_code == 0
        # probe --fleet: the host runs `dbperf probe` itself; one column per host
        client = connect(fleet.scheduler, fleet.certs)
        try:
            probes = probe_fleet(client, ["timers", "--repeats", "1", "--scale", "0.05"])
        finally:
            client.close()
        assert set(probes) == {"local-1"} and probes["local-1"]["families"]["timers"]["figures"]
        console = Console(record=True, width=200)
        draw(probe_hosts_view(probes), console)
        text = console.export_text()
        assert "local-1" in text and "clock_gettime(CLOCK_MONOTONIC)" in text
    cells = _cells(out)
    assert len(cells) == 2 and all(c.ok and c.host == "local-1" for c in cells)
    assert json.loads((out / "meta.json").read_text())["fleet"]["scheduler"].startswith("tls://")


@pytest.mark.unit
def test_fleet_section_and_hosts_split_the_matrix(write_experiment) -> None:
    e = parse_experiment(write_experiment(MATRIX + """
[[target]]
name = "C"
host = "dell32"

[fleet]
scheduler = "tls://bench-controller:8786"
hosts = ["beelink", "pn53"]
certs = "lab-certs"
"""))
    assert e.fleet and e.fleet.hosts == ("beelink", "pn53") and e.fleet.certs == e.path.parent / "lab-certs"
    parts = {p.host: [t.name for t in p.experiment.targets] for p in split(e)}
    assert parts == {"beelink": ["A", "B"], "pn53": ["A", "B"], "dell32": ["C"]}
    assert {p.host: p.experiment.base for p in split(e)}["dell32"] == "C"


@pytest.mark.unit
@pytest.mark.parametrize("fleet, message", [
    ('scheduler = "http://x:1"', "expected tls://HOST:PORT"),
    ('hosts = ["a", "a"]', "listed twice"),
    ('hosts = ["a b"]', "hosts"),
    ('workers = 3', "unknown key 'workers'"),
])
def test_bad_fleet_sections_are_refused(write_experiment, fleet: str, message: str) -> None:
    with pytest.raises(UserError, match=message):
        parse_experiment(write_experiment(MATRIX + "\n[fleet]\n" + fleet + "\n"))


@pytest.mark.unit
def test_fleet_run_errors_are_one_line(write_experiment, run_cli_here) -> None:
    proc = run_cli_here("fleet", "run", str(write_experiment(MATRIX + '\n[fleet]\nscheduler = "http://x:1"\n')))
    assert proc.returncode == 2 and "expected tls://HOST:PORT" in proc.stderr and "Traceback" not in proc.stderr
    with pytest.raises(UserError, match="no scheduler"):
        run_fleet(write_experiment(MATRIX), None, None, None, Console(stderr=True))
    proc = run_cli_here("fleet", "local", str(REPO / "examples" / "fleet.toml"))
    assert proc.returncode == 2 and "names host(s) beelink" in proc.stderr and "Traceback" not in proc.stderr


DUET_ON_TWO_HOSTS = MATRIX.replace("repeats = 2", 'repeats = 2\norder = "duet"') + """
[fleet]
hosts = ["big", "one-cpu"]
"""


@pytest.mark.unit
def test_each_host_plans_cpus_and_so_its_cells_with_its_own_cpus(write_experiment) -> None:
    e = parse_experiment(write_experiment(DUET_ON_TWO_HOSTS))
    parts = {p.host: p for p in with_host_cpus(split(e), {"big": [7, 2, 5], "one-cpu": [3]})}
    assert parts["big"].experiment.cpus == CpuPlan(frozenset({2}), frozenset({5}), "auto")
    assert parts["one-cpu"].experiment.cpus == CpuPlan(None, None, "off: one CPU")
    # Duets pair A and B on the host with two CPUs (each record names its partner); the one-CPU host interleaves.
    assert {key[4] for key in parts["big"].cells} == {"A", "B"}
    assert {key[4] for key in parts["one-cpu"].cells} == {None}
    # fleet local: every worker has the controller's CPUs, so each host's plan is the one parsed here
    here = sorted(os.sched_getaffinity(0))
    assert all(p.experiment.cpus == e.cpus for p in with_host_cpus(split(e), {"big": here, "one-cpu": here}))
    assert allowed_cpus() == here


@pytest.mark.unit
def test_a_cpu_list_with_a_cpu_a_host_may_not_use_is_one_line_naming_the_host(write_experiment) -> None:
    cpu = min(os.sched_getaffinity(0))  # one this process may use: the file is read here first
    path = write_experiment(MATRIX.replace("[run]", f'[run]\ncpus = {{ client = "{cpu}" }}')
                            + '\n[fleet]\nhosts = ["h1", "h2"]\n')
    parts = split(parse_experiment(path))
    assert with_host_cpus(parts, {"h1": [cpu], "h2": [cpu]})[1].experiment.cpus.client == {cpu}
    with pytest.raises(UserError) as refused:
        with_host_cpus(parts, {"h1": [cpu], "h2": [cpu + 1]})
    assert str(refused.value) == (f"host 'h2': {path} [run].cpus.client: CPU {cpu} is not one this process may "
                                  f"use (allowed: {cpu + 1})")


@pytest.mark.unit
def test_a_fleet_reads_cpu_lists_for_its_hosts_not_for_the_controller(write_experiment) -> None:
    # A CPU the controller does not have (a 2-core laptop driving 64-core hosts): a local run refuses it, a fleet's
    # controller reads it as written and each host plans it with its own CPUs.
    far = max(os.sched_getaffinity(0)) + 62
    path = write_experiment(MATRIX.replace("[run]", f'[run]\ncpus = {{ client = "{far - 1}", server = "{far}" }}')
                            + '\n[fleet]\nhosts = ["big", "small"]\n')
    with pytest.raises(UserError, match=rf"\[run\]\.cpus\.client: CPU {far - 1} is not one this process may use"):
        parse_experiment(path)
    e = parse_experiment(path, cpus_here=False)
    assert e.cpus == CpuPlan(None, None, "planned on each host") and e.cpus_setting == {
        "client": str(far - 1), "server": str(far)}
    with pytest.raises(UserError, match="no scheduler"):  # fleet run reads it the fleet's way, then wants a scheduler
        run_fleet(path, None, None, None, Console(stderr=True))
    parts = split(e)
    big = with_host_cpus(parts[:1], {"big": range(far + 1)})[0]
    assert big.experiment.cpus == CpuPlan(frozenset({far - 1}), frozenset({far}), "experiment")
    with pytest.raises(UserError, match=rf"^host 'small': .*\[run\]\.cpus\.client: CPU {far - 1} is not one"):
        with_host_cpus(parts, {"big": range(far + 1), "small": [0, 1]})
    # The syntax is still checked where the file is read, whoever plans it.
    bad = write_experiment(MATRIX.replace("[run]", '[run]\ncpus = { client = "0-x" }'))
    with pytest.raises(UserError, match=r"cpus\.client: expected CPUs such as"):
        parse_experiment(bad, cpus_here=False)


@pytest.mark.unit
def test_the_controller_plans_each_host_with_the_cpus_that_host_reports(write_experiment, tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    e = parse_experiment(write_experiment(DUET_ON_TWO_HOSTS))
    reported = {"big": [2, 5], "one-cpu": [3]}
    monkeypatch.setattr(fleet_controller, "hosts_cpus", lambda _client, hosts, _run_id: {h: reported[h] for h in hosts})
    controller = Controller(e, None, tmp_path / "out", Console(stderr=True), "tcp://127.0.0.1:8786", [])
    controller._plan_host_cpus()
    big, one_cpu = controller.hosts["big"], controller.hosts["one-cpu"]
    assert big.part.experiment.cpus.describe() == {"client": [2], "server": [5], "how": "auto"}
    assert one_cpu.part.experiment.cpus.how == "off: one CPU"
    assert big.planned == big.part.cells and {k[4] for k in big.remaining()} == {"A", "B"}
    assert {k[4] for k in one_cpu.remaining()} == {None}
    controller._open_results().close()
    hosts = json.loads((tmp_path / "out" / "meta.json").read_text())["fleet"]["hosts"]
    assert hosts["big"]["cpus"] == {"client": [2], "server": [5], "how": "auto"} and hosts["big"]["cells"] == 8
    assert hosts["one-cpu"]["cpus"]["how"] == "off: one CPU"


@pytest.mark.unit
def test_a_hosts_report_shows_its_own_cpus_not_the_controllers() -> None:
    controller_cpus = {"client": [0], "server": [1], "how": "auto"}
    meta = RunMeta(base="A", targets=[TargetMeta(name="A")], cpus=controller_cpus, fleet=FleetMeta(hosts={
        "h1": FleetHostMeta(targets=["A"], cpus={"client": None, "server": None, "how": "off: one CPU"}),
        "h2": FleetHostMeta(targets=["A"])}))  # h2: a directory written before hosts had their cpus
    records: list[ResultsRecord] = [CellRecord(target="A", benchmark="point-query", threads=1, repeat=1,
                                               status="ok", host=h) for h in ("h1", "h2")]
    assert host_view(meta, records, "h1")[0].cpus == {"client": None, "server": None, "how": "off: one CPU"}
    assert host_view(meta, records, "h2")[0].cpus == controller_cpus


@pytest.mark.unit
def test_a_target_without_host_needs_fleet_hosts(write_experiment) -> None:
    with pytest.raises(UserError, match="has no host"):
        split(parse_experiment(write_experiment(MATRIX)))


@pytest.mark.unit
def test_fleet_certs_makes_a_private_set_and_refuses_to_overwrite(tmp_path: Path, run_cli_here) -> None:
    d = tmp_path / "certs"
    proc = run_cli_here("fleet", "certs", str(d))
    assert proc.returncode == 0, proc.stderr
    assert (d / "ca-key.pem").stat().st_mode & 0o077 == 0 and (d / "lab-key.pem").stat().st_mode & 0o077 == 0
    with pytest.raises(UserError, match="already exists"):
        make_certs(d)


@pytest.mark.unit
def test_records_of_a_local_run_have_no_host_and_old_lines_still_read() -> None:
    from dbperf.records import encode, results_record
    record = CellRecord(target="A", benchmark="b", threads=1, repeat=1, status="failed", error="x")
    assert b"host" not in encode(record)
    assert results_record(json.loads(encode(record))).host is None
    record.host = "pn53"
    assert results_record(json.loads(encode(record))).host == "pn53"


@pytest.mark.unit
def test_plain_tcp_only_on_this_machine_and_tls_needs_certificates(tmp_path: Path) -> None:
    from dbperf.fleet.cluster import security
    assert security(None, "tcp://127.0.0.1:8786") is not None
    with pytest.raises(UserError, match=r"127\.0\.0\.1 only"):
        security(None, "tcp://10.1.2.3:8786")
    with pytest.raises(UserError, match="needs the lab's certificates"):
        security(None, "tls://bench-controller:8786")
    make_certs(tmp_path / "c")
    assert security(tmp_path / "c", "tls://bench-controller:8786").require_encryption


@pytest.mark.unit
def test_connected_hosts_asks_the_scheduler_not_the_clients_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    """The client's periodic refresh caches totals only (no workers); if it lands between `scheduler_info()`'s fetch
    and its return, every worker looks gone at once, and a controller failed both local hosts as lost in CI."""
    from distributed import Client, LocalCluster

    fetch = Client._update_scheduler_info

    async def refreshed_behind(self: Client, n_workers: int = 0) -> object:
        await fetch(self, n_workers=n_workers)
        # the periodic refresh wins the race; distributed 2026.11 returns what the fetch cached, earlier ones read
        # the cache after it: either way the totals-only identity
        return await fetch(self, n_workers=0)

    with LocalCluster(n_workers=1, processes=False, dashboard_address=None) as cluster, Client(cluster) as client:
        monkeypatch.setattr(Client, "_update_scheduler_info", refreshed_behind)
        assert client.scheduler_info()["workers"] == {}  # the cache the controller used to read: nobody there
        assert list(connected_hosts(client).values()) == list(cluster.scheduler_info["workers"])
