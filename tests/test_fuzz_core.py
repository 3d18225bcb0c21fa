"""Property-based fuzzing of the functional core: ``fit_closed_form`` on one-hot, weighted or soft
responsibilities, then ``predict_proba`` / ``log_likelihood``, for every closed-form story.

The core validates its public functions (NaN, out-of-range codes, wrong feature counts and
singular covariances are refused: tests/test_fuzz_open_items.py, item 7), so half the Gaussian
full-covariance examples may have too few rows, and then must be refused with a message naming
the singular covariance; Gaussian scales run from 1e-300 to 1e300, and where squares overflow or
underflow the fit must be refused with a message asking to rescale. Otherwise the strategies
stay inside the valid domain: finite values, every class with positive weight, integer Poisson
counts, constant columns only for the discrete stories. Inside it the core must give finite
probabilities summing to 1 and agree with the pointwise log-likelihood.
"""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy.special import logsumexp
from test_fuzz_estimators import (
    FAST,
    FAST_SHAPES,
    GAUSSIAN_SCALES,
    SLOW,
    SLOW_SHAPES,
    SLOW_TIMEOUT,
)

import genprob
from genprob import core
from genprob.engine._dtype import precision

STORIES = {
    "gaussian full shared": (lambda d: genprob.GaussianStory(), "real"),
    "gaussian full per class": (
        lambda d: genprob.GaussianStory(shared=False, reg_param=0.1),
        "real",
    ),
    "gaussian diag": (
        lambda d: genprob.GaussianStory(covariance="diag", shared=False, var_smoothing=1e-9),
        "real",
    ),
    "bernoulli": (lambda d: genprob.BernoulliStory(alpha=1.0), "binary"),
    "multinomial": (lambda d: genprob.MultinomialStory(alpha=1.0), "counts"),
    "poisson": (lambda d: genprob.PoissonStory(), "counts"),
    "categorical": (lambda d: genprob.CategoricalStory(n_categories=(4,) * d), "codes"),
}


@st.composite
def core_problems(draw, shapes=FAST_SHAPES):
    name = draw(st.sampled_from(tuple(STORIES)))
    kind = STORIES[name][1]
    rows, features, classes = shapes
    k = draw(st.sampled_from(classes))
    n = max(draw(st.sampled_from(rows)), k + 2)
    d = draw(st.sampled_from(features))
    # enough rows for full-rank covariances, or maybe not (then the fit must be refused)
    enough = draw(st.booleans())
    if name == "gaussian full shared" and enough:
        n = max(n, d + k + 1)
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    y = np.concatenate([np.arange(k), rng.integers(0, k, n - k)])
    if name == "gaussian full per class":
        n = max(n, k * (d + 2) if enough else k + 2)
        y = rng.permutation(np.arange(n) % k)
    if kind == "real":
        scale = 10.0 ** draw(GAUSSIAN_SCALES)
        X = (rng.normal(size=(n, d)) + 2.0 * y[:, None]) * scale
    elif kind == "binary":
        X = rng.integers(0, 2, (n, d)).astype(float)
    elif name == "poisson":  # integer counts: the core does not check them yet (item 7)
        X = rng.poisson(3.0, (n, d)).astype(float) * 10 ** draw(st.integers(0, 12))
    elif kind == "counts":
        X = rng.poisson(3.0, (n, d)).astype(float) * 10.0 ** draw(st.integers(-300, 300))
    else:
        X = rng.integers(0, 4, (n, d)).astype(float)
    if kind != "real" and draw(st.booleans()):  # constant Gaussian columns: singular (item 7)
        column = draw(st.integers(0, d - 1))
        X[:, column] = X[0, column]
    responsibilities = draw(st.sampled_from(("one-hot", "weighted", "soft")))
    soft = rng.dirichlet(np.ones(k), n) * 0.5 + 0.5 * np.eye(k)[y]
    weights = rng.uniform(0.1, 3.0, n) if responsibilities == "weighted" else None
    return name, X, (y, k, weights, soft if responsibilities == "soft" else None)


def _check_core(problem):
    name, X, (y, k, weights, soft) = problem
    story = STORIES[name][0](X.shape[1])
    with precision("float64"):
        R = soft if soft is not None else core.one_hot_responsibilities(y, k, weights)
        try:
            params = core.fit_closed_form(story, X, R)
        except ValueError as error:
            # refused: a Gaussian scale whose squares overflow or underflow, or a full
            # covariance fitted from too few rows
            if "Rescale the features" in str(error):
                assert name.startswith("gaussian"), f"{name}: {error}"
                return
            assert name.startswith("gaussian full"), f"{name}: {error}"
            assert "singular" in str(error), str(error)
            return
        proba = np.asarray(core.predict_proba(story, params, X))
        pointwise = np.asarray(core.log_likelihood(story, params, X, pointwise=True))
        joint = np.asarray(core.joint_log_prob(story, params, X))
    assert proba.dtype == np.float64
    assert np.all(np.isfinite(proba)), f"{name}: non-finite probabilities\n{proba}"
    np.testing.assert_allclose(proba.sum(axis=1), 1.0, rtol=0, atol=1e-10)
    assert np.all(np.isfinite(pointwise))
    # One scoring path: the marginal is the log-sum-exp of the joint, row by row.
    np.testing.assert_allclose(pointwise, logsumexp(joint, axis=1), rtol=1e-12, atol=1e-12)


@FAST
@given(core_problems())
def test_core_fits_give_finite_normalized_probabilities(problem):
    _check_core(problem)


@pytest.mark.slow
@pytest.mark.timeout(SLOW_TIMEOUT)
@SLOW
@given(core_problems(SLOW_SHAPES))
def test_core_fuzzed_at_length(problem):
    _check_core(problem)
