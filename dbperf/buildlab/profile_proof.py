"""The proof a PGO profile gives before its build is used, for SQLite and the servers alike.

A profile can be written and still be empty: PostgreSQL's instrumented `postgres --version`, run as root before
training, left root-owned `.gcda` files that every process of the training (the postgres user's) failed to open,
so 13 of 17,016 backend functions had a counter and GCC compiled the rest for size. Counting `.gcda` files did not
see it. So, after training and before the build that uses the profile:

- no `profiling:` line (libgcov's own complaints: "Cannot open", "overwriting an existing profile data with a
  different checksum") in any training log: the server's, initdb's, the client's;
- every `.gcda` belongs to the trainer and was written after the training started (the folder is emptied and handed
  to the trainer first: `fresh_profile_dir`, which also drops what the build's own tools wrote);
- the engine's sentinel functions, which every query passes through, have a non-zero entry count, and more than
  the engine's floor of the functions of its own objects do (engines/descriptor.py ProfileProof);
- a partial profile's directories (profile_scope.py) each have `.gcda` of objects under their folder of the build.

The counts are gcov's (`gcov --json-format`): the instrumented build also writes its notes (`-ftest-coverage`, the
`.gcno` beside each object, which change nothing in the code), and gcov reads each object's notes with its `.gcda`.
A refusal is one line; the figures go to the build's manifest.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dbperf.engines.descriptor import ProfileProof
from dbperf.errors import UserError
from dbperf.tools import tail

# Part of a PGO build's cache key: builds made before their profile was proven are made again.
PROOF_VERSION = 1
# The instrumented build's extra flag: the notes gcov needs to name functions and solve their entry counts.
NOTES_FLAG = "-ftest-coverage"
PROFILING = "profiling:"  # how libgcov starts every message it prints
# A file's mtime comes from the kernel's coarse clock, a little behind time.time(): a second of slack.
MTIME_SLACK_S = 1.0
GCOV_BATCH = 400  # notes files per gcov run
GCOV_TIMEOUT_S = 1800
NOT_EXECUTED = "cannot open data file, assuming not executed"  # gcov, for an object without a .gcda
# gcov, for an object that defines no function (only tables or data, e.g. PostgreSQL's generated keyword lists):
# nothing there to count, so nothing the proof could miss; counted in the manifest, not refused.
NO_FUNCTIONS = "no functions found"
MISSING_PROFILE = re.compile(r"[‘'`]([^‘’'`]+\.gcda)[’'`] profile count data file not found")
EXAMPLES = 5


@dataclass(frozen=True)
class Training:
    """What a PGO training leaves to be checked: where the profile and the objects' notes are, who trained, since
    when (time.time()), and the logs every process of the training wrote to."""
    label: str
    profile: Path
    objects_root: Path  # where the build wrote its objects (and their .gcno)
    proof: ProfileProof
    trainer_uid: int
    started: float
    logs: tuple[Path, ...]
    # a partial profile's directories (profile_scope.py), relative to the source and to `objects_root` alike (cmake
    # writes a folder's objects under the same folder of the build): each must have .gcda; () for the whole program
    directories: tuple[str, ...] = ()


def fresh_profile_dir(profile: Path, uid: int, gid: int) -> float:
    """Empties `profile` (what the build's own tools wrote there as root: `make install`, ninja's generators) and
    hands it to the trainer; the time the training starts, for the check of the `.gcda` written after it."""
    profile.mkdir(parents=True, exist_ok=True)
    for entry in profile.iterdir():
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry)
        else:
            entry.unlink()
    os.chown(profile, uid, gid)
    profile.chmod(0o755)
    return time.time()


def profiling_lines(logs: Iterable[Path]) -> list[tuple[Path, str]]:
    """libgcov's messages in the logs: (log, line)."""
    found = []
    for log in logs:
        try:
            text = log.read_text(errors="replace")
        except FileNotFoundError:
            continue
        found += [(log, line.strip()) for line in text.splitlines() if PROFILING in line]
    return found


def object_key(path: str | Path) -> str:
    """An object's path without its suffix, absolute and resolved: what its .gcno and its .gcda are matched by."""
    return str(Path(os.path.abspath(path)).resolve().with_suffix(""))


def gcda_object(profile: Path, gcda: Path) -> str:
    """The object a .gcda under -fprofile-generate=`profile` belongs to: gcc mangles a relative object path made
    absolute ('/' to '#', '..' to '^') into one file name, and nests an absolute one under the folder."""
    relative = gcda.relative_to(profile)
    if len(relative.parts) == 1 and "#" in relative.name:
        return object_key("/".join(".." if part == "^" else part for part in relative.name.split("#")))
    return object_key(Path("/") / relative)


def _in_scope(key: str, objects_root: Path, proof: ProfileProof) -> bool:
    try:
        relative = Path(key).relative_to(objects_root.resolve()).as_posix()
    except ValueError:
        return False
    return any(relative.startswith(prefix) for prefix in proof.objects)


@dataclass(frozen=True)
class FunctionCount:
    name: str  # demangled, without its parameters: "dispatch_command", "THD::cleanup"
    count: int  # entry count


def _base_name(demangled: str) -> str:
    return demangled.split("(", 1)[0].strip()


def _gcov_documents(text: str) -> Iterable[dict[str, Any]]:
    """gcov -t prints one JSON document per notes file, one after the other."""
    decoder = json.JSONDecoder()
    i = 0
    while True:
        while i < len(text) and text[i].isspace():
            i += 1
        if i >= len(text):
            return
        doc, i = decoder.raw_decode(text, i)
        yield doc


def function_counts(notes: Sequence[Path], gcda: dict[str, Path]) -> tuple[dict[Path, list[FunctionCount]], list[str]]:
    """Every function of each notes file with its entry count (gcov on the notes and the matching .gcda, linked side
    by side under short names); gcov's messages other than "not executed" for objects without a .gcda."""
    out: dict[Path, list[FunctionCount]] = {}
    messages: list[str] = []
    with tempfile.TemporaryDirectory(prefix="dbperf-gcov-") as tmp:
        names = {}
        for i, note in enumerate(notes):
            (Path(tmp) / f"{i}.gcno").symlink_to(note)
            data = gcda.get(object_key(note))
            if data is not None:
                (Path(tmp) / f"{i}.gcda").symlink_to(data)
            names[f"{i}.gcno"] = note
        batches = [sorted(names)[k:k + GCOV_BATCH] for k in range(0, len(names), GCOV_BATCH)]
        for batch in batches:
            proc = subprocess.run(["gcov", "--json-format", "--stdout", "--demangled-names", *batch], cwd=tmp,
                                  capture_output=True, text=True, errors="replace", timeout=GCOV_TIMEOUT_S)
            if proc.returncode != 0:
                raise UserError(f"gcov could not read the profile (exit {proc.returncode}): {tail(proc.stderr)}")
            messages += [line.strip() for line in proc.stderr.splitlines()
                         if line.strip() and not line.strip().endswith((NOT_EXECUTED, NO_FUNCTIONS))]
            for doc in _gcov_documents(proc.stdout):
                out[names[doc["data_file"]]] = [
                    FunctionCount(_base_name(f.get("demangled_name") or f["name"]), int(f["execution_count"]))
                    for file in doc["files"] for f in file["functions"]]
    return out, messages


def _refuse(t: Training, why: str) -> UserError:
    return UserError(f"{t.label}: the PGO profile is not proven, so the build is refused: {why}")


def _check_files(t: Training, gcda: list[Path]) -> None:
    lines = profiling_lines(t.logs)
    if lines:
        log, line = lines[0]
        raise _refuse(t, f"{len(lines)} libgcov message(s) in the training logs, first in {log.name}: {line[:160]}")
    if not gcda:
        raise _refuse(t, f"the training wrote no .gcda under {t.profile}")
    foreign = [p for p in gcda if p.stat().st_uid != t.trainer_uid]
    if foreign:
        raise _refuse(t, f"{len(foreign)} of {len(gcda)} .gcda are not the trainer's (uid {t.trainer_uid}), e.g. "
                         f"{foreign[0].name} of uid {foreign[0].stat().st_uid}: a process of another user wrote "
                         "them, and the trainer's counts could not be added")
    stale = [p for p in gcda if p.stat().st_mtime < t.started - MTIME_SLACK_S]
    if stale:
        raise _refuse(t, f"{len(stale)} of {len(gcda)} .gcda were written before the training started, e.g. "
                         f"{stale[0].name}")


def _check_coverage(t: Training, functions: list[FunctionCount], sentinels: dict[str, int], run: int,
                    share: float) -> None:
    """The sentinel functions are among the engine's own and ran, and more than the floor's share of functions did."""
    absent = [s for s in t.proof.sentinels if not any(f.name == s for f in functions)]
    if absent:
        raise _refuse(t, f"sentinel function(s) {', '.join(absent)} not among the {len(functions)} functions of the "
                         "engine's own objects")
    zero = [s for s, n in sentinels.items() if n == 0]
    if zero:
        raise _refuse(t, f"sentinel function(s) {', '.join(zero)} never ran in the training ({run} of "
                         f"{len(functions)} functions have a count)")
    if share <= t.proof.floor:
        raise _refuse(t, f"{run} of {len(functions)} functions ({100 * share:.1f}%) have a count, at most the "
                         f"floor of {100 * t.proof.floor:g}%")


def _own_notes(t: Training) -> list[Path]:
    """The notes (.gcno) of the engine's own objects: the functions the proof counts."""
    notes = sorted(p for p in t.objects_root.rglob("*.gcno")
                   if _in_scope(object_key(p), t.objects_root, t.proof))
    if not notes:
        raise _refuse(t, f"no notes (.gcno) of the engine's own objects under {t.objects_root} (was the "
                         f"instrumented build compiled with {NOTES_FLAG}?)")
    return notes


def _check_directories(t: Training, by_object: dict[str, Path]) -> dict[str, int]:
    """The .gcda of each of a partial profile's directories (by its objects' folder in the build): none in one of
    them, and that directory would be compiled without a profile while the manifest says it has one."""
    root = t.objects_root.resolve()
    counts = {d: sum(1 for key in by_object if Path(key).is_relative_to(root / d)) for d in t.directories}
    empty = [d for d, n in counts.items() if n == 0]
    if empty:
        raise _refuse(t, f"no .gcda of an object under {', '.join(f'{d}/' for d in empty)}, which the profile "
                         f"covers ({len(by_object)} .gcda in all): its objects were not instrumented, or the training "
                         "never ran their code")
    return counts


def prove(t: Training) -> dict[str, Any]:
    """The figures of a proven profile, for the manifest; a UserError (one line) when it is not."""
    gcda = sorted(p for p in t.profile.rglob("*.gcda") if p.is_file())
    _check_files(t, gcda)
    by_object = {gcda_object(t.profile, p): p for p in gcda}
    notes = _own_notes(t)
    counts, messages = function_counts(notes, by_object)
    if messages:
        raise _refuse(t, f"gcov: {messages[0][:160]} ({len(messages)} message(s))")
    functions = [f for fs in counts.values() for f in fs]
    run = sum(1 for f in functions if f.count > 0)
    share = run / len(functions) if functions else 0.0
    sentinels = {s: sum(f.count for f in functions if f.name == s) for s in t.proof.sentinels}
    figures = {"functions": len(functions), "functions_run": run, "share": round(share, 4),
               "share_floor": t.proof.floor, "sentinels": sentinels, "objects": len(notes),
               "objects_with_profile": sum(1 for n in notes if object_key(n) in by_object),
               "objects_without_functions": sum(1 for n in notes if not counts.get(n)),
               "profile_files": len(gcda), "trainer_uid": t.trainer_uid}
    _check_coverage(t, functions, sentinels, run, share)
    if t.directories:
        figures["gcda_by_directory"] = _check_directories(t, by_object)
    return figures


def missing_profiles(log_text: str, profile: Path, objects_root: Path, proof: ProfileProof) -> dict[str, Any]:
    """gcc's -Wmissing-profile warnings of the build that used the profile: objects compiled without one (code the
    training never reached, tools it never ran), those of the engine's own objects counted apart."""
    own: list[str] = []
    other = 0
    for path in dict.fromkeys(m.group(1) for m in MISSING_PROFILE.finditer(log_text)):
        try:
            key = gcda_object(profile, Path(path))
        except ValueError:
            key = object_key(path)
        if _in_scope(key, objects_root, proof):
            own.append(Path(key).relative_to(objects_root.resolve()).as_posix())
        else:
            other += 1
    return {"own_objects": len(own), "other_objects": other, "own_examples": own[:EXAMPLES]}
