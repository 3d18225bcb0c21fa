"""The parts of ``estimator.posterior`` beside the sampling (issue 46 item 5): the thinned
posterior predictive, the prior draws (NumPy on the host where a sampler exists), the pointwise
log-likelihood and the container keep their meaning, and a repeat call compiles nothing."""

from __future__ import annotations

import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import genprob
from genprob import core
from genprob.datasets import load_wine
from genprob.engine._dtype import precision
from genprob.inference import _host_draws
from genprob.io import _arviz_compat as compat
from genprob.io import arviz_io as aio
from genprob.story import CLASS_PRIOR


@pytest.fixture(scope="module")
def wine_counts():
    X, y = load_wine()
    return np.round(np.asarray(X) * 10.0), np.asarray(y)


def _groups(idata):
    return set(compat.group_names(idata))


def test_exact_container_has_every_group_with_the_documented_thinning(wine_counts):
    X, y = wine_counts
    model = genprob.PoissonNB().fit(X, y)
    idata = model.posterior(X, y, method="exact", num_chains=2, num_samples=400, random_state=0)
    assert {"posterior", "posterior_predictive", "log_likelihood", "prior", "observed_data"} | {
        "mle"
    } <= _groups(idata)
    predictive = compat.get_group(idata, "posterior_predictive")
    # PREDICTIVE_DRAWS = 500 in total: 250 evenly thinned draws of each chain's 400
    assert aio.PREDICTIVE_DRAWS == 500
    assert predictive["X"].shape == (2, 250, 178, 13)
    assert predictive["y"].shape == (2, 250, 178)
    assert set(np.unique(predictive["y"].values)) <= set(model.classes_.tolist())
    assert compat.get_group(idata, "prior")["rates"].shape == (1, 500, 3, 13)
    assert compat.get_group(idata, "log_likelihood")["obs"].shape == (2, 400, 178)
    fewer = model.posterior(
        X, y, method="exact", num_chains=2, num_samples=400, random_state=0, predictive_draws=10
    )
    assert compat.get_group(fewer, "posterior_predictive")["X"].shape == (2, 5, 178, 13)
    assert compat.get_group(fewer, "prior")["rates"].shape == (1, 10, 3, 13)
    none = model.posterior(X, y, method="exact", num_samples=50, predictive_draws=0)
    assert not {"posterior_predictive", "prior"} & _groups(none)
    with pytest.raises(ValueError, match="predictive_draws"):
        model.posterior(X, y, method="exact", predictive_draws=-1)


def test_wide_data_keep_fewer_predictive_draws():
    # 2 chains x 100,000 rows x (49 + 1) values per draw: the 5 million cap leaves 1 per chain
    assert aio.predictive_per_chain(2, 1000, 100_000, 49, 500) == 1
    assert aio.predictive_per_chain(2, 1000, 1000, 4, 500) == 250
    assert aio.predictive_per_chain(4, 100, 1000, 4, 500) == 100  # no more than the chain has
    assert aio.predictive_per_chain(3, 1000, 10, 2, 500) == 166


def test_pointwise_log_likelihood_equals_the_joint_at_a_few_draws(wine_counts):
    X, y = wine_counts
    model = genprob.PoissonNB().fit(X, y)
    idata = model.posterior(X, y, method="exact", num_chains=2, num_samples=30, random_state=1)
    posterior = compat.get_group(idata, "posterior")
    values = compat.get_group(idata, "log_likelihood")["obs"].values
    story = model.story_
    for chain, draw in ((0, 0), (1, 17), (0, 29)):
        params = {name: posterior[name].values[chain, draw] for name in posterior.data_vars}
        with precision(model._dtype):  # the container's precision (its draws' dtype)
            params = {name: jnp.asarray(value) for name, value in params.items()}
            joint = np.asarray(core.joint_log_prob(story, params, jnp.asarray(X, model._dtype)))
        expected = joint[np.arange(len(y)), np.searchsorted(model.classes_, y)]
        np.testing.assert_allclose(values[chain, draw], expected, rtol=1e-5, atol=1e-4)


def _moments_agree(host, device, axis=0, z=6.0):
    """Means equal within ``z`` Monte Carlo standard errors of the two samples."""
    host, device = np.asarray(host, np.float64), np.asarray(device, np.float64)
    error = np.sqrt(host.var(axis) / host.shape[axis] + device.var(axis) / device.shape[axis])
    assert np.all(np.abs(host.mean(axis) - device.mean(axis)) <= z * error + 1e-12)


@pytest.mark.parametrize("name", ["gaussian", "poisson", "bernoulli"])
def test_host_draws_follow_the_story_as_the_jax_draws_do(name, wine_counts):
    X, y = wine_counts
    estimator = {
        "gaussian": genprob.GaussianNB(),
        "poisson": genprob.PoissonNB(),
        "bernoulli": genprob.BernoulliNB(),
    }[name]
    data = (X > np.median(X, axis=0)).astype(float) if name == "bernoulli" else X
    estimator.fit(data, y)
    story, D = estimator.story_, data.shape[1]
    # prior: NumPy's draws against the model's own (NumPyro's Predictive)
    host = _host_draws.host_prior_sites(story, 3, D, 4000, np.random.default_rng(0))
    assert host is not None
    device = aio._draw_prior(story, jax.random.PRNGKey(0), 3, D, 4000)
    assert set(host) == set(device)
    for site, value in host.items():
        assert value.shape == device[site].shape
        if site != "variances":  # inverse-gamma draws: a heavy tail, no usable standard error
            _moments_agree(value, device[site])
    # replicated rows at one parameter value: each row's features from its own class
    flat = {k: np.repeat(np.asarray(v)[None], 400, axis=0) for k, v in estimator.params_.items()}
    X_host, y_host = _host_draws.host_replicate(story, flat, 178, np.random.default_rng(1))
    keys = jax.random.split(jax.random.PRNGKey(1), 400)
    flat_j = {k: jnp.asarray(v) for k, v in flat.items()}
    X_dev, y_dev = (np.asarray(a) for a in aio._replicate(story, flat_j, keys, 178))
    assert X_host.shape == X_dev.shape and y_host.shape == y_dev.shape
    assert X_host.dtype.kind == X_dev.dtype.kind
    for k in range(3):
        _moments_agree(np.mean(y_host == k, axis=1), np.mean(y_dev == k, axis=1))
        _moments_agree(X_host[y_host == k], X_dev[y_dev == k])


def test_a_prior_whose_sites_depend_on_each_other_is_drawn_by_jax():
    import numpyro
    import numpyro.distributions as dist

    class Hierarchical(genprob.GaussianStory):
        def prior(self, num_classes, num_features):
            scale = numpyro.sample("scale", dist.HalfNormal(1.0))
            means = numpyro.sample(
                "means", dist.Normal(0.0, scale).expand((num_classes, num_features)).to_event(2)
            )
            variances = numpyro.sample(
                "variances",
                dist.InverseGamma(2.0, 1.0).expand((num_classes, num_features)).to_event(2),
            )
            return {"means": means, "variances": variances}

    story = Hierarchical(covariance="diag")
    assert _host_draws.host_prior_sites(story, 2, 3, 10, np.random.default_rng(0)) is None
    independent = genprob.GaussianStory(covariance="diag")
    assert _host_draws.host_prior_sites(independent, 2, 3, 10, np.random.default_rng(0))


def test_a_repeat_exact_posterior_compiles_nothing(wine_counts):
    import jax.monitoring

    X, y = wine_counts
    model = genprob.PoissonNB().fit(X, y)
    options = dict(method="exact", num_chains=2, num_samples=200)
    model.posterior(X, y, random_state=0, **options)
    compiled = []

    def listener(event, duration, **kwargs):
        if event.endswith("backend_compile_duration"):
            compiled.append(event)

    jax.monitoring.register_event_duration_secs_listener(listener)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            idata = model.posterior(X, y, random_state=1, **options)
    finally:
        jax.monitoring.unregister_event_duration_listener(listener)
    assert compiled == []
    assert compat.get_group(idata, "posterior")[CLASS_PRIOR].shape == (2, 200, 3)
