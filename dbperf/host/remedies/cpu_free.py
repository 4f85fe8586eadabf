"""cpu-free: the driver not pinned: the kernel places it, and may move it, on any CPU the lab may use (the lab pins it
to the client's CPU by default, host/cpus.py). For the search of what gives each process its own speed."""

from __future__ import annotations

from dbperf.host.remedies import CellPlace, Remedy


def _unpinned(place: CellPlace) -> frozenset[int] | None:
    return None


REMEDY = Remedy(name="cpu-free", what="the driver left unpinned (the kernel places it)", place_cpus=_unpinned,
                excludes=("cpu-other",), per_process=True)
