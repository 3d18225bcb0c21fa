"""The closed-form cross-check: built-in stories pass it, wrong closed forms are caught."""

import importlib

import numpy as np
import pytest
import scipy.sparse

import genprob
from genprob.app import registry
from genprob.families.gaussian import GaussianStory
from genprob.families.poisson import PoissonStory
from genprob.inference.crosscheck import TOLERANCES, crosscheck
from genprob.story import Story

F64 = TOLERANCES["float64"]
#: central pixels of the 8x8 digits (every class uses them)
PIXELS = [19, 20, 21, 27, 28, 29, 35, 36, 37, 43, 44, 45]


def _small(name):
    """Small versions of the bundled data sets, for the default suite."""
    if name in ("iris", "penguins"):
        X, y, _ = registry.load_data(name)
    elif name in ("digits", "digits_binary"):
        X, y, _ = registry.load_data(name)
        X, y = X[:400, PIXELS], y[:400]
    elif name in ("sms_counts", "sms_binary"):
        X, y, _ = registry.load_data(name)
        X, y = X[:800, :30], y[:800]
    else:
        raise KeyError(name)
    return X, y


def _assert_passes(result):
    assert result.passed, str(result)
    for row in result.rows:
        if row.kind == "parameter":
            assert row.rel_diff <= F64["parameters"], row
    assert result.row("objective").rel_diff <= F64["objective"]
    assert result.row("gradient at closed form").rel_diff <= F64["gradient"]
    assert result.optimizer.converged


# -- built-in stories on real data ---------------------------------------------------------------
# Each case compiles its own programs (~10 s): the default suite covers every family once
# (categorical through the mixed story's block, Poisson through the dropped-smoothing test,
# multinomial through MultinomialNB below); every story runs on full real data as a slow test.
DEFAULT_CASES = [
    ("lda", "iris"),
    ("gaussian_nb", "iris"),
    ("bernoulli", "digits_binary"),
    ("mixed", "penguins"),
    pytest.param("qda_reg", "iris", marks=pytest.mark.slow),
    pytest.param("categorical", "digits", marks=pytest.mark.slow),
    pytest.param("multinomial", "sms_counts", marks=pytest.mark.slow),
    pytest.param("poisson", "sms_counts", marks=pytest.mark.slow),
]


@pytest.mark.parametrize("name, data", DEFAULT_CASES)
def test_builtin_story_passes_on_small_real_data(name, data):
    X, y = _small(data)
    story = registry.make_story(name, X)
    result = crosscheck(story, X, y, data_name=data, label=name)
    _assert_passes(result)
    names = {row.quantity for row in result.rows if row.kind == "parameter"}
    assert names == set(result.closed_form)
    if name in ("gaussian_nb", "qda_reg", "bernoulli", "categorical", "multinomial", "poisson"):
        # smoothed/regularized: the check ran on the penalized (MAP) objective
        assert result.optimizer.log_penalty != 0.0


SLOW_CASES = [(name, data) for name, entry in registry.STORIES.items() for data in entry.datasets]


@pytest.mark.slow
@pytest.mark.parametrize("name, data", SLOW_CASES, ids=[f"{n}-{d}" for n, d in SLOW_CASES])
def test_builtin_story_passes_on_full_real_data(name, data):
    X, y, _ = registry.load_data(data)
    result = crosscheck(registry.make_story(name, X), X, y, data_name=data, label=name)
    _assert_passes(result)


def test_every_registry_story_is_checked():
    checked = {name for name, _ in SLOW_CASES}
    assert checked == set(registry.names())
    for entry in registry.STORIES.values():
        assert entry.datasets and all(d in registry.DATASETS for d in entry.datasets)


# -- deliberately wrong closed forms are caught ---------------------------------------------------
class VariancesOverNMinusOne(GaussianStory):
    """Claims the MLE but divides each class's scatter by N_k - 1."""

    def maximize(self, stats):
        params = dict(super().maximize(stats))
        counts = stats["counts"]
        params["variances"] = params["variances"] * (counts / (counts - 1.0))[:, None]
        return params


class SmoothingDropped(PoissonStory):
    """Keeps the Gamma penalty of alpha, beta but returns the unsmoothed rates."""

    def maximize(self, stats):
        return {"rates": stats["feature_sums"] / stats["counts"][:, None]}


def _failed(result):
    return {row.quantity for row in result.failures}


def test_variance_divided_by_n_minus_one_is_caught():
    X, y = _small("iris")
    story = VariancesOverNMinusOne(covariance="diag", shared=False)
    result = crosscheck(story, X, y, data_name="iris")
    assert not result.passed
    assert _failed(result) == {"variances", "objective", "gradient at closed form"}
    # |s n/(n-1) - s| / (s n/(n-1)) = 1/n on iris (n = 50 flowers per class)
    np.testing.assert_allclose(result.row("variances").rel_diff, 1.0 / 50.0, rtol=1e-6)
    objective = result.row("objective")
    assert objective.optimizer > objective.closed_form
    assert "not the maximizer" in objective.note
    assert result.row("gradient at closed form").rel_diff > 1e-3
    assert result.row("means").rel_diff <= F64["parameters"]
    text = str(result)
    assert "FAIL" in text and "not a stationary point" in text


def test_dropped_smoothing_is_caught():
    X, y = _small("digits")
    result = crosscheck(SmoothingDropped(alpha=1.0, beta=1.0), X, y, data_name="digits")
    assert not result.passed
    assert _failed(result) == {"rates", "objective", "gradient at closed form"}
    assert result.row("objective").optimizer > result.row("objective").closed_form
    # an optimizer above the closed form gets no second start: restarts cannot hide a wrong one
    assert result.num_starts == 1 and "best of" not in str(result)
    # the optimizer's answer is the smoothed closed form (S + alpha) / (N + beta)
    sums = np.stack([X[y == k].sum(axis=0) for k in range(10)])
    counts = np.bincount(y, minlength=10)[:, None]
    np.testing.assert_allclose(
        result.optimizer.params["rates"], (sums + 1.0) / (counts + 1.0), rtol=1e-7
    )
    # and the dropped smoothing is what the closed form lacks
    np.testing.assert_allclose(result.closed_form["rates"], sums / counts, rtol=1e-12)


# -- estimators -----------------------------------------------------------------------------------
def test_estimator_crosscheck_fits_a_clone_when_unfitted():
    X, y = _small("iris")
    estimator = genprob.GaussianNB()
    result = estimator.crosscheck(X, y)
    assert not hasattr(estimator, "params_")
    _assert_passes(result)
    assert result.label == "GaussianNB"
    fitted = genprob.GaussianNB().fit(X, y)
    again = fitted.crosscheck(X, y)
    for name, value in fitted.params_.items():
        # the fit sums padded rows (zero weight) in another order: equal to rounding
        np.testing.assert_allclose(again.closed_form[name], value, rtol=1e-12, atol=0)
    _assert_passes(again)


def test_estimator_crosscheck_holds_a_uniform_class_prior_fixed_on_sparse_counts():
    X, y = _small("sms_counts")
    labels = np.array(["ham", "spam"])[y]
    # sparse input, as from CountVectorizer: the optimizer densifies it
    result = genprob.MultinomialNB(fit_prior=False).crosscheck(scipy.sparse.csr_matrix(X), labels)
    _assert_passes(result)
    np.testing.assert_array_equal(result.optimizer.params["class_prior"], [0.5, 0.5])
    np.testing.assert_array_equal(result.closed_form["class_prior"], [0.5, 0.5])


# -- results and errors ---------------------------------------------------------------------------
def test_printout_and_table():
    X, y = _small("iris")
    result = crosscheck(registry.make_story("lda", X), X, y, data_name="iris", label="lda")
    text = str(result)
    for expected in ("lda on iris", "class_prior", "means", "covariance", "objective",
                     "gradient at closed form", "PASSED"):  # fmt: skip
        assert expected in text
    frame = result.to_frame()
    assert list(frame["quantity"]) == [row.quantity for row in result.rows]
    assert frame["passed"].all()


def test_a_stalled_optimizer_gets_a_second_start(monkeypatch):
    module = importlib.import_module(
        "genprob.inference.optimize"
    )  # crosscheck calls it through here
    real = module.fit_optimizer
    seeds = []

    def stalls_on_first_seed(*args, seed, **kwargs):
        seeds.append(seed)
        if seed == 0:  # three iterations from a poor start: far below the maximum
            kwargs.update(max_iter=3, precondition="none")
        return real(*args, seed=seed, **kwargs)

    monkeypatch.setattr(module, "fit_optimizer", stalls_on_first_seed)
    X, y = _small("iris")
    story = GaussianStory(covariance="diag", shared=False)
    assert not crosscheck(story, X, y, starts=1).passed  # one start: the stall is reported
    seeds.clear()
    result = crosscheck(story, X, y, data_name="iris")
    assert seeds == [0, 1] and result.num_starts == 2
    assert result.passed and "best of 2" in str(result)


class NoClosedForm(Story):
    pass


def test_crosscheck_errors():
    X, y = _small("iris")
    with pytest.raises(ValueError, match="no closed form"):
        crosscheck(NoClosedForm(), X, y)
    y_partial = y.copy()
    y_partial[0] = -1
    with pytest.raises(ValueError, match="unlabeled"):
        crosscheck(GaussianStory(), X, y_partial)
    with pytest.raises(ValueError, match="unknown tolerance"):
        crosscheck(GaussianStory(), X, y, tolerances={"params": 1.0})
    with pytest.raises(ValueError, match="-1"):
        genprob.GaussianNB().fit(X, y).crosscheck(X, y_partial)
    fitted = genprob.GaussianNB().fit(X, y)
    with pytest.raises(ValueError, match=r"no rows of class\(es\) 2 of the fitted classes_"):
        fitted.crosscheck(X[y < 2], y[y < 2])
