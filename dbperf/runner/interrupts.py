"""SIGTERM and SIGHUP end a run the way Ctrl-C does: the driver is killed, servers are stopped, what was measured
is kept, the status is `interrupted`, the partial report printed, and the exit code is 128 + the signal's number
(130 for INT, 143 for TERM, 129 for HUP)."""

from __future__ import annotations

import signal
from types import FrameType

HANDLED = (signal.SIGTERM, signal.SIGHUP)


class Interrupted(KeyboardInterrupt):
    """A KeyboardInterrupt that knows which signal caused it, so every `except KeyboardInterrupt` path applies."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def reason(interrupt: BaseException) -> str:
    """What stopped the run: Ctrl-C (a plain KeyboardInterrupt has no text), or the signal's name."""
    signum = getattr(interrupt, "signum", signal.SIGINT)
    return "Ctrl-C" if signum == signal.SIGINT else signal.Signals(signum).name


def exit_code(interrupt: BaseException) -> int:
    return 128 + getattr(interrupt, "signum", signal.SIGINT)


def _raise(signum: int, _frame: FrameType | None) -> None:
    # Once: a second TERM or HUP while the lab stops its servers and writes the status would cut that short.
    for s in HANDLED:
        signal.signal(s, signal.SIG_IGN)
    raise Interrupted(signum)


def install() -> None:
    for s in HANDLED:
        signal.signal(s, _raise)
