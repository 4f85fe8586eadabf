"""The ways a round runs, one module each (interleaved.py, duet.py, slices.py), each with a `KIND` (base.OrderKind):
found by import, as the study steps are, so that a new way is a new file and no table here names them. The
experiment's `order` (checked against experiment/keys.py's RUN_ORDERS when it is parsed) becomes its way here, once,
when the run is planned (runner/plan.py); everything after asks that object."""

from __future__ import annotations

from functools import cache

from dbperf.errors import UserError
from dbperf.experiment.model import Experiment
from dbperf.plugins import found
from dbperf.runner.orders.base import Order, OrderKind


@cache
def order_kinds() -> dict[str, OrderKind]:
    """Every way by each `order` value it runs (found on first use)."""
    return {name: kind for kind in found(__path__, __name__, "KIND", OrderKind) for name in kind.names}


def order_of(e: Experiment) -> Order:
    """The way the experiment's rounds run, planned for it."""
    kind = order_kinds().get(e.order)
    if kind is None:  # the key table refuses it first; an Experiment built by hand meets this
        raise UserError(f"{e.path} [run].order: expected one of {', '.join(order_kinds())}, got {e.order!r}")
    return kind.planned(e)
