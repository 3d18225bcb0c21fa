"""Labels into codes, sparse counts as floats, and the array namespace of host or JAX code."""

from __future__ import annotations

import sys

import numpy as np
import scipy.sparse

from genprob._lazy import LazyModule, jax, jax_imported

jnp = LazyModule("jax.numpy")

#: Integer labels spanning at most this many values (or 2n) are encoded by counting.
_COUNTING_SPAN = 1 << 16


def namespace(*arrays):
    """NumPy when every argument is a NumPy array or a number, else ``jax.numpy``."""
    if "jax" not in sys.modules:  # no JAX array or tracer exists before JAX is imported
        return np
    if all(isinstance(a, (np.ndarray, np.generic, int, float)) for a in arrays):
        return np
    return jnp


#: leaves a pytree of host values holds (what NumPy code reads and returns)
_HOST_LEAVES = (np.ndarray, np.generic, int, float, complex)


class _NotPlain(Exception):
    """A node or leaf that only JAX's pytree registry knows (a story, a named tuple)."""


def tree_map(function, tree, *rest):
    """``jax.tree_util.tree_map``, walking plain trees of NumPy values without importing JAX."""
    if not jax_imported():
        try:
            return _plain_map(function, tree, rest)
        except _NotPlain:
            pass
    return jax().tree_util.tree_map(function, tree, *rest)


def _plain_map(function, tree, rest):
    kind = type(tree)
    if kind is np.ndarray:
        return function(tree, *rest)
    if kind is dict:
        return {k: _plain_map(function, tree[k], [r[k] for r in rest]) for k in sorted(tree)}
    if kind is list or kind is tuple:
        return kind(
            _plain_map(function, item, list(others))
            for item, *others in zip(tree, *rest, strict=True)
        )
    if tree is None:
        return None
    if not isinstance(tree, _HOST_LEAVES):
        raise _NotPlain
    return function(tree, *rest)


def tree_leaves(tree) -> list:
    """``jax.tree_util.tree_leaves(tree)`` (see :func:`tree_map`)."""
    leaves = []
    tree_map(leaves.append, tree)
    return leaves


def placed(tree):
    """A pytree of host arrays as read-only views (fitted values, as JAX arrays are)."""
    return tree_map(_read_only, tree)


def _read_only(array):
    if not isinstance(array, np.ndarray) or not array.flags.writeable:
        return array
    view = array.view()
    view.flags.writeable = False
    return view


def column_sums(array):
    """``array.sum(axis=0)`` as a product with ones (NumPy's sum of narrow arrays is slow)."""
    return namespace(array).ones(array.shape[0], dtype=array.dtype) @ array


def hard_labels(R):
    """``(codes, weights)`` of a NumPy R with at most one nonzero per row, else None."""
    if type(R) is not np.ndarray or R.ndim != 2 or not R.shape[1]:
        return None
    codes = R.argmax(axis=1)
    weights = np.take_along_axis(R, codes[:, None], axis=1)[:, 0]
    return (codes, weights) if np.count_nonzero(R) == np.count_nonzero(weights) else None


def class_sums(R, X):
    """``R.T @ X``; NumPy by ``einsum``, not BLAS (its threads wait for cores others use)."""
    if type(R) is np.ndarray and type(X) is np.ndarray and X.ndim == 2:
        return np.einsum("nk,nd->kd", R, X)
    return R.T @ X


def row_blocks(step: int, *arrays):
    """``(rows, block of each array)``, ``step`` consecutive rows at a time; the arrays
    themselves when one block holds them (slicing a SciPy sparse matrix copies it)."""
    num_rows = arrays[0].shape[0]
    if step >= num_rows:
        yield slice(None), *arrays
        return
    for start in range(0, num_rows, step):
        rows = slice(start, start + step)
        yield rows, *(array[rows] for array in arrays)


def row_sums(array):
    """``array.sum(axis=1)`` as a product with ones (see :func:`column_sums`)."""
    return array @ namespace(array).ones(array.shape[1], dtype=array.dtype)


def sparse_as_float(X):
    """Integer SciPy CSR/CSC as float64 with the same indices (``astype`` would sort them first)."""
    if not (scipy.sparse.issparse(X) and X.format in ("csr", "csc")):
        return X
    if X.dtype.kind not in "biu":
        return X
    return type(X)((X.data.astype(np.float64), X.indices, X.indptr), shape=X.shape, copy=False)


def without_duplicates(X):
    """A SciPy sparse matrix storing each (row, column) at most once (``X`` itself when it does)."""
    if X.has_canonical_format:
        return X
    if (
        X.format in ("csr", "csc")
        and (X.tocsc() if X.format == "csr" else X.tocsr()).has_canonical_format
    ):
        return X
    X = X.copy()
    X.sum_duplicates()
    return X


def encode_labels(y) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(y, return_inverse=True)``, by counting for integer labels of a modest range."""
    y = np.asarray(y)
    if y.dtype.kind in "iu" and y.size:
        low, high = int(y.min()), int(y.max())
        span = high - low + 1
        if span <= max(_COUNTING_SPAN, 2 * y.size):
            # in a type that holds the span: int8 labels -128 and 8 are 136 apart
            if low == 0 and y.dtype == np.intp:
                offsets = y
            elif y.dtype.kind == "u":
                offsets = (y - y.dtype.type(low)).astype(np.intp, copy=False)
            else:
                offsets = (y.astype(np.int64, copy=False) - low).astype(np.intp, copy=False)
            present = np.bincount(offsets, minlength=span) > 0
            if y.dtype.kind == "u":  # low may be beyond int64 (2**63): add in the labels' type
                classes = np.flatnonzero(present).astype(y.dtype) + y.dtype.type(low)
            else:
                classes = (np.flatnonzero(present) + low).astype(y.dtype)
            if offsets is y and present.all():
                # labels 0..K-1, each present, are their own codes: a read-only view, no copy
                codes = y.view()
                codes.flags.writeable = False
                return classes, codes
            codes_of_offset = np.cumsum(present) - 1
            return classes, codes_of_offset[offsets]
    return np.unique(y, return_inverse=True)


def is_integer_labels(y) -> bool:
    """True when ``y`` holds integers, which scikit-learn always reads as class labels."""
    return np.asarray(y).dtype.kind in "iu"


def plain(value):
    """A NumPy scalar as the Python value it holds (a label as the user wrote it)."""
    return value.item() if hasattr(value, "item") else value
