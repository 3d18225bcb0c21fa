"""The Gaussian family: scikit-learn parity, penalties, sampling, degenerate input, precision."""

import warnings

import jax
import jax.numpy as jnp
import numpy as np
import numpyro.distributions as dist
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from sklearn import discriminant_analysis as skda
from sklearn import naive_bayes as sknb
from sklearn.covariance import OAS

import genprob
from genprob import core, datasets
from genprob.families.gaussian import DiagonalNormal, GaussianStory

DATASETS = ["iris", "wine", "breast_cancer", "digits"]
PROBA_TOL = 1e-8  # float64 parity with scikit-learn, max |delta p|


@pytest.fixture(scope="module")
def data():
    return {name: datasets.load(name) for name in DATASETS}


def max_abs(a, b):
    return float(np.max(np.abs(np.asarray(a) - np.asarray(b))))


def max_rel(a, b):
    b = np.asarray(b)
    return max_abs(a, b) / float(np.max(np.abs(b)))


def match_signs(ours, reference):
    """Flip each column of ``ours`` to the sign of the matching column of ``reference``."""
    signs = np.sign(np.sum(ours * reference, axis=0))
    signs[signs == 0] = 1.0
    return ours * signs


# -- parity with scikit-learn 1.9.1 ---------------------------------------------------------------
@pytest.mark.parametrize("name", DATASETS)
def test_gaussian_nb_matches_sklearn(data, name):
    X, y = data[name]
    ours, ref = genprob.GaussianNB().fit(X, y), sknb.GaussianNB().fit(X, y)
    assert max_abs(ours.predict_proba(X), ref.predict_proba(X)) < PROBA_TOL
    assert max_rel(ours.theta_, ref.theta_) < 1e-12
    assert max_rel(ours.var_, ref.var_) < 1e-10
    assert max_abs(ours.class_prior_, ref.class_prior_) < 1e-15
    assert ours.epsilon_ == pytest.approx(ref.epsilon_, rel=1e-10)
    np.testing.assert_array_equal(ours.predict(X), ref.predict(X))


LDA_CONFIGS = [
    {},
    {"store_covariance": True},
    {"solver": "lsqr"},
    {"solver": "lsqr", "shrinkage": 0.3},
    {"solver": "lsqr", "shrinkage": "auto"},
    {"solver": "eigen"},
    {"solver": "eigen", "shrinkage": "auto"},
]


@pytest.mark.parametrize("name", DATASETS)
@pytest.mark.parametrize(
    "config", LDA_CONFIGS, ids=lambda c: "-".join(map(str, c.values())) or "svd"
)
def test_lda_matches_sklearn(data, name, config):
    X, y = data[name]
    if name == "digits" and config == {"solver": "eigen"}:
        pytest.skip("scikit-learn's eigen solver fails on digits' singular within covariance")
    ours = genprob.LinearDiscriminantAnalysis(**config).fit(X, y)
    ref = skda.LinearDiscriminantAnalysis(**config).fit(X, y)
    reference_proba = ref.predict_proba(X)
    if (
        name == "breast_cancer"
        and config.get("solver") == "lsqr"
        and config.get("shrinkage") == "auto"
    ):
        # scikit-learn's lsqr solves the raw covariance (condition ~1e13 here): with "auto" its
        # own posteriors move by 4.3e-8 when the features are rescaled, which cannot change the
        # model (Ledoit-Wolf runs on standardized data, LDA is scale equivariant). The
        # well-conditioned reference is scikit-learn fitted on rescaled features.
        scale = X.std(axis=0)
        rescaled = skda.LinearDiscriminantAnalysis(**config).fit(X / scale, y)
        assert max_abs(reference_proba, rescaled.predict_proba(X / scale)) > PROBA_TOL
        reference_proba = rescaled.predict_proba(X / scale)
    else:
        assert max_rel(ours.coef_, ref.coef_) < 1e-8
        assert max_abs(ours.decision_function(X), ref.decision_function(X)) < 1e-6
    assert max_abs(ours.predict_proba(X), reference_proba) < PROBA_TOL
    assert max_abs(ours.means_, ref.means_) < 1e-12 * np.abs(X).max()
    assert max_abs(ours.priors_, ref.priors_) < 1e-15
    if hasattr(ref, "covariance_"):
        assert max_rel(ours.covariance_, ref.covariance_) < 1e-12
    else:
        assert not hasattr(ours, "covariance_")
    if config.get("solver", "svd") != "lsqr":
        ours_t, ref_t = ours.transform(X), ref.transform(X)
        assert ours_t.shape == ref_t.shape
        assert max_rel(match_signs(ours_t, ref_t), ref_t) < 1e-8
        assert max_abs(ours.explained_variance_ratio_, ref.explained_variance_ratio_) < 1e-10
    if config.get("solver", "svd") == "svd":
        assert max_abs(ours.xbar_, ref.xbar_) < 1e-12 * np.abs(X).max()


QDA_CONFIGS = [
    {"reg_param": 0.1},
    {},
    {"solver": "eigen", "shrinkage": "auto"},
    {"solver": "eigen", "shrinkage": 0.2},
]


@pytest.mark.parametrize("name", DATASETS)
@pytest.mark.parametrize(
    "config", QDA_CONFIGS, ids=lambda c: "-".join(map(str, c.values())) or "mle"
)
def test_qda_matches_sklearn(data, name, config):
    X, y = data[name]
    try:
        ref = skda.QuadraticDiscriminantAnalysis(store_covariance=True, **config).fit(X, y)
    except np.linalg.LinAlgError:
        # scikit-learn refuses a singular class covariance: so must we, with the same advice
        with pytest.raises(ValueError, match="not full rank.*(reg_param|shrinkage)"):
            genprob.QuadraticDiscriminantAnalysis(**config).fit(X, y)
        return
    ours = genprob.QuadraticDiscriminantAnalysis(store_covariance=True, **config).fit(X, y)
    assert max_abs(ours.predict_proba(X), ref.predict_proba(X)) < PROBA_TOL
    assert max_rel(ours.decision_function(X), ref.decision_function(X)) < 1e-10
    assert max_abs(ours.means_, ref.means_) < 1e-12 * np.abs(X).max()
    for k in range(len(ref.classes_)):
        assert max_rel(ours.covariance_[k], ref.covariance_[k]) < 1e-10
        assert max_rel(ours.scalings_[k], ref.scalings_[k]) < 1e-10
        # eigenvectors of distinct eigenvalues agree up to sign (compare the leading 3)
        lead = slice(0, 3)
        ours_r, ref_r = ours.rotations_[k][:, lead], ref.rotations_[k][:, lead]
        assert max_abs(match_signs(ours_r, ref_r), ref_r) < 1e-6


def test_lda_with_priors_matches_sklearn_for_every_solver(data):
    X, y = data["wine"]
    priors = [0.5, 0.2, 0.3]
    for solver, shrinkage in (("svd", None), ("lsqr", None), ("lsqr", "auto"), ("eigen", 0.1)):
        ours = genprob.LinearDiscriminantAnalysis(solver=solver, shrinkage=shrinkage, priors=priors)
        ref = skda.LinearDiscriminantAnalysis(solver=solver, shrinkage=shrinkage, priors=priors)
        ours.fit(X, y), ref.fit(X, y)
        assert max_abs(ours.predict_proba(X), ref.predict_proba(X)) < PROBA_TOL, solver


def test_covariance_estimator_matches_sklearn(data):
    X, y = data["wine"]
    for ours, ref in (
        (genprob.LinearDiscriminantAnalysis, skda.LinearDiscriminantAnalysis),
        (genprob.QuadraticDiscriminantAnalysis, skda.QuadraticDiscriminantAnalysis),
    ):
        fitted = ours(solver="eigen", covariance_estimator=OAS()).fit(X, y)
        reference = ref(solver="eigen", covariance_estimator=OAS()).fit(X, y)
        assert max_abs(fitted.predict_proba(X), reference.predict_proba(X)) < PROBA_TOL
    lda = genprob.LinearDiscriminantAnalysis(solver="eigen", covariance_estimator=OAS()).fit(X, y)
    ref = skda.LinearDiscriminantAnalysis(solver="eigen", covariance_estimator=OAS()).fit(X, y)
    ours_t, ref_t = lda.transform(X), ref.transform(X)
    assert max_rel(match_signs(ours_t, ref_t), ref_t) < 1e-8
    with pytest.raises(ValueError, match="not supported with svd"):
        genprob.LinearDiscriminantAnalysis(covariance_estimator=OAS()).fit(X, y)


def test_solvers_agree_on_a_rank_deficient_covariance(data):
    # digits: constant pixels make the pooled covariance singular. Every solver uses the
    # retained subspace, so they agree (scikit-learn's eigen solver fails here).
    X, y = data["digits"]
    svd = genprob.LinearDiscriminantAnalysis().fit(X, y)
    eigen = genprob.LinearDiscriminantAnalysis(solver="eigen").fit(X, y)
    assert max_abs(svd.predict_proba(X), eigen.predict_proba(X)) < 1e-10
    assert np.linalg.matrix_rank(svd.params_["covariance"]) < X.shape[1]


def test_decision_function_softmax_is_predict_proba(data):
    X, y = data["wine"]
    for est in (
        genprob.LinearDiscriminantAnalysis().fit(X, y),
        genprob.LinearDiscriminantAnalysis(solver="lsqr", shrinkage=0.5).fit(X, y),
        genprob.QuadraticDiscriminantAnalysis(reg_param=0.2).fit(X, y),
    ):
        scores = est.decision_function(X)
        proba = np.exp(scores - scores.max(axis=1, keepdims=True))
        proba /= proba.sum(axis=1, keepdims=True)
        assert max_abs(proba, est.predict_proba(X)) < 1e-12
    Xb, yb = data["breast_cancer"]
    lda = genprob.LinearDiscriminantAnalysis().fit(Xb, yb)
    log_odds = np.diff(lda.predict_log_proba(Xb), axis=1)[:, 0]
    assert lda.decision_function(Xb).shape == (len(Xb),)
    assert max_abs(lda.decision_function(Xb), log_odds) < 1e-8


def test_labels_may_be_any_hashable(data):
    X, y = data["iris"]
    names = np.array(["setosa", "versicolor", "virginica"])[y]
    ours = genprob.QuadraticDiscriminantAnalysis().fit(X, names)
    assert set(ours.predict(X)) <= set(names)
    assert ours.score(X, names) == pytest.approx(
        skda.QuadraticDiscriminantAnalysis().fit(X, names).score(X, names)
    )


# -- penalties: the regularized closed form is a MAP estimate ------------------------------------
slow = pytest.mark.slow
PENALIZED_STORIES = [
    GaussianStory(shared=False, reg_param=0.3),
    GaussianStory(shared=True, shrinkage=0.2, reg_param=0.1),
    GaussianStory(shared=True, shrinkage="auto"),
    GaussianStory(covariance="diag", shared=False, var_smoothing=0.05),
    # each case compiles a gradient program (~3 s): the remaining regularizers run as slow tests
    pytest.param(GaussianStory(shared=False, shrinkage="auto"), marks=slow),
    pytest.param(GaussianStory(shared=True, covariance_weights=(0.6, 0.3, 0.1)), marks=slow),
    pytest.param(GaussianStory(shared=True, estimator="unbiased"), marks=slow),
    pytest.param(GaussianStory(shared=False, estimator="unbiased", shrinkage=0.1), marks=slow),
    pytest.param(
        GaussianStory(covariance="diag", shared=True, var_smoothing=0.05, estimator="unbiased"),
        marks=slow,
    ),
]


def _objective_gradients(story, X, y):
    """Gradients of loglik and loglik + log_penalty at the closed form (means and spread).

    The covariance is parametrized as sym(theta) = (theta + theta^T) / 2, so the gradient is the
    one in the space of symmetric matrices; variances are used as they are.
    """
    with jax.enable_x64(True):
        Xj, yj = jnp.asarray(X), jnp.asarray(y)
        R = core.one_hot_responsibilities(yj, 3)
        stats = core.sufficient_statistics(story, Xj, R)
        params = core.maximize(story, stats)
        spread = story.spread_name

        def objective(free, penalized):
            value = dict(params, means=free["means"])
            value[spread] = free["spread"]
            if spread == "covariance":
                value[spread] = 0.5 * (free["spread"] + jnp.swapaxes(free["spread"], -1, -2))
            total = core.log_likelihood(story, value, Xj, yj)
            if penalized:
                total = total + story.log_penalty(value, stats["emission"])
            return total

        free = {"means": params["means"], "spread": params[spread]}
        gradient = jax.jit(jax.grad(objective), static_argnums=1)
        plain, penalized = gradient(free, False), gradient(free, True)
        flat = lambda g: np.concatenate([np.ravel(v) for v in jax.tree_util.tree_leaves(g)])  # noqa: E731
        return flat(plain), flat(penalized)


@pytest.mark.parametrize("story", PENALIZED_STORIES, ids=repr)
def test_closed_form_maximizes_loglik_plus_log_penalty(data, story):
    X, y = data["iris"]
    plain, penalized = _objective_gradients(story, X, y)
    # the regularization moves the estimate off the MLE: the likelihood alone is not stationary
    assert np.max(np.abs(plain)) > 1.0
    assert np.max(np.abs(penalized)) < 1e-8 * np.max(np.abs(plain))


@pytest.mark.parametrize(
    "story",
    [
        GaussianStory(),
        pytest.param(GaussianStory(shared=False), marks=slow),
        pytest.param(GaussianStory("diag", False), marks=slow),
    ],
    ids=repr,
)
def test_mle_has_zero_penalty_and_zero_gradient(data, story):
    X, y = data["iris"]
    assert story.log_penalty({}, {}) == 0.0
    plain, _ = _objective_gradients(story, X, y)
    assert np.max(np.abs(plain)) < 1e-8


def test_log_penalty_formulas(data):
    X, y = data["iris"]
    with jax.enable_x64(True):
        Xj, R = jnp.asarray(X), core.one_hot_responsibilities(y, 3)
        # reg_param r: -(N_k r / (2 (1 - r))) [log det Sigma_k + tr Sigma_k^-1], up to a constant
        r = 0.3
        story = GaussianStory(shared=False, reg_param=r)
        stats = core.sufficient_statistics(story, Xj, R)
        params = core.maximize(story, stats)
        counts = np.asarray(stats["class_counts"])

        def formula(cov):
            _, logdet = np.linalg.slogdet(cov)
            trace = np.trace(np.linalg.inv(cov), axis1=-2, axis2=-1)
            return np.sum(-(counts * r / (2 * (1 - r))) * (logdet + trace))

        other = dict(params, covariance=params["covariance"] * 1.7 + 0.1 * jnp.eye(4))
        ours = story.log_penalty(other, stats["emission"]) - story.log_penalty(
            params, stats["emission"]
        )
        expected = formula(np.asarray(other["covariance"])) - formula(
            np.asarray(params["covariance"])
        )
        assert float(ours) == pytest.approx(expected, rel=1e-10)
        # var_smoothing e: -sum_kj N_k e maxVar / (2 sigma^2_kj)
        story = GaussianStory(covariance="diag", shared=False, var_smoothing=0.05)
        stats = core.sufficient_statistics(story, Xj, R)
        variances = jnp.full((3, 4), 0.7)
        expected = -4 * np.sum(counts * 0.05 * X.var(axis=0).max() / (2 * 0.7))  # 4 features
        value = story.log_penalty({"variances": variances}, stats["emission"])
        assert float(value) == pytest.approx(expected, rel=1e-10)
    with pytest.raises(ValueError, match="point mass"):
        GaussianStory(reg_param=1.0).log_penalty(params, stats["emission"])


# -- the generative direction ----------------------------------------------------------------------
def _z_scores(estimate, truth, standard_error):
    return np.abs(np.asarray(estimate) - np.asarray(truth)) / np.asarray(standard_error)


@pytest.mark.parametrize(
    "make", [genprob.QuadraticDiscriminantAnalysis, genprob.LinearDiscriminantAnalysis]
)
def test_sampling_and_refitting_recovers_parameters(data, make):
    X, y = data["iris"]
    model = make().fit(X, y)
    Xs, ys = model.sample(100_000, random_state=0)
    refit = make().fit(Xs, ys)
    counts = np.array([np.sum(ys == c) for c in model.classes_])
    n = counts.sum()
    prior = model.priors_
    # class prior: multinomial proportions, SE = sqrt(pi (1 - pi) / n)
    assert np.max(_z_scores(refit.priors_, prior, np.sqrt(prior * (1 - prior) / n))) < 5
    covariance = model.params_["covariance"]
    per_class = np.broadcast_to(covariance, (3, 4, 4))
    variances = np.diagonal(per_class, axis1=1, axis2=2)
    # means: SE = sqrt(Sigma_jj / N_k)
    assert np.max(_z_scores(refit.means_, model.means_, np.sqrt(variances / counts[:, None]))) < 5
    # covariance entries of a Gaussian sample: Var(S_ij) = (Sigma_ii Sigma_jj + Sigma_ij^2) / N
    # (N_k per class, the pooled N for LDA)
    size = counts[:, None, None] if covariance.ndim == 3 else n
    outer = variances[..., :, None] * variances[..., None, :]
    se = np.sqrt((outer + per_class**2) / size)
    se = se if covariance.ndim == 3 else se[0]
    assert np.max(_z_scores(refit.params_["covariance"], covariance, se)) < 5


def test_gaussian_nb_sampling_recovers_parameters(data):
    X, y = data["wine"]
    model = genprob.GaussianNB(var_smoothing=0).fit(X, y)
    Xs, ys = model.sample(100_000, random_state=1)
    refit = genprob.GaussianNB(var_smoothing=0).fit(Xs, ys)
    counts = refit.class_count_[:, None]
    # means: SE = sigma / sqrt(N_k); variances: SE = sigma^2 sqrt(2 / N_k)
    assert np.max(_z_scores(refit.theta_, model.theta_, np.sqrt(model.var_ / counts))) < 5
    assert np.max(_z_scores(refit.var_, model.var_, model.var_ * np.sqrt(2 / counts))) < 5


# -- numerics --------------------------------------------------------------------------------------
def _estimators():
    return [
        genprob.GaussianNB(),
        genprob.LinearDiscriminantAnalysis(),
        genprob.LinearDiscriminantAnalysis(solver="lsqr", shrinkage="auto"),
        genprob.QuadraticDiscriminantAnalysis(tol=0.0),
    ]


def test_extreme_offsets_and_tiny_scales_leave_posteriors_unchanged(data):
    X, y = data["iris"]
    offsets = np.array([1e6, -1e6, 1e6, -1e6])
    for est in _estimators():
        reference = est.fit(X, y).predict_proba(X)
        shifted = est.fit(X + offsets, y).predict_proba(X + offsets)
        tiny = est.fit(X * 1e-12, y).predict_proba(X * 1e-12)
        for proba in (shifted, tiny):
            assert np.all(np.isfinite(proba))
            np.testing.assert_allclose(proba.sum(axis=1), 1.0, rtol=1e-12)
        # location and scale equivariance (Gaussian NB's smoothing is relative to the variances)
        assert max_abs(shifted, reference) < 1e-6
        assert max_abs(tiny, reference) < 1e-8


def test_far_away_points_get_finite_posteriors(data):
    X, y = data["iris"]
    far = np.array([[1e6, -1e6, 1e6, -1e6], [-1e6, 1e6, -1e6, 1e6], [0.0, 0.0, 0.0, 1e6]])
    for est in _estimators():
        est.fit(X, y)
        log_proba = est.predict_log_proba(far)
        assert np.all(np.isfinite(log_proba))
        np.testing.assert_allclose(np.exp(log_proba).sum(axis=1), 1.0, rtol=1e-12)
        assert np.all(np.isfinite(est.predict_joint_log_proba(far)))


def test_float32_opt_in_agrees_with_float64(data):
    X, y = data["iris"]
    for make in (
        genprob.GaussianNB,
        genprob.LinearDiscriminantAnalysis,
        genprob.QuadraticDiscriminantAnalysis,
    ):
        double = make().fit(X, y)
        single = make(dtype="float32").fit(X, y)
        assert single.params_["means"].dtype == np.float32
        assert double.params_["means"].dtype == np.float64
        assert max_abs(single.predict_proba(X), double.predict_proba(X)) < 1e-4
    assert jnp.zeros(1).dtype == jnp.float32  # the global JAX default is untouched


# -- degenerate input ------------------------------------------------------------------------------
ALL = [
    genprob.GaussianNB,
    genprob.LinearDiscriminantAnalysis,
    genprob.QuadraticDiscriminantAnalysis,
]


@pytest.mark.parametrize("make", ALL)
def test_bad_input_is_rejected_with_a_clear_message(data, make):
    X, y = data["iris"]
    bad = X.copy()
    bad[3, 2] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        make().fit(bad, y)
    bad[3, 2] = np.inf
    with pytest.raises(ValueError, match="infinity"):
        make().fit(bad, y)
    fitted = make().fit(X, y)
    with pytest.raises(ValueError, match="3 features.*expecting 4"):
        fitted.predict(X[:, :3])
    with pytest.raises(ValueError, match="NaN"):
        fitted.predict_proba(np.where(X > 7, np.nan, X))
    if isinstance(make(), genprob.GaussianNB):
        # naive Bayes fits one class, as scikit-learn does (tests/test_dropin.py)
        assert make().fit(X[:50], y[:50]).predict_proba(X[:3]).tolist() == [[1.0]] * 3
    else:
        with pytest.raises(ValueError, match="at least 2 classes"):
            make().fit(X[:50], y[:50])


def test_one_sample_class_in_qda():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(21, 2))
    y = np.array([0] * 10 + [1] * 10 + [2])
    with pytest.raises(ValueError, match="only 1 sample in class 2.*reg_param"):
        genprob.QuadraticDiscriminantAnalysis().fit(X, y)
    # regularized, the lonely class has covariance reg_param * I: a proper Gaussian
    qda = genprob.QuadraticDiscriminantAnalysis(reg_param=0.5).fit(X, y)
    np.testing.assert_allclose(qda.params_["covariance"][2], 0.5 * np.eye(2), atol=1e-15)
    assert not hasattr(genprob.QuadraticDiscriminantAnalysis(), "params_")


def test_more_features_than_samples():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(12, 30))
    y = np.repeat([0, 1, 2], 4)
    # LDA: the pooled covariance has rank n - K = 9 < 30; the retained subspace matches sklearn
    ours = genprob.LinearDiscriminantAnalysis().fit(X, y)
    ref = skda.LinearDiscriminantAnalysis().fit(X, y)
    X_new = rng.normal(size=X.shape)  # same shape as X: reuses the compiled scoring
    assert max_abs(ours.predict_proba(X_new), ref.predict_proba(X_new)) < PROBA_TOL
    ours_t, ref_t = ours.transform(X_new), ref.transform(X_new)
    assert max_rel(match_signs(ours_t, ref_t), ref_t) < 1e-8
    # QDA: singular class covariances are refused, and accepted once regularized
    with pytest.raises(ValueError, match="class 0 is not full rank.*Increase `reg_param`"):
        genprob.QuadraticDiscriminantAnalysis().fit(X, y)
    proba = genprob.QuadraticDiscriminantAnalysis(reg_param=0.1).fit(X, y).predict_proba(X_new)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0, rtol=1e-12)
    # Gaussian NB: diagonal, always fine
    ours = genprob.GaussianNB().fit(X, y)
    assert max_abs(ours.predict_proba(X_new), sknb.GaussianNB().fit(X, y).predict_proba(X_new)) < (
        PROBA_TOL
    )


def test_zero_variance_feature(data):
    X, y = data["iris"]
    X = X.copy()
    X[:, 2] = 3.7  # iris' shape, so the compiled iris programs are reused
    # Gaussian NB: var_smoothing gives the constant feature a small variance (as scikit-learn)
    ours, ref = genprob.GaussianNB().fit(X, y), sknb.GaussianNB().fit(X, y)
    assert max_abs(ours.predict_proba(X), ref.predict_proba(X)) < PROBA_TOL
    with pytest.raises(ValueError, match="feature 2 has zero variance.*var_smoothing"):
        genprob.GaussianNB(var_smoothing=0.0).fit(X, y)
    # LDA: the constant feature's direction is dropped (it carries no information)
    lda = genprob.LinearDiscriminantAnalysis().fit(X, y)
    ref = skda.LinearDiscriminantAnalysis().fit(X, y)
    assert max_abs(lda.predict_proba(X), ref.predict_proba(X)) < PROBA_TOL
    assert np.all(lda.coef_[:, 2] == 0)
    # QDA: a singular class covariance is an error until regularized
    with pytest.raises(ValueError, match="not full rank.*reg_param"):
        genprob.QuadraticDiscriminantAnalysis().fit(X, y)
    qda = genprob.QuadraticDiscriminantAnalysis(reg_param=0.1).fit(X, y)
    ref = skda.QuadraticDiscriminantAnalysis(reg_param=0.1).fit(X, y)
    assert max_abs(qda.predict_proba(X), ref.predict_proba(X)) < PROBA_TOL


def test_priors_validation(data):
    X, y = data["iris"]
    with pytest.raises(ValueError, match="sum of the priors should be 1"):
        genprob.GaussianNB(priors=[0.5, 0.3, 0.3]).fit(X, y)
    with pytest.raises(ValueError, match="Number of priors must match.*got 2 priors for 3"):
        genprob.GaussianNB(priors=[0.5, 0.5]).fit(X, y)
    with pytest.raises(ValueError, match="non-negative.*classes \\[np.int64\\(2\\)\\]|non-neg"):
        genprob.GaussianNB(priors=[0.7, 0.5, -0.2]).fit(X, y)
    nb = genprob.GaussianNB(priors=[0.2, 0.3, 0.5]).fit(X, y)
    ref = sknb.GaussianNB(priors=[0.2, 0.3, 0.5]).fit(X, y)
    assert max_abs(nb.predict_proba(X), ref.predict_proba(X)) < PROBA_TOL
    for make in (genprob.LinearDiscriminantAnalysis, genprob.QuadraticDiscriminantAnalysis):
        with pytest.warns(UserWarning, match="sum to 2, not 1: renormalizing"):
            fitted = make(priors=[0.4, 0.6, 1.0]).fit(X, y)
        np.testing.assert_allclose(fitted.priors_, [0.2, 0.3, 0.5])
        with pytest.raises(ValueError, match="non-negative"):
            make(priors=[1.5, 0.5, -1.0]).fit(X, y)
        with pytest.raises(ValueError, match="Number of priors"):
            make(priors=[1.0]).fit(X, y)


def test_invalid_hyperparameters(data):
    X, y = data["iris"]
    with pytest.raises(NotImplementedError, match="shrinkage not supported with 'svd'"):
        genprob.LinearDiscriminantAnalysis(shrinkage=0.1).fit(X, y)
    with pytest.raises(ValueError, match="shrinkage not supported with 'svd'"):
        genprob.QuadraticDiscriminantAnalysis(shrinkage="auto").fit(X, y)
    with pytest.raises(ValueError, match="reg_param is only used by solver='svd'"):
        genprob.QuadraticDiscriminantAnalysis(solver="eigen", reg_param=0.1).fit(X, y)
    with pytest.raises(ValueError, match="n_components cannot be larger"):
        genprob.LinearDiscriminantAnalysis(n_components=3).fit(X, y)
    with pytest.raises(ValueError, match="solver must be"):
        genprob.LinearDiscriminantAnalysis(solver="cholesky").fit(X, y)
    with pytest.raises(NotImplementedError, match="transform not implemented for 'lsqr'"):
        genprob.LinearDiscriminantAnalysis(solver="lsqr").fit(X, y).transform(X)
    lda = genprob.LinearDiscriminantAnalysis(n_components=1).fit(X, y)
    assert lda.transform(X).shape == (150, 1)
    assert list(lda.get_feature_names_out()) == ["lineardiscriminantanalysis0"]


# -- invariances (property-based) ------------------------------------------------------------------
_ROWS, _FEATURES = 18, 3
_labels = np.repeat([0, 1, 2], _ROWS // 3)


def _fit_story(story, X, y):
    with jax.enable_x64(True):
        R = core.one_hot_responsibilities(jnp.asarray(y), 3)
        # the unchecked path: degenerate draws (singular covariances) are part of the property
        params = core.maximize(story, core.sufficient_statistics(story, jnp.asarray(X), R))
        return {k: np.asarray(v) for k, v in params.items()}


@settings(max_examples=25, deadline=None)
@given(
    X=arrays(np.float64, (_ROWS, _FEATURES), elements=st.floats(-50, 50, allow_subnormal=False)),
    order=st.permutations(range(_ROWS)),
    scale=arrays(np.float64, (_FEATURES,), elements=st.floats(0.01, 100)),
    class_order=st.permutations(range(3)),
)
# constant features: their squares about the reference point are rounding noise, which the
# centering floor snaps to 0 however the program sums them
@example(
    X=np.full((_ROWS, _FEATURES), 0.72512049),
    order=list(range(_ROWS)),
    scale=np.full(_FEATURES, 0.75),
    class_order=[0, 1, 2],
)
def test_parameters_are_invariant_to_row_order_and_equivariant_to_scaling(
    X, order, scale, class_order
):
    order, class_order = np.asarray(order), np.asarray(class_order)

    def tolerance(data, values, rtol):
        # relative to the values, plus the rounding of "squares - between" on centered data
        # (which dominates when the classes sit far apart compared to their spread)
        spread = np.max((data - data.mean(axis=0)) ** 2)
        return rtol * np.max(np.abs(values)) + 1e-13 * spread + 1e-300

    lda, qda = GaussianStory(rank_tol=1e-4), GaussianStory(shared=False)
    for story in (lda, qda):
        base = _fit_story(story, X, _labels)
        mean_tol = 1e-12 * (np.abs(X).max() + 1)
        cov_tol = tolerance(X, base["covariance"], 1e-10)
        # permuting rows: the same statistics summed in another order
        permuted = _fit_story(story, X[order], _labels[order])
        assert max_abs(permuted["means"], base["means"]) <= mean_tol
        assert max_abs(permuted["covariance"], base["covariance"]) <= cov_tol
        # renaming classes (old class k becomes class_order[k]) permutes per-class parameters
        relabeled = _fit_story(story, X, class_order[_labels])
        assert max_abs(relabeled["means"][class_order], base["means"]) <= mean_tol
        if story is qda:
            assert max_abs(relabeled["covariance"][class_order], base["covariance"]) <= cov_tol
        # scaling feature j by c_j scales means by c_j and covariances by c_i c_j
        scaled = _fit_story(story, X * scale, _labels)
        assert max_abs(scaled["means"], base["means"] * scale) <= 1e-12 * (
            np.abs(X * scale).max() + 1
        )
        expected = base["covariance"] * np.outer(scale, scale)
        assert max_abs(scaled["covariance"], expected) <= tolerance(X * scale, expected, 1e-9)


def test_rows_with_zero_weight_change_nothing(data):
    X, y = data["wine"]
    extra = np.vstack([X, X[:5] * 3.0])
    weights = np.r_[np.ones(len(X)), np.zeros(5)]
    for make in ALL:
        base = make().fit(X, y)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            weighted = make().fit(extra, np.r_[y, y[:5]], sample_weight=weights)
        assert max_abs(weighted.predict_proba(X), base.predict_proba(X)) < 1e-8


@pytest.mark.parametrize(
    ("story", "fragments"),
    [
        (
            GaussianStory(covariance="diag", shared=False),
            ["feature 'const' has zero variance", "in class 1", "var_smoothing"],
        ),
        (
            GaussianStory(covariance="diag", shared=True),
            ["feature 'const' has zero variance", "shared by all classes"],
        ),
        (
            GaussianStory(covariance="full", shared=False),
            ["covariance in class 1 is singular", "reg_param"],
        ),
        (
            GaussianStory(covariance="full", shared=True),
            ["shared covariance is singular", "shrinkage"],
        ),
    ],
)
def test_degenerate_gaussian_fit_of_any_face_is_an_error_naming_where(story, fragments):
    # A constant feature makes every unregularized Gaussian MLE degenerate; the generic
    # estimator face must say so instead of predicting from NaNs.
    import pandas as pd

    rng = np.random.default_rng(0)
    frame = pd.DataFrame({"x": rng.normal(size=40), "const": np.full(40, 3.0)})
    y = np.repeat([1, 2], 20)
    estimator = genprob.GenerativeClassifier(story)
    with pytest.raises(ValueError) as raised:
        estimator.fit(frame, y)
    for fragment in fragments:
        assert fragment in str(raised.value), str(raised.value)
    assert not hasattr(estimator, "params_")
    regularized = GaussianStory(covariance="diag", shared=story.shared, var_smoothing=1e-9)
    if story.covariance == "diag":
        fitted = genprob.GenerativeClassifier(regularized).fit(frame, y)
        assert np.isfinite(fitted.predict_proba(frame)).all()


@pytest.mark.parametrize("shared", [False, True], ids=["per-class", "auto-shrinkage"])
def test_class_scatter_statistics_do_not_depend_on_row_order_or_hardness(shared):
    """Blocks of one class take a single product, mixed blocks K: both equal the plain sums."""
    rng = np.random.default_rng(7)
    num_rows, num_features = 3 * 4096 + 123, 3  # several blocks and a ragged tail
    y = np.sort(rng.integers(0, 3, size=num_rows))  # grouped by class: mostly one-class blocks
    X = rng.normal(size=(num_rows, num_features)) * 5.0 + 40.0
    weights = rng.uniform(0.5, 2.0, size=num_rows)
    soft = rng.dirichlet(np.ones(3), size=num_rows)
    story = GaussianStory(shared=shared, shrinkage="auto" if shared else 0.0)

    def plain(X, R, shift):
        """The class scatter about the statistics' reference point (near the data mean), by
        one einsum over all classes."""
        # a 64-row sample's mean: within a few sd / 8 of the mean (sd 5), far nearer than 40
        np.testing.assert_array_less(np.abs(shift - X.mean(axis=0)), 2.0)
        centered = X - shift
        return np.einsum("nk,nd,ne->kde", R, centered, centered), R.T @ centered

    hard = np.eye(3)[y] * weights[:, None]
    shuffled = rng.permutation(num_rows)
    with jax.enable_x64(True):
        for X_rows, R in [(X, hard), (X[shuffled], hard[shuffled]), (X, soft)]:
            stats = core.sufficient_statistics(story, jnp.asarray(X_rows), jnp.asarray(R))
            emission = stats["emission"]
            squares = emission["class_squares"] if shared else emission["squares"]
            expected_squares, expected_sums = plain(X_rows, R, np.asarray(emission["shift"]))
            np.testing.assert_allclose(squares, expected_squares, rtol=1e-10)
            np.testing.assert_allclose(emission["sums"], expected_sums, rtol=1e-9, atol=1e-8)


# -- the diagonal emission's matrix form ----------------------------------------------------------
def _diagonal_normal_case(seed, variance_scale=1.0, num_rows=300, num_classes=3, num_features=7):
    rng = np.random.default_rng(seed)
    loc = rng.normal(0.0, 2.0, (num_classes, num_features))
    variances = variance_scale * rng.uniform(0.2, 2.0, (num_classes, num_features))
    rows = loc[rng.integers(0, num_classes, num_rows)] + rng.normal(0.0, 1.5, (num_rows, 1)) * (
        np.sqrt(variances.mean(axis=0))
    )
    return jnp.asarray(loc), jnp.asarray(variances), jnp.asarray(rows)


def _normal_log_prob(loc, variances, rows):
    return dist.Normal(loc, jnp.sqrt(variances)).to_event(1).log_prob(rows[:, None, :])


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_diagonal_normal_matches_numpyro_normal(seed):
    with jax.enable_x64(True):
        loc, variances, rows = _diagonal_normal_case(seed)
        emission = DiagonalNormal(loc, variances)
        assert emission.batch_shape == (3,) and emission.event_shape == (7,)
        ours = emission.log_prob(rows[:, None, :])
        reference = _normal_log_prob(loc, variances, rows)
        np.testing.assert_allclose(ours, reference, rtol=1e-10, atol=1e-10)
        # other value shapes agree
        np.testing.assert_allclose(emission.log_prob(rows[0]), ours[0], rtol=1e-12)
        every = jnp.broadcast_to(rows[:, None, :], (rows.shape[0], 3, 7))
        np.testing.assert_allclose(emission.log_prob(every), ours, rtol=1e-10, atol=1e-10)


def test_diagonal_normal_gradients_match_elementwise():
    with jax.enable_x64(True):
        for scale in (1.0, 1e-9):  # the matrix form, then the elementwise fallback
            loc, variances, rows = _diagonal_normal_case(3, variance_scale=scale)
            weights = jnp.asarray(np.random.default_rng(4).normal(size=(rows.shape[0], 3)))

            def ours(loc, variances, rows=rows, weights=weights):
                return jnp.sum(weights * DiagonalNormal(loc, variances).log_prob(rows[:, None, :]))

            def reference(loc, variances, rows=rows, weights=weights):
                return jnp.sum(weights * _normal_log_prob(loc, variances, rows))

            for got, want in zip(
                jax.grad(ours, (0, 1))(loc, variances),
                jax.grad(reference, (0, 1))(loc, variances),
                strict=True,
            ):
                np.testing.assert_allclose(got, want, rtol=1e-9)


def test_diagonal_normal_is_exact_near_far_narrow_classes():
    # Tiny variances and class means far from the origin: rows at their class mean are scored
    # term by term, to rounding.
    with jax.enable_x64(True):
        loc, variances, rows = _diagonal_normal_case(5, variance_scale=1e-9)
        loc = loc + 100.0
        rows = jnp.concatenate([loc, rows + 100.0])
        emission = DiagonalNormal(loc, variances)
        log_prob = jax.jit(emission.log_prob)(rows[:, None, :])
        np.testing.assert_allclose(log_prob, _normal_log_prob(loc, variances, rows), rtol=1e-13)
        np.testing.assert_allclose(
            log_prob[np.arange(3), np.arange(3)], emission.log_prob(loc), rtol=1e-14
        )


def test_diagonal_normal_samples_and_moments():
    with jax.enable_x64(True):
        loc, variances, _ = _diagonal_normal_case(6)
        emission = DiagonalNormal(loc, variances)
        draws = emission.sample(jax.random.PRNGKey(0), (20000,))
        assert draws.shape == (20000, 3, 7)
        np.testing.assert_allclose(draws.mean(axis=0), emission.mean, atol=0.05)
        np.testing.assert_allclose(draws.var(axis=0), emission.variance, rtol=0.05)


def test_numpy_factors_of_covariances_match_the_compiled_factorization():
    """Full covariances factorized in NumPy (NumPy in, NumPy out) give the compiled
    factorization's whitening products and log normalizers to rounding: the same code."""
    from genprob.engine._dtype import precision
    from genprob.families.gaussian import distributions

    rng = np.random.default_rng(11)
    A = rng.normal(size=(3, 4, 4))
    covariances = A @ np.swapaxes(A, -1, -2) + 0.5 * np.eye(4)
    means = rng.normal(size=(3, 4))
    host = distributions.full_factors(covariances, None)
    assert all(isinstance(v, np.ndarray) for v in host.values())
    with precision("float64"):
        compiled = jax.jit(distributions.full_factors, static_argnums=1)(
            jnp.asarray(covariances), None
        )
        compiled = {k: np.asarray(v) for k, v in compiled.items()}
    for name in ("whitening", "coloring", "log_normalizer", "rank"):
        np.testing.assert_allclose(host[name], compiled[name], rtol=1e-12, atol=1e-14)
    indefinite = covariances.copy()
    indefinite[1] *= -1.0
    assert np.all(np.isnan(distributions.full_factors(indefinite, None)["whitening"]))
    # through the story: per class (Cholesky), shared with a rank tolerance (eigenvalues)
    for shared in (False, True):
        story = GaussianStory(covariance="full", shared=shared, rank_tol=1e-4 if shared else None)
        spread = covariances if not shared else covariances[0]
        params = {"means": means, "covariance": spread, "class_prior": np.full(3, 1 / 3)}
        factors = {k: v for k, v in story.factorize(params).items() if k != "linear_terms"}
        with precision("float64"):
            reference = distributions.full_factors(jnp.asarray(spread), story.rank_tol)
            reference = {k: np.asarray(v) for k, v in reference.items()}
        precision_host = factors["whitening"] @ np.swapaxes(factors["whitening"], -1, -2)
        np.testing.assert_allclose(precision_host, np.linalg.inv(spread), rtol=1e-10)
        np.testing.assert_allclose(
            factors["log_normalizer"], reference["log_normalizer"], rtol=1e-12
        )
        if shared:  # coef_ in NumPy equals the compiled linear discriminants
            host_coef, host_intercept = story.linear_discriminants(
                {**params, "factorization": factors}
            )
            with precision("float64"):
                coef, intercept = jax.jit(story.linear_discriminants)(
                    {k: jnp.asarray(v) for k, v in params.items()}
                )
            np.testing.assert_allclose(host_coef, np.asarray(coef), rtol=1e-10)
            np.testing.assert_allclose(host_intercept, np.asarray(intercept), rtol=1e-10)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize(
    "name, setting",
    [("qda", 0.0), ("qda", 0.3), ("gnb", 1e-9), ("gnb", 1e-2)],
)
def test_host_scores_of_per_class_spreads_match_the_device_program(dtype, name, setting):
    """QDA and Gaussian NB predictions of NumPy rows are the compiled program's (the same
    code), and scikit-learn's posteriors; rows whose squares overflow are refused by scale."""
    from tests._host_scoring import host_and_device_log_proba

    rng = np.random.default_rng(7)
    X = np.concatenate([rng.normal(m, s, size=(60, 4)) for m, s in ((0, 1), (2, 0.5), (-1, 2))])
    X[:, 1] += 1e3  # far from the origin: each class is whitened about its own mean
    y = np.repeat([0, 1, 2], 60)
    if name == "qda":
        estimator = genprob.QuadraticDiscriminantAnalysis(reg_param=setting, dtype=dtype)
        reference = skda.QuadraticDiscriminantAnalysis(reg_param=setting).fit(X, y)
    else:
        estimator = genprob.GaussianNB(var_smoothing=setting, dtype=dtype)
        reference = sknb.GaussianNB(var_smoothing=setting).fit(X, y)
    estimator.fit(X, y)
    rows = np.concatenate([np.resize(X, (2000, 4)), X[:20] * 1e-30]).astype(dtype)
    on_host, tolerance = host_and_device_log_proba(estimator, rows, dtype)
    np.testing.assert_allclose(estimator.predict_proba(rows), np.exp(on_host), atol=tolerance)
    np.testing.assert_array_equal(estimator.predict(rows), np.argmax(on_host, axis=1))
    np.testing.assert_allclose(
        estimator.predict_proba(X.astype(dtype)),
        reference.predict_proba(X),
        atol=1e-8 if dtype == "float64" else 1e-3,
    )
    huge = 1e300 if dtype == "float64" else 1e30
    scale = "1.3e[+]154" if dtype == "float64" else "1.8e[+]19"
    with pytest.raises(ValueError, match=rf"rows 0, 1, .* too large to score .*{scale}"):
        estimator.predict_proba(np.concatenate([X[:20] * huge, X[:5]]).astype(dtype))


def _class_with_eigenvalues(values, rng):
    """Rows whose (MLE) covariance has exactly the eigenvalues ``values``: centered, whitened
    Gaussian rows, rotated and scaled."""
    Z = rng.normal(size=(200, len(values)))
    Z -= Z.mean(axis=0)
    Z = Z @ np.linalg.inv(np.linalg.cholesky(Z.T @ Z / len(Z))).T  # covariance exactly I
    rotation, _ = np.linalg.qr(rng.normal(size=(len(values), len(values))))
    return Z @ (np.sqrt(values)[:, None] * rotation)


@pytest.mark.parametrize("smallest, full_rank", [(2.0, True), (0.5, False)])
def test_qda_rank_check_against_tol(smallest, full_rank):
    # the fit's rank check (a Cholesky factorization of cov - tol I) against the eigenvalues
    rng = np.random.default_rng(5)
    tol = 1e-3
    X = np.vstack(
        [
            _class_with_eigenvalues(np.array([3.0, 1.0, smallest * tol]), rng),
            _class_with_eigenvalues(np.array([2.0, 1.0, 0.5]), rng) + 5.0,
        ]
    )
    y = np.repeat([0, 1], 200)
    estimator = genprob.QuadraticDiscriminantAnalysis(tol=tol)
    if not full_rank:
        with pytest.raises(np.linalg.LinAlgError, match=r"class 0 is not full rank.*1 of its 3"):
            estimator.fit(X, y)
        return
    estimator.fit(X, y)
    np.testing.assert_allclose(estimator.scalings_[0], [3.0, 1.0, smallest * tol], rtol=1e-9)


def test_qda_rotations_and_scalings_computed_on_first_use_and_after_each_fit(tmp_path):
    rng = np.random.default_rng(6)
    X, y = rng.normal(size=(300, 4)) * [1.0, 2.0, 3.0, 4.0], np.repeat([0, 1, 2], 100)
    estimator = genprob.QuadraticDiscriminantAnalysis().fit(X, y)
    assert "rotations_" not in vars(estimator) and "scalings_" not in vars(estimator)
    for k, covariance in enumerate(estimator.params_["covariance"]):
        values, vectors = np.linalg.eigh(covariance)
        np.testing.assert_array_equal(estimator.scalings_[k], values[::-1])
        np.testing.assert_array_equal(estimator.rotations_[k], vectors[:, ::-1])
    first = estimator.scalings_[0]
    estimator.fit(X * 2.0, y)  # a refit forgets the previous fit's eigendecomposition
    np.testing.assert_allclose(estimator.scalings_[0], 4.0 * first, rtol=1e-12)
    # a model file holds them when they were computed, and loading recomputes them otherwise
    path = tmp_path / "qda.npz"
    genprob.io.persistence.save(estimator, path)
    loaded = genprob.io.persistence.load(path)
    np.testing.assert_array_equal(loaded.scalings_[1], estimator.scalings_[1])
    fresh = genprob.QuadraticDiscriminantAnalysis().fit(X, y)
    genprob.io.persistence.save(fresh, path)
    loaded = genprob.io.persistence.load(path)
    np.testing.assert_array_equal(loaded.rotations_[2], fresh.rotations_[2])
    with pytest.raises(AttributeError, match="no attribute 'rotations_'"):
        _ = genprob.QuadraticDiscriminantAnalysis().rotations_
    assert not hasattr(genprob.QuadraticDiscriminantAnalysis(), "scalings_")


def test_messages_name_string_classes_as_the_caller_wrote_them():
    """Issue 56: a message about one class names its label, never its code."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(30, 2))
    y = np.array(["ant"] * 10 + ["bee"] * 10 + ["cat"] * 10)
    constant = X.copy()
    constant[10:20, 1] = 1.0
    with pytest.raises(ValueError, match="feature 1 has zero variance in class bee") as caught:
        genprob.GaussianNB(var_smoothing=0.0).fit(constant, y)
    assert "class 1" not in str(caught.value)
    with pytest.raises(ValueError, match="only 1 sample in class cat, covariance"):
        genprob.QuadraticDiscriminantAnalysis().fit(X[:21], y[:21])
    weight = np.where(y == "bee", 0.0, 1.0)
    with pytest.raises(ValueError, match=r"classes \['bee'\] have zero total sample weight"):
        genprob.LinearDiscriminantAnalysis().fit(X, y, sample_weight=weight)
