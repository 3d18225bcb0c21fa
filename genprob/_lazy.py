"""Modules imported on first use: JAX and NumPyro are paid for by the first call that needs them,
not by ``import genprob`` (docs/reference/genprob.md, "Imports")."""

from __future__ import annotations

import contextlib
import functools
import importlib
import sys
import threading

__all__ = [
    "LazyModule",
    "lazy_attribute",
    "jax",
    "jax_imported",
    "is_jax_array",
    "when_jax",
    "jax_context",
    "jitted",
    "load_stand_ins",
]

#: calls waiting for JAX's import (pytree registrations of story classes defined before it)
_WAITING: list = []


class _Blocks(threading.local):
    def __init__(self):
        #: this thread's open :func:`jax_context` blocks whose context waits for JAX
        self.waiting = []


_BLOCKS = _Blocks()


def when_jax(call) -> None:
    """``call(jax)`` now if JAX is imported, else once genprob first sees it imported."""
    if "jax" in sys.modules:
        call(sys.modules["jax"])
    else:
        _WAITING.append(call)


def load_stand_ins() -> None:
    """Load lazy stand-ins for ``jax`` or ``numpyro`` left in ``sys.modules``, in place."""
    for name in ("jax", "numpyro"):
        module = sys.modules.get(name)
        if module is not None:
            getattr(module, "__name__", None)


def _run_waiting() -> None:
    module = sys.modules["jax"]
    while _WAITING:
        _WAITING.pop(0)(module)
    blocks = _BLOCKS.waiting
    while blocks:  # outer blocks first, as they were opened
        blocks.pop(0)(module)


@contextlib.contextmanager
def jax_context(make):
    """Run the block inside ``make(jax)``: now if JAX is imported, else once JAX is first seen."""
    with contextlib.ExitStack() as stack:
        if jax_imported():
            stack.enter_context(make(sys.modules["jax"]))
            yield
            return

        def enter(module):
            stack.enter_context(make(module))

        _BLOCKS.waiting.append(enter)
        try:
            yield
        finally:
            if enter in _BLOCKS.waiting:
                _BLOCKS.waiting.remove(enter)


def jax():
    """The ``jax`` module, imported now, with every waiting story class registered."""
    load_stand_ins()
    import jax as module

    _run_waiting()
    return module


def jax_imported() -> bool:
    """True once JAX is imported; registers the waiting story classes the first time."""
    if "jax" not in sys.modules:
        return False
    load_stand_ins()
    if _WAITING or _BLOCKS.waiting:
        _run_waiting()
    return True


def is_jax_array(value) -> bool:
    """``isinstance(value, jax.Array)`` without importing JAX."""
    return "jax" in sys.modules and isinstance(value, sys.modules["jax"].Array)


class LazyModule:
    """Stand-in for a module: the first attribute read imports it (``sys.modules`` caches it)."""

    __slots__ = ("_name",)

    def __init__(self, name: str):
        self._name = name

    def __getattr__(self, attribute: str):
        if self._name not in sys.modules:  # every attribute read passes here: settle once
            load_stand_ins()
        module = importlib.import_module(self._name)
        jax_imported()
        return getattr(module, attribute)

    def __repr__(self) -> str:
        return f"<lazily imported module {self._name!r}>"


def lazy_attribute(module_name: str, names: dict[str, str]):
    """A module ``__getattr__`` serving ``names`` (attribute -> defining module) on first use."""

    def __getattr__(name: str):
        if name in names:
            if names[name] not in sys.modules:
                load_stand_ins()
            module = importlib.import_module(names[name])
            jax_imported()
            return module if names[name].rpartition(".")[2] == name else getattr(module, name)
        raise AttributeError(f"module {module_name!r} has no attribute {name!r}")

    return __getattr__


def jitted(function=None, **options):
    """``jax.jit(function, **options)``, built (importing JAX) at the first call."""
    if function is None:
        return functools.partial(jitted, **options)
    compiled = []

    @functools.wraps(function)
    def call(*args, **kwargs):
        if not compiled:
            compiled.append(jax().jit(function, **options))
        elif _WAITING or _BLOCKS.waiting:
            _run_waiting()
        return compiled[0](*args, **kwargs)

    return call
