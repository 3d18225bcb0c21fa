"""Data and estimators shared by the streaming and Dask tests: one case per additive story."""

import numpy as np
import pandas as pd

from genprob.estimators import (
    BernoulliNB,
    CategoricalNB,
    GaussianNB,
    LinearDiscriminantAnalysis,
    MixedNB,
    MultinomialNB,
    PoissonNB,
    QuadraticDiscriminantAnalysis,
)

NUM_ROWS = 240


def _features(name, y, rng):
    n = len(y)
    if name in ("gaussian_nb", "lda", "qda"):
        return rng.normal(size=(n, 3)) + y[:, None] * np.array([1.0, -0.5, 0.3])
    if name == "bernoulli":
        return (rng.random((n, 4)) < 0.2 + 0.25 * y[:, None]).astype(float)
    if name == "categorical":
        X = rng.integers(0, 3, size=(n, 3)) + (y[:, None] == 2)
        X[-1] = 5  # a category first seen in the last chunk: the tables grow at the end
        return X.astype(float)
    if name in ("multinomial", "poisson"):
        return rng.poisson(1.0 + y[:, None] * np.array([0.5, 1.5, 0.0, 2.0])).astype(float)
    # mixed: a Gaussian, a categorical (grows late) and a Poisson column
    categorical = rng.integers(0, 3, size=n) + (y == 1)
    categorical[-1] = 7
    return np.column_stack([rng.normal(size=n) + y, categorical, rng.poisson(1.0 + y)]).astype(
        float
    )


def make_estimator(name):
    return {
        "gaussian_nb": lambda: GaussianNB(),
        "lda": lambda: LinearDiscriminantAnalysis(),
        "qda": lambda: QuadraticDiscriminantAnalysis(reg_param=0.01),
        "bernoulli": lambda: BernoulliNB(),
        "categorical": lambda: CategoricalNB(),
        "multinomial": lambda: MultinomialNB(),
        "poisson": lambda: PoissonNB(),
        "mixed": lambda: MixedNB(families={0: "gaussian", 1: "categorical", 2: "poisson"}),
    }[name]()


CASES = ["gaussian_nb", "lda", "qda", "bernoulli", "categorical", "multinomial", "poisson", "mixed"]


def make_data(name, seed=0, unlabeled_fraction=0.0, num_rows=NUM_ROWS):
    """``(X, y, w)``: three classes sorted by label (so chunks split classes at boundaries)."""
    rng = np.random.default_rng(seed)
    y = np.sort(rng.integers(0, 3, size=num_rows))
    X = _features(name, y, rng)
    w = rng.uniform(0.5, 2.0, size=num_rows)
    if unlabeled_fraction:
        y = y.copy()
        y[rng.random(num_rows) < unlabeled_fraction] = -1
        y[:3] = [0, 0, 0]
    return X, y, w


def as_frame(X):
    return pd.DataFrame(X, columns=[f"f{j}" for j in range(X.shape[1])])


def assert_same_fit(reference, other, rtol=1e-10):
    """Same classes and parameters (relative 1e-10; exact zeros stay zero)."""
    np.testing.assert_array_equal(reference.classes_, other.classes_)
    assert set(reference.params_) == set(other.params_)
    for key, value in reference.params_.items():
        scale = np.maximum(np.abs(value), 1e-300)
        error = np.max(np.abs(np.asarray(other.params_[key]) - value) / scale, initial=0.0)
        assert error <= rtol, (key, error)
    if hasattr(reference, "n_iter_"):
        assert other.n_iter_ == reference.n_iter_
        np.testing.assert_allclose(
            other.log_likelihood_trace_, reference.log_likelihood_trace_, rtol=rtol
        )
