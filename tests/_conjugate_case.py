"""A conjugate story (Bernoulli and Poisson blocks) whose exact posterior checks NUTS draws."""

import jax
import numpy as np

from genprob.families.bernoulli import BernoulliStory
from genprob.families.mixed import MixedStory
from genprob.families.poisson import PoissonStory
from genprob.inference.posterior import exact_posterior

BERNOULLI_POISSON = MixedStory(
    [("coin", BernoulliStory(alpha=1.0), (0, 1)), ("count", PoissonStory(1.0, 1.0), (2,))]
)


def bernoulli_poisson_data(n, seed):
    rng = np.random.default_rng(seed)
    y = np.r_[0, 1, rng.integers(0, 2, n - 2)]
    probs = np.array([[0.2, 0.7], [0.6, 0.4]])
    rates = np.array([1.5, 4.0])
    X = np.column_stack(
        [(rng.random((n, 2)) < probs[y]).astype(float), rng.poisson(rates[y]).astype(float)]
    )
    return X, y


def assert_matches_exact(draws, estimator, X, y, num_draws):
    """Every parameter's posterior mean and sd within 4 Monte Carlo errors of the exact ones."""
    import arviz as az

    with jax.enable_x64(True):
        truth = exact_posterior(BERNOULLI_POISSON, X, y)
        mean, sd = truth.mean(), truth.sd()
    mcse_mean = az.mcse(draws, method="mean")
    mcse_sd = az.mcse(draws, method="sd")
    for name, values in draws.posterior.data_vars.items():
        values = values.values
        assert values.shape == (2, num_draws) + estimator.params_[name].shape
        estimate_mean = values.mean(axis=(0, 1))
        estimate_sd = values.std(axis=(0, 1), ddof=1)
        assert np.all(np.abs(estimate_mean - mean[name]) <= 4 * mcse_mean[name].values), name
        assert np.all(np.abs(estimate_sd - sd[name]) <= 4 * mcse_sd[name].values), name
    assert not np.any(draws.sample_stats["diverging"].values)
