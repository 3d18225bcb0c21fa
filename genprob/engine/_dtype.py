"""Precision: JAX work runs inside the thread-local ``jax.enable_x64`` of the requested dtype,
never the global JAX config."""

from __future__ import annotations

import contextlib
import threading

import numpy as np

from genprob._lazy import jax_context

DEFAULT_DTYPE = "float64"
_SUPPORTED = {"float64": np.float64, "float32": np.float32}

#: Comparison tolerances keyed by dtype (absolute/relative), used by tests and cross-checks.
TOLERANCES = {
    "float64": {"rtol": 1e-8, "atol": 1e-10},
    "float32": {"rtol": 1e-4, "atol": 1e-5},
}


def resolve_dtype(dtype) -> str:
    """``"float64"`` or ``"float32"`` for ``dtype``; ``ValueError`` for another one."""
    if dtype is None:
        return DEFAULT_DTYPE
    if isinstance(dtype, str) and dtype in _SUPPORTED:
        return dtype
    name = np.dtype(dtype).name
    if name not in _SUPPORTED:
        raise ValueError(f"dtype must be 'float64' or 'float32', got {dtype!r}.")
    return name


def precision(dtype=None):
    """Context enabling 64-bit JAX for float64; each call is counted (:mod:`._mappings`)."""
    name = resolve_dtype(dtype)
    return _counted(jax_context(lambda jax: jax.enable_x64(name == "float64")))


_depth = threading.local()


@contextlib.contextmanager
def _counted(context):
    from genprob.engine import _mappings

    top = not getattr(_depth, "value", 0)
    _depth.value = getattr(_depth, "value", 0) + 1
    try:
        with context:
            yield
    finally:
        _depth.value -= 1
    if top:  # counted once per user-facing call, not per nested entry point
        _mappings.after_call()


def numpy_dtype(dtype=None):
    """NumPy scalar type for ``dtype``."""
    return _SUPPORTED[resolve_dtype(dtype)]
