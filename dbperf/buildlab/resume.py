"""A server build's progress and time, kept beside it so that an interrupted build resumes where it stopped.

Why: MySQL takes an hour on 2 cores, its PGO build about two (docs/engines.md); a build longer than the time its
machine or session gives it would otherwise start over every time and never finish. What is kept, in the build's
staging directory (staging.py's `.KEY.partial`): the fetched source (its tree and provenance), how many commands
of each phase finished and how many compile steps they took, the results of phases that finished (PGO's training
and proof, the profile-use build's counts), and every segment's time: wall clock and the CPU time of the build's
processes. A rerun of an interrupted `ninja` compiles only what it had not finished (an output without its line
in .ninja_log is rebuilt); make keeps no such log (a compiler killed mid-write leaves an object newer than its
source), so only recipes that say `resumable` are resumed and the others start over, as before.

The time: `build_seconds` sums the segments' wall clock (time spent stopped between segments is not in it; a
process stopped with SIGSTOP inside a segment is, and cannot be told apart); `build_cpu_seconds` sums the CPU time
of the build's commands and everything they started (getrusage of the reaped children; a segment killed outright
keeps its last sample, read from /proc every few seconds), which neither stops nor other load inflate: on an idle
machine of N cores the build takes about that divided by N (less where the build cannot keep every core busy).
"""

from __future__ import annotations

import json
import os
import resource
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from dbperf.errors import UserError
from dbperf.host.procfs import stat

STATE = "resume.json"
VERSION = 1
WRITE_EVERY_S = 5.0  # a segment killed outright loses at most this much of its time
TICKS = os.sysconf("SC_CLK_TCK")


def children_cpu_seconds() -> float:
    """User + system CPU time of this process's reaped children (and their reaped descendants)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def process_cpu_seconds(pid: int) -> float:
    """CPU time of a live process and its reaped children, from /proc (0 when it is gone)."""
    s = stat(pid)
    return (s.user_ticks + s.system_ticks) / TICKS if s else 0.0


class BuildState:
    """The progress of one build; written to `work`/resume.json at every change when `persist`, else kept in memory
    only (a build that starts over when interrupted still reports its time the same way)."""

    def __init__(self, work: Path, persist: bool, label: str = "") -> None:
        self.path = work / STATE
        self.persist = persist
        data: dict[str, Any] = {}
        if persist and self.path.is_file():
            try:
                data = json.loads(self.path.read_text())
            except ValueError as e:
                raise UserError(f"{self.path}: unreadable ({e}): remove {work} to build from scratch") from None
            if data.get("version") != VERSION:
                raise UserError(f"{self.path}: written by another dbperf (version {data.get('version')!r}, this "
                                f"one reads {VERSION}): remove {work} to build from scratch")
        self.data: dict[str, Any] = data or {"version": VERSION, "label": label, "source": None, "commands": {},
                                             "steps": {}, "phases": {}, "segments": []}
        self.earlier_segments = len(self.data["segments"])
        self.data["segments"].append({"started_at": datetime.now(UTC).isoformat(timespec="seconds"),
                                      "seconds": 0.0, "cpu_seconds": 0.0, "steps": 0})
        self._started = time.monotonic()
        self._cpu_done = 0.0  # this segment's finished commands
        self._written = 0.0
        self._write()

    @property
    def resumed(self) -> bool:
        return self.earlier_segments > 0

    def source(self) -> tuple[Path, dict[str, Any]] | None:
        """The tree and provenance fetched by an earlier segment, when it still exists."""
        src = self.data["source"]
        if src is None or not Path(src["tree"]).is_dir():
            return None
        return Path(src["tree"]), src["provenance"]

    def set_source(self, tree: Path, provenance: dict[str, Any]) -> None:
        self.data["source"] = {"tree": str(tree), "provenance": provenance}
        self._write()

    def commands_done(self, phase: str) -> int:
        return int(self.data["commands"].get(phase, 0))

    def steps(self, phase: str) -> int:
        """Compile steps of `phase`, every segment's."""
        return int(self.data["steps"].get(phase, 0))

    def step(self, phase: str, live_pid: int | None) -> None:
        """One compile step of `phase`; `live_pid`'s CPU time so far counts towards the segment's."""
        self.data["steps"][phase] = self.steps(phase) + 1
        self.data["segments"][-1]["steps"] += 1
        self._tick(process_cpu_seconds(live_pid) if live_pid else 0.0)

    def command_done(self, phase: str) -> None:
        self.data["commands"][phase] = self.commands_done(phase) + 1
        self._write()

    def add_cpu(self, cpu_seconds: float) -> None:
        """CPU time of a command that ended (finished or was killed and reaped)."""
        self._cpu_done += cpu_seconds
        self._tick(0.0, force=True)

    def result(self, phase: str) -> Any:
        """What a finished phase recorded (None when it has not finished)."""
        return self.data["phases"].get(phase)

    def finish(self, phase: str, result: Any) -> None:
        self.data["phases"][phase] = result
        self._write()

    def started(self, phase: str) -> bool:
        """Whether an earlier segment began `phase` (marked by begin()) without finishing it."""
        return phase in self.data.get("begun", []) and self.result(phase) is None

    def begin(self, phase: str) -> None:
        self.data.setdefault("begun", []).append(phase)
        self._write()

    def totals(self) -> dict[str, Any]:
        """The manifest's time: wall clock and CPU summed over the segments, and the segments."""
        self._tick(0.0, force=True)
        segments = self.data["segments"]
        return {"build_seconds": round(sum(s["seconds"] for s in segments), 1),
                "build_cpu_seconds": round(sum(s["cpu_seconds"] for s in segments), 1),
                "segments": segments}

    def _tick(self, live_cpu: float, force: bool = False) -> None:
        segment = self.data["segments"][-1]
        segment["seconds"] = round(time.monotonic() - self._started, 1)
        segment["cpu_seconds"] = round(self._cpu_done + live_cpu, 1)
        if force or time.monotonic() - self._written > WRITE_EVERY_S:
            self._write()

    def _write(self) -> None:
        self._written = time.monotonic()
        if not self.persist:
            return
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps(self.data, indent=1) + "\n")
        os.replace(tmp, self.path)
