"""EM controls as constructor parameters of every estimator (issue 5, item 4).

Every estimator takes ``unlabeled_weight``, ``max_iter``, ``em_tol``, ``n_init`` and
``random_state`` (keyword-only); ``fit(X, y)`` with rows labeled -1 runs EM with them.
"""

import inspect
import warnings

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.exceptions import ConvergenceWarning

import genprob
from genprob.datasets import load_iris
from genprob.families.gaussian import GaussianStory

EM_DEFAULTS = {
    "unlabeled_weight": 1.0,
    "max_iter": 100,
    "em_tol": 1e-12,
    "n_init": 1,
    "random_state": None,
}


def _data(kind):
    """Iris as the estimator's input type: real, binary, or small non-negative integers."""
    X, y = load_iris()
    if kind == "binary":
        X = (X > np.median(X, axis=0)).astype(float)
    elif kind == "counts":
        X = np.round(X).astype(float)
    return X, y


CASES = [
    (genprob.GaussianNB(), "real"),
    (genprob.LinearDiscriminantAnalysis(), "real"),
    (genprob.QuadraticDiscriminantAnalysis(), "real"),
    (genprob.BernoulliNB(), "binary"),
    (genprob.MultinomialNB(), "counts"),
    (genprob.CategoricalNB(), "counts"),
    (genprob.PoissonNB(), "counts"),
    # column 3 (rounded petal width) has labeled rows in every category, so the labeled-only
    # fit knows the same categories as the EM fit
    (genprob.MixedNB({0: "gaussian", 1: "poisson", 2: "gaussian", 3: "categorical"}), "counts"),
    (genprob.GenerativeClassifier(GaussianStory(covariance="diag", shared=False)), "real"),
]
IDS = [type(estimator).__name__ for estimator, _ in CASES]


@pytest.fixture(scope="module")
def partly_labeled():
    """Labels of every fifth row kept (each class keeps 10), the rest marked -1."""
    _, y = load_iris()
    rng = np.random.default_rng(0)
    keep = np.zeros(len(y), dtype=bool)
    for k in range(3):
        keep[rng.choice(np.flatnonzero(y == k), 10, replace=False)] = True
    return np.where(keep, y, -1), keep


def _labeled_only(estimator, em_model):
    """The estimator for a labeled-only fit comparable with ``em_model``."""
    labeled_only = clone(estimator)
    if isinstance(estimator, genprob.CategoricalNB):
        # codes seen only in unlabeled rows still get table cells
        labeled_only.set_params(min_categories=em_model.n_categories_)
    return labeled_only


@pytest.mark.parametrize(("estimator", "kind"), CASES, ids=IDS)
def test_em_controls_are_keyword_only_parameters(estimator, kind):
    signature = inspect.signature(type(estimator).__init__)
    for name, default in EM_DEFAULTS.items():
        parameter = signature.parameters[name]
        assert parameter.kind is inspect.Parameter.KEYWORD_ONLY, name
        assert parameter.default == default, name
        assert estimator.get_params()[name] == default
    names = list(signature.parameters)
    assert names.index("random_state") < names.index("dtype")
    docstring = type(estimator).__doc__
    for name in EM_DEFAULTS:
        assert f"{name}:" in docstring or f"``{name}``" in docstring, name
    # set_params and clone carry them
    changed = {
        "unlabeled_weight": 0.25,
        "max_iter": 7,
        "em_tol": 1e-3,
        "n_init": 3,
        "random_state": 5,
    }
    copy = clone(clone(estimator).set_params(**changed))
    assert {name: copy.get_params()[name] for name in changed} == changed


@pytest.mark.parametrize(("estimator", "kind"), CASES, ids=IDS)
def test_fit_with_unlabeled_rows_runs_em_with_the_controls(estimator, kind, partly_labeled):
    X, y = _data(kind)
    y_partial, keep = partly_labeled
    model = clone(estimator).set_params(max_iter=50, em_tol=1e-10, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model.fit(X, y_partial)
    assert 1 <= model.n_iter_ <= 50
    assert model.log_likelihood_trace_.shape == (model.n_iter_,)
    trace = model.log_likelihood_trace_
    assert np.all(np.isfinite(trace))
    # EM climbs: the objective ends above the labeled-only start (monotonicity, exact for
    # unsmoothed stories, is tested in tests/test_em.py)
    assert trace[-1] > trace[0]
    # 30 labels and 120 unlabeled rows still classify iris well above chance (1/3)
    assert model.score(X, y) > 0.5
    # predict_proba on the unlabeled rows is the final E-step
    np.testing.assert_allclose(
        model.predict_proba(X[~keep]), model.label_distributions_[~keep], rtol=1e-9, atol=1e-12
    )

    # max_iter caps the iterations; hitting it is a ConvergenceWarning naming max_iter
    capped = clone(model).set_params(max_iter=1)
    with pytest.warns(ConvergenceWarning, match="max_iter=1"):
        capped.fit(X, y_partial)
    assert capped.n_iter_ == 1 and not capped.converged_

    # a looser em_tol stops no later
    loose = clone(model).set_params(em_tol=1e-2).fit(X, y_partial)
    assert loose.converged_ and loose.n_iter_ <= model.n_iter_


@pytest.mark.parametrize(("estimator", "kind"), CASES, ids=IDS)
def test_zero_unlabeled_weight_is_the_labeled_only_fit(estimator, kind, partly_labeled):
    X, y = _data(kind)
    y_partial, keep = partly_labeled
    em_model = clone(estimator).set_params(unlabeled_weight=0.0).fit(X, y_partial)
    labeled_only = _labeled_only(estimator, em_model).fit(X[keep], y[keep])
    assert em_model.params_.keys() == labeled_only.params_.keys()
    for name, value in labeled_only.params_.items():
        np.testing.assert_allclose(em_model.params_[name], value, rtol=1e-12, atol=1e-14)
    # the unlabeled rows are still classified: by the final E-step
    np.testing.assert_allclose(
        em_model.label_distributions_[~keep], labeled_only.predict_proba(X[~keep]), atol=1e-12
    )


@pytest.mark.parametrize(("estimator", "kind"), CASES[:2] + CASES[4:5], ids=IDS[:2] + IDS[4:5])
def test_n_init_keeps_the_best_start_and_random_state_makes_it_reproducible(
    estimator, kind, partly_labeled
):
    X, _ = _data(kind)
    y_partial, _ = partly_labeled
    one = clone(estimator).set_params(em_tol=1e-10, max_iter=300).fit(X, y_partial)
    several = clone(one).set_params(n_init=4, random_state=3).fit(X, y_partial)
    # the first start is the labeled-only fit (as with n_init=1); the best of 4 is no worse
    assert several.log_likelihood_trace_[-1] >= one.log_likelihood_trace_[-1] - 1e-9 * abs(
        one.log_likelihood_trace_[-1]
    )
    again = clone(several).fit(X, y_partial)
    for name, value in several.params_.items():
        np.testing.assert_array_equal(again.params_[name], value)


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        ("unlabeled_weight", 1.5, r"unlabeled_weight must lie in \[0, 1\]"),
        ("unlabeled_weight", -0.1, r"unlabeled_weight must lie in \[0, 1\]"),
        ("unlabeled_weight", float("nan"), r"unlabeled_weight must lie in \[0, 1\]"),
        ("unlabeled_weight", "half", r"unlabeled_weight must lie in \[0, 1\]"),
        ("max_iter", 0, "max_iter must be an integer >= 1"),
        ("max_iter", 2.5, "max_iter must be an integer >= 1"),
        ("n_init", 0, "n_init must be an integer >= 1"),
        ("n_init", True, "n_init must be an integer >= 1"),
        ("em_tol", -1e-3, "em_tol must be a finite number >= 0"),
        ("em_tol", float("inf"), "em_tol must be a finite number >= 0"),
        ("random_state", "seed", "cannot be used to seed"),
    ],
)
@pytest.mark.parametrize(("estimator", "kind"), CASES, ids=IDS)
def test_bad_em_controls_are_clear_errors_at_fit(estimator, kind, name, value, message):
    X, y = _data(kind)
    # scikit-learn convention: the constructor stores, fit validates
    bad = clone(estimator).set_params(**{name: value})
    assert bad.get_params()[name] is value
    # validated even when every row is labeled, so a mistake surfaces at once
    with pytest.raises(ValueError, match=message):
        bad.fit(X[::5], y[::5])
    with pytest.raises(ValueError, match=message):
        bad.partial_fit(X[::5], y[::5], classes=[0, 1, 2])


def test_em_controls_cannot_be_passed_by_position():
    with pytest.raises(TypeError):
        genprob.GaussianNB(None, 1e-9)
    # LDA keeps scikit-learn's positional parameters; the EM controls come after them
    lda = genprob.LinearDiscriminantAnalysis("lsqr", 0.1, None, None, False, 1e-3, None)
    assert (lda.solver, lda.shrinkage, lda.tol, lda.em_tol) == ("lsqr", 0.1, 1e-3, 1e-12)
    with pytest.raises(TypeError):
        genprob.LinearDiscriminantAnalysis("svd", None, None, None, False, 1e-4, None, 0.5)
