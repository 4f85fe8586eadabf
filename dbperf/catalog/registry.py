"""The built-in catalog, its groups, and resolving what an experiment asks for into an ordered list of workloads.

Groups: `reads`, `writes` (delete and insert last), and the harness's own orders (`all`, `all-2025`, see
harness.py: reads; writes; the reads again, now on the data the writes left; then delete and insert). Reads listed
after a write are named `<benchmark>@after-writes`.
"""

from __future__ import annotations

from dataclasses import replace
from functools import cache
from pathlib import Path

from dbperf.catalog.harness import ORDERS, READ_ONLY_PARTS, harness_order, warm_cell
from dbperf.catalog.tool_commands import PGBENCH_BUILTINS
from dbperf.catalog.workload import Workload, parse_workload_file
from dbperf.errors import UserError
from dbperf.names import check_name

WORKLOAD_DIR = Path(__file__).parent / "workloads"
GROUP_NAMES = ("reads", "writes", *ORDERS)  # all, all-2025: the harness's orders (catalog/harness.py)
AFTER_WRITES = "@after-writes"


@cache
def builtin() -> dict[str, Workload]:
    """Every built-in workload by name, in catalog order."""
    found: list[Workload] = []
    for path in sorted(WORKLOAD_DIR.glob("*.toml")):
        found.extend(parse_workload_file(path))
    found.sort(key=lambda w: (w.order, w.name))
    names = [w.name for w in found]
    duplicate = next((n for n in names if names.count(n) > 1), None)
    if duplicate:
        raise UserError(f"catalog: workload {duplicate!r} is defined twice")
    return {w.name: w for w in found}


def _by_phase(phase: str) -> list[Workload]:
    return [w for w in builtin().values() if w.phase == phase]


def expand_group(group: str) -> list[Workload]:
    reads, writes, final = _by_phase("read"), _by_phase("write"), _by_phase("final")
    if group == "reads":  # the classic harness's reads: the newer range-1000 parts only by name or in all-2025
        return [w for w in reads if w.name not in READ_ONLY_PARTS]
    if group == "writes":
        return writes + final
    return _after_writes(harness_order(group, builtin()))


def _after_writes(workloads: list[Workload]) -> list[Workload]:
    """Reads that follow a write, renamed `NAME@after-writes`."""
    written, out = False, []
    for w in workloads:
        if written and w.phase == "read" and not w.name.endswith(AFTER_WRITES):
            w = replace(w, name=w.name + AFTER_WRITES)
        written = written or w.phase != "read"
        out.append(w)
    return out


def tool_script(item: str, base_dir: Path, where: str) -> Workload:
    """A sysbench Lua script or a pgbench script as a benchmark of its own (run by targets with that driver; see
    tooldrivers/): named after the file, a read (its data is not restored), no statements of the lab's."""
    path = Path(item) if Path(item).is_absolute() else base_dir / item
    if not path.is_file():
        raise UserError(f"{where}: script {item} not found")
    return Workload(name=check_name(path.stem, f"{where} ({item})"), description=f"script {path}", group="point",
                    phase="read", order=1000, transaction=False, statements=(), source=str(path.resolve()))


def pgbench_builtin(item: str, where: str) -> Workload:
    """`pgbench:select-only` and friends: pgbench's built-in scripts, on its own tables (run by pgbench targets)."""
    name = item.removeprefix("pgbench:")
    if name not in PGBENCH_BUILTINS:
        raise UserError(f"{where}: unknown pgbench built-in script {name!r} (known: {', '.join(PGBENCH_BUILTINS)})")
    return Workload(name=f"pgbench-{name}", description=f"pgbench's built-in {name} script on pgbench's tables",
                    group="write" if name != "select-only" else "point", phase="read", order=1000,
                    transaction=False, statements=(), source=item)


def resolve(requested: list[str], base_dir: Path, where: str) -> list[Workload]:
    """Names, groups and workload file paths, in the order given; groups expand in harness order.

    When both reads and writes are asked for, reads listed after a write run on the written data and are
    named `@after-writes`, so that the two passes stay apart in the report.
    """
    out: list[Workload] = []
    for item in requested:
        if not isinstance(item, str) or not item:
            raise UserError(f"{where}: benchmark entries must be non-empty strings, got {item!r}")
        if item in GROUP_NAMES:
            out.extend(expand_group(item))
        elif item in builtin():
            out.append(builtin()[item])
        elif warm_cell(item, builtin()) is not None:
            out.append(warm_cell(item, builtin()))  # type: ignore[arg-type]
        elif item.startswith("pgbench:"):
            out.append(pgbench_builtin(item, where))
        elif item.endswith((".lua", ".sql")):
            out.append(tool_script(item, base_dir, where))
        elif item.endswith(".toml") or "/" in item:
            path = Path(item) if Path(item).is_absolute() else base_dir / item
            if not path.is_file():
                raise UserError(f"{where}: workload file {item} not found")
            out.extend(parse_workload_file(path))
        else:
            known = ", ".join([*GROUP_NAMES, *builtin()])
            raise UserError(f"{where}: unknown benchmark {item!r} (known: {known})")
    seen: set[str] = set()
    ordered = _after_writes(out)
    for w in ordered:
        if w.name in seen:
            raise UserError(f"{where}: benchmark {w.name!r} is listed twice")
        seen.add(w.name)
    return ordered
