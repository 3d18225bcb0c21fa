r"""The 14 covariance structures of Celeux & Govaert (1995), named as R's mclust names them:
:func:`covariances` is their M-step, :func:`compose`/:func:`decompose` their eigen
parametrization. The derivations, the stopping rule, the warm start and the mclust Fortran
routines each step follows are in docs/concepts.md ("The 14 structures").
"""

from __future__ import annotations

import math
from functools import partial

import numpy as np

from genprob._lazy import LazyModule
from genprob.engine._arrays import namespace
from genprob.families.gaussian.moments import symmetrize

# NumPy M-steps (closed-form fits of NumPy rows) need no JAX
jax = LazyModule("jax")
jnp = LazyModule("jax.numpy")

__all__ = [
    "STRUCTURES",
    "DegenerateGroupError",
    "covariances",
    "m_step_objective",
    "one_component",
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

#: The structures whose M-step iterates.
ITERATIVE = ("VEI", "VEE", "EVE", "VVE", "VEV")
#: Default largest change of the parameters (log shapes or volumes, orientation entries)
#: between two updates at which the iterative M-steps stop: mclust's ``emControl()$tol[2]``.
TOL = float(np.sqrt(np.finfo(np.float64).eps))
#: Default cap on their updates.
MAX_ITER = 10000
#: Fewest updates asked of EVE's and VVE's M-step for SQUAREM cycles (:func:`_common_orientation`;
#: a cycle, two or three updates, counts as one against ``max_iter``).
ACCELERATE_FROM = 100
#: Change of the orientation at which EVE's and VVE's two cold starts are compared.
SCREEN_TOL = 1e-3
#: No extrapolation once the change is within this many tolerances: MM's own steps end the loop.
JUMP_ABOVE = 10.0
#: A covariance whose smallest eigenvalue is at most this times its largest is singular.
_SINGULAR = 1e-13
#: A fitted covariance is collapsed at this ratio (the bound the mixture M-step always used).
_COLLAPSED = 1e3 * np.finfo(np.float64).eps


class DegenerateGroupError(ValueError):
    """A group's covariance is not identified; ``group`` is its index, ``structure`` the name."""

    def __init__(self, structure: str, group: int, what: str):
        self.structure, self.group, self.what = structure, group, what
        super().__init__(self.naming(f"group {group}"))

    def naming(self, owner: str) -> str:
        """The message with the group called ``owner`` (e.g. its class)."""
        return f"{self.structure}: {owner} {self.what}; its covariance is not identified"


def one_component(structure: str) -> str:
    """The structure a group of one component takes: its volume, shape and orientation are
    the group's own (spherical, diagonal or full)."""
    _check_name(structure)
    return "VII" if structure[1:] == "II" else "VVI" if structure[2] == "I" else "VVV"


def num_covariance_parameters(structure: str, G: int, D: int) -> int:
    """Free parameters of ``G`` covariances of a structure in ``D`` dimensions (``nVarParams``)."""
    return sum(math.prod(shape) for shape in latent_shapes(structure, G, D).values())


def m_step_objective(scatter, weights, sigma) -> float:
    r""":math:`Q = -\frac12 \sum_g (n_g \log\det\Sigma_g + \operatorname{tr}(W_g\Sigma_g^{-1}))`,
    the part of the complete-data log-likelihood that depends on the covariances."""
    return float(_objective(*_inputs(scatter, weights), np.asarray(sigma, dtype=float), np))


def _objective(W, n, sigma, xp):
    chol = xp.linalg.cholesky(sigma)
    logdet = 2.0 * xp.log(xp.diagonal(chol, axis1=-2, axis2=-1)).sum(axis=-1)
    half = xp.linalg.solve(chol, W)
    solved = xp.linalg.solve(chol, xp.swapaxes(half, -1, -2))
    return -0.5 * xp.sum(n * logdet + xp.trace(solved, axis1=-2, axis2=-1))


def covariances(
    structure: str,
    scatter,
    weights,
    *,
    tol: float = TOL,
    max_iter: int = MAX_ITER,
    start=None,
):
    """The covariances ``(..., G, D, D)`` of ``structure`` maximizing the complete-data
    likelihood given the weighted scatter ``scatter`` (..., G, D, D) about each group's mean and
    the weights ``weights`` (..., G); ``start``: covariances the iterative structures warm-start
    from. Leading axes are independent problems (a batch), each member with a lone call's bits.
    A degenerate NumPy group raises, naming it (docs/concepts.md, "The M-step in detail")."""
    _check_name(structure)
    if not tol >= 0 or int(max_iter) < 1:
        raise ValueError(f"tol must be >= 0 and max_iter >= 1, got {tol!r} and {max_iter!r}")
    xp = namespace(scatter, weights)
    if xp is np:
        W, n = _inputs(scatter, weights)
        _positive(n, structure, "has a weight that is not positive")
    else:
        W, n = symmetrize(scatter), weights
    if start is not None:
        start = symmetrize(np.asarray(start, dtype=float) if xp is np else start)
        if start.shape != W.shape:
            raise ValueError(f"start must have the scatter's shape {W.shape}, got {start.shape}")
    context = _Context(structure, float(tol), int(max_iter), xp, start)
    step = structure
    if W.shape[-3] == 1 and structure in ITERATIVE:
        # one group: "equal across groups" constrains nothing, the closed form is exact
        step = "VVI" if structure.endswith("I") else "VVV"
    sigma = _STEPS[step](W, n, context)
    if xp is np:
        _check_result(structure, sigma)
    return sigma


def _check_result(structure, sigma):
    """Raise unless every NumPy covariance of ``sigma`` (..., G, D, D) is finite and nonsingular."""
    if not np.all(np.isfinite(sigma)):
        raise ValueError(f"{structure}: the M-step did not give finite covariances")
    values = np.linalg.eigvalsh(sigma)
    _positive(values[..., 0] - _COLLAPSED * values[..., -1], structure, "has a singular covariance")


class _Context:
    """A structure's name (for messages), iteration settings, namespace and warm start."""

    def __init__(self, name, tol, max_iter, xp, start=None):
        self.name, self.tol, self.max_iter, self.xp = name, tol, max_iter, xp
        self.start = start

    def positive(self, values, what, pooled=False):
        if self.xp is np:
            _positive(values, self.name, what, pooled)

    def iterate(self, update, state, tol=None):
        """Apply ``update: state -> (state, change)`` until the change is at most ``tol`` (by
        default the context's); a batch's members (``change``'s shape) stop one by one, each
        keeping the state of its last update."""
        tol = self.tol if tol is None else tol
        xp = self.xp
        state, change = update(state)
        active = ~(change <= tol)  # a NaN change goes on, as it did in a lone loop
        if xp is np:
            for _ in range(self.max_iter - 1):
                if not active.any():
                    break
                new, change = update(state)
                state = _where(active, new, state, xp)
                active = active & ~(change <= tol)
            return state

        def keep_going(carry):
            iteration, _, active = carry
            return (iteration < self.max_iter) & xp.any(active)

        def step(carry):
            iteration, state, active = carry
            new, change = update(state)
            return iteration + 1, _where(active, new, state, xp), active & ~(change <= tol)

        return jax.lax.while_loop(keep_going, step, (1, state, active))[1]


# -- closed forms ---------------------------------------------------------------------------------


def _vii(W, n, c):
    xp = c.xp
    D = W.shape[-1]
    variance = xp.trace(W, axis1=-2, axis2=-1) / (D * n)
    c.positive(variance, "has zero scatter")
    return variance[..., None, None] * xp.eye(D, dtype=W.dtype)


def _vvi(W, n, c):
    return _diagonal_matrices(_diagonal(W, c.xp) / n[..., None], c)


def _evi(W, n, c):
    diag = _diagonal(W, c.xp)
    c.positive(diag.min(axis=-1), "has a feature with zero scatter")
    size = _geometric_mean(diag, c.xp)
    return _diagonal_matrices(_per_member(size, n) * diag / size[..., None], c)


def _vvv(W, n, c):
    return W / n[..., None, None]


def _evv(W, n, c):
    values = c.xp.linalg.eigvalsh(W)
    c.positive(values[..., 0] - _SINGULAR * values[..., -1], "has a singular scatter")
    size = _geometric_mean(values, c.xp)
    return _per_member(size, n)[..., None] * W / size[..., None, None]


def _eev(W, n, c):
    values, vectors = _eigen_decreasing(W, c.xp)
    pooled = values.sum(axis=-2)
    c.positive(pooled[..., -1] - _SINGULAR * pooled[..., 0], "", pooled=True)
    size = _geometric_mean(pooled, c.xp)[..., None]
    common = size / n.sum(axis=-1, keepdims=True) * pooled / size
    return _compose(vectors, c.xp.broadcast_to(common[..., None, :], values.shape), c.xp)


def _per_member(size, n):
    """``sum_g size_g / sum_g n_g`` (..., 1, 1) of each member: the E volume's factor."""
    return (size.sum(axis=-1) / n.sum(axis=-1))[..., None, None]


def _pooled(step):
    """The equal-volume closed form of a V one (VII, VVI, VVV): ``step`` on the pooled scatter."""

    def pooled(W, n, c):
        one = step(W.sum(axis=-3, keepdims=True), n.sum(axis=-1, keepdims=True), c)
        return c.xp.broadcast_to(one, W.shape)

    return pooled


# -- iterative ------------------------------------------------------------------------------------


def _vei(W, n, c):
    diag = _diagonal(W, c.xp)
    c.positive(c.xp.trace(W, axis1=-2, axis2=-1), "has zero scatter")
    c.positive(diag.sum(axis=-2).min(axis=-1), "", pooled=True)
    start = None if c.start is None else _diagonal(c.start, c.xp)
    return _diagonal_matrices(_volumes_and_common_shape(diag, n, c, start), c)


def _vev(W, n, c):
    values, vectors = _eigen_decreasing(W, c.xp)
    c.positive(values[..., 0], "has zero scatter")
    pooled = values.sum(axis=-2)
    c.positive(pooled[..., -1] - _SINGULAR * pooled[..., 0], "", pooled=True)
    start = None if c.start is None else _eigen_decreasing(c.start, c.xp)[0]
    return _compose(vectors, _volumes_and_common_shape(values, n, c, start), c.xp)


def _volumes_and_common_shape(values, n, c, start=None):
    """``lambda_g a`` (..., G, D) maximizing Q for scatter eigenvalues (or diagonals) ``values``."""
    xp = c.xp
    D = values.shape[-1]
    if start is None:
        shape = xp.ones(values.shape[:-2] + (D,), dtype=values.dtype)
    else:
        shape = _geometric_mean(xp.swapaxes(start, -1, -2), xp)
        shape = shape / _geometric_mean(shape, xp)[..., None]

    def update(shape):
        volume = (values / shape[..., None, :]).sum(axis=-1) / (D * n)
        new = (values / volume[..., None]).sum(axis=-2)
        new = new / _geometric_mean(new, xp)[..., None]
        return new, xp.max(xp.abs(xp.log(new) - xp.log(shape)), axis=-1)

    shape = c.iterate(update, shape)
    volume = (values / shape[..., None, :]).sum(axis=-1) / (D * n)
    return volume[..., None] * shape[..., None, :]


def _vee(W, n, c):
    xp = c.xp
    G, D = W.shape[-3:-1]
    c.positive(xp.trace(W, axis1=-2, axis2=-1), "has zero scatter")
    pooled = xp.linalg.eigvalsh(W.sum(axis=-3))
    c.positive(pooled[..., 0] - _SINGULAR * pooled[..., -1], "", pooled=True)

    def common_of(volume):
        common = (W / volume[..., None, None]).sum(axis=-3)
        size = xp.exp(xp.linalg.slogdet(common)[1] / D)
        return symmetrize(common / size[..., None, None])

    def update(volume):
        inverse = xp.linalg.inv(common_of(volume))
        new = _traces(W, inverse, xp) / (D * n)
        return new, xp.max(xp.abs(xp.log(new) - xp.log(volume)), axis=-1)

    if c.start is None:
        volume = xp.ones(W.shape[:-2], dtype=W.dtype)
    else:
        volume = xp.exp(xp.linalg.slogdet(c.start)[1] / D)
    volume = c.iterate(update, volume)
    return update(volume)[0][..., None, None] * common_of(volume)[..., None, :, :]


def _traces(W, M, xp):
    """``tr(W_g M)`` (..., G) for each member's ``M`` (..., D, D); member by member, as the
    batched product sums in another order."""
    if W.ndim == 3:
        return xp.einsum("gij,ji->g", W, M)
    flat_W, flat_M = W.reshape((-1,) + W.shape[-3:]), M.reshape((-1,) + M.shape[-2:])
    traces = [xp.einsum("gij,ji->g", w, m) for w, m in zip(flat_W, flat_M, strict=True)]
    return xp.stack(traces).reshape(W.shape[:-2])


def _common_orientation(W, n, c, equal_volume):
    """EVE and VVE: ``D`` by Browne & McNicholas's (2014) MM updates, then the diagonals."""
    xp = c.xp
    values = xp.linalg.eigvalsh(W)
    c.positive(values[..., 0] - _SINGULAR * values[..., -1], "has a singular scatter")
    largest = values[..., None, :, -1]  # (..., 1, G)

    def update(orientation):
        # W_g D, shared by the diagonals and MM1 (batched products: the loop's cost is calls)
        turned = W @ orientation[..., None, :, :]
        inverse = 1.0 / _diagonals_of(_rotated(turned, orientation), n, equal_volume, xp)
        # MM1: x^T W x - w_max is concave in each unit column x of D
        F = _over_groups(turned, inverse) - orientation * (largest @ inverse)
        new = _procrustes(F, xp)
        # MM2: with B^{-1} <= b_max I, Q is concave in D on the orthogonal matrices
        shifted = inverse - inverse.max(axis=-1)[..., None]
        new = _procrustes(_over_groups(W @ new[..., None, :, :], shifted), xp)
        return new, xp.max(xp.abs(new - orientation), axis=(-2, -1))

    def objective(orientation):
        # Q of Sigma_g = D diag(d_g) D^T from the rotated diagonals r_g: no matrix to factor
        rotated = _rotated(W @ orientation[..., None, :, :], orientation)
        diagonals = _diagonals_of(rotated, n, equal_volume, xp)
        per_group = n * xp.log(diagonals).sum(axis=-1) + (rotated / diagonals).sum(axis=-1)
        return -0.5 * per_group.sum(axis=-1)

    def squared(orientation):
        # MM converges linearly and slowly (~0.998 a step on wine): SQUAREM (Varadhan & Roland
        # 2008) jumps along two steps, made orthogonal again, kept only where Q does not drop
        first, change = update(orientation)
        second, change = update(first)
        r, v = first - orientation, second - 2 * first + orientation
        curvature = (v * v).sum(axis=(-2, -1))  # 0 for two equal steps: alpha = -1, the second
        ratio = (r * r).sum(axis=(-2, -1)) / xp.where(curvature > 0, curvature, 1.0)
        alpha = xp.minimum(-xp.sqrt(ratio), -1.0)
        far = change > JUMP_ABOVE * c.tol  # the last updates are MM's own, to tol

        def jumped():
            a, a2 = alpha[..., None, None], _square(alpha, xp)[..., None, None]
            new = update(_procrustes(-(orientation - 2 * a * r + a2 * v), xp))[0]
            return _select(objective(new) >= objective(second), lambda: new, second, xp)

        return _select(far, jumped, second, xp), change

    step = squared if c.max_iter >= ACCELERATE_FROM else update  # capped: MM's own updates
    if c.start is None:
        # mclust's start and the pooled scatter's eigenvectors, screened where MM has settled
        # (the orientation moves by at most SCREEN_TOL), the better one run to tol
        identity = xp.broadcast_to(xp.eye(W.shape[-1], dtype=W.dtype), W.shape[:-3] + W.shape[-2:])
        starts = (identity, xp.linalg.eigh(W.sum(axis=-3))[1])
        first, second = (c.iterate(step, start, max(c.tol, SCREEN_TOL)) for start in starts)
        start = _select(objective(second) > objective(first), lambda: second, first, xp)
    else:
        # the common orientation of ``start``: the eigenvectors of a generic combination
        G = W.shape[-3]
        weights = xp.asarray(1.0 + np.arange(G) / (G + 1.0), dtype=W.dtype)
        start = xp.linalg.eigh(xp.einsum("g,...gij->...ij", weights, c.start))[1]
    orientation = c.iterate(step, start)
    rotated = _rotated(W @ orientation[..., None, :, :], orientation)
    diagonals = _diagonals_of(rotated, n, equal_volume, xp)
    return _compose(xp.broadcast_to(orientation[..., None, :, :], W.shape), diagonals, xp)


def _rotated(turned, orientation):
    """The diagonals (..., G, D) of ``D^T W_g D`` from ``turned`` = ``W_g D``."""
    return (turned * orientation[..., None, :, :]).sum(axis=-2)


def _over_groups(turned, weights):
    """``sum_g turned_g diag(weights_g)`` (..., D, D): einsum's ``gik,gk->ik``, its bits."""
    return (turned * weights[..., None, :]).sum(axis=-3)


def _diagonals_of(rotated, n, equal_volume, xp):
    """``lambda_g A_g`` (..., G, D) maximizing Q for a common orientation, from the rotated
    scatters' diagonals ``rotated`` (..., G, D)."""
    if not equal_volume:
        return rotated / n[..., None]
    size = _geometric_mean(rotated, xp)
    return _per_member(size, n) * rotated / size[..., None]


def _square(values, xp):
    """``values**2`` member by member as a lone scalar's (libm's pow): NumPy's array power
    rounds some squares to the other neighbour."""
    if xp is not np or np.ndim(values) == 0:
        return values**2
    return np.array([value**2 for value in values.ravel()]).reshape(values.shape)


def _select(flag, make, otherwise, xp):
    """``make()`` where ``flag`` (a member's) else ``otherwise``; NumPy calls ``make`` only
    when some member needs it."""
    if xp is np and not np.any(flag):
        return otherwise
    return _where(flag, make(), otherwise, xp)


def _where(flag, new, old, xp):
    """``new`` for the members where ``flag`` (batch shape), else ``old``."""
    flag = xp.reshape(flag, xp.shape(flag) + (1,) * (new.ndim - xp.ndim(flag)))
    return xp.where(flag, new, old)


def _procrustes(F, xp):
    """The orthogonal ``X`` minimizing ``<F, X>``: ``-U V^T`` for ``F = U S V^T``."""
    U, _, Vt = xp.linalg.svd(F)
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
    if W.ndim < 3 or W.shape[-1] != W.shape[-2] or n.shape != W.shape[:-2]:
        raise ValueError(
            f"scatter must be (..., G, D, D) and weights (..., G), got {W.shape} and {n.shape}"
        )
    if not (np.all(np.isfinite(W)) and np.all(np.isfinite(n))):
        raise ValueError("scatter and weights must be finite")
    return symmetrize(W), n


def _diagonal(W, xp=np):
    return xp.diagonal(W, axis1=-2, axis2=-1)


def _geometric_mean(values, xp=np):
    # the mean's bits without np.mean's Python overhead (a sum, then a division by the count)
    return xp.exp(xp.log(values).sum(axis=-1) / values.shape[-1])


def _eigen_decreasing(W, xp=np):
    values, vectors = xp.linalg.eigh(W)
    return values[..., ::-1], vectors[..., ::-1]


def _compose(vectors, values, xp=np):
    return symmetrize(xp.einsum("...ij,...j,...kj->...ik", vectors, values, vectors))


def _diagonal_matrices(variances, c):
    c.positive(variances.min(axis=-1), "has a feature with zero variance")
    return variances[..., :, None] * c.xp.eye(variances.shape[-1], dtype=variances.dtype)


def _positive(values, name, what, pooled=False):
    """Raise naming the first group (of the first failing member) whose ``values`` entry is not
    positive."""
    positive = np.greater(values, 0)
    if not positive.all():  # NaN is not positive either
        if pooled:
            raise ValueError(
                f"{name}: the scatter pooled over all groups is singular; the structure's common "
                "shape is not identified"
            )
        bad = np.argwhere(~np.atleast_1d(positive))[0]
        raise DegenerateGroupError(name, int(bad[-1]), what)


#: The M-step of each name (``_vii`` for VII, ...).
_STEPS = {name: globals().get(f"_{name.lower()}") for name in STRUCTURES}
_STEPS.update(EII=_pooled(_vii), EEI=_pooled(_vvi), EEE=_pooled(_vvv))
_STEPS.update(EVE=partial(_common_orientation, equal_volume=True))
_STEPS.update(VVE=partial(_common_orientation, equal_volume=False))


# -- the eigen parametrization (priors, optimizers, NUTS) -----------------------------------------


def latent_shapes(structure: str, num_groups: int, num_features: int) -> dict:
    r"""Shapes of the free parameters of :math:`\Sigma_g = \lambda_g D_g A_g D_g^\top`:
    ``log_volume``, ``log_shape`` (D-1 free) and ``orientation`` (Cayley's D(D-1)/2 skew
    entries), each shared (E) or per group (V), absent when the letter is I or when D = 1."""
    _check_name(structure)
    volume, shape, orientation = structure
    G, D = int(num_groups), int(num_features)
    shapes = {"log_volume": () if volume == "E" else (G,)}
    if shape != "I" and D > 1:
        shapes["log_shape"] = (D - 1,) if shape == "E" else (G, D - 1)
    if orientation != "I" and D > 1:
        shapes["orientation"] = (D * (D - 1) // 2,) if orientation == "E" else (G, D * (D - 1) // 2)
    return shapes


def _skew_basis(D):
    """(P, D, D): the skew-symmetric matrix of each upper entry."""
    rows, cols = np.triu_indices(D, 1)
    basis = np.zeros((rows.size, D, D))
    basis[np.arange(rows.size), rows, cols] = 1.0
    basis[np.arange(rows.size), cols, rows] = -1.0
    return basis


def compose(structure: str, latent: dict, num_groups: int, num_features: int, xp=np):
    """The covariances (G, D, D) of the free parameters ``latent`` (:func:`latent_shapes`),
    NumPy or JAX (``xp``) alike."""
    G, D = int(num_groups), int(num_features)
    log_volume = xp.broadcast_to(xp.asarray(latent["log_volume"]), (G,))
    log_shape = xp.zeros((G, D), dtype=log_volume.dtype)
    if "log_shape" in latent:
        free = xp.broadcast_to(latent["log_shape"], (G, D - 1))
        log_shape = xp.concatenate([free, -free.sum(axis=-1, keepdims=True)], axis=-1)
    diagonals = xp.exp(log_volume[:, None] + log_shape)
    if "orientation" not in latent:
        return diagonals[:, :, None] * xp.eye(D, dtype=diagonals.dtype)
    entries = xp.broadcast_to(latent["orientation"], (G, D * (D - 1) // 2))
    skew = xp.einsum("gp,pij->gij", entries, xp.asarray(_skew_basis(D), dtype=entries.dtype))
    identity = xp.eye(D, dtype=entries.dtype)
    rotation = xp.linalg.solve(identity + skew, identity - skew)
    return xp.einsum("gij,gj,gkj->gik", rotation, diagonals, rotation)


def decompose(structure: str, sigma) -> dict:
    """The canonical free parameters (:func:`latent_shapes`) of covariances ``sigma`` (G, D, D),
    NumPy or JAX alike."""
    _check_name(structure)
    xp = namespace(sigma)
    sigma = symmetrize(sigma if xp is not np else np.asarray(sigma, dtype=float))
    G, D = sigma.shape[:2]
    volume, shape, orientation = structure
    if orientation == "I" or D == 1:
        vectors = xp.broadcast_to(xp.eye(D, dtype=sigma.dtype), sigma.shape)
        values = _diagonal(sigma, xp)
    elif orientation == "E":
        # the groups share D: any generic combination of them has D's eigenvectors
        weights = xp.asarray(1.0 + np.arange(G) / (G + 1.0), dtype=sigma.dtype)
        mixed = xp.einsum("g,gij->ij", weights, sigma)
        vectors = xp.broadcast_to(xp.linalg.eigh(mixed)[1][:, ::-1], sigma.shape)
        values = xp.einsum("gij,gik,gkj->gj", vectors, sigma, vectors)
    else:
        values, vectors = _eigen_decreasing(sigma, xp)
    log_values = xp.log(values)
    log_volume = log_values.mean(axis=1)
    log_shape = log_values - log_volume[:, None]
    shapes = latent_shapes(structure, G, D)
    latent = {"log_volume": log_volume.mean() if volume == "E" else log_volume}
    if "log_shape" in shapes:
        latent["log_shape"] = log_shape[:, :-1].mean(axis=0) if shape == "E" else log_shape[:, :-1]
    if "orientation" in shapes:
        rotations = _rotations(vectors, xp)
        identity = xp.eye(D, dtype=sigma.dtype)
        rows, cols = np.triu_indices(D, 1)
        skews = xp.linalg.solve(identity + rotations, identity - rotations)
        entries = skews[:, rows, cols]
        latent["orientation"] = entries[0] if orientation == "E" else entries
    return latent


def _rotations(vectors, xp=np):
    """Eigenvectors signed to a non-negative diagonal and det +1: away from Cayley's poles."""
    diagonal = _diagonal(vectors, xp)
    vectors = vectors * xp.where(diagonal < 0, -1.0, 1.0)[:, None, :]
    smallest = xp.argmin(xp.abs(diagonal), axis=1)
    negative = xp.linalg.det(vectors) < 0
    flip = (xp.arange(vectors.shape[-1]) == smallest[:, None]) & negative[:, None]
    return vectors * xp.where(flip, -1.0, 1.0)[:, None, :]
