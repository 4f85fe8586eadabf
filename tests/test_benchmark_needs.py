"""Every benchmark's needs come with `make setup`: a Debian package a benchmark names as what it needs (`apt install
X`) is in the lists scripts/install-system-packages.sh installs for `make setup` (demo and server packages)."""

from __future__ import annotations

import re

import pytest

from tests.conftest import REPO

pytestmark = pytest.mark.unit


def _setup_packages() -> set[str]:
    script = (REPO / "scripts" / "install-system-packages.sh").read_text()
    lists = dict(re.findall(r'^([A-Z]+_PACKAGES)="([^"]*)"', script, re.M))
    return set(lists["DEMO_PACKAGES"].split()) | set(lists["SERVER_PACKAGES"].split())


def test_every_package_a_benchmark_names_is_installed_by_make_setup() -> None:
    named: dict[str, set[str]] = {}
    for script in sorted((REPO / "benchmarks").rglob("*.py")):
        for packages in re.findall(r"apt install ([a-z0-9.+ -]+)", script.read_text()):
            for package in packages.split():
                named.setdefault(package, set()).add(script.relative_to(REPO).as_posix())
    assert "libpq-dev" in named and "libmariadb-dev" in named  # the floor client's, which started this test
    missing = {p: sorted(where) for p, where in named.items() if p not in _setup_packages()}
    assert not missing, f"named by benchmarks but not installed by make setup: {missing}"
