"""Probes compiled with the machine's cc and run briefly. Only what must hold on any x86-64 under load is checked,
never exact numbers."""

from __future__ import annotations

import json
import platform

import pytest

from dbperf.probes.run import aggregate, run_probes
from tests.conftest import run_cli

pytestmark = pytest.mark.e2e

X86 = platform.machine() in ("x86_64", "i686")
NOISE = 1.5  # a loaded 2-core machine: allow this factor before calling an order wrong


@pytest.fixture(scope="module")
def result(tmp_path_factory: pytest.TempPathFactory):
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("DBPERF_CACHE", str(tmp_path_factory.mktemp("cache")))
        yield run_probes(["barriers", "spin", "prng", "timers", "sharing"], repeats=5, scale=0.01)


def fig(result, family, name):
    return next(f for f in result["families"][family]["figures"] if f["name"] == name)


def median_ns(result, family, name):
    return fig(result, family, name)["ns_per_op"]["median"]


def test_every_family_ran_with_five_repeats_and_both_units(result):
    for name, fam in result["families"].items():
        assert "figures" in fam, (name, fam)
        for f in fam["figures"]:
            assert f["repeats"] == 5
            assert f["ns_per_op"]["min"] <= f["ns_per_op"]["median"] <= f["ns_per_op"]["max"]
            if X86:
                assert f["ticks_per_op"]["median"] > 0
    assert result["host"]["cores"] >= 1 and "invariant" in result["host"]["tsc"]
    if X86:
        assert result["tsc_ghz"]["median"] > 0.1


def test_a_locked_cmpxchg_is_not_cheaper_than_a_plain_store(result):
    assert median_ns(result, "barriers", "lock cmpxchg") * NOISE >= median_ns(result, "barriers", "plain store")
    assert (median_ns(result, "barriers", "two locked cmpxchg (original)") * NOISE
            >= median_ns(result, "barriers", "no barrier (not SMP safe)"))


def test_padded_counters_are_not_slower_than_shared_ones(result):
    shared = median_ns(result, "sharing", "same cache line")
    assert median_ns(result, "sharing", "128 bytes apart") <= shared * NOISE


@pytest.mark.skipif(not X86, reason="x86-only probe")
def test_spin_table_and_the_off_by_one(result):
    delays = [f for f in result["families"]["spin"]["figures"] if f["group"] == "ut_delay"]
    assert sorted({f["x"] for f in delays}) == list(range(7))
    backoff = fig(result, "spin", "random delay draw")
    assert backoff["mean_0_to_n"] / backoff["mean_0_to_n_minus_1"] == pytest.approx(1.2, rel=0.02)
    assert fig(result, "spin", "PAUSE")["ticks_per_op"]["median"] > 0


def test_aggregate_keeps_identities_apart():
    samples = [{"group": "ut_delay", "name": "InnoDB", "x": x, "repeat": r, "ops": 10, "ns": 100 * (x + 1) + r,
                "ticks": 200} for x in (0, 1) for r in range(3)]
    figures = aggregate(samples)
    assert [(f["x"], f["ns_per_op"]["median"]) for f in figures] == [(0, 10.1), (1, 20.1)]


def test_cli_stores_compares_and_refuses_unknown_probes(tmp_path):
    for name in ("a", "b"):
        proc = run_cli("probe", "timers", "--scale", "0.01", "--out", str(tmp_path / name), "--json")
        assert proc.returncode == 0, proc.stderr
        assert json.loads(proc.stdout)["families"]["timers"]["figures"]
    proc = run_cli("probe", "--compare", str(tmp_path / "a"), "--compare", str(tmp_path / "b"))
    assert proc.returncode == 0, proc.stderr
    assert "clock_gettime(CLOCK_MONOTONIC)" in proc.stdout and "B / A" in proc.stdout
    bad = run_cli("probe", "nosuch")
    assert bad.returncode == 2 and "unknown probe 'nosuch'" in bad.stderr and "Traceback" not in bad.stderr
