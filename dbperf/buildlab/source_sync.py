"""A kept build tree's source (build_tree.py) brought to another revision of the user's tree (sources/tree.py): the
revision is exported into a folder beside it, then every file whose content, kind or executable bit differs is
moved in and stamped now, every file the previous revision had and this one has not removed, and every other file
left as it is, its mtime with it. make and ninja then rebuild only what the revision changed: an exported file's
mtime is its commit's time (git archive), which may be older than the objects of the last build, so a changed file
is always made newer than them. Every file a sync moves in gets the same time, as git archive gives every file of
a revision its commit's: a generated file committed beside its source (a release's gram.c beside gram.y, configure
beside configure.ac) is then not older than it, and make does not ask for bison, flex or autoconf to make it again
(stamped one by one, in name order, gram.y would be newer than gram.c).

Only the files exported are compared or removed: what configure and the build wrote into the tree (config.status,
generated headers, objects) is the build's and stays. The list of exported files is kept beside the tree (one name
per NUL); it is written as the union of the old and the new list before anything moves, so that a sync cut short
still removes, next time, the files of both."""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

LISTING = "source-files"


def _files(root: Path) -> set[str]:
    """Every file and symbolic link under `root`, relative to it."""
    found = set()
    for folder, dirs, names in os.walk(root):  # a link to a folder is among `dirs`, and not followed
        base = Path(folder).relative_to(root)
        found |= {(base / n).as_posix() for n in [*names, *(d for d in dirs if (Path(folder) / d).is_symlink())]}
    return found


def _same(new: Path, old: Path) -> bool:
    """Whether `old` is already what `new` is: the same kind, executable bit and bytes (or symbolic link target)."""
    if new.is_symlink() or old.is_symlink():
        return new.is_symlink() and old.is_symlink() and os.readlink(new) == os.readlink(old)
    if not old.is_file():
        return False
    a, b = new.stat(), old.stat()
    if a.st_size != b.st_size or (a.st_mode & 0o111) != (b.st_mode & 0o111):
        return False
    with open(new, "rb") as f, open(old, "rb") as g:
        while chunk := f.read(1 << 20):
            if chunk != g.read(len(chunk)):
                return False
    return True


def _listed(listing: Path) -> set[str]:
    return set(listing.read_text().split("\0")) - {""} if listing.is_file() else set()


def _write(listing: Path, names: set[str]) -> None:
    tmp = listing.with_name(listing.name + ".tmp")
    tmp.write_text("\0".join(sorted(names)))
    os.replace(tmp, listing)


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    else:
        path.unlink(missing_ok=True)


def sync_source(incoming: Path, src: Path, listing: Path) -> set[str]:
    """`src` made to hold what `incoming` holds (which is removed after), the build's own files left; the files
    (relative to src) whose content changed, came or went."""
    before, now = _listed(listing), _files(incoming)
    _write(listing, before | now)
    stamp = time.time_ns()  # one time for every file moved in: see the module's docstring
    changed = set()
    for rel in sorted(now):
        new, old = incoming / rel, src / rel
        if _same(new, old):
            continue
        if old.parent.is_symlink() or (old.parent.exists() and not old.parent.is_dir()):
            _remove(old.parent)  # a file of the previous revision where this one has a folder
        old.parent.mkdir(parents=True, exist_ok=True)
        if old.is_symlink() or old.exists():
            _remove(old)
        os.replace(new, old)
        if not old.is_symlink():
            os.utime(old, ns=(stamp, stamp))
        changed.add(rel)
    for rel in sorted(before - now):
        gone = src / rel
        if gone.is_symlink() or gone.is_file():
            gone.unlink()
            changed.add(rel)
    _write(listing, now)
    shutil.rmtree(incoming, ignore_errors=True)
    return changed
