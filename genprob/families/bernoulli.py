"""Bernoulli class-conditionals: binary features (a word is present or not)."""

from __future__ import annotations

import numpy as np
import scipy.sparse

from genprob._lazy import LazyModule, lazy_attribute
from genprob.engine._arrays import column_sums, namespace
from genprob.engine._validation import check_alpha
from genprob.families._discrete import (
    LinearStory,
    check_values,
    floor_log,
    floor_log1m,
    observed_sums,
    row_counts,
    scipy_linear_scores,
    special_functions,
    weighted_sums,
)
from genprob.families._registry import Block, Command, Family
from genprob.inference.conjugate import ConjugateFactor

numpyro = LazyModule("numpyro")
dist = LazyModule("numpyro.distributions")
_emission = LazyModule("genprob.families.bernoulli_emission")


__all__ = ["BernoulliStory", "FAMILY"]

#: NumPyro classes, defined in their own module so that importing this one needs no NumPyro
__getattr__ = lazy_attribute(__name__, {"BernoulliFeatures": "genprob.families.bernoulli_emission"})


# -- the emission --------------------------------------------------------------------------------
def bernoulli_linear_form(probs):
    """``(weights, offset)`` of the Bernoulli log density, ``x . weights[k] + offset[k]``."""
    log_on = floor_log(probs)
    log_off = floor_log1m(probs)
    return log_on - log_off, log_off.sum(axis=-1)


class BetaFactor(ConjugateFactor):
    """Beta posterior of the probabilities: a new row's predictive is Bernoulli at its mean."""

    def _log_predictive(self, X):
        return scipy_linear_scores(scipy.sparse.csr_matrix(X), *bernoulli_linear_form(self.mean()))


# -- the story -----------------------------------------------------------------------------------
class BernoulliStory(LinearStory):
    """Binary features, independent given the class (Bernoulli naive Bayes).

    Args:
        alpha: additive smoothing, a number or one per feature (a tuple); its reading as a
            Beta prior is below.

    Parameters (``params`` keys): ``probs`` (K, D), the probability that feature j is 1 in
    class k.
    """

    name = "bernoulli"
    capabilities = {"accepts_scipy_sparse": True, "array_api": True, "supports_missing": True}

    linear_form = staticmethod(bernoulli_linear_form)

    def __init__(self, alpha=1.0):
        self.alpha = check_alpha(alpha)

    def prior(self, num_classes, num_features):
        concentration = self._concentration(num_features)
        probs = numpyro.sample(
            "probs",
            dist.Beta(concentration, concentration).expand([num_classes, num_features]).to_event(2),
        )
        return {"probs": probs}

    def emission(self, params):
        return _emission.BernoulliFeatures(params["probs"])

    def sufficient_statistics(self, X, R):
        # a sparse-dense product when X is a BCOO or SciPy sparse matrix
        return {"counts": column_sums(R), "feature_counts": weighted_sums(X, R)}

    def maximize(self, stats):
        feature_counts = stats["feature_counts"]
        alpha = self._alpha(feature_counts)
        probs = (feature_counts + alpha) / (row_counts(stats["counts"]) + 2.0 * alpha)
        return {"probs": probs}

    def log_penalty(self, params, stats):
        """``sum_kj alpha_j (log p_kj + log(1 - p_kj))``: the Beta(alpha+1, alpha+1) log density."""
        probs = params["probs"]
        special, alpha = special_functions(probs), self._alpha(probs)
        return namespace(probs).sum(special.xlogy(alpha, probs) + special.xlog1py(alpha, -probs))

    def conjugate_factors(self, stats, offset):
        """``Beta(c + alpha + offset, N - c + alpha + offset)`` per class and feature."""
        on = stats["feature_counts"]
        counts = row_counts(stats["counts"])
        alpha = np.asarray(self.alpha, on.dtype) + offset
        return {"probs": BetaFactor("beta", on + alpha, counts - on + alpha)}

    def validate(self, X):
        check_values(
            X,
            lambda v: (v != 0) & (v != 1),
            "binary features (0 or 1) for a Bernoulli story; binarize them first (BernoulliNB's "
            "binarize=0.0 maps every positive value to 1)",
        )
        return X

    def observed_log_prob(self, params, X, observed):
        """``sum_j o_ij (x_ij log p_kj + (1 - x_ij) log(1 - p_kj))``: two matrix products."""
        probs = params["probs"]
        log_off = floor_log1m(probs)
        weights = floor_log(probs) - log_off
        return X @ weights.T + observed.astype(probs.dtype) @ log_off.T

    def observed_statistics(self, X, R, observed, params=None):
        counts, feature_counts = observed_sums(X, R, observed)
        return {"counts": counts, "feature_counts": feature_counts}

    def num_parameters(self, num_classes, num_features):
        return (num_classes - 1) + num_classes * num_features


FAMILY = Family(
    story=BernoulliStory,
    estimators=("genprob.estimators.discrete:BernoulliNB",),
    commands=(
        Command(
            "bernoulli",
            "binary features (Bernoulli NB), alpha=1",
            ("digits_binary", "sms_binary"),
            {"alpha": 1.0},
            aliases=("bernoulli_nb",),
            face="genprob.estimators.discrete:BernoulliNB",
            face_options={"alpha": 1.0, "binarize": None},
            in_report=True,
        ),
    ),
    block=Block(lambda context, alpha: BernoulliStory(alpha=alpha), settings=("alpha",)),
)
