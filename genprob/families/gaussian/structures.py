"""Covariance structures of the Gaussian story, one small strategy class per structure:
``GaussianStory`` delegates every structure-dependent step to ``story.covariance_structure``.
"""

from __future__ import annotations

import functools

import numpy as np

from genprob._lazy import LazyModule
from genprob.engine._arrays import class_sums, hard_labels, namespace, row_sums
from genprob.families.gaussian import mclust
from genprob.families.gaussian.distributions import (
    class_constant,
    diagonal_log_normalizer,
    full_factors,
    full_gaussian,
)
from genprob.families.gaussian.moments import (
    about,
    per_group,
    symmetrize,
)

numpyro = LazyModule("numpyro")
dist = LazyModule("numpyro.distributions")
normals = LazyModule("genprob.families.gaussian.normals")
jnp = LazyModule("jax.numpy")


__all__ = [
    "CovarianceStructure",
    "SharedFull",
    "PerClassFull",
    "SharedDiagonal",
    "PerClassDiagonal",
    "structure_of",
    "NamedStructure",
    "named_structure",
]


class CovarianceStructure:
    """How one covariance structure is sampled, scored and estimated: a sharing mixin and a kind
    (their methods: docs/concepts.md, "Covariance structures in the code")."""

    full: bool
    shared: bool
    spread_name: str

    def scatter(self, squares, sums, centered_means, counts):
        """Within-group scatter: second moments about the shift less the between-class part."""
        scatter = squares - self.group(self.between(sums, centered_means))
        return symmetrize(scatter) if self.full else scatter


class Shared:
    """One spread for all classes."""

    shared = True

    def group(self, per_class):
        return per_class.sum(axis=0)

    def copies(self, num_classes):
        return []

    def denominator(self, counts, unbiased):
        total = self.group(counts)
        return total - counts.shape[0] if unbiased else total

    def scope(self, k, where):
        return "(shared by all classes)" if not self.full else "shared covariance"


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


class FullCovariance(CovarianceStructure):
    """Full covariance matrices, scored by whitening (the retained subspace with ``rank_tol``)."""

    full = True
    spread_name = "covariance"

    def prior(self, num_classes, num_features, scale, dof=None):
        copies = self.copies(num_classes)
        # scale matrix diag(scale^2) given by its Cholesky factor: no factorization per trace
        prior = dist.InverseWishart(
            num_features + 2.0 if dof is None else dof,
            scale_tril=np.eye(num_features) * scale,
            validate_args=False,
        )
        return numpyro.sample("covariance", prior.expand(copies).to_event(len(copies)))

    def conditional_means(self, loc, spread, rows, num_classes, num_features):
        chol = jnp.linalg.cholesky(spread) / jnp.sqrt(rows)
        loc = jnp.broadcast_to(jnp.asarray(loc, chol.dtype), (num_classes, num_features))
        return dist.MultivariateNormal(loc, scale_tril=chol).to_event(1)

    def emission(self, means, spread, rank_tol, factors=None):
        return full_gaussian(means, spread, rank_tol, factors)

    def factorize(self, spread, rank_tol):
        return full_factors(spread, rank_tol)

    def moments(self, X, R, shift, class_scatter):
        Z = about(X, shift)
        sums = class_sums(R, Z)
        if not class_scatter:
            return {"squares": _weighted_gram(Z, row_sums(R)), "sums": sums}
        # class by class: no (n, K, D) temporary; labeled rows each in their own class only
        xp, hard, classes = namespace(Z, R), hard_labels(R), range(R.shape[1])
        if hard is None:
            class_squares = xp.stack([_weighted_gram(Z, R[:, k]) for k in classes])
        else:
            rows = [hard[0] == k for k in classes]
            class_squares = np.stack([_weighted_gram(Z[m], hard[1][m]) for m in rows])
        stats = {"sums": sums, "squares": self.group(class_squares)}
        if self.shared:
            stats["class_squares"] = class_squares
        return stats

    def move(self, squares, sums, counts, offset):
        cross = sums[..., :, None] * offset[None, :]
        cross = cross + namespace(cross).swapaxes(cross, -1, -2)
        outer = offset[:, None] * offset[None, :]
        return squares + cross + counts[..., None, None] * outer

    def between(self, sums, centered_means):
        return sums[:, :, None] * centered_means[:, None, :]

    def diagonal(self, squares):
        return namespace(squares).diagonal(squares, axis1=-2, axis2=-1)

    def summary(self, means, spread, rank_tol, factors=None):
        xp = namespace(means, spread)
        factors = factors or full_factors(spread, rank_tol)
        whitening = factors["whitening"]
        precision = whitening @ xp.swapaxes(whitening, -1, -2)
        precision = xp.broadcast_to(precision, means.shape[:1] + 2 * means.shape[1:])
        normalizer = class_constant(factors["rank"], factors["log_normalizer"])
        normalizer = xp.broadcast_to(normalizer, means.shape[:1])
        return precision, normalizer, whitening if self.shared else None


def _weighted_gram(Z, weights):
    """``sum_i w_i z_i z_i^T`` as ``A^T A``, ``A = sqrt(w) z``: BLAS computes half of it."""
    scaled = Z * namespace(Z, weights).sqrt(weights)[:, None]
    return scaled.T @ scaled


class DiagonalCovariance(CovarianceStructure):
    """Independent features: a variance per feature (naive Bayes)."""

    full = False
    spread_name = "variances"

    def prior(self, num_classes, num_features, scale, dof=None):
        copies = self.copies(num_classes)
        return numpyro.sample(
            "variances",
            dist.InverseGamma(2.0 if dof is None else dof / 2.0, scale**2)
            .expand(copies + [num_features])
            .to_event(len(copies) + 1),
        )

    def conditional_means(self, loc, spread, rows, num_classes, num_features):
        scale = jnp.broadcast_to(jnp.sqrt(spread / rows), (num_classes, num_features))
        return dist.Normal(loc, scale).to_event(2)

    def emission(self, means, spread, rank_tol, factors=None):
        return normals.DiagonalNormal(means, namespace(spread).broadcast_to(spread, means.shape))

    def factorize(self, spread, rank_tol):
        return {}

    def moments(self, X, R, shift, class_scatter):
        Z = about(X, shift)
        return {"sums": class_sums(R, Z), "squares": self.group(class_sums(R, Z * Z))}

    def move(self, squares, sums, counts, offset):
        return squares + 2.0 * sums * offset + counts[..., None] * offset**2

    def between(self, sums, centered_means):
        return sums * centered_means

    def diagonal(self, squares):
        return squares

    def summary(self, means, spread, rank_tol, factors=None):
        xp = namespace(means, spread)
        variances = xp.broadcast_to(spread, means.shape)
        precision = (1.0 / variances)[..., :, None] * xp.eye(means.shape[-1], dtype=variances.dtype)
        normalizer = diagonal_log_normalizer(variances)
        whitening = xp.diag(1.0 / xp.sqrt(spread)) if self.shared else None
        return precision, normalizer, whitening


class SharedFull(Shared, FullCovariance):
    """One full covariance for all classes (linear discriminant analysis)."""

    def scatter(self, squares, sums, centered_means, counts):
        # the between part as one product W^T W: symmetric as computed, no (K, D, D) outer products
        weighted = centered_means * namespace(counts).sqrt(counts)[:, None]
        return symmetrize(squares) - weighted.T @ weighted


class PerClassFull(PerClass, FullCovariance):
    """A full covariance per class (quadratic discriminant analysis)."""


class SharedDiagonal(Shared, DiagonalCovariance):
    """Shared variances (naive Bayes with pooled variances)."""


class PerClassDiagonal(PerClass, DiagonalCovariance):
    """Variances per class (Gaussian naive Bayes)."""


class NamedStructure(PerClassFull):
    """One of mclust's structures besides EEE, VVV, EEI and VVI, scored like QDA's: its prior
    on :func:`.mclust.latent_shapes`, its closed form :func:`.mclust.covariances`."""

    def __init__(self, name: str):
        self.name = name

    def prior(self, num_classes, num_features, scale):
        latent = {}
        shapes = mclust.latent_shapes(self.name, num_classes, num_features)
        for site, shape in shapes.items():
            # log volume about the scale's square (geometric mean), shape and orientation about I
            volume = 2.0 * jnp.mean(jnp.log(jnp.asarray(scale)))
            loc, sd = (volume, 2.0) if site == "log_volume" else (0.0, 1.0)
            latent[site] = numpyro.sample(
                site, dist.Normal(loc, sd).expand(list(shape)).to_event(len(shape))
            )
        return mclust.compose(self.name, latent, num_classes, num_features, xp=jnp)

    def latent_of(self, covariance) -> dict:
        """The canonical free parameters of covariances (K, D, D) of this structure."""
        latent = mclust.decompose(self.name, np.asarray(covariance, dtype=np.float64))
        return {k: np.asarray(v, dtype=np.asarray(covariance).dtype) for k, v in latent.items()}

    def maximize(self, scatter, counts) -> dict:
        """``covariance`` and its free parameters from per-class scatter matrices and counts."""
        sigma = mclust.covariances(self.name, scatter, counts)
        return {"covariance": sigma, **mclust.decompose(self.name, sigma)}


#: mclust's structures without a strategy of their own above.
NAMED_STRUCTURES = tuple(s for s in mclust.STRUCTURES if s not in ("EEE", "VVV", "EEI", "VVI"))
#: The strategy object of one of :data:`NAMED_STRUCTURES` (one per name).
named_structure = functools.cache(NamedStructure)


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


def check_variances(variances, means) -> np.ndarray:
    """Indices (k, j) of non-positive variances."""
    return np.argwhere(~(np.broadcast_to(np.asarray(variances), np.shape(means)) > 0))
