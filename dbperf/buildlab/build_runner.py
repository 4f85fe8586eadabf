"""How a server build runs its recipe's commands (server_build.py): one after another in the source tree, every line
into the build's log, counting compile steps against the sources for its progress, and the time of each command
(wall clock and CPU) into the build's state, so that a resumed build skips what an earlier segment finished
(resume.py). A command that fails keeps its log (build/failed/) and is one line."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import IO

from dbperf.buildlab.paths import server_cache
from dbperf.buildlab.recipes import Recipe
from dbperf.buildlab.resume import BuildState, children_cpu_seconds
from dbperf.buildlab.staging import kill_session
from dbperf.errors import UserError
from dbperf.experiment.build_variants import ServerBuildSpec
from dbperf.host.compiler import build_environment
from dbperf.tools import tail

Progress = Callable[[str, int, int], None]  # (phase, steps done, steps expected)


class BuildRunner:
    """Runs a build's commands in the source tree, every line into the log, counting compile steps and the time of
    each command (wall clock and CPU) into the build's state."""

    def __init__(self, spec: ServerBuildSpec, recipe: Recipe, tree: Path, log: Path,
                 on_progress: Progress | None, state: BuildState) -> None:
        self.spec, self.recipe, self.tree, self.log, self.on_progress = spec, recipe, tree, log, on_progress
        self.state = state
        self.expected = recipe.expected_steps(tree)
        self.env: dict[str, str] = {}  # beside the build environment (ccache's, in a kept tree)

    @property
    def steps(self) -> int:
        """Compile steps of every phase and segment (an object whose compile was interrupted counts again)."""
        return self.state.all_steps

    def run(self, commands: list[list[str]], phase: str) -> int:
        """The commands one after another, those an earlier segment of the build finished skipped; the compile
        steps of `phase`, every segment's."""
        label = f"{phase}, resumed" if self.state.resumed else phase
        done = self.state.commands_done(phase)
        with open(self.log, "a") as f:
            for cmd in commands[done:]:
                if self.state.resumed:
                    f.write(f"# resumed: segment {self.state.earlier_segments + 1}\n")
                f.write("$ " + " ".join(cmd) + "\n")
                f.flush()
                cpu_before = children_cpu_seconds()
                try:
                    self._command(cmd, f, phase, label)
                finally:  # finished, failed or killed: its CPU time (and its reaped children's) is the build's
                    self.state.add_cpu(children_cpu_seconds() - cpu_before)
                self.state.command_done(phase)
        return self.state.steps(phase)

    def _command(self, cmd: list[str], f: IO[str], phase: str, label: str) -> None:
        """One command, its output into the log `f`; a UserError when it fails."""
        proc = subprocess.Popen(cmd, cwd=self.tree, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                errors="replace", env={**build_environment(), **self.env},
                                start_new_session=True)
        assert proc.stdout is not None
        try:
            for line in proc.stdout:
                f.write(line)
                if self.recipe.is_step(line):
                    self.state.step(phase, proc.pid)
                    if self.on_progress:
                        self.on_progress(label, self.state.steps(phase), self.expected)
            proc.wait()
        except BaseException:
            # Ctrl-C, SIGTERM or an error: the build tool and every compiler it started (ninja puts each in a
            # process group of its own, so the whole session), then the caller's clean-up.
            kill_session(proc.pid)
            proc.wait()
            raise
        if proc.returncode != 0:
            f.flush()
            raise UserError(f"build of {self.spec.label()} failed at `{' '.join(cmd)[:60]}` (log "
                            f"{keep_log(self.log)}): {tail(self.log.read_text(errors='replace'), 3)}")


def keep_log(log: Path) -> Path:
    """A copy of a failed build's log in build/failed/, which outlives its staging directory."""
    failed = server_cache() / "build" / "failed"
    failed.mkdir(exist_ok=True)
    kept = failed / f"{datetime.now(UTC).strftime('%Y%m%dT%H%M%S')}-{log.parent.name.strip('.')}.log"
    shutil.copyfile(log, kept)
    return kept
