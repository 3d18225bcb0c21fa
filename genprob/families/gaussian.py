r"""Gaussian class-conditionals: LDA, QDA, Gaussian naive Bayes and shared-variance naive Bayes.

Story::

    y ~ Categorical(class_prior)
    x | y = k ~ Normal(means[k], Sigma_k)

with ``Sigma_k`` full or diagonal (``covariance="full" | "diag"``) and shared across classes or
per class (``shared=True | False``):

============  ==========  =====================================
covariance    shared      model
============  ==========  =====================================
``"full"``    ``True``    linear discriminant analysis (LDA)
``"full"``    ``False``   quadratic discriminant analysis (QDA)
``"diag"``    ``False``   Gaussian naive Bayes
``"diag"``    ``True``    naive Bayes with shared variances
============  ==========  =====================================

Maximum likelihood, with ``N_k = sum_i R_ik`` and ``N = sum_k N_k``::

    means[k] = sum_i R_ik x_i / N_k
    S_k      = sum_i R_ik (x_i - means[k])(x_i - means[k])^T / N_k     (per class)
    S        = sum_k N_k S_k / N                                       (shared, "pooled")

``estimator="unbiased"`` divides the scatter by ``N_k - 1`` (per class) or ``N - K`` (pooled)
instead. Regularization, applied in this order:

* ``shrinkage`` a (float): ``(1 - a) Sigma + a (tr Sigma / D) I`` (scikit-learn's LDA);
  ``shrinkage="auto"``: Ledoit–Wolf per class on standardized features, as scikit-learn does:
  ``S_k -> (1 - alpha_k) S_k + alpha_k mu_k diag(s_k^2)`` with ``s_k`` the class's feature sds,
  ``mu_k`` the mean diagonal of its correlation matrix and ``alpha_k`` the Ledoit–Wolf
  coefficient; the shared covariance is then the weighted sum of the shrunk class covariances;
* ``reg_param`` r: ``(1 - r) Sigma + r I`` (scikit-learn's QDA);
* ``var_smoothing`` e (diagonal only): every variance gets ``e * max_j Var(x_j)`` added
  (scikit-learn's Gaussian NB; ``Var`` is the variance of the pooled, row-weighted data).

Each regularized estimate is the maximizer of ``log-likelihood + log_penalty`` for the
data-size dependent conjugate prior given in :meth:`GaussianStory.log_penalty`.

Rank-deficient shared covariances (``rank_tol``). With ``p > n`` or a constant feature the pooled
covariance is singular and has no density. Given ``rank_tol = tau`` the emission is the Gaussian of
the data *projected on the retained subspace*: write ``Sigma = D_s C D_s`` with ``D_s`` the
feature sds (1 where a feature has zero variance) and ``C = V diag(lambda) V^T`` the correlation
matrix; directions with ``lambda_j <= tau^2`` are dropped (this is scikit-learn's ``svd`` solver
rule ``singular value > tol``), leaving ``B = D_s^{-1} V_r`` (D, r). The log density is the density
of the orthogonal projection of ``x`` on ``span(B)``::

    log p(x | k) = -1/2 ||W^T (x - m_k)||^2 - r/2 log(2 pi) + 1/2 log det(B^T B)
                   - 1/2 log det(B^T Sigma B),          W = B chol(B^T Sigma B)^{-T}

which is the ordinary ``log N(x; m_k, Sigma)`` when nothing is dropped, and whose class posteriors
equal scikit-learn's (``W W^T`` acts as the pseudo-inverse of ``Sigma``). The subspace is held
fixed under differentiation (``stop_gradient``), so gradients are exact in the full-rank case.
Features whose variance is at the rounding level of its own computation are snapped to exactly
constant first, so they are dropped rather than given a near-infinite weight.
"""

from __future__ import annotations

import math
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
from jax.scipy.linalg import solve_triangular
from numpyro.distributions import constraints

from genprob._dtype import TOLERANCES
from genprob.story import Story

__all__ = ["DiagonalNormal", "GaussianStory", "WhitenedNormal", "ledoit_wolf_shrinkage"]

#: Rows per block of the chunked statistics pass (fits in cache; see ``_chunked_sum``).
_CHUNK = 4096
_LOG_2PI = math.log(2.0 * math.pi)
#: scikit-learn detects constant features with float64 rounding bounds whatever the data dtype.
_EPS64 = float(np.finfo(np.float64).eps)


class WhitenedNormal(dist.Distribution):
    r"""Gaussian given by a whitening matrix: ``log p(x) = -1/2 ||(x - loc) W||^2 + const``.

    ``W`` (D, D) satisfies ``W^T Sigma W = I`` on the retained subspace (its other columns are
    zero), so ``W W^T`` is the (subspace) precision. With a full-rank ``Sigma`` and
    ``W = chol(Sigma)^{-T}`` this is the ordinary multivariate normal.

    A shared ``W`` (2-D) is applied once to the data and once to the means, so scoring n rows
    against K classes costs one (n, D) x (D, D) product instead of K.

    Args:
        loc: means (..., K, D).
        whitening: ``W``, (D, D) shared or (K, D, D) per class.
        coloring: ``A`` with ``A A^T = Sigma`` (restricted), same shape as ``whitening``; used
            for sampling ``x = loc + A eps``.
        log_normalizer: ``1/2 log det(W^T W)`` in the projected coordinates (``-1/2 log det Sigma``
            at full rank), scalar or (K,).
        rank: number of retained dimensions r, scalar or (K,).
    """

    arg_constraints = {"loc": constraints.real_vector}
    support = constraints.real_vector
    reparametrized_params = ["loc"]
    pytree_data_fields = ("loc", "whitening", "coloring", "log_normalizer", "rank")

    def __init__(self, loc, whitening, coloring, log_normalizer, rank, *, validate_args=None):
        self.loc = loc
        self.whitening = whitening
        self.coloring = coloring
        self.log_normalizer = log_normalizer
        self.rank = rank
        batch_shape = jnp.broadcast_shapes(
            jnp.shape(loc)[:-1],
            jnp.shape(whitening)[:-2],
            jnp.shape(log_normalizer),
            jnp.shape(rank),
        )
        super().__init__(
            batch_shape=batch_shape, event_shape=jnp.shape(loc)[-1:], validate_args=validate_args
        )

    @property
    def shared(self) -> bool:
        """True when one whitening matrix serves every class."""
        return jnp.ndim(self.whitening) == 2

    @property
    def mean(self):
        return jnp.broadcast_to(self.loc, self.batch_shape + self.event_shape)

    @property
    def precision_matrix(self):
        """``W W^T``: the inverse covariance (pseudo-inverse on the retained subspace)."""
        return self.whitening @ jnp.swapaxes(self.whitening, -1, -2)

    @property
    def covariance_matrix(self):
        """``A A^T``: the covariance restricted to the retained subspace."""
        return self.coloring @ jnp.swapaxes(self.coloring, -1, -2)

    def log_prob(self, value):
        # Center on the mean of the class means before whitening: the difference of two large
        # projections would lose the digits that separate the classes.
        center = jnp.mean(self.loc.reshape(-1, self.loc.shape[-1]), axis=0)
        whitening = self.whitening
        if self.shared:
            z = (value - center) @ whitening - (self.loc - center) @ whitening
        elif jnp.ndim(value) == 1 or jnp.shape(value)[-2] == 1:
            # one row against every class (the scoring path): a single (n, D) x (D, K D)
            # product instead of K batched ones
            rows = value if jnp.ndim(value) == 1 else value[..., 0, :]
            whitened = jnp.tensordot(rows - center, whitening, axes=([-1], [-2]))
            z = whitened - jnp.einsum("...kd,...kde->...ke", self.loc - center, whitening)
        else:
            z = jnp.einsum("...kd,...kde->...ke", value - self.loc, whitening)
        return -0.5 * jnp.sum(z * z, axis=-1) - 0.5 * self.rank * _LOG_2PI + self.log_normalizer

    def sample(self, key, sample_shape=()):
        shape = tuple(sample_shape) + self.batch_shape + self.event_shape
        noise = jax.random.normal(key, shape, dtype=jnp.result_type(self.loc))
        return self.loc + jnp.einsum("...de,...e->...d", self.coloring, noise)


class DiagonalNormal(dist.Distribution):
    r"""Independent normal features, scored against every class as matrix products when safe.

    ``log p(x | k) = -1/2 sum_j (x_j - mu_kj)^2 / s_kj - 1/2 sum_j log(2 pi s_kj)`` with
    variances ``s_kj``. Scoring n rows against K classes elementwise costs (n, K, D) work; with
    ``u = x - c`` and ``m_k = mu_k - c`` about a center ``c`` (the mean of the class means), the
    squares expand into one (n, 2D) x (2D, 2K) product of ``[u^2, u]`` that yields both
    ``A - 2 B`` and ``A``::

        sum_j (u_j - m_kj)^2 / s_kj = A_k(u) - 2 B_k(u) + C_k,
        A_k = sum_j u_j^2 / s_kj,   B_k = sum_j u_j m_kj / s_kj,   C_k = sum_j m_kj^2 / s_kj.

    The expansion cancels when a row lies near a class mean that is far from the center in units
    of a tiny variance (scikit-learn's ``var_smoothing`` variances of constant pixels). A
    first-order bound, with ``eps`` the machine epsilon: rounding ``u``, ``m``, ``1 / s`` and the
    termwise products moves each term by a few ``eps / 2`` of ``u_j^2 / s + m_j^2 / s`` (since
    ``2 |u_j m_kj| <= u_j^2 + m_kj^2``); summing the 2D terms of the product, whose magnitudes add
    up to at most ``2 A + C``, in any order, and the D terms of ``C`` adds at most
    ``(2 D + D / 2) eps (A + C)``. Altogether the expanded quadratic is within
    ``(3 D + 8) eps (A_k + C_k)`` of the exact one, and ``A_k`` comes out of the same product.
    Where half that bound (the log density's share) exceeds the dtype's absolute tolerance
    (:data:`genprob._dtype.TOLERANCES`: 1e-10 in float64, 1e-5 in float32) the entry is
    recomputed elementwise; ``jax.lax.cond`` runs that pass only when some entry needs it. Rows at
    moderate distances, as in NUTS, take the matrix form; prediction with tiny variances stays
    exact (to the elementwise form's own rounding).

    The center is held fixed under differentiation (the density does not depend on it), so the
    gradients are those of the exact form.

    Args:
        loc: means (..., K, D).
        variances: variances, broadcastable to ``loc``.
    """

    arg_constraints = {
        "loc": constraints.real_vector,
        "variances": constraints.independent(constraints.positive, 1),
    }
    support = constraints.real_vector
    reparametrized_params = ["loc", "variances"]
    pytree_data_fields = ("loc", "variances")

    def __init__(self, loc, variances, *, validate_args=None):
        self.loc = loc
        self.variances = variances
        shape = jnp.broadcast_shapes(jnp.shape(loc), jnp.shape(variances))
        super().__init__(
            batch_shape=shape[:-1], event_shape=shape[-1:], validate_args=validate_args
        )

    @property
    def mean(self):
        return jnp.broadcast_to(self.loc, self.batch_shape + self.event_shape)

    @property
    def variance(self):
        return jnp.broadcast_to(self.variances, self.batch_shape + self.event_shape)

    def _log_normalizer(self):
        return -0.5 * jnp.sum(jnp.log(2.0 * jnp.pi * self.variance), axis=-1)

    def expanded_quadratic(self, rows):
        """The expanded quadratic of ``rows`` (..., D) against every class, and where it is unsafe.

        Returns:
            ``(quadratic, inexact)``, both (..., K): ``A - 2 B + C``, and True where half its
            rounding-error bound ``(3 D + 8) eps (A + C)`` exceeds the dtype's absolute tolerance
            (those entries :meth:`log_prob` computes elementwise).
        """
        num_features = self.event_shape[0]
        loc = self.mean.reshape(-1, num_features)
        center = jax.lax.stop_gradient(jnp.mean(loc, axis=0))
        precision = 1.0 / self.variance.reshape(loc.shape)
        offset = loc - center
        weighted = offset * precision
        constant = jnp.sum(offset * weighted, axis=-1)
        centered = rows - center
        # one (n, 2D) x (2D, 2K) product gives A - 2B and A
        features = jnp.concatenate([centered * centered, centered], axis=-1)
        coefficients = jnp.concatenate(
            [
                jnp.concatenate([precision, precision], axis=0),
                jnp.concatenate([-2.0 * weighted, jnp.zeros_like(weighted)], axis=0),
            ],
            axis=-1,
        )
        both = features @ coefficients.T
        num_classes = loc.shape[0]
        squares = both[..., num_classes:]
        eps = jnp.finfo(both.dtype).eps
        bound = (3 * num_features + 8) * eps * (squares + constant)
        inexact = 0.5 * bound > TOLERANCES[both.dtype.name]["atol"]
        return both[..., :num_classes] + constant, inexact

    def log_prob(self, value):
        one_row = jnp.ndim(value) == 1 or jnp.shape(value)[-2] == 1
        if not one_row or len(self.batch_shape) != 1:
            return self._log_normalizer() - 0.5 * _elementwise_quadratic(
                value, self.loc, self.variances
            )
        rows = value if jnp.ndim(value) == 1 else value[..., 0, :]
        fast, inexact = self.expanded_quadratic(rows)

        # Rematerialized, the elementwise pass leaves only (loc, variances) as residuals: the
        # branch not taken fills the other's residuals with zeros, which would cost (n, K, D).
        def exact_where_needed():
            exact = jax.checkpoint(_elementwise_quadratic)(
                rows[..., None, :], self.loc, self.variances
            )
            return jnp.where(inexact, exact, fast)

        quadratic = jax.lax.cond(jnp.any(inexact), exact_where_needed, lambda: fast)
        return self._log_normalizer() - 0.5 * quadratic

    def sample(self, key, sample_shape=()):
        shape = tuple(sample_shape) + self.batch_shape + self.event_shape
        noise = jax.random.normal(key, shape, dtype=jnp.result_type(self.loc))
        return self.loc + jnp.sqrt(self.variances) * noise


def _elementwise_quadratic(value, loc, variances):
    """``sum_j (x_j - mu_j)^2 / s_j`` term by term (scikit-learn's Gaussian NB arithmetic)."""
    return jnp.sum((value - loc) ** 2 / variances, axis=-1)


def _full_gaussian(means, covariance, rank_tol) -> WhitenedNormal:
    """Emission of full covariances: Cholesky whitening, or the retained-subspace Gaussian."""
    num_features = covariance.shape[-1]
    identity = jnp.eye(num_features, dtype=covariance.dtype)
    if rank_tol is None:
        chol = jnp.linalg.cholesky(covariance)
        inverse_chol = solve_triangular(chol, jnp.broadcast_to(identity, chol.shape), lower=True)
        whitening = jnp.swapaxes(inverse_chol, -1, -2)
        log_normalizer = -jnp.sum(jnp.log(jnp.diagonal(chol, axis1=-2, axis2=-1)), axis=-1)
        rank = jnp.full(log_normalizer.shape, float(num_features), covariance.dtype)
        return WhitenedNormal(means, whitening, chol, log_normalizer, rank)
    variances = jnp.diagonal(covariance, axis1=-2, axis2=-1)
    scale = jnp.where(variances > 0, jnp.sqrt(jnp.where(variances > 0, variances, 1.0)), 1.0)
    correlation = covariance / (scale[..., :, None] * scale[..., None, :])
    eigenvalues, eigenvectors = jnp.linalg.eigh(jax.lax.stop_gradient(correlation))
    keep = eigenvalues > rank_tol**2
    basis = jax.lax.stop_gradient(eigenvectors / scale[..., :, None] * keep[..., None, :])
    dropped = jnp.where(keep, 0.0, 1.0).astype(covariance.dtype)
    dropped = dropped[..., :, None] * identity
    basis_t = jnp.swapaxes(basis, -1, -2)
    inner = basis_t @ covariance @ basis
    chol = jnp.linalg.cholesky(0.5 * (inner + jnp.swapaxes(inner, -1, -2)) + dropped)
    gram_chol = jnp.linalg.cholesky(basis_t @ basis + dropped)
    inverse_chol = solve_triangular(chol, jnp.broadcast_to(identity, chol.shape), lower=True)
    whitening = basis @ jnp.swapaxes(inverse_chol, -1, -2)
    log_normalizer = jnp.sum(
        jnp.log(jnp.diagonal(gram_chol, axis1=-2, axis2=-1))
        - jnp.log(jnp.diagonal(chol, axis1=-2, axis2=-1)),
        axis=-1,
    )
    rank = jnp.sum(keep, axis=-1).astype(covariance.dtype)
    return WhitenedNormal(means, whitening, covariance @ whitening, log_normalizer, rank)


def _chunked_sum(fn, X, R, chunk: int = _CHUNK):
    """``sum over row blocks of fn(X_block, R_block)`` (a pytree), one cache-friendly pass.

    Working on blocks keeps the centered copies and products of each block in cache instead of
    materializing (n, D) temporaries. Blocks are read in place with ``dynamic_slice`` inside a
    ``fori_loop``: reshaping the rows into a scanned (blocks, chunk, D) array first makes XLA
    copy the data and measured about 2x slower on CPU.
    """
    num_blocks = X.shape[0] // chunk
    tail = num_blocks * chunk
    # no remainder: start from the first block (an empty block breaks the per-class reshape)
    first = int(tail == X.shape[0] and num_blocks > 0)
    total = fn(X[:chunk], R[:chunk]) if first else fn(X[tail:], R[tail:])
    if num_blocks <= first:
        return total

    def body(index, acc):
        start = index * chunk
        block = (
            jax.lax.dynamic_slice_in_dim(X, start, chunk),
            jax.lax.dynamic_slice_in_dim(R, start, chunk),
        )
        return jax.tree_util.tree_map(jnp.add, acc, fn(*block))

    return jax.lax.fori_loop(first, num_blocks, body, total)


def _standardizing_scale(variances, counts, means):
    """Feature sds with near-constant features set to 1, as scikit-learn's ``StandardScaler``.

    A feature is constant when its variance is within the rounding bound of a two-pass variance,
    ``var <= n eps var + (n |mean| eps)^2`` (Chan, Golub & LeVeque), with float64 ``eps``.
    """
    counts = counts[..., None]
    bound = counts * _EPS64 * variances + (counts * jnp.abs(means) * _EPS64) ** 2
    constant = variances <= bound
    return jnp.where(constant, 1.0, jnp.sqrt(jnp.where(constant, 1.0, variances)))


def ledoit_wolf_shrinkage(covariance, fourth_moment, counts, scale):
    r"""Ledoit–Wolf shrinkage of covariances on the standardized scale (batched over classes).

    With ``C = S / (s s^T)`` the covariance of the standardized data ``z = (x - m) / s`` (n rows),
    ``mu = tr C / D``::

        delta = ||C - mu I||_F^2 / D
        beta  = min(delta, (sum_i ||z_i||^4 / n - ||C||_F^2) / (D n))
        alpha = beta / delta                      (0 when beta = 0, or D = 1)

    and the shrunk covariance is ``s [(1 - alpha) C + alpha mu I] s^T``.

    Args:
        covariance: MLE covariances S (..., D, D).
        fourth_moment: ``sum_i R_i ||z_i||^4`` (...,).
        counts: total weights n (...,).
        scale: feature scales s (..., D).

    Returns:
        (shrunk covariance (..., D, D), alpha (...,)).
    """
    num_features = covariance.shape[-1]
    correlation = covariance / (scale[..., :, None] * scale[..., None, :])
    trace = jnp.trace(correlation, axis1=-2, axis2=-1)
    mu = trace / num_features
    frobenius = jnp.sum(correlation**2, axis=(-2, -1))
    beta = (fourth_moment / counts - frobenius) / (num_features * counts)
    delta = (frobenius - 2.0 * mu * trace + num_features * mu**2) / num_features
    beta = jnp.minimum(beta, delta)
    alpha = jnp.where(beta == 0, 0.0, beta / jnp.where(delta == 0, 1.0, delta))
    if num_features == 1:
        alpha = jnp.zeros_like(alpha)
    identity = jnp.eye(num_features, dtype=covariance.dtype)
    shrunk = (1.0 - alpha)[..., None, None] * correlation + (alpha * mu)[..., None, None] * identity
    return shrunk * scale[..., :, None] * scale[..., None, :], alpha


class GaussianStory(Story):
    """Gaussian class-conditional features.

    Args:
        covariance: ``"full"`` or ``"diag"``.
        shared: one covariance for all classes (True) or one per class (False).
        estimator: ``"mle"`` (divide by N) or ``"unbiased"`` (N - K pooled, N_k - 1 per class).
        reg_param: QDA-style regularization ``(1 - r) Sigma + r I``, in [0, 1].
        shrinkage: LDA-style shrinkage towards a scaled identity, a float in [0, 1], or
            ``"auto"`` (Ledoit–Wolf per class on standardized features).
        var_smoothing: Gaussian-NB-style variance floor, as a fraction of the largest variance.
        mean_prior_scale: sd of the Normal prior on the means (used by NUTS / MAP only).
        covariance_prior_scale: scale of the inverse-Wishart prior on covariances.
        rank_tol: None (full-rank covariances, Cholesky) or tau >= 0: a shared full covariance is
            used on the subspace of correlation eigenvalues > tau^2 (see the module docstring).
        covariance_weights: None, or weights w_k (K,) of the per-class MLE covariances in the
            shared covariance ``sum_k w_k S_k / sum_k w_k`` (scikit-learn's lsqr/eigen solvers
            weight by the class priors); None is the pooled MLE (weights N_k).

    Parameters (``params`` keys): ``means`` (K, D) and ``covariance`` ((D, D) shared or
    (K, D, D)) for ``"full"``; ``means`` and ``variances`` ((D,) shared or (K, D)) for ``"diag"``.
    """

    name = "gaussian"

    def __init__(
        self,
        covariance: str = "full",
        shared: bool = True,
        estimator: str = "mle",
        reg_param: float = 0.0,
        shrinkage=0.0,
        var_smoothing: float = 0.0,
        mean_prior_scale: float = 10.0,
        covariance_prior_scale: float = 1.0,
        rank_tol=None,
        covariance_weights=None,
    ):
        if covariance not in ("full", "diag"):
            raise ValueError(f"covariance must be 'full' or 'diag', got {covariance!r}.")
        if estimator not in ("mle", "unbiased"):
            raise ValueError(f"estimator must be 'mle' or 'unbiased', got {estimator!r}.")
        if shrinkage is None:
            shrinkage = 0.0
        if isinstance(shrinkage, str):
            if shrinkage != "auto":
                raise ValueError(
                    f"shrinkage must be a float in [0, 1] or 'auto', got {shrinkage!r}."
                )
        elif not 0.0 <= float(shrinkage) <= 1.0:
            raise ValueError(f"shrinkage must lie in [0, 1], got {shrinkage!r}.")
        if not 0.0 <= float(reg_param) <= 1.0:
            raise ValueError(f"reg_param must lie in [0, 1], got {reg_param!r}.")
        if float(var_smoothing) < 0:
            raise ValueError(f"var_smoothing must be >= 0, got {var_smoothing!r}.")
        if covariance == "diag" and (shrinkage == "auto" or float(shrinkage) or reg_param):
            raise ValueError(
                "shrinkage and reg_param act on full covariances; with covariance='diag' use "
                "var_smoothing."
            )
        if rank_tol is not None:
            if covariance != "full" or not shared:
                raise ValueError(
                    "rank_tol applies to a shared full covariance (LDA) only: per-class "
                    "subspaces would make class densities incomparable."
                )
            if float(rank_tol) < 0:
                raise ValueError(f"rank_tol must be >= 0, got {rank_tol!r}.")
            rank_tol = float(rank_tol)
        if covariance_weights is not None:
            if covariance != "full" or not shared:
                raise ValueError("covariance_weights applies to a shared full covariance only.")
            if estimator != "mle":
                raise ValueError("covariance_weights requires estimator='mle'.")
            covariance_weights = tuple(float(w) for w in np.ravel(covariance_weights))
            if any(w < 0 for w in covariance_weights) or sum(covariance_weights) <= 0:
                raise ValueError(
                    f"covariance_weights must be non-negative with a positive sum, got "
                    f"{covariance_weights}."
                )
        self.covariance = covariance
        self.shared = bool(shared)
        self.estimator = estimator
        self.reg_param = float(reg_param)
        self.shrinkage = shrinkage if isinstance(shrinkage, str) else float(shrinkage)
        self.var_smoothing = float(var_smoothing)
        self.mean_prior_scale = float(mean_prior_scale)
        self.covariance_prior_scale = float(covariance_prior_scale)
        self.rank_tol = rank_tol
        self.covariance_weights = covariance_weights

    @property
    def spread_name(self) -> str:
        """Name of the spread parameter: ``"covariance"`` (full) or ``"variances"`` (diag)."""
        return "covariance" if self.covariance == "full" else "variances"

    @property
    def _auto_shrinkage(self) -> bool:
        return self.shrinkage == "auto"

    @property
    def groups_rows_by_class(self) -> bool:
        """Per-class scatter costs one product per block of one class, K per mixed block."""
        return self._needs_class_scatter

    @property
    def _needs_class_scatter(self) -> bool:
        """Per-class full scatter matrices are needed (QDA, or LDA with auto / weights)."""
        return self.covariance == "full" and (
            not self.shared or self._auto_shrinkage or self.covariance_weights is not None
        )

    # -- the generative story --------------------------------------------------------------------
    def prior(self, num_classes, num_features):
        means = numpyro.sample(
            "means",
            dist.Normal(0.0, self.mean_prior_scale).expand([num_classes, num_features]).to_event(2),
        )
        copies = [] if self.shared else [num_classes]
        if self.covariance == "full":
            identity = jnp.eye(num_features) * self.covariance_prior_scale**2
            spread = numpyro.sample(
                "covariance",
                dist.InverseWishart(num_features + 2.0, identity)
                .expand(copies)
                .to_event(len(copies)),
            )
        else:
            spread = numpyro.sample(
                "variances",
                dist.InverseGamma(2.0, self.covariance_prior_scale**2)
                .expand(copies + [num_features])
                .to_event(len(copies) + 1),
            )
        return {"means": means, self.spread_name: spread}

    def emission(self, params):
        means = params["means"]
        if self.covariance == "diag":
            return DiagonalNormal(means, jnp.broadcast_to(params["variances"], means.shape))
        return _full_gaussian(means, params["covariance"], self.rank_tol)

    # -- closed form -----------------------------------------------------------------------------
    def sufficient_statistics(self, X, R):
        """Counts, first and second moments of ``(X, R)`` in one blocked pass.

        Moments are taken about a reference point (the data mean, ``shift``) so that "second
        moment minus squared mean" keeps its precision when |mean| >> sd. A shared full
        covariance costs one weighted ``X^T X``; per-class full scatter costs K of them (they
        are genuinely K different matrices when R is soft). ``shrinkage="auto"`` adds a second
        pass for the Ledoit–Wolf fourth moments ``sum_i R_ik ||z_ik||^4``, whose standardization
        needs the class means and sds: those statistics are therefore not additive over chunks.
        """
        num_features = X.shape[1]
        shift = X.mean(axis=0)
        stats = {"counts": R.sum(axis=0), "shift": shift}
        if self.covariance == "diag":

            def moments(x, r):
                xs = x - shift
                return r.T @ xs, r.T @ (xs * xs)

            stats["sums"], class_squares = _chunked_sum(moments, X, R)
            stats["squares"] = class_squares.sum(axis=0) if self.shared else class_squares
        elif self._needs_class_scatter:

            def moments(x, r):
                augmented = jnp.concatenate([x - shift, jnp.ones_like(x[:, :1])], axis=1)
                present = jnp.any(r != 0, axis=0)

                def one_class():
                    # the whole block belongs to one class (hard labels grouped by class): one
                    # weighted product, placed at that class, instead of K
                    weighted = augmented * r.sum(axis=1, keepdims=True)
                    scatter = weighted.T @ augmented[:, :num_features]
                    return present[:, None, None].astype(scatter.dtype) * scatter[None]

                def every_class():
                    weighted = (r[:, :, None] * augmented[:, None, :]).reshape(x.shape[0], -1)
                    return (weighted.T @ augmented[:, :num_features]).reshape(
                        r.shape[1], num_features + 1, num_features
                    )

                return jax.lax.cond(jnp.sum(present) <= 1, one_class, every_class)

            both = _chunked_sum(moments, X, R)
            stats["sums"] = both[:, num_features, :]
            class_squares = both[:, :num_features, :]
            if self.shared:
                stats["squares"] = class_squares.sum(axis=0)
                stats["class_squares"] = class_squares
            else:
                stats["squares"] = class_squares
        else:

            def moments(x, r):
                # [x sqrt(w), r / sqrt(w)]^T (x sqrt(w)) holds sum_i w_i x x^T and R^T x in one
                # product, w = row weight
                root = jnp.sqrt(r.sum(axis=1))[:, None]
                xw = (x - shift) * root
                left = jnp.concatenate([xw, r / jnp.where(root > 0, root, 1.0)], axis=1)
                return left.T @ xw

            both = _chunked_sum(moments, X, R)
            stats["squares"] = both[:num_features]
            stats["sums"] = both[num_features:]
        if self._auto_shrinkage:
            stats["fourth_moments"] = self._fourth_moments(X, R, stats)
        return stats

    def combine_statistics(self, stats_a, stats_b):
        r"""Statistics of two data chunks, moved to a common reference point and added.

        Each chunk's moments are taken about its own ``shift``, so a plain sum is wrong. Moving
        moments from reference ``a`` to ``c`` (``d = a - c``; per class k, or summed over classes
        for a shared spread)::

            sums_k    -> sums_k + N_k d
            squares_k -> squares_k + sums_k d^T + d sums_k^T + N_k d d^T
                         (diagonal: squares_k + 2 sums_k d + N_k d^2)

        with ``c`` the weight-averaged shift of the two chunks (near the data, which keeps
        "second moment minus squared mean" accurate).

        Raises:
            ValueError: with ``shrinkage="auto"``: the Ledoit–Wolf fourth moments are taken about
                each chunk's own class means and scales and do not combine.
        """
        if self._auto_shrinkage:
            raise ValueError(
                "shrinkage='auto' (Ledoit–Wolf) statistics are not additive over data chunks: "
                "the fourth moments depend on each chunk's class means and scales. Fit on all "
                "the data at once, or use a fixed shrinkage in [0, 1]."
            )
        total_a, total_b = stats_a["counts"].sum(), stats_b["counts"].sum()
        total = total_a + total_b
        fraction = jnp.where(total > 0, total_b / jnp.where(total > 0, total, 1.0), 0.5)
        shift = stats_a["shift"] + fraction * (stats_b["shift"] - stats_a["shift"])
        moved_a, moved_b = self._recenter(stats_a, shift), self._recenter(stats_b, shift)
        combined = jax.tree_util.tree_map(jnp.add, moved_a, moved_b)
        combined["shift"] = shift
        return combined

    def _recenter(self, stats, shift):
        """The statistics' moments about ``shift`` instead of ``stats["shift"]``."""
        offset = stats["shift"] - shift
        counts, sums = stats["counts"], stats["sums"]
        full = self.covariance == "full"

        def move(squares, group_sums, group_counts):
            if full:
                cross = group_sums[..., :, None] * offset[None, :]
                cross = cross + jnp.swapaxes(cross, -1, -2)
                outer = offset[:, None] * offset[None, :]
                return squares + cross + group_counts[..., None, None] * outer
            return squares + 2.0 * group_sums * offset + group_counts[..., None] * offset**2

        moved = dict(stats)
        moved["sums"] = sums + counts[:, None] * offset
        if self.shared:
            moved["squares"] = move(stats["squares"], sums.sum(axis=0), counts.sum())
        else:
            moved["squares"] = move(stats["squares"], sums, counts)
        if "class_squares" in stats:
            moved["class_squares"] = move(stats["class_squares"], sums, counts)
        return moved

    def _class_scatter(self, stats):
        """Per-class MLE covariances S_k (K, D, D) and centered means from the statistics."""
        counts, sums = stats["counts"], stats["sums"]
        centered_means = sums / counts[:, None]
        squares = stats["class_squares"] if self.shared else stats["squares"]
        between = sums[:, :, None] * centered_means[:, None, :]
        scatter = _snap_constant_features(_symmetrize(squares - between), squares)
        return scatter / counts[:, None, None], centered_means

    def _fourth_moments(self, X, R, stats):
        """``sum_i R_ik ||(x_i - m_k) / s_k||^4`` per class (the Ledoit–Wolf beta statistic)."""
        covariances, centered_means = self._class_scatter(stats)
        variances = jnp.diagonal(covariances, axis1=-2, axis2=-1)
        scale = _standardizing_scale(variances, stats["counts"], centered_means + stats["shift"])
        shift = stats["shift"]

        def moments(x, r):
            z = ((x - shift)[:, None, :] - centered_means[None]) / scale[None]
            norms = jnp.sum(z * z, axis=-1)
            return jnp.sum(r * norms * norms, axis=0)

        return _chunked_sum(moments, X, R)

    def _spread_terms(self, stats):
        """Jitted :meth:`_spread_terms_impl` (compiled once per story configuration and shape)."""
        return _jitted_spread_terms(self, stats)

    def _spread_terms_impl(self, stats):
        """The closed form and what the likelihood sees, per covariance group.

        Returns a dict with ``means``; ``spread`` (the closed-form covariance or variances);
        ``mle`` (the MLE spread S the likelihood depends on); ``group_counts`` (N shared, N_k
        per class); ``dof`` (the effective sample size nu of the penalized objective, see
        :meth:`log_penalty`).
        """
        counts, sums = stats["counts"], stats["sums"]
        num_classes, num_features = sums.shape
        centered_means = sums / counts[:, None]
        means = centered_means + stats["shift"]
        full = self.covariance == "full"
        between = sums[:, :, None] * centered_means[:, None, :] if full else sums * centered_means
        total = counts.sum()
        if self.shared:
            scatter = stats["squares"] - between.sum(axis=0)
            group_counts = total
            denominator = total - num_classes if self.estimator == "unbiased" else total
        else:
            scatter = stats["squares"] - between
            group_counts = counts
            denominator = counts - 1.0 if self.estimator == "unbiased" else counts
        if full:
            scatter = _symmetrize(scatter)
        scatter = _snap_constant_features(scatter, stats["squares"], full)
        mle = scatter / _per_group(group_counts, scatter)
        spread = scatter / _per_group(denominator, scatter)
        kept = jnp.ones_like(jnp.asarray(group_counts, dtype=scatter.dtype))
        if full:
            identity = jnp.eye(num_features, dtype=scatter.dtype)
            if self._needs_class_scatter and self.shared:
                class_cov, _ = self._class_scatter(stats)
                alphas = jnp.zeros_like(counts)
                if self._auto_shrinkage:
                    class_cov, alphas = self._ledoit_wolf(class_cov, stats)
                if self.covariance_weights is not None:
                    weights = jnp.asarray(self.covariance_weights, dtype=counts.dtype)
                    if weights.shape != counts.shape:
                        raise ValueError(
                            f"covariance_weights has {weights.shape[0]} entries for "
                            f"{counts.shape[0]} classes."
                        )
                    weights = weights / weights.sum()
                else:
                    weights = counts / denominator
                spread = jnp.einsum("k,kde->de", weights, class_cov)
                if self.covariance_weights is None:
                    weights = weights * denominator / total
                kept = kept * (1.0 - jnp.sum(weights * alphas))
            elif self._auto_shrinkage:
                shrunk, alphas = self._ledoit_wolf(mle, stats)
                spread = shrunk * (group_counts / denominator)[:, None, None]
                kept = kept * (1.0 - alphas)
            if self.shrinkage and not self._auto_shrinkage:
                # linear in the covariance: shrinking the weighted sum of class covariances is
                # the weighted sum of the shrunk ones (scikit-learn shrinks per class)
                mean_variance = jnp.trace(spread, axis1=-2, axis2=-1) / num_features
                spread = (1.0 - self.shrinkage) * spread + self.shrinkage * (
                    mean_variance[..., None, None] * identity
                )
                kept = kept * (1.0 - self.shrinkage)
            if self.reg_param:
                spread = (1.0 - self.reg_param) * spread + self.reg_param * identity
                kept = kept * (1.0 - self.reg_param)
        elif self.var_smoothing:
            spread = spread + self.smoothing_variance(stats)
        return {
            "means": means,
            "spread": spread,
            "mle": mle,
            "group_counts": group_counts,
            "dof": denominator / kept,
        }

    def _ledoit_wolf(self, class_covariances, stats):
        """Ledoit–Wolf shrunk per-class covariances and their coefficients alpha_k."""
        counts = stats["counts"]
        means = stats["sums"] / counts[:, None] + stats["shift"]
        variances = jnp.diagonal(class_covariances, axis1=-2, axis2=-1)
        scale = _standardizing_scale(variances, counts, means)
        return ledoit_wolf_shrinkage(class_covariances, stats["fourth_moments"], counts, scale)

    def smoothing_variance(self, stats):
        """``var_smoothing * max_j Var(x_j)``: the variance added by Gaussian-NB smoothing."""
        return _jitted_smoothing_variance(self, stats)

    def _smoothing_variance_impl(self, stats):
        counts, sums = stats["counts"], stats["sums"]
        total = counts.sum()
        squares = stats["squares"]
        if self.covariance == "full":
            squares = jnp.diagonal(squares, axis1=-2, axis2=-1)
        if squares.ndim == 2:
            squares = squares.sum(axis=0)
        centered_mean = sums.sum(axis=0) / total
        return self.var_smoothing * jnp.max(squares / total - centered_mean**2)

    def maximize(self, stats):
        terms = self._spread_terms(stats)
        return {"means": terms["means"], self.spread_name: terms["spread"]}

    def log_penalty(self, params, stats):
        r"""Log density (up to a constant) of the prior whose MAP is the regularized closed form.

        Every estimator here has the form ``Sigma_hat = (n S + Psi) / nu``: ``S`` the MLE spread
        of a covariance group (n = N shared, N_k per class), ``nu`` an effective sample size and
        ``Psi`` a pseudo-scatter. Since the Gaussian log-likelihood depends on the group's
        covariance only through ``-n/2 [log det Sigma + tr(Sigma^-1 S)]``, the penalty

            log_penalty = sum_groups  -(nu - n)/2 log det Sigma - 1/2 tr(Sigma^-1 Psi)

        (an inverse-Wishart kernel with ``nu - n`` extra degrees of freedom and scale ``Psi``)
        makes ``loglik + log_penalty`` maximal exactly at ``Sigma_hat`` (with the means at the
        class means, which no penalty touches). Per regularizer, with ``c`` the weight moved off
        the data (``1 - c = (1 - r)(1 - a)``):

        * ``reg_param`` r, ``shrinkage`` a: ``nu = n / (1 - c)``, ``Psi = n c / (1 - c) T`` with T
          the target ``[(1 - r) a (tr S / D) I + r I] / c``; e.g. reg_param alone is
          ``-(n r / (2 (1 - r))) [log det Sigma + tr Sigma^-1]``;
        * ``shrinkage="auto"``: the same with the Ledoit–Wolf ``alpha_k`` and target
          ``mu_k diag(s_k^2)``; for a shared covariance ``c = sum_k w_k alpha_k``;
        * ``var_smoothing`` e (per variance): ``nu = n`` and ``psi = n e max Var``, i.e.
          ``-sum_kj N_k e max Var / (2 sigma^2_kj)``;
        * ``estimator="unbiased"``: ``nu = N - K`` (pooled) or ``N_k - 1``, ``Psi = 0``: the
          improper prior ``det(Sigma)^{K/2}`` (resp. ``det(Sigma_k)^{1/2}``);
        * ``covariance_weights``: ``nu = N``, ``Psi = N (sum_k w_k S_k - S)``.

        The prior is data-dependent (through n, the trace of S and the Ledoit–Wolf coefficients,
        all taken from ``stats``), as every empirical-Bayes reading of a smoothed estimator is.
        Log determinants and inverses are those of the emission, so a rank-deficient shared
        covariance is penalized on its retained subspace.

        Raises:
            ValueError: when ``reg_param = 1`` or ``shrinkage = 1``: the estimate no longer
                depends on the data and the matching prior is a point mass.
        """
        regularized = (
            self.reg_param
            or self.shrinkage
            or self.var_smoothing
            or self.estimator == "unbiased"
            or self.covariance_weights is not None
        )
        if not regularized:
            return 0.0
        if self.reg_param == 1.0 or (not self._auto_shrinkage and self.shrinkage == 1.0):
            raise ValueError(
                "reg_param = 1 or shrinkage = 1 fixes the covariance whatever the data: the "
                "equivalent prior is a point mass with no finite log density."
            )
        terms = self._spread_terms(stats)
        counts, dof = terms["group_counts"], terms["dof"]
        extra = dof - counts
        if self.covariance == "diag":
            if self.shared:
                pseudo = dof * terms["spread"] - counts * terms["mle"]
                variances, extra_b = params["variances"], extra
            else:
                pseudo = dof[:, None] * terms["spread"] - counts[:, None] * terms["mle"]
                variances, extra_b = params["variances"], extra[:, None]
            return jnp.sum(-0.5 * extra_b * jnp.log(variances) - 0.5 * pseudo / variances)
        shape = (1, 1) if self.shared else (-1, 1, 1)
        pseudo = (
            jnp.reshape(dof, shape) * terms["spread"] - jnp.reshape(counts, shape) * (terms["mle"])
        )
        emission = _full_gaussian(params["means"], params["covariance"], self.rank_tol)
        whitening = emission.whitening
        # tr(Sigma^-1 Psi) = tr(W^T Psi W); -1/2 log det Sigma = log_normalizer
        trace = jnp.trace(jnp.swapaxes(whitening, -1, -2) @ pseudo @ whitening, axis1=-2, axis2=-1)
        return jnp.sum(extra * emission.log_normalizer - 0.5 * trace)

    def num_parameters(self, num_classes, num_features):
        per_covariance = (
            num_features * (num_features + 1) // 2 if self.covariance == "full" else num_features
        )
        copies = 1 if self.shared else num_classes
        return (num_classes - 1) + num_classes * num_features + copies * per_covariance

    def check_parameters(self, params, class_names=None, feature_names=None):
        """A zero variance, or a covariance without a Cholesky factor, is an error naming where.

        Constant features (zero variance within a class), a class with a single row, or more
        features than rows make the unregularized MLE degenerate; the message names the class and
        feature and the regularizer to raise (``var_smoothing``, ``reg_param`` or ``shrinkage``).
        """
        super().check_parameters(params, class_names, feature_names)
        num_features = np.shape(params["means"])[-1]
        classes = list(class_names) if class_names is not None else None
        features = list(feature_names) if feature_names is not None else None

        def where(k=None, j=None):
            parts = []
            if j is not None:
                parts.append(f"feature '{features[j]}'" if features else f"feature {j}")
            if k is not None:
                parts.append(f"in class {classes[k] if classes else k}")
            return " ".join(parts)

        if self.covariance == "diag":
            variances = np.broadcast_to(np.asarray(params["variances"]), np.shape(params["means"]))
            bad = np.argwhere(~(variances > 0))
            if bad.size:
                k, j = bad[0]
                scope = "(shared by all classes)" if self.shared else where(k=k)
                raise ValueError(
                    f"{where(j=j)} has zero variance {scope} with var_smoothing="
                    f"{self.var_smoothing:g}: its Gaussian is degenerate. Set var_smoothing > 0 "
                    f"(e.g. the default 1e-9 adds that fraction of the largest feature variance), "
                    f"or drop constant features."
                )
            return
        if self.rank_tol is not None:
            return  # singular covariances are scored on their retained subspace
        covariance = np.asarray(params["covariance"]).reshape(-1, num_features, num_features)
        for k, matrix in enumerate(covariance):
            try:
                np.linalg.cholesky(matrix)
            except np.linalg.LinAlgError:
                scope = "shared covariance" if self.shared else f"covariance {where(k=k)}"
                knob = "shrinkage" if self.shared else "reg_param"
                raise ValueError(
                    f"the {scope} is singular ({num_features} features): its Gaussian is "
                    f"degenerate. Set {knob} > 0 (e.g. 0.1) to regularize it."
                ) from None

    def scoring_story(self) -> GaussianStory:
        """The same emission without the fitting options (regularization, estimator, weights).

        Scoring depends only on ``covariance``, ``shared`` and ``rank_tol``; scoring through this
        canonical story lets every regularization setting share one compiled scoring function.
        """
        return GaussianStory(covariance=self.covariance, shared=self.shared, rank_tol=self.rank_tol)

    # -- decision boundaries ---------------------------------------------------------------------
    def emission_summary(self, params) -> dict:
        r"""Quadratic-form view of the emission, jitted (one compile per configuration/shape).

        ``log p(x | k) = -1/2 x^T P_k x + x^T P_k m_k - 1/2 m_k^T P_k m_k + c_k`` with ``P_k``
        the precision (the subspace pseudo-inverse for a rank-deficient shared covariance) and
        ``c_k`` the log normalizer, ``-1/2 log det(2 pi Sigma_k)`` at full rank.

        Returns:
            dict with ``precision`` (K, D, D), ``linear`` = ``P_k m_k`` (K, D), ``normalizer``
            (K,), ``intercept`` = ``-1/2 m_k^T P_k m_k + log pi_k`` (K,) and, for a shared spread,
            ``whitening`` (D, D) with ``W^T Sigma W = I`` on the retained subspace.
        """
        return _jitted_emission_summary(self.scoring_story(), params)

    def _emission_summary_impl(self, params):
        means = params["means"]
        whitening = None
        if self.covariance == "diag":
            variances = jnp.broadcast_to(params["variances"], means.shape)
            precision = jax.vmap(jnp.diag)(1.0 / variances)
            normalizer = -0.5 * jnp.sum(jnp.log(2.0 * jnp.pi * variances), axis=-1)
            if self.shared:
                whitening = jnp.diag(1.0 / jnp.sqrt(params["variances"]))
        else:
            emission = _full_gaussian(means, params["covariance"], self.rank_tol)
            precision = jnp.broadcast_to(
                emission.precision_matrix, means.shape[:1] + 2 * means.shape[1:]
            )
            normalizer = jnp.broadcast_to(
                emission.log_normalizer - 0.5 * emission.rank * _LOG_2PI, means.shape[:1]
            )
            if self.shared:
                whitening = emission.whitening
        linear = jnp.einsum("kde,ke->kd", precision, means)
        intercept = -0.5 * jnp.sum(linear * means, axis=-1)
        if "class_prior" in params:
            intercept = intercept + jnp.log(params["class_prior"])
        return {
            "precision": precision,
            "linear": linear,
            "normalizer": normalizer,
            "intercept": intercept,
            "whitening": whitening,
        }

    def linear_discriminants(self, params):
        r"""Per-class linear scores ``(coef (K, D), intercept (K,))`` of a shared covariance.

        ``log pi_k + log p(x | k) = x . coef_k + intercept_k + g(x)`` with ``g`` the same for
        every class: ``coef_k = P m_k``, ``intercept_k = -1/2 m_k^T P m_k + log pi_k``.

        Raises:
            ValueError: when covariances are per class (the log-odds are then quadratic).
        """
        if not self.shared:
            raise ValueError(
                "per-class covariances give quadratic log-odds (QDA, Gaussian NB): there is no "
                "linear boundary; use genprob.boundaries.quadratic_boundary."
            )
        summary = self.emission_summary(params)
        return summary["linear"], summary["intercept"]

    def linear_boundary(self, params, k: int, l: int):  # noqa: E741
        r"""``(w, b)`` with ``w . x + b = log p(y=k | x) - log p(y=l | x)`` (shared covariance).

        ``w = P (m_k - m_l)``, ``b = -1/2 (m_k^T P m_k - m_l^T P m_l) + log(pi_k / pi_l)``.
        """
        coef, intercept = self.linear_discriminants(params)
        return coef[k] - coef[l], intercept[k] - intercept[l]

    def quadratic_boundary(self, params, k: int, l: int):  # noqa: E741
        r"""``(Q, L, C)`` with ``x^T Q x + L . x + C = log p(y=k | x) - log p(y=l | x)``.

        ``Q = -1/2 (P_k - P_l)``, ``L = P_k m_k - P_l m_l`` and
        ``C = -1/2 (m_k^T P_k m_k - m_l^T P_l m_l) + c_k - c_l + log(pi_k / pi_l)`` where
        ``c_k - c_l = -1/2 log(|Sigma_k| / |Sigma_l|)`` at full rank.
        """
        summary = self.emission_summary(params)
        precision, linear = summary["precision"], summary["linear"]
        offset = summary["intercept"] + summary["normalizer"]
        return -0.5 * (precision[k] - precision[l]), linear[k] - linear[l], offset[k] - offset[l]

    def shared_whitening(self, params):
        """``W`` (D, D) with ``W^T Sigma W = I`` on the retained subspace (shared spread only)."""
        if not self.shared:
            raise ValueError("a whitening common to all classes needs a shared covariance.")
        return self.emission_summary(params)["whitening"]


@partial(jax.jit, static_argnums=0)
def _jitted_spread_terms(story, stats):
    return story._spread_terms_impl(stats)


@partial(jax.jit, static_argnums=0)
def _jitted_smoothing_variance(story, stats):
    return story._smoothing_variance_impl(stats)


@partial(jax.jit, static_argnums=0)
def _jitted_emission_summary(story, params):
    return story._emission_summary_impl(params)


def _per_group(values, like):
    """Broadcast per-group scalars (a scalar, or (K,) per class) against ``like``."""
    values = jnp.asarray(values)
    if values.ndim == 0:
        return values
    return values.reshape(values.shape + (1,) * (like.ndim - values.ndim))


def _symmetrize(matrix):
    return 0.5 * (matrix + jnp.swapaxes(matrix, -1, -2))


def _snap_constant_features(scatter, squares, full: bool = True):
    """Zero the scatter of features whose variance is rounding noise of its own computation.

    The scatter is ``squares - between``; a feature that is constant within the group leaves a
    difference of order ``eps * squares`` instead of an exact 0. Left alone it would be whitened
    into a huge weight (LDA), count as a real direction in Ledoit–Wolf, or blow up a tiny
    smoothed variance (Gaussian NB); scikit-learn's two-pass moments give the exact 0.
    """
    eps = jnp.finfo(scatter.dtype).eps
    if full:
        diagonal = jnp.diagonal(scatter, axis1=-2, axis2=-1)
        magnitude = jnp.diagonal(squares, axis1=-2, axis2=-1)
    else:
        diagonal, magnitude = scatter, squares
    live = (diagonal > 64 * eps * magnitude).astype(scatter.dtype)
    if full:
        return scatter * live[..., :, None] * live[..., None, :]
    return scatter * live
