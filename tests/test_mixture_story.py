"""The mixture within each class as a story (issue 56, item 1): its joint log density is the
engine's (``joint_log_prob``, compiled or on the host), its statistics per (class, component)
cell take the current parameters, and its M-step is the structures' closed form per group, so
EM through the story reaches the estimator's fit."""

import numpy as np
import pytest
from scipy.special import logsumexp
from sklearn.datasets import load_iris

import genprob
from genprob.core import joint_log_prob
from genprob.engine import execution
from genprob.engine._dtype import precision
from genprob.families.gaussian import mixture
from genprob.families.gaussian.mixture_story import ClassMixtureStory, GaussianMixtureStory


@pytest.fixture(scope="module")
def iris():
    return load_iris(return_X_y=True)


def test_the_story_scores_as_every_story(iris):
    X, y = iris
    model = genprob.MixtureDiscriminantAnalysis("VVV", n_components=2).fit(X, y)
    story, params = model.story_, model.params_
    assert isinstance(story, GaussianMixtureStory) and ClassMixtureStory is GaussianMixtureStory
    fit = model._fitted()
    joint = mixture.cell_log_density(X, fit.means, fit.covariances) + np.log(
        fit.class_prior[fit.cell_class] * fit.weights
    )
    expected = np.stack([logsumexp(joint[:, fit.cell_class == k], axis=1) for k in range(3)], 1)
    with precision("float64"):  # NumPyro's mixture, traced
        compiled = np.asarray(joint_log_prob(story, params, X))
    host = execution.joint_log_prob(story, params, X, eager=True)  # the family's NumPy density
    assert compiled.shape == (150, 3)
    np.testing.assert_allclose(compiled, expected, rtol=1e-10, atol=1e-9)
    np.testing.assert_allclose(host, expected, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(model.predict_joint_log_proba(X), expected, atol=1e-9)
    assert model.num_parameters() == story.num_parameters(3, 4) == 2 + 3 + 6 * 4 + 6 * 10


@pytest.mark.parametrize("structure", ["VVV", "VEV"])
def test_em_through_the_story_reaches_the_fit(iris, structure):
    """Statistics given the parameters (cell responsibilities), then the story's M-step: the
    estimator's EM from the same k-means start lands on the same parameters."""
    X, y = iris
    story = GaussianMixtureStory([0, 0, 1, 1, 2, 2], [structure] * 3, [(0, 1), (2, 3), (4, 5)])
    cells = np.repeat(range(3), 2)
    R_cells = mixture._initial_responsibilities(X, y, np.ones(150), cells, None, 0, "kmeans")
    params = story.maximize(story._cells().sufficient_statistics(X, R_cells))
    R = np.eye(3)[y]
    trace = []
    for _ in range(2000):
        params = story.maximize(story.sufficient_statistics(X, R, params))
        params["class_prior"] = np.full(3, 1 / 3)
        joint = execution.joint_log_prob(story, params, X, eager=True)
        trace.append(float(np.sum(joint[np.arange(150), y])))
        if len(trace) > 1 and abs(trace[-1] - trace[-2]) <= 1e-12 * abs(trace[-1]):
            break
    assert np.all(np.diff(trace) >= -1e-8 * abs(trace[-1]))  # EM: never down
    fit = mixture.fit_mixture(
        X, y, (2, 2, 2), (structure,) * 3, max_iter=2000, tol=1e-12, random_state=0, init="kmeans"
    )
    assert trace[-1] == pytest.approx(fit.log_likelihood, rel=1e-10)
    np.testing.assert_allclose(params["means"], fit.means, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(params["covariances"], fit.covariances, rtol=1e-4, atol=1e-7)
    np.testing.assert_allclose(params["weights"], fit.weights, rtol=1e-5)


def test_one_component_statistics_need_no_parameters_and_more_do(iris):
    X, y = iris
    edda = GaussianMixtureStory([0, 1, 2], ["EEE"], [(0, 1, 2)])
    stats = edda.sufficient_statistics(X, np.eye(3)[y])
    params = edda.maximize(stats)
    pooled = sum(np.cov(X[y == k].T, bias=True) * 50 for k in range(3)) / 150
    np.testing.assert_allclose(params["covariances"], np.broadcast_to(pooled, (3, 4, 4)))
    np.testing.assert_allclose(params["weights"], 1.0)
    mixed = GaussianMixtureStory([0, 0, 1, 2], ["VVV"] * 3, [(0, 1), (2,), (3,)])
    with pytest.raises(ValueError, match="several components a class need parameters"):
        mixed.sufficient_statistics(X, np.eye(3)[y])
