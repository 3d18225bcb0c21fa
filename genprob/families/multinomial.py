"""Multinomial class-conditionals: word counts (a bag of n draws from a vocabulary)."""

from __future__ import annotations

import numpy as np
import scipy.sparse
import scipy.special

from genprob._lazy import LazyModule, lazy_attribute
from genprob.engine._arrays import namespace, without_duplicates
from genprob.engine._validation import check_alpha, is_bcoo
from genprob.families._discrete import (
    LinearStory,
    check_non_negative_values,
    entry_sums,
    floor_log,
    special_functions,
    weighted_sums,
)
from genprob.families._registry import Block, Command, Family
from genprob.inference.conjugate import ConjugateFactor
from genprob.story import Unsupported

jsparse = LazyModule("jax.experimental.sparse")

numpyro = LazyModule("numpyro")
dist = LazyModule("numpyro.distributions")
_emission = LazyModule("genprob.families.multinomial_emission")


__all__ = ["FAMILY", "MultinomialStory"]

#: NumPyro classes, defined in their own module so that importing this one needs no NumPyro
__getattr__ = lazy_attribute(
    __name__, {"MultinomialFeatures": "genprob.families.multinomial_emission"}
)


class DirichletMultinomialFactor(ConjugateFactor):
    """Dirichlet posterior of the word probabilities; predictive Dirichlet-multinomial."""

    def _log_predictive(self, X):
        a = np.asarray(self.concentration, np.float64)
        length = np.asarray(X.sum(axis=1), np.float64).reshape(-1, 1)
        total = a.sum(axis=1)
        words = entry_sums(
            X,
            lambda j, x: (
                scipy.special.gammaln(a[:, j] + x)
                - scipy.special.gammaln(a[:, j])
                - scipy.special.gammaln(x + 1.0)
            ),
        )
        scale = scipy.special.gammaln(total) - scipy.special.gammaln(total + length)
        return words + scale + scipy.special.gammaln(length + 1.0)


def _map_stored(value, fn):
    """Apply ``fn`` (with ``fn(0) = 0``) to the stored values of a dense or BCOO array."""
    if is_bcoo(value):
        return jsparse.BCOO((fn(value.data), value.indices), shape=value.shape)
    return fn(value)


def _scipy_row_term(value) -> np.ndarray:
    """``log n! - sum_j log x_j!`` (n, 1) of the rows of a SciPy sparse matrix, on the host."""
    # a word stored twice: log x! needs its total count
    value = without_duplicates(scipy.sparse.csr_matrix(value))
    log_factorials = value.copy()
    log_factorials.data = scipy.special.gammaln(value.data + 1.0)
    length = np.asarray(value.sum(axis=1)).reshape(-1, 1)
    return scipy.special.gammaln(length + 1.0) - np.asarray(log_factorials.sum(axis=1))


def multinomial_linear_form(probs):
    """``(weights, offset)`` of the class-dependent part ``x . log probs[k]`` (offset 0)."""
    weights = floor_log(probs)
    xp = namespace(weights)
    return weights, xp.zeros(weights.shape[:-1], weights.dtype)


class MultinomialStory(LinearStory):
    """Count features drawn as a multinomial bag of words (multinomial naive Bayes).

    Args:
        alpha: additive smoothing, a number or one per feature (a tuple).
        total_count: document length of sampled rows (the density itself conditions on each
            row's own length); the estimator sets it to the mean training length.

    Parameters (``params`` keys): ``probs`` (K, D), each row on the simplex.
    """

    name = "multinomial"
    capabilities = {
        "accepts_scipy_sparse": True,
        "array_api": True,
        "supports_missing": Unsupported(
            "a multinomial row is one document whose length is the sum of its counts; a missing "
            "count leaves that length, and so the row's distribution, undefined (impute the "
            "counts, or drop the rows)"
        ),
    }
    linear_form = staticmethod(multinomial_linear_form)

    def __init__(self, alpha=1.0, total_count=None):
        self.alpha = check_alpha(alpha)
        if total_count is not None and int(total_count) < 0:
            raise ValueError(f"total_count must be >= 0, got {total_count!r}.")
        # a float, so traced: a new length (each fold's mean length) reuses compiled code
        self.total_count = None if total_count is None else float(int(total_count))

    def prior(self, num_classes, num_features):
        concentration = self._concentration(num_features)
        probs = numpyro.sample(
            "probs", dist.Dirichlet(concentration).expand([num_classes]).to_event(1)
        )
        return {"probs": probs}

    def emission(self, params):
        return _emission.MultinomialFeatures(params["probs"], self.total_count)

    def sufficient_statistics(self, X, R):
        return {"feature_counts": weighted_sums(X, R)}

    def _row_term(self, X):
        """The multinomial coefficient ``log n! - sum_j log x_j!`` (n, 1) of host rows."""
        coefficient = scipy.special.gammaln(X.sum(axis=1, keepdims=True) + 1.0)
        return coefficient - scipy.special.gammaln(X + 1.0).sum(axis=1, keepdims=True)

    def maximize(self, stats):
        smoothed = stats["feature_counts"] + self._alpha(stats["feature_counts"])
        return {"probs": smoothed / smoothed.sum(axis=-1, keepdims=True)}

    def log_penalty(self, params, stats):
        """``sum_kj alpha_j log p_kj``: the Dirichlet(alpha + 1) log density up to a constant."""
        probs = params["probs"]
        return namespace(probs).sum(special_functions(probs).xlogy(self._alpha(probs), probs))

    def conjugate_factors(self, stats, offset):
        """``Dirichlet(c + alpha + offset)`` per class."""
        counts = stats["feature_counts"]
        alpha = np.asarray(self.alpha, counts.dtype) + offset
        return {"probs": DirichletMultinomialFactor("dirichlet", counts + alpha)}

    def validate(self, X):
        check_non_negative_values(X, "non-negative counts for a multinomial story")
        return X

    def num_parameters(self, num_classes, num_features):
        return (num_classes - 1) + num_classes * (num_features - 1)


def _naive_block(context, alpha):
    """A block whose sampled documents get the mean training length."""
    rows = context.get("rows")
    mean_length = context.get("length", 0.0) / rows if rows else 0.0
    return MultinomialStory(alpha=alpha, total_count=int(round(mean_length)))


FAMILY = Family(
    story=MultinomialStory,
    estimators=("genprob.estimators.discrete:MultinomialNB",),
    commands=(
        Command(
            "multinomial",
            "word counts (multinomial NB), alpha=1",
            ("sms_counts", "digits"),
            {"alpha": 1.0},
            aliases=("multinomial_nb",),
            face="genprob.estimators.discrete:MultinomialNB",
            face_options={"alpha": 1.0},
        ),
    ),
    # the block's total count, which gives sampled documents the mean training length
    block=Block(
        _naive_block, settings=("alpha",), context=lambda X: {"length": float(np.asarray(X).sum())}
    ),
)
