"""BOLT of a server build, in instrumentation mode (no hardware counters needed): the server is linked with its
relocations kept (-Wl,-q), llvm-bolt writes an instrumented copy of the server binary, the lab starts that copy like
any lab server and runs the server training set against it (the same set PGO trains on), every process writes its
own profile at exit (-instrumentation-file-append-pid: PostgreSQL's postmaster and each backend), merge-fdata sums
them, and llvm-bolt rewrites the installed binary with the profile (blocks and functions reordered, functions split
into hot and cold parts).

A forked process inherits its parent's counters up to the fork, so the postmaster's start-up counts appear in every
backend's file; against the thousands of training queries each backend ran, that weight is small, and the manifest
says so."""

from __future__ import annotations

import os
import pwd
import re
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

from dbperf.buildlab.compiler import build_environment
from dbperf.errors import UserError
from dbperf.tools import tail

LLVM_BOLT, MERGE_FDATA = "llvm-bolt-16", "merge-fdata-16"
INSTRUMENT_OPTIONS = ("-instrument", "-instrumentation-file-append-pid")
OPTIMIZE_OPTIONS = ("-reorder-blocks=ext-tsp", "-reorder-functions=hfsort", "-split-functions", "-split-all-cold",
                    "-split-eh", "-dyno-stats")
TOOL_TIMEOUT_S = 1800


def bolt_tools() -> dict[str, str]:
    """The BOLT tools' paths and version; refused with the package to install when missing."""
    found = {name: shutil.which(name) for name in (LLVM_BOLT, MERGE_FDATA)}
    missing = [name for name, path in found.items() if path is None]
    if missing:
        raise UserError(f"the bolt variant needs {' and '.join(missing)} (apt install bolt-16)")
    out = subprocess.run([found[LLVM_BOLT] or LLVM_BOLT, "--version"], capture_output=True, text=True,
                         timeout=60).stdout
    version = next((line.strip() for line in out.splitlines() if "version" in line.lower()), "unknown")
    # llvm-bolt looks for its instrumentation runtime in ../lib of the path it was started by: started as
    # /usr/bin/llvm-bolt-16 it would look in /usr/lib, so it is started by its real path in LLVM's own bin/, whose
    # ../lib holds the runtime (Debian: libbolt-16-dev).
    real = os.path.realpath(found[LLVM_BOLT] or LLVM_BOLT)
    runtime = Path(real).parent.parent / "lib" / "libbolt_rt_instr.a"
    if not runtime.is_file():
        raise UserError(f"the bolt variant needs BOLT's instrumentation runtime {runtime} (apt install libbolt-16-dev)")
    return {"llvm_bolt": real, "merge_fdata": found[MERGE_FDATA] or "", "version": version, "runtime": str(runtime)}


def bolt_identity() -> dict[str, Any]:
    """What of BOLT determines the result, for the build's cache key."""
    return {"version": bolt_tools()["version"], "instrument": list(INSTRUMENT_OPTIONS),
            "optimize": list(OPTIMIZE_OPTIONS)}


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
                log: Path, service_user: str) -> dict[str, Any]:
    """Instruments `binary` (inside the install `prefix`), trains a copy of the install, and replaces `binary` by
    its optimized rewrite; what was done, for the manifest."""
    # Imported here: the servers import the experiment parser, which imports the build lab.
    from dbperf.buildlab.paths import open_to_service_users
    from dbperf.buildlab.server_training import train_server

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
    out = _run([tools["llvm_bolt"], str(binary), *INSTRUMENT_OPTIONS, f"-instrumentation-file={profile}/prof",
                "-o", str(inst_binary)], log,
               f"{label}: llvm-bolt -instrument")
    if "relocation mode" not in out:
        raise UserError(f"{label}: llvm-bolt found no relocations in {binary.name} (was it linked with -Wl,-q?)")
    work.chmod(0o755)  # the instrumented server runs as the service user, inside the staging directory
    open_to_service_users(instrumented)
    training = train_server(engine, binaries_of(instrumented), work / "bolt-training-logs")
    fdata = sorted(profile.glob("prof*.fdata"))
    if not fdata:
        raise UserError(f"{label}: BOLT training wrote no profile (.fdata) under {profile}")
    merged = work / "bolt-merged.fdata"
    _run([tools["merge_fdata"], "-q", "-o", str(merged), *map(str, fdata)], log, f"{label}: merge-fdata")
    bolted = binary.with_name(binary.name + ".bolt")
    out = _run([tools["llvm_bolt"], str(binary), "-o", str(bolted), f"-data={merged}", *OPTIMIZE_OPTIONS], log,
               f"{label}: llvm-bolt (optimize)")
    mode = bolted.stat().st_mode
    os.replace(bolted, binary)
    binary.chmod(mode | 0o555)
    profiled = re.search(r"BOLT-INFO:\s+(\d+) out of (\d+) functions in the binary \((\S+)\) have non-empty "
                         r"execution profile", out)
    result = {
        "tool": tools["version"], "instrument_options": list(INSTRUMENT_OPTIONS),
        "optimize_options": list(OPTIMIZE_OPTIONS), "link_flags": ["-Wl,-q"], "binary": binary.name,
        **training,
        "profile_files": len(fdata), "profile_bytes": sum(p.stat().st_size for p in fdata),
        "merged_profile_bytes": merged.stat().st_size,
        "functions_with_profile": f"{profiled.group(1)} of {profiled.group(2)} ({profiled.group(3)})"
        if profiled else None,
        "profile_note": "one .fdata per process (postmaster, backends, initdb's bootstrap), summed by merge-fdata; a "
                        "forked process's file also holds its parent's counts up to the fork",
        "bolt_seconds": round(time.monotonic() - started, 1),
    }
    shutil.rmtree(instrumented)
    shutil.rmtree(profile)
    merged.unlink()
    return result
