"""Precision: every public entry runs its JAX work inside the thread-local ``jax.enable_x64``
context of the requested dtype, never the global JAX config (other libraries share it)."""

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
    """Return the canonical name (``"float64"`` or ``"float32"``) of ``dtype``.

    Raises:
        ValueError: if ``dtype`` is not one of the supported floating types.
    """
    if dtype is None:
        return DEFAULT_DTYPE
    if isinstance(dtype, str) and dtype in _SUPPORTED:
        return dtype
    name = np.dtype(dtype).name
    if name not in _SUPPORTED:
        raise ValueError(f"dtype must be 'float64' or 'float32', got {dtype!r}.")
    return name


def precision(dtype=None):
    """Context manager enabling 64-bit JAX inside the block when ``dtype`` is float64.

    It also keeps the process below its limit on memory mappings (:mod:`genprob.engine._mappings`),
    since every JAX entry point goes through here.
    """
    name = resolve_dtype(dtype)
    return _counted(jax_context(lambda jax: _x64(jax, name == "float64")))


def _x64(jax, enabled: bool):
    if enabled:
        return jax.enable_x64(True)
    return jax.enable_x64(False) if hasattr(jax, "enable_x64") else contextlib.nullcontext()


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
