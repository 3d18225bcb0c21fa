"""Gaussian class-conditionals: LDA, QDA, Gaussian naive Bayes and shared-variance naive Bayes.

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

Maximum likelihood, with ``N_k = sum_i R_ik``::

    means[k] = sum_i R_ik x_i / N_k
    Sigma_k  = sum_i R_ik (x_i - means[k])(x_i - means[k])^T / N_k        (per class)
    Sigma    = sum_k sum_i R_ik (x_i - means[k])(x_i - means[k])^T / N    (shared)

``estimator="unbiased"`` divides by ``N_k - 1`` (per class) or ``N - K`` (pooled) instead.
Regularization: ``reg_param`` r gives ``(1 - r) Sigma + r I`` (QDA's), ``shrinkage`` a gives
``(1 - a) Sigma + a (tr Sigma / D) I`` (LDA's), ``var_smoothing`` e adds ``e * max_j Var(x_j)``
to every variance (Gaussian NB's).
"""

from __future__ import annotations

import jax.numpy as jnp
import numpyro
import numpyro.distributions as dist

from genprob.story import Story

__all__ = ["GaussianStory"]


class GaussianStory(Story):
    """Gaussian class-conditional features.

    Args:
        covariance: ``"full"`` or ``"diag"``.
        shared: one covariance for all classes (True) or one per class (False).
        estimator: ``"mle"`` (divide by N) or ``"unbiased"`` (N - K pooled, N_k - 1 per class).
        reg_param: QDA-style regularization, in [0, 1].
        shrinkage: LDA-style shrinkage towards a scaled identity, in [0, 1].
        var_smoothing: Gaussian-NB-style variance floor, as a fraction of the largest variance.
        mean_prior_scale: sd of the Normal prior on the means (used by NUTS / MAP only).
        covariance_prior_scale: scale of the inverse-Wishart prior on covariances.

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
        shrinkage: float = 0.0,
        var_smoothing: float = 0.0,
        mean_prior_scale: float = 10.0,
        covariance_prior_scale: float = 1.0,
    ):
        if covariance not in ("full", "diag"):
            raise ValueError(f"covariance must be 'full' or 'diag', got {covariance!r}.")
        if estimator not in ("mle", "unbiased"):
            raise ValueError(f"estimator must be 'mle' or 'unbiased', got {estimator!r}.")
        for label, value in (("reg_param", reg_param), ("shrinkage", shrinkage)):
            if not 0.0 <= float(value) <= 1.0:
                raise ValueError(f"{label} must lie in [0, 1], got {value!r}.")
        if float(var_smoothing) < 0:
            raise ValueError(f"var_smoothing must be >= 0, got {var_smoothing!r}.")
        self.covariance = covariance
        self.shared = bool(shared)
        self.estimator = estimator
        self.reg_param = float(reg_param)
        self.shrinkage = float(shrinkage)
        self.var_smoothing = float(var_smoothing)
        self.mean_prior_scale = float(mean_prior_scale)
        self.covariance_prior_scale = float(covariance_prior_scale)

    @property
    def spread_name(self) -> str:
        """Name of the spread parameter: ``"covariance"`` (full) or ``"variances"`` (diag)."""
        return "covariance" if self.covariance == "full" else "variances"

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
            scale = jnp.sqrt(jnp.broadcast_to(params["variances"], means.shape))
            return dist.Normal(means, scale).to_event(1)
        scale_tril = jnp.linalg.cholesky(params["covariance"])
        if self.shared:
            scale_tril = jnp.broadcast_to(scale_tril, means.shape[:1] + scale_tril.shape)
        return dist.MultivariateNormal(means, scale_tril=scale_tril)

    # -- closed form -----------------------------------------------------------------------------
    def sufficient_statistics(self, X, R):
        # Moments are taken about a reference point (the data mean) so that the later
        # "second moment minus squared mean" keeps its precision when |mean| >> sd.
        shift = X.mean(axis=0)
        Xs = X - shift
        stats = {"counts": R.sum(axis=0), "sums": R.T @ Xs, "shift": shift}
        if self.covariance == "full" and self.shared:
            stats["squares"] = (Xs * R.sum(axis=1)[:, None]).T @ Xs
        elif self.covariance == "full":
            stats["squares"] = jnp.einsum("nk,nd,ne->kde", R, Xs, Xs)
        elif self.shared:
            stats["squares"] = R.sum(axis=1) @ (Xs * Xs)
        else:
            stats["squares"] = R.T @ (Xs * Xs)
        if self.var_smoothing:
            weights = R.sum(axis=1)
            total = weights.sum()
            centered = Xs - (weights @ Xs) / total
            stats["total_variance"] = (weights @ (centered * centered)) / total
        return stats

    def maximize(self, stats):
        counts, sums = stats["counts"], stats["sums"]
        centered_means = sums / counts[:, None]
        means = centered_means + stats["shift"]
        num_classes, num_features = sums.shape
        full = self.covariance == "full"
        if full:
            between = jnp.einsum("kd,ke->kde", sums, centered_means)
        else:
            between = sums * centered_means
        if self.shared:
            scatter = stats["squares"] - between.sum(axis=0)
            total = counts.sum()
            denominator = total - num_classes if self.estimator == "unbiased" else total
        else:
            scatter = stats["squares"] - between
            denominator = counts - 1.0 if self.estimator == "unbiased" else counts
            denominator = denominator.reshape((-1,) + (1,) * (scatter.ndim - 1))
        spread = scatter / denominator
        if full:
            spread = 0.5 * (spread + jnp.swapaxes(spread, -1, -2))
            identity = jnp.eye(num_features, dtype=spread.dtype)
            if self.shrinkage:
                mean_variance = jnp.trace(spread, axis1=-2, axis2=-1) / num_features
                spread = (1.0 - self.shrinkage) * spread + self.shrinkage * (
                    mean_variance[..., None, None] * identity
                )
            if self.reg_param:
                spread = (1.0 - self.reg_param) * spread + self.reg_param * identity
        elif self.var_smoothing:
            spread = spread + self.var_smoothing * stats["total_variance"].max()
        return {"means": means, self.spread_name: spread}

    def num_parameters(self, num_classes, num_features):
        per_covariance = (
            num_features * (num_features + 1) // 2 if self.covariance == "full" else num_features
        )
        copies = 1 if self.shared else num_classes
        return (num_classes - 1) + num_classes * num_features + copies * per_covariance
