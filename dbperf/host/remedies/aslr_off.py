"""aslr-off: the driver started through `setarch ARCH -R` (no address-space randomisation): its stack, heap, libraries
and mappings at the same virtual addresses in every cell, and with them the stack's alignment (Mytkowicz et al.,
ASPLOS 2009: the environment's size moves the stack; the lab's environment is the same for every cell of a run).
Virtual placement only: the physical pages still differ from process to process."""

from __future__ import annotations

import platform
import shutil

from dbperf.host.remedies import Remedy

REMEDY = Remedy(name="aslr-off", what="the driver without address-space randomisation (setarch -R)",
                prefix=(shutil.which("setarch") or "setarch", platform.machine(), "-R"), per_process=True)
