"""valgrind refusing an instruction it cannot decode: its VEX front end has no AVX-512, which -march=native emits on a
CPU that has it (7,573 EVEX instructions in PostgreSQL 15 built -O3 -march=native on an AMD EPYC with AVX-512). The
program dies of SIGILL and valgrind's summary, the tail a failure would show, hides why: found in its output and said
in one line, with what to do instead."""

from __future__ import annotations

import re

UNHANDLED = re.compile(r"unhandled instruction bytes: ((?:0x[0-9A-Fa-f]{2}\s?){1,4})")
WHERE = re.compile(r"Unrecognised instruction at address 0x[0-9a-fA-F]+\.\s*\n==\d+==\s+at 0x[0-9a-fA-F]+: ([^\n]+)")
VERSION = re.compile(r"Using Valgrind-([0-9][0-9.]*)")
EVEX = "0x62"  # in 64-bit mode, the first byte of every AVX-512 (EVEX-encoded) instruction


def unhandled_instruction(output: str) -> str | None:
    """What valgrind could not run and what to do, when `output` (valgrind's, or a server log that holds it) says it
    met an instruction it cannot decode; None otherwise."""
    found = UNHANDLED.search(output)
    if found is None:
        return None
    code = " ".join(found.group(1).split())
    where = WHERE.search(output)
    version = VERSION.search(output)
    valgrind = f"valgrind {version.group(1)}" if version else "valgrind"
    at = f" in {where.group(1).strip()}" if where else ""
    said = f"{valgrind} cannot decode an instruction of the program ({code}{at})"
    if code.lower().startswith(EVEX):
        return (f"{said}: an AVX-512 instruction, which -march=native emits on a CPU that has AVX-512 and valgrind "
                "does not support; simulate a build without `native`, or count with hardware counters on a host "
                "with a PMU")
    return f"{said}: an instruction newer than this valgrind; simulate a build for an older CPU, or a newer valgrind"
