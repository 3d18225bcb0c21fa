"""Drop-in replacement for scikit-learn 1.9.1: code that runs with scikit-learn runs with genprob.

Every case runs scikit-learn on the same input in the same test: the same ``classes_``,
predictions, class posteriors (within 1e-8), exception types, and scikit-learn's own message
(taken from the exception scikit-learn raises here, not written down) matched by genprob's.
"""

import re
import warnings

import numpy as np
import pytest
import sklearn.discriminant_analysis as skda
import sklearn.naive_bayes as sknb
from sklearn.covariance import LedoitWolf, ledoit_wolf

import genprob

PROBA_ATOL = 1e-8

RNG = np.random.default_rng(20)
Y3 = np.repeat([0, 1, 2], 20)
X_REAL = RNG.normal(size=(60, 4)) + Y3[:, None] * np.array([1.0, -0.5, 0.3, 0.0])
X_COUNTS = RNG.poisson(lam=2.0 + Y3[:, None] * np.array([1.0, 0.0, 2.0, 0.5]), size=(60, 4))
X_BINARY = (X_COUNTS > 2).astype(float)
X_CODES = np.minimum(X_COUNTS, 4)

#: (genprob estimator, scikit-learn estimator, features) for every naive Bayes pair.
NB_PAIRS = {
    "GaussianNB": (genprob.GaussianNB, sknb.GaussianNB, X_REAL),
    "BernoulliNB": (genprob.BernoulliNB, sknb.BernoulliNB, X_BINARY),
    "MultinomialNB": (genprob.MultinomialNB, sknb.MultinomialNB, X_COUNTS),
    "CategoricalNB": (genprob.CategoricalNB, sknb.CategoricalNB, X_CODES),
}


def _assert_same_predictions(ours, theirs, X):
    np.testing.assert_array_equal(ours.classes_, theirs.classes_)
    np.testing.assert_array_equal(ours.predict(X), theirs.predict(X))
    proba = ours.predict_proba(X)
    assert not np.isnan(proba).any()
    assert not np.isnan(ours.predict_log_proba(X)).any()
    np.testing.assert_allclose(proba, theirs.predict_proba(X), rtol=0, atol=PROBA_ATOL)


def _sklearn_error(call):
    """The exception type and message scikit-learn raises for ``call``."""
    with pytest.raises(Exception) as info:  # noqa: PT011 -- any type: it is the reference
        call()
    return info.type, str(info.value)


def _assert_same_error(sklearn_call, genprob_call):
    kind, message = _sklearn_error(sklearn_call)
    with pytest.raises(kind, match=re.escape(message)):
        genprob_call()
    return message


# -- a single class -------------------------------------------------------------------------------
@pytest.mark.parametrize("name", list(NB_PAIRS))
def test_naive_bayes_fits_a_single_class(name):
    ours, theirs, X = NB_PAIRS[name]
    y = np.full(X.shape[0], "only")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # scikit-learn's log(0) of empty stats
        reference = theirs().fit(X, y)
    model = ours().fit(X, y)
    _assert_same_predictions(model, reference, X)
    assert model.predict_proba(X).tolist() == [[1.0]] * X.shape[0]
    assert model.class_count_.tolist() == [float(X.shape[0])]


@pytest.mark.parametrize("name", list(NB_PAIRS))
def test_naive_bayes_partial_fit_with_one_class(name):
    ours, theirs, X = NB_PAIRS[name]
    y = np.full(X.shape[0], 7)
    reference = theirs().partial_fit(X[:30], y[:30], classes=[7]).partial_fit(X[30:], y[30:])
    model = ours().partial_fit(X[:30], y[:30], classes=[7]).partial_fit(X[30:], y[30:])
    _assert_same_predictions(model, reference, X)


def test_mixed_nb_and_generative_classifier_fit_a_single_class():
    y = np.zeros(60, dtype=int)
    mixed = genprob.MixedNB({0: "gaussian", 1: "gaussian", 2: "poisson", 3: "poisson"})
    X = np.column_stack([X_REAL[:, :2], X_COUNTS[:, 2:]]).astype(float)
    assert mixed.fit(X, y).predict_proba(X).tolist() == [[1.0]] * 60
    assert mixed.classes_.tolist() == [0]
    story = genprob.GaussianNB().fit(X_REAL, Y3).story_
    generic = genprob.GenerativeClassifier(story).fit(X_REAL, y)
    assert generic.predict_proba(X_REAL).tolist() == [[1.0]] * 60
    assert generic.predict(X_REAL).tolist() == [0] * 60


@pytest.mark.parametrize(
    ("ours", "theirs"),
    [
        (genprob.QuadraticDiscriminantAnalysis, skda.QuadraticDiscriminantAnalysis),
        (genprob.LinearDiscriminantAnalysis, skda.QuadraticDiscriminantAnalysis),
    ],
)
def test_discriminant_analysis_refuses_a_single_class(ours, theirs):
    # scikit-learn 1.9.1's LDA fits one class into a degenerate model (NaN in
    # explained_variance_ratio_); genprob's LDA refuses it as QDA does, with QDA's message
    y = np.zeros(60, dtype=int)
    _assert_same_error(lambda: theirs().fit(X_REAL, y), lambda: ours().fit(X_REAL, y))
    with pytest.raises(ValueError, match="The number of classes has to be greater than one"):
        ours().partial_fit(X_REAL, y, classes=[0])


# -- zero-weight classes --------------------------------------------------------------------------
def test_gaussian_nb_zero_weight_regression_gh_24140():
    # scikit-learn's regression test: every row of class 0 has zero weight
    X, y = X_REAL[:40], Y3[:40]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # scikit-learn's log(0) prior
        reference = sknb.GaussianNB().fit(X, y, sample_weight=(y == 1))
        model = genprob.GaussianNB().fit(X, y, sample_weight=(y == 1))
        _assert_same_predictions(model, reference, X)
    np.testing.assert_array_equal(model.class_count_, reference.class_count_)
    np.testing.assert_array_equal(model.class_prior_, [0.0, 1.0])
    np.testing.assert_array_equal(model.theta_[0], reference.theta_[0])


@pytest.mark.parametrize("name", list(NB_PAIRS))
@pytest.mark.parametrize("fit_prior", [True, False])
def test_a_zero_weight_class_stays_with_prior_zero(name, fit_prior):
    ours, theirs, X = NB_PAIRS[name]
    weight = (Y3 != 1).astype(float) * (1.0 + (np.arange(60) % 3))
    options = {} if name == "GaussianNB" else {"fit_prior": fit_prior}
    if name == "GaussianNB" and not fit_prior:
        options = {"priors": [0.3, 0.3, 0.4]}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        reference = theirs(**options).fit(X, Y3, sample_weight=weight)
        model = ours(**options).fit(X, Y3, sample_weight=weight)
        _assert_same_predictions(model, reference, X)
    np.testing.assert_allclose(model.class_count_, reference.class_count_, rtol=1e-12)
    assert model.class_count_[1] == 0
    if fit_prior:
        assert model.predict_proba(X)[:, 1].max() == 0.0


# -- covariance estimators ------------------------------------------------------------------------
class StandardizedLedoitWolf:
    """A covariance estimator with ``fit`` and ``covariance_`` only (no ``get_params``)."""

    def fit(self, X):
        scale = X.std(axis=0)
        self.covariance_ = ledoit_wolf(X / scale)[0] * np.outer(scale, scale)
        self.calls = getattr(self, "calls", 0) + 1
        return self


COVARIANCE_CASES = [
    (genprob.LinearDiscriminantAnalysis, skda.LinearDiscriminantAnalysis, "lsqr"),
    (genprob.LinearDiscriminantAnalysis, skda.LinearDiscriminantAnalysis, "eigen"),
    (genprob.QuadraticDiscriminantAnalysis, skda.QuadraticDiscriminantAnalysis, "eigen"),
]


@pytest.mark.parametrize(("ours", "theirs", "solver"), COVARIANCE_CASES)
def test_a_covariance_estimator_without_get_params(ours, theirs, solver):
    reference = theirs(solver=solver, covariance_estimator=StandardizedLedoitWolf())
    reference.fit(X_REAL, Y3)
    plain = StandardizedLedoitWolf()
    model = ours(solver=solver, covariance_estimator=plain).fit(X_REAL, Y3)
    _assert_same_predictions(model, reference, X_REAL)
    # not cloneable: the object itself is fitted, once per class and once on all rows
    assert plain.calls == 4


@pytest.mark.parametrize(("ours", "theirs", "solver"), COVARIANCE_CASES)
def test_a_cloneable_covariance_estimator_is_copied(ours, theirs, solver):
    reference = theirs(solver=solver, covariance_estimator=LedoitWolf()).fit(X_REAL, Y3)
    given = LedoitWolf()
    model = ours(solver=solver, covariance_estimator=given).fit(X_REAL, Y3)
    _assert_same_predictions(model, reference, X_REAL)
    assert not hasattr(given, "covariance_")


# -- exception types and messages -----------------------------------------------------------------
def test_qda_singular_covariance_is_a_linalg_error():
    for solver, X, y in [
        ("svd", RNG.normal(size=(8, 5)), np.repeat([0, 1], 4)),  # n_k <= p
        ("svd", np.column_stack([X_REAL, X_REAL[:, 0]]), Y3),  # collinear features
    ]:
        message = _assert_same_error(
            lambda s=solver, X=X, y=y: skda.QuadraticDiscriminantAnalysis(solver=s).fit(X, y),
            lambda s=solver, X=X, y=y: genprob.QuadraticDiscriminantAnalysis(solver=s).fit(X, y),
        )
        assert "is not full rank" in message
        # still a ValueError for code that catches that
        assert issubclass(np.linalg.LinAlgError, ValueError)


@pytest.mark.parametrize(
    "priors", [[-0.5, 1.0, 0.5], [0.5, 0.5], [0.5, 0.3, 0.3]], ids=["negative", "count", "sum"]
)
def test_gaussian_nb_prior_messages(priors):
    _assert_same_error(
        lambda: sknb.GaussianNB(priors=priors).fit(X_REAL, Y3),
        lambda: genprob.GaussianNB(priors=priors).fit(X_REAL, Y3),
    )


def test_discrete_nb_prior_count_message():
    _assert_same_error(
        lambda: sknb.MultinomialNB(class_prior=[0.5, 0.5]).fit(X_COUNTS, Y3),
        lambda: genprob.MultinomialNB(class_prior=[0.5, 0.5]).fit(X_COUNTS, Y3),
    )


@pytest.mark.parametrize("name", ["GaussianNB", "MultinomialNB"])
def test_partial_fit_class_messages(name):
    ours, theirs, X = NB_PAIRS[name]
    reference = theirs().partial_fit(X, Y3, classes=[0, 1, 2])
    model = ours().partial_fit(X, Y3, classes=[0, 1, 2])
    _assert_same_error(
        lambda: reference.partial_fit(X, Y3, classes=[0, 1]),
        lambda: model.partial_fit(X, Y3, classes=[0, 1]),
    )
    if name == "GaussianNB":  # MultinomialNB's message is scikit-learn's label_binarize one
        _assert_same_error(
            lambda: reference.partial_fit(X[:3], np.array([0, 7, 1])),
            lambda: model.partial_fit(X[:3], np.array([0, 7, 1])),
        )


def test_categorical_nb_messages():
    negative = X_CODES.copy()
    negative[3, 1] = -1
    _assert_same_error(
        lambda: sknb.CategoricalNB().fit(negative, Y3),
        lambda: genprob.CategoricalNB().fit(negative, Y3),
    )
    _assert_same_error(
        lambda: sknb.CategoricalNB(min_categories=[[5, 5, 5, 5]]).fit(X_CODES, Y3),
        lambda: genprob.CategoricalNB(min_categories=[[5, 5, 5, 5]]).fit(X_CODES, Y3),
    )


def test_multinomial_nb_negative_counts_message():
    negative = X_COUNTS.copy()
    negative[0, 0] = -2
    _assert_same_error(
        lambda: sknb.MultinomialNB().fit(negative, Y3),
        lambda: genprob.MultinomialNB().fit(negative, Y3),
    )


@pytest.mark.parametrize("name", ["BernoulliNB", "MultinomialNB", "CategoricalNB"])
def test_alpha_messages(name):
    ours, theirs, X = NB_PAIRS[name]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        reference = theirs(alpha=1e-12, force_alpha=False).fit(X, Y3)
    message = str(next(w.message for w in caught if "alpha" in str(w.message)))
    with pytest.warns(UserWarning, match=re.escape(message)):
        model = ours(alpha=1e-12, force_alpha=False).fit(X, Y3)
    _assert_same_predictions(model, reference, X)
    if name == "MultinomialNB":  # per-feature alpha: scikit-learn's discrete NB except Categorical
        alpha = np.array([1.0, -0.5, 1.0, 1.0])
        _assert_same_error(
            lambda: theirs(alpha=alpha).fit(X, Y3), lambda: ours(alpha=alpha).fit(X, Y3)
        )


# -- NaN and infinity at prediction: the Gaussian estimators check them while scoring --------------
_NONFINITE_PAIRS = [
    (genprob.LinearDiscriminantAnalysis, skda.LinearDiscriminantAnalysis),
    (genprob.QuadraticDiscriminantAnalysis, skda.QuadraticDiscriminantAnalysis),
    (genprob.GaussianNB, sknb.GaussianNB),
]


def _error_of(estimator, method, X):
    try:
        getattr(estimator, method)(X)
    except Exception as error:  # noqa: BLE001 - the type and the wording are compared
        return type(error), str(error)
    return None


@pytest.mark.parametrize(("ours", "theirs"), _NONFINITE_PAIRS)
@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("rows", [40, 70_000])  # one block; several, and GaussianNB's device path
def test_nonfinite_entries_at_prediction_are_refused_as_scikit_learn_does(
    ours, theirs, dtype, rows
):
    """Predictions check NaN and infinity while scoring (one pass over X fewer): every entry
    that is not finite, wherever it sits (a block of huge rows included), is refused with
    scikit-learn's type and wording, never scored."""
    rng = np.random.default_rng(7)
    X = rng.normal(size=(300, 5))
    y = np.arange(300) % 3
    X[y == 1] += 3.0
    kwargs = {} if dtype == "float64" else {"dtype": "float32"}
    mine, reference = ours(**kwargs).fit(X, y), theirs().fit(X, y)
    Z = rng.normal(size=(rows, 5))
    Z[rows // 2] *= 1e300  # a row scaled in its block
    for position, value in [((0, 0), np.nan), ((rows - 1, 4), np.inf), ((rows // 2, 2), -np.inf)]:
        bad = Z.copy()
        bad[position] = value
        bad = bad.astype(dtype) if dtype == "float32" and rows < 100 else bad
        for method in ("predict", "predict_proba", "predict_log_proba"):
            expected = _error_of(reference, method, bad)
            assert expected is not None and expected[0] is ValueError
            assert _error_of(mine, method, bad) == expected, (method, value)
    whole_row = Z.copy()
    whole_row[3] = np.inf
    expected = _error_of(reference, "predict_proba", whole_row)
    assert _error_of(mine, "predict_proba", whole_row) == expected
