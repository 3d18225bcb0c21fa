r"""The 14 covariance structures of Celeux & Govaert (1995), named as R's mclust names them.

Each group ``g`` (a class in EDDA, a component within a class in MclustDA) has the covariance
:math:`\Sigma_g = \lambda_g D_g A_g D_g^\top`: a volume :math:`\lambda_g > 0`, a diagonal shape
:math:`A_g` with :math:`\det A_g = 1` and an orthogonal orientation :math:`D_g`. The three
letters of a name say, in that order, whether volume, shape and orientation are equal across
groups (``E``), variable (``V``) or the identity (``I``; for the shape, ``A = I``, for the
orientation, axis-aligned).

:func:`covariances` is the M-step of the covariances: given the weighted scatter matrices
:math:`W_g = \sum_i z_{ig} (x_i - \mu_g)(x_i - \mu_g)^\top` and weights :math:`n_g = \sum_i
z_{ig}`, it maximizes

.. math:: Q(\Sigma) = -\tfrac12 \sum_g \bigl(n_g \log\det\Sigma_g
          + \operatorname{tr}(W_g \Sigma_g^{-1})\bigr)

over the structure's covariances. Closed forms (Celeux & Govaert 1995, Table 1; mclust's
``src/mclust.f`` ``mseii``, ``msvii``, ``mseei``, ``msvvi``, ``msevi``, ``mseee``, ``mseev``,
``msvvv`` and ``src/mclust2.f`` ``msevv``): EII, VII, EEI, EVI, VVI, EEE, EEV, EVV, VVV.
Iterative, each step an exact maximization over one block, or a majorization, so that Q never
decreases:

* VEI and VEV: volumes and the common shape alternately (Celeux & Govaert 1995, p. 784;
  mclust's ``msvei``, ``msvev``), VEV on the eigenvalues of each :math:`W_g` in decreasing order;
* VEE: volumes and the common :math:`C = D A D^\top` alternately (Celeux & Govaert 1995,
  p. 785; mclust's ``msvee``);
* EVE and VVE: the common orientation by the two MM updates of Browne & McNicholas (2014,
  "Estimating common principal components in high dimensions", ADAC 8), then the shapes (and
  volumes) in closed form (mclust's ``mseve``, ``msvve``). For VVE the MM steps weight each
  group by :math:`(\lambda_g A_g)^{-1}`, the exact majorizer of Q (mclust weights by
  :math:`A_g^{-1}`).

The iterations stop when the relative change of Q is at most ``tol`` or after ``max_iter``
updates; they start from mclust's starting point (unit volumes and shapes, identity orientation)
and, for EVE and VVE, also from the pooled scatter's eigenvectors, keeping the higher Q.
A group whose covariance is not identified (zero weight, or a scatter too singular for the
structure) raises a ``ValueError`` naming the group and the structure: never a NaN.

All in NumPy (float64); these are fitted once per M-step outside any traced function.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = [
    "STRUCTURES",
    "covariances",
    "m_step_objective",
    "num_covariance_parameters",
]

#: The 14 names in mclust's order (``mclust.options("emModelNames")``).
STRUCTURES = (
    "EII",
    "VII",
    "EEI",
    "VEI",
    "EVI",
    "VVI",
    "EEE",
    "VEE",
    "EVE",
    "VVE",
    "EEV",
    "VEV",
    "EVV",
    "VVV",
)

#: Default relative change of Q at which the iterative M-steps stop.
TOL = 1e-10
#: Default cap on their updates.
MAX_ITER = 2000
#: A covariance whose smallest eigenvalue is at most this times its largest is singular.
_SINGULAR = 1e-13


def num_covariance_parameters(structure: str, G: int, D: int) -> int:
    """Free parameters of the ``G`` covariances of a structure in ``D`` dimensions (mclust's
    ``nVarParams``): volumes 1 or G, shapes D-1 or G(D-1) (or none), orientations D(D-1)/2 or
    G D(D-1)/2 (or none); EVV counts ``G D(D+1)/2 - (G-1)`` (one volume for G free matrices)."""
    _check_name(structure)
    G, D = int(G), int(D)
    volume, shape, orientation = structure
    count = 1 if volume == "E" else G
    if shape != "I":
        count += (D - 1) * (1 if shape == "E" else G)
    if orientation != "I":
        count += D * (D - 1) // 2 * (1 if orientation == "E" else G)
    return count


def m_step_objective(scatter, weights, sigma) -> float:
    r""":math:`Q = -\frac12 \sum_g (n_g \log\det\Sigma_g + \operatorname{tr}(W_g\Sigma_g^{-1}))`,
    the part of the complete-data log-likelihood that depends on the covariances."""
    W, n = _inputs(scatter, weights)
    chol = np.linalg.cholesky(np.asarray(sigma, dtype=float))
    logdet = 2.0 * np.log(np.diagonal(chol, axis1=-2, axis2=-1)).sum(axis=-1)
    solved = np.linalg.solve(chol, np.linalg.solve(chol, W).swapaxes(-1, -2))
    return float(-0.5 * np.sum(n * logdet + np.trace(solved, axis1=-2, axis2=-1)))


def covariances(structure: str, scatter, weights, *, tol: float = TOL, max_iter: int = MAX_ITER):
    """The covariances ``(G, D, D)`` of ``structure`` maximizing the complete-data likelihood
    given the weighted scatter matrices ``scatter`` (G, D, D) about each group's mean and the
    weights ``weights`` (G,) (see the module docstring)."""
    _check_name(structure)
    if not tol >= 0 or int(max_iter) < 1:
        raise ValueError(f"tol must be >= 0 and max_iter >= 1, got {tol!r} and {max_iter!r}")
    W, n = _inputs(scatter, weights)
    G, D = W.shape[:2]
    for g in range(G):
        if not n[g] > 0:
            raise ValueError(f"{structure}: group {g} has weight {n[g]!r}; it needs a positive one")
    sigma = _STEPS[structure](W, n, structure, float(tol), int(max_iter))
    _check_definite(sigma, structure)
    return sigma


# -- closed forms ---------------------------------------------------------------------------------


def _eii(W, n, name, tol, max_iter):
    G, D = W.shape[:2]
    variance = np.trace(W, axis1=1, axis2=2).sum() / (D * n.sum())
    _positive(np.full(G, variance), name, "has zero scatter")
    return np.broadcast_to(variance * np.eye(D), (G, D, D)).copy()


def _vii(W, n, name, tol, max_iter):
    D = W.shape[1]
    variance = np.trace(W, axis1=1, axis2=2) / (D * n)
    _positive(variance, name, "has zero scatter")
    return variance[:, None, None] * np.eye(D)


def _eei(W, n, name, tol, max_iter):
    variances = np.broadcast_to(_diagonal(W).sum(axis=0) / n.sum(), _diagonal(W).shape)
    return _diagonal_matrices(variances, name)


def _vvi(W, n, name, tol, max_iter):
    return _diagonal_matrices(_diagonal(W) / n[:, None], name)


def _evi(W, n, name, tol, max_iter):
    diag = _diagonal(W)
    _positive(diag.min(axis=1), name, "has a feature with zero scatter")
    size = _geometric_mean(diag)
    return _diagonal_matrices(size.sum() / n.sum() * diag / size[:, None], name)


def _eee(W, n, name, tol, max_iter):
    return np.broadcast_to(W.sum(axis=0) / n.sum(), W.shape).copy()


def _vvv(W, n, name, tol, max_iter):
    return W / n[:, None, None]


def _evv(W, n, name, tol, max_iter):
    values = np.linalg.eigvalsh(W)
    _positive(values[:, 0] - _SINGULAR * values[:, -1], name, "has a singular scatter")
    size = _geometric_mean(values)
    return size.sum() / n.sum() * W / size[:, None, None]


def _eev(W, n, name, tol, max_iter):
    values, vectors = _eigen_decreasing(W)
    pooled = values.sum(axis=0)
    _positive(np.atleast_1d(pooled[-1] - _SINGULAR * pooled[0]), name, "", pooled=True)
    size = _geometric_mean(pooled)
    return _compose(vectors, np.broadcast_to(size / n.sum() * pooled / size, values.shape))


# -- iterative ------------------------------------------------------------------------------------


def _vei(W, n, name, tol, max_iter):
    diag = _diagonal(W)
    _positive(np.trace(W, axis1=1, axis2=2), name, "has zero scatter")
    _positive(np.atleast_1d(diag.sum(axis=0).min()), name, "", pooled=True)
    return _diagonal_matrices(_volumes_and_common_shape(diag, n, tol, max_iter), name)


def _vev(W, n, name, tol, max_iter):
    values, vectors = _eigen_decreasing(W)
    _positive(values[:, 0], name, "has zero scatter")
    pooled = values.sum(axis=0)
    _positive(np.atleast_1d(pooled[-1] - _SINGULAR * pooled[0]), name, "", pooled=True)
    return _compose(vectors, _volumes_and_common_shape(values, n, tol, max_iter))


def _volumes_and_common_shape(values, n, tol, max_iter):
    """``lambda_g a`` (G, D) maximizing Q for scatter eigenvalues (or diagonals) ``values``
    (G, D), a common shape ``a`` with product 1: alternate exact updates of volumes and shape."""
    G, D = values.shape
    shape = np.ones(D)
    previous = -np.inf
    for _ in range(max_iter):
        volume = (values / shape).sum(axis=1) / (D * n)
        shape = (values / volume[:, None]).sum(axis=0)
        shape = shape / _geometric_mean(shape)
        # Q up to constants: the trace terms sum to D * n at these volumes
        current = -0.5 * (D * np.sum(n * np.log(volume)) + D * n.sum())
        if _converged(previous, current, tol):
            break
        previous = current
    volume = (values / shape).sum(axis=1) / (D * n)
    return volume[:, None] * shape


def _vee(W, n, name, tol, max_iter):
    G, D = W.shape[:2]
    _positive(np.trace(W, axis1=1, axis2=2), name, "has zero scatter")
    pooled = np.linalg.eigvalsh(W.sum(axis=0))
    _positive(np.atleast_1d(pooled[0] - _SINGULAR * pooled[-1]), name, "", pooled=True)
    volume = np.ones(G)
    previous = -np.inf
    for _ in range(max_iter):
        common = (W / volume[:, None, None]).sum(axis=0)
        common = _symmetric(common / math.exp(np.linalg.slogdet(common)[1] / D))
        inverse = np.linalg.inv(common)
        volume = np.einsum("gij,ji->g", W, inverse) / (D * n)
        current = -0.5 * (D * np.sum(n * np.log(volume)) + D * n.sum())
        if _converged(previous, current, tol):
            break
        previous = current
    return volume[:, None, None] * common


def _eve(W, n, name, tol, max_iter):
    return _common_orientation(W, n, name, tol, max_iter, equal_volume=True)


def _vve(W, n, name, tol, max_iter):
    return _common_orientation(W, n, name, tol, max_iter, equal_volume=False)


def _common_orientation(W, n, name, tol, max_iter, equal_volume):
    """EVE and VVE: ``D`` by the MM1 and MM2 updates of Browne & McNicholas (2014), then the
    diagonals in closed form, from the identity and from the pooled eigenvectors."""
    values = np.linalg.eigvalsh(W)
    _positive(values[:, 0] - _SINGULAR * values[:, -1], name, "has a singular scatter")
    largest = values[:, -1]
    starts = (np.eye(W.shape[1]), np.linalg.eigh(W.sum(axis=0))[1])
    best, best_q = None, -np.inf
    for orientation in starts:
        diagonals = _orientation_diagonals(W, n, orientation, equal_volume)
        previous = -np.inf
        for _ in range(max_iter):
            inverse = 1.0 / diagonals
            # MM1: x^T W x - w_max is concave in each unit column x of D
            F = np.einsum("gij,jk,gk->ik", W, orientation, inverse)
            F = F - np.einsum("g,ik,gk->ik", largest, orientation, inverse)
            orientation = _procrustes(F)
            # MM2: with B^{-1} <= b_max I, Q is concave in D on the orthogonal matrices
            inverse = 1.0 / diagonals
            F = np.einsum("gij,jk,gk->ik", W, orientation, inverse)
            F = F - np.einsum("g,gij,jk->ik", inverse.max(axis=1), W, orientation)
            orientation = _procrustes(F)
            diagonals = _orientation_diagonals(W, n, orientation, equal_volume)
            current = -0.5 * np.sum(n * np.log(diagonals).sum(axis=1))
            if _converged(previous, current, tol):
                break
            previous = current
        sigma = _compose(np.broadcast_to(orientation, W.shape), diagonals)
        q = m_step_objective(W, n, sigma)
        if q > best_q:
            best, best_q = sigma, q
    return best


def _orientation_diagonals(W, n, orientation, equal_volume):
    """``lambda_g A_g`` (G, D) maximizing Q for a common orientation ``D``."""
    rotated = np.einsum("ij,gik,kj->gj", orientation, W, orientation)
    if not equal_volume:
        return rotated / n[:, None]
    size = _geometric_mean(rotated)
    return size.sum() / n.sum() * rotated / size[:, None]


def _procrustes(F):
    """The orthogonal ``X`` minimizing ``<F, X>``: ``-U V^T`` for ``F = U S V^T``."""
    U, _, Vt = np.linalg.svd(F)
    return -U @ Vt


# -- helpers --------------------------------------------------------------------------------------


def _check_name(structure):
    if structure not in STRUCTURES:
        raise ValueError(
            f"unknown structure {structure!r}; expected one of {', '.join(STRUCTURES)}"
        )


def _inputs(scatter, weights):
    W = np.asarray(scatter, dtype=float)
    n = np.asarray(weights, dtype=float)
    if W.ndim != 3 or W.shape[1] != W.shape[2] or n.shape != W.shape[:1]:
        raise ValueError(f"scatter must be (G, D, D) and weights (G,), got {W.shape} and {n.shape}")
    if not (np.all(np.isfinite(W)) and np.all(np.isfinite(n))):
        raise ValueError("scatter and weights must be finite")
    return _symmetric(W), n


def _symmetric(A):
    return 0.5 * (A + np.swapaxes(A, -1, -2))


def _diagonal(W):
    return np.diagonal(W, axis1=-2, axis2=-1)


def _geometric_mean(values):
    return np.exp(np.log(values).mean(axis=-1))


def _eigen_decreasing(W):
    values, vectors = np.linalg.eigh(W)
    return values[:, ::-1], vectors[:, :, ::-1]


def _compose(vectors, values):
    return _symmetric(np.einsum("gij,gj,gkj->gik", vectors, values, vectors))


def _diagonal_matrices(variances, name):
    _positive(variances.min(axis=1), name, "has a feature with zero variance")
    return variances[:, :, None] * np.eye(variances.shape[1])


def _converged(previous, current, tol):
    return abs(current - previous) <= tol * (1.0 + abs(current))


def _positive(values, name, what, pooled=False):
    """Raise naming the first group whose ``values`` entry is not positive."""
    bad = np.flatnonzero(~(np.asarray(values) > 0))
    if bad.size:
        if pooled:
            raise ValueError(
                f"{name}: the scatter pooled over all groups is singular; the structure's common "
                "shape is not identified"
            )
        raise ValueError(f"{name}: group {bad[0]} {what}; its covariance is not identified")


def _check_definite(sigma, name):
    if not np.all(np.isfinite(sigma)):
        raise ValueError(f"{name}: the M-step did not give finite covariances")
    values = np.linalg.eigvalsh(sigma)
    _positive(values[:, 0] - _SINGULAR * values[:, -1], name, "has a singular covariance")


_STEPS = {
    "EII": _eii,
    "VII": _vii,
    "EEI": _eei,
    "VEI": _vei,
    "EVI": _evi,
    "VVI": _vvi,
    "EEE": _eee,
    "VEE": _vee,
    "EVE": _eve,
    "VVE": _vve,
    "EEV": _eev,
    "VEV": _vev,
    "EVV": _evv,
    "VVV": _vvv,
}
