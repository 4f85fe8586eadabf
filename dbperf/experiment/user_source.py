"""What a target builds from besides a published release: a user's tree (`tree`, and `rev` for one commit of it) and
the patches applied on top of any source (`patches`), checked where the experiment is read. The build lab reads the
tree (buildlab/user_tree.py) and applies the patches (buildlab/patches.py); a patch's sha256 is taken here, once,
so that the build's key names the content the experiment was read with."""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dbperf.errors import UserError

# A revision is one word and never an option for git (it is passed after --end-of-options as well).
REV = re.compile(r"^[^-\s]\S*$")


@dataclass(frozen=True)
class UserTree:
    """A checkout or a folder of the user's: `path` absolute; `rev` a git revision of it, None for the tree as it
    is (uncommitted and untracked files included)."""
    path: str
    rev: str | None = None

    @property
    def word(self) -> str:
        """How a label names it before the lab has read it (the build's manifest names the commit)."""
        return f"tree:{self.rev}" if self.rev else f"tree:{Path(self.path).name}"


@dataclass(frozen=True)
class PatchFile:
    name: str  # as the experiment names it
    path: str  # absolute
    sha256: str  # of the file when the experiment was read


def patch_words(patches: tuple[PatchFile, ...]) -> str:
    """How a label says its patches: "+1 patch", "+2 patches", nothing without."""
    return f"+{len(patches)} patch{'es' if len(patches) > 1 else ''}" if patches else ""


def _path(value: str, base_dir: Path) -> Path:
    path = Path(value).expanduser()
    return path if path.is_absolute() else base_dir / path


def parse_tree(raw: dict[str, Any], base_dir: Path, where: str) -> UserTree | None:
    """A target's `tree` and `rev` (relative paths are the experiment file's), None without a tree."""
    if "tree" not in raw:
        if "rev" in raw:
            raise UserError(f"{where}.rev: a revision of a 'tree' (tree = \"PATH\" of a git checkout); no tree given")
        return None
    if "source" in raw:
        raise UserError(f"{where}: give either 'source' ({raw['source']!r}) or 'tree' (a checkout of yours), not both")
    path = _path(raw["tree"], base_dir)
    if not path.is_dir():
        raise UserError(f"{where}.tree: {path} is not a folder")
    rev = raw.get("rev")
    if rev is not None and not REV.match(rev):
        raise UserError(f"{where}.rev: expected a git revision (a commit hash, branch or tag), got {rev!r}")
    return UserTree(str(path.resolve()), rev)


def parse_patches(raw: dict[str, Any], base_dir: Path, where: str) -> tuple[PatchFile, ...]:
    """A target's `patches`, in order, each read and checksummed now: a missing file is one line here."""
    value = raw.get("patches", [])
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise UserError(f"{where}.patches: expected a list of patch files (applied in order with patch -p1)")
    patches = []
    for name in value:
        path = _path(name, base_dir)
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            raise UserError(f"{where}.patches: {name!r} not found ({path})") from None
        except OSError as e:
            raise UserError(f"{where}.patches: {name!r}: cannot read {path}: {e.strerror}") from None
        if not data.strip():
            # patch(1) applies nothing and succeeds: the build would be labelled "+1 patch" and be the unpatched one
            raise UserError(f"{where}.patches: {name!r} is empty ({path}): it would change nothing")
        patches.append(PatchFile(name, str(path.resolve()), hashlib.sha256(data).hexdigest()))
    return tuple(patches)
