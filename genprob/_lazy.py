"""Modules imported on first use.

NumPyro is needed to build models, priors and distributions, not to fit or score NumPy rows in
closed form: its import (about 0.3 s, docs/benchmarks.md) is paid by the first call that uses it,
not by ``import genprob``. The NumPyro distribution classes genprob defines live in their own
modules (``*_emission.py``, ``normals.py``, ``class_conditional.py``), imported where they are
built.
"""

from __future__ import annotations

import importlib

__all__ = ["LazyModule", "lazy_attribute"]


class LazyModule:
    """Stand-in for a module: the first attribute read imports it (``sys.modules`` caches it)."""

    __slots__ = ("_name",)

    def __init__(self, name: str):
        self._name = name

    def __getattr__(self, attribute: str):
        return getattr(importlib.import_module(self._name), attribute)

    def __repr__(self) -> str:
        return f"<lazily imported module {self._name!r}>"


def lazy_attribute(module_name: str, names: dict[str, str]):
    """A module ``__getattr__`` that serves ``names`` (attribute -> defining module) on first use,
    so moved classes stay reachable where they used to be defined."""

    def __getattr__(name: str):
        if name in names:
            return getattr(importlib.import_module(names[name]), name)
        raise AttributeError(f"module {module_name!r} has no attribute {name!r}")

    return __getattr__
