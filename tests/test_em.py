"""Semi-supervised EM: the λ-weighted marginal likelihood, its EM fit, and the estimator face."""

import itertools
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
import pytest
from numpyro.distributions.transforms import biject_to
from numpyro.infer.util import log_density
from scipy.special import logsumexp
from scipy.stats import multivariate_normal
from sklearn.exceptions import ConvergenceWarning

import genprob
from genprob import core
from genprob.datasets import load_digits, load_iris
from genprob.engine._dtype import precision
from genprob.engine.capabilities import has_closed_form
from genprob.engine.em import encode_partial_labels, fit_em, weighted_log_likelihood
from genprob.families.bernoulli import BernoulliStory
from genprob.families.categorical import CategoricalStory
from genprob.families.gaussian import GaussianStory
from genprob.families.mixed import MixedStory
from genprob.families.multinomial import MultinomialStory
from genprob.families.poisson import PoissonStory
from genprob.inference.optimize import fit_optimizer
from genprob.story import Story

LDA = GaussianStory(covariance="full", shared=True)
QDA = GaussianStory(covariance="full", shared=False)
GNB = GaussianStory(covariance="diag", shared=False)
DIAG_SHARED = GaussianStory(covariance="diag", shared=True)
QDA_REG = QDA.replace(reg_param=0.1)


def _hide(y, fraction, seed=0):
    """Copy of ``y`` with a seeded ``fraction`` of the labels replaced by -1."""
    hidden = np.random.default_rng(seed).random(len(y)) < fraction
    return np.where(hidden, -1, y)


@pytest.fixture(scope="module")
def iris():
    X, y = load_iris()
    return X, y, _hide(y, 0.8)


#: 16 digit pixels that vary within every class (a Gaussian block then has no zero variance).
PIXELS = [2, 4, 10, 12, 14, 18, 20, 22, 26, 28, 34, 37, 42, 44, 46, 52]


@pytest.fixture(scope="module")
def digits_small():
    """300 digits of classes 0-3, 16 pixels, 80% of the labels hidden."""
    X, y = load_digits()
    keep = np.flatnonzero(y < 4)[:300]
    X, y = X[keep][:, PIXELS], y[keep]
    return X, y, _hide(y, 0.8, seed=1)


def _discrete_case(name, digits):
    X, y, y_partial = digits
    if name == "multinomial":
        return MultinomialStory(alpha=1.0), X, y_partial
    if name == "bernoulli":
        return BernoulliStory(alpha=1.0), (X > 7).astype(float), y_partial
    if name == "poisson":
        return PoissonStory(alpha=1.0, beta=1.0), X, y_partial
    codes = np.digitize(X, [0.5, 8.5]).astype(float)  # 0 | 1..8 | 9..16
    if name == "categorical":
        return CategoricalStory(n_categories=(3,) * X.shape[1], alpha=1.0), codes, y_partial
    assert name == "mixed"
    mixed = np.column_stack([X[:, :8] / 4.0, codes[:, 8:]])
    story = MixedStory(
        [
            (
                "numeric",
                GaussianStory(covariance="diag", shared=False, var_smoothing=0.0),
                range(8),
            ),
            ("coded", CategoricalStory(n_categories=(3,) * 8, alpha=1.0), range(8, 16)),
        ]
    )
    return story, mixed, y_partial


DISCRETE = ["multinomial", "bernoulli", "poisson", "categorical", "mixed"]


def _relative(a, b):
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    return np.max(np.abs(a - b)) / max(np.max(np.abs(b)), 1e-300)


# -- the objective ---------------------------------------------------------------------------------
@pytest.mark.parametrize("story", [QDA, GNB, MultinomialStory(alpha=0.5)], ids=lambda s: s.name)
def test_marginal_likelihood_equals_brute_force_enumeration(story):
    """Tiny n: log p(X, y_observed) = log sum over every labeling of the unlabeled rows."""
    rng = np.random.default_rng(3)
    num_classes, n = 3, 6
    if story.name == "multinomial":
        X = rng.integers(0, 5, size=(n, 4)).astype(float)
        params = {"probs": rng.dirichlet(np.ones(4), size=num_classes)}
    else:
        X = rng.normal(size=(n, 2))
        params = {"means": rng.normal(size=(num_classes, 2))}
        if story.covariance == "full":
            A = rng.normal(size=(num_classes, 2, 2))
            params["covariance"] = A @ np.swapaxes(A, -1, -2) + 0.5 * np.eye(2)
        else:
            params["variances"] = rng.uniform(0.5, 2.0, size=(num_classes, 2))
    params["class_prior"] = np.array([0.2, 0.5, 0.3])
    y = np.array([0, -1, 2, -1, -1, 1])
    unlabeled = np.flatnonzero(y < 0)
    with jax.enable_x64(True):
        params = {k: jnp.asarray(v) for k, v in params.items()}
        Xj = jnp.asarray(X)
        log_prior = _log_prior(story, params, Xj, num_classes)

        model_log_density = jax.jit(
            lambda labels: log_density(
                core.model, (story, Xj, labels), {"num_classes": num_classes}, params
            )[0]
        )

        def complete_log_likelihood(labels):
            # the model's log density with every label observed, prior removed: sum log p(x, y)
            return float(model_log_density(jnp.asarray(labels))) - log_prior

        terms = []
        for assignment in itertools.product(range(num_classes), repeat=len(unlabeled)):
            labels = y.copy()
            labels[unlabeled] = assignment
            terms.append(complete_log_likelihood(labels))
        brute_force = logsumexp(terms)
        joint = np.asarray(core.joint_log_prob(story, params, Xj))
        labeled_part = sum(joint[i, y[i]] for i in range(n) if y[i] >= 0)
        marginal = float(core.log_likelihood(story, params, Xj, jnp.asarray(y)))
        weighted = float(weighted_log_likelihood(story, params, Xj, y, unlabeled_weight=0.3))
    assert len(terms) == 27
    np.testing.assert_allclose(marginal, brute_force, rtol=1e-12)
    # λ-weighted: labeled part + λ (unlabeled part)
    np.testing.assert_allclose(
        weighted, labeled_part + 0.3 * (brute_force - labeled_part), rtol=1e-12
    )


def _log_prior(story, params, X, num_classes):
    labels = jnp.zeros(X.shape[0], dtype=jnp.int32)  # the prior's sites do not depend on y

    @jax.jit
    def log_prior(params):
        _, trace = log_density(core.model, (story, X, labels), {"num_classes": num_classes}, params)
        return sum(
            site["fn"].log_prob(site["value"]).sum()
            for site in trace.values()
            if site["type"] == "sample" and not site["is_observed"]
        )

    return float(log_prior(params))


@pytest.mark.parametrize(
    "name",
    ["gnb", "multinomial", "mixed"]
    + [
        pytest.param(name, marks=pytest.mark.slow)
        for name in ("qda", "bernoulli", "poisson", "categorical")
    ],
)
def test_model_log_density_is_marginal_likelihood_plus_log_prior(name, iris, digits_small):
    if name in ("gnb", "qda"):
        X, y, y_partial = iris
        story = GNB if name == "gnb" else QDA
    else:
        story, X, y_partial = _discrete_case(name, digits_small)
    with jax.enable_x64(True):
        Xj = jnp.asarray(X)
        params = fit_em(story, Xj, y_partial, max_iter=5).params
        K = int(params["class_prior"].shape[0])
        total = jax.jit(
            lambda p: log_density(
                core.model, (story, Xj, jnp.asarray(y_partial)), {"num_classes": K}, p
            )[0]
        )(params)
        marginal = float(core.log_likelihood(story, params, Xj, jnp.asarray(y_partial)))
        log_prior = _log_prior(story, params, Xj, K)
    np.testing.assert_allclose(float(total), marginal + log_prior, rtol=1e-12)


def test_all_labeled_marginal_is_joint_and_em_is_closed_form_in_one_step(iris):
    X, y, _ = iris
    with jax.enable_x64(True):
        Xj = jnp.asarray(X)
        closed = core.fit_closed_form(LDA, Xj, core.one_hot_responsibilities(y, 3))
        joint = np.asarray(core.joint_log_prob(LDA, closed, Xj))
        marginal = float(core.log_likelihood(LDA, closed, Xj, jnp.asarray(y)))
        result = fit_em(LDA, Xj, y, n_init=3, unlabeled_weight=0.4)
    np.testing.assert_allclose(marginal, joint[np.arange(150), y].sum(), rtol=1e-13)
    assert result.n_iter == 1 and result.converged
    for key, value in closed.items():  # the same closed form, compiled in another program
        np.testing.assert_allclose(np.asarray(result.params[key]), np.asarray(value), rtol=1e-12)
    np.testing.assert_allclose(float(result.log_likelihood[0]), marginal, rtol=1e-13)
    np.testing.assert_array_equal(np.asarray(result.responsibilities), np.eye(3)[y])


# -- EM's ascent and its fixed point ---------------------------------------------------------------
def _check_monotone(trace):
    trace = np.asarray(trace)
    assert np.all(np.isfinite(trace))
    steps = np.diff(trace)
    assert np.all(steps >= -1e-10 * np.abs(trace[1:])), steps.min()
    return trace


def _unconstrained_gradient(story, params, X, y, unlabeled_weight, penalty_stats):
    """Gradient of the penalized λ-objective in the unconstrained coordinates of NumPyro's
    ``biject_to`` (stick-breaking for simplexes, log for positive values, Cholesky for matrices)."""
    num_classes = params["class_prior"].shape[0]
    with numpyro.handlers.seed(rng_seed=0), numpyro.handlers.trace() as prior_trace:
        story.prior(num_classes, X.shape[1])
    transforms = {
        name: biject_to(site["fn"].support)
        for name, site in prior_trace.items()
        if site["type"] == "sample"
    }
    transforms["class_prior"] = biject_to(dist.constraints.simplex)
    start = {name: transform.inv(params[name]) for name, transform in transforms.items()}

    def objective(unconstrained):
        values = {name: transforms[name](u) for name, u in unconstrained.items()}
        return weighted_log_likelihood(
            story, values, X, y, unlabeled_weight=unlabeled_weight
        ) + story.log_penalty(values, penalty_stats)

    gradient = jax.jit(jax.grad(objective))(start)
    return np.concatenate([np.ravel(g) for g in jax.tree_util.tree_leaves(gradient)])


def _case(name, iris, digits_small):
    if name in DISCRETE:
        return _discrete_case(name, digits_small)
    X, _, y_partial = iris
    story = {
        "lda": LDA,
        "qda": QDA,
        "gnb": GNB,
        "diag-shared": DIAG_SHARED,
        "qda-reg": GaussianStory(covariance="full", shared=False, reg_param=0.1),
    }[name]
    return story, X, y_partial


@pytest.mark.parametrize(
    "name, unlabeled_weight",
    [("lda", 1.0), ("qda", 0.3), ("gnb", 0.6), ("qda-reg", 1.0), ("multinomial", 0.5)]
    + [
        pytest.param(name, weight, marks=pytest.mark.slow)
        for name, weight in [
            ("mixed", 0.5),  # Gaussian and categorical blocks
            ("diag-shared", 1.0),
            ("bernoulli", 0.5),
            ("poisson", 0.5),
            ("categorical", 0.5),
        ]
    ],
)
def test_em_ascends_to_a_stationary_point(name, unlabeled_weight, iris, digits_small):
    """The trace never decreases and ends where the objective's gradient vanishes.

    Checked: the trace is the λ-weighted (penalized) objective; every EM step does not decrease it
    (to 1e-10 relative); at the fixed point the gradient in unconstrained coordinates is ~0.
    QDA's reg_param is the exception to monotonicity: its equivalent prior scales with the soft
    class counts, which move between iterations (documented in ``fit_em``); its fixed point is
    still stationary with the penalty at the final counts.
    """
    story, X, y_partial = _case(name, iris, digits_small)
    with jax.enable_x64(True):
        Xj = jnp.asarray(X)
        result = fit_em(
            story, Xj, y_partial, unlabeled_weight=unlabeled_weight, tol=1e-15, max_iter=1000
        )
        weights = jnp.asarray(np.where(y_partial >= 0, 1.0, unlabeled_weight))
        stats = core.sufficient_statistics(story, Xj, result.responsibilities * weights[:, None])
        penalty = story.log_penalty(result.params, stats["emission"])
        final = float(
            weighted_log_likelihood(
                story, result.params, Xj, y_partial, unlabeled_weight=unlabeled_weight
            )
            + penalty
        )
        gradient = _unconstrained_gradient(
            story, result.params, Xj, y_partial, unlabeled_weight, stats["emission"]
        )
    trace = np.asarray(result.log_likelihood)
    assert result.converged and result.n_iter > 3
    np.testing.assert_allclose(trace[-1], final, rtol=1e-10)
    if name != "qda-reg":
        _check_monotone(trace)
        assert trace[-1] - trace[0] > 1.0  # EM moved away from the labeled-only fit
    total_weight = np.where(y_partial >= 0, 1.0, unlabeled_weight).sum()
    assert np.linalg.norm(gradient) <= 1e-6 * total_weight, np.linalg.norm(gradient)


def _em_vs_optimizer(story, X, y_partial, unlabeled_weight, num_classes):
    with jax.enable_x64(True):
        Xj = jnp.asarray(X)
        em = fit_em(
            story, Xj, y_partial, unlabeled_weight=unlabeled_weight, tol=1e-15, max_iter=1000
        )
        labeled = y_partial >= 0
        start = core.fit_closed_form(
            story, Xj[labeled], core.one_hot_responsibilities(y_partial[labeled], num_classes)
        )
        reference = fit_optimizer(
            story,
            X,
            y_partial,
            num_classes=num_classes,
            unlabeled_weight=unlabeled_weight,
            penalized=True,
            init={k: np.asarray(v) for k, v in start.items()},
            max_iter=5000,
        )
    assert em.converged
    objective = float(em.log_likelihood[-1])
    assert abs(objective - reference.objective) <= 1e-8 * abs(reference.objective)
    for key, value in reference.params.items():
        if key in em.params:
            assert _relative(em.params[key], value) <= 1e-6, key


@pytest.mark.parametrize(
    "story, unlabeled_weight",
    [
        (GNB, 0.4),
        pytest.param(LDA, 1.0, marks=pytest.mark.slow),
        pytest.param(LDA, 0.1, marks=pytest.mark.slow),
        pytest.param(QDA, 1.0, marks=pytest.mark.slow),
        pytest.param(QDA, 0.25, marks=pytest.mark.slow),
        pytest.param(DIAG_SHARED, 0.6, marks=pytest.mark.slow),
    ],
    ids=["gnb-0.4", "lda-1.0", "lda-0.1", "qda-1.0", "qda-0.25", "diag-shared-0.6"],
)
def test_em_fixed_point_is_the_optimizer_maximum_gaussian(story, unlabeled_weight, iris):
    X, _, y_partial = iris
    _em_vs_optimizer(story, X, y_partial, unlabeled_weight, 3)


@pytest.mark.slow
@pytest.mark.parametrize("name", DISCRETE)
def test_em_fixed_point_is_the_optimizer_maximum_discrete(name, digits_small):
    story, X, y_partial = _discrete_case(name, digits_small)
    _em_vs_optimizer(story, X, y_partial, 0.5, 4)


# -- an independent reference: EM written in plain NumPy -------------------------------------------
def _numpy_em(X, y, kind, num_iter, unlabeled_weight, num_classes=3):
    n, D = X.shape
    labeled = y >= 0
    R = np.zeros((n, num_classes))
    R[labeled, y[labeled]] = 1.0  # start: the labeled-only fit
    trace = []
    for _ in range(num_iter):
        counts = R.sum(axis=0)
        prior = counts / counts.sum()
        means = (R.T @ X) / counts[:, None]
        scatter = [(R[:, k, None] * (X - means[k])).T @ (X - means[k]) for k in range(num_classes)]
        if kind == "lda":
            covariances = [sum(scatter) / counts.sum()] * num_classes
        elif kind == "qda":
            covariances = [scatter[k] / counts[k] for k in range(num_classes)]
        else:
            covariances = [np.diag(np.diag(scatter[k]) / counts[k]) for k in range(num_classes)]
        joint = np.column_stack(
            [
                np.log(prior[k]) + multivariate_normal(means[k], covariances[k]).logpdf(X)
                for k in range(num_classes)
            ]
        )
        marginal = logsumexp(joint, axis=1)
        trace.append(joint[labeled, y[labeled]].sum() + unlabeled_weight * marginal[~labeled].sum())
        posterior = np.exp(joint - marginal[:, None])
        R = np.where(labeled[:, None], R, unlabeled_weight * posterior)
    return prior, means, np.array(covariances), np.array(trace)


@pytest.mark.parametrize("kind, story", [("lda", LDA), ("qda", QDA), ("gnb", GNB)])
def test_em_agrees_with_plain_numpy_em_on_iris(kind, story, iris):
    X, _, y_partial = iris
    with jax.enable_x64(True):
        result = fit_em(story, X, y_partial, unlabeled_weight=0.8, max_iter=25, tol=0.0)
    assert result.n_iter == 25
    prior, means, covariances, trace = _numpy_em(X, y_partial, kind, 25, 0.8)
    np.testing.assert_allclose(np.asarray(result.log_likelihood), trace, rtol=1e-12)
    np.testing.assert_allclose(np.asarray(result.params["class_prior"]), prior, rtol=1e-11)
    np.testing.assert_allclose(np.asarray(result.params["means"]), means, rtol=1e-11)
    fitted = np.asarray(result.params[story.spread_name])
    if kind == "lda":
        expected = covariances[0]
    elif kind == "qda":
        expected = covariances
    else:
        expected = np.diagonal(covariances, axis1=1, axis2=2)
    np.testing.assert_allclose(fitted, expected, rtol=1e-11, atol=1e-14)


# -- stories without a closed form: the gradient M-step --------------------------------------------
class DiagonalGaussianWithoutClosedForm(Story):
    """Gaussian naive Bayes told only as a prior and an emission (no closed form)."""

    name = "diag-gaussian-no-closed-form"

    def prior(self, num_classes, num_features):
        shape = [num_classes, num_features]
        means = numpyro.sample("means", dist.Normal(0.0, 10.0).expand(shape).to_event(2))
        variances = numpyro.sample(
            "variances", dist.InverseGamma(2.0, 1.0).expand(shape).to_event(2)
        )
        return {"means": means, "variances": variances}

    def emission(self, params):
        return dist.Normal(params["means"], jnp.sqrt(params["variances"])).to_event(1)


def test_gradient_m_step_reaches_the_closed_form_em_fixed_point(iris):
    X, _, y_partial = iris
    story = DiagonalGaussianWithoutClosedForm()
    assert not has_closed_form(story)
    with jax.enable_x64(True):
        reference = fit_em(GNB, X, y_partial, tol=1e-14, max_iter=1000)
        result = fit_em(story, X, y_partial, tol=1e-14, max_iter=1000)
    _check_monotone(result.log_likelihood)
    assert result.converged
    np.testing.assert_allclose(
        float(result.log_likelihood[-1]), float(reference.log_likelihood[-1]), rtol=1e-12
    )
    for key in ("class_prior", "means", "variances"):
        assert _relative(result.params[key], reference.params[key]) <= 1e-6, key


# -- controls, initializations, degenerate fits ----------------------------------------------------
def test_n_init_keeps_the_best_and_is_seeded(iris):
    X, _, _ = iris
    y_unlabeled = np.full(150, -1)
    with jax.enable_x64(True):
        first = fit_em(GNB, X, y_unlabeled, num_classes=3, n_init=3, seed=7, max_iter=1000)
        again = fit_em(GNB, X, y_unlabeled, num_classes=3, n_init=3, seed=7, max_iter=1000)
    values = np.asarray(first.init_log_likelihoods)
    assert values.shape == (3,)
    assert float(first.log_likelihood[-1]) == np.nanmax(values)
    np.testing.assert_array_equal(
        np.asarray(first.params["means"]), np.asarray(again.params["means"])
    )
    _check_monotone(first.log_likelihood)


def test_tolerance_and_max_iter_stop_the_loop(iris):
    X, _, y_partial = iris
    with jax.enable_x64(True):
        capped = fit_em(LDA, X, y_partial, max_iter=3, tol=0.0)
        loose = fit_em(LDA, X, y_partial, tol=1e-2)
        tight = fit_em(LDA, X, y_partial, tol=1e-12, max_iter=1000)
    assert capped.n_iter == 3 and not capped.converged
    assert loose.converged and tight.converged and loose.n_iter < tight.n_iter
    trace = np.asarray(loose.log_likelihood)
    assert abs(trace[-1] - trace[-2]) <= 1e-2 * abs(trace[-1])
    assert abs(trace[-2] - trace[-3]) > 1e-2 * abs(trace[-2])


def test_collapsing_covariance_is_a_clear_error_and_regularization_fixes_it():
    rng = np.random.default_rng(0)
    X = np.vstack([rng.normal(size=(30, 2)), [[5.0, 5.0], [5.0, 5.0]], rng.normal(size=(10, 2))])
    y = np.r_[np.zeros(30, int), [1, 1], -np.ones(10, int)]
    # class 1 has two labeled copies of one point: its maximum-likelihood covariance is zero
    with jax.enable_x64(True):
        with pytest.raises(ValueError, match="degenerated.*covariance collapsed"):
            fit_em(QDA, X, y)
        result = fit_em(GaussianStory(covariance="full", shared=False, reg_param=0.1), X, y)
    assert np.all(np.isfinite(np.asarray(result.params["covariance"])))


def test_collinear_class_is_refused_by_the_estimator_rank_check():
    """Two labeled points on a line: the covariance is singular in exact arithmetic, but the
    computed one keeps an eigenvalue at rounding level (1e-15 here) or loses its Cholesky factor
    depending on the order of the sums, so the core cannot tell it from a tiny variance. The
    estimator refuses it either way: EM's degenerate run, or else its rank check
    (scikit-learn's ``tol``), both naming class 1 and the regularizer."""
    rng = np.random.default_rng(0)
    X = np.vstack([rng.normal(size=(30, 2)), [[5.0, 5.0], [6.0, 6.0]], rng.normal(size=(10, 2))])
    y = np.r_[np.zeros(30, int), [1, 1], -np.ones(10, int)]
    with pytest.raises(ValueError, match=r"class 1 (is not full rank|lost.*reg_param)") as refused:
        genprob.QuadraticDiscriminantAnalysis().fit(X, y)
    assert "reg_param" in str(refused.value)
    fitted = genprob.QuadraticDiscriminantAnalysis(reg_param=0.1).fit(X, y)
    assert np.all(np.isfinite(fitted.predict_proba(X)))


def test_class_losing_all_mass_is_an_error_for_gaussians_and_smoothed_for_discrete():
    rng = np.random.default_rng(1)
    X = np.vstack([rng.normal(size=(20, 2)), rng.normal(size=(20, 2)) + 4.0])
    y = np.r_[np.zeros(5, int), -np.ones(15, int), np.ones(5, int), -np.ones(15, int)]
    far_away = {
        "class_prior": np.array([0.45, 0.45, 0.1]),
        "means": np.array([[0.0, 0.0], [4.0, 4.0], [1e4, 1e4]]),
        "variances": np.ones((3, 2)),
    }
    with jax.enable_x64(True):
        # class 2 has no labeled row and its posterior underflows to 0 on every row
        with pytest.raises(ValueError, match=r"class code 2 lost its responsibility mass: 0"):
            fit_em(GNB, X, y, num_classes=3, init=far_away)
        # a smoothed discrete story survives: class 2 gets prior 0 and uniform (α) tables
        counts = np.round(np.abs(X) * 3)
        story = MultinomialStory(alpha=1.0)
        start = {"class_prior": np.array([0.5, 0.5, 0.0]), "probs": np.full((3, 2), 0.5)}
        result = fit_em(story, counts, y, num_classes=3, init=start)
    np.testing.assert_allclose(np.asarray(result.params["class_prior"])[2], 0.0, atol=1e-300)
    np.testing.assert_allclose(np.asarray(result.params["probs"])[2], [0.5, 0.5])
    assert np.isfinite(float(result.log_likelihood[-1]))


def test_em_messages_name_the_classes_the_caller_gave():
    """Issue 56: "class code 2" where the caller's labels say "far" (codes stay without them)."""
    rng = np.random.default_rng(1)
    X = np.vstack([rng.normal(size=(20, 2)), rng.normal(size=(20, 2)) + 4.0])
    labels = np.r_[["near"] * 5, ["?"] * 15, ["mid"] * 5, ["?"] * 15].astype(object)
    far_away = {
        "class_prior": np.array([0.45, 0.1, 0.45]),
        "means": np.array([[4.0, 4.0], [1e4, 1e4], [0.0, 0.0]]),
        "variances": np.ones((3, 2)),
    }
    named = dict(classes=["mid", "far", "near"], unlabeled_label="?")
    with jax.enable_x64(True):
        with pytest.raises(ValueError, match=r"or class 'far' lost its responsibility mass: 0"):
            fit_em(GNB, X, labels, init=far_away, **named)
        with pytest.raises(ValueError, match=r"needs a labeled row in every class; classes 'far'"):
            fit_em(GNB, X, labels, init="labeled", **named)
        with pytest.raises(ValueError, match=r"^classes 'far' have no labeled row, and no unl"):
            fit_em(GNB, X, labels, unlabeled_weight=0.0, **named)
        with pytest.raises(ValueError, match=r"^class codes 1 have no labeled row, and no unl"):
            fit_em(GNB, X, np.r_[[2] * 5, [-1] * 15, [0] * 5, [-1] * 15], num_classes=3,
                   unlabeled_weight=0.0)  # fmt: skip


def test_em_messages_from_an_estimator_name_the_users_classes():
    """Issue 56: an estimator's EM names 'virginica', not the code it gave EM ("class code 2")."""
    X, y = load_iris()
    classes = np.array(["setosa", "versicolor", "virginica"], dtype=object)
    # every virginica row unlabeled, and λ = 0: no mass is left to learn the class from
    labels = np.where((y == 2) | (np.arange(150) % 5 != 0), "?", classes[y]).astype(object)
    with pytest.raises(ValueError) as no_mass:
        genprob.GaussianNB(unlabeled_weight=0.0, unlabeled_label="?").fit(
            X, labels, classes=classes
        )
    # two labeled copies of one virginica point: its covariance collapses and EM degenerates
    collapsed = np.vstack([X[:30], X[[100, 100]], X[30:40]])
    labels = np.r_[["setosa"] * 30, ["virginica"] * 2, ["?"] * 10].astype(object)
    with pytest.raises(ValueError) as degenerate:
        genprob.QuadraticDiscriminantAnalysis(unlabeled_label="?").fit(collapsed, labels)
    assert str(no_mass.value).startswith("classes 'virginica' have no labeled row, and no unl")
    assert "or class 'virginica' lost its responsibility mass: 2" in str(degenerate.value)
    assert "class code" not in str(no_mass.value) + str(degenerate.value)


# -- bad input -------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "y, kwargs, message",
    [
        (
            np.array([0, 1, 5, -1]),
            {"num_classes": 3},
            r"-1 \(unlabeled\) or class codes 0..2; got 5",
        ),
        (np.array([0, 1, -2, -1]), {}, r"got -2"),
        (np.array([0, 2, 2, -1]), {}, r"class codes 1 have no labeled row"),
        (np.array([-1, -1, -1, -1]), {}, r"every row is unlabeled"),
        (np.array(["a", "b", "a", "b"]), {}, r"integer class codes"),
        (np.array([0.0, 1.5, 1.0, -1.0]), {}, r"integer class codes"),
        (np.array(["a", "c", "b", "b"], dtype=object), {"classes": ["a", "b"]}, r"'c'"),
        (np.array([0, 1, 1, 0]), {"classes": [0, 1], "num_classes": 3}, r"disagrees"),
        (np.array([0, 1, 1, 0]), {"classes": [0, -1]}, r"cannot be a class"),
    ],
)
def test_bad_labels_are_clear_errors(y, kwargs, message):
    with pytest.raises(ValueError, match=message):
        encode_partial_labels(y, **kwargs)


def test_bad_controls_are_clear_errors(iris):
    X, _, y_partial = iris
    with jax.enable_x64(True):
        for bad in (1.5, -0.1, float("nan"), "half"):
            with pytest.raises(ValueError, match="unlabeled_weight"):
                fit_em(GNB, X, y_partial, unlabeled_weight=bad)
        with pytest.raises(ValueError, match="max_iter"):
            fit_em(GNB, X, y_partial, max_iter=0)
        with pytest.raises(ValueError, match="n_init"):
            fit_em(GNB, X, y_partial, n_init=1.5)
        with pytest.raises(ValueError, match="every row is unlabeled"):
            fit_em(GNB, X, np.full(150, -1))
        with pytest.raises(ValueError, match="no unlabeled mass"):
            fit_em(
                GNB, X, np.where(y_partial == 2, -1, y_partial), num_classes=3, unlabeled_weight=0.0
            )
        with pytest.raises(ValueError, match="X has 150 rows but y has 149"):
            fit_em(GNB, X, y_partial[:-1])
        with pytest.raises(ValueError, match="init must be None"):
            fit_em(GNB, X, y_partial, init="kmeans")


def test_string_labels_with_classes_argument(iris):
    X, y, y_partial = iris
    names = np.array(["setosa", "versicolor", "virginica"], dtype=object)
    y_names = names[y]
    y_names[y_partial < 0] = -1
    with jax.enable_x64(True):
        by_name = fit_em(GNB, X, y_names, classes=names)
        by_code = fit_em(GNB, X, y_partial)
    np.testing.assert_array_equal(
        np.asarray(by_name.params["means"]), np.asarray(by_code.params["means"])
    )


# -- the estimator face ----------------------------------------------------------------------------
def test_estimator_fit_with_unlabeled_rows_runs_em(iris):
    X, y, y_partial = iris
    model = genprob.GaussianNB(var_smoothing=1e-9)
    model.unlabeled_weight, model.em_tol, model.max_iter = 0.5, 1e-12, 1000
    model.fit(X, y_partial)
    with jax.enable_x64(True):
        reference = fit_em(
            GaussianStory(covariance="diag", shared=False, var_smoothing=1e-9),
            X,
            y_partial,
            unlabeled_weight=0.5,
            tol=1e-12,
            max_iter=1000,
        )
    np.testing.assert_array_equal(model.classes_, [0, 1, 2])
    np.testing.assert_allclose(model.theta_, np.asarray(reference.params["means"]), rtol=1e-12)
    assert model.converged_ and model.n_iter_ == reference.n_iter
    np.testing.assert_allclose(model.log_likelihood_trace_, np.asarray(reference.log_likelihood))
    unlabeled = y_partial < 0
    # predict_proba on the unlabeled rows is the final E-step
    np.testing.assert_allclose(
        model.predict_proba(X[unlabeled]), model.label_distributions_[unlabeled], atol=1e-14
    )
    np.testing.assert_array_equal(model.transduction_[~unlabeled], y_partial[~unlabeled])
    # soft counts: labeled rows count 1, unlabeled ones λ = 0.5
    assert model.class_count_.sum() == pytest.approx((~unlabeled).sum() + 0.5 * unlabeled.sum())
    assert (model.transduction_ == y).mean() > 0.9
    # log_likelihood: total and pointwise, labeled rows joint, unlabeled rows marginal
    pointwise = model.log_likelihood(X, y_partial, pointwise=True)
    joint = model.predict_joint_log_proba(X)
    np.testing.assert_allclose(pointwise[~unlabeled], joint[~unlabeled, y[~unlabeled]])
    np.testing.assert_allclose(pointwise[unlabeled], logsumexp(joint[unlabeled], axis=1))
    assert model.log_likelihood(X, y_partial) == pytest.approx(pointwise.sum(), rel=1e-12)
    np.testing.assert_allclose(
        model.log_likelihood(X, pointwise=True), logsumexp(joint, axis=1), rtol=1e-12
    )
    # a later fully labeled fit is the supervised closed form and drops the EM attributes
    model.fit(X, y)
    assert not hasattr(model, "n_iter_") and not hasattr(model, "label_distributions_")


def test_estimator_labels_classes_and_errors(iris):
    X, y, y_partial = iris
    names = np.array(["setosa", "versicolor", "virginica"], dtype=object)
    y_names = names[y].copy()
    y_names[y_partial < 0] = -1  # object array: strings and the number -1
    model = genprob.GaussianNB().fit(X, y_names)
    np.testing.assert_array_equal(model.classes_, names)
    assert set(model.transduction_) == set(names)
    # a string "-1" is an ordinary class, not the unlabeled marker
    strings = np.where(y == 0, "-1", "x").astype(str)
    assert not hasattr(genprob.GaussianNB().fit(X, strings), "n_iter_")
    # every row unlabeled: the classes must be given
    with pytest.raises(ValueError, match="pass classes="):
        genprob.GaussianNB().fit(X, np.full(150, -1))
    model = genprob.GaussianNB().fit(X, np.full(150, -1), classes=[0, 1, 2])
    assert model.class_prior_.shape == (3,)
    # -1 with a single other class: probably -1 was meant as a class
    with pytest.raises(ValueError, match="if -1 is a real class, pass unlabeled_label=None"):
        genprob.GaussianNB().fit(X, np.where(y == 0, -1, 1))
    with pytest.raises(ValueError, match=r"neither -1 \(unlabeled\) nor one of the classes"):
        genprob.GaussianNB().fit(X, y_partial, classes=[0, 1])
    fitted = genprob.GaussianNB().fit(X, y_partial)
    with pytest.raises(ValueError, match=r"nor one of the classes \[0, 1, 2\]: \[7\]"):
        fitted.log_likelihood(X, np.where(y == 2, 7, y))
    bad = genprob.GaussianNB()
    bad.unlabeled_weight = 2.0
    with pytest.raises(ValueError, match="unlabeled_weight must lie in"):
        bad.fit(X, y_partial)
    capped = genprob.GaussianNB()
    capped.max_iter = 2
    with pytest.warns(ConvergenceWarning, match="max_iter=2"):
        capped.fit(X, y_partial)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        genprob.GaussianNB().fit(X, y_partial)


@pytest.mark.parametrize(
    "story",
    [LDA, QDA_REG, GNB, DIAG_SHARED, BernoulliStory(alpha=1.0)],
    ids=["lda", "qda", "gnb", "diag-shared", "bernoulli"],
)
def test_em_on_numpy_rows_runs_eagerly_and_equals_the_compiled_route(story, iris):
    X, _, y_partial = iris
    X = (X > X.mean(axis=0)).astype(float) if isinstance(story, BernoulliStory) else X
    with precision("float64"):
        host = fit_em(story, X, y_partial, num_classes=3, max_iter=40)
        compiled = fit_em(story, jnp.asarray(X), y_partial, num_classes=3, max_iter=40)
    assert isinstance(host.params["class_prior"], np.ndarray)  # no device round trip
    assert isinstance(compiled.params["class_prior"], jax.Array)
    trace = np.asarray(host.log_likelihood)
    if story is not QDA_REG:  # reg_param's penalty scales with the soft counts (fit_em's caveat)
        assert np.all(np.diff(trace) >= -1e-9 * np.abs(trace[1:]))  # EM never decreases
    n = min(host.n_iter, compiled.n_iter)
    assert abs(host.n_iter - compiled.n_iter) <= 1  # a stop at rounding level may differ by one
    np.testing.assert_allclose(trace[:n], np.asarray(compiled.log_likelihood)[:n], rtol=1e-10)
    for name, value in host.params.items():
        np.testing.assert_allclose(value, np.asarray(compiled.params[name]), rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(
        host.responsibilities, np.asarray(compiled.responsibilities), atol=1e-8
    )


@pytest.mark.parametrize(
    ("estimator", "data", "floor"),
    [
        ("LinearDiscriminantAnalysis(max_iter=30)", "load_wine(return_X_y=True)", 0.9),
        (
            "QuadraticDiscriminantAnalysis(max_iter=30, reg_param=0.1)",
            "load_wine(return_X_y=True)",
            0.9,
        ),
        ("GaussianNB(max_iter=30)", "load_wine(return_X_y=True)", 0.9),
        ("MultinomialNB(max_iter=30)", "load_digits(return_X_y=True)", 0.8),
        ("BernoulliNB(max_iter=30, binarize=4.0)", "load_digits(return_X_y=True)", 0.75),
    ],
    ids=["lda", "qda", "gaussian_nb", "multinomial_nb", "bernoulli_nb"],
)
def test_first_semi_supervised_fit_of_a_closed_form_imports_no_jax(estimator, data, floor):
    """Every built-in family with a closed form in the array namespace (issue 57)."""
    import subprocess
    import sys

    code = (
        "import sys, numpy as np\n"
        "from sklearn.datasets import load_wine, load_digits\n"
        "from genprob.estimators import *\n"
        f"X, y = {data}\n"
        "partial = np.where(np.arange(len(y)) % 4 == 0, y, -1)\n"
        f"m = {estimator}.fit(X, partial)\n"
        "print('jax' in sys.modules, 'numpyro' in sys.modules, m.n_iter_ > 1, m.score(X, y))\n"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    no_jax, no_numpyro, iterated, accuracy = run.stdout.split()
    assert (no_jax, no_numpyro, iterated) == ("False", "False", "True")
    assert float(accuracy) > floor


_MANY_CLASSES = """
import resource, sys, numpy as np
limit = int(sys.argv[2]) << 30
resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
X = np.random.default_rng(0).normal(size=(4000, 3))
if sys.argv[1] == "numpy":
    from genprob.estimators import GaussianNB
    model = GaussianNB(max_iter=2).fit(X, np.full(4000, -1), classes=np.arange(2000))
    print(model.n_iter_, model.theta_.shape[0])
else:
    import jax
    from genprob.engine._dtype import precision
    from genprob.engine.em import fit_em
    from genprob.families.gaussian import GaussianStory
    story = GaussianStory(covariance="diag", shared=False, var_smoothing=1e-9)
    with precision("float64"):
        result = fit_em(story, jax.device_put(X), np.full(4000, -1), num_classes=2000, max_iter=2)
    print(result.n_iter, result.params["means"].shape[0])
"""


@pytest.mark.parametrize(
    "route, gigabytes",
    [("numpy", 2), pytest.param("jax", 3, marks=pytest.mark.slow)],
)
def test_em_with_two_thousand_classes_fits_within_a_memory_limit(route, gigabytes):
    # issue 60: 5 GB and std::bad_alloc under 6 GB, the compiled program unrolled per class
    import subprocess
    import sys

    run = subprocess.run(
        [sys.executable, "-W", "ignore", "-c", _MANY_CLASSES, route, str(gigabytes)],
        capture_output=True,
        text=True,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stdout.split() == ["2", "2000"]
