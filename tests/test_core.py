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
