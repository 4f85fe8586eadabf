"""What makes a build unfit to rest a figure on, read from its manifest as a run's meta.json keeps it: a PGO build
whose profile was never proven (built before the lab proved profiles, or its proof found nothing run), and any
build found invalid later (INVALID, by the manifest's key). A figure resting on such a build is marked superseded
on its record: its word never "holds", and the record says why."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

# Builds found invalid after they were measured: manifest key -> why (dated). Empty-profile builds from before the
# lab proved profiles have no proof in their manifest and are caught by `build_problems` without a key here.
INVALID: dict[str, str] = {}


def build_problems(build: dict[str, Any] | None) -> list[str]:
    """What is wrong with one target's build (its manifest), in words; [] when nothing is."""
    if not isinstance(build, dict):
        return []
    problems = []
    key = str(build.get("key") or "")
    if key in INVALID:
        problems.append(f"build {key} was found invalid: {INVALID[key]}")
    pgo = build.get("pgo")
    if isinstance(pgo, dict):
        proof = pgo.get("proof")
        if not isinstance(proof, dict):
            problems.append(f"build {key or '?'} ({build.get('label', '?')}): its PGO profile was never proven "
                            "(no proof in its manifest: built before the lab proved that training ran the code)")
        elif not proof.get("functions_run"):
            problems.append(f"build {key or '?'} ({build.get('label', '?')}): its PGO profile is empty (the proof "
                            "counts no function run)")
    return problems


def problems_by_key(builds: Iterable[dict[str, Any] | None]) -> dict[str, list[str]]:
    """What is wrong with each build (manifests, as runs keep them) by its key, and with every build of INVALID."""
    out = {key: [f"build {key} was found invalid: {why}"] for key, why in INVALID.items()}
    for build in builds:
        if isinstance(build, dict) and build.get("key") and (found := build_problems(build)):
            out[str(build["key"])] = found
    return out
