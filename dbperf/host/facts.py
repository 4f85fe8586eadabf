"""What a result must say about where it was measured: CPU, cores, kernel, governor, compiler, dbperf's commit."""

from __future__ import annotations

import hashlib
import os
import platform
import shutil
import subprocess
from pathlib import Path
from typing import Any

import dbperf
from dbperf.errors import UserError
from dbperf.host.compiler import find_compiler


def _first_line(cmd: list[str]) -> str | None:
    if not shutil.which(cmd[0]):
        return None
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    return out.splitlines()[0].strip() if out.strip() else None


def _read(path: str) -> str | None:
    try:
        return Path(path).read_text().strip()
    except OSError:
        return None


def cpuinfo_field(name: str) -> str | None:
    """The first value of a /proc/cpuinfo field, e.g. "model name", "microcode", "flags"."""
    for line in (_read("/proc/cpuinfo") or "").splitlines():
        if line.startswith(name):
            return line.split(":", 1)[1].strip()
    return None


def cpu_model() -> str:
    return cpuinfo_field("model name") or platform.processor() or "unknown"


def cpu_id() -> str | None:
    """Which generation the CPU is, where its model name does not say: a VM's "AMD EPYC" is any of five (x86:
    family, model, stepping; Arm: implementer, part, variant, revision)."""
    x86 = [(label, cpuinfo_field(name)) for label, name in
           (("family", "cpu family"), ("model", "model\t"), ("stepping", "stepping"))]
    arm = [(label, cpuinfo_field(name)) for label, name in
           (("implementer", "CPU implementer"), ("part", "CPU part"), ("variant", "CPU variant"),
            ("revision", "CPU revision"))]
    for fields in (x86, arm):
        if all(value for _, value in fields):
            return ", ".join(f"{label} {value}" for label, value in fields)
    return None


def virtualised() -> bool:
    """The CPU says it runs under a hypervisor (the x86 `hypervisor` flag)."""
    return "hypervisor" in (cpuinfo_field("flags") or "").split()


def compiler_version() -> str | None:
    try:
        return find_compiler().version
    except UserError:
        return None


def git_commit() -> str | None:
    """dbperf's own commit, with '-dirty' when the work tree has changes."""
    repo = Path(dbperf.__file__).resolve().parents[1]
    if not (repo / ".git").exists():
        return None
    commit = _first_line(["git", "-C", str(repo), "rev-parse", "HEAD"])
    if commit is None:
        return None
    dirty = subprocess.run(["git", "-C", str(repo), "status", "--porcelain", "--untracked-files=no"],
                           capture_output=True, text=True, timeout=10).stdout.strip()
    return commit + ("-dirty" if dirty else "")


def host_metadata() -> dict[str, Any]:
    return {
        "cpu_model": cpu_model(),
        "cpu_id": cpu_id(),
        "microcode": cpuinfo_field("microcode"),
        "virtualised": virtualised(),
        "cores": os.cpu_count(),
        "kernel": platform.release(),
        "governor": _read("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor"),
        "clocksource": _read("/sys/devices/system/clocksource/clocksource0/current_clocksource"),
        "compiler": compiler_version(),
        "python": platform.python_version(),
        "dbperf_version": dbperf.__version__,
        "dbperf_commit": git_commit(),
        "hostname": platform.node(),
    }


def sha256_of(path: str) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()
