"""The core-to-core probe on this host: one cache line moved between each pair of vCPUs, and false sharing at two
threads and at the host's thread count; the host's shape (vCPUs, cores) is kept beside the figures so that a
figure requiring what the host lacks is not reproducible here."""

from __future__ import annotations

import os

import pytest

from dbperf.probes.run import run_probes

pytestmark = pytest.mark.e2e


@pytest.mark.skipif((os.cpu_count() or 1) < 2, reason="the c2c probe needs two vCPUs")
def test_every_pair_of_vcpus_and_false_sharing_at_this_thread_count():
    result = run_probes(["c2c"], repeats=1, scale=0.002)
    n = os.cpu_count() or 1
    figures = result["families"]["c2c"]["figures"]
    pairs = {(f["pair"], f["name"]) for f in figures if f["group"] == "one cache line, turn by turn"}
    assert pairs == {(f"{a},{b}", f"vCPU {a} and vCPU {b}") for a in range(n) for b in range(a + 1, n)}
    assert all(f["ns_per_op"]["median"] > 0 for f in figures)
    sharing = {(f["name"], f["threads"]) for f in figures if f["group"] == "false sharing"}
    assert sharing == {(f"{name}, {k} threads", k) for name in ("counters on one line", "a line per counter")
                       for k in {2, n}}
    shape = result["host"]["shape"]
    assert shape["vcpus"] == n and 1 <= shape["cores"] <= n and isinstance(shape["pmu"], bool)
