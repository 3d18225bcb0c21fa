"""scikit-learn conformance: the estimator checks, meta-estimators, clone and DataFrames.

Every genprob estimator runs scikit-learn 1.9's own ``parametrize_with_checks``. Checks that do
not apply are listed in :func:`expected_failed_checks` with the reason, run as strict xfails (a
check that starts passing fails the suite), and what they would have covered is tested here on
data the estimator accepts.
"""

import warnings

import numpy as np
import pandas as pd
import pytest
from sklearn.base import clone
from sklearn.exceptions import NotFittedError
from sklearn.model_selection import GridSearchCV, StratifiedKFold, cross_val_score
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.utils import estimator_checks
from sklearn.utils.estimator_checks import parametrize_with_checks

import genprob
from genprob.datasets import load_iris
from genprob.families.gaussian import GaussianStory


def _any_story_estimator():
    return genprob.GenerativeClassifier(
        GaussianStory(covariance="diag", shared=False, var_smoothing=1e-9)
    )


ESTIMATORS = [
    genprob.GaussianNB(),
    genprob.LinearDiscriminantAnalysis(),
    genprob.QuadraticDiscriminantAnalysis(),
    genprob.BernoulliNB(),
    genprob.MultinomialNB(),
    genprob.CategoricalNB(),
    genprob.PoissonNB(),
    genprob.MixedNB(),  # families=None: every column Gaussian
    _any_story_estimator(),
    genprob.MixtureDiscriminantAnalysis(structure=["EII", "VVI", "EEE"]),
]

# -- checks that do not apply, and why ------------------------------------------------------------
#: Unlabeled rows are marked y = -1 (issue 5, scikit-learn's semi-supervised convention). The
#: check's last label set is {-1, 1}: genprob reads it as one class plus unlabeled rows and
#: refuses to fit a single class. scikit-learn exempts its own semi-supervised classifiers from
#: these labels; the check's other label sets (strings, objects) run in
#: ``test_classes_of_any_label_type``.
SEMI_SUPERVISED_LABELS = "y = -1 marks unlabeled rows (semi-supervised convention)"
#: ``max_iter`` bounds EM, which runs only when y has unlabeled rows; a fully labeled fit is the
#: closed form, with no iterations and no ``n_iter_`` (scikit-learn exempts SelfTrainingClassifier
#: for the same reason). EM fits set ``n_iter_ >= 1``: tests/test_estimator_em_params.py.
NO_ITERATIONS = "max_iter bounds EM only; a fully labeled fit is closed form (no n_iter_)"
#: The check fits unregularized QDA on classes whose covariances are singular (3 rows for 30
#: features, or collinear rows); QDA refuses them by design with an error naming ``reg_param``.
#: The same checks run on QDA(reg_param=0.1) in ``test_qda_sample_weight_checks_regularized``.
SINGULAR_QDA = "singular class covariances: unregularized QDA refuses them by design"
#: The check feeds uniform floats without applying the ``categorical`` input tag; these
#: estimators take non-negative integer codes/counts and reject anything else (documented).
#: Weights = repetitions is tested on integer data in tests/test_partial_fit.py.
NON_INTEGER_DATA = "feeds non-integer X, outside the integer-coded input this estimator takes"


def expected_failed_checks(estimator):
    """Checks that do not apply to ``estimator``: name -> reason (see the comments above)."""
    failed = {
        "check_classifiers_classes": SEMI_SUPERVISED_LABELS,
        "check_non_transformer_estimators_n_iter": NO_ITERATIONS,
    }
    if isinstance(estimator, genprob.LinearDiscriminantAnalysis):
        failed["check_transformer_n_iter"] = NO_ITERATIONS
    if isinstance(estimator, genprob.QuadraticDiscriminantAnalysis) and not estimator.reg_param:
        for name in (
            "check_sample_weights_shape",
            "check_sample_weights_not_overwritten",
            "check_sample_weight_equivalence_on_dense_data",
        ):
            failed[name] = SINGULAR_QDA
    if isinstance(estimator, genprob.CategoricalNB | genprob.PoissonNB):
        failed["check_sample_weight_equivalence_on_dense_data"] = NON_INTEGER_DATA
        # a zero-weight class now stays (as in scikit-learn), so the refusal of the floats shows
        failed["check_classifiers_one_label_sample_weights"] = NON_INTEGER_DATA
    return failed


@parametrize_with_checks(
    ESTIMATORS, expected_failed_checks=expected_failed_checks, xfail_strict=True
)
def test_sklearn_estimator_checks(estimator, check):
    with warnings.catch_warnings():
        # jax warns about the float64 -> float32 truncation in the float32 checks
        warnings.filterwarnings("ignore", message=".*Explicitly requested dtype.*")
        check(estimator)


@pytest.mark.parametrize(
    "check",
    [
        estimator_checks.check_sample_weights_shape,
        estimator_checks.check_sample_weights_not_overwritten,
        estimator_checks.check_sample_weight_equivalence_on_dense_data,
    ],
    ids=lambda check: check.__name__,
)
def test_qda_sample_weight_checks_regularized(check):
    estimator = genprob.QuadraticDiscriminantAnalysis(reg_param=0.1)
    assert "check_sample_weights_shape" not in expected_failed_checks(estimator)
    check("QuadraticDiscriminantAnalysis", estimator)


def test_singular_qda_data_is_refused_with_a_clear_error():
    # the data of check_sample_weights_shape: class 1 lies on a line
    X = np.array([[1, 3], [2, 1], [3, 3], [4, 1]] * 4, dtype=float)
    y = np.array([1, 2, 1, 2] * 4)
    with pytest.raises(ValueError, match="class 1 is not full rank.*reg_param"):
        genprob.QuadraticDiscriminantAnalysis().fit(X, y)


def _tag_enforced(estimator, X):
    """X transformed the way scikit-learn's checks honour the input tags."""
    tags = estimator.__sklearn_tags__()
    if tags.input_tags.positive_only:
        X = X - X.min()
    if tags.input_tags.categorical:
        X = np.round(X).astype(np.int32)
    return X


@pytest.mark.parametrize("estimator", ESTIMATORS, ids=lambda e: type(e).__name__)
def test_classes_of_any_label_type(estimator):
    """check_classifiers_classes without its {-1, 1} labels, plus other numeric label sets."""
    X, y = load_iris()
    X = _tag_enforced(estimator, StandardScaler().fit_transform(X))
    binary = y != 2
    names = np.array(["one", "two", "three"])
    for X_, y_ in [(X[binary], y[binary]), (X, y)]:
        for labels in [names[y_], names[y_].astype(object), -(y_ + 2), y_ + 10]:
            estimator_checks.check_classifiers_predictions(
                X_, labels, type(estimator).__name__, estimator
            )
    # a -1 next to a single other label is refused with an explanation, not fitted as 1 class
    with pytest.raises(ValueError, match="if -1 is a real class, pass unlabeled_label=None"):
        clone(estimator).fit(X[binary], np.where(y[binary] == 0, -1, 1))


# -- meta-estimators ------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def iris():
    return load_iris()


@pytest.mark.parametrize(
    "estimator",
    [
        genprob.GaussianNB(),
        genprob.LinearDiscriminantAnalysis(),
        genprob.QuadraticDiscriminantAnalysis(),
        genprob.MixedNB(),
        _any_story_estimator(),
    ],
    ids=lambda e: type(e).__name__,
)
def test_gaussian_estimators_in_a_pipeline_with_standard_scaler(iris, estimator):
    X, y = iris
    pipeline = make_pipeline(StandardScaler(), estimator).fit(X, y)
    scaled = StandardScaler().fit_transform(X)
    direct = clone(estimator).fit(scaled, y)
    np.testing.assert_allclose(pipeline.predict_proba(X), direct.predict_proba(scaled), atol=1e-12)
    assert pipeline.score(X, y) > 0.9


@pytest.mark.parametrize(
    ("estimator", "grid"),
    [
        (genprob.GaussianNB(), {"var_smoothing": [1e-9, 1e-1, 1.0]}),
        (genprob.QuadraticDiscriminantAnalysis(), {"reg_param": [0.0, 0.5, 0.99]}),
        (genprob.MultinomialNB(), {"alpha": [0.01, 1.0, 100.0]}),
    ],
    ids=lambda v: type(v).__name__ if hasattr(v, "fit") else "",
)
def test_grid_search_over_smoothing(iris, estimator, grid):
    X, y = iris
    cv = StratifiedKFold(3, shuffle=True, random_state=0)
    search = GridSearchCV(estimator, grid, cv=cv).fit(X, y)
    name = next(iter(grid))
    # the search's scores are the cross-validated accuracies, recomputed by hand
    for value, score in zip(
        search.cv_results_[f"param_{name}"], search.cv_results_["mean_test_score"], strict=True
    ):
        manual = cross_val_score(clone(estimator).set_params(**{name: value}), X, y, cv=cv)
        assert score == pytest.approx(manual.mean(), abs=1e-12)
    assert search.best_estimator_.get_params()[name] == search.best_params_[name]
    # heavy smoothing flattens the classes: it must not win on iris
    assert search.best_params_[name] != grid[name][-1]


def test_cross_val_score_agrees_with_scikit_learn(iris):
    from sklearn.discriminant_analysis import LinearDiscriminantAnalysis

    X, y = iris
    cv = StratifiedKFold(5, shuffle=True, random_state=0)
    ours = cross_val_score(genprob.LinearDiscriminantAnalysis(), X, y, cv=cv)
    theirs = cross_val_score(LinearDiscriminantAnalysis(), X, y, cv=cv)
    np.testing.assert_array_equal(ours, theirs)
    assert ours.mean() > 0.95


def test_clone_carries_a_story_and_every_parameter():
    story = GaussianStory(covariance="full", shared=True, shrinkage=0.2)
    estimator = genprob.GenerativeClassifier(story, max_iter=7, unlabeled_weight=0.3)
    copy = clone(estimator)
    assert copy.story == story and hash(copy.story) == hash(story)
    assert copy.get_params() == estimator.get_params()
    assert not hasattr(copy, "params_")
    X, y = load_iris()
    fitted = copy.fit(X, y)
    assert fitted.story_ == story
    # a clone of a fitted estimator is unfitted with equal parameters
    again = clone(fitted)
    assert again.get_params() == estimator.get_params() and not hasattr(again, "stats_")
    with pytest.raises(NotFittedError):
        again.predict(X)


# -- pandas ---------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "estimator",
    [
        genprob.GaussianNB(),
        genprob.LinearDiscriminantAnalysis(),
        genprob.QuadraticDiscriminantAnalysis(),
        genprob.PoissonNB(),
        genprob.MultinomialNB(),
        genprob.MixedNB({"a": "gaussian", "b": "poisson", "c": "categorical", "d": "gaussian"}),
    ],
    ids=lambda e: type(e).__name__,
)
def test_dataframes_keep_feature_names(iris, estimator):
    X, y = iris
    counts = isinstance(estimator, genprob.PoissonNB | genprob.MultinomialNB | genprob.MixedNB)
    frame = pd.DataFrame(np.round(X).astype(int) if counts else X, columns=["a", "b", "c", "d"])
    fitted = estimator.fit(frame, y)
    np.testing.assert_array_equal(fitted.feature_names_in_, ["a", "b", "c", "d"])
    assert fitted.n_features_in_ == 4
    expected = fitted.predict_proba(frame)
    # an array has no names: scikit-learn's warning, same predictions
    with pytest.warns(UserWarning, match="does not have valid feature names"):
        np.testing.assert_allclose(fitted.predict_proba(frame.to_numpy()), expected)
    renamed = frame.rename(columns={"d": "z"})
    if isinstance(fitted, genprob.MixedNB):
        # MixedNB addresses columns by name: a missing one is named in the error
        with pytest.raises(ValueError, match=r"lacks the columns \['d'\]"):
            fitted.predict(renamed)
        # and reordered columns are put back in fit order
        np.testing.assert_allclose(fitted.predict_proba(frame[["d", "c", "b", "a"]]), expected)
    else:
        with pytest.raises(ValueError, match="feature names should match"):
            fitted.predict(renamed)


def test_mixed_nb_refuses_complex_features_with_real_labels():
    # scikit-learn's check_complex_data makes y complex too, which validate_data catches first
    X = np.arange(20.0).reshape(10, 2) * (1 + 1j)
    with pytest.raises(ValueError, match="Complex data not supported: column 0"):
        genprob.MixedNB().fit(X, np.arange(10) % 2)


@pytest.mark.parametrize("estimator", ESTIMATORS, ids=lambda e: type(e).__name__)
def test_parameters_are_validated_the_scikit_learn_way(estimator):
    """Every constructor parameter has a constraint, and a value of no valid type, or outside a
    valid range, is refused at fit with scikit-learn's InvalidParameterError message."""
    estimator_checks.check_param_validation(type(estimator).__name__, estimator)
    assert set(estimator._parameter_constraints) == set(estimator.get_params(deep=False))
