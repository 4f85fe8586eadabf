"""The barrier probe's "no barrier" reference is a floor of the loops it is compared with: it does the seqlock writer's
memory operations exactly, without the fences (a disassembly of both, compiled as the probe is). Before, it did two
volatile read-modify-writes of the version where the writer reads it once, and the seqlock came out at 0.58× it."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from dbperf.probes.build import FLAGS, SOURCE_DIR

pytestmark = pytest.mark.e2e
FENCES = re.compile(r"^(mfence|lfence|sfence|dmb|dsb|isb|sync|lwsync|fence)\b")


def _memory_ops(objdump: str, function: str) -> list[str]:
    """The instructions of `function` that touch memory (an operand in parentheses or brackets), fences apart, with
    addresses and relocations left out."""
    body = re.search(rf"<{function}>:\n(.*?)(?:\n\n|\Z)", objdump, re.S)
    assert body is not None, f"{function} not in the object"
    ops = []
    for line in body.group(1).splitlines():
        insn = line.split(":", 1)[-1].split("#")[0].strip()
        if insn.startswith("ret"):  # the padding after it is not the function's
            break
        if FENCES.match(insn) or (("(" in insn or "[" in insn) and not insn.startswith("lea")):
            ops.append(re.sub(r"0x[0-9a-f]+", "ADDR", insn))
    return ops


@pytest.mark.skipif(not shutil.which("cc") or not shutil.which("objdump"), reason="needs cc and objdump")
def test_the_no_barrier_reference_does_the_seqlock_writers_memory_operations_without_its_fences(tmp_path: Path):
    obj = tmp_path / "barriers.o"
    subprocess.run(["cc", *FLAGS, "-fno-inline", "-c", "-I", str(SOURCE_DIR), "-o", str(obj),
                    str(SOURCE_DIR / "barriers.c")], check=True, capture_output=True, text=True)
    dump = subprocess.run(["objdump", "-d", "--no-show-raw-insn", str(obj)], check=True, capture_output=True,
                          text=True).stdout
    plain, seqlock = _memory_ops(dump, "update_plain"), _memory_ops(dump, "update_seqlock")
    assert len(plain) == 5  # one load of the version, its two stores, the two data stores
    assert [op for op in seqlock if not FENCES.match(op)] == plain
    assert not any(FENCES.match(op) for op in plain)
