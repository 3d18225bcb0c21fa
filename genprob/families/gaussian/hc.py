"""mclust's model-based hierarchical agglomeration (``hc``), the start of mixtures' EM.

``Mclust`` starts EM for G components from ``hclass(hc(X, "VVV", use = "SVD"), G)``: the rows,
standardized and rotated onto their principal axes (:func:`svd_transform`), are merged from
singletons by the pair whose merge costs the least classification likelihood under unconstrained
Gaussians (hcVVV, Banfield & Raftery 1993; Fraley 1998), regularized as mclust's Fortran does:
a group of ``n`` rows with scatter ``W`` costs ``n log((tr(W) + alpha)/n)`` while ``n <= p``, else
``n log(det(W/n) + (tr(W)+alpha)/n)``, with ``alpha`` the data's total scatter over ``n p``.
Deterministic (ties: the last pair in mclust's scan order). NumPy; O(n^2) memory, O(n^2 p^3)
time (each merge recomputes the merged group's costs against the others).
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from dataclasses import dataclass

import numpy as np

__all__ = ["MAX_ROWS", "HierarchicalTree", "hc_vvv", "hclass", "svd_transform", "tree_of"]

#: Most rows :func:`hc_vvv` agglomerates: its n x n merge costs and O(n^3) time (mclust's own
#: default, ``mclust.options("subset")``, runs hc on at most 2000 rows too).
MAX_ROWS = 2000


@dataclass(frozen=True)
class HierarchicalTree:
    """The n - 1 merges of ``n`` rows, each as mclust's ``hc`` reports it: the two groups'
    smallest row numbers (0-based, smaller first), and the merge's cost."""

    n: int
    merges: np.ndarray  # (n - 1, 2) ints
    costs: np.ndarray  # (n - 1,)


def svd_transform(X):
    """mclust's ``use = "SVD"`` data: columns centered and scaled (sd with n - 1; constant or
    non-finite columns dropped, as mclust's ``dropCols``), then ``Xs V diag(1/sqrt(d))`` with
    ``svd(Xs) = U diag(d) V'``. Returns Z, center, scale, d (before dropping null directions).

    Directions with ``d`` below ``max(n, p) eps d_max`` carry no data and are dropped (mclust
    divides by their square root).
    """
    X = np.asarray(X, dtype=np.float64)
    if X.ndim != 2 or X.shape[0] < 2:
        raise ValueError(f"X must be a 2-d array of at least 2 rows; got shape {X.shape}.")
    center = X.mean(axis=0)
    with np.errstate(divide="ignore", invalid="ignore"):
        scale = X.std(axis=0, ddof=1)
        Xs = (X - center) / scale
    keep = np.all(np.isfinite(Xs), axis=0)
    Xs = Xs[:, keep]
    _, d, Vt = np.linalg.svd(Xs, full_matrices=False)
    null = d <= max(Xs.shape) * np.finfo(np.float64).eps * (d[0] if d.size else 0.0)
    Z = (Xs @ Vt[~null].T) / np.sqrt(d[~null])
    return Z, center, scale, d


def _cost(size, scatter, trace, alpha):
    """mclust's vvvtij (beta = 1): the regularized term of groups of ``size`` rows."""
    p = scatter.shape[-1]
    size = np.asarray(size, dtype=np.float64)
    spread = np.log((trace + alpha) / size)
    sign, logdet = np.linalg.slogdet(scatter / size[..., None, None])
    logdet = np.where(sign > 0, logdet, -np.inf)  # singular: the trace term alone, as mclust
    return size * np.where(size <= p, spread, np.logaddexp(logdet, spread))


def hc_vvv(Z, *, max_rows: int = MAX_ROWS) -> HierarchicalTree:
    """mclust's hcVVV from singletons on the rows of ``Z`` (use :func:`svd_transform`'s).

    Raises:
        ValueError: ``Z`` has more than ``max_rows`` rows (the n x n costs), or non-finite cells.
    """
    Z = np.asarray(Z, dtype=np.float64)
    n, p = Z.shape
    if n > max_rows:
        raise ValueError(
            f"hierarchical agglomeration of {n} rows: at most max_rows={max_rows} (it keeps "
            f"{n} x {n} merge costs and takes O(n^3) time); start from k-means instead."
        )
    if not np.all(np.isfinite(Z)):
        raise ValueError("Z: hierarchical agglomeration needs finite cells.")
    # alpha = traceW(Z / sqrt(n p)): the total scatter over n p
    alpha = max(float(np.sum((Z - Z.mean(axis=0)) ** 2)) / (n * p), np.finfo(np.float64).eps)
    single = np.log(alpha)  # a singleton's cost
    # slots 0..lg-1 hold the groups, as the Fortran's rows (a merge moves the last into a gap)
    size = np.ones(n)
    mean = Z.copy()
    scatter = np.zeros((n, p, p))
    trace = np.zeros(n)
    cost = np.full(n, single)
    head = np.arange(n)  # each group's smallest row
    # D[j, i], i < j: the cost of merging groups i and j (the Fortran's packed order); two
    # singletons: always the n <= p form, as the Fortran. Blocks of rows bound the memory.
    D = np.full((n, n), np.inf)
    for a in range(0, n, 256):
        rows = np.arange(a, min(a + 256, n))
        sq = np.sum((Z[rows, None, :] - Z[None, :, :]) ** 2, axis=-1) / 2.0
        block = 2.0 * np.log((sq + alpha) / 2.0) - 2.0 * single
        D[rows] = np.where(np.arange(n)[None, :] < rows[:, None], block, np.inf)
    # each row's least cost and its column (the last among equals, as the Fortran's ".le.")
    row_min, row_arg = np.full(n, np.inf), np.zeros(n, dtype=int)

    def rescan(rows):
        part = D[rows][:, ::-1]
        row_arg[rows] = D.shape[1] - 1 - np.argmin(part, axis=1)
        row_min[rows] = D[rows, row_arg[rows]]

    def changed(rows, column):  # D[rows, column] changed: each row's least cost follows
        if rows.size == 0:
            return
        lost = row_arg[rows] == column
        value = D[rows, column]
        better = ~lost & (
            (value < row_min[rows]) | ((value == row_min[rows]) & (column > row_arg[rows]))
        )
        row_min[rows[better]], row_arg[rows[better]] = value[better], column
        if lost.any():
            rescan(rows[lost])

    rescan(np.arange(1, n))
    merges, costs = np.zeros((n - 1, 2), dtype=int), np.zeros(n - 1)
    for step in range(n - 1):
        lg = n - step
        # the least cost, the last in the scan order among equals (the Fortran's ".le.")
        j = lg - 1 - int(np.argmin(row_min[:lg][::-1]))
        i = int(row_arg[j])
        merges[step] = sorted((head[i], head[j]))
        costs[step] = D[j, i]
        # group j joins group i; the last slot moves into j
        ni, nj = size[i], size[j]
        diff = mean[j] - mean[i]
        nij = ni + nj
        scatter[i] = scatter[i] + scatter[j] + (ni * nj / nij) * np.outer(diff, diff)
        trace[i] = trace[i] + trace[j] + (ni * nj / nij) * float(diff @ diff)
        mean[i] = (ni * mean[i] + nj * mean[j]) / nij
        size[i] = nij
        cost[i] = costs[step] + cost[i] + cost[j]
        head[i] = min(head[i], head[j])
        end = lg - 1
        if j != end:
            for a in (size, mean, scatter, trace, cost, head):
                a[j] = a[end]
            D[j, :j] = D[end, :j]
            D[j + 1 : end, j] = D[end, j + 1 : end]
            rescan(np.array([j]))
            changed(np.arange(j + 1, end), j)
        D[end, :] = np.inf
        D[:, end] = np.inf
        row_min[end] = np.inf
        if end < 2:
            continue
        # the merged group against every other group
        others = np.concatenate([np.arange(i), np.arange(i + 1, end)])
        nk = size[others]
        dk = mean[others] - mean[i]
        w = size[i] * nk / (size[i] + nk)
        merged = scatter[i] + scatter[others] + w[:, None, None] * dk[:, :, None] * dk[:, None, :]
        tr = trace[i] + trace[others] + w * np.sum(dk * dk, axis=1)
        new = _cost(size[i] + nk, merged, tr, alpha) - cost[i] - cost[others]
        D[i, :i] = new[:i]
        D[i + 1 : end, i] = new[i:]
        if i > 0:
            rescan(np.array([i]))
        changed(np.arange(i + 1, end), i)
    return HierarchicalTree(n=n, merges=merges, costs=costs)


def hclass(tree: HierarchicalTree, G: int) -> np.ndarray:
    """mclust's ``hclass``: each row's group (0..G-1, in order of first appearance) after the
    first n - G merges of ``tree``."""
    if not 1 <= G <= tree.n:
        raise ValueError(f"G must be in 1..{tree.n}; got {G}.")
    label = np.arange(tree.n)
    for a, b in tree.merges[: tree.n - G]:
        label[label == b] = a  # the group keeps its smallest row, as hclass
    _, first, inverse = np.unique(label, return_index=True, return_inverse=True)
    order = np.argsort(np.argsort(first))
    return order[inverse]


#: Trees of recent data (a fit of 14 structures x G values starts each from one tree).
_TREES: OrderedDict = OrderedDict()
_CACHE_SIZE = 16


def tree_of(X, *, max_rows: int = MAX_ROWS) -> HierarchicalTree:
    """mclust's default hc tree of ``X`` (hcVVV on :func:`svd_transform`'s data), cached."""
    X = np.ascontiguousarray(X, dtype=np.float64)
    key = (X.shape, hashlib.sha256(X.tobytes()).hexdigest(), max_rows)
    if key in _TREES:
        _TREES.move_to_end(key)
        return _TREES[key]
    tree = hc_vvv(svd_transform(X)[0], max_rows=max_rows)
    _TREES[key] = tree
    if len(_TREES) > _CACHE_SIZE:
        _TREES.popitem(last=False)
    return tree
