"""Poisson class-conditionals: independent counts (events per row, per feature)."""

from __future__ import annotations

import numpy as np
import scipy.special

from genprob._lazy import LazyModule
from genprob.families._discrete import check_values, entry_sums, observed_sums, row_counts
from genprob.families._registry import Block, Command, Family
from genprob.inference.conjugate import ConjugateFactor
from genprob.story import Story

jnp = LazyModule("jax.numpy")
special = LazyModule("jax.scipy.special")

numpyro = LazyModule("numpyro")
dist = LazyModule("numpyro.distributions")
_emission = LazyModule("genprob.families.poisson_emission")


__all__ = ["FAMILY", "PoissonStory", "VAGUE_RATE"]

#: Rate of the NumPyro prior's Gamma when ``beta = 0`` (prior mean ``(alpha + 1) / 0.01``).
VAGUE_RATE = 0.01


class PoissonStory(Story):
    """Count features, independent Poisson given the class (Poisson naive Bayes).

    Args:
        alpha: pseudo-counts added to every feature total (>= 0).
        beta: pseudo-rows added to every class count (>= 0).

    Parameters (``params`` keys): ``rates`` (K, D), the mean count of feature j in class k.
    """

    name = "poisson"
    # independent features: the default observed_log_prob masks them
    capabilities = {"supports_missing": True}

    def __init__(self, alpha=1.0, beta=1.0):
        for label, value in (("alpha", alpha), ("beta", beta)):
            if not (np.isfinite(float(value)) and float(value) >= 0):
                raise ValueError(f"{label} must be finite and >= 0, got {value!r}.")
        self.alpha = float(alpha)
        self.beta = float(beta)

    def prior(self, num_classes, num_features):
        # beta = 0 makes the MAP prior improper: a vague proper Gamma for draws and NUTS
        rate = _proper_rate(self.beta)
        rates = numpyro.sample(
            "rates",
            dist.Gamma(self.alpha + 1.0, rate).expand([num_classes, num_features]).to_event(2),
        )
        return {"rates": rates}

    def emission(self, params):
        return _emission.PoissonFeatures(params["rates"])

    def sufficient_statistics(self, X, R):
        return {"counts": R.sum(axis=0), "feature_sums": R.T @ X}

    def maximize(self, stats):
        rates = (stats["feature_sums"] + self.alpha) / (row_counts(stats["counts"]) + self.beta)
        return {"rates": rates}

    def log_penalty(self, params, stats):
        """``sum_kj alpha log rate_kj - beta rate_kj``: the Gamma(alpha + 1, beta) log density."""
        rates = params["rates"]
        return jnp.sum(special.xlogy(self.alpha, rates) - self.beta * rates)

    def conjugate_factors(self, stats, offset):
        """``Gamma(S + alpha + offset, N + beta)``; with ``offset``, vague at beta = 0 (NumPyro)."""
        sums, counts = stats["feature_sums"], row_counts(stats["counts"])
        if offset:
            shape, rate = self.alpha + 1.0, _proper_rate(self.beta)
        else:
            shape, rate = self.alpha, self.beta
        return {"rates": GammaPoissonFactor("gamma", sums + shape, counts + rate)}

    def validate(self, X):
        check_values(
            X,
            lambda v: (v < 0) | (v != np.round(v)),
            "non-negative integer counts for a Poisson story",
        )
        return X

    def observed_statistics(self, X, R, observed, params=None):
        counts, feature_sums = observed_sums(X, R, observed)
        return {"counts": counts, "feature_sums": feature_sums}

    def num_parameters(self, num_classes, num_features):
        return (num_classes - 1) + num_classes * num_features


class GammaPoissonFactor(ConjugateFactor):
    """Gamma posterior of the rates: a new count's predictive is negative binomial."""

    def _log_predictive(self, X):
        a, b = (np.asarray(v, np.float64) for v in (self.concentration, self.second))
        zeros = np.sum(a * np.log(b / (b + 1.0)), axis=1)  # every count's share at x = 0
        counts = entry_sums(
            X,
            lambda j, x: (
                scipy.special.gammaln(a[:, j] + x)
                - scipy.special.gammaln(a[:, j])
                - scipy.special.gammaln(x + 1.0)
                - x * np.log1p(b[:, j])
            ),
        )
        return counts + zeros


def _proper_rate(beta):
    """``beta``, or :data:`VAGUE_RATE` where it is 0 (``beta`` may be traced: no Python branch)."""
    return jnp.where(jnp.asarray(beta) > 0, beta, VAGUE_RATE)


FAMILY = Family(
    story=PoissonStory,
    estimators=("genprob.estimators.discrete:PoissonNB",),
    commands=(
        Command(
            "poisson",
            "independent Poisson counts, Gamma smoothing alpha=1, beta=1",
            ("sms_counts", "digits"),
            {"alpha": 1.0, "beta": 1.0},
            aliases=("poisson_nb",),
            face="genprob.estimators.discrete:PoissonNB",
            face_options={"alpha": 1.0, "beta": 1.0},
            in_report=True,
        ),
    ),
    block=Block(
        lambda context, alpha, beta: PoissonStory(alpha=alpha, beta=beta),
        settings=("alpha", "beta"),
    ),
)
