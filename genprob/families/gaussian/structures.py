"""Covariance structures of the Gaussian story, one small strategy class per structure.

A structure knows how its spread is sampled, scored and estimated: full or diagonal
(:class:`FullCovariance`, :class:`DiagonalCovariance`), shared by all classes or one per class
(the :class:`Shared` and :class:`PerClass` mixins). ``GaussianStory`` delegates every
structure-dependent step to ``story.structure`` instead of branching on it.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np

from genprob._arrays import namespace
from genprob._lazy import LazyModule
from genprob.families.gaussian.distributions import (
    full_factors,
    full_gaussian,
    whiten_twice,
)
from genprob.families.gaussian.moments import (
    HOST_BLOCK_BYTES,
    ClassBlocks,
    block_rows,
    centered,
    chunked_sum,
    host_row_blocks,
    host_row_spans,
    per_group,
    snap_constant_features,
    symmetrize,
)

numpyro = LazyModule("numpyro")
dist = LazyModule("numpyro.distributions")
normals = LazyModule("genprob.families.gaussian.normals")


__all__ = [
    "CovarianceStructure",
    "SharedFull",
    "PerClassFull",
    "SharedDiagonal",
    "PerClassDiagonal",
    "structure_of",
]

_LOG_2PI = math.log(2.0 * math.pi)


class CovarianceStructure:
    """How one covariance structure is sampled, scored and estimated."""

    full: bool
    shared: bool
    spread_name: str

    # -- shared or per class -------------------------------------------------------------------
    def group(self, per_class):
        """Per-class sums (K, ...) gathered into this structure's covariance groups."""
        raise NotImplementedError

    def copies(self, num_classes: int) -> list:
        """Batch shape of the spread parameter: ``[]`` shared, ``[K]`` per class."""
        raise NotImplementedError

    def denominator(self, counts, unbiased: bool):
        """Divisor of the scatter: N (or N - K) shared, N_k (or N_k - 1) per class."""
        raise NotImplementedError

    def scope(self, k, where) -> str:
        """Where a degenerate spread sits, for error messages."""
        raise NotImplementedError

    def scores(self, emission, X):
        """The emission's log density of rows ``X`` (n, D) less a term of the row, (n, K)."""
        raise NotImplementedError

    # -- full or diagonal ----------------------------------------------------------------------
    def prior(self, num_classes, num_features, scale):
        raise NotImplementedError

    def emission(self, means, spread, rank_tol, factors=None):
        """The emission; ``factors`` from :meth:`factorize` skip the factorization."""
        raise NotImplementedError

    def factorize(self, spread, rank_tol) -> dict:
        """What scoring needs of the spread beyond the parameters, computed once per fit."""
        raise NotImplementedError

    def precision_times(self, emission, vectors):
        """``P v`` for vectors (K, D) of a shared spread (the precision is never formed)."""
        raise NotImplementedError

    def moments(self, X, R, shift, class_scatter: bool) -> dict:
        """``sums`` (K, D) and the second moments about ``shift`` of one statistics pass; on
        the host also ``counts`` (K,), the column sums of ``R`` taken in the same pass."""
        raise NotImplementedError

    def move(self, squares, sums, counts, offset):
        """Second moments about ``shift - offset`` from those about ``shift``."""
        raise NotImplementedError

    def between(self, sums, centered_means):
        raise NotImplementedError

    def scatter(self, squares, sums, centered_means, counts):
        """Within-group scatter: second moments about the shift less the between-class part
        (symmetric for full covariances)."""
        scatter = squares - self.group(self.between(sums, centered_means))
        return symmetrize(scatter) if self.full else scatter

    def diagonal(self, squares):
        """The variance part of second moments."""
        raise NotImplementedError

    def per_covariance(self, num_features: int) -> int:
        raise NotImplementedError

    def summary(self, means, spread, rank_tol, factors=None):
        """``(precision (K, D, D), normalizer (K,), whitening or None)`` of the emission."""
        raise NotImplementedError


class Shared:
    """One spread for all classes."""

    shared = True

    def group(self, per_class):
        return per_class.sum(axis=0)

    def copies(self, num_classes):
        return []

    def denominator(self, counts, unbiased):
        total = counts.sum()
        return total - counts.shape[0] if unbiased else total

    def scope(self, k, where):
        return "(shared by all classes)" if not self.full else "shared covariance"

    def scores(self, emission, X):
        """Class-dependent part of the log density: linear in ``x`` (the quadratic is shared)."""
        return emission.linear_scores(X)


class PerClass:
    """One spread per class."""

    shared = False

    def group(self, per_class):
        return per_class

    def copies(self, num_classes):
        return [num_classes]

    def denominator(self, counts, unbiased):
        return counts - 1.0 if unbiased else counts

    def scope(self, k, where):
        return where(k=k) if not self.full else f"covariance {where(k=k)}"

    def scores(self, emission, X):
        """Log density less the smallest scaled quadratic of the row (finite for finite ``x``)."""
        return emission.quadratic_scores(X)


class FullCovariance(CovarianceStructure):
    """Full covariance matrices, scored by whitening (the retained subspace with ``rank_tol``)."""

    full = True
    spread_name = "covariance"

    def prior(self, num_classes, num_features, scale):
        copies = self.copies(num_classes)
        identity = jnp.eye(num_features) * scale**2
        return numpyro.sample(
            "covariance",
            dist.InverseWishart(num_features + 2.0, identity).expand(copies).to_event(len(copies)),
        )

    def emission(self, means, spread, rank_tol, factors=None):
        return full_gaussian(means, spread, rank_tol, factors)

    def factorize(self, spread, rank_tol):
        return full_factors(spread, rank_tol)

    def precision_times(self, emission, vectors):
        return whiten_twice(vectors, emission.whitening)

    def moments(self, X, R, shift, class_scatter):
        if isinstance(X, np.ndarray):
            return self._host_moments(X, R, shift, class_scatter)
        num_features = X.shape[1]
        if not class_scatter:

            def weighted(x, r):
                # [x sqrt(w), r / sqrt(w)]^T (x sqrt(w)) holds sum_i w_i x x^T and R^T x in one
                # product, w = row weight
                root = jnp.sqrt(r.sum(axis=1))[:, None]
                xw = (x - shift) * root
                left = jnp.concatenate([xw, r / jnp.where(root > 0, root, 1.0)], axis=1)
                return left.T @ xw

            both = chunked_sum(weighted, X, R)
            return {"squares": both[:num_features], "sums": both[num_features:]}

        def per_class(x, r):
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

        both = chunked_sum(per_class, X, R)
        class_squares = both[:, :num_features, :]
        stats = {"sums": both[:, num_features, :], "squares": self.group(class_squares)}
        if self.shared:
            stats["class_squares"] = class_squares
        return stats

    def _host_moments(self, X, R, shift, class_scatter):
        """:meth:`moments` of NumPy rows, eagerly, block by block in cache: ``Z^T W Z`` and
        ``R^T Z`` of the centered block ``Z`` (``Z^T Z``, a symmetric product, where every row
        of the block weighs 1; ``R^T Z`` scattered for label codes); per-class scatter gathers
        each class's rows of the block, so hard labels cost one ``X^T X`` in all, not K."""
        if not class_scatter:
            # blocks of twice the size: fewer calls, and the symmetric product gains more from
            # them than it loses to the cache (1e5 x 50: 8.7 ms against 9.1; 1e6 x 20: 22
            # against 24, moments about the origin or the mean alike)
            squares, sums, counts = host_row_spans(
                self._shared_span, shift, X, R, block_bytes=2 * HOST_BLOCK_BYTES
            )
            return {"squares": squares, "sums": sums, "counts": counts}
        # each class's copy is about 1/K of a block: blocks K times larger (up to 8) keep it in
        # cache and spend fewer products on few rows (1e5 x 50, K = 5: 48 ms against 58 ms)
        block_bytes = HOST_BLOCK_BYTES * min(R.shape[1], 8)
        class_squares, sums, counts = host_row_spans(
            self._per_class_span, shift, X, R, block_bytes=block_bytes
        )
        stats = {"sums": sums, "squares": self.group(class_squares), "counts": counts}
        if self.shared:
            stats["class_squares"] = class_squares
        return stats

    # np.dot, not @, in the spans: it releases the GIL, so spans run on threads in parallel
    @staticmethod
    def _shared_span(shift, X, R, *, block_bytes):
        """``Z^T W Z`` (D, D), ``R^T Z`` (K, D) and ``R^T 1`` (K,) of NumPy rows, ``W`` the
        row weights (the row sums of ``R``)."""
        num_classes, num_features = R.shape[1], X.shape[1]
        dtype = np.result_type(X.dtype, R.dtype)
        squares = np.zeros((num_features, num_features), dtype)
        sums = np.zeros((num_classes, num_features), dtype)
        counts = np.zeros(num_classes, dtype)
        step = block_rows(X, block_bytes)
        ones = np.ones(step, dtype)
        per_class = np.ones(num_classes, dtype)
        origin = not np.any(shift)  # moments about 0: the products read the rows in place
        for x, *r in host_row_blocks(X, R, block_bytes=block_bytes):
            z = x if origin else centered(x, shift)
            weights = np.dot(r[0], per_class)
            # a symmetric product (BLAS syrk) when every row of the block weighs 1
            if weights is None or np.all(weights == 1):
                squares += np.dot(z.T, z)
            else:
                squares += np.dot((z * weights[:, None]).T, z)
            sums += np.dot(r[0].T, z)
            counts += np.dot(ones[: len(z)], r[0])
        return squares, sums, counts

    @staticmethod
    def _per_class_span(shift, X, R, *, block_bytes):
        """Per-class ``Z_k^T W_k Z_k`` (K, D, D), ``R^T Z`` (K, D) and ``R^T 1`` (K,) of NumPy
        rows."""
        num_classes, num_features = R.shape[1], X.shape[1]
        dtype = np.result_type(X.dtype, R.dtype)
        class_squares = np.zeros((num_classes, num_features, num_features), dtype)
        sums = np.zeros((num_classes, num_features), dtype)
        ones = np.ones(block_rows(X, block_bytes), dtype)
        gathered = ClassBlocks(X, R, shift, block_bytes)
        for k, z_k, w in gathered:
            if w is None:
                class_squares[k] += np.dot(z_k.T, z_k)
                sums[k] += np.dot(ones[: len(z_k)], z_k)
            else:
                class_squares[k] += np.dot((z_k * w[:, None]).T, z_k)
                sums[k] += np.dot(w, z_k)
        return class_squares, sums, gathered.counts.astype(dtype)

    def move(self, squares, sums, counts, offset):
        cross = sums[..., :, None] * offset[None, :]
        cross = cross + namespace(cross).swapaxes(cross, -1, -2)
        outer = offset[:, None] * offset[None, :]
        return squares + cross + counts[..., None, None] * outer

    def between(self, sums, centered_means):
        return sums[:, :, None] * centered_means[:, None, :]

    def diagonal(self, squares):
        return namespace(squares).diagonal(squares, axis1=-2, axis2=-1)

    def per_covariance(self, num_features):
        return num_features * (num_features + 1) // 2

    def summary(self, means, spread, rank_tol, factors=None):
        emission = full_gaussian(means, spread, rank_tol, factors)
        precision = jnp.broadcast_to(
            emission.precision_matrix, means.shape[:1] + 2 * means.shape[1:]
        )
        normalizer = jnp.broadcast_to(
            emission.log_normalizer - 0.5 * emission.rank * _LOG_2PI, means.shape[:1]
        )
        return precision, normalizer, emission.whitening if self.shared else None


class DiagonalCovariance(CovarianceStructure):
    """Independent features: a variance per feature (naive Bayes)."""

    full = False
    spread_name = "variances"

    def prior(self, num_classes, num_features, scale):
        copies = self.copies(num_classes)
        return numpyro.sample(
            "variances",
            dist.InverseGamma(2.0, scale**2)
            .expand(copies + [num_features])
            .to_event(len(copies) + 1),
        )

    def emission(self, means, spread, rank_tol, factors=None):
        return normals.DiagonalNormal(means, jnp.broadcast_to(spread, means.shape))

    def factorize(self, spread, rank_tol):
        return {}

    def precision_times(self, emission, vectors):
        return vectors / emission.variance

    def moments(self, X, R, shift, class_scatter):
        if isinstance(X, np.ndarray):
            # about the origin the products read the block in place: blocks twice the size
            block_bytes = HOST_BLOCK_BYTES * (1 if np.any(shift) else 2)
            sums, class_squares, counts = host_row_spans(
                self._host_span, shift, X, R, block_bytes=block_bytes
            )
            return {"sums": sums, "squares": self.group(class_squares), "counts": counts}

        def first_and_second(x, r):
            xs = x - shift
            return r.T @ xs, r.T @ (xs * xs)

        sums, class_squares = chunked_sum(first_and_second, X, R)
        return {"sums": sums, "squares": self.group(class_squares)}

    @staticmethod
    def _host_span(shift, X, R, *, block_bytes):
        """Per-class sums, sums of squares and counts (``R^T 1``) of NumPy rows, block by
        block in cache."""
        sums = np.zeros((R.shape[1], X.shape[1]), np.result_type(X.dtype, R.dtype))
        class_squares = np.zeros_like(sums)
        counts = np.zeros(R.shape[1], sums.dtype)
        ones = np.ones(block_rows(X, block_bytes), sums.dtype)
        origin = not np.any(shift)  # moments about 0: no centered copy of the block
        for x, r in host_row_blocks(X, R, block_bytes=block_bytes):
            z = x if origin else centered(x, shift)
            sums += np.dot(r.T, z)
            squared = np.square(z, out=None if origin else z)
            class_squares += np.dot(r.T, squared)
            counts += np.dot(ones[: r.shape[0]], r)
        return sums, class_squares, counts

    def move(self, squares, sums, counts, offset):
        return squares + 2.0 * sums * offset + counts[..., None] * offset**2

    def between(self, sums, centered_means):
        return sums * centered_means

    def diagonal(self, squares):
        return squares

    def per_covariance(self, num_features):
        return num_features

    def summary(self, means, spread, rank_tol, factors=None):
        variances = jnp.broadcast_to(spread, means.shape)
        precision = jax.vmap(jnp.diag)(1.0 / variances)
        normalizer = -0.5 * jnp.sum(jnp.log(2.0 * jnp.pi * variances), axis=-1)
        whitening = jnp.diag(1.0 / jnp.sqrt(spread)) if self.shared else None
        return precision, normalizer, whitening


class SharedFull(Shared, FullCovariance):
    """One full covariance for all classes (linear discriminant analysis)."""

    def scatter(self, squares, sums, centered_means, counts):
        # The between part as one (D, K) x (K, D) product W^T W, symmetric as computed (each
        # entry sums the same products in the same order): only the second moments need the
        # transposed pass, which XLA runs 2x faster alone than fused with the product's output
        # (D = 5000: 0.26 s against 0.59 s, docs/benchmarks.md). The (K, D, D) outer products
        # cost 20x more at D = 2000.
        weighted = centered_means * namespace(counts).sqrt(counts)[:, None]
        return symmetrize(squares) - weighted.T @ weighted


class PerClassFull(PerClass, FullCovariance):
    """A full covariance per class (quadratic discriminant analysis)."""


class SharedDiagonal(Shared, DiagonalCovariance):
    """Shared variances (naive Bayes with pooled variances)."""


class PerClassDiagonal(PerClass, DiagonalCovariance):
    """Variances per class (Gaussian naive Bayes)."""


_STRUCTURES = {
    ("full", True): SharedFull(),
    ("full", False): PerClassFull(),
    ("diag", True): SharedDiagonal(),
    ("diag", False): PerClassDiagonal(),
}


def structure_of(covariance: str, shared: bool) -> CovarianceStructure:
    """The strategy object of a covariance kind (``"full"``/``"diag"``) and sharing."""
    return _STRUCTURES[(covariance, bool(shared))]


def pseudo_scatter(terms):
    """``nu S_hat - n S``: the pseudo-scatter of the penalty, per covariance group."""
    spread = terms["spread"]
    return (
        per_group(terms["dof"], spread) * spread
        - per_group(terms["group_counts"], spread) * terms["mle"]
    )


def snap(structure, scatter, squares):
    """:func:`snap_constant_features` with the structure's layout."""
    return snap_constant_features(scatter, squares, structure.full)


def check_variances(variances, means) -> np.ndarray:
    """Indices (k, j) of non-positive variances."""
    return np.argwhere(~(np.broadcast_to(np.asarray(variances), np.shape(means)) > 0))
