"""What the server cache holds, for `dbperf build --list` and a build's line on the console: the cached builds'
manifests (read through server_manifest.py), the interrupted builds kept for resuming (resume.py), and a build's
time and reuse in words."""

from __future__ import annotations

from typing import Any

from dbperf.buildlab.paths import server_cache
from dbperf.buildlab.resume import STATE, ResumeRecord, read_resume
from dbperf.buildlab.staging import PARTIAL
from dbperf.errors import UserError
from dbperf.server_manifest import ServerManifest, manifest_record, read_server_manifest


def how_built(manifest: dict[str, Any]) -> str:
    """A build's time for its line on the console: wall clock, CPU where measured, and its segments when resumed."""
    said = f"built in {manifest['build_seconds']} s"
    if manifest.get("build_cpu_seconds") is not None:
        said += f" ({manifest['build_cpu_seconds']} s of CPU"
        segments = len(manifest.get("segments") or [])
        said += f", in {segments} segments)" if segments > 1 else ")"
    return said + _how_incremental(manifest.get("incremental"))


def _how_incremental(incremental: dict[str, Any] | None) -> str:
    """What a build in a kept tree reused, or the one line saying ccache is missing (never silently)."""
    if not incremental:
        return ""
    n = incremental["objects_rebuilt"]
    said = f"; {n} object{'' if n == 1 else 's'} " + ("rebuilt in its kept tree" if incremental["reused"]
                                                       else "compiled in a new kept tree")
    ccache = incremental["ccache"]
    return said + (f"; {ccache['missing']}" if "missing" in ccache else
                   f", ccache {ccache['hits']} hit{'' if ccache['hits'] == 1 else 's'}, {ccache['misses']} "
                   f"miss{'' if ccache['misses'] == 1 else 'es'}")


def partial_server_builds() -> list[dict[str, Any]]:
    """The interrupted builds kept for resuming (resume.py): their label, steps and time so far."""
    builds = server_cache() / "build"
    found = []
    for path in sorted(builds.glob(f".*{PARTIAL}/{STATE}")) if builds.is_dir() else []:
        try:
            record = read_resume(path)
        except UserError:  # listed, never left out
            record = ResumeRecord(label=f"unreadable {STATE}: the next build of it says so")
        segments = record.segments
        found.append({"key": path.parent.name.strip(".").removesuffix(PARTIAL), "label": record.label,
                      "steps": sum(record.steps.values()), "segments": len(segments),
                      "seconds": round(sum(s.seconds for s in segments), 1),
                      "cpu_seconds": round(sum(s.cpu_seconds for s in segments), 1),
                      "last": segments[-1].started_at if segments else "?", "path": str(path.parent)})
    return found


def cached_server_builds() -> list[dict[str, Any]]:
    builds = server_cache() / "build"
    return [manifest_record(read_server_manifest(p, ServerManifest)) for p in sorted(builds.glob("*/manifest.json"))
            ] if builds.is_dir() else []
