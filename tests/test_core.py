"""The story contract and the functional core, on the Gaussian story."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from numpyro.infer.util import log_density

import genprob
from genprob import core
from genprob.datasets import load_iris
from genprob.families.gaussian import GaussianStory


@pytest.fixture
def iris64():
    X, y = load_iris()
    return X, y


def test_global_jax_config_untouched_by_import_and_estimators(iris64):
    X, y = iris64
    genprob.GaussianNB().fit(X, y).predict_proba(X)
    assert jnp.zeros(1).dtype == jnp.float32


def test_joint_log_prob_is_log_prior_plus_class_conditional(iris64):
    X, y = iris64
    story = GaussianStory(covariance="diag", shared=False)
    with jax.enable_x64(True):
        params = core.fit_closed_form(story, jnp.asarray(X), core.one_hot_responsibilities(y, 3))
        joint = np.asarray(core.joint_log_prob(story, params, jnp.asarray(X)))
    # hand-written Gaussian density, independent of NumPyro
    means, variances = np.asarray(params["means"]), np.asarray(params["variances"])
    expected = np.log(np.asarray(params["class_prior"]))[None] + np.sum(
        -0.5 * np.log(2 * np.pi * variances)[None]
        - 0.5 * (X[:, None, :] - means[None]) ** 2 / variances[None],
        axis=-1,
    )
    np.testing.assert_allclose(joint, expected, rtol=1e-12)


def test_model_log_density_is_marginal_likelihood_plus_log_prior(iris64):
    X, y = iris64
    story = GaussianStory()
    y_partial = np.array(y)
    y_partial[::3] = -1
    with jax.enable_x64(True):
        Xj = jnp.asarray(X)
        params = core.fit_closed_form(story, Xj, core.one_hot_responsibilities(y, 3))
        total, trace = log_density(
            core.model, (story, Xj, jnp.asarray(y_partial)), {"num_classes": 3}, params
        )
        prior = sum(
            site["fn"].log_prob(site["value"]).sum()
            for site in trace.values()
            if site["type"] == "sample" and not site["is_observed"]
        )
        marginal = core.log_likelihood(story, params, Xj, jnp.asarray(y_partial))
    np.testing.assert_allclose(float(total), float(marginal + prior), rtol=1e-12)


def test_generic_parameter_count_matches_closed_formula():
    for covariance in ("full", "diag"):
        for shared in (True, False):
            story = GaussianStory(covariance=covariance, shared=shared)
            generic = genprob.Story.num_parameters(story, 3, 4)
            assert generic == story.num_parameters(3, 4)
    # LDA with K=3, D=4: 2 + 12 + 10
    assert GaussianStory().num_parameters(3, 4) == 24


@pytest.mark.parametrize("num_rows", [1, 257, 8192 + 3])
@pytest.mark.parametrize("num_classes", [1, 2, 3, 17])
@pytest.mark.parametrize("case", ["-inf", "below the floor", "above the floor"])
def test_host_normalization_equals_the_row_reduction(num_classes, num_rows, case):
    """The host normalization works on (K, m) blocks and drops terms below exp(-700); it gives
    the rows of NumPy's reduction along the last axis, -inf classes and all: log posteriors to
    rounding, posteriors too except those below 1e-304, which are 0. Each of its three ways to
    take the exp is reached: a block with a -inf term, with terms below the floor only, and
    without either."""
    from genprob.core import exp_flushed, host_normalized

    rng = np.random.default_rng(num_classes)
    scale = 1.0 if case == "above the floor" else 400.0  # 400: many terms below exp(-700)
    scores = rng.normal(scale=scale, size=(num_rows, num_classes))
    if num_classes > 1 and case == "-inf":
        scores[::7, 0] = -np.inf  # a class of prior 0 (a row of -inf alone is refused earlier)
    peak = scores.max(axis=-1, keepdims=True)
    shifted = scores - peak
    with np.errstate(divide="ignore", under="ignore"):
        expected = shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))
        expected_proba = np.exp(expected)
    log_proba = host_normalized(scores, log=True)
    np.testing.assert_allclose(log_proba, expected, rtol=1e-14, atol=1e-12)
    proba = host_normalized(scores, log=False)
    tiny = expected < -700.0
    if num_rows > 1:  # one row of two classes may not reach the floor
        assert tiny.any() == (num_classes > 1 and case != "above the floor")
    assert np.all(proba[tiny] == 0.0)
    np.testing.assert_allclose(proba[~tiny], expected_proba[~tiny], rtol=1e-13)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0, rtol=1e-14)
    np.testing.assert_array_equal(exp_flushed(log_proba) == 0.0, tiny)
    np.testing.assert_allclose(exp_flushed(log_proba)[~tiny], expected_proba[~tiny], rtol=1e-13)
    # float32: terms below exp(-80) (1.8e-35) are 0, the rest as NumPy's reduction gives them
    single = host_normalized(scores.astype(np.float32), log=False)
    tiny32 = expected < -80.0
    assert single.dtype == np.float32 and np.all(single[tiny32] == 0.0)
    np.testing.assert_allclose(single[~tiny32], expected_proba[~tiny32], rtol=2e-4, atol=1e-30)
    np.testing.assert_allclose(single.sum(axis=1), 1.0, rtol=1e-6)
