"""ccache, the compiler launcher of builds in kept build trees (build_tree.py): an object whose preprocessed source,
flags and compiler are unchanged is taken from the cache instead of compiled, so that objects rebuilt only because
their file went back and forth between patch sets, or compiled before in another tree (another version of the same
source), cost a copy. Make and ninja decide what to rebuild; ccache makes a rebuild of unchanged code cheap.

The cache is the lab's own (CCACHE_DIR under the server cache, never the user's ~/.cache/ccache), its size ccache's
default (5 GB; `ccache -M` with that CCACHE_DIR changes it). CCACHE_BASEDIR is the folder of the kept trees, so
that the same file in two trees hashes alike. Each build's own hits and misses are read from a statistics log of its
own (CCACHE_STATSLOG: one block per compile), not from the cache's totals, which other builds move at the same time.
Without ccache the build is the same, only slower; it says so in one line (how_built) and in its manifest.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

PACKAGE = "ccache"  # its Debian package: scripts/install-system-packages.sh installs it with the build tools
MISSING = "ccache not found (apt install ccache): every object make or ninja rebuilds is compiled again"
HITS = ("direct_cache_hit", "preprocessed_cache_hit")
MISS = "cache_miss"


@dataclass(frozen=True)
class CompilerCache:
    program: str  # ccache's path
    directory: Path  # CCACHE_DIR
    base: Path  # CCACHE_BASEDIR: the kept trees' folder
    stats_log: Path  # this build's CCACHE_STATSLOG

    def environment(self) -> dict[str, str]:
        return {"CCACHE_DIR": str(self.directory), "CCACHE_BASEDIR": str(self.base),
                "CCACHE_STATSLOG": str(self.stats_log)}

    def counts(self) -> dict[str, Any]:
        """The manifest's `ccache`: this build's hits and misses, and where the cache is."""
        text = self.stats_log.read_text(errors="replace") if self.stats_log.is_file() else ""
        return {**stats_of(text), "dir": str(self.directory)}


def find_ccache(directory: Path, base: Path, stats_log: Path) -> CompilerCache | None:
    """ccache with the lab's cache in `directory`, None where it is not installed."""
    program = shutil.which("ccache")
    if program is None:
        return None
    directory.mkdir(parents=True, exist_ok=True)  # `stats_log` is kept: a resumed build's sums its segments'
    return CompilerCache(program, directory, base, stats_log)


def stats_of(log: str) -> dict[str, int]:
    """Hits and misses in a CCACHE_STATSLOG: each compile is a `# SOURCE` line, then one line per counter it moved
    (a hit: direct_cache_hit or preprocessed_cache_hit; a miss: cache_miss, beside the direct and preprocessed
    misses that led to it). Compiles ccache cannot cache (links, preprocessing alone) count in neither."""
    counters = [line.strip() for line in log.splitlines() if line.strip() and not line.startswith("#")]
    return {"hits": sum(1 for c in counters if c in HITS), "misses": sum(1 for c in counters if c == MISS)}
