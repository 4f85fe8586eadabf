"""When a cell's measured window opens, for the lab's own samples of that window (noise sensors, resources).

With a fixed warm-up the lab knows it from its own clock: `warmup` after the driver's launch. With a steady-state
warm-up only the driver knows: the lab hands it the write end of a pipe (job.window_fd, passed across exec and
closed here right after), the driver writes one line there when its monitor ends the warm-up (`open SECONDS`, the
instant on CLOCK_MONOTONIC, which is time.monotonic's clock too), and a thread of the lab's reads it. End of file
without that line (the driver failed, or was killed) means the window never opened."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable

READ_TIMEOUT_S = 5.0  # how long finish() waits for the reader after the driver has exited


class WindowOpens:
    """Create it right before the launch; hand `driver_fd` to the driver (job.window_fd, and run_job's pass_fds,
    which closes the lab's copy once the driver has it: the driver's exit is then the reader's end of file)."""

    def __init__(self) -> None:
        read_fd, self.driver_fd = os.pipe()
        self.opened = threading.Event()
        self.at: float | None = None  # time.monotonic() of the window's start: the driver's, else when it was heard
        self._callbacks: list[Callable[[], None]] = []
        self._lock = threading.Lock()
        self._reader = threading.Thread(target=self._read, args=(read_fd,), daemon=True, name="window-opens")
        self._reader.start()

    def on_open(self, callback: Callable[[], None]) -> None:
        """`callback` runs on the reader's thread as soon as the window opens (it should be quick)."""
        with self._lock:
            if self.at is None:
                self._callbacks.append(callback)
                return
        callback()

    def _read(self, fd: int) -> None:
        try:
            with os.fdopen(fd, "rb") as pipe:
                line = pipe.readline()
                if line.startswith(b"open"):
                    heard = time.monotonic()
                    try:
                        at = float(line.split()[1])
                    except (IndexError, ValueError):
                        at = heard
                    with self._lock:
                        self.at = min(at, heard)
                        callbacks, self._callbacks = self._callbacks, []
                    self.opened.set()
                    for callback in callbacks:
                        callback()
                pipe.read()  # until the driver exits
        finally:
            self.opened.set()

    def wait(self, timeout: float | None = None) -> float | None:
        """Until the window opened (its time) or the driver ended without opening it (None)."""
        self.opened.wait(timeout)
        return self.at

    def join(self) -> None:
        """After the driver has exited: the reader has seen everything."""
        self._reader.join(READ_TIMEOUT_S)
