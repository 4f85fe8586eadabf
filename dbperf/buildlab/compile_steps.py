"""A cmake + ninja build's compile steps by source directory, read from the build.ninja a configure wrote: how the
lean MySQL recipe's savings were counted without building (buildlab/recipes/mysql.py LEANER, docs/build-lab.md).
A count of compile edges, deterministic, not a time."""

from __future__ import annotations

import re
from collections import Counter

# cmake's Ninja generator: `build <object>: C_COMPILER__<target>_<config> <source> || ...` (CXX_COMPILER for C++)
EDGE = re.compile(r"^build \S+: (?:C|CXX)_COMPILER__\S+ (\S+)", re.M)
# where one level says too little: extra/icu, storage/ndb, plugin/x, components/test
DEEPER = ("extra", "storage", "plugin", "components")


def steps_by_directory(build_ninja: str, source: str) -> Counter[str]:
    """Compile steps per directory of `source` (the tree's absolute path); a source outside it (generated into the
    build directory) counts under "(generated)"."""
    root = source.rstrip("/") + "/"
    counts: Counter[str] = Counter()
    for path in EDGE.findall(build_ninja):
        path = path.replace("$:", ":")  # ninja's escape
        if not path.startswith(root):
            counts["(generated)"] += 1
            continue
        parts = path[len(root):].split("/")
        depth = 2 if parts[0] in DEEPER and len(parts) > 2 else 1
        counts["/".join(parts[:depth])] += 1
    return counts
