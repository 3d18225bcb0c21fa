"""Size limits checked before allocation (sampling, category tables) and count arguments checked
by name: requests that used to abort the interpreter in XLA are clear Python exceptions."""

import re

import jax
import numpy as np
import pytest

import genprob
from genprob import core
from genprob.datasets import load_iris
from genprob.engine import _limits
from genprob.engine._dtype import precision
from genprob.engine._limits import SizeLimitError, check_count, compact

X_IRIS, Y_IRIS = load_iris()
COUNTS = np.round(X_IRIS * 2).astype(int)

FITTED = {
    "GaussianNB": lambda: genprob.GaussianNB().fit(X_IRIS, Y_IRIS),
    "LinearDiscriminantAnalysis": lambda: genprob.LinearDiscriminantAnalysis().fit(X_IRIS, Y_IRIS),
    "QuadraticDiscriminantAnalysis": lambda: genprob.QuadraticDiscriminantAnalysis().fit(
        X_IRIS, Y_IRIS
    ),
    "GenerativeClassifier": lambda: genprob.GenerativeClassifier(genprob.GaussianStory()).fit(
        X_IRIS, Y_IRIS
    ),
    "BernoulliNB": lambda: genprob.BernoulliNB(binarize=3.0).fit(X_IRIS, Y_IRIS),
    "MultinomialNB": lambda: genprob.MultinomialNB().fit(COUNTS, Y_IRIS),
    "PoissonNB": lambda: genprob.PoissonNB().fit(COUNTS, Y_IRIS),
    "CategoricalNB": lambda: genprob.CategoricalNB().fit(COUNTS, Y_IRIS),
    "MixedNB": lambda: genprob.MixedNB(families={0: "gaussian", 1: "categorical"}).fit(
        np.column_stack([X_IRIS[:, 0], COUNTS[:, 2]]), Y_IRIS
    ),
}


@pytest.fixture(scope="module", params=list(FITTED))
def fitted(request):
    return FITTED[request.param]()


# -- item 1: sampling ---------------------------------------------------------------------------
def test_sampling_10_10_rows_is_refused_before_allocation(fitted):
    with pytest.raises(SizeLimitError, match="sampling 10000000000 rows") as info:
        fitted.sample(10**10, random_state=0)
    assert isinstance(info.value, ValueError) and isinstance(info.value, MemoryError)
    assert "limit is 4294967296 bytes" in str(info.value)
    X, y = fitted.sample(np.int64(7), random_state=0)  # still usable, numpy ints accepted
    assert X.shape == (7, fitted.n_features_in_) and y.shape == (7,)
    assert set(np.asarray(y).tolist()) <= set(fitted.classes_.tolist())


@pytest.mark.parametrize(
    ("n_samples", "error", "message"),
    [
        (2.7, TypeError, "n_samples must be an int >= 1, got float 2.7"),
        (2.0, TypeError, "got float 2.0"),
        (True, TypeError, "got bool True"),
        ("3", TypeError, "got str '3'"),
        (0, ValueError, "n_samples must be an int >= 1, got 0"),
        (-5, ValueError, "got -5"),
    ],
)
def test_bad_n_samples_named(n_samples, error, message):
    estimator = FITTED["GaussianNB"]()
    with pytest.raises(error, match=re.escape(message)):
        estimator.sample(n_samples)


def test_core_sample_checks_num_samples_and_size():
    story = genprob.GaussianStory()
    with precision("float64"):
        params = core.fit_closed_form(story, X_IRIS, core.one_hot_responsibilities(Y_IRIS, 3))
        key = jax.random.PRNGKey(0)
        with pytest.raises(TypeError, match="num_samples must be an int"):
            core.sample(story, params, 2.5, key)
        with pytest.raises(SizeLimitError, match=r"float64\[10000000000, 3, 4\]"):
            core.sample(story, params, 10**10, key)
        X, y = core.sample(story, params, 5, key)
    assert X.shape == (5, 4) and y.shape == (5,)


def test_multinomial_sample_after_huge_counts_is_refused():
    # Documents of ~1e11 words: the draw would need terabytes (12.8 TB in the issue).
    estimator = genprob.MultinomialNB().fit(COUNTS * 10**10, Y_IRIS)
    with pytest.raises(SizeLimitError, match="limit"):
        estimator.sample(10, random_state=0)
    small = genprob.MultinomialNB().fit(COUNTS, Y_IRIS)
    X, _ = small.sample(4, random_state=0)
    np.testing.assert_array_equal(X.sum(axis=1), small.story_.total_count)


def test_the_limit_is_adjustable(monkeypatch):
    estimator = FITTED["GaussianNB"]()
    monkeypatch.setattr(_limits, "MAX_ARRAY_BYTES", 1000)
    # 100 rows x 3 classes x 4 features x 8 bytes = 9600 bytes > 1000
    with pytest.raises(SizeLimitError, match="9600 bytes"):
        estimator.sample(100)
    monkeypatch.setattr(_limits, "MAX_ARRAY_BYTES", 10_000)
    assert estimator.sample(100)[0].shape == (100, 4)


# -- item 8: category tables --------------------------------------------------------------------
TWO_BY_FOUR = np.array([[0, 1], [1, 0], [2, 1], [0, 0]])
Y4 = np.array([0, 1, 0, 1])


def test_min_categories_1e9_is_refused_naming_feature_code_and_limit():
    with pytest.raises(SizeLimitError) as info:
        genprob.CategoricalNB(min_categories=10**9).fit(TWO_BY_FOUR, Y4)
    message = str(info.value)
    for fragment in ("feature 0", "code 999999999", "1000000000 categories", "4294967296"):
        assert fragment in message, message


def test_one_code_1e9_is_refused_naming_the_feature():
    X = TWO_BY_FOUR.copy()
    X[3, 1] = 10**9
    with pytest.raises(SizeLimitError, match="feature 1 has category code 1000000000"):
        genprob.CategoricalNB().fit(X, Y4)


@pytest.mark.parametrize("code", [1e300, 3e9, 2.0**63])
def test_huge_codes_are_printed_compactly(code):
    X = TWO_BY_FOUR.astype(float)
    X[3, 1] = code
    with pytest.raises(SizeLimitError) as info:
        genprob.CategoricalNB().fit(X, Y4)
    assert not re.search(r"\d{13}", str(info.value)), str(info.value)
    fitted = genprob.CategoricalNB(min_categories=5).fit(TWO_BY_FOUR, Y4)
    with pytest.raises(ValueError, match="category code") as info:
        fitted.predict(X)
    assert not re.search(r"\d{13}", str(info.value)), str(info.value)


def test_table_checked_with_the_number_of_classes(monkeypatch):
    # 2 features x 100 categories x 8 bytes = 1600 bytes per class: 3 classes need 4800.
    monkeypatch.setattr(_limits, "MAX_ARRAY_BYTES", 4000)
    X = np.array([[99, 0], [0, 1], [1, 0], [2, 1], [0, 0], [1, 1]])
    y = np.array([0, 1, 2, 0, 1, 2])
    with pytest.raises(SizeLimitError, match="3 classes x 2 features x 100 categories"):
        genprob.CategoricalNB().fit(X, y)
    assert genprob.CategoricalNB().fit(X, y % 2).n_categories_.tolist() == [100, 2]


# -- helpers ------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("value", "text"),
    [
        (7, "7"),
        (7.0, "7"),
        (10**15, "1e+15"),
        (1e300, "1e+300"),
        (2.5e-7, "2.5e-07"),
        (10**400, "~1e400"),
    ],
)
def test_compact(value, text):
    assert compact(value) == text


def test_check_count_accepts_numpy_integers_only():
    assert check_count(np.int32(3), "n") == 3
    for bad in (np.float64(3.0), np.bool_(True), None, [3]):
        with pytest.raises(TypeError, match="n must be an int"):
            check_count(bad, "n")
