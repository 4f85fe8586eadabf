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

import os
import resource
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import msgspec

from dbperf.errors import UserError
from dbperf.host.procfs import stat

STATE = "resume.json"
# resume.json's format. Every file written has carried `"version": 1`; one without a version is read as version 1
# (its shape is still checked). A newer version, or a file that is not this shape, is one line naming the folder.
VERSION = 1
WRITE_EVERY_S = 5.0  # a segment killed outright loses at most this much of its time
TICKS = os.sysconf("SC_CLK_TCK")


class Segment(msgspec.Struct, kw_only=True):
    """One sitting of the build: when it started, its wall clock and CPU time, its compile steps."""
    started_at: str
    seconds: float = 0.0
    cpu_seconds: float = 0.0
    steps: int = 0


class Fetched(msgspec.Struct, kw_only=True):
    """The source an earlier segment fetched: its unpacked tree and its provenance (the manifest's `source`)."""
    tree: str
    provenance: dict[str, Any]


class ResumeRecord(msgspec.Struct, kw_only=True):
    """resume.json: what a build has done so far, read once where the build starts (read_resume)."""
    version: int = VERSION
    label: str = ""
    source: Fetched | None = None
    commands: dict[str, int] = {}  # phase -> commands finished
    steps: dict[str, int] = {}  # phase -> compile steps, every segment's
    phases: dict[str, Any] = {}  # phase -> what it recorded when it finished (PGO's training, the profile-use build)
    segments: list[Segment] = []
    # Phases begun and not to be trusted half done (BOLT's rewrite of the installed server); files written before
    # BOLT resumed have none.
    begun: list[str] = []


def read_resume(path: Path) -> ResumeRecord:
    """A build's resume.json, decoded and checked; a UserError in one line, naming the folder to remove, when this
    dbperf cannot read it (damaged, another shape, or a newer version)."""
    remedy = f"remove {path.parent} to build from scratch"
    try:
        raw = msgspec.json.decode(path.read_bytes())
    except (OSError, msgspec.DecodeError) as e:
        raise UserError(f"{path}: unreadable ({e}): {remedy}") from None
    if not isinstance(raw, dict):
        raise UserError(f"{path}: unreadable (expected a JSON object): {remedy}")
    version = raw.get("version", 1)
    if version != VERSION:
        raise UserError(f"{path}: written by another dbperf (version {version!r}, this one reads {VERSION}): "
                        f"{remedy}")
    try:
        return msgspec.convert({**raw, "version": VERSION}, ResumeRecord)
    except msgspec.ValidationError as e:
        raise UserError(f"{path}: unreadable ({e}): {remedy}") from None


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
        found = persist and self.path.is_file()
        self.record = read_resume(self.path) if found else ResumeRecord(label=label)
        self.earlier_segments = len(self.record.segments)
        self.record.segments.append(Segment(started_at=datetime.now(UTC).isoformat(timespec="seconds")))
        self._started = time.monotonic()
        self._cpu_done = 0.0  # this segment's finished commands
        self._written = 0.0
        self._write()

    @property
    def resumed(self) -> bool:
        return self.earlier_segments > 0

    def source(self) -> tuple[Path, dict[str, Any]] | None:
        """The tree and provenance fetched by an earlier segment, when it still exists."""
        src = self.record.source
        if src is None or not Path(src.tree).is_dir():
            return None
        return Path(src.tree), src.provenance

    def set_source(self, tree: Path, provenance: dict[str, Any]) -> None:
        self.record.source = Fetched(tree=str(tree), provenance=provenance)
        self._write()

    def commands_done(self, phase: str) -> int:
        return self.record.commands.get(phase, 0)

    def steps(self, phase: str) -> int:
        """Compile steps of `phase`, every segment's."""
        return self.record.steps.get(phase, 0)

    @property
    def all_steps(self) -> int:
        """Compile steps of every phase and segment."""
        return sum(self.record.steps.values())

    def step(self, phase: str, live_pid: int | None) -> None:
        """One compile step of `phase`; `live_pid`'s CPU time so far counts towards the segment's."""
        self.record.steps[phase] = self.steps(phase) + 1
        self.record.segments[-1].steps += 1
        self._tick(process_cpu_seconds(live_pid) if live_pid else 0.0)

    def command_done(self, phase: str) -> None:
        self.record.commands[phase] = self.commands_done(phase) + 1
        self._write()

    def add_cpu(self, cpu_seconds: float) -> None:
        """CPU time of a command that ended (finished or was killed and reaped)."""
        self._cpu_done += cpu_seconds
        self._tick(0.0, force=True)

    def result(self, phase: str) -> Any:
        """What a finished phase recorded (None when it has not finished)."""
        return self.record.phases.get(phase)

    def finish(self, phase: str, result: Any) -> None:
        self.record.phases[phase] = result
        self._write()

    def started(self, phase: str) -> bool:
        """Whether an earlier segment began `phase` (marked by begin()) without finishing it."""
        return phase in self.record.begun and self.result(phase) is None

    def begin(self, phase: str) -> None:
        self.record.begun.append(phase)
        self._write()

    def totals(self) -> dict[str, Any]:
        """The manifest's time: wall clock and CPU summed over the segments, and the segments."""
        self._tick(0.0, force=True)
        return segment_totals(self.record.segments)

    def _tick(self, live_cpu: float, force: bool = False) -> None:
        segment = self.record.segments[-1]
        segment.seconds = round(time.monotonic() - self._started, 1)
        segment.cpu_seconds = round(self._cpu_done + live_cpu, 1)
        if force or time.monotonic() - self._written > WRITE_EVERY_S:
            self._write()

    def _write(self) -> None:
        self._written = time.monotonic()
        if not self.persist:
            return
        tmp = self.path.with_suffix(".tmp")
        tmp.write_bytes(msgspec.json.format(msgspec.json.encode(self.record), indent=1) + b"\n")
        os.replace(tmp, self.path)


def segment_totals(segments: list[Segment]) -> dict[str, Any]:
    """Wall clock and CPU summed over a build's segments (the manifest's build_seconds and build_cpu_seconds), and
    the segments as the manifest lists them."""
    return {"build_seconds": round(sum(s.seconds for s in segments), 1),
            "build_cpu_seconds": round(sum(s.cpu_seconds for s in segments), 1),
            "segments": msgspec.to_builtins(segments)}
