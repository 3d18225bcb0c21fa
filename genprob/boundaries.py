"""Decision boundaries and discriminant directions of fitted stories (the formulas are in
docs/reference/boundaries.md)."""

from __future__ import annotations

import numpy as np

from genprob.engine._dtype import precision
from genprob.story import CLASS_PRIOR

__all__ = ["linear_boundary", "parameters_dtype", "quadratic_boundary"]


def parameters_dtype(params) -> str:
    """Precision of the parameters: float64 when any floating parameter is float64."""
    dtypes = {np.asarray(v).dtype for v in params.values() if hasattr(v, "dtype")}
    return "float64" if np.dtype(np.float64) in dtypes else "float32"


def _call(story, method: str, params, k, l):  # noqa: E741
    num_classes = np.shape(params[CLASS_PRIOR])[-1]
    for name, index in (("k", k), ("l", l)):
        if not (isinstance(index, (int, np.integer)) and 0 <= index < num_classes):
            raise ValueError(
                f"class index {name}={index!r} must be an integer code in [0, {num_classes}) "
                f"(the position of the class in classes_)."
            )
    function = getattr(story, method, None)
    if function is None:
        raise ValueError(
            f"{type(story).__name__} has no {method.replace('_', ' ')}: its stories' log-odds are "
            f"not of that form (it defines no {method}(params, k, l) method)."
        )
    with precision(parameters_dtype(params)):
        return tuple(np.asarray(part) for part in function(params, int(k), int(l)))


def linear_boundary(story, params, k: int, l: int):  # noqa: E741
    """Linear log-odds ``(w, b)`` between classes ``k`` and ``l`` (codes, positions in
    ``classes_``): ``w @ x + b == log p(y=k | x) - log p(y=l | x)``; ``ValueError`` when the
    story's log-odds are not linear (per-class covariances, QDA)."""
    return _call(story, "linear_boundary", params, k, l)


def quadratic_boundary(story, params, k: int, l: int):  # noqa: E741
    """Quadratic log-odds ``(Q, L, C)`` between classes ``k`` and ``l``:
    ``x @ Q @ x + L @ x + C == log p(y=k | x) - log p(y=l | x)``."""
    return _call(story, "quadratic_boundary", params, k, l)
