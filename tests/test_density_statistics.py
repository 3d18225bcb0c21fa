"""The sampler's cheaper density (issue 46, item 3): labeled rows through their statistics,
unlabeled rows through one log-sum-exp over classes, equal to the row-by-row density."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from numpyro import handlers
from numpyro.infer.util import potential_energy, unconstrain_fn

from genprob import core
from genprob.families.bernoulli import BernoulliStory
from genprob.families.categorical import CategoricalStory
from genprob.families.gaussian import GaussianStory
from genprob.families.gaussian.normals import DiagonalNormal
from genprob.families.mixed import MixedStory
from genprob.families.multinomial import MultinomialStory
from genprob.families.poisson import PoissonStory

K, D, N = 3, 4, 150


def _data(name, rng):
    if name in ("bernoulli",):
        return (rng.random((N, D)) < 0.4).astype(float)
    if name in ("poisson", "multinomial"):
        return rng.poisson(3.0, (N, D)).astype(float)
    if name == "categorical":
        return np.column_stack([rng.integers(0, k, N) for k in (3, 2, 4, 3)]).astype(float)
    return rng.normal(0.0, 1.0, (N, D)) * [1.0, 2.0, 0.5, 1.0] + 5.0


STORIES = {
    "lda": GaussianStory(),
    "qda": GaussianStory(shared=False),
    "gaussian_nb": GaussianStory(covariance="diag", shared=False),
    "shared_diag": GaussianStory(covariance="diag", shared=True),
    "lda_subspace": GaussianStory(rank_tol=1e-3),
    "structure_VEV": GaussianStory(structure="VEV"),
    "structure_EII": GaussianStory(structure="EII"),
    "bernoulli": BernoulliStory(alpha=1.0),
    "multinomial": MultinomialStory(alpha=1.0),
    "categorical": CategoricalStory((3, 2, 4, 3)),
    "poisson": PoissonStory(),
}


def _prior_draw(story, X, y, seed):
    trace = handlers.trace(handlers.seed(core.model, seed)).get_trace(story, X, y, num_classes=K)
    return {
        name: site["value"]
        for name, site in trace.items()
        if site["type"] == "sample" and not site["is_observed"]
    }


def _densities(story, X, y, values):
    """Potential energy and its gradient at ``values``: row by row and with the summary."""
    kwargs = {"num_classes": K}
    values = {k: jnp.asarray(v, X.dtype) for k, v in values.items()}
    free = unconstrain_fn(core.model, (story, X, y), kwargs, values)
    summary = core.labeled_summary(story, X, y, K)
    assert summary is not None
    # one compiled program per density: op by op, the scan over blocks would dispatch slowly
    evaluate = jax.jit(
        jax.value_and_grad(lambda z, args: potential_energy(core.model, args, kwargs, z))
    )
    results = []
    for args in ((story, X, y), (story, X, y, summary)):
        value, grad = evaluate(free, args)
        results.append((float(value), jax.tree_util.tree_map(np.asarray, grad)))
    return results


def _check_equal(name, unlabeled, seed):
    rng = np.random.default_rng(len(name))
    with jax.enable_x64(True):
        X = jnp.asarray(_data(name, rng))
        labels = rng.integers(0, K, N)
        y = jnp.asarray(np.where(rng.random(N) < unlabeled, -1, labels))
        values = _prior_draw(STORIES[name], X, y, seed)
        (rows, rows_grad), (stats, stats_grad) = _densities(STORIES[name], X, y, values)
    assert np.isfinite(rows)
    np.testing.assert_allclose(stats, rows, rtol=1e-10)
    for site, g in rows_grad.items():
        scale = max(1.0, float(np.max(np.abs(g))))
        np.testing.assert_allclose(stats_grad[site], g, rtol=1e-9, atol=1e-10 * scale)


@pytest.mark.parametrize("name", sorted(STORIES))
def test_statistics_density_equals_the_row_by_row_density(name):
    """Value and gradient of the potential at a prior draw, 60% of the rows unlabeled."""
    _check_equal(name, 0.6, seed=0)


@pytest.mark.parametrize("name", ["qda", "shared_diag", "poisson", "multinomial"])
@pytest.mark.parametrize("unlabeled", [0.0, 1.0])
def test_every_row_labeled_or_none(name, unlabeled):
    _check_equal(name, unlabeled, seed=1)


@pytest.mark.parametrize("name", ["lda", "gaussian_nb", "poisson", "categorical"])
def test_statistics_density_in_float32(name):
    rng = np.random.default_rng(3)
    X = _data(name, rng)
    y = jnp.asarray(np.where(rng.random(N) < 0.5, -1, rng.integers(0, K, N)))
    with jax.enable_x64(True):
        values = _prior_draw(STORIES[name], jnp.asarray(X), y, 0)
        values = {k: np.asarray(v, np.float32) for k, v in values.items()}
        (reference, _), _ = _densities(STORIES[name], jnp.asarray(X), y, values)
    (rows, _), (stats, _) = _densities(STORIES[name], jnp.asarray(X, jnp.float32), y, values)
    # float32 rounding of the float64 value at the same point, for both densities alike
    tolerance = 64 * np.finfo(np.float32).eps * abs(reference)
    assert abs(stats - reference) <= tolerance
    assert abs(rows - reference) <= tolerance


def test_summary_shapes_follow_the_data_shape_only():
    """Any number of labels gives leaves of the same shapes: the compiled sampler is reused."""
    rng = np.random.default_rng(0)
    X = jnp.asarray(rng.normal(size=(N, D)))
    shapes = set()
    for fraction in (0.0, 0.3, 1.0):
        y = jnp.asarray(np.where(rng.random(N) < fraction, -1, rng.integers(0, K, N)))
        summary = core.labeled_summary(STORIES["qda"], X, y, K)
        leaves, treedef = jax.tree_util.tree_flatten(summary)
        shapes.add((treedef, tuple((leaf.shape, leaf.dtype) for leaf in leaves)))
    assert len(shapes) == 1


def test_stories_without_statistics_keep_the_row_by_row_density():
    rng = np.random.default_rng(1)
    X = jnp.asarray(np.column_stack([rng.normal(size=N), rng.random(N) < 0.5]).astype(float))
    y = jnp.asarray(rng.integers(-1, K, N))
    mixed = MixedStory(
        [
            ("num", GaussianStory(covariance="diag", shared=False), (0,)),
            ("b", BernoulliStory(), (1,)),
        ]
    )
    assert core.labeled_summary(mixed, X, y, K) is None

    class Shifted(DiagonalNormal):  # another density: the inherited statistics do not apply
        def log_prob(self, value):
            return super().log_prob(value) + 1.0

    class Story(GaussianStory):
        def emission(self, params):
            return Shifted(params["means"], params["variances"])

    story = Story(covariance="diag", shared=False)
    assert core.labeled_summary(story, X, y, K) is None
    missing = X.at[0, 0].set(jnp.nan)
    assert core.labeled_summary(GaussianStory(covariance="diag"), missing, y, K) is None


@pytest.mark.parametrize("chain_method", ["vectorized", "forward mode"])
def test_nuts_runs_vectorized_and_in_forward_mode(chain_method):
    """Vectorized chains take the summary's reverse-mode gradient batched; forward-mode
    differentiation, which that gradient does not offer, samples the row-by-row density."""
    from genprob.inference.mcmc import run_nuts

    rng = np.random.default_rng(5)
    X = rng.normal(size=(40, 2)) + np.repeat([[0.0, 0.0], [3.0, 1.0]], 20, axis=0)
    y = np.where(rng.random(40) < 0.5, -1, np.repeat([0, 1], 20))
    options = dict(num_classes=2, num_warmup=20, num_samples=20, num_chains=2, check=False)
    if chain_method == "vectorized":
        options["chain_method"] = "vectorized"
    else:
        options["forward_mode_differentiation"] = True
    run = run_nuts(STORIES["gaussian_nb"], X, y, **options)
    means = np.asarray(run.get_samples()["means"])
    assert means.shape == (40, 2, 2) and np.all(np.isfinite(means))
