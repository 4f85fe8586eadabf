"""Plugins found by import, as asv finds its own: each module of a package that defines `attribute` as an instance of
`kind` is one, so that a new one is a new file and no table names them (study step kinds, noise remedies)."""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Iterable
from typing import TypeVar

T = TypeVar("T")


def found(package_path: Iterable[str], package: str, attribute: str, kind: type[T]) -> list[T]:
    """The `attribute` of every module of `package` (its `__path__` and `__name__`) that is a `kind`."""
    out = []
    for module in pkgutil.iter_modules(package_path):
        value = getattr(importlib.import_module(f"{package}.{module.name}"), attribute, None)
        if isinstance(value, kind):
            out.append(value)
    return out
