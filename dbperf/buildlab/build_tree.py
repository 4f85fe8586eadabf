"""Kept build trees: one per source, compile flags and compiler, so that a build of another patch set rebuilds only
what changed.

A server build from source used to unpack its source into a fresh folder and compile everything (MySQL: an hour on 2
cores, recipes/mysql.py), even when it differed from a build made before by one patched line. Now the
source is unpacked and configured once into server_cache()/trees/TREE/ (src/, and prefix/ the install goes to before
it is moved into the build's own cache entry), and every build of that tree (each patch set is its own build key, as
before) switches the tree to its patches, then runs the recipe's build and install: make's or ninja's dependency
tracking rebuilds what the switch changed, and ccache (compiler_cache.py) serves the objects that only went back and
forth.

The tree's key is what changes an object: the engine's source without the patches (for Debian's source package: the
package and version), the compile flags, the compiler and the recipe's options. Patches are not in it: they are what
a tree switches between. The install prefix is the tree's own, so the key need not hold it.

A tree built from a user's checkout (sources/tree.py) is keyed by the checkout, not by its revision: each build
first brings src/ to its revision (source_sync.py: the files that differ moved in, the others kept with their
mtimes), then switches the patch set as below.

Switching patch sets keeps the pristine copy of every file a patch set changes (pristine/, listed in tree.json by a
dry run of each patch before it is applied): the previous set is reverted by putting those files back (a file the
patches created is removed), then the new set is applied. A file whose content ends where it was before the switch
gets its old mtime back, so that make and ninja do not rebuild its objects; every other file the switch touched is
newer than its objects. A patch that does not apply leaves the tree reverted to its pristine source, and tree.json
records no patch set, never a half-applied one.

One build at a time per tree: a lock (flock on TREE.lock beside it) held from the switch to the install; a second
dbperf building the same tree waits for it. A build interrupted or killed leaves `building` set in tree.json: make
cannot tell an object a killed compiler half wrote from a whole one, so the next build of a recipe that is not
`resumable` cleans the tree first (its objects then mostly come from ccache); ninja, which logs only finished
outputs, goes on. A build that failed on a command's error leaves its objects whole (make and ninja wait for the
compiles under way; a compile that fails writes no object). A tree.json this dbperf cannot read is a tree started
over (the tree is a cache: nothing in it is lost but time). To clear the trees, remove the trees/ folder (or one tree)
while no build runs; the builds in the cache stay.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any

import msgspec

from dbperf.buildlab.patches import apply_patches, files_touched
from dbperf.errors import UserError
from dbperf.experiment.user_source import PatchFile
from dbperf.host.compiler import Compiler

TREES = "trees"
RECORD = "tree.json"
VERSION = 1


class Applied(msgspec.Struct, frozen=True):
    """One patch of the set a tree holds."""
    name: str
    sha256: str


class TreeRecord(msgspec.Struct, kw_only=True):
    """tree.json: what a kept tree holds, read once when the tree is opened."""
    version: int = VERSION
    identity: dict[str, Any] = {}
    provenance: dict[str, Any] | None = None  # the unpacked source's (a manifest's `source` without patches)
    configured: list[str] | None = None  # the configure command that last finished; None: not configured
    applied: list[Applied] | None = []  # the patch set on the tree; None while a switch is under way
    touched: dict[str, bool] = {}  # file (relative to src/) -> whether it existed before the patches
    building: bool = False  # a build started and has not finished
    builds: int = 0  # builds that finished in this tree


def tree_identity(source: dict[str, Any], flags: list[str], cc: Compiler, options: tuple[str, ...]) -> dict[str, Any]:
    """What a kept tree is keyed by: the source without its patches, the compile flags, the compiler, the recipe's
    options. PGO's instrumented and profile-use builds compile with other flags than their base (and than each
    other: -fprofile-generate against -fprofile-use), so their objects could never be shared with the base's tree:
    given their own flags here, they key trees of their own. (They are built in fresh folders for now: gcc names
    each profile after its object's path, so the two would also have to agree on one path; see server_build.py.)
    Link-only flags given as `cflags` (-Wl,...) are in `flags` too; a target's `ldflags` are not: a build that
    differs from its base by them alone (a relink: the layout fix) shares the base's tree, where ninja relinks what
    their change touched and make relinks what the recipe removed (Recipe.relink_outputs; server_build.py)."""
    return {"source": source, "flags": flags, "compiler": {"path": cc.path, "cxx": cc.cxx, "version": cc.version},
            "recipe": list(options)}


def tree_key(identity: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(identity, sort_keys=True).encode()).hexdigest()[:20]


def _fingerprint(path: Path) -> tuple[str | None, int]:
    """A file's content digest (None when it does not exist) and mtime in ns."""
    if not path.is_file():
        return None, 0
    return hashlib.sha256(path.read_bytes()).hexdigest(), path.stat().st_mtime_ns


class BuildTree:
    """An opened kept tree, its lock held (kept_tree)."""

    def __init__(self, root: Path, identity: dict[str, Any]) -> None:
        self.root, self.src, self.prefix, self.pristine = root, root / "src", root / "prefix", root / "pristine"
        self.record = self._read(identity)

    def _read(self, identity: dict[str, Any]) -> TreeRecord:
        path = self.root / RECORD
        try:
            record = msgspec.json.decode(path.read_bytes(), type=TreeRecord)
            if record.version == VERSION and record.identity == identity:
                return record
        except (OSError, msgspec.DecodeError, msgspec.ValidationError):
            pass
        for leftover in self.root.iterdir() if self.root.is_dir() else []:  # a tree started over
            if leftover.is_dir() and not leftover.is_symlink():
                shutil.rmtree(leftover, ignore_errors=True)
            else:
                leftover.unlink(missing_ok=True)
        self.root.mkdir(parents=True, exist_ok=True)
        return TreeRecord(identity=identity)

    def save(self) -> None:
        """tree.json replaced in one step."""
        tmp = self.root / f"{RECORD}.tmp"
        tmp.write_bytes(msgspec.json.encode(self.record))
        os.replace(tmp, self.root / RECORD)

    @property
    def reused(self) -> bool:
        """Whether a build finished in this tree before: its objects are there to be reused."""
        return self.record.builds > 0

    def clear_source(self) -> None:
        """What a fetch that did not finish left (its download folders, a partly unpacked tree)."""
        for leftover in [self.src, self.pristine, *self.root.glob("download-*")]:
            shutil.rmtree(leftover, ignore_errors=True)
        self.record = TreeRecord(identity=self.record.identity)
        self.save()

    def set_source(self, provenance: dict[str, Any]) -> None:
        self.record.provenance = provenance
        self.save()

    def switch(self, patches: tuple[PatchFile, ...], log: Path, label: str,
               refresh: Callable[[Path], set[str]] | None = None) -> int:
        """The tree's patch set replaced by `patches` (the previous set reverted first); the number of files whose
        content the switch changed. A patch that does not apply: the tree reverted to its pristine source, and the
        patch's one line. `refresh`, given src/ between the revert and the patches, brings the source itself to
        another revision (a user's tree: sources/tree.py) and says the files it changed."""
        wanted = [Applied(p.name, p.sha256) for p in patches]
        if self.record.applied == wanted and refresh is None:
            return 0
        before = {rel: _fingerprint(self.src / rel) for rel in self.record.touched}
        self._revert()
        self.record.applied = None
        self.save()
        synced = refresh(self.src) if refresh is not None else set()
        try:
            apply_patches(patches, self.src, log, label, before_each=self._keep_pristine)
        except UserError:
            self._revert()
            raise
        self.record.applied = wanted
        self.save()
        changed = {*before, *self.record.touched, *synced}
        for rel, (digest, mtime) in before.items():
            now, _ = _fingerprint(self.src / rel)
            if now == digest:
                changed.discard(rel)
                if digest is not None:  # the same content as its objects were built from: not newer than them
                    os.utime(self.src / rel, ns=(mtime, mtime))
        return len(changed)

    def _keep_pristine(self, patch: bytes) -> None:
        """The files the patch will change that no earlier patch of the set changed (so still as unpacked), copied
        into pristine/ and recorded before the patch is applied."""
        for rel in files_touched(patch, self.src):
            path = self.src / rel
            if rel in self.record.touched or not path.resolve().is_relative_to(self.src.resolve()):
                continue  # kept already; or outside the tree, which patch refuses
            existed = path.is_file()
            if existed:
                (self.pristine / rel).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(path, self.pristine / rel)
            self.record.touched[rel] = existed
        self.save()

    def _revert(self) -> None:
        """Every file a patch set changed put back as it was unpacked (newer than its objects: copied now), every
        file it created removed."""
        for rel, existed in self.record.touched.items():
            path = self.src / rel
            if existed:
                path.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy(self.pristine / rel, path)
            else:
                path.unlink(missing_ok=True)
        shutil.rmtree(self.pristine, ignore_errors=True)
        self.record.touched = {}
        self.record.applied = []
        self.save()

    def begin(self) -> bool:
        """A build starts; whether the one before it did not finish (its objects may be half written)."""
        interrupted = self.record.building
        self.record.building = True
        self.save()
        return interrupted

    def configured(self, command: list[str]) -> None:
        self.record.configured = command
        self.save()

    def finished(self) -> None:
        self.record.building = False
        self.record.builds += 1
        self.save()

    def stopped(self) -> None:
        """A build failed (a command's error, not an interruption): its objects are whole."""
        self.record.building = False
        self.save()


@contextlib.contextmanager
def kept_tree(parent: Path, identity: dict[str, Any], on_wait: Callable[[str], None] | None = None
              ) -> Iterator[BuildTree]:
    """The kept tree of `identity` under `parent` (made if new), locked while the caller builds in it; another
    dbperf building it meanwhile is waited for (`on_wait` is told who)."""
    parent.mkdir(parents=True, exist_ok=True)
    key = tree_key(identity)
    with open(parent / f"{key}.lock", "a+") as lock:
        _lock(lock, on_wait)
        try:
            yield BuildTree(parent / key, identity)
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _lock(lock: IO[str], on_wait: Callable[[str], None] | None) -> None:
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        lock.seek(0)
        holder = lock.read().strip() or "?"
        if on_wait is not None:
            on_wait(f"waiting for another dbperf (pid {holder}) building in the same kept tree")
        fcntl.flock(lock, fcntl.LOCK_EX)
    lock.seek(0)
    lock.truncate()
    lock.write(f"{os.getpid()}\n")
    lock.flush()
