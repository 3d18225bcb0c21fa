"""Stories are immutable pytrees: traced hyperparameters never recompile, values never change."""

from __future__ import annotations

import copy
import logging
import pickle

import jax
import numpy as np
import pytest
from sklearn.datasets import load_iris

import genprob
from genprob import core
from genprob.engine._dtype import precision
from genprob.families.bernoulli import BernoulliStory
from genprob.families.categorical import CategoricalStory
from genprob.families.gaussian import GaussianStory
from genprob.families.mixed import MixedStory
from genprob.story import Story, story_class


class _Compilations(logging.Handler):
    """Counts the compilations JAX reports under ``jax.log_compiles``."""

    def __init__(self):
        super().__init__(logging.DEBUG)
        self.count = 0

    def emit(self, record):
        if "Compiling" in record.getMessage():
            self.count += 1


@pytest.fixture
def compilations():
    handler = _Compilations()
    logger = logging.getLogger("jax")
    level = logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    try:
        with jax.log_compiles(True):
            yield handler
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)


def _assert_counter_sees_compilations(counter):
    """The counter is live: a program no test compiled before is counted (the first fit of a
    sweep may compile nothing in a process that fit those shapes already)."""
    counter.count = 0
    jax.jit(lambda x: x * 3.25 - 1.5)(np.arange(7.0))
    assert counter.count > 0


def _binary_data():
    rng = np.random.default_rng(0)
    return (rng.random((120, 12)) > 0.5).astype(float), rng.integers(0, 3, 120)


@pytest.mark.parametrize(
    ("estimator", "name", "values", "data"),
    [
        (genprob.BernoulliNB, "alpha", [0.1, 0.2, 0.5, 1.0, 2.0, 3.0], "binary"),
        (genprob.MultinomialNB, "alpha", [0.1, 0.2, 0.5, 1.0, 2.0, 3.0], "binary"),
        (genprob.GaussianNB, "var_smoothing", [1e-9, 1e-8, 1e-6, 1e-4, 1e-3, 1e-2], "iris"),
        (
            genprob.QuadraticDiscriminantAnalysis,
            "reg_param",
            [0.0, 0.1, 0.2, 0.3, 0.5, 0.9],
            "iris",
        ),
    ],
)
def test_new_hyperparameter_values_compile_nothing(compilations, estimator, name, values, data):
    X, y = _binary_data() if data == "binary" else load_iris(return_X_y=True)
    rows = np.random.default_rng(len(name) + len(values)).permutation(len(y))
    rows = rows[: {"alpha": 113, "var_smoothing": 127, "reg_param": 131}[name]]
    if estimator is genprob.MultinomialNB:
        rows = rows[:109]
    X, y = X[rows], y[rows]
    counts, probabilities = [], []
    for value in values:
        compilations.count = 0
        probabilities.append(estimator(**{name: value}).fit(X, y).predict_proba(X))
        counts.append(compilations.count)
    assert counts[1:] == [0] * (len(values) - 1)
    _assert_counter_sees_compilations(compilations)
    # the traced value is really used: every setting gives other probabilities
    for a, b in zip(probabilities, probabilities[1:], strict=False):
        assert np.max(np.abs(a - b)) > 1e-12


def test_optimizer_cross_check_compiles_once_for_every_alpha():
    """The optimizer's compiled programs take the story as a traced argument too."""
    from genprob.inference import optimize

    programs = [optimize._evaluate, optimize._unconstrain_values, optimize._lbfgs_stage]
    X, y = _binary_data()
    sizes, objectives = [], []
    for alpha in (0.5, 1.0, 2.0, 3.0):
        result = genprob.crosscheck(BernoulliStory(alpha=alpha), X, y, starts=1)
        sizes.append([program._cache_size() for program in programs])
        objectives.append(result.row("objective").closed_form)
        assert result.passed
    assert all(size > 0 for size in sizes[0])
    assert sizes[1:] == [sizes[0]] * 3
    assert len(set(objectives)) == 4


def test_traced_hyperparameter_matches_a_fresh_fit():
    """A value reaching compiled code as a tracer gives the same fit as a constant would."""
    X, y = _binary_data()
    counts = np.eye(3)[y].T @ X
    for alpha in (0.5, 2.0):
        with precision("float64"):
            R = core.one_hot_responsibilities(y, 3)
            params = core.fit_closed_form(BernoulliStory(alpha=alpha), X, R)
        expected = (counts + alpha) / (np.bincount(y)[:, None] + 2 * alpha)
        np.testing.assert_allclose(params["probs"], expected, rtol=1e-12)


def test_leaves_and_structure():
    story = GaussianStory(covariance="full", shared=False, reg_param=0.25, shrinkage="auto")
    leaves, treedef = jax.tree_util.tree_flatten(story)
    # numbers are leaves; strings, booleans and None are structure
    assert leaves == [0.25, 0.0, 10.0, 1.0, 0.0]  # ..., mean_prior_loc
    assert jax.tree_util.tree_unflatten(treedef, leaves) == story
    other = GaussianStory(covariance="full", shared=False, reg_param=0.5, shrinkage="auto")
    assert jax.tree_util.tree_structure(other) == treedef
    diag = GaussianStory(covariance="diag", shared=False)
    assert jax.tree_util.tree_structure(diag) != treedef
    # nested stories of a mixed story are traced too; their columns are structure
    mixed = MixedStory([("a", BernoulliStory(alpha=0.5), (0,)), ("b", diag, (1, 2))])
    leaves, treedef = jax.tree_util.tree_flatten(mixed)
    assert leaves == [0.5, 0.0, 0.0, 0.0, 10.0, 1.0, 0.0]  # last: mean_prior_loc
    doubled = jax.tree_util.tree_unflatten(treedef, [2 * v for v in leaves])
    assert doubled.blocks[0][1].alpha == 1.0 and doubled.blocks[1][2] == (1, 2)
    # per-feature smoothing is a tuple: structure
    assert jax.tree_util.tree_leaves(BernoulliStory(alpha=(1.0, 2.0))) == []
    assert jax.tree_util.tree_leaves(CategoricalStory(n_categories=(2, 3), alpha=0.5)) == [0.5]


def test_stories_are_immutable():
    story = BernoulliStory(alpha=0.5)
    with pytest.raises(AttributeError, match=r"immutable.*replace\(alpha=...\)"):
        story.alpha = 2.0
    with pytest.raises(AttributeError, match="immutable"):
        del story.alpha
    changed = story.replace(alpha=2.0)
    assert story.alpha == 0.5 and changed.alpha == 2.0 and type(changed) is BernoulliStory
    with pytest.raises(ValueError, match="alpha must be finite and >= 0"):
        story.replace(alpha=-1.0)  # replace validates through __init__
    with pytest.raises(ValueError, match="no setting 'beta'"):
        story.replace(beta=1.0)
    prior = story.replace(class_concentration=3.0)
    assert prior.class_concentration == 3.0 and story.class_concentration == 1.0
    assert jax.tree_util.tree_leaves(prior) == [0.5, 3.0]
    # copies are the same value; pickling round-trips equal and sealed
    assert copy.deepcopy(story) is story
    again = pickle.loads(pickle.dumps(story))
    assert again == story and hash(again) == hash(story)
    with pytest.raises(AttributeError):
        again.alpha = 1.0


def test_estimator_keeps_an_unchangeable_story():
    story = GaussianStory(covariance="diag", shared=False, var_smoothing=1e-9)
    fitted = genprob.GenerativeClassifier(story).fit(*load_iris(return_X_y=True))
    with pytest.raises(AttributeError):
        fitted.story_.var_smoothing = 1.0
    assert fitted.story_ == story


class PlainStory(Story):
    """A user story written as a plain subclass, attributes set in ``__init__``."""

    name = "plain"

    def __init__(self, scale=1.0, label="x", degrees=3, flag=True, weights=None):
        self.scale = scale
        self.label = label
        self.degrees = degrees
        self.flag = flag
        self.weights = np.asarray([1.0, 2.0]) if weights is None else weights


def test_user_story_attributes_are_classified_and_registered():
    story = PlainStory(scale=2.0)
    leaves, treedef = jax.tree_util.tree_flatten(story)
    assert len(leaves) == 2 and leaves[0] == 2.0  # the float and the float array
    np.testing.assert_array_equal(leaves[1], [1.0, 2.0])
    assert jax.tree_util.tree_unflatten(treedef, leaves).label == "x"
    assert story_class(f"{__name__}.PlainStory") is PlainStory

    @jax.jit
    def scaled(story, x):
        return story.scale * x * story.degrees  # degrees is static, usable as a Python int

    assert float(scaled(story, 1.0)) == 6.0
    assert float(scaled(story.replace(scale=3.0), 1.0)) == 9.0
    assert scaled._cache_size() == 1
