"""Statistics and closed forms of NumPy inputs computed on the host agree with the compiled ones."""

import os
import subprocess
import sys
import textwrap
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from sklearn import discriminant_analysis as skda
from sklearn import naive_bayes as sknb
from sklearn.base import clone
from sklearn.datasets import load_iris

import genprob
from genprob import core
from genprob._arrays import PAD_LIMIT
from genprob._dtype import precision
from genprob.families.gaussian import GaussianStory
from genprob.families.gaussian.moments import reference_point
from genprob.families.gaussian.story import _jitted_spread_terms
from genprob.story import Story

#: more rows than any padded bucket: NumPy rows of this many go to the host statistics
NUM_ROWS = PAD_LIMIT + 1000
NUM_CLASSES = 3


def offset_data(num_rows=NUM_ROWS, seed=0, extreme=True):
    """Rows whose means are far larger than their spreads (the moments must keep the digits),
    classes of different sizes and spreads; ``extreme=False``: a covariance conditioned well
    enough to compare posteriors with scikit-learn's to 1e-8."""
    rng = np.random.default_rng(seed)
    y = rng.choice(NUM_CLASSES, size=num_rows, p=[0.5, 0.3, 0.2])
    spreads, offsets = (
        ([1.0, 10.0, 0.01, 3.0], [1e4, -5.0, 3.0, 0.0])
        if extreme
        else (
            [1.0, 10.0, 0.1, 3.0],
            [100.0, -5.0, 3.0, 0.0],
        )
    )
    X = rng.normal(size=(num_rows, 4)) * spreads + offsets
    X[:, 3] += 2.0 * y + rng.normal(size=num_rows) * y
    return X, y


STORIES = {
    "nb": GaussianStory(covariance="diag", shared=False),
    "shared-diag": GaussianStory(covariance="diag", shared=True),
    "lda": GaussianStory(covariance="full", shared=True),
    "lda-weighted": GaussianStory(
        covariance="full", shared=True, covariance_weights=(0.2, 0.3, 0.5)
    ),
    "qda": GaussianStory(covariance="full", shared=False, reg_param=0.1),
}


def responsibilities(kind, y, seed=1):
    rng = np.random.default_rng(seed)
    if kind == "soft":  # EM's posteriors: every row in every class
        return rng.dirichlet(np.ones(NUM_CLASSES), size=len(y))
    weights = None
    if kind == "weighted":  # sample weights, some rows removed
        weights = rng.uniform(0.0, 3.0, len(y)) * (rng.uniform(size=len(y)) > 0.1)
    return core.one_hot_rows(y, NUM_CLASSES, weights)


@pytest.mark.parametrize("centered", [False, True], ids=["offset", "centered"])
@pytest.mark.parametrize("kind", ["labels", "weighted", "soft"])
@pytest.mark.parametrize("name", list(STORIES))
def test_host_statistics_agree_with_the_compiled_ones(name, kind, centered, tol):
    story = STORIES[name]
    X, y = offset_data()
    if centered:  # moments about the origin, read in place on the host
        X = (X - X.mean(axis=0)) / X.std(axis=0)
    R = responsibilities(kind, y)
    assert story.statistics_on_host(X)
    with jax.enable_x64(True):
        host = core.sufficient_statistics(story, X, R)
        assert np.any(host["emission"]["shift"]) != centered
        compiled = core.sufficient_statistics(story, jnp.asarray(X), jnp.asarray(R))
        assert all(isinstance(v, np.ndarray) for v in jax.tree_util.tree_leaves(host))
        np.testing.assert_allclose(host["class_counts"], compiled["class_counts"], rtol=1e-13)
        # moments about the compiled program's reference point are the same moments
        moved = story._recenter(host["emission"], compiled["emission"]["shift"])
        for key in ("sums", "squares", "class_squares"):
            if key in compiled["emission"]:
                expected = np.asarray(compiled["emission"][key])
                np.testing.assert_allclose(
                    moved[key], expected, rtol=1e-9, atol=1e-9 * np.abs(expected).max(), err_msg=key
                )
        expected, actual = core.maximize(story, compiled), core.maximize(story, host)
        for key, value in expected.items():
            np.testing.assert_allclose(
                actual[key], value, rtol=tol["float64"]["rtol"], atol=1e-10, err_msg=key
            )


@pytest.mark.parametrize("name", ["nb", "lda", "qda"])
def test_host_moments_of_mixed_responsibilities_match_a_direct_sum(name):
    # blocks mixing unit rows, weighted rows, empty rows, rows in two classes and a class
    # with no rows: each takes its own product (unit: symmetric; per class: gathered rows)
    # (blocks of 16,384 rows of 4 features; 65,536 for per-class scatter)
    rng = np.random.default_rng(7)
    X = rng.normal(size=(140_000, 4)) * [1.0, 2.0, 0.5, 3.0] + [10.0, -4.0, 0.0, 2.0]
    y = rng.integers(0, 3, len(X))
    R = np.eye(4)[y]  # class 3 has no rows
    R[20_000:40_000, 2] *= rng.uniform(0.5, 2.0, size=20_000)  # class 0 keeps unit weights
    R[70_000:71_000] = 0.0
    R[100_000:100_500, 1] += 0.25
    story = STORIES[name]
    shift = reference_point(X)
    stats = story.structure.moments(X, R, shift, story._needs_class_scatter)
    Z = X - shift
    np.testing.assert_allclose(stats["counts"], R.sum(axis=0), rtol=1e-13)
    np.testing.assert_allclose(stats["sums"], R.T @ Z, rtol=1e-12, atol=1e-9)
    if name == "nb":
        expected = R.T @ Z**2
    else:
        expected = np.einsum("nk,ni,nj->kij", R, Z, Z)
        if name == "lda":
            expected = expected.sum(axis=0)
    squares = stats["class_squares"] if "class_squares" in stats else stats["squares"]
    np.testing.assert_allclose(squares, expected, rtol=1e-12, atol=1e-9)


def test_host_statistics_count_classes_once(monkeypatch):
    # the Gaussian moments count the classes as they go (Story.class_counts); a story that
    # keeps the default hook gets its counts from R
    X, y = offset_data()
    R = responsibilities("weighted", y)
    sums = []
    original = core.column_sums
    monkeypatch.setattr(core, "column_sums", lambda a: sums.append(a.shape) or original(a))
    stats = core.sufficient_statistics(STORIES["lda"], X, R)
    assert sums == []
    np.testing.assert_allclose(stats["class_counts"], R.sum(axis=0), rtol=1e-13)
    assert Story.class_counts(STORIES["lda"], stats["emission"]) is None


def _codes_and_weights(kind, seed=3):
    rng = np.random.default_rng(seed)
    _, y = offset_data()
    codes, weights = y.copy(), None
    if kind == "weighted":  # sample weights, some rows removed
        weights = rng.uniform(0.0, 3.0, len(y)) * (rng.uniform(size=len(y)) > 0.1)
    if kind == "unlabeled":  # code -1: a row of zeros
        codes[::7] = -1
    return codes, weights


@pytest.mark.parametrize("kind", ["labels", "weighted", "unlabeled"])
@pytest.mark.parametrize("name", list(STORIES))
def test_one_hot_rows_give_the_statistics_of_the_dense_matrix(name, kind):
    # hard labels held as codes, read block by block, sum exactly what their (n, K) array does
    X, _ = offset_data()
    codes, weights = _codes_and_weights(kind)
    lazy = core.OneHotRows(codes, NUM_CLASSES, weights)
    dense = core.one_hot_rows(codes, NUM_CLASSES, weights)
    np.testing.assert_array_equal(np.asarray(lazy), dense)
    story = STORIES[name]
    assert story.accepts_one_hot_rows
    from_codes = core.sufficient_statistics(story, X, lazy)
    from_matrix = core.sufficient_statistics(story, X, dense)
    for (path, actual), expected in zip(
        jax.tree_util.tree_leaves_with_path(from_codes),
        jax.tree_util.tree_leaves(from_matrix),
        strict=True,
    ):
        # the codes' sums add rows onto their classes, in another order than R^T Z
        atol = 1e-14 * np.max(np.abs(expected), initial=0.0)
        np.testing.assert_allclose(actual, expected, rtol=1e-13, atol=atol, err_msg=str(path))


@pytest.mark.parametrize("kind", ["labels", "weighted", "unlabeled"])
def test_one_hot_rows_slices_sums_and_class_rows(kind):
    codes, weights = _codes_and_weights(kind)
    lazy = core.OneHotRows(codes, NUM_CLASSES, weights)
    dense = np.asarray(lazy)
    assert lazy.shape == dense.shape == (len(codes), NUM_CLASSES) and len(lazy) == len(codes)
    assert lazy.unit_rows == (kind == "labels")
    np.testing.assert_array_equal(np.asarray(lazy[1000:5000]), dense[1000:5000])
    np.testing.assert_allclose(lazy.column_sums(), dense.sum(axis=0), rtol=1e-13)
    for k, (rows, row_weights) in enumerate(lazy.class_rows()):
        np.testing.assert_array_equal(rows, np.flatnonzero(dense[:, k]))
        if row_weights is None:
            assert np.all(dense[rows, k] == 1.0)
        else:
            np.testing.assert_array_equal(row_weights, dense[rows, k])
    read = lazy.block_reader(np.empty((300, NUM_CLASSES)))
    np.testing.assert_array_equal(read(len(codes) - 200, len(codes) + 100), dense[-200:])
    with pytest.raises(TypeError, match="slice of rows"):
        lazy[[0, 1]]


@pytest.mark.parametrize("kind", ["labels", "weighted", "unlabeled"])
def test_class_sums_scatter_each_row_onto_its_class(kind):
    # R^T Z by scattering rows (a SciPy CSC matrix times the block)
    codes, weights = _codes_and_weights(kind)
    rng = np.random.default_rng(6)
    Z = rng.normal(size=(len(codes), 7)) * [1.0, 1e3, 1e-3, 5.0, 1.0, 2.0, 1e6]
    lazy = core.OneHotRows(codes, NUM_CLASSES, weights)
    dense = np.asarray(lazy)
    labeled = dense.sum(axis=1) > 0
    # rows of zeros in R (code -1, weight 0) touch no class, not even with 0 x inf = NaN
    Z[np.flatnonzero(~labeled)[:3]] = np.inf
    assert kind == "labels" or np.isinf(Z).any()
    expected = dense[labeled].T @ Z[labeled]
    add = lazy.class_sums_adder(7, np.float64)
    out = np.zeros((NUM_CLASSES, 7))
    for start in range(0, len(codes), 2500):  # blocks, as a statistics pass adds them
        add(out, start, Z[start : start + 2500])
    np.testing.assert_allclose(out, expected, rtol=1e-13, atol=1e-13 * np.abs(expected).max())
    # a slice keeps its rows' targets; strided and float32 rows are copied to the kernel's form
    part = lazy[1000:5000]
    again = np.zeros((NUM_CLASSES, 7))
    part.class_sums_adder(7, np.float64)(again, 0, np.asfortranarray(Z[1000:5000]))
    inside = labeled[1000:5000]
    expected = dense[1000:5000][inside].T @ Z[1000:5000][inside]
    np.testing.assert_allclose(again, expected, rtol=1e-13, atol=1e-13 * np.abs(expected).max())
    single = np.zeros((NUM_CLASSES, 7))
    lazy.class_sums_adder(7, np.float64)(single, 0, Z[:100].astype(np.float32))
    expected = dense[:100].T @ np.where(labeled[:100, None], Z[:100].astype(np.float32), 0.0)
    np.testing.assert_allclose(single, expected, rtol=1e-13)
    np.testing.assert_allclose(lazy.column_sums(), dense.sum(axis=0), rtol=1e-13)
    np.testing.assert_allclose(lazy.row_sums(), dense.sum(axis=1), rtol=1e-15)


@pytest.mark.parametrize("code", [NUM_CLASSES, -2])
def test_class_sums_refuse_codes_outside_the_classes(code):
    # the scatter writes where a code points: a code outside -1..K-1 is refused first
    codes, _ = _codes_and_weights("labels")
    codes[9] = code
    lazy = core.OneHotRows(codes, NUM_CLASSES)
    with pytest.raises(ValueError, match=rf"code {code} of row 9 is not a class of 0\.\.2"):
        lazy.class_sums_adder(2, np.float64)
    with pytest.raises(ValueError, match=rf"code {code} of row 9"):
        lazy.column_sums()
    with pytest.raises(ValueError, match="1-D integer array of codes"):
        core.OneHotRows(codes.astype(float), NUM_CLASSES).class_sums_adder(2, np.float64)
    # every story's statistics refuse it, not only those that scatter (the dense matrix would
    # wrap the code around)
    X, _ = offset_data()
    for story in (STORIES["qda"], genprob.MultinomialNB().fit([[1, 2], [3, 4]], [0, 1]).story_):
        data = X if story is STORIES["qda"] else np.abs(np.round(X[:, :2]))
        with pytest.raises(ValueError, match=rf"code {code} of row 9"):
            core.sufficient_statistics(story, data, lazy)


@pytest.mark.parametrize("name", ["nb", "lda", "qda"])
def test_fit_closed_form_takes_one_hot_rows_and_checks_them(name):
    X, y = offset_data()
    story = STORIES[name]
    weights = np.random.default_rng(4).uniform(0.5, 2.0, len(y))
    lazy = core.OneHotRows(y, NUM_CLASSES, weights)
    expected = core.fit_closed_form(story, X, np.asarray(lazy))
    for key, value in core.fit_closed_form(story, X, lazy).items():
        np.testing.assert_allclose(value, expected[key], rtol=1e-12, atol=1e-14, err_msg=key)
    codes = y.copy()
    codes[4] = NUM_CLASSES
    with pytest.raises(ValueError, match=r"code 3 of row 4 is not a class of 0\.\.2"):
        core.fit_closed_form(story, X, core.OneHotRows(codes, NUM_CLASSES))
    weights[6] = np.nan
    with pytest.raises(ValueError, match="weight nan of row 6 is not finite and non-negative"):
        core.fit_closed_form(story, X, core.OneHotRows(y, NUM_CLASSES, weights))
    with pytest.raises(ValueError, match="1-D integer array of codes"):
        core.fit_closed_form(story, X, core.OneHotRows(y.astype(float), NUM_CLASSES))
    with pytest.raises(ValueError, match="weights of shape"):
        core.fit_closed_form(story, X, core.OneHotRows(y, NUM_CLASSES, np.ones(3)))


def test_one_hot_rows_reach_other_stories_as_a_dense_matrix():
    # a story that does not read codes (multinomial counts on the host; a compiled program for
    # device rows) gets np.asarray(R): the same statistics
    rng = np.random.default_rng(5)
    y = rng.integers(0, NUM_CLASSES, 500)
    counts = rng.poisson(3.0, size=(500, 6)).astype(float)
    lazy = core.OneHotRows(y, NUM_CLASSES)
    story = genprob.MultinomialNB().fit(counts, y).story_
    assert not story.accepts_one_hot_rows and story.statistics_on_host(counts)
    with jax.enable_x64(True):
        for X in (counts, jnp.asarray(counts)):
            expected = core.sufficient_statistics(story, X, np.asarray(lazy))
            actual = core.sufficient_statistics(story, X, lazy)
            leaves = jax.tree_util.tree_leaves
            for a, b in zip(leaves(actual), leaves(expected), strict=True):
                np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-14)


@pytest.mark.parametrize(
    "make", ["GaussianNB", "LinearDiscriminantAnalysis", "QuadraticDiscriminantAnalysis"]
)
def test_labeled_fits_allocate_no_responsibility_matrix(make):
    # the one-hot rows are read from the codes block by block: a second fit's peak allocation
    # stays below half the (n, K) matrix (16 MB here), O(n) codes and row indices and a block
    script = textwrap.dedent(
        f"""
        import tracemalloc
        import numpy as np
        import genprob

        rng = np.random.default_rng(0)
        y = rng.integers(0, 10, 200_000)
        X = rng.normal(size=(200_000, 8)) + y[:, None]
        first = genprob.{make}().fit(X, y)
        tracemalloc.start()
        second = genprob.{make}().fit(X, y)
        print(tracemalloc.get_traced_memory()[1])
        for name, value in first.params_.items():
            np.testing.assert_array_equal(second.params_[name], value)
        """
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GENPROB_", "JAX_"))}
    done = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True
    )
    assert int(done.stdout.split()[-1]) < 200_000 * 10 * 8 / 2, done.stdout


def test_numpy_rows_of_any_size_on_the_host_auto_shrinkage_compiled():
    X, _ = offset_data()
    assert STORIES["lda"].statistics_on_host(X[:10])
    assert not STORIES["lda"].statistics_on_host(jnp.asarray(X))
    assert not GaussianStory(covariance="full", shared=True, shrinkage="auto").statistics_on_host(X)
    # a user story keeps the compiled statistics unless it asks
    assert Story.statistics_on_host(STORIES["nb"], X) is False


def test_reference_point_is_near_the_mean_or_the_origin():
    X, _ = offset_data()
    sds = X.std(axis=0)
    # 1024 rows spread over X: within a few sd / 32 of the mean
    assert np.all(np.abs(reference_point(X) - X.mean(axis=0)) < 0.2 * sds)
    np.testing.assert_array_equal(reference_point(X[:100]), X[:100].mean(axis=0))
    # every mean within 4 sds of 0: the origin (rounding within 17 eps of the mean's)
    centered = (X - X.mean(axis=0)) / sds + [3.0, -3.0, 0.0, 1.0]
    for rows in (centered, centered[:100], jnp.asarray(centered)):
        np.testing.assert_array_equal(reference_point(rows), np.zeros(4))
    # one feature further out: the mean
    centered[:, 2] += 5.0
    for rows in (centered, jnp.asarray(centered)):
        np.testing.assert_allclose(reference_point(rows), centered.mean(axis=0), rtol=0, atol=0.15)


PAIRS = {
    "GaussianNB": (sknb.GaussianNB(), genprob.GaussianNB()),
    "LDA-lsqr": (
        skda.LinearDiscriminantAnalysis(solver="lsqr"),
        genprob.LinearDiscriminantAnalysis(solver="lsqr"),
    ),
    "LDA-svd": (skda.LinearDiscriminantAnalysis(), genprob.LinearDiscriminantAnalysis()),
    "QDA": (
        skda.QuadraticDiscriminantAnalysis(reg_param=0.01),
        genprob.QuadraticDiscriminantAnalysis(reg_param=0.01),
    ),
}


@pytest.mark.parametrize("name", list(PAIRS))
def test_large_fits_match_scikit_learn(name):
    reference, estimator = PAIRS[name]
    X, y = offset_data(seed=2, extreme=False)
    reference.fit(X, y)
    estimator.fit(X, y)
    assert estimator.story_.statistics_on_host(X)
    rows = X[::997]
    np.testing.assert_allclose(
        estimator.predict_proba(rows), reference.predict_proba(rows), rtol=0, atol=1e-8
    )
    for attribute in ("theta_", "var_", "means_", "covariance_", "coef_", "intercept_"):
        if hasattr(reference, attribute) and hasattr(estimator, attribute):
            expected = getattr(reference, attribute)
            np.testing.assert_allclose(
                getattr(estimator, attribute),
                expected,
                rtol=1e-7,
                atol=1e-9 * np.abs(expected).max(),
                err_msg=attribute,
            )


def test_large_weighted_naive_bayes_matches_scikit_learn():
    X, y = offset_data(seed=3)
    weights = np.random.default_rng(4).uniform(0.0, 2.0, len(y))
    reference = sknb.GaussianNB().fit(X, y, sample_weight=weights)
    estimator = genprob.GaussianNB().fit(X, y, sample_weight=weights)
    np.testing.assert_allclose(estimator.theta_, reference.theta_, rtol=1e-10)
    # the MLE variances; the smoothing epsilon_ is var_smoothing times the largest *weighted*
    # variance here, scikit-learn's the unweighted one (docs/gaussian.md)
    np.testing.assert_allclose(
        estimator.var_ - estimator.epsilon_, reference.var_ - reference.epsilon_, rtol=1e-10
    )
    np.testing.assert_allclose(estimator.class_count_, reference.class_count_, rtol=1e-12)


def test_large_float32_fit_stays_float32():
    X, y = offset_data(seed=5, extreme=False)
    X = X - X.mean(axis=0)  # float32 keeps ~7 digits: no offsets here
    single = genprob.QuadraticDiscriminantAnalysis(dtype="float32").fit(X, y)
    double = genprob.QuadraticDiscriminantAnalysis().fit(X, y)
    assert single.stats_["emission"]["squares"].dtype == np.float32
    np.testing.assert_allclose(single.means_, double.means_, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(
        single.predict_proba(X[:50]), double.predict_proba(X[:50]), rtol=0, atol=1e-3
    )


def test_large_fit_refuses_nan_as_scikit_learn_does():
    X, y = offset_data(seed=6)
    X[12345, 2] = np.nan
    for reference, estimator in PAIRS.values():
        with pytest.raises(ValueError) as expected:
            reference.fit(X, y)
        with pytest.raises(ValueError) as actual:
            estimator.fit(X, y)
        assert str(actual.value) == str(expected.value)


@pytest.mark.parametrize("bad", [np.inf, -np.inf, np.nan])
def test_large_fit_names_nonfinite_before_label_errors_as_scikit_learn(bad):
    X, y = offset_data(seed=7)
    X[-1, 0] = bad
    cases = [
        (skda.LinearDiscriminantAnalysis(), genprob.LinearDiscriminantAnalysis(), y),
        # one class: LDA refuses the labels, but the infinity in X is named first
        (skda.LinearDiscriminantAnalysis(), genprob.LinearDiscriminantAnalysis(), 0 * y),
        # continuous labels: refused after X's check as well
        (skda.QuadraticDiscriminantAnalysis(), genprob.QuadraticDiscriminantAnalysis(), y + 0.5),
        (sknb.GaussianNB(), genprob.GaussianNB(), y),
    ]
    for reference, estimator, labels in cases:
        with pytest.raises(ValueError) as expected:
            reference.fit(X, labels)
        with pytest.raises(ValueError) as actual:
            estimator.fit(X, labels)
        assert str(actual.value) == str(expected.value)
    # rows without labels go to EM, which checks X before it starts
    partial = np.where(np.arange(len(y)) % 5 == 0, y, -1)
    with pytest.raises(ValueError, match="Input X contains"):
        genprob.GaussianNB(max_iter=2).fit(X, partial)


def test_large_fit_overflow_is_named_without_warnings():
    X, y = offset_data(seed=8)
    X[:, 1] *= 1e200  # finite, but its squares overflow
    for weights in (None, np.full(len(y), 2.0)):
        for estimator in (genprob.GaussianNB(), genprob.QuadraticDiscriminantAnalysis()):
            with warnings.catch_warnings():
                warnings.simplefilter("error")
                with pytest.raises(ValueError, match="feature 1 has values too large to square"):
                    estimator.fit(X, y, sample_weight=weights)


@pytest.mark.parametrize(
    "estimator",
    [
        genprob.GaussianNB(),
        genprob.LinearDiscriminantAnalysis(),
        genprob.LinearDiscriminantAnalysis(solver="lsqr", shrinkage=0.2),
        genprob.LinearDiscriminantAnalysis(solver="lsqr", shrinkage="auto"),
        genprob.QuadraticDiscriminantAnalysis(reg_param=0.1),
        genprob.MultinomialNB(alpha=0.5),
        genprob.BernoulliNB(alpha=0.5, binarize=3.0),
    ],
    ids=["gnb", "lda", "lda-lsqr", "lda-auto", "qda", "mnb", "bnb"],
)
def test_small_fits_run_no_compiled_program(monkeypatch, estimator):
    """A fold of iris is fitted in NumPy: no compiled statistics program and no compiled M-step
    (the first call of a program in a process costs more than the fit), with the parameters
    of the compiled path. ``shrinkage="auto"`` keeps its compiled statistics (two passes)."""
    X, y = load_iris(return_X_y=True)
    X, y = X[::2], y[::2]
    story_type = type(clone(estimator).fit(X, y).story_)
    compiled = clone(estimator)
    monkeypatch.setattr(story_type, "statistics_on_host", lambda self, X: False)
    monkeypatch.setattr(story_type, "maximizes_on_host", lambda self, stats: False)
    compiled.fit(X, y)
    monkeypatch.undo()

    def refuse(*args, **kwargs):
        raise AssertionError("a compiled program ran")

    if getattr(estimator, "shrinkage", None) != "auto":
        monkeypatch.setattr(core, "_sufficient_statistics", refuse)
    monkeypatch.setattr(core, "_emission_maximize", refuse)
    host = clone(estimator).fit(X, y)
    for name, value in compiled.params_.items():
        np.testing.assert_allclose(host.params_[name], value, rtol=1e-12, atol=1e-12, err_msg=name)
    # posteriors of 1e-27 move by their log's rounding (60 x 1e-12): compared relatively
    np.testing.assert_allclose(
        host.predict_log_proba(X), compiled.predict_log_proba(X), rtol=1e-10, atol=1e-10
    )


def test_fits_and_predictions_on_numpy_rows_start_no_jax_backend():
    """A fresh process fitting and scoring NumPy rows with every closed-form estimator of
    scikit-learn's never starts JAX's backend (plugin discovery and MLIR context, ~45 ms)."""
    script = textwrap.dedent(
        """
        import numpy as np
        from jax._src.xla_bridge import backends_are_initialized
        from sklearn.datasets import load_iris
        from sklearn.model_selection import cross_val_score
        import genprob
        X, y = load_iris(return_X_y=True)
        for estimator in (genprob.GaussianNB(), genprob.LinearDiscriminantAnalysis(),
                          genprob.QuadraticDiscriminantAnalysis(reg_param=0.1),
                          genprob.MultinomialNB(), genprob.BernoulliNB(binarize=3.0)):
            cross_val_score(estimator, X, y, cv=3)
            fitted = estimator.fit(X, y)
            fitted.predict_proba(X), fitted.predict_log_proba(X), fitted.predict(X)
        fitted = genprob.LinearDiscriminantAnalysis().fit(X, y)
        fitted.transform(X), fitted.decision_function(X)
        print(backends_are_initialized())
        """
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GENPROB_", "JAX_"))}
    done = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True
    )
    assert done.stdout.split() == ["False"]


@pytest.mark.parametrize(
    "story",
    [
        *STORIES.values(),
        GaussianStory(covariance="diag", shared=False, var_smoothing=1e-3),
        GaussianStory(covariance="full", shared=True, shrinkage=0.3, reg_param=0.05),
        GaussianStory(covariance="full", shared=False, estimator="unbiased"),
        GaussianStory(covariance="full", shared=True, shrinkage="auto"),
        GaussianStory(covariance="full", shared=False, shrinkage="auto"),
    ],
    ids=[*STORIES, "nb-smoothed", "lda-shrunk", "qda-unbiased", "lda-auto", "qda-auto"],
)
@pytest.mark.parametrize("kind", ["weighted", "soft"])
def test_numpy_m_step_agrees_with_the_compiled_one(story, kind):
    """Every term of the Gaussian closed form (means, spreads, MLE spreads, group counts,
    degrees of freedom) in NumPy equals the compiled program's."""
    X, y = offset_data(num_rows=2000, seed=3, extreme=False)
    R = responsibilities(kind, y)
    with precision():
        stats = core.sufficient_statistics(story, X, R)["emission"]
        host = story._spread_terms(stats)
        compiled = _jitted_spread_terms(story, jax.tree_util.tree_map(jnp.asarray, stats))
    assert all(isinstance(v, (np.ndarray, np.generic)) for v in host.values())
    for name, value in compiled.items():
        # the same formulas; sums of another order (Ledoit-Wolf's norms): a few ulps apart
        np.testing.assert_allclose(host[name], value, rtol=1e-11, atol=0, err_msg=name)


def test_numpy_m_step_keeps_float32():
    X, y = offset_data(num_rows=500, seed=5, extreme=False)
    X = (X - X.mean(axis=0)).astype(np.float32)
    for estimator in (
        genprob.QuadraticDiscriminantAnalysis(dtype="float32", reg_param=0.1),
        genprob.GaussianNB(dtype="float32"),
        genprob.MultinomialNB(dtype="float32"),
    ):
        data = np.abs(X) if isinstance(estimator, genprob.MultinomialNB) else X
        single = estimator.fit(data, y)
        double = clone(estimator).set_params(dtype="float64").fit(data, y)
        for name, value in single.params_.items():
            assert value.dtype == np.float32, name
            np.testing.assert_allclose(value, double.params_[name], rtol=1e-4, atol=1e-5)


def test_wide_closed_forms_stay_compiled():
    """Past ``_HOST_CLOSED_FORM_ENTRIES`` second-moment entries XLA's fused passes win: the
    closed form of wide statistics is the compiled program's, as before."""
    rng = np.random.default_rng(7)
    X, y = rng.normal(size=(1100, 520)), np.arange(1100) % 2
    story = GaussianStory(covariance="full", shared=True, reg_param=0.1)
    stats = core.sufficient_statistics(story, X, core.one_hot_rows(y, 2))["emission"]
    assert not story.maximizes_on_host(stats)
    with precision():
        assert isinstance(story._spread_terms(stats)["spread"], jax.Array)
    narrow = {k: v[..., :10, :10] if k == "squares" else v for k, v in stats.items()}
    assert story.maximizes_on_host(narrow)
