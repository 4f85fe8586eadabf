"""cpu-other: the driver pinned to the other CPU the lab may use (the server's CPU, idle with an in-process engine)
instead of the client's: does one vCPU of this host run faster than the other?"""

from __future__ import annotations

from dbperf.host.remedies import CellPlace, Remedy


def _other(place: CellPlace) -> frozenset[int] | None:
    others = sorted(place.allowed_cpus - (place.cpus or frozenset()))
    return frozenset(others[:1]) if others and place.cpus else place.cpus


REMEDY = Remedy(name="cpu-other", what="the driver pinned to another CPU than the client's", place_cpus=_other,
                excludes=("cpu-free",), per_process=True)
