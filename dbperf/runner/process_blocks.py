"""`processes = P`: each lab-started server target started again between P blocks of a group's rounds, so that the
verdict's unit above the round is a process, not a run (stats/process_level.py says why and how it is judged).

A group's rounds are shared out over P blocks of rounds_per_process(planned, P) rounds (the plan is known after the
first round; the first round is block 1 whatever it turns out to be). Before the first round of every block, and
before a new group's first round, every target whose lifecycle has a process of the lab's is started again on the
same data: the base, its A/A copy and the others at the same boundary, so that block k of the base and of a target
are measured by processes started together. The run's very first round uses the process each target was started
again as right after its load (`loaded`): started on the loaded data, as every later block's is, and timed. A
round walked again from an earlier sitting (resume) restarts nothing: its records are that sitting's.

`processes = "auto"`: P is chosen when the first group plans its rounds (after its first round, which is block 1
whatever P turns out to be), from the group's share, its round's length and the restarts timed after the load
(stats/process_level.py choose_processes); every group after it keeps that P, and a resumed run the one its meta
kept."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping

from dbperf.experiment.model import ProcessCount
from dbperf.stats.process_level import ProcessChoice, block_of, choose_processes, rounds_per_process
from dbperf.stats.verdict import METRIC_ALPHA
from dbperf.targets.lifecycle import TargetLifecycle


class ProcessBlocks:
    def __init__(self, setting: ProcessCount, data: Mapping[str, TargetLifecycle],
                 said: Callable[[list[str], int], None],
                 chosen: Callable[[ProcessChoice], None] = lambda _: None) -> None:
        self.setting = setting
        self.processes = setting.fixed or 0  # auto: 0 until chosen
        self.data = data
        self.said = said  # told which targets were started again, for which block
        self.chosen = chosen  # told the count "auto" chose, once
        self.current: tuple[object, int] | None = None  # (group, block) the servers' processes were started for
        self.start_s: dict[str, float] = {}  # each target's restart, timed after its load

    def loaded(self, name: str, clock: Callable[[], float] = time.monotonic) -> None:
        """After `name`'s load, when the run restarts its servers: the load's process is stopped and started again
        on the loaded data, and that is timed. The load's own start does not price a restart: it initialised the
        data directory (MariaDB 5-14 s here), which no restart does, so "auto" chose too few processes from it."""
        if not self.setting.restarts():
            return
        began = clock()
        if self.data[name].restart():
            self.start_s[name] = clock() - began

    def resumed(self, processes: int | None) -> None:
        """An earlier sitting's count (meta.json), kept: "auto" does not choose again."""
        if self.setting.auto and processes:
            self.processes = processes

    def overhead_s(self, share_s: float, round_s: float) -> float:
        """What a group's restarts will take, kept out of its plan of its share (`share_s`) at `round_s` a round:
        P of them (the first round of a new group included), each as long as the targets' restarts timed after
        their loads. Under "auto", the first call chooses P."""
        if not self.setting.restarts():
            return 0.0
        restart_s = sum(self.start_s.values())
        if not self.processes:
            choice = choose_processes(share_s, round_s, restart_s, METRIC_ALPHA)
            self.processes = choice.count
            self.chosen(choice)
        return self.processes * restart_s

    def before_round(self, group: object, planned: int | None, round_: int, replayed: bool) -> int | None:
        """The block of `round_` of `group` (None: one process a target), the servers started again first when the
        round begins another block than the one their processes serve."""
        if not self.setting.restarts():
            return None
        per = rounds_per_process(planned, self.processes)
        if per is None and round_ != 1:
            return None  # no plan to share out (a resumed group whose plan was not kept)
        block = 1 if per is None else block_of(round_, per)
        if replayed:
            return block
        if self.current is not None and self.current != (group, block):
            started = [name for name, lifecycle in self.data.items() if lifecycle.new_process()]
            if started:
                self.said(started, block)
        self.current = (group, block)
        return block
