"""Additive statistics: sample weights as repetitions, combining chunks, and partial_fit.

The closed-form fit is ``maximize(sufficient_statistics(X, R))`` with R the weighted one-hot
labels. Integer weights are therefore repeated rows, and statistics of chunks combine into the
statistics of their union (plain sums, or re-centred Gaussian moments), so ``partial_fit`` over
any chunking equals ``fit`` on the concatenated rows.
"""

import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd
import pytest
import scipy.sparse
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sklearn.base import clone
from sklearn.covariance import LedoitWolf
from sklearn.exceptions import NotFittedError

import genprob
from genprob import core
from genprob.datasets import load_iris
from genprob.families.bernoulli import BernoulliStory
from genprob.families.gaussian import GaussianStory
from genprob.story import Story

RTOL = 1e-10  # float64 agreement of partial_fit with fit (issue 7)


def _iris_subset():
    """45 iris rows (15 per class), shuffled, so that chunks often miss a class."""
    X, y = load_iris()
    rng = np.random.default_rng(0)
    rows = np.concatenate([rng.choice(np.flatnonzero(y == k), 15, replace=False) for k in range(3)])
    rows = rng.permutation(rows)
    return X[rows], y[rows]


def _mixed_frame():
    """A table of every family; 'teal' appears once, late, and sorts between known colours."""
    rng = np.random.default_rng(1)
    n = 45
    y = np.repeat([0, 1, 2], 15)[rng.permutation(n)]
    colours = np.array(["blue", "green", "red"])[(y + rng.integers(0, 2, n)) % 3].astype(object)
    colours[40] = "teal"
    frame = pd.DataFrame(
        {
            "size": rng.normal(10.0 * y, 1.0 + y) + 1000.0,  # far from 0: tests re-centring
            "colour": colours,
            "visits": rng.poisson(1.0 + 2.0 * y),
            "spam": (rng.random(n) < 0.2 + 0.3 * y).astype(float),
            "word_a": rng.poisson(3.0 + y),
            "word_b": rng.poisson(5.0 - y),
        }
    )
    families = {
        "size": "gaussian",
        "colour": "categorical",
        "visits": "poisson",
        "spam": "bernoulli",
        "word_a": "multinomial",
        "word_b": "multinomial",
    }
    return frame, y, families


X_REAL, Y = _iris_subset()
X_COUNTS = np.round(X_REAL).astype(float)
X_BINARY = (X_REAL > np.median(X_REAL, axis=0)).astype(float)
FRAME, Y_MIXED, FAMILIES = _mixed_frame()

#: (estimator, X, y): every estimator option whose statistics add up over chunks.
CASES = {
    "GaussianNB": (genprob.GaussianNB(), X_REAL, Y),
    "LDA-svd": (genprob.LinearDiscriminantAnalysis(), X_REAL, Y),
    "LDA-lsqr-shrinkage": (
        genprob.LinearDiscriminantAnalysis(solver="lsqr", shrinkage=0.2),
        X_REAL,
        Y,
    ),
    "LDA-eigen-priors": (
        genprob.LinearDiscriminantAnalysis(solver="eigen", priors=[0.2, 0.3, 0.5]),
        X_REAL,
        Y,
    ),
    "QDA": (genprob.QuadraticDiscriminantAnalysis(), X_REAL, Y),
    "QDA-reg": (genprob.QuadraticDiscriminantAnalysis(reg_param=0.3), X_REAL, Y),
    "BernoulliNB": (genprob.BernoulliNB(), X_BINARY, Y),
    "MultinomialNB": (genprob.MultinomialNB(alpha=0.5), X_COUNTS, Y),
    "CategoricalNB": (genprob.CategoricalNB(), X_COUNTS, Y),
    "PoissonNB": (genprob.PoissonNB(), X_COUNTS, Y),
    "MixedNB": (genprob.MixedNB(FAMILIES), FRAME, Y_MIXED),
    "GenerativeClassifier": (
        genprob.GenerativeClassifier(GaussianStory(covariance="full", shared=False)),
        X_REAL,
        Y,
    ),
}

#: scikit-learn attributes compared on top of ``params_``.
ATTRIBUTES = {
    "GaussianNB": ["theta_", "var_", "class_count_", "epsilon_"],
    "LDA-svd": ["means_", "coef_", "intercept_", "xbar_", "explained_variance_ratio_"],
    "LDA-lsqr-shrinkage": ["means_", "covariance_", "coef_", "intercept_"],
    "LDA-eigen-priors": ["covariance_", "coef_", "intercept_", "explained_variance_ratio_"],
    "QDA": ["means_", "scalings_"],
    "QDA-reg": ["means_", "scalings_"],
    "BernoulliNB": ["feature_count_", "feature_log_prob_", "class_log_prior_"],
    "MultinomialNB": ["feature_count_", "feature_log_prob_", "class_count_"],
    "CategoricalNB": ["category_count_", "feature_log_prob_", "n_categories_"],
    "PoissonNB": ["feature_count_", "rates_"],
    "MixedNB": ["class_count_", "class_log_prior_"],
    "GenerativeClassifier": [],
}


def _rows(X, index):
    return X.iloc[index] if isinstance(X, pd.DataFrame) else X[index]


def _assert_same_fit(ours, reference, name, rtol=RTOL, same_story=True):
    if same_story:
        assert ours.story_ == reference.story_
    np.testing.assert_array_equal(ours.classes_, reference.classes_)
    assert ours.params_.keys() == reference.params_.keys()
    for key, value in reference.params_.items():
        np.testing.assert_allclose(ours.params_[key], value, rtol=rtol, atol=1e-13, err_msg=key)
    for attribute in ATTRIBUTES[name]:
        expected, actual = getattr(reference, attribute), getattr(ours, attribute)
        if isinstance(expected, list):
            for e, a in zip(expected, actual, strict=True):
                np.testing.assert_allclose(a, e, rtol=rtol, atol=1e-13, err_msg=attribute)
        else:
            np.testing.assert_allclose(actual, expected, rtol=rtol, atol=1e-13, err_msg=attribute)


def _chunked_fit(estimator, X, y, cuts, weights=None):
    model = clone(estimator)
    bounds = [0, *cuts, len(y)]
    with warnings.catch_warnings():
        # early chunks may lack a class: the fit then waits for more rows (tested below)
        warnings.filterwarnings("ignore", message="partial_fit kept the chunk")
        for start, stop in zip(bounds[:-1], bounds[1:], strict=True):
            index = np.arange(start, stop)
            model.partial_fit(
                _rows(X, index),
                y[index],
                classes=np.unique(y),
                sample_weight=None if weights is None else weights[index],
            )
    return model


@st.composite
def chunkings(draw, num_rows=45):
    """Chunk boundaries (0 to 6 cuts) and, half of the time, integer row weights (0 to 3)."""
    cuts = draw(st.lists(st.integers(1, num_rows - 1), max_size=6, unique=True))
    weights = None
    if draw(st.booleans()):
        weights = draw(st.lists(st.integers(0, 3), min_size=num_rows, max_size=num_rows))
        weights = np.asarray(weights)
    return sorted(cuts), weights


def _first_rows(y):
    return [np.flatnonzero(y == k)[0] for k in np.unique(y)]


@pytest.mark.parametrize("name", list(CASES))
@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(chunking=chunkings())
def test_partial_fit_in_any_chunking_equals_fit(name, chunking):
    estimator, X, y = CASES[name]
    cuts, weights = chunking
    if weights is not None:
        weights[_first_rows(y)] = np.maximum(weights[_first_rows(y)], 1)  # no empty class
        if name == "QDA":
            # unregularized QDA needs more weighted rows than features in every class
            weights = np.maximum(weights, 1)
    reference = clone(estimator).fit(X, y, sample_weight=weights)
    model = _chunked_fit(estimator, X, y, cuts, weights)
    _assert_same_fit(model, reference, name)
    np.testing.assert_allclose(
        model.predict_proba(X), reference.predict_proba(X), rtol=1e-9, atol=1e-12
    )


@pytest.mark.parametrize("name", ["GaussianNB", "QDA-reg", "CategoricalNB", "MixedNB"])
def test_partial_fit_after_fit_continues_from_its_statistics(name):
    estimator, X, y = CASES[name]
    head, tail = np.arange(30), np.arange(30, 45)
    model = clone(estimator).fit(_rows(X, head), y[head])
    model.partial_fit(_rows(X, tail), y[tail])
    _assert_same_fit(model, clone(estimator).fit(X, y), name)
    # fit starts afresh: the statistics of earlier fits are gone
    refit = model.fit(_rows(X, tail), y[tail])
    assert refit.stats_["class_counts"].sum() == 15


def test_mixed_nb_categories_grow_and_keep_their_counts():
    head = np.arange(40)  # 'teal' (row 40) is not among them
    model = genprob.MixedNB(FAMILIES).partial_fit(
        FRAME.iloc[head], Y_MIXED[head], classes=[0, 1, 2]
    )
    assert model.categories_["colour"].tolist() == ["blue", "green", "red"]
    model.partial_fit(FRAME.iloc[40:], Y_MIXED[40:])
    assert model.categories_["colour"].tolist() == ["blue", "green", "red", "teal"]
    counts = model.stats_["emission"]["categorical"]["category_counts"][:, 0, :]
    expected = pd.crosstab(Y_MIXED, FRAME["colour"]).reindex(
        columns=["blue", "green", "red", "teal"], fill_value=0
    )
    np.testing.assert_array_equal(counts, expected.to_numpy())


def test_a_chunk_without_every_class_waits_with_a_warning():
    X, y = X_REAL, Y
    first = np.flatnonzero(y == 0)[:5]
    model = genprob.GaussianNB()
    with pytest.warns(UserWarning, match=r"not estimable yet: classes \[1, 2\] have zero"):
        model.partial_fit(X[first], y[first], classes=[0, 1, 2])
    assert model.stats_["class_counts"].tolist() == [5.0, 0.0, 0.0]
    with pytest.raises(NotFittedError, match="no parameters yet: classes"):
        model.predict(X)
    rest = np.setdiff1d(np.arange(len(y)), first)
    model.partial_fit(X[rest], y[rest])
    _assert_same_fit(model, genprob.GaussianNB().fit(X, y), "GaussianNB")
    # discrete stories are smoothed: a class without rows is already estimable (alpha)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        counts = genprob.MultinomialNB().partial_fit(X_COUNTS[first], y[first], classes=[0, 1, 2])
    np.testing.assert_allclose(counts.feature_log_prob_[1], np.log(np.full(4, 0.25)))
    assert counts.class_count_.tolist() == [5.0, 0.0, 0.0]


def test_partial_fit_errors_are_clear():
    X, y = X_REAL, Y
    with pytest.raises(ValueError, match="classes must be passed on the first call"):
        genprob.GaussianNB().partial_fit(X, y)
    model = genprob.GaussianNB().partial_fit(X, y, classes=[0, 1, 2])
    with pytest.raises(ValueError, match="differs from the classes of the first partial_fit"):
        model.partial_fit(X, y, classes=[0, 1])
    with pytest.raises(ValueError, match=r"labels \[7\] that are not in classes \[0, 1, 2\]"):
        model.partial_fit(X[:3], np.array([0, 7, 1]))
    with pytest.raises(ValueError, match=r"unlabeled rows \(-1\): partial_fit adds labeled"):
        model.partial_fit(X[:3], np.array([0, -1, 1]))
    with pytest.raises(ValueError, match="X has 3 features, but GaussianNB is expecting 4"):
        model.partial_fit(X[:, :3], y)
    with pytest.raises(ValueError, match="classes contains duplicates"):
        genprob.GaussianNB().partial_fit(X, y, classes=[0, 1, 1, 2])
    with pytest.raises(ValueError, match="The number of classes has to be greater than one"):
        genprob.QuadraticDiscriminantAnalysis().partial_fit(X, y, classes=[0])
    # a failed call leaves the running statistics untouched
    np.testing.assert_array_equal(model.stats_["class_counts"], [15, 15, 15])


@pytest.mark.parametrize(
    ("estimator", "message"),
    [
        (genprob.LinearDiscriminantAnalysis(solver="lsqr", shrinkage="auto"), "shrinkage='auto'"),
        (
            genprob.QuadraticDiscriminantAnalysis(solver="eigen", shrinkage="auto"),
            "shrinkage='auto'",
        ),
        (
            genprob.LinearDiscriminantAnalysis(solver="lsqr", covariance_estimator=LedoitWolf()),
            "not available with covariance_estimator",
        ),
        (
            genprob.QuadraticDiscriminantAnalysis(
                solver="eigen", covariance_estimator=LedoitWolf()
            ),
            "not available with covariance_estimator",
        ),
    ],
    ids=["LDA-auto", "QDA-auto", "LDA-estimator", "QDA-estimator"],
)
def test_partial_fit_refuses_statistics_that_do_not_add_up(estimator, message):
    with pytest.raises(ValueError, match=message):
        clone(estimator).partial_fit(X_REAL, Y, classes=[0, 1, 2])
    # fit keeps working, and partial_fit after it refuses as well
    fitted = clone(estimator).fit(X_REAL, Y)
    with pytest.raises(ValueError, match=message):
        fitted.partial_fit(X_REAL, Y)


class _NoClosedForm(Story):
    """A story with only a prior and an emission (fitted by the optimizer)."""

    def prior(self, num_classes, num_features):
        return BernoulliStory().prior(num_classes, num_features)

    def emission(self, params):
        return BernoulliStory().emission(params)


def test_partial_fit_needs_a_closed_form():
    with pytest.raises(ValueError, match="no closed form .*partial_fit needs"):
        genprob.GenerativeClassifier(_NoClosedForm()).partial_fit(X_BINARY, Y, classes=[0, 1, 2])


def test_changing_hyperparameters_between_chunks_is_an_error():
    model = genprob.LinearDiscriminantAnalysis(solver="lsqr").partial_fit(
        X_REAL[:20], Y[:20], classes=[0, 1, 2]
    )
    model.set_params(priors=[0.2, 0.3, 0.5])  # now the class scatters are needed too
    with pytest.raises(ValueError, match="hyperparameters changed between partial_fit calls"):
        model.partial_fit(X_REAL[20:], Y[20:])


# -- sample weights are repetitions ----------------------------------------------------------------
@pytest.mark.parametrize("name", list(CASES))
def test_integer_sample_weights_equal_repeated_rows(name):
    estimator, X, y = CASES[name]
    rng = np.random.default_rng(2)
    weights = rng.integers(0, 4, len(y))
    weights[_first_rows(y)] = 2  # every class keeps rows
    weights[40] = 1  # and MixedNB's 'teal' row: both fits know the same categories
    if name == "QDA":
        weights = np.maximum(weights, 1)  # unregularized QDA needs a regular covariance
    repeated = np.repeat(np.arange(len(y)), weights)
    if name == "CategoricalNB":
        # a code seen only in zero-weight rows still gets its (smoothed) table cell
        estimator = clone(estimator).set_params(min_categories=int(X.max()) + 1)
    weighted = clone(estimator).fit(X, y, sample_weight=weights)
    reference = clone(estimator).fit(_rows(X, repeated), y[repeated])
    # the multinomial story's sampling length is the mean length of the rows as given (it only
    # matters to sample()), so the stories differ there and only there
    same_story = name not in ("MultinomialNB", "MixedNB")
    _assert_same_fit(weighted, reference, name, same_story=same_story)
    np.testing.assert_allclose(
        weighted.predict_proba(X), reference.predict_proba(X), rtol=1e-9, atol=1e-12
    )
    if hasattr(weighted, "transform") and name != "LDA-lsqr-shrinkage":
        np.testing.assert_allclose(
            np.abs(weighted.transform(X)), np.abs(reference.transform(X)), rtol=1e-8, atol=1e-10
        )


def test_zero_total_weight_is_an_error_and_a_zero_weight_class_keeps_prior_0():
    with pytest.raises(ValueError, match="every sample_weight is zero"):
        genprob.GaussianNB().fit(X_REAL, Y, sample_weight=np.zeros(len(Y)))
    model = genprob.MultinomialNB().fit(X_COUNTS, Y, sample_weight=(Y == 2).astype(float))
    assert model.class_count_.tolist() == [0.0, 0.0, 15.0]
    np.testing.assert_array_equal(model.predict_proba(X_COUNTS)[:, :2], 0.0)
    with pytest.raises(ValueError, match="sample_weight has shape"):
        genprob.GaussianNB().fit(X_REAL, Y, sample_weight=np.ones(3))
    with pytest.raises(ValueError, match="finite and non-negative"):
        genprob.GaussianNB().fit(X_REAL, Y, sample_weight=-np.ones(len(Y)))


# -- the functional core --------------------------------------------------------------------------
@pytest.mark.parametrize(
    "story",
    [
        GaussianStory(covariance="diag", shared=False, var_smoothing=1e-9),
        GaussianStory(covariance="diag", shared=True),
        GaussianStory(covariance="full", shared=True, rank_tol=1e-4),
        GaussianStory(covariance="full", shared=False, reg_param=0.1),
        GaussianStory(covariance="full", shared=True, covariance_weights=(0.2, 0.3, 0.5)),
        GaussianStory(covariance="full", shared=True, estimator="unbiased"),
    ],
    ids=["nb", "shared-diag", "lda", "qda", "weighted", "unbiased"],
)
def test_combined_gaussian_statistics_are_those_of_the_union(story):
    rng = np.random.default_rng(3)
    # offsets far larger than the spreads: the re-centring must keep the digits
    X = rng.normal(size=(60, 3)) * [1.0, 10.0, 0.01] + [1e4, -5.0, 3.0]
    y = rng.integers(0, 3, 60)
    with jax.enable_x64(True):
        X, R = jnp.asarray(X), core.one_hot_responsibilities(y, 3)
        whole = core.sufficient_statistics(story, X, R)
        first = core.sufficient_statistics(story, X[:17], R[:17])
        second = core.sufficient_statistics(story, X[17:], R[17:])
        combined = core.combine_statistics(story, first, second)
        expected, actual = core.maximize(story, whole), core.maximize(story, combined)
        for key, value in expected.items():
            np.testing.assert_allclose(actual[key], value, rtol=1e-10, atol=1e-12, err_msg=key)
        # moments about the new reference point are the union's moments about it
        shift = combined["emission"]["shift"]
        recentred = story._recenter(whole["emission"], shift)
        np.testing.assert_allclose(combined["emission"]["sums"], recentred["sums"], atol=1e-9)


def test_default_combination_is_a_sum_and_auto_shrinkage_refuses():
    with jax.enable_x64(True):
        story = BernoulliStory()
        a = {"counts": jnp.array([1.0, 2.0]), "feature_counts": jnp.ones((2, 3))}
        combined = story.combine_statistics(a, a)
        np.testing.assert_array_equal(combined["feature_counts"], 2 * np.ones((2, 3)))
        auto = GaussianStory(covariance="full", shared=False, shrinkage="auto")
        X, R = jnp.asarray(X_REAL), core.one_hot_responsibilities(Y, 3)
        stats = core.sufficient_statistics(auto, X, R)
        with pytest.raises(ValueError, match="not additive over data chunks"):
            core.combine_statistics(auto, stats, stats)


@pytest.mark.parametrize("name", ["LDA-svd", "MixedNB"])
def test_a_saved_model_keeps_its_statistics_and_learns_on(name, tmp_path):
    estimator, X, y = CASES[name]
    head, tail = np.arange(30), np.arange(30, 45)
    model = clone(estimator).partial_fit(_rows(X, head), y[head], classes=[0, 1, 2])
    loaded = genprob.load(model.save(tmp_path / "model"))
    loaded.partial_fit(_rows(X, tail), y[tail])
    _assert_same_fit(loaded, clone(estimator).fit(X, y), name)


@pytest.mark.parametrize("name", ["BernoulliNB", "MultinomialNB"])
def test_sparse_chunks(name):
    estimator, X, y = CASES[name]
    sparse = scipy.sparse.csr_matrix(X)
    model = _chunked_fit(estimator, sparse, y, [7, 30])
    _assert_same_fit(model, clone(estimator).fit(X, y), name)


def test_an_estimator_without_a_story_says_which_hook_it_lacks():
    """The base builds a fit's story from ``_partial_fit_story`` and a chunk's from
    ``_make_story``: a subclass that defines neither is told, not sent into a recursion."""
    from genprob.estimators._base import GenerativeClassifierBase

    class Storyless(genprob.GaussianNB):  # GaussianNB's parameters, the base's hooks
        _make_story = GenerativeClassifierBase._make_story
        _partial_fit_story = GenerativeClassifierBase._partial_fit_story

    X, y = load_iris()
    with pytest.raises(NotImplementedError, match="Storyless must define _make_story"):
        Storyless().fit(X, y)
    with pytest.raises(NotImplementedError, match="Storyless must define _make_story"):
        Storyless().partial_fit(X, y, classes=np.unique(y))
