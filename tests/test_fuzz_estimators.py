"""Property-based fuzzing of every estimator: random shapes, scales, unlabeled rows, weights and
constant columns give finite probabilities summing to 1, or a clear exception, never a JAX
internal error or a crash.

Profiles: ``genprob-fuzz`` (the fast suite, fixed seed) and ``genprob-fuzz-slow`` (>= 10,000
examples, ``pytest -m slow``). Shapes come from a small set so that compiled programs are reused.

Scales run from 1e-300 to 1e300 for every family (Gaussian data too: scales whose squares
overflow or underflow are refused at fit by name, items 2 and 4 of the hardening issue); every
fitted model also scores rows pushed to 1e300 (finite probabilities, or a refusal naming the
scale where a Gaussian's squares overflow, issue 43); class
priors are drawn valid (a point of the simplex) or invalid (a negative entry, a wrong sum or
length), which must be refused by name.

Unlabeled rows are marked by the default -1, by another marker (``unlabeled_label=99``), or the
marker is switched off (``unlabeled_label=None``: -1 is then a class of its own); item 11's
exact cases are in tests/test_unlabeled_label.py.
"""

import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sklearn.exceptions import ConvergenceWarning

import genprob

settings.register_profile(
    "genprob-fuzz",
    max_examples=150,
    derandomize=True,
    deadline=None,
    database=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.register_profile(
    "genprob-fuzz-slow", settings.get_profile("genprob-fuzz"), max_examples=10_000
)
SLOW_TIMEOUT = 4 * 3600  # one pytest test runs all 10,000 examples (compiling each new shape)
FAST = settings.get_profile("genprob-fuzz")
SLOW = settings.get_profile("genprob-fuzz-slow")

#: Exceptions a user may get for bad input; each must carry a message.
CLEAR = (ValueError, TypeError, np.linalg.LinAlgError)
GAUSSIAN_EXPONENTS = (-300, 300)
#: Gaussian scales: half the draws where squares stay finite, so that most fits go through.
GAUSSIAN_SCALES = st.one_of(st.integers(-140, 140), st.integers(*GAUSSIAN_EXPONENTS))
# (rows, features, classes) to draw from: every new shape compiles new programs (about a second
# each), so the fast suite keeps few shapes and the slow profile draws from more.
FAST_SHAPES = ((12,), (2,), (2, 3))
SLOW_SHAPES = ((6, 13, 40), (1, 2, 5), (2, 3, 4))


def _mixed():
    return genprob.MixedNB(families={0: "gaussian", 1: "categorical"})


ESTIMATORS = {
    "GaussianNB": (genprob.GaussianNB, "real"),
    "LinearDiscriminantAnalysis": (genprob.LinearDiscriminantAnalysis, "real"),
    "QuadraticDiscriminantAnalysis": (
        lambda: genprob.QuadraticDiscriminantAnalysis(reg_param=0.1),
        "real",
    ),
    "GenerativeClassifier": (
        lambda: genprob.GenerativeClassifier(genprob.GaussianStory(covariance="diag")),
        "real",
    ),
    "BernoulliNB": (genprob.BernoulliNB, "binary"),
    "MultinomialNB": (genprob.MultinomialNB, "counts"),
    "PoissonNB": (genprob.PoissonNB, "counts"),
    "CategoricalNB": (genprob.CategoricalNB, "codes"),
    "MixedNB": (_mixed, "mixed"),
}


@st.composite
def problems(draw, shapes=FAST_SHAPES):
    """(estimator name, X, y, sample_weight, unlabeled_label); unlabeled rows carry the marker
    (with ``None``, rows drawn as unlabeled get -1, a class of their own)."""
    name = draw(st.sampled_from(tuple(ESTIMATORS)))
    kind = ESTIMATORS[name][1]
    rows, features, classes = shapes
    k = draw(st.sampled_from(classes))
    n = max(draw(st.sampled_from(rows)), k + 2)
    d = 2 if kind == "mixed" else draw(st.sampled_from(features))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    # Every class labeled at least once; then some rows unlabeled.
    y = np.concatenate([np.arange(k), rng.integers(0, k, n - k)])
    unlabeled = draw(st.sampled_from((0.0, 0.3)))
    y[k:][rng.random(n - k) < unlabeled] = -1
    if kind == "real":
        scale = 10.0 ** draw(GAUSSIAN_SCALES)
        X = (rng.normal(size=(n, d)) + 2.0 * y[:, None]) * scale
    elif kind == "binary":
        X = rng.integers(0, 2, (n, d)).astype(float)
    elif kind == "counts":
        scale = 10.0 ** draw(st.integers(-300, 300))
        X = rng.poisson(3.0, (n, d)) * scale
    elif kind == "codes":
        X = rng.integers(0, draw(st.sampled_from((2, 5))), (n, d)).astype(float)
    else:  # mixed: a Gaussian column and a categorical column
        scale = 10.0 ** draw(GAUSSIAN_SCALES)
        X = np.column_stack([(rng.normal(size=n) + y) * scale, rng.integers(0, 3, n)])
    if draw(st.booleans()):  # a constant column (for MixedNB the Gaussian one too: item 3)
        column = draw(st.integers(0, d - 1))
        X[:, column] = X[0, column]
    weights = None
    if draw(st.booleans()):
        weights = rng.uniform(0.0, 3.0, n) * 10.0 ** draw(st.integers(-3, 3))
    marker = draw(st.sampled_from((-1, 99, None)))
    if marker is not None:
        y = np.where(y == -1, marker, y)
    priors = None
    choice = draw(st.sampled_from(("none", "none", "valid", "negative", "sum", "length")))
    if choice != "none":
        num_classes = len(np.unique(y[y != marker])) if marker is not None else len(np.unique(y))
        priors = rng.dirichlet(np.ones(num_classes))
        if choice == "negative":
            priors[0] = -priors[0] - 0.1
        elif choice == "sum":
            priors = priors * 3.0
        elif choice == "length":
            priors = np.append(priors, 0.0)
    return name, X, y, weights, marker, priors


def _far_rows(name, X):
    """Copies of the first rows with real-valued entries pushed to +-1e300 (still finite)."""
    far = np.array(X[:2], dtype=float)
    kind = ESTIMATORS[name][1]
    if kind == "real":
        far[0] = 1e300
        far[1, 0] = -1e300
    elif kind == "mixed":  # the Gaussian column only; the categorical one keeps its codes
        far[:, 0] = (1e300, -1e300)
    else:
        return None
    return far


def _check_property(problem):
    name, X, y, weights, marker, priors = problem
    estimator = ESTIMATORS[name][0]().set_params(unlabeled_label=marker)
    if priors is not None:
        key = "priors" if "priors" in estimator.get_params() else "class_prior"
        estimator.set_params(**{key: priors})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        warnings.simplefilter("ignore", RuntimeWarning)
        try:
            estimator.fit(X, y, sample_weight=weights)
        except CLEAR as error:
            _assert_clear(error)
            return
        except Exception as error:  # the property: nothing but a clear refusal escapes
            pytest.fail(
                f"{name}.fit raised {type(error).__module__}.{type(error).__name__}: {error}"
            )
        proba = estimator.predict_proba(X)
    assert proba.shape == (len(X), len(estimator.classes_))
    assert np.all(np.isfinite(proba)), f"{name}: non-finite probabilities\n{proba}"
    assert np.all(proba >= 0.0)
    np.testing.assert_allclose(
        proba.sum(axis=1), 1.0, rtol=0, atol=1e-6 if proba.dtype == np.float32 else 1e-10
    )
    predictions = estimator.predict(X)
    np.testing.assert_array_equal(predictions, estimator.classes_[np.argmax(proba, axis=1)])
    assert np.isfinite(estimator.log_likelihood(X, y))
    far = _far_rows(name, X)
    if far is not None:
        try:
            far_proba = estimator.predict_proba(far)
        except ValueError as error:  # per-class Gaussians refuse rows whose squares overflow
            assert "too large to score" in str(error) or "cannot be scored" in str(error), error
            return
        assert np.all(np.isfinite(far_proba)), f"{name}: rows at 1e300 scored\n{far_proba}"
        np.testing.assert_allclose(far_proba.sum(axis=1), 1.0, rtol=0, atol=1e-6)


def _assert_clear(error):
    module = type(error).__module__
    assert not module.startswith(("jax", "jaxlib")), f"JAX internal error: {error!r}"
    assert str(error).strip(), f"{type(error).__name__} without a message"


@FAST
@given(problems())
def test_every_estimator_gives_finite_normalized_probabilities_or_a_clear_error(problem):
    _check_property(problem)


@pytest.mark.slow
@pytest.mark.timeout(SLOW_TIMEOUT)
@SLOW
@given(problems(SLOW_SHAPES))
def test_every_estimator_fuzzed_at_length(problem):
    _check_property(problem)


def test_lda_constant_column_at_large_scale_found_by_the_slow_profile():
    """The slow profile's first find: 6 rows, 5 features (one constant), scale 1e24. The kept
    eigenvectors' rounding-level entries on the constant coordinate dominated the whitening basis
    (the others are divided by ~1e24), its Gram matrix lost positive definiteness and every row
    scored NaN. The posteriors are scale-free, and match scikit-learn's."""
    from sklearn.discriminant_analysis import LinearDiscriminantAnalysis as SkLDA

    rng = np.random.default_rng(18)
    y = np.array([0, 1, 1, 1, 1, 0])
    X = rng.normal(size=(6, 5)) + y[:, None]
    X[:, 1] = 0.947
    reference = genprob.LinearDiscriminantAnalysis().fit(X, y).predict_proba(X)
    np.testing.assert_allclose(reference, SkLDA().fit(X, y).predict_proba(X), rtol=0, atol=1e-8)
    for scale in (1e-24, 1e24, 1e100):
        proba = genprob.LinearDiscriminantAnalysis().fit(X * scale, y).predict_proba(X * scale)
        np.testing.assert_allclose(proba, reference, rtol=0, atol=1e-8)


def test_qda_narrow_class_far_from_the_others_found_by_the_slow_profile():
    """Second find: QDA (reg_param=0.1), 6 rows, one feature at scale 1e12; class 0 has one row,
    so its variance is the regularizer (0.1) while the class means are ~1e12 apart. Whitening
    about the mean of the class means subtracted two ~5e12 projections; XLA rounded the
    difference differently in the two places it computed it, and rows summed to 1 + 9e-8 (the
    row's own class got log-probability +9e-8). Whitening x - mu_k per class is exact here."""
    X = np.array([3.61595055e11, 3.30400005e12, 4.94708096e12, 3.29626476e12, 7.34578529e11,
                  1.37672554e12])[:, None]  # fmt: skip
    y = np.array([0, 1, 2, 2, 1, 1])
    model = genprob.QuadraticDiscriminantAnalysis(reg_param=0.1).fit(X, y)
    log_proba = model.predict_log_proba(X)
    assert np.all(log_proba <= 0.0)
    np.testing.assert_allclose(np.exp(log_proba).sum(axis=1), 1.0, rtol=0, atol=1e-12)
    # the log-density of row 0 at its own class mean, by hand: N(0; 0, 0.1)
    joint = model.predict_joint_log_proba(X)
    expected = np.log(1 / 6) - 0.5 * np.log(2 * np.pi * model.params_["covariance"][0, 0, 0])
    assert joint[0, 0] == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize(
    "make",
    [
        genprob.LinearDiscriminantAnalysis,
        lambda: genprob.QuadraticDiscriminantAnalysis(reg_param=0.1),
        genprob.GaussianNB,
        lambda: genprob.GenerativeClassifier(genprob.GaussianStory(covariance="diag", shared=True)),
    ],
)
def test_rows_at_1e300_found_by_the_slow_profile(make):
    """Third find, once Gaussian scales reached 1e300: the same six rows, one feature, scored at
    -1e300 gave LDA's nearest class log-probability +1.7e282 and probability inf. Linear
    discriminants (shared spreads) score such rows exactly; per-class spreads refuse rows whose
    squares overflow, naming the scale (issue 43)."""
    X = np.array([3.61595055, 33.04000045, 49.47080963, 32.96264764, 7.34578529, 13.76725537])
    y = np.array([0, 1, 2, 2, 1, 1])
    model = make().fit(X[:, None], y)
    far = np.array([[-1e300], [1e300], [-1e200], [1e155], [-1.5e154]])
    if not model.story_.shared:
        with pytest.raises(ValueError, match=r"rows 0, 1, 2, 3, 4 have values too large"):
            model.predict_log_proba(far)
        return
    log_proba = model.predict_log_proba(far)
    assert np.all(log_proba <= 0.0)
    assert np.all(np.max(log_proba, axis=1) == 0.0)  # one class takes all the mass, exactly
    np.testing.assert_array_equal(model.predict_proba(far).sum(axis=1), 1.0)
    if make is genprob.LinearDiscriminantAnalysis:  # linear scores: the extreme means win
        np.testing.assert_array_equal(model.predict(far), [0, 2, 0, 2, 0])


def test_variances_near_the_float64_maximum_found_by_the_slow_profile():
    """Fourth find: QDA (reg_param=0.1) on one feature near 3e154 fitted variances near 1e308,
    finite but without room for the sums that follow: the log-likelihood was -inf. Variances
    within a factor 1/eps of the maximum are now refused at fit by name, like overflowing ones;
    a scale below the limit still fits and scores finitely. Fifth find, at 1e155: the scatter
    overflowed to inf, the constant-feature snap read inf <= inf as "constant" and zeroed it,
    and the fit kept only the regularizer (variance 0.1); overflowed moments are now kept for
    the check."""
    X = np.array([1.30400005, 2.94708096, 1.29626476, 0.734578529, 1.37672554, 0.0413259793])
    y = np.array([0, 1, 1, 1, 1, 0])
    message = r"feature 0 has values too large to square in float64 \(beyond about 2e\+146\)"
    for make in (genprob.GaussianNB, lambda: genprob.QuadraticDiscriminantAnalysis(reg_param=0.1)):
        for scale in (1e154, 1e155):
            with pytest.raises(ValueError, match=message):
                make().fit(X[:, None] * scale, y)
        model = make().fit(X[:, None] * 1e145, y)
        assert np.isfinite(model.log_likelihood(X[:, None] * 1e145, y))
