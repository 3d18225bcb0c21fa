"""Class posteriors are exact or refused by name (hardening issue, item 2; issue 43).

Prediction normalizes ``log pi_k + story.discriminant(params, X)``: a shared spread's linear
discriminant drops the row's own quadratic, so its rows get posteriors up to about 1e300 in
float64; per-class spreads score the quadratic itself, and rows whose squares overflow (about
1e154) are refused with a message naming that scale. References are exact: every float is a
rational number, so the quadratic forms are evaluated with ``fractions.Fraction`` (no rounding,
no overflow) and only the final differences rounded.
"""

from fractions import Fraction

import numpy as np
import numpyro.distributions as dist
import pytest

import genprob
from genprob import core
from genprob.datasets import load_iris
from genprob.engine._dtype import precision
from genprob.families.mixed import MixedStory
from genprob.story import Story

FACES = {
    "GaussianNB": genprob.GaussianNB,
    "LinearDiscriminantAnalysis": genprob.LinearDiscriminantAnalysis,
    "QuadraticDiscriminantAnalysis": genprob.QuadraticDiscriminantAnalysis,
    "MixedNB": lambda: genprob.MixedNB(families={0: "gaussian", 1: "gaussian", 2: "gaussian"}),
    "GenerativeClassifier": lambda: genprob.GenerativeClassifier(genprob.GaussianStory()),
    "GenerativeClassifier-shared-diag": lambda: genprob.GenerativeClassifier(
        genprob.GaussianStory(covariance="diag")
    ),
}
SCALES = [1e154, 1e155, 1e200, 1e300]
#: faces whose discriminant is linear in the rows (a shared spread)
LINEAR = ["LinearDiscriminantAnalysis", "GenerativeClassifier", "GenerativeClassifier-shared-diag"]
#: the refusal of rows whose squares overflow, naming the scale
TOO_LARGE = r"too large to score in float64 \(beyond about 1.3e\+154|cannot be scored"
ROWS = [0, 60, 120, 75]  # one per class, and a versicolor row near the boundary


@pytest.fixture(scope="module")
def iris():
    X, y = load_iris()
    return X[:, :3], y  # three features, so the MixedNB has two blocks (0-1 and 2)


@pytest.fixture(scope="module")
def fitted(iris):
    X, y = iris
    return {name: make().fit(X, y) for name, make in FACES.items()}


def _gaussian_blocks(estimator):
    """(columns, means (K, D_b), covariances (K, D_b, D_b)) of every Gaussian block."""
    story, params = estimator.story_, estimator.params_
    if isinstance(story, MixedStory):
        parts = [(story.block_params(params, n), s, c) for n, s, c in story.blocks]
    else:
        parts = [(params, story, tuple(range(np.shape(params["means"])[1])))]
    blocks = []
    for block, block_story, columns in parts:
        means = np.asarray(block["means"], dtype=np.float64)
        num_classes, width = means.shape
        spread = np.asarray(block[block_story.spread_name], dtype=np.float64)
        if block_story.covariance == "diag":
            spread = np.broadcast_to(spread, means.shape)
            covariances = np.stack([np.diag(v) for v in spread])
        else:
            covariances = np.broadcast_to(spread, (num_classes, width, width))
        blocks.append((columns, means, covariances))
    return blocks


def _solve(matrix, vector):
    """Exact solution of ``matrix v = vector`` (Fractions, Gauss-Jordan)."""
    size = len(vector)
    rows = [list(matrix[i]) + [vector[i]] for i in range(size)]
    for col in range(size):
        pivot = next(r for r in range(col, size) if rows[r][col] != 0)
        rows[col], rows[pivot] = rows[pivot], rows[col]
        for r in range(size):
            if r != col and rows[r][col] != 0:
                factor = rows[r][col] / rows[col][col]
                rows[r] = [a - factor * b for a, b in zip(rows[r], rows[col], strict=True)]
    return [rows[i][size] / rows[i][i] for i in range(size)]


def _exact_quadratics(estimator, row):
    """Exact ``(x - mu_k)^T Sigma_k^-1 (x - mu_k)`` (Fractions) and float constants (K,)."""
    prior = np.asarray(estimator.params_["class_prior"], dtype=np.float64)
    quadratic = [Fraction(0)] * len(prior)
    constant = np.log(prior)
    for columns, means, covariances in _gaussian_blocks(estimator):
        for k in range(len(prior)):
            residual = [
                Fraction(float(row[c])) - Fraction(float(m))
                for c, m in zip(columns, means[k], strict=True)
            ]
            exact = [[Fraction(float(v)) for v in line] for line in covariances[k]]
            solved = _solve(exact, residual)
            quadratic[k] += sum(r * v for r, v in zip(residual, solved, strict=True))
            constant[k] -= 0.5 * np.linalg.slogdet(2 * np.pi * covariances[k])[1]
    return quadratic, constant


def _exact_log_posteriors(estimator, row):
    """Log class posteriors of one row: exact quadratic forms, float normalizers."""
    quadratic, constant = _exact_quadratics(estimator, row)
    smallest = min(quadratic)
    excess = [(q - smallest) / 2 for q in quadratic]
    scores = np.array([-float(e) if e < 10**300 else -np.inf for e in excess]) + constant
    return scores - np.logaddexp.reduce(scores)


def _assert_probabilities(proba, atol=1e-9):
    proba = np.asarray(proba)
    assert np.all(np.isfinite(proba)), proba
    np.testing.assert_allclose(proba.sum(axis=1), 1.0, rtol=0, atol=atol)


@pytest.mark.parametrize("scale", SCALES, ids=lambda s: f"{s:.0e}")
@pytest.mark.parametrize("name", LINEAR)
def test_linear_posteriors_at_huge_scales_match_the_exact_reference(name, scale, fitted, iris):
    X, _ = iris
    estimator = fitted[name]
    rows = X[ROWS] * scale
    rows = np.vstack([rows, X[:1] * [1.0, 1.0, scale]])  # one huge feature among ordinary ones
    proba = estimator.predict_proba(rows)
    _assert_probabilities(proba)
    log_proba = estimator.predict_log_proba(rows)
    assert not np.any(np.isnan(log_proba))
    reference = np.exp([_exact_log_posteriors(estimator, row) for row in rows])
    np.testing.assert_allclose(proba, reference, rtol=0, atol=1e-9)
    np.testing.assert_array_equal(estimator.predict(rows), estimator.classes_[reference.argmax(1)])


@pytest.mark.parametrize("name", list(FACES))
def test_rows_whose_scores_overflow_are_refused_by_scale(name, fitted, iris):
    """Per-class spreads at 1e154 and above, and every face near the float64 maximum (2^1020 x
    7.9, where even the linear products overflow): refused, naming the rows and the scale."""
    X, _ = iris
    estimator = fitted[name]
    scales = [2.0**1020] if name in LINEAR else [*SCALES, 2.0**1020]
    for scale in scales:
        rows = np.vstack([X[:2], X[ROWS] * scale])
        for method in (estimator.predict, estimator.predict_proba, estimator.predict_log_proba):
            with pytest.raises(ValueError, match=TOO_LARGE) as error:
                method(rows)
            assert "rows 2, 3, 4, 5" in str(error.value)
    np.testing.assert_array_equal(estimator.predict(X[:2]), estimator.predict(X)[:2])


@pytest.mark.parametrize("name", list(FACES))
def test_ordinary_rows_match_the_exact_reference(name, fitted, iris):
    X, _ = iris
    estimator = fitted[name]
    reference = np.exp([_exact_log_posteriors(estimator, row) for row in X[::7]])
    np.testing.assert_allclose(estimator.predict_proba(X[::7]), reference, rtol=0, atol=1e-12)


@pytest.mark.parametrize("name", list(FACES))
def test_scores_are_the_joint_log_probability_up_to_a_row_term(name, fitted, iris):
    """Where the joint is finite, the discriminant drops a term common to the row's classes."""
    X, _ = iris
    estimator = fitted[name]
    for rows in (X[::5], X[::5] * 1e100):
        joint = estimator.predict_joint_log_proba(rows)
        with precision("float64"):
            scores = np.asarray(core.class_scores(estimator.story_, estimator._params_jax(), rows))
        shift = joint - scores
        np.testing.assert_allclose(
            shift - shift[:, :1], 0.0, rtol=0, atol=1e-12 * np.abs(joint).max()
        )


def test_lda_matches_scikit_learn_at_1e155(fitted, iris):
    """The issue's case: scikit-learn's linear scores give [0, 0, 1]-style rows; so does LDA."""
    from sklearn.discriminant_analysis import LinearDiscriminantAnalysis

    X, y = iris
    reference = LinearDiscriminantAnalysis().fit(X, y)
    rows = X[ROWS] * 1e155
    expected = reference.predict_proba(rows)
    np.testing.assert_array_equal(np.sort(expected, axis=1)[:, -1], 1.0)  # one-hot rows
    np.testing.assert_allclose(
        fitted["LinearDiscriminantAnalysis"].predict_proba(rows), expected, rtol=0, atol=1e-12
    )


def test_log_likelihood_is_exact_or_minus_infinity(fitted, iris):
    """The density itself is exact: finite wherever float64 holds it, -inf (never NaN) below."""
    X, y = iris
    for name, estimator in fitted.items():
        near = estimator.log_likelihood(X[:3] * 1e140, y[:3], pointwise=True)
        assert np.all(np.isfinite(near)) and np.all(near < -1e270), (name, near)
        far = estimator.log_likelihood(X[:3] * 1e160, y[:3], pointwise=True)
        np.testing.assert_array_equal(far, -np.inf)  # about -1e320: beyond float64
        assert estimator.log_likelihood(X[:3] * 1e160) == -np.inf


def test_rows_whose_squares_overflow_score_minus_infinity_or_are_refused():
    """x ~ 1e160 with sd ~ 1e10: x^2 overflows, so the density is about -1e300 or -inf (never
    NaN), and Gaussian NB's class scores refuse the rows by scale; LDA's linear scores stay
    exact."""
    rng = np.random.default_rng(2)
    y = np.repeat([0, 1], 40)
    X = rng.normal(size=(80, 2)) * 1e10 + y[:, None] * 3e10
    rows = X[:4] + 1e160
    for make in (genprob.GaussianNB, genprob.LinearDiscriminantAnalysis):
        estimator = make().fit(X, y)
        joint = estimator.predict_joint_log_proba(rows)
        assert not np.any(np.isnan(joint)) and np.all(joint < -1e299)
        pointwise = estimator.log_likelihood(rows, y[:4], pointwise=True)
        assert not np.any(np.isnan(pointwise)) and np.all(pointwise < -1e299)
    with pytest.raises(ValueError, match=TOO_LARGE):
        genprob.GaussianNB().fit(X, y).predict_proba(rows)
    lda = genprob.LinearDiscriminantAnalysis().fit(X, y)
    reference = np.exp([_exact_log_posteriors(lda, row) for row in rows])
    np.testing.assert_allclose(lda.predict_proba(rows), reference, rtol=0, atol=1e-9)


def test_float32_rows_above_1e19_get_linear_probabilities_or_are_refused(iris):
    X, y = iris
    lda = genprob.LinearDiscriminantAnalysis(dtype="float32").fit(X, y)
    for scale in (1e20, 1e30):
        proba = lda.predict_proba(X[ROWS] * scale)
        _assert_probabilities(proba, atol=1e-5)
        assert proba.dtype == np.float32
    naive = genprob.GaussianNB(dtype="float32").fit(X, y)
    with pytest.raises(ValueError, match=r"too large to score in float32 \(beyond about 1.8e\+19"):
        naive.predict_proba(X[ROWS] * 1e20)


class _PlainNormal(Story):
    """A user story whose density is numpyro's Normal: its squares overflow beyond ~1e154."""

    name = "plain-normal"

    def prior(self, num_classes, num_features):
        raise NotImplementedError

    def emission(self, params):
        return dist.Normal(params["loc"], params["scale"]).to_event(1)


def test_a_story_whose_density_overflows_keeps_the_clear_refusal(iris):
    X, y = iris
    story = _PlainNormal()
    params = {
        "loc": np.stack([X[y == k].mean(0) for k in range(3)]),
        "scale": np.stack([X[y == k].std(0) for k in range(3)]),
        "class_prior": np.full(3, 1 / 3),
    }
    estimator = genprob.GenerativeClassifier(story)
    estimator.classes_ = np.arange(3)
    estimator.n_features_in_ = X.shape[1]
    estimator.story_, estimator.params_ = story, params
    rows = np.vstack([X[:2], X[:1] * 1e155])
    for method in (estimator.predict, estimator.predict_proba, estimator.predict_log_proba):
        with pytest.raises(ValueError, match="row 2 has values too large to score"):
            method(rows)
    np.testing.assert_array_equal(estimator.predict(X[:2]), y[:2])


def test_a_nan_row_among_overflowing_ones_is_refused_by_name(fitted, iris):
    X, _ = iris
    estimator = fitted["LinearDiscriminantAnalysis"]
    rows = X.copy()
    rows[[3, 77, 140]] *= 2.0**1020  # x . d overflows float64
    with pytest.raises(ValueError, match=r"rows 3, 77, 140 .*too large to score"):
        estimator.predict_proba(rows)
    rows[9, 0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        estimator.predict_proba(rows)


# -- every exported estimator, on the issue-56 row (its mixtures included) ------------------------
def _exported_estimators() -> dict:
    """Every estimator class genprob exports, by name."""
    return {
        name: value
        for name, value in vars(genprob).items()
        if isinstance(value, type) and hasattr(value, "predict_proba") and hasattr(value, "fit")
    }


#: estimators whose rows' log-density overflows at 1e160 (squares, or a code no table holds):
#: the row is refused; the others score it exactly (a shared spread's linear discriminant,
#: counts' linear log-densities, binarized rows)
REFUSE_1E160 = {
    "CategoricalNB",
    "GaussianNB",
    "MixedNB",
    "MixtureDiscriminantAnalysis",
    "QuadraticDiscriminantAnalysis",
}
COUNTS = {"BernoulliNB", "CategoricalNB", "MultinomialNB", "PoissonNB"}


def test_every_estimator_is_in_the_extreme_row_test():
    assert len(_exported_estimators()) == 10, sorted(_exported_estimators())
    assert REFUSE_1E160 | COUNTS <= set(_exported_estimators())


@pytest.mark.parametrize("name", sorted(_exported_estimators()))
def test_extreme_rows_are_refused_by_name_or_scored_exactly(name):
    """``np.full((1, 4), 1e160)``: predict, predict_proba and score refuse the row naming it
    (``row 0``) where its log-density is not finite under any class, and give finite posteriors
    summing to 1 (and the class of largest posterior) elsewhere, mixtures within classes too."""
    X, y = load_iris()
    make = _exported_estimators()[name]
    estimator = {
        "MixtureDiscriminantAnalysis": lambda: make("VVV", n_components=1),
        "GenerativeClassifier": lambda: make(genprob.GaussianStory(shared=False)),
        "MixedNB": lambda: make(families=dict.fromkeys(range(4), "gaussian")),
    }.get(name, make)()
    if name in COUNTS:
        X = np.round(X)
    estimator.fit(X, y)
    row = np.full((1, 4), 1e160)
    refuses = name in REFUSE_1E160 or name == "GenerativeClassifier"  # per-class spreads
    calls = {
        "predict": lambda: estimator.predict(row),
        "predict_proba": lambda: estimator.predict_proba(row),
        "score": lambda: estimator.score(row, y[:1]),
    }
    for method, call in calls.items():
        if refuses:
            with pytest.raises(ValueError, match=r"\brows? 0\b") as info:
                call()
            assert "1e+160" in str(info.value), (method, str(info.value))
            continue
        proba = estimator.predict_proba(row)
        assert np.all(np.isfinite(proba)) and np.isclose(proba.sum(), 1.0), proba
        assert estimator.predict(row)[0] == estimator.classes_[np.argmax(proba[0])]
        assert estimator.score(row, y[:1]) in (0.0, 1.0)
