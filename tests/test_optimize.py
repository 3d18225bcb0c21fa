"""fit_optimizer: maximum likelihood of any story by L-BFGS in NumPyro's unconstrained space."""

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
import pytest
import scipy.optimize
import scipy.stats
from test_story_value import (  # noqa: F401 - the compile-counting fixture
    _assert_counter_sees_compilations,
    compilations,
)

from genprob import core
from genprob.datasets import load_iris
from genprob.engine.capabilities import has_closed_form
from genprob.families.gaussian import GaussianStory
from genprob.inference.optimize import evaluate_objective, fit_optimizer
from genprob.story import Story

NAIVE_GAUSSIAN = GaussianStory(covariance="diag", shared=False)


def _relative(found, expected):
    found, expected = np.asarray(found, float), np.asarray(expected, float)
    return float(np.max(np.abs(found - expected) / np.abs(expected)))


@pytest.fixture(scope="module")
def iris():
    return load_iris()


# -- a user-written story with no closed form ---------------------------------------------------
class StudentTStory(Story):
    """Naive Student-t class-conditionals: only a prior and an emission, no closed form.

    ``scale`` is a deterministic site of an unconstrained ``log_scale``, so the optimizer must
    read the parameters back through the prior; ``df`` has a positive support (Gamma prior).
    """

    name = "student_t"

    def prior(self, num_classes, num_features):
        shape = [num_classes, num_features]
        loc = numpyro.sample("loc", dist.Normal(0.0, 10.0).expand(shape).to_event(2))
        log_scale = numpyro.sample("log_scale", dist.Normal(0.0, 3.0).expand(shape).to_event(2))
        df = numpyro.sample("df", dist.Gamma(2.0, 0.1).expand(shape).to_event(2))
        scale = numpyro.deterministic("scale", jnp.exp(log_scale))
        return {"loc": loc, "scale": scale, "df": df}

    def emission(self, params):
        return dist.StudentT(params["df"], params["loc"], params["scale"]).to_event(1)


@pytest.fixture(scope="module")
def student_t_data():
    rng = np.random.default_rng(7)
    true_loc = np.array([[0.0, 5.0], [3.0, -2.0]])
    true_scale = np.array([[1.0, 2.0], [0.5, 1.5]])
    true_df = np.array([[3.0, 6.0], [4.0, 2.5]])
    y = np.repeat([0, 1], [180, 120])
    X = true_loc[y] + true_scale[y] * rng.standard_t(true_df[y])
    return X, y


def _scipy_student_t_mle(x):
    """MLE of (df, loc, scale) of one sample, by scipy on -sum scipy.stats.t.logpdf."""

    def negative_loglik(theta):
        df, loc, scale = np.exp(theta[0]), theta[1], np.exp(theta[2])
        return -np.sum(scipy.stats.t.logpdf(x, df, loc=loc, scale=scale))

    start = np.array([np.log(5.0), np.median(x), np.log(scipy.stats.iqr(x) / 1.35)])
    rough = scipy.optimize.minimize(negative_loglik, start, method="BFGS", options={"gtol": 1e-9})
    polished = scipy.optimize.minimize(
        negative_loglik,
        rough.x,
        method="Nelder-Mead",
        options={"xatol": 1e-12, "fatol": 1e-13, "maxiter": 20000, "maxfev": 40000},
    )
    df, loc, log_scale = polished.x
    return np.exp(df), loc, np.exp(log_scale)


def test_user_story_without_closed_form_matches_scipy_reference(student_t_data):
    X, y = student_t_data
    story = StudentTStory()
    assert not has_closed_form(story)
    result = fit_optimizer(story, X, y, seed=3)
    assert result.converged
    assert set(result.params) >= {"class_prior", "loc", "scale", "df", "log_scale"}

    reference = {"df": np.zeros((2, 2)), "loc": np.zeros((2, 2)), "scale": np.zeros((2, 2))}
    for k in range(2):
        for j in range(2):
            df, loc, scale = _scipy_student_t_mle(X[y == k, j])
            reference["df"][k, j], reference["loc"][k, j], reference["scale"][k, j] = df, loc, scale
    for name in ("df", "loc", "scale"):
        assert _relative(result.params[name], reference[name]) <= 1e-6, name
    np.testing.assert_allclose(result.params["class_prior"], [0.6, 0.4], rtol=1e-8)
    np.testing.assert_allclose(result.params["scale"], np.exp(result.params["log_scale"]))

    # the reported log-likelihood is the model's, rewritten here with scipy.stats
    p = result.params
    expected = np.sum(np.log(p["class_prior"][y])) + np.sum(
        scipy.stats.t.logpdf(X, p["df"][y], loc=p["loc"][y], scale=p["scale"][y])
    )
    np.testing.assert_allclose(result.log_likelihood, expected, rtol=1e-12)
    assert result.log_penalty == 0.0


def test_gaussian_mle_from_poor_start_equals_closed_form(iris):
    X, y = iris
    result = fit_optimizer(NAIVE_GAUSSIAN, X, y, seed=1)
    with jax.enable_x64(True):
        closed = core.fit_closed_form(
            NAIVE_GAUSSIAN, jnp.asarray(X), core.one_hot_responsibilities(y, 3)
        )
    assert result.converged and result.grad_norm <= 1e-8
    for name in ("class_prior", "means", "variances"):
        assert result.params[name].dtype == np.float64
        assert _relative(result.params[name], closed[name]) <= 1e-8, name
    trace = result.trace
    assert trace.shape == (result.num_iterations + 1,)
    # the start is poor, and every accepted step increased the objective
    assert trace[0] < trace[-1] - 1.0
    assert np.all(np.diff(trace) >= -1e-12 * np.abs(trace[1:]))
    np.testing.assert_allclose(trace[-1] * len(y), result.objective, rtol=1e-12)


def test_a_refit_on_rows_of_the_same_shape_compiles_nothing(iris, compilations):  # noqa: F811
    """Data and the story's numbers are traced: only a new structure or shape compiles."""
    X, y = iris
    fit_optimizer(NAIVE_GAUSSIAN, X, y, seed=1)
    counts, objectives = [], []
    for seed in (2, 3):
        rows = np.random.default_rng(seed).integers(0, len(y), len(y))
        compilations.count = 0
        objectives.append(fit_optimizer(NAIVE_GAUSSIAN, X[rows], y[rows], seed=seed).objective)
        counts.append(compilations.count)
    assert counts == [0, 0]
    assert objectives[0] != objectives[1]
    _assert_counter_sees_compilations(compilations)


def test_unlabeled_rows_weighted_by_lambda(iris):
    X, y = iris
    y_partial = y.copy()
    y_partial[np.arange(len(y)) % 3 != 0] = -1  # two thirds unlabeled
    labeled = y_partial >= 0
    results = {}
    for weight in (0.0, 0.3):
        results[weight] = fit_optimizer(
            NAIVE_GAUSSIAN, X, y_partial, unlabeled_weight=weight, seed=2
        )
        assert results[weight].converged

    # objective = sum_i w_i * (marginal) log-likelihood_i, w = 1 labeled, lambda unlabeled
    result = results[0.3]
    with jax.enable_x64(True):
        params = {k: jnp.asarray(v) for k, v in result.params.items()}
        pointwise = np.asarray(
            core.log_likelihood(NAIVE_GAUSSIAN, params, jnp.asarray(X), y_partial, pointwise=True)
        )
    weights = np.where(labeled, 1.0, 0.3)
    np.testing.assert_allclose(result.log_likelihood, np.sum(weights * pointwise), rtol=1e-12)
    # and it is a maximum of that objective: zero gradient, higher than the labeled-only fit
    at_result = evaluate_objective(
        NAIVE_GAUSSIAN, result.params, X, y_partial, unlabeled_weight=0.3
    )
    assert at_result.grad_norm <= 1e-8
    at_labeled_fit = evaluate_objective(
        NAIVE_GAUSSIAN, results[0.0].params, X, y_partial, unlabeled_weight=0.3
    )
    assert at_labeled_fit.objective < result.objective - 1.0

    # lambda = 0 ignores the unlabeled rows: the closed form of the labeled rows
    with jax.enable_x64(True):
        closed = core.fit_closed_form(
            NAIVE_GAUSSIAN,
            jnp.asarray(X[labeled]),
            core.one_hot_responsibilities(y[labeled], 3),
        )
    for name in ("class_prior", "means", "variances"):
        assert _relative(results[0.0].params[name], closed[name]) <= 1e-8, name


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"y": np.zeros(5, int)}, "y has shape"),
        ({"y": np.full(150, -2)}, "found -2"),
        ({"y": np.full(150, -1)}, "pass num_classes"),
        ({"y": np.linspace(0, 1, 150)}, "integer class codes"),
        ({"unlabeled_weight": 1.5}, "unlabeled_weight"),
        ({"num_classes": 2}, "num_classes is 2"),
        ({"sample_weight": -np.ones(150)}, "sample_weight"),
        ({"init": "best"}, "init must be"),
        ({"max_iter": 0}, "max_iter"),
        ({"precondition": "newton"}, "precondition"),
        ({"fixed": {"nope": 1.0}}, "not latent sites"),
    ],
)
def test_bad_input_is_a_clear_error(iris, kwargs, message):
    X, y = iris
    arguments = {"y": y, **kwargs}
    y = arguments.pop("y")
    with pytest.raises(ValueError, match=message):
        fit_optimizer(NAIVE_GAUSSIAN, X, y, **arguments)


def test_bad_features_are_a_clear_error(iris):
    X, y = iris
    with pytest.raises(ValueError, match="NaN or infinite"):
        fit_optimizer(NAIVE_GAUSSIAN, np.where(X > 7, np.nan, X), y)
    with pytest.raises(ValueError, match="2-D"):
        fit_optimizer(NAIVE_GAUSSIAN, X[:, 0], y)
    with pytest.raises(TypeError, match="genprob Story"):
        fit_optimizer("lda", X, y)
    with pytest.raises(ValueError, match="no entry 'means'"):
        evaluate_objective(NAIVE_GAUSSIAN, {"class_prior": np.ones(3) / 3}, X, y)


@pytest.mark.slow
def test_float32_fit_is_close_to_the_float64_closed_form(iris):
    X, y = iris
    result = fit_optimizer(NAIVE_GAUSSIAN, X, y, dtype="float32")
    with jax.enable_x64(True):
        closed = core.fit_closed_form(
            NAIVE_GAUSSIAN, jnp.asarray(X), core.one_hot_responsibilities(y, 3)
        )
    assert result.params["means"].dtype == np.float32
    for name in ("class_prior", "means", "variances"):
        assert _relative(result.params[name], closed[name]) <= 1e-3, name
    assert jnp.zeros(1).dtype == jnp.float32  # global JAX config untouched


def test_the_hessian_path_is_chosen_by_size_not_by_the_clock(monkeypatch):
    """A busy machine once made one gradient look slow, switched the whitening to the exact
    Hessian and moved a mixture's fit: the choice is a count (2 P^2 n), never a timing."""
    import time

    from genprob.inference import optimize

    X, y = load_iris()
    calls = []
    exact = optimize._exact_hessian
    monkeypatch.setattr(optimize, "_exact_hessian", lambda *a: calls.append(1) or exact(*a))
    clock = iter(range(0, 10**9, 100))  # every gradient "takes" 100 s
    monkeypatch.setattr(time, "perf_counter", lambda: float(next(clock)))
    differences = fit_optimizer(NAIVE_GAUSSIAN, X, y, seed=1)
    assert calls == []  # 2 P^2 n of iris is far below HESSIAN_EXACT_WORK
    monkeypatch.setattr(optimize, "HESSIAN_EXACT_WORK", 0.0)
    compiled = fit_optimizer(NAIVE_GAUSSIAN, X, y, seed=1)
    assert calls  # above it, the exact Hessian
    assert differences.converged and compiled.converged
    assert _relative(compiled.objective, differences.objective) < 1e-10
