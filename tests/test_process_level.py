"""The verdict whose unit is the server process (stats/process_level.py) and the blocks a run restarts its servers
between (runner/process_blocks.py). Synthetic rounds and fake lifecycles: no engine is run."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dbperf.experiment.model import ProcessCount
from dbperf.runner.process_blocks import ProcessBlocks
from dbperf.runner.rounds import GroupState, Measured
from dbperf.stats.planned import price
from dbperf.stats.process_level import (
    FEWEST_PROCESSES,
    MOST_PROCESSES,
    ROUNDS_A_PROCESS,
    block_of,
    choose_processes,
    complete_blocks,
    process_interval,
    rounds_per_process,
)
from dbperf.stats.verdict import METRIC_ALPHA, ProcessPlan, verdict_on_rounds

pytestmark = pytest.mark.unit

ROUNDS = 18
PROCESSES = 6
SEQUENCES = 1500


def _aa_rounds(rng: np.random.Generator, processes: int, offset_sd: float, noise_sd: float
               ) -> tuple[list[tuple[int, float, float]], dict[int, int]]:
    """One A/A run's round pairs: each side's process draws a level (log, sd `offset_sd`) for its life, every round
    adds its own noise (Student t, 3 df, scaled to sd `noise_sd`). `processes` = 1: one process a side for the run,
    as every run was before `processes`."""
    per = math.ceil(ROUNDS / processes)
    levels = rng.normal(0, offset_sd, (processes, 2))
    noise = rng.standard_t(3, ROUNDS) * noise_sd / math.sqrt(3)
    pairs, process_of = [], {}
    for r in range(1, ROUNDS + 1):
        block = block_of(r, per)
        x = levels[block - 1, 0] - levels[block - 1, 1] + noise[r - 1]
        pairs.append((r, math.exp(x), 1.0))
        process_of[r] = block
    return pairs, process_of


def _false_calls(processes: int, offset_sd: float, noise_sd: float = 0.01, seed: int = 7) -> float:
    rng = np.random.default_rng(seed)
    called = 0
    for _ in range(SEQUENCES):
        pairs, process_of = _aa_rounds(rng, processes, offset_sd, noise_sd)
        blocks = ProcessPlan(process_of, processes) if processes > 1 else None
        v = verdict_on_rounds(pairs, [t for _, t, _ in pairs], [b for _, _, b in pairs], 0.02, describe=False,
                              planned=ROUNDS, blocks=blocks)
        called += v is not None and v.verdict in ("faster", "slower")
    return called / SEQUENCES


def test_todays_rule_calls_a_per_process_offset_a_change_and_the_process_rule_does_not():
    """The same A/A builds: with no per-process part both rules stay within 1%; with one (each process draws a level
    of sd 1%, 2% or 4%, the rounds' own noise 1%), the round-level rule of a run with one process a side calls
    more cells changed the larger the level (beyond the 2% minimum effect: most at 4%), the rule on six processes
    a side stays within 1%."""
    assert _false_calls(1, 0.0) <= 0.01
    assert _false_calls(PROCESSES, 0.0) <= 0.01
    today = [_false_calls(1, sd) for sd in (0.01, 0.02, 0.04)]
    assert today == sorted(today) and today[0] > 0.03 and today[-1] > 0.5, today  # rises with the offset
    for sd in (0.01, 0.02, 0.04):
        assert _false_calls(PROCESSES, sd) <= 0.01, sd


def test_a_real_change_is_still_decided_on_processes():
    """A 10% change with the same per-process offsets (sd 1%) is called faster on six processes a side."""
    rng = np.random.default_rng(3)
    decided = 0
    for _ in range(200):
        pairs, process_of = _aa_rounds(rng, PROCESSES, 0.01, 0.01)
        pairs = [(r, t * 1.10, b) for r, t, b in pairs]
        v = verdict_on_rounds(pairs, [t for _, t, _ in pairs], [b for _, _, b in pairs], 0.02, describe=False,
                              planned=ROUNDS, blocks=ProcessPlan(process_of, PROCESSES))
        assert v is not None and v.verdict != "slower"
        decided += v.verdict == "faster"
        assert v.processes == PROCESSES
    assert decided >= 180


def test_a_block_counts_once_complete_and_too_few_blocks_decide_nothing():
    pairs = [(r, 1.1, 1.0) for r in range(1, 8)]
    process_of = {r: block_of(r, 3) for r in range(1, 8)}  # blocks 1 1 1 2 2 2 3
    assert list(complete_blocks(pairs, process_of, 3)) == [1, 2]  # block 3 has 1 of its 3 rounds
    assert list(complete_blocks(pairs, process_of, None)) == [1, 2]  # a later block begun ends one
    assert list(complete_blocks(pairs, process_of, 3, ended=True)) == [1, 2, 3]  # the group's rounds are over
    cs, count = process_interval(pairs, process_of, METRIC_ALPHA, 3, 3)
    assert count == 2 and not cs.bounded  # two processes a side: no spread of processes to judge on
    assert rounds_per_process(18, 6) == 3 and rounds_per_process(20, 6) == 4
    assert rounds_per_process(18, 1) is None and rounds_per_process(None, 6) is None


class _Server:
    def __init__(self) -> None:
        self.started = 0
        self.restarted = 0

    def new_process(self) -> bool:
        self.started += 1
        return True

    def restart(self) -> bool:
        self.restarted += 1
        return True


class _InProcess:
    def new_process(self) -> bool:
        return False

    def restart(self) -> bool:
        return False


def _timed_after_load(blocks: ProcessBlocks, seconds: dict[str, float]) -> None:
    """Each target's restart after its load, on a clock that moves by its seconds."""
    for name, s in seconds.items():
        blocks.loaded(name, clock=iter([0.0, s]).__next__)


def test_servers_start_again_at_each_block_and_each_new_group_but_not_on_a_replayed_round():
    server, sqlite = _Server(), _InProcess()
    told: list[tuple[list[str], int]] = []
    blocks = ProcessBlocks(ProcessCount(3), {"pg": server, "sqlite": sqlite}, lambda names, b: told.append((names, b)))  # type: ignore[dict-item]
    got = [blocks.before_round("g1", None if r == 1 else 9, r, replayed=False) for r in range(1, 10)]
    assert got == [1, 1, 1, 2, 2, 2, 3, 3, 3]
    assert server.started == 2 and told == [(["pg"], 2), (["pg"], 3)]  # the load's process serves block 1
    assert blocks.before_round("g2", None, 1, replayed=False) == 1 and server.started == 3  # a new group
    assert blocks.before_round("g3", 9, 4, replayed=True) == 2 and server.started == 3  # an earlier sitting's
    assert ProcessBlocks(ProcessCount(1), {"pg": server}, lambda *_: None).before_round("g", 9, 5, False) is None  # type: ignore[dict-item]


def test_the_stopping_loop_judges_on_the_blocks_as_the_report_does():
    """GroupState.verdicts (the stopping rule) passes each round's block: a per-process level alone is not called."""
    rng = np.random.default_rng(11)
    pairs, process_of = _aa_rounds(rng, PROCESSES, 0.0, 0.002)
    measured = []
    for r, t, b in pairs:
        shift = 1.05 if process_of[r] == 1 else 1.0  # the target's first process drew a fast level
        measured += [Measured("A", r, b * 1000, process=process_of[r]),
                     Measured("B", r, t * shift * 1000, process=process_of[r])]
    one = GroupState("A", ["A", "B"], 0.02, measured=measured, rounds=ROUNDS, planned=ROUNDS, processes=1)
    six = GroupState("A", ["A", "B"], 0.02, measured=measured, rounds=ROUNDS, planned=ROUNDS, processes=PROCESSES)
    v_six = six.verdicts()["B"]
    assert v_six is not None and v_six.processes == PROCESSES and v_six.verdict not in ("faster", "slower")
    v_one = one.verdicts()["B"]
    assert v_one is not None and v_one.processes is None


def test_the_restarts_are_kept_out_of_the_plan():
    """A group's plan is what its share affords after its restarts: P of them, each as long as the restart timed
    after the load (not the load's own start, which initialised the data directory)."""
    from dbperf.runner.rounds import RoundPolicy, run_rounds

    servers = {"pg": _Server(), "pg-aa": _Server(), "sqlite": _InProcess()}
    blocks = ProcessBlocks(ProcessCount(5), servers, lambda *_: None)  # type: ignore[arg-type]
    _timed_after_load(blocks, {"pg": 2.0, "pg-aa": 2.0, "sqlite": 9.0})  # nothing of SQLite's to restart
    assert blocks.overhead_s(60.0, 1.0) == 20.0
    assert servers["pg"].restarted == 1 and servers["pg"].started == 0  # replaced, not counted as a block's
    one = ProcessBlocks(ProcessCount(1), {"pg": _Server()}, lambda *_: None)  # type: ignore[dict-item]
    _timed_after_load(one, {"pg": 2.0})
    assert one.overhead_s(60.0, 1.0) == 0.0 and one.data["pg"].restarted == 0  # type: ignore[attr-defined]
    now = [0.0]

    def measure(round_: int) -> list[Measured]:
        now[0] += 1.0
        return [Measured("A", round_, 1000.0), Measured("B", round_, 1000.0)]

    state = GroupState("A", ["A", "B"], 0.02, processes=5)
    run_rounds(state, RoundPolicy(3, budget_s=100.0, plans=True), measure, deadline=60.0, clock=lambda: now[0],
               overhead=blocks.overhead_s)
    assert state.planned == 40  # (60 - 20) s at 1 s a round


def test_auto_chooses_the_narrowest_interval_within_its_bounds_and_says_why():
    """The count of least price(P) / sqrt(rounds after P restarts), at least two rounds a process, 5 to 32: more
    processes as the share grows or the restarts shrink; at the fewest, said so, when the share cannot hold them."""
    def width(p: int, share: float, round_s: float, restart: float) -> float:
        return price(p, METRIC_ALPHA) / math.sqrt((share - p * restart) // round_s)

    for share, round_s, restart in [(100.0, 3.0, 3.0), (100.0, 1.0, 1.0), (600.0, 3.0, 3.0), (90.0, 2.0, 0.5)]:
        choice = choose_processes(share, round_s, restart, METRIC_ALPHA)
        assert FEWEST_PROCESSES <= choice.count <= MOST_PROCESSES
        assert choice.rounds == int((share - choice.count * restart) // round_s)
        assert choice.rounds >= ROUNDS_A_PROCESS * choice.count
        fits = [p for p in range(FEWEST_PROCESSES, MOST_PROCESSES + 1)
                if (n := (share - p * restart) // round_s) >= ROUNDS_A_PROCESS * p
                and math.ceil(n / math.ceil(n / p)) == p]
        per = rounds_per_process(choice.rounds, choice.count)
        assert per is not None and block_of(choice.rounds, per) == choice.count  # the last round in the last block
        assert width(choice.count, share, round_s, restart) == min(width(p, share, round_s, restart) for p in fits)
        assert f"{choice.count}, of 5–32" in choice.reason and f"{choice.rounds} rounds" in choice.reason
    short, cheap, long_ = (choose_processes(s, 3.0, r, METRIC_ALPHA) for s, r in [(100.0, 3.0), (100.0, 0.5),
                                                                                     (1800.0, 3.0)])
    assert short.count < cheap.count and short.count < long_.count == MOST_PROCESSES
    tight = choose_processes(30.0, 3.0, 3.0, METRIC_ALPHA)  # 5 restarts leave 5 rounds: under 2 a process
    assert tight.count == FEWEST_PROCESSES and tight.rounds == 5 and "fewer than 2 rounds a process" in tight.reason


def test_auto_chooses_once_at_the_first_plan_and_every_later_group_keeps_it():
    """"auto": the first round is block 1 before any count exists; the first group's plan chooses (said once), the
    plan keeps the chosen restarts out, later groups and a resumed sitting keep the count."""
    from dbperf.runner.rounds import RoundPolicy, run_rounds

    server = _Server()
    told: list[object] = []
    blocks = ProcessBlocks(ProcessCount(None), {"pg": server}, lambda *_: None, told.append)  # type: ignore[dict-item]
    _timed_after_load(blocks, {"pg": 1.0})
    assert blocks.before_round("g1", None, 1, replayed=False) == 1 and blocks.processes == 0
    now = [0.0]
    rng = np.random.default_rng(3)

    def measure(round_: int) -> list[Measured]:  # noisy enough that no look decides before the plan's end
        blocks.before_round("g1", state.planned, round_, replayed=False)
        now[0] += 1.0
        return [Measured("A", round_, 1000.0), Measured("B", round_, 1000.0 * math.exp(rng.normal(0, 0.5)))]

    state = GroupState("A", ["A", "B"], 0.02)
    run_rounds(state, RoundPolicy(3, budget_s=100.0, plans=True), measure, deadline=100.0, clock=lambda: now[0],
               overhead=blocks.overhead_s)
    chosen = choose_processes(100.0, 1.0, 1.0, METRIC_ALPHA)
    assert len(told) == 1 and told[0] == chosen and blocks.processes == chosen.count
    assert state.planned == chosen.rounds  # the share less the chosen count's restarts
    assert server.started == chosen.count - 1  # every block after the load's first process
    assert blocks.overhead_s(10.0, 5.0) == chosen.count * 1.0 and len(told) == 1  # a later group: not again
    again = ProcessBlocks(ProcessCount(None), {}, lambda *_: None, told.append)
    again.resumed(7)
    assert again.overhead_s(100.0, 1.0) == 0.0 and again.processes == 7 and len(told) == 1
    fixed = ProcessBlocks(ProcessCount(5), {}, lambda *_: None, told.append)
    fixed.resumed(9)  # a set count is the experiment's, whatever was kept
    assert fixed.processes == 5


def test_the_spread_is_split_into_a_rounds_and_a_processs_own():
    """Six processes of six rounds: the rounds' own noise (sd 1%) and each process's level (sd 3%) found again
    within the sampling error of so few processes; without levels, the process's part is about nothing."""
    from dbperf.stats.process_level import process_spread

    rng = np.random.default_rng(5)
    levels = rng.normal(0, 0.03, 6)
    pairs, process_of = [], {}
    for r in range(1, 37):
        block = block_of(r, 6)
        pairs.append((r, math.exp(levels[block - 1] + rng.normal(0, 0.01)), 1.0))
        process_of[r] = block
    found = process_spread(pairs, process_of)
    assert found is not None
    rounds, processes = found
    assert 0.007 < rounds < 0.013 and 0.015 < processes < 0.05, found
    flat = [(r, math.exp(rng.normal(0, 0.01)), 1.0) for r in range(1, 37)]
    assert process_spread(flat, process_of)[1] < 0.005  # type: ignore[index]
    assert process_spread(pairs[:6], process_of) is None  # one block


@pytest.mark.parametrize(("run", "said"), [
    ('repeats = "auto"\nbudget = "60s"\nprocesses = "auto"', None),
    ('repeats = 6\nprocesses = "auto"', 'processes: "auto" chooses the count from a group\'s share of the budget'),
    ('repeats = "auto"\nbudget = "60s"\nprocesses = "many"',
     'expected an integer from 1 to 32 or "auto", got \'many\''),
    ('repeats = "auto"\nbudget = "60s"\nprocesses = 33', 'expected an integer from 1 to 32 or "auto", got 33'),
])
def test_the_processes_key_takes_a_count_or_auto(tmp_path, run, said):
    from dbperf.errors import UserError
    from dbperf.experiment.spec import parse_experiment

    path = tmp_path / "exp.toml"
    path.write_text(f'[run]\nbenchmarks = ["point-query"]\n{run}\n\n[[target]]\nname = "pg"\nengine = "postgres"\n')
    if said is None:
        assert parse_experiment(path).processes == ProcessCount(None) and str(ProcessCount(None)) == "auto"
        return
    with pytest.raises(UserError, match=None) as err:
        parse_experiment(path)
    assert said in str(err.value)


def test_the_process_levels_interval_covers_it_as_often_as_it_says():
    """Runs of 5 processes of 4 rounds (round sd 6%, process sd 2%, as measured on MariaDB): the 90% interval on the
    process level holds the true 2% in about 90% of 300 simulated sets of 11 runs, and its point lies inside."""
    from dbperf.stats.process_level import level_interval

    rng = np.random.default_rng(5)
    held = 0
    for _ in range(300):
        runs = [{p: list(rng.normal(rng.normal(0, 0.02), 0.06, 4)) for p in range(1, 6)} for _ in range(11)]
        found = level_interval(runs, 0.90)
        assert found is not None and found.low <= found.point <= found.high
        assert (found.between_df, found.within_df) == (44, 165)
        held += found.low <= 0.02 <= found.high
    assert 0.84 <= held / 300 <= 0.96
    assert level_interval([{1: [0.1, 0.2], 2: [0.3]}]) is None  # one process of two rounds: nothing to compare
