"""The hardening issue's numbered failures, each reproduced exactly as reported and now passing
(they were strict xfails while open; ``_open`` marks any item that regresses into one).

The property tests (test_fuzz_estimators.py, test_fuzz_core.py) cover the same regions at random.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.sparse

import genprob
from genprob import core
from genprob.datasets import load_iris
from genprob.engine import execution
from genprob.engine._dtype import precision
from genprob.engine.masking import marginalized


def _open(item: int):
    return pytest.mark.xfail(
        strict=True, reason=f"issue 18 item {item}, after the issue 13 redesign"
    )


@pytest.fixture(scope="module")
def iris():
    return load_iris()


def _assert_probabilities(proba):
    proba = np.asarray(proba)
    assert np.all(np.isfinite(proba)), proba
    np.testing.assert_allclose(proba.sum(axis=1), 1.0, rtol=0, atol=1e-6)


GAUSSIAN_FACES = {
    "GaussianNB": genprob.GaussianNB,
    "LinearDiscriminantAnalysis": genprob.LinearDiscriminantAnalysis,
    "QuadraticDiscriminantAnalysis": genprob.QuadraticDiscriminantAnalysis,
    "MixedNB": lambda: genprob.MixedNB(families=dict.fromkeys(range(4), "gaussian")),
    "GenerativeClassifier": lambda: genprob.GenerativeClassifier(genprob.GaussianStory()),
}


# -- item 2: NaN probabilities from finite input ---------------------------------------------------
# Fixed: a shared spread's linear discriminant scores rows far beyond 1e154; per-class spreads
# refuse rows whose squares overflow, naming the scale (issue 43; exact references in
# tests/test_finite_scores.py).
LINEAR_FACES = ("LinearDiscriminantAnalysis", "GenerativeClassifier")
TOO_LARGE = r"too large to score in float64 \(beyond about 1.3e\+154|cannot be scored"


@pytest.mark.parametrize("name", list(GAUSSIAN_FACES))
def test_item2_feature_above_1e154_gives_probabilities_or_a_refusal_by_scale(name, iris):
    X, y = iris
    estimator = GAUSSIAN_FACES[name]().fit(X, y)
    row = X[:1] * 1e155  # squares overflow float64 beyond ~1.3e154
    if name in LINEAR_FACES:
        _assert_probabilities(estimator.predict_proba(row))
    else:
        with pytest.raises(ValueError, match=TOO_LARGE):
            estimator.predict_proba(row)
    # the density: about -1e312 here, below float64's range, so -inf, never NaN; at 1e140 it
    # is finite (tests/test_finite_scores.py checks it against exact values)
    assert estimator.log_likelihood(row) == -np.inf
    assert np.isfinite(estimator.log_likelihood(X[:1] * 1e140))


@pytest.mark.parametrize("name", list(GAUSSIAN_FACES))
def test_item2_predict_scores_or_names_rows_beyond_1e154(name, iris):
    X, y = iris
    estimator = GAUSSIAN_FACES[name]().fit(X, y)
    rows = np.vstack([X[:2], X[:1] * 1e155])
    if name in LINEAR_FACES:
        _assert_probabilities(estimator.predict_proba(rows))
        assert not np.any(np.isnan(estimator.predict_log_proba(rows)))
        np.testing.assert_array_equal(estimator.predict(rows)[:2], y[:2])
    else:
        with pytest.raises(ValueError, match=TOO_LARGE) as error:
            estimator.predict(rows)
        assert "row 2 " in str(error.value)
    np.testing.assert_array_equal(estimator.predict(rows[:2]), y[:2])


def test_item2_float32_feature_above_1e19_is_refused_by_scale(iris):
    X, y = iris
    estimator = genprob.GaussianNB(dtype="float32").fit(X, y)
    with pytest.raises(ValueError, match=r"too large to score in float32 \(beyond about 1.8e\+19"):
        estimator.predict_proba(X[:1] * 1e20)


# -- item 3: MixedNB with a constant Gaussian column -----------------------------------------------
def test_item3_mixed_constant_gaussian_column_is_refused_or_finite(iris):
    X, y = iris
    X = np.column_stack([np.full(len(X), 2.5), (X[:, 2] > 3).astype(int)])
    with pytest.raises(ValueError):
        genprob.GaussianNB().fit(X[:, :1], y)  # the reference behaviour: refused
    try:
        estimator = genprob.MixedNB(families={0: "gaussian", 1: "categorical"}).fit(X, y)
    except ValueError:
        return
    _assert_probabilities(estimator.predict_proba(X))
    assert np.isfinite(estimator.log_likelihood(X, y))


# -- item 4: LDA on tiny-scale data ----------------------------------------------------------------
def test_item4_lda_at_scale_1e_155_is_right_or_refuses(iris):
    X, y = iris
    reference = genprob.LinearDiscriminantAnalysis().fit(X, y).score(X, y)
    try:
        tiny = genprob.LinearDiscriminantAnalysis().fit(X * 1e-155, y)
    except ValueError:
        return
    assert tiny.score(X * 1e-155, y) == pytest.approx(reference, abs=0.02)


# -- item 7: no validation of priors or in the functional core -------------------------------------
@pytest.mark.parametrize("priors", [[5, -1, 1], [0.1, 0.1, 0.1]], ids=["negative", "sum-0.3"])
def test_item7_invalid_priors_are_refused(priors, iris):
    X, y = iris
    with pytest.raises(ValueError, match="priors"):
        genprob.GenerativeClassifier(genprob.GaussianStory(), priors=priors).fit(X, y)


def test_item7_one_hot_responsibilities_refuses_out_of_range_codes():
    with pytest.raises(ValueError):
        core.one_hot_responsibilities(np.array([0, 1, 5]), 3)


SCORING = {
    "joint_log_prob": core.joint_log_prob,
    "class_scores": core.class_scores,
    "predict_log_proba": core.predict_log_proba,
    "predict_proba": core.predict_proba,
    "log_likelihood": genprob.log_likelihood,
}


@pytest.fixture(scope="module")
def fitted_gaussian(iris):
    X, y = iris
    story = genprob.GaussianStory()
    return story, core.fit_closed_form(story, X, core.one_hot_responsibilities(y, 3))


@pytest.mark.parametrize("name", list(SCORING))
@pytest.mark.parametrize(
    "value, message",
    [
        (np.nan, r"Input X contains NaN in column 2 \(first at row 4\)"),
        (np.inf, r"Input X contains infinity in column 2 \(first at row 4\)"),
        (-np.inf, r"Input X contains infinity in column 2 \(first at row 4\)"),
    ],
    ids=["nan", "inf", "-inf"],
)
def test_item7_core_scoring_refuses_non_finite_features(
    name, value, message, fitted_gaussian, iris
):
    """Every public scoring function refuses NaN and infinity on the host, naming the column,
    instead of returning NaN; a JAX array is checked as a NumPy one."""
    story, params = fitted_gaussian
    X = iris[0][:10].copy()
    X[4, 2] = value
    for features in (X, jnp.asarray(X)):
        with pytest.raises(ValueError, match=message + ": the functional core takes finite"):
            SCORING[name](story, params, features)


def test_item7_core_names_every_column_and_kind(fitted_gaussian, iris):
    story, params = fitted_gaussian
    X = iris[0][:10].copy()
    X[6, 3], X[2, 1], X[8, 1] = np.inf, -np.inf, np.nan
    expected = (
        r"Input X contains NaN in column 1 \(first at row 8\) and infinity in columns 1, 3 "
        r"\(first at row 2, column 1; 2 entries in all\)"
    )
    with pytest.raises(ValueError, match=expected):
        core.predict_proba(story, params, X)


def test_item7_core_nan_is_missing_only_for_a_story_that_reads_it_so(fitted_gaussian, iris):
    """The documented NaN path: marginalized(story) scores NaN as missing (infinity is still
    refused); the plain story refuses NaN and says how to read it as missing."""
    story, params = fitted_gaussian
    X = iris[0][:10].copy()
    X[4, 2] = np.nan
    with pytest.raises(ValueError, match=r"marginalized\(story\) reads NaN as a missing value"):
        core.joint_log_prob(story, params, X)
    joint = np.asarray(core.joint_log_prob(marginalized(story), params, X))
    assert np.all(np.isfinite(joint))
    complete = np.asarray(core.joint_log_prob(story, params, np.delete(X, 4, axis=0)))
    np.testing.assert_array_equal(np.delete(joint, 4, axis=0), complete)
    X[4, 2] = np.inf
    with pytest.raises(ValueError, match=r"infinity in column 2 \(first at row 4\)"):
        core.joint_log_prob(marginalized(story), params, X)


def test_item7_core_refuses_infinity_in_scipy_sparse_counts(iris):
    X, y = iris
    story = genprob.MultinomialStory()
    counts = np.round(X)
    params = core.fit_closed_form(story, counts, core.one_hot_responsibilities(y, 3))
    sparse = scipy.sparse.csr_matrix(counts[:5])
    sparse.data[sparse.indptr[3] + 1] = np.inf  # the second stored entry of row 3: column 1
    for scoring in (core.joint_log_prob, core.predict_log_proba):
        with pytest.raises(ValueError, match=r"infinity in column 1 \(first at row 3\)"):
            scoring(story, params, sparse)


def test_item7_core_valid_input_scores_as_before(fitted_gaussian, iris):
    """Positive control: the checks change no number (the seam's passes the public functions
    call after them, compared bit for bit as the JAX arrays, in JAX's precision, that the public
    functions return)."""
    story, params = fitted_gaussian
    X = iris[0]
    joint = jnp.asarray(execution.joint_log_prob(story, params, X))
    np.testing.assert_array_equal(core.joint_log_prob(story, params, X), joint)
    np.testing.assert_array_equal(
        core.class_scores(story, params, X),
        jnp.asarray(execution.class_scores(story, params, X)),
    )
    log_proba = jnp.asarray(execution.class_posteriors(story, params, X, "log"))
    np.testing.assert_array_equal(core.predict_log_proba(story, params, X), log_proba)
    np.testing.assert_array_equal(core.predict_proba(story, params, X), jnp.exp(log_proba))
    np.testing.assert_array_equal(
        genprob.log_likelihood(story, params, X, pointwise=True),
        jax.nn.logsumexp(joint, axis=-1),
    )


def test_item7_core_fit_refuses_nan(iris):
    X, y = iris
    X = X.copy()
    X[0, 0] = np.nan
    with pytest.raises(ValueError, match=r"Input X contains NaN in column 0 \(first at row 0\)"):
        core.fit_closed_form(genprob.GaussianStory(), X, core.one_hot_responsibilities(y, 3))


@pytest.mark.parametrize(
    "prior, message",
    [
        ([0.5, 0.5], r"Number of priors must match number of classes. \(got 2 priors for 3"),
        (
            [0.6, 0.6, -0.2],
            r"Priors must be non-negative. class_prior is negative for classes \[2\]",
        ),
        ([0.2, 0.2, 0.2], r"The sum of the priors should be 1. Got 0.6"),
        ([0.5, np.nan, 0.5], r"class_prior must be finite"),
    ],
    ids=["length", "negative", "sum", "nan"],
)
def test_item7_core_fit_refuses_an_invalid_class_prior(prior, message, iris):
    """fit_closed_form checks class_prior as the estimators and fit_em do."""
    X, y = iris
    with pytest.raises(ValueError, match=message):
        core.fit_closed_form(
            genprob.GaussianStory(), X, core.one_hot_responsibilities(y, 3), class_prior=prior
        )


def test_item7_core_fit_with_a_valid_class_prior_is_unchanged(fitted_gaussian, iris):
    X, y = iris
    story, fitted = fitted_gaussian
    params = core.fit_closed_form(
        story, X, core.one_hot_responsibilities(y, 3), class_prior=[0.2, 0.3, 0.5]
    )
    np.testing.assert_allclose(params["class_prior"], [0.2, 0.3, 0.5], rtol=1e-6)
    for name in fitted:
        if name != "class_prior":
            np.testing.assert_array_equal(params[name], fitted[name])


@pytest.mark.parametrize(
    "value, message",
    [
        (np.nan, r"R holds NaN entries in class 1 \(column 1 of R; first at row 4: nan\)"),
        (np.inf, r"R holds infinite entries in class 1 \(column 1 of R; first at row 4: inf\)"),
        (-0.5, r"R holds negative entries in class 1 \(column 1 of R; first at row 4: -0.5\)"),
    ],
    ids=["nan", "inf", "negative"],
)
def test_item7_core_fit_refuses_non_finite_or_negative_responsibilities(value, message, iris):
    X, y = iris
    R = np.array(core.one_hot_responsibilities(y, 3))
    R[4, 1] = value
    with pytest.raises(ValueError, match=message + ": responsibilities must be finite and non"):
        core.fit_closed_form(genprob.GaussianStory(), X, R)


def test_item7_core_fit_names_every_class_of_bad_responsibilities(iris):
    X, y = iris
    R = np.array(core.one_hot_responsibilities(y, 3))
    R[7, 2], R[3, 0] = -1.0, -2.0
    with pytest.raises(
        ValueError,
        match=r"negative entries in classes 0, 2 \(columns of R; first at row 3, class 0",
    ):
        core.fit_closed_form(genprob.GaussianStory(), X, jnp.asarray(R))


def test_item7_core_fit_with_weighted_responsibilities_is_unchanged(iris):
    """Positive control: valid soft responsibilities give the statistics' closed form."""
    X, y = iris
    story = genprob.GaussianStory(covariance="diag", shared=False)
    R = core.one_hot_responsibilities(y, 3, sample_weight=np.linspace(0.5, 2.0, len(y)))
    params = core.fit_closed_form(story, X, R)
    expected = core.maximize(story, core.sufficient_statistics(story, X, R))
    for name in expected:
        np.testing.assert_array_equal(params[name], expected[name])


@pytest.mark.parametrize("name", list(SCORING))
def test_item7_core_scoring_refuses_a_wrong_feature_count(name, fitted_gaussian, iris):
    story, params = fitted_gaussian
    with pytest.raises(ValueError, match="X has 3 features, but the parameters are for 4"):
        SCORING[name](story, params, iris[0][:, :3])


def test_item7_log_likelihood_refuses_out_of_range_codes(iris):
    X, y = iris
    story = genprob.GaussianStory()
    params = core.fit_closed_form(story, X, core.one_hot_responsibilities(y, 3))
    with pytest.raises(ValueError):
        genprob.log_likelihood(story, params, X[:3], np.array([0, 1, 5]))


SINGULAR_Y = np.array([0, 1, 1, 1, 1, 0])
SINGULAR = {
    # Found by fuzzing the core: 6 rows, 5 features, 2 classes (LDA's estimator copes).
    "pooled": (genprob.GaussianStory, np.random.default_rng(0).normal(size=(6, 5))),
    # Two rows in class 0 at scale 1e8: reg_param's identity is negligible next to 1e16.
    "per class": (
        lambda: genprob.GaussianStory(shared=False, reg_param=0.1),
        np.array(
            [
                [6.40422650e07, 1.04900117e07],
                [1.46433063e08, 2.36159505e08],
                [3.30400005e08, 2.94708096e08],
                [1.29626476e08, 7.34578529e07],
                [1.37672554e08, 2.04132598e08],
                [-2.32503077e08, -2.18791664e07],
            ]
        ),
    ),
}


@pytest.mark.parametrize("case", list(SINGULAR))
def test_item7_core_refuses_or_handles_a_singular_covariance(case):
    """The core returns NaN probabilities without a word."""
    make_story, X = SINGULAR[case]
    y = SINGULAR_Y
    story = make_story()
    with precision("float64"):
        try:
            params = core.fit_closed_form(story, X, core.one_hot_responsibilities(y, 2))
        except ValueError:
            return
        _assert_probabilities(core.predict_proba(story, params, X))


# -- item 9: LDA on wide data ----------------------------------------------------------------------
def test_item9_wide_low_rank_covariance_is_scored_on_its_range():
    """n < D: the covariance keeps its n - K directions, and LDA scores as scikit-learn's."""
    from sklearn.discriminant_analysis import LinearDiscriminantAnalysis as SkLDA

    rng = np.random.default_rng(19)
    n, d = 60, 1100
    y = np.arange(n) % 3
    X = rng.normal(size=(n, d)) * rng.uniform(0.5, 3.0, d) + 0.3 * y[:, None]
    X[:, 7] = 2.0  # a constant column
    fitted = genprob.LinearDiscriminantAnalysis().fit(X, y)
    assert int(fitted._params_jax()["factorization"]["rank"]) == 57  # n - K directions
    np.testing.assert_allclose(
        fitted.predict_proba(X), SkLDA().fit(X, y).predict_proba(X), atol=1e-8
    )
    # sampling colors r-dimensional noise; draws stay on the means' affine subspace + range
    draws = fitted.sample(200, random_state=0)[0]
    assert draws.shape == (200, d) and np.all(np.isfinite(draws))
    np.testing.assert_array_equal(draws[:, 7], 2.0)  # the constant column stays constant


@pytest.mark.slow
def test_item9_wide_lda_factorizes_once_and_saves_one_matrix(tmp_path, monkeypatch):
    # its speed against scikit-learn is a benchmark row (benchmarks/bench_wide.py, D = 2000)
    from sklearn.discriminant_analysis import LinearDiscriminantAnalysis as SkLDA

    rng = np.random.default_rng(9)
    n, d = 300, 2000
    y = np.arange(n) % 3
    X = rng.normal(size=(n, d)) + 0.1 * y[:, None]
    story_type = type(genprob.LinearDiscriminantAnalysis().fit(X[:6], y[:6]).story_)
    factorize = story_type.factorize
    calls = []

    def counted(story, params):
        calls.append(1)
        return factorize(story, params)

    monkeypatch.setattr(story_type, "factorize", counted)
    estimator = genprob.LinearDiscriminantAnalysis().fit(X, y)
    first = estimator.predict_proba(X[:10])
    again = estimator.predict_proba(X[:10])  # the factorization is reused, not recomputed
    assert len(calls) == 1  # one factorization for the fit and both predictions
    np.testing.assert_array_equal(first, again)
    expected = SkLDA().fit(X, y).predict_proba(X[:10])
    np.testing.assert_allclose(first, expected, atol=1e-6)
    path = estimator.save(tmp_path / "wide")
    assert path.stat().st_size < 1.2 * d * d * 8  # at most one D x D matrix


# -- item 11: y = -1 is always "unlabeled" (fixed by unlabeled_label) -----------------------------
def test_item11_minus_one_can_be_a_class(iris):
    from sklearn.naive_bayes import GaussianNB as SkGaussianNB

    X, y = iris
    sentiment = y - 1  # classes {-1, 0, 1}
    # None says that every label value is a class
    estimator = genprob.GaussianNB(unlabeled_label=None).fit(X, sentiment)
    np.testing.assert_array_equal(estimator.classes_, [-1, 0, 1])
    reference = SkGaussianNB().fit(X, sentiment)
    np.testing.assert_allclose(
        estimator.predict_proba(X), reference.predict_proba(X), rtol=0, atol=1e-8
    )
    # the default still reads -1 as unlabeled: two classes, fitted by EM
    default = genprob.GaussianNB().fit(X, sentiment)
    np.testing.assert_array_equal(default.classes_, [0, 1])
    assert default.n_iter_ >= 1


# -- item 12: EM's stopping rule depends on the data's units ---------------------------------------
def test_item12_em_default_stops_within_1e_5_of_convergence_in_any_units(iris):
    X, y = iris
    partial = np.where(np.arange(len(y)) % 5 == 0, y, -1)
    converged = genprob.GaussianNB(em_tol=0.0, max_iter=5000).fit(X, partial)
    reference = converged.predict_proba(X)
    iterations = set()
    for scale in (1.0, 1e-3, 1e3):
        default = genprob.GaussianNB().fit(X * scale, partial)
        iterations.add(default.n_iter_)
        np.testing.assert_allclose(default.predict_proba(X * scale), reference, rtol=0, atol=1e-5)
    assert len(iterations) == 1  # every scale stops at the same iteration


@pytest.mark.parametrize("tol", [1e-4, 1e-8, 1e-12])
def test_item12_raw_and_standardized_data_stop_at_the_same_point(tol, iris):
    X, y = iris
    partial = np.where(np.arange(len(y)) % 5 == 0, y, -1)
    standardized = (X - X.mean(axis=0)) / X.std(axis=0)
    for make in (genprob.GaussianNB, genprob.LinearDiscriminantAnalysis):
        raw = make(em_tol=tol).fit(X, partial)
        scaled = make(em_tol=tol).fit(standardized, partial)
        assert raw.n_iter_ == scaled.n_iter_
        # var_smoothing is relative to the largest variance, which standardizing changes
        np.testing.assert_allclose(
            raw.predict_proba(X), scaled.predict_proba(standardized), rtol=0, atol=1e-6
        )
    with precision("float64"):
        raw = genprob.fit_em(genprob.GaussianStory(), X, partial, tol=tol)
        scaled = genprob.fit_em(genprob.GaussianStory(), standardized, partial, tol=tol)
    assert raw.n_iter == scaled.n_iter
    np.testing.assert_allclose(raw.responsibilities, scaled.responsibilities, rtol=0, atol=1e-6)


@pytest.mark.parametrize(
    "name", ["GaussianNB", "LinearDiscriminantAnalysis", "QuadraticDiscriminantAnalysis", "MixedNB"]
)
@pytest.mark.parametrize(
    "scale, message",
    [
        (1e300, r"feature '?0'? has values too large to square in float64 .*Rescale the features"),
        (1e-300, r"the features' scale is too small for float64 .*Rescale the features"),
    ],
)
def test_item10_extreme_scales_are_named_as_scale_problems(name, scale, message, iris):
    """Item 10: at x1e300 the messages were "Eigenvalues did not converge" or "the data do not
    determine it"; every Gaussian estimator now names the scale and the fix, and stays unfitted."""
    X, y = iris
    options = {"families": dict.fromkeys(range(4), "gaussian")} if name == "MixedNB" else {}
    estimator = getattr(genprob, name)(**options)
    with pytest.raises(ValueError, match=message):
        estimator.fit(X * scale, y)
    assert not hasattr(estimator, "params_")
