"""The sources a first training profile shows hot: what `pgo_scope = "hot-path"` instruments and re-optimises
(profile_scope.py), a list kept with the recipe and part of the build's key.

Why not the query path's directories: MySQL 9.7's sql/ and InnoDB compiled twice are about an hour of 2 cores, so
a PGO build with the `query-path` scope cannot meet an hour from an empty cache whatever ccache serves. The training
touches almost all of those objects (969 of 1,108 ran something, 97.6% of their compile seconds), but its counts are
concentrated: in the query-path build of 2026-11-29, 99.99% of the arc counters' sum lay in 425 objects (44.3% of
the compile seconds). The list is derived once, from a query-path build's profile on the lab's training set (never
the measured catalog), by scripts/hot_sources.py, and kept as a JSON file beside the recipe.

The counts are gcov-dump's arc counters summed per object: executed control-flow edges, closer to the work done in
an object than its functions' entry counts (a loop's function is entered once)."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import msgspec

from dbperf.errors import UserError

DATA = Path(__file__).parent / "recipes" / "data"
# One counters line of `gcov-dump -l`: "<file>:    01a10000:  16:COUNTERS arcs 2 counts", then value lines
# "<file>:                   0: 2 2 ".
_VALUES = re.compile(r":\s+\d+:((?:\s+\d+)+)\s*$")


class HotSources(msgspec.Struct, frozen=True, kw_only=True):
    """A recipe's hot sources, as its JSON file holds them."""
    engine: str
    version: str  # the upstream version of the source the profile was made on
    derived_from: str  # the build key of the query-path build whose profile gave the list, and its date
    training: list[str]  # the training set of that profile
    share: float  # the share of the profile's arc counts the sources' objects hold
    objects: int  # how many objects of the directories the profile had
    compile_share: float | None  # the sources' share of those objects' instrumented compile seconds (ninja's log)
    sources: list[str]  # relative to the source tree; a generated source relative to the build folder

    def identity(self) -> dict[str, object]:
        """What a build's key holds of it."""
        return {"derived_from": self.derived_from, "share": self.share, "sources": self.sources}


def read(path: Path) -> HotSources:
    try:
        return msgspec.json.decode(path.read_bytes(), type=HotSources)
    except (OSError, msgspec.DecodeError) as e:
        raise UserError(f"{path}: not a hot-sources file ({e})") from None


def write(path: Path, hot: HotSources) -> None:
    path.write_bytes(msgspec.json.format(msgspec.json.encode(hot), indent=1) + b"\n")


def object_source(obj: str) -> str:
    """The source a cmake object was compiled from, as the launcher sees it (profile_launcher.scope_path):
    `storage/innobase/CMakeFiles/innobase.dir/handler/ha_innodb.cc.o` is `storage/innobase/handler/ha_innodb.cc`;
    cmake writes a source outside the target's folder under `__/` for each `..`."""
    folder, sep, rest = obj.partition("/CMakeFiles/")
    if not sep:
        folder, rest = "", obj.removeprefix("CMakeFiles/")
    inside = rest.split("/", 1)[1] if "/" in rest else rest  # past the target's `NAME.dir`
    inside = inside.removesuffix(".o")
    parts = [".." if p == "__" else p for p in inside.split("/")]
    return os.path.normpath(os.path.join(folder, *parts))


def arc_sum(dump: str) -> int:
    """The sum of every arc counter in one object's `gcov-dump -l` output."""
    total, in_arcs = 0, False
    for line in dump.splitlines():
        if "COUNTERS" in line:
            in_arcs = "COUNTERS arcs" in line
            continue
        if in_arcs and (m := _VALUES.search(line)):
            total += sum(int(v) for v in m.group(1).split())
    return total


def choose(counts: dict[str, int], share: float) -> list[str]:
    """The objects, hottest first, whose counts first reach `share` of the total (ties kept together)."""
    total = sum(counts.values())
    if total <= 0:
        raise UserError("the profile counted nothing: no object is hot")
    ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    chosen: list[str] = []
    reached = 0
    for obj, count in ranked:
        if reached >= share * total and count < counts[chosen[-1]]:
            break
        chosen.append(obj)
        reached += count
    return chosen


def gcda_counts(object_of: dict[Path, str], gcov_dump: str) -> dict[str, int]:
    """Each object's arc-count sum, from the .gcda files `object_of` maps to their objects."""
    counts: dict[str, int] = {}
    for f in object_of:
        done = subprocess.run([gcov_dump, "-l", str(f)], capture_output=True, text=True, check=False)
        if done.returncode != 0 or done.stderr.strip():  # a warning (another gcc's profile) is not a count to trust
            raise UserError(f"{gcov_dump} -l {f}: {done.stderr.strip()[-300:] or f'exit {done.returncode}'}")
        counts[object_of[f]] = counts.get(object_of[f], 0) + arc_sum(done.stdout)
    return counts
