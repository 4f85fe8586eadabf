"""Noise sensors over a cell's measured window: what else the host did while the cell was measured.

- **steal**: the share of the cell's CPUs' time the hypervisor gave to another guest (/proc/stat `steal`);
- **foreign CPU**: CPU time spent on the cell's CPUs (all CPUs when nothing is pinned) by processes that are not
  the lab's: busy time from /proc/stat (user, nice, system, irq, softirq) minus the lab's own: the driver's and the
  server's CPU over the measured window (the driver measures both: getrusage, and the server's /proc) and the
  dbperf process's (os.times). In CPUs: 0.5 is half a CPU's worth;
- **frequency** of the cell's CPUs where readable (cpufreq in sysfs, else /proc/cpuinfo's `cpu MHz`).

The window starts when the driver's warm-up should end (by the lab's clock: the driver is started, then a timer
samples after `warmup` seconds; with a steady-state warm-up, when the driver says its window opens: window_opens.py)
and ends when the driver exits, so it is the measured window give or take the
driver's start-up and exit. A cell is **interfered** with when steal or foreign CPU exceed the thresholds below; it
is kept and flagged, and `repeats = "auto"` runs its round again."""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from dbperf.host.window_opens import WindowOpens
from dbperf.records import NoiseSensors, RunResult, SlicesResult

HEAVY_STEAL = 0.05  # of the cell's CPUs' time
HEAVY_FOREIGN_CPU = 0.25  # a quarter of a CPU's worth, on the cell's CPUs
CLK_TCK = os.sysconf("SC_CLK_TCK")
BUSY_FIELDS = (0, 1, 2, 5, 6)  # user nice system irq softirq (guest time is inside user)
STEAL_FIELD = 7


@dataclass(frozen=True)
class Sample:
    at: float
    cpu: dict[int, list[int]]  # per CPU, the jiffies columns of /proc/stat
    self_cpu_s: float


def read_proc_stat(text: str | None = None) -> dict[int, list[int]]:
    text = Path("/proc/stat").read_text() if text is None else text
    out = {}
    for line in text.splitlines():
        name, *fields = line.split()
        if name.startswith("cpu") and name[3:].isdigit():
            out[int(name[3:])] = [int(f) for f in fields]
    return out


def sample() -> Sample:
    t = os.times()
    return Sample(time.monotonic(), read_proc_stat(), t.user + t.system)


def frequency_mhz(cpus: set[int]) -> tuple[float | None, str]:
    values = []
    for cpu in sorted(cpus):
        try:
            values.append(int(Path(f"/sys/devices/system/cpu/cpu{cpu}/cpufreq/scaling_cur_freq").read_text()) / 1000)
        except (OSError, ValueError):
            break
    if values and len(values) == len(cpus):
        return sum(values) / len(values), "cpufreq"
    try:
        mhz = {}
        current = None
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            key, _, value = line.partition(":")
            if key.strip() == "processor":
                current = int(value)
            elif key.strip() == "cpu MHz" and current is not None:
                mhz[current] = float(value)
        picked = [mhz[c] for c in cpus if c in mhz]
        if picked:
            return sum(picked) / len(picked), "/proc/cpuinfo"
    except (OSError, ValueError):
        pass
    return None, "not readable"


def sensors(start: Sample, end: Sample, cpus: set[int], lab_cpu_s: float) -> NoiseSensors:
    """The figures between two samples, on `cpus`, given the lab's own CPU seconds over the window."""
    window = max(end.at - start.at, 1e-9)
    busy = steal = total = 0
    host_busy = 0
    for cpu, after in end.cpu.items():
        before = start.cpu.get(cpu)
        if before is None:
            continue
        delta = [a - b for a, b in zip(after, before, strict=False)]
        cpu_busy = sum(delta[i] for i in BUSY_FIELDS if i < len(delta))
        host_busy += cpu_busy
        if cpu in cpus:
            busy += cpu_busy
            steal += delta[STEAL_FIELD] if len(delta) > STEAL_FIELD else 0
            total += sum(delta[:8])
    lab = lab_cpu_s + (end.self_cpu_s - start.self_cpu_s)
    foreign = max(0.0, busy / CLK_TCK - lab) / window
    steal_share = steal / total if total else 0.0
    freq, source = frequency_mhz(cpus)
    return NoiseSensors(
        window_s=round(window, 3), cpus=sorted(cpus), steal=round(steal_share, 4), foreign_cpu=round(foreign, 3),
        host_foreign_cpu=round(max(0.0, host_busy / CLK_TCK - lab) / window, 3), lab_cpu=round(lab / window, 3),
        freq_mhz=round(freq, 1) if freq else None, freq_source=source,
        interfered=steal_share > HEAVY_STEAL or foreign > HEAVY_FOREIGN_CPU)


class NoiseWindow:
    """Samples /proc/stat `delay_s` after it is entered (the warm-up's end), or when `opens` says the driver's
    window opened, and when `finish` is called."""

    def __init__(self, delay_s: float, cpus: set[int] | None, opens: WindowOpens | None = None) -> None:
        self.cpus = cpus or set(os.sched_getaffinity(0))
        self.first = sample()
        self.start: Sample | None = None
        self.timer = threading.Timer(delay_s, self._mark)
        self.timer.daemon = True
        if opens is None:
            self.timer.start()
        else:
            opens.on_open(self._mark)

    def _mark(self) -> None:
        self.start = sample()

    def finish(self, result: RunResult | SlicesResult | None) -> NoiseSensors | None:
        """None when the driver produced no result (nothing measured, so no window to judge). A slices run's result
        is its whole process's: its window and CPU are every side's."""
        self.timer.cancel()
        end = sample()
        if result is None:
            return None
        start = self.start or self.first
        window = end.at - start.at
        # The driver's CPU over its measured window, scaled to ours (they differ by start-up and exit).
        scale = window / result.duration_s if result.duration_s > 0 else 1.0
        lab = result.client_usage.cpu_us / 1e6 * min(scale, 1.0)
        if result.server_usage:
            lab += result.server_usage.cpu_us / 1e6 * min(scale, 1.0)
        return sensors(start, end, self.cpus, lab)
