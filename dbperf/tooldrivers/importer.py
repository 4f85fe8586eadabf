"""`dbperf import FILE... --tool sysbench|pgbench --out DIR`: saved sysbench or pgbench output as a results
directory that `dbperf report` reads like any run. A file is one run; its benchmark is the file name up to the
first dot (`oltp_point_select.1.txt` and `oltp_point_select.2.txt` are two repeats of `oltp_point_select`).
Nobody measured the tool's CPU, so those figures are absent from the report (cells `imported: true`), never 0."""

from __future__ import annotations

import re
import time
from datetime import UTC, datetime
from pathlib import Path

from dbperf.errors import UserError
from dbperf.names import check_name
from dbperf.records import CellRecord
from dbperf.run_meta import BenchmarkMeta, ImportedMeta, RunMeta, TargetMeta
from dbperf.storage.results import ResultsWriter
from dbperf.tooldrivers.parse import NO_USAGE, TOOLS, ToolOutput, parse_pgbench, parse_sysbench

# Lines whose value 0 means the run measured nothing (or nothing a rate can come from): (tool, pattern of the line
# with the number as group 1, what 0 means). A figure divided by such a value would be made up, not imported.
ZERO_REFUSED: tuple[tuple[str, re.Pattern[str], str], ...] = (
    ("sysbench", re.compile(r"^\s*Number of threads:\s*(\d+(?:\.\d*)?)"), "sysbench ran no thread"),
    ("sysbench", re.compile(r"^\s*total time:\s*(\d+(?:\.\d*)?)s"), "a total time of 0 s: no rate comes from it"),
    ("sysbench", re.compile(r"^\s*total number of events:\s*(\d+)"), "no event completed: nothing was measured"),
    ("pgbench", re.compile(r"^number of clients:\s*(\d+)"), "pgbench ran no client"),
    ("pgbench", re.compile(r"^number of threads:\s*(\d+)"), "pgbench ran no thread"),
    ("pgbench", re.compile(r"^duration:\s*(\d+(?:\.\d*)?)\s*s"), "a duration of 0 s: no rate comes from it"),
    ("pgbench", re.compile(r"^number of transactions actually processed:\s*(\d+)"),
     "no transaction was processed: nothing was measured"),
    ("pgbench", re.compile(r"^tps = (\d+(?:\.\d*)?)"), "a tps of 0: the run's duration cannot come from it"),
)


def _refuse_zeros(tool: str, path: Path, text: str) -> None:
    """A run of no thread, no time or no transaction is refused, naming the file and the line."""
    lines = text.splitlines()
    for name, pattern, meaning in ZERO_REFUSED:
        if name != tool:
            continue
        for number, line in enumerate(lines, 1):
            m = pattern.match(line)
            if m:
                if float(m.group(1)) == 0:
                    raise UserError(f"{path}:{number}: {line.strip()!r}: {meaning}")
                break


def _parse(tool: str, path: Path, queries_per_transaction: int) -> ToolOutput:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as e:
        raise UserError(f"{path}: cannot read: {e.strerror}") from None
    except UnicodeDecodeError:
        raise UserError(f"{path}: not a text file ({tool} output is text)") from None
    _refuse_zeros(tool, path, text)
    try:
        return parse_sysbench(text) if tool == "sysbench" else parse_pgbench(text, queries_per_transaction)
    except UserError as e:
        raise UserError(f"{path}: {e}") from None


def _threads(tool: str, path: Path) -> int:
    text = path.read_text(encoding="utf-8")
    pattern = r"^Number of threads:\s+(\d+)" if tool == "sysbench" else r"^number of clients:\s+(\d+)"
    m = re.search(pattern, text, re.M)
    return int(m.group(1)) if m else 1


def import_outputs(files: list[Path], tool: str, out: Path, target: str | None,
                   queries_per_transaction: int) -> int:
    """Writes the results directory; returns the number of cells."""
    if tool not in TOOLS:
        raise UserError(f"--tool: expected one of {', '.join(TOOLS)}, got {tool!r}")
    if not files:
        raise UserError("import: give at least one output file")
    if queries_per_transaction < 1:
        raise UserError("--queries-per-transaction: must be at least 1")
    name = check_name(target or tool, "--target")
    parsed = []
    for path in files:
        benchmark = check_name(path.name.split(".", 1)[0], f"{path} (the benchmark is the file name up to its "
                                                           "first dot)")
        parsed.append((benchmark, path, _parse(tool, path, queries_per_transaction), _threads(tool, path)))
    writer = ResultsWriter(out.absolute())
    benchmarks: list[str] = list(dict.fromkeys(b for b, *_ in parsed))
    meta = RunMeta(
        status="complete", started_at=datetime.now(UTC).isoformat(timespec="seconds"),
        imported=ImportedMeta(
            tool=tool, files=[str(p.absolute()) for _, p, *_ in parsed],
            note=f"{tool} output read by dbperf import: the tool's own figures; CPU and context switches were "
                 "not measured"),
        base=name, aggregate="median", threads=sorted({t for *_, t in parsed}),
        benchmarks=[BenchmarkMeta(name=b, group="point", phase="read", source=f"{tool} output", queries_per_event=1,
                                  sql=[]) for b in benchmarks],
        targets=[TargetMeta(name=name, engine=tool, tool=tool)],
    )
    try:
        writer.write_meta(meta, f"# imported {tool} output\n")
        repeats: dict[tuple[str, int], int] = {}
        for benchmark, _path, output, threads in parsed:
            repeat = repeats[(benchmark, threads)] = repeats.get((benchmark, threads), 0) + 1
            result = output.result(NO_USAGE, threads)
            writer.append(CellRecord(target=name, benchmark=benchmark, threads=threads, repeat=repeat,
                                     status="ok", started_at=time.time(), result=result, tool=tool, imported=True))
        meta.finished_at = datetime.now(UTC).isoformat(timespec="seconds")
        writer.update_meta(meta)
    finally:
        writer.close()
    return len(parsed)
