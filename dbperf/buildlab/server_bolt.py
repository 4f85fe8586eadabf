"""BOLT of a server build, in instrumentation mode (no hardware counters needed): the server is linked with its
relocations kept (-Wl,-q), llvm-bolt writes an instrumented copy of the server binary, the lab starts that copy like
any lab server and runs the server training set against it (the same set PGO trains on), the server is stopped
cleanly so that it writes its profile at exit, and llvm-bolt rewrites the installed binary with that profile (blocks
and functions reordered, functions split into hot and cold parts).

What LLVM 16's instrumentation runtime (Debian's bolt-16) does with processes that fork without exec, as
PostgreSQL's postmaster does for every backend, and what the lab does about it (checked on a PostgreSQL 15 build:
core dump, BOLT's runtime source of that release):

- Its counters are mapped MAP_SHARED at start-up, whatever -instrumentation-file-append-pid says: every forked
  process counts into the same memory, and each one writes, at its exit, a snapshot of the counts of the whole
  server so far. Summing the per-process files (merge-fdata) would count early work many times over. The profile
  is therefore the file of the server process itself (prof.<server pid>.fdata): the postmaster exits last, after
  every backend, so its snapshot holds the whole training. The other files (backends, initdb's bootstrap) are
  counted in the manifest and left out.
- Indirect-call profiling keeps its hash tables in a MAP_SHARED region too, but the allocator that carves that
  region up (its offset and its lock) is a per-process global: after a fork, backends hand out the same addresses
  for their new table levels, the tables overwrite each other and form cycles, and a backend's profile dump at exit
  recurses through a cycle until its stack overflows (SIGSEGV, the postmaster goes into crash recovery). So for
  engines that fork without exec, calls are not instrumented (-instrument-calls=false): block counts, branches and
  the hot/cold split are profiled in full; function order (hfsort) is then by each function's own heat, without
  call-graph edges. MariaDB (one process, threads) keeps call profiling.
"""

from __future__ import annotations

import os
import pwd
import re
import shutil
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from dbperf import engines
from dbperf.buildlab.paths import open_to_service_users
from dbperf.errors import UserError
from dbperf.experiment.build_variants import DEFAULT_TRAIN_SECONDS
from dbperf.host.compiler import build_environment
from dbperf.tools import run_tool, tail

# Runs the training set against the instrumented server build at `binaries` (engine, binaries, logs directory,
# seconds per training workload) and says what ran, for the manifest: runner/server_training.py, handed in by the
# caller (the build lab starts no server).
Training = Callable[[str, Path, Path, float], dict[str, Any]]
LLVM_BOLT = "llvm-bolt-16"
BOLT_PACKAGES = ("bolt-16", "libbolt-16-dev")  # Debian's: llvm-bolt-16, its instrumentation runtime
INSTRUMENT_OPTIONS = ("-instrument", "-instrumentation-file-append-pid")
# Engines whose server forks processes that never exec (see above): no call instrumentation.
FORKS_WITHOUT_EXEC = frozenset(e.name for e in engines.ENGINES.values() if e.forks_without_exec)
WITHOUT_CALLS = ("-instrument-calls=false",)
OPTIMIZE_OPTIONS = ("-reorder-blocks=ext-tsp", "-reorder-functions=hfsort", "-split-functions", "-split-all-cold",
                    "-split-eh", "-dyno-stats")
TOOL_TIMEOUT_S = 1800


def bolt_tools() -> dict[str, str]:
    """The BOLT tools' paths and version; refused with the package to install when missing."""
    found = shutil.which(LLVM_BOLT)
    if found is None:
        raise UserError(f"the bolt variant needs {LLVM_BOLT} (apt install {BOLT_PACKAGES[0]})")
    out = subprocess.run([found, "--version"], capture_output=True, text=True, timeout=60).stdout
    version = next((line.strip() for line in out.splitlines() if "version" in line.lower()), "unknown")
    # llvm-bolt looks for its instrumentation runtime in ../lib of the path it was started by: started as
    # /usr/bin/llvm-bolt-16 it would look in /usr/lib, so it is started by its real path in LLVM's own bin/, whose
    # ../lib holds the runtime (Debian: libbolt-16-dev).
    real = os.path.realpath(found)
    runtime = Path(real).parent.parent / "lib" / "libbolt_rt_instr.a"
    if not runtime.is_file():
        raise UserError(f"the bolt variant needs BOLT's instrumentation runtime {runtime} "
                        f"(apt install {BOLT_PACKAGES[1]})")
    return {"llvm_bolt": real, "version": version, "runtime": str(runtime)}


def instrument_options(engine: str) -> list[str]:
    return [*INSTRUMENT_OPTIONS, *(WITHOUT_CALLS if engine in FORKS_WITHOUT_EXEC else ())]


def bolt_identity(engine: str) -> dict[str, Any]:
    """What of BOLT determines the result, for the build's cache key."""
    return {"version": bolt_tools()["version"], "instrument": instrument_options(engine),
            "optimize": list(OPTIMIZE_OPTIONS), "profile": "the server process's own file"}


def fdata_events(path: Path) -> int:
    """The events a .fdata profile counts: the sum of its lines' last field (branch, fall-through and call
    counts)."""
    total = 0
    with open(path) as f:
        for line in f:
            fields = line.split()
            if fields and fields[-1].isdigit():
                total += int(fields[-1])
    return total


def fdata_function_events(path: Path) -> dict[str, int]:
    """Events per function of a .fdata profile: each record's count to the function it leaves and, when another,
    to the function it enters (a call). A local symbol's name may carry BOLT's "/N" suffix: dropped."""
    events: dict[str, int] = {}
    with open(path) as f:
        for line in f:
            fields = line.split()
            if len(fields) < 8 or not fields[-1].isdigit():
                continue
            source, target = fields[1].split("/", 1)[0], fields[4].split("/", 1)[0]
            for name in {source, target}:
                events[name] = events.get(name, 0) + int(fields[-1])
    return events


def defined_functions(binary: Path) -> set[str]:
    """The function symbols `binary` defines (a sentinel gcc inlined everywhere has none, and no profile of its
    own)."""
    out = run_tool(["nm", "--defined-only", str(binary)], f"listing the symbols of {binary.name}", timeout=300).stdout
    return {fields[2] for line in out.splitlines() if len(fields := line.split()) == 3 and fields[1] in "tTwW"}


PROFILED = re.compile(r"BOLT-INFO:\s+(\d+) out of (\d+) functions in the binary \((\S+)\) have non-empty "
                      r"execution profile")


def check_bolt_profile(label: str, engine: str, own: Path, binary: Path, optimize_output: str) -> dict[str, Any]:
    """BOLT's profile proves itself as PGO's does (profile_proof.py): the engine's sentinel functions that the
    binary still has have events in the server's own profile, and the share of the binary's functions with a
    profile (llvm-bolt's own count) is above the engine's floor. A UserError (one line) when not."""
    proof = engines.engine(engine).profile_proof
    if proof is None:
        raise UserError(f"{label}: {engine} declares no profile proof (engines/{engine}.py)")
    profiled = PROFILED.search(optimize_output)
    if profiled is None:
        raise UserError(f"{label}: the BOLT profile is not proven, so the build is refused: llvm-bolt did not say "
                        "how many functions have a profile")
    run, functions = int(profiled.group(1)), int(profiled.group(2))
    share = run / functions if functions else 0.0
    events = fdata_function_events(own)
    symbols = defined_functions(binary)
    sentinels = {s: events.get(s, 0) for s in proof.sentinels if s in symbols}
    figures = {"functions": functions, "functions_run": run, "share": round(share, 4), "share_floor": proof.floor,
               "sentinels": sentinels, "sentinels_inlined": [s for s in proof.sentinels if s not in symbols]}
    zero = [s for s, n in sentinels.items() if n == 0]
    if zero:
        raise UserError(f"{label}: the BOLT profile is not proven, so the build is refused: sentinel function(s) "
                        f"{', '.join(zero)} have no events in {own.name}")
    if share <= proof.floor:
        raise UserError(f"{label}: the BOLT profile is not proven, so the build is refused: {run} of {functions} "
                        f"functions ({100 * share:.1f}%) have a profile, at most the floor of {100 * proof.floor:g}%")
    return figures


def server_profile(profile: Path, server_pid: int, label: str) -> tuple[Path, dict[str, Any]]:
    """The server process's own profile among the per-process files, and what the manifest says about them."""
    files = sorted(profile.glob("prof*.fdata"))
    own = profile / f"prof.{server_pid}.fdata"
    if not own.is_file():
        raise UserError(f"{label}: BOLT training left no profile of the server process itself ({own.name} among "
                        f"{len(files)} .fdata files under {profile}): did the server not exit cleanly?")
    others = [fdata_events(p) for p in files if p != own]
    return own, {"profile_files": len(files), "profile_used": own.name, "profile_events": fdata_events(own),
                 "other_files_max_events": max(others, default=0)}


def _run(cmd: list[str], log: Path, what: str) -> str:
    with open(log, "a") as f:
        f.write("$ " + " ".join(cmd) + "\n")
    proc = subprocess.run(cmd, capture_output=True, text=True, errors="replace", timeout=TOOL_TIMEOUT_S,
                          env=build_environment())
    output = proc.stdout + proc.stderr
    with open(log, "a") as f:
        f.write(output)
    if proc.returncode != 0:
        raise UserError(f"{what} failed (exit {proc.returncode}): {tail(output, 3)}")
    return output


def bolt_server(engine: str, label: str, prefix: Path, binary: Path, binaries_of: Any, work: Path,
                log: Path, service_user: str, train: Training) -> dict[str, Any]:
    """Instruments `binary` (inside the install `prefix`), trains a copy of the install, and replaces `binary` by
    its optimized rewrite; what was done, for the manifest."""
    tools = bolt_tools()
    started = time.monotonic()
    instrumented = work / "bolt-instrumented"
    shutil.copytree(prefix, instrumented, symlinks=True)
    profile = work / "bolt-profile"
    profile.mkdir()
    user = pwd.getpwnam(service_user)
    os.chown(profile, user.pw_uid, user.pw_gid)  # the server's processes write their profiles here
    inst_binary = instrumented / binary.relative_to(prefix)
    inst_binary.unlink()
    options = instrument_options(engine)
    out = _run([tools["llvm_bolt"], str(binary), *options, f"-instrumentation-file={profile}/prof",
                "-o", str(inst_binary)], log,
               f"{label}: llvm-bolt -instrument")
    if "relocation mode" not in out:
        raise UserError(f"{label}: llvm-bolt found no relocations in {binary.name} (was it linked with -Wl,-q?)")
    work.chmod(0o755)  # the instrumented server runs as the service user, inside the staging directory
    open_to_service_users(instrumented)
    training = train(engine, binaries_of(instrumented), work / "bolt-training-logs", DEFAULT_TRAIN_SECONDS)
    own, profile_facts = server_profile(profile, training.pop("server_pid"), label)
    with open(log, "a") as f:
        f.write(f"BOLT profile: {profile_facts}\n")
    bolted = binary.with_name(binary.name + ".bolt")
    out = _run([tools["llvm_bolt"], str(binary), "-o", str(bolted), f"-data={own}", *OPTIMIZE_OPTIONS], log,
               f"{label}: llvm-bolt (optimize)")
    proof = check_bolt_profile(label, engine, own, binary, out)  # before the installed binary is replaced
    mode = bolted.stat().st_mode
    os.replace(bolted, binary)
    binary.chmod(mode | 0o555)
    profiled = PROFILED.search(out)
    result = {
        "tool": tools["version"], "instrument_options": options,
        "optimize_options": list(OPTIMIZE_OPTIONS), "link_flags": ["-Wl,-q"], "binary": binary.name,
        **training, **profile_facts,
        "functions_with_profile": f"{profiled.group(1)} of {profiled.group(2)} ({profiled.group(3)})"
        if profiled else None,
        "profile_note": "bolt-16's runtime shares its counters among forked processes, so each process's file is a "
                        "snapshot of the whole server's counts at its exit; the server process's own file, written "
                        "last at its clean shutdown, is the profile used; the others are earlier snapshots or "
                        "other programs (initdb's bootstrap) and are left out"
                        + ("; calls not instrumented (the runtime's indirect-call tables are not fork-safe)"
                           if engine in FORKS_WITHOUT_EXEC else ""),
        "proof": proof,
        "bolt_seconds": round(time.monotonic() - started, 1),
    }
    shutil.rmtree(instrumented)
    shutil.rmtree(profile)
    return result
