"""A target's `patches`, applied in order on the lab's own copy of a source (never on the user's tree, nor on a
fetched crate or package in place): `patch -p1` with no fuzz (a hunk applies where its context matches exactly,
moved lines allowed), never asking (`--batch`), an already applied or reversed patch refused (`--forward`), no
backup nor reject files, the patch read from its bytes as checksummed when the experiment was read. A patch that
does not apply is one line naming it and the file (and hunk) it fails on; a patched file outside the tree after
-p1 is refused by patch itself."""

from __future__ import annotations

import hashlib
import re
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

from dbperf.errors import UserError
from dbperf.experiment.user_source import PatchFile
from dbperf.tools import tail

COMMAND = ["patch", "-p1", "--forward", "--batch", "--fuzz=0", "--no-backup-if-mismatch", "--reject-file=-"]
PATCHING = re.compile(r"^(?:patching|checking) file (.+)$")
HUNK = re.compile(r"^Hunk #(\d+) FAILED at (\d+)")
MISSING = re.compile(r"^\|?\+\+\+ (\S+)")
RENAMED = re.compile(r"^(.+) \((?:renamed|copied) from (.+)\)$")


def with_patches(provenance: dict[str, Any], patches: tuple[PatchFile, ...]) -> dict[str, Any]:
    """A manifest's `source` with the patches applied on it, in their order (as it was without patches)."""
    if not patches:
        return provenance
    return {**provenance, "patches": [{"name": p.name, "path": p.path, "sha256": p.sha256} for p in patches]}


def _read(patch: PatchFile, label: str) -> bytes:
    try:
        data = Path(patch.path).read_bytes()
    except OSError as e:
        raise UserError(f"{label}: patch {patch.name}: cannot read {patch.path}: {e.strerror}") from None
    if hashlib.sha256(data).hexdigest() != patch.sha256:
        raise UserError(f"{label}: patch {patch.name} changed after the experiment was read; run again")
    return data


def _unquoted(name: str) -> str:
    return name[1:-1] if len(name) > 1 and name[0] == name[-1] and name[0] in "'\"" else name


def why_not(output: str) -> str:
    """What patch said about the first thing that failed: the file and hunk, or its last lines."""
    current = "?"
    missing = None
    for line in output.splitlines():
        if found := PATCHING.match(line):
            current = _unquoted(found.group(1).strip())
        elif found := HUNK.match(line):
            return f"hunk #{found.group(1)} fails on {current} (at its line {found.group(2)})"
        elif found := MISSING.match(line):
            missing = found.group(1)
        elif line.startswith("No file to patch") and missing:
            stripped = missing.split("/", 1)[-1]
            return f"no file {stripped} to patch in the tree (-p1 strips the first folder of {missing})"
        elif "Reversed (or previously applied) patch detected" in line:
            return f"{current} has it already (reversed or previously applied)"
        elif line.startswith("Invalid file name"):
            return f"{line.removeprefix('Invalid file name').split(' -- ')[0].strip()}: outside the tree after -p1"
        elif "Only garbage was found" in line:
            return "no hunk in it (not a patch in unified or context format)"
    return tail(output, 2) or "no output"


def files_touched(data: bytes, tree: Path) -> list[str]:
    """The files (relative to `tree`) that the patch `data` would create, change or remove there, as patch itself
    reads it (a dry run: nothing is written); [] where patch is missing (applying it then says so)."""
    try:
        proc = subprocess.run([*COMMAND, "--dry-run", "-d", str(tree)], input=data, capture_output=True)
    except FileNotFoundError:
        return []
    output = (proc.stdout + proc.stderr).decode(errors="replace")
    found = []
    for line in output.splitlines():
        if m := PATCHING.match(line):
            names = RENAMED.match(m.group(1).strip())  # a git rename or copy: both files
            found += [_unquoted(n) for n in names.groups() if n] if names else [_unquoted(m.group(1).strip())]
    return found


def apply_patches(patches: tuple[PatchFile, ...], tree: Path, log: Path, label: str,
                  before_each: Callable[[bytes], None] | None = None) -> None:
    """Each patch on `tree` in order, patch's output into `log`; the first that fails is one line. `before_each` is
    given each patch's bytes before it is applied (a kept build tree saves the files it will change)."""
    for i, patch in enumerate(patches, 1):
        data = _read(patch, label)
        if before_each is not None:
            before_each(data)
        try:
            proc = subprocess.run([*COMMAND, "-d", str(tree)], input=data, capture_output=True)
        except FileNotFoundError:
            raise UserError(f"{label}: patches need the patch program (apt install patch)") from None
        output = (proc.stdout + proc.stderr).decode(errors="replace")
        with open(log, "a") as f:
            f.write(f"$ {' '.join(COMMAND)} -d {tree} < {patch.path}\n{output}")
        if proc.returncode != 0:
            raise UserError(f"{label}: patch {patch.name} ({i} of {len(patches)}) does not apply: {why_not(output)}")
