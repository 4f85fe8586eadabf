"""Prints the package's requirements from pyproject.toml, one a line: its dependencies, then those of the extras
named on the command line. `make demo` installs them into .venv while cargo builds the driver, before the package
itself, whose own build of the driver (setuptools-rust) waits for cargo."""

import sys
import tomllib
from pathlib import Path

PYPROJECT = Path(__file__).resolve().parents[1] / "pyproject.toml"


def requirements(extras: list[str]) -> list[str]:
    project = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["project"]
    optional = project.get("optional-dependencies", {})
    unknown = [e for e in extras if e not in optional]
    if unknown:
        raise SystemExit(f"{PYPROJECT.name}: no extra {', '.join(unknown)} (known: {', '.join(sorted(optional))})")
    return [*project["dependencies"], *(r for e in extras for r in optional[e])]


if __name__ == "__main__":
    print("\n".join(requirements(sys.argv[1:])))
