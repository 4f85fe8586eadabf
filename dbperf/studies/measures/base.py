"""What a study figure's measure is (where its number comes from, as the fleet's messages are): one tagged struct
per `from` kind, each a module of this package (probe.py, cell.py, geomean.py, in_json.py) with a `KIND`, found by
import (measures/__init__.py) as the step kinds are. Decoded once when the study loads (definition.py); asked, never
branched on by name: what it names is checked (`check`), what its step wrote is read (`read`), and it says whether
a record written again reads it back from the results kept beside the record (`reread`) and which of a record's
kept evidence it rests on (`evidence_kept`)."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Protocol

import msgspec

from dbperf.errors import UserError
from dbperf.experiment.model import Experiment
from dbperf.host.topology import HostShape
from dbperf.run_meta import RunMeta
from dbperf.stats.rqps_matrix import Matrix
from dbperf.studies.measured import Measured


class Reading(Protocol):
    """What a measure reads with (figures.Reader): each step's JSON, results and meta.json, loaded once."""

    def load_json(self, path: Path) -> Any: ...

    def step_json(self, step: str, file: str | None = None) -> Any: ...

    def exact(self, step: str) -> str | None: ...

    def matrix(self, step: str, results_from: str | None = None, base: str | None = None) -> Matrix: ...

    def meta(self, step: str, results_from: str | None = None, base: str | None = None) -> RunMeta: ...

    def host_shape(self, step: str) -> HostShape: ...

    def run_vcpus(self, step: str) -> int: ...


@dataclass(frozen=True)
class MeasureChecking:
    """What a measure's check may ask (model.py builds it once a study's steps are checked): where it is said, the
    study's steps, the probe families each runs, the targets of each experiment step (in any mode), the catalog's
    benchmarks."""
    where: str
    steps: Collection[str]
    families: Mapping[str, tuple[str, ...]]
    targets: Mapping[str, set[str]]
    catalog: Mapping[str, Any]

    def refuse(self, why: str) -> UserError:
        return UserError(f"{self.where}: {why}")


class Measure(msgspec.Struct, frozen=True, forbid_unknown_fields=True, omit_defaults=True, tag_field="from"):
    """A figure's measure: the step it reads, and what of it (each kind's own fields)."""
    step: str
    # The step describes its host's topology, PMU and releases (a probe step): every `requires` key is checked of
    # it; of any other step only `threads`, against the vCPUs its run's meta.json names (host_shape).
    describes_host: ClassVar[bool] = False
    # It reads the step's results directory (a matrix of cells), not the step's JSON.
    reads_results: ClassVar[bool] = False
    # It times instructions on this CPU (a probe's loop): what the host notes on vendor, PAUSE and TSC ticks are for.
    times_the_cpu: ClassVar[bool] = False

    def check(self, at: MeasureChecking) -> None:
        """Refuses a measure naming what the study does not have; one line, UserError. Each kind adds its own."""
        if self.step not in at.steps:
            raise at.refuse(f"measure step {self.step!r} is not a step of the study")

    def read(self, reader: Reading) -> Measured:
        """The value (or fact) and its evidence, from what the step wrote; NotMeasured says why there is none."""
        raise NotImplementedError

    def host_shape(self, reader: Reading) -> HostShape:
        """The host its step ran on, as far as a `requires` is checked of it: the vCPUs of the step's run."""
        vcpus = reader.run_vcpus(self.step)
        return HostShape(vcpus, vcpus)  # cores, PMU and releases: not checked of this step (model.py refuses them)

    def reread(self, kept: Collection[str]) -> bool:
        """Whether `dbperf study record --again` reads it back from the results kept beside the record (`kept`: the
        steps whose results are): a step's JSON is not kept with its results."""
        return self.reads_results and self.step in kept

    def evidence_kept(self, results: Collection[str], outputs: Collection[str]) -> bool:
        """Whether a record lists as kept what it reads (`results`: the steps whose results directories it keeps,
        `outputs`: those whose JSON it keeps)."""
        return self.step in (results if self.reads_results else outputs)

    def run_step(self) -> str | None:
        """The experiment step whose run in a mode decides whether this measure is in it (left_out_of), or None."""
        return None

    def left_out_of(self, run: Experiment) -> str | None:
        """What it reads that this run of its step (a --quick or --smoke one) leaves out, or None."""
        return None
