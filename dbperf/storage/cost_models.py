"""Cost models on disk (`dbperf calibrate`, records.CostModelRecord): one per host, versioned.

    DIR/HOSTKEY.json        the host's current model
    DIR/HOSTKEY.N.json      its earlier versions, N = 1 the oldest (kept: a model that validated worse than the one
                            before can be compared with it, and a run that recorded an older one can be traced)
    DIR/runs/HOSTKEY/TIME/  the calibration runs (results directories, like `dbperf run`'s)

DIR is `$DBPERF_DATA`, else `$XDG_DATA_HOME/dbperf/cost-models`, else `~/.local/share/dbperf/cost-models`. A model is
valid for the host it was measured on only: the key is the CPU model, its microcode and the kernel
(host/facts.py's host_metadata names), so that a microcode or kernel update (mitigations change the cost of a
branch or a system call) asks for a new calibration rather than reusing a stale one."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
from collections.abc import Mapping
from pathlib import Path

from dbperf.errors import UserError
from dbperf.records import CostModelRecord, RecordError, decode, encode

# The host facts a model is keyed by and valid for (host/facts.py's names); stats/cost_model.py checks them.
HOST_KEYS = ("cpu_model", "microcode", "kernel")
SLUG = re.compile(r"[^a-z0-9.]+")
NUMBERED = re.compile(r"^(?P<key>.+)\.(?P<n>\d+)\.json$")


def models_dir() -> Path:
    """Where the cost models live (not created here)."""
    value = os.environ.get("DBPERF_DATA")
    if value == "":
        raise UserError("DBPERF_DATA is set but empty: give the cost models' directory (unset it for the default)")
    # absolute: a model records the calibration run's directory, read later from anywhere
    if value is not None:
        return Path(value).expanduser().absolute()
    return (Path(os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share") / "dbperf"
            / "cost-models").absolute()


def host_identity(host: Mapping[str, object]) -> dict[str, str]:
    """The facts a model is keyed by, as strings (a fact the host does not have reads "None", as
    stats/cost_model.usable compares them)."""
    return {key: str(host.get(key)) for key in HOST_KEYS}


def host_key(host: Mapping[str, object]) -> str:
    """The file name stem of a host's models: readable (the CPU model, microcode and kernel, slugged) and unique
    (a hash of the three, since two slugs may meet)."""
    ident = host_identity(host)
    digest = hashlib.sha256(json.dumps([ident[k] for k in HOST_KEYS]).encode()).hexdigest()[:10]
    slug = "-".join(SLUG.sub("-", ident[k].lower()).strip("-.") or "none" for k in HOST_KEYS)
    return f"{slug[:80].strip('-.')}-{digest}"


def runs_dir(host: Mapping[str, object]) -> Path:
    """Where a host's calibration runs go by default."""
    return models_dir() / "runs" / host_key(host)


def current_path(host: Mapping[str, object]) -> Path:
    return models_dir() / f"{host_key(host)}.json"


def versions(host: Mapping[str, object]) -> list[Path]:
    """The host's model files, oldest first; the last is the current one ([] when it has none)."""
    key = host_key(host)
    directory = models_dir()
    numbered: list[tuple[int, Path]] = []
    with contextlib.suppress(OSError):
        for p in directory.iterdir():
            m = NUMBERED.match(p.name)
            if m and m["key"] == key:
                numbered.append((int(m["n"]), p))
    current = directory / f"{key}.json"
    return [p for _, p in sorted(numbered)] + ([current] if current.is_file() else [])


def read_model(path: Path) -> CostModelRecord:
    """One model file, or a UserError naming it."""
    try:
        model = decode(CostModelRecord, path.read_bytes())
    except OSError as e:
        raise UserError(f"{path}: cannot read the cost model: {e.strerror or e}") from None
    except RecordError as e:
        raise UserError(f"{path}: not a cost model ({e}); `dbperf calibrate` makes a new one") from None
    except RecursionError:
        raise UserError(f"{path}: not a cost model (nested too deeply)") from None
    if model.type != "cost_model":
        raise UserError(f"{path}: not a cost model (type {model.type!r})")
    return model


def load_current(host: Mapping[str, object]) -> CostModelRecord | None:
    """The host's current model, None when it has none; a file that cannot be read is a UserError naming it."""
    path = current_path(host)
    if not path.is_file():
        return None
    return read_model(path)


def save(model: CostModelRecord) -> Path:
    """Stores `model` as its host's current model; the one it replaces is kept as the next numbered version. The new
    file is written beside and renamed into place, so that a reader never sees half a model and a full disk leaves
    the earlier one current."""
    directory = models_dir()
    key = host_key(model.host)
    current = directory / f"{key}.json"
    tmp = directory / f".{key}.json.{os.getpid()}.tmp"
    try:
        directory.mkdir(parents=True, exist_ok=True)
        tmp.write_bytes(encode(model) + b"\n")
        if current.is_file():
            _keep(current, directory, key)
        os.replace(tmp, current)
    except OSError as e:
        raise UserError(f"{e.filename or current}: cannot store the cost model: {e.strerror or e} (set "
                        "DBPERF_DATA to another directory)") from None
    finally:
        with contextlib.suppress(OSError):
            tmp.unlink(missing_ok=True)
    return current


def _keep(current: Path, directory: Path, key: str) -> None:
    """A hard link of the current file under the next free number (a link, not a copy: the rename that replaces
    `current` then leaves it whole); a number taken meanwhile by another save moves on to the next."""
    taken = [int(m["n"]) for p in directory.iterdir() if (m := NUMBERED.match(p.name)) and m["key"] == key]
    n = max(taken, default=0) + 1
    while True:
        try:
            os.link(current, directory / f"{key}.{n}.json")
            return
        except FileExistsError:
            n += 1
