"""``sampler=``: BlackJAX's NUTS beside NumPyro's, on the same model, starts and ArviZ groups."""

import sys

import jax
import numpy as np
import pytest

import genprob
from genprob import _arviz_compat as compat
from genprob.app import cli
from genprob.families.bernoulli import BernoulliStory
from genprob.families.gaussian import GaussianStory
from genprob.families.mixed import MixedStory
from genprob.families.poisson import PoissonStory
from genprob.mcmc import run_nuts
from genprob.posterior import exact_posterior

# the conjugate story of tests/test_posterior.py: one NUTS run checks two exact posteriors
BERNOULLI_POISSON = MixedStory(
    [("coin", BernoulliStory(alpha=1.0), (0, 1)), ("count", PoissonStory(1.0, 1.0), (2,))]
)
STORY = GaussianStory(covariance="diag", shared=False)


def _bernoulli_poisson_data(n, seed):
    rng = np.random.default_rng(seed)
    y = np.r_[0, 1, rng.integers(0, 2, n - 2)]
    probs = np.array([[0.2, 0.7], [0.6, 0.4]])
    rates = np.array([1.5, 4.0])
    X = np.column_stack(
        [(rng.random((n, 2)) < probs[y]).astype(float), rng.poisson(rates[y]).astype(float)]
    )
    return X, y


def _semi_supervised_rows(seed, n=60):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    X = np.array([[0.0, 0.0], [2.5, 1.5]])[y] + rng.normal(0.0, 1.0, (n, 2))
    return X, np.where(rng.random(n) < 0.5, -1, y)


@pytest.fixture(scope="module")
def blackjax_and_numpyro():
    X, y = _bernoulli_poisson_data(30, seed=1)
    estimator = genprob.GenerativeClassifier(BERNOULLI_POISSON).fit(X, y)
    common = dict(num_warmup=300, num_samples=400, num_chains=2, random_state=0)
    blackjax = estimator.posterior(X, y, sampler="blackjax", **common)
    numpyro = estimator.posterior(X, y, sampler="numpyro", **common)
    return estimator, X, y, blackjax, numpyro


@pytest.mark.arviz
def test_blackjax_matches_the_exact_posterior(blackjax_and_numpyro):
    import arviz as az

    estimator, X, y, draws, _ = blackjax_and_numpyro
    with jax.enable_x64(True):
        truth = exact_posterior(BERNOULLI_POISSON, X, y)
        mean, sd = truth.mean(), truth.sd()
    mcse_mean = az.mcse(draws, method="mean")
    mcse_sd = az.mcse(draws, method="sd")
    for name, values in draws.posterior.data_vars.items():
        values = values.values
        assert values.shape == (2, 400) + estimator.params_[name].shape
        estimate_mean = values.mean(axis=(0, 1))
        estimate_sd = values.std(axis=(0, 1), ddof=1)
        assert np.all(np.abs(estimate_mean - mean[name]) <= 4 * mcse_mean[name].values), name
        assert np.all(np.abs(estimate_sd - sd[name]) <= 4 * mcse_sd[name].values), name
    assert not np.any(draws.sample_stats["diverging"].values)
    ess = az.ess(draws, method="bulk")
    assert min(float(v.min()) for v in ess.data_vars.values()) > 400


@pytest.mark.arviz
def test_blackjax_returns_the_groups_and_statistics_of_numpyro(blackjax_and_numpyro):
    _, _, _, blackjax, numpyro = blackjax_and_numpyro
    assert compat.group_names(blackjax) == compat.group_names(numpyro)
    for group in compat.group_names(numpyro):
        ours, theirs = blackjax[group], numpyro[group]
        assert set(ours.data_vars) == set(theirs.data_vars), group
        for name in theirs.data_vars:
            assert ours[name].dims == theirs[name].dims, (group, name)
            assert ours[name].shape == theirs[name].shape, (group, name)
    steps = blackjax.sample_stats["n_steps"].values
    assert np.all(steps >= 1) and np.issubdtype(steps.dtype, np.integer)
    accept = blackjax.sample_stats["acceptance_rate"].values
    assert np.all((accept >= 0) & (accept <= 1)) and 0.6 < accept.mean() < 0.99


def test_a_repeat_blackjax_call_compiles_nothing():
    """As NumPyro's chains (tests/test_mcmc.py): new data values, seed and prior
    hyperparameters with the same shapes reuse the compiled BlackJAX chains."""
    import jax.monitoring

    compiled = []

    def listener(event, duration, **kwargs):
        if event.endswith("backend_compile_duration"):
            compiled.append(event)

    options = dict(
        num_classes=2, num_warmup=30, num_samples=30, num_chains=2, check=False, sampler="blackjax"
    )
    X, y = _semi_supervised_rows(0)
    run_nuts(STORY, X, y, seed=0, **options)
    jax.monitoring.register_event_duration_secs_listener(listener)
    try:
        X, y = _semi_supervised_rows(1)
        second = run_nuts(STORY.replace(mean_prior_scale=3.0), X, y, seed=7, **options)
    finally:
        jax.monitoring.unregister_event_duration_listener(listener)
    assert compiled == []
    assert np.all(np.isfinite(np.asarray(second.get_samples()["means"])))


def test_blackjax_chains_side_by_side_equal_chains_one_after_the_other():
    X, y = _semi_supervised_rows(2)
    options = dict(num_classes=2, num_warmup=40, num_samples=40, num_chains=2, seed=3, check=False)
    parallel = run_nuts(STORY, X, y, chain_method="parallel", sampler="blackjax", **options)
    sequential = run_nuts(STORY, X, y, chain_method="sequential", sampler="blackjax", **options)
    for name, value in parallel.get_samples(group_by_chain=True).items():
        np.testing.assert_array_equal(value, sequential.get_samples(group_by_chain=True)[name])
    first, second = parallel.get_samples(group_by_chain=True)["means"]
    assert not np.array_equal(first, second)
    extra = parallel.get_extra_fields(group_by_chain=True)
    assert set(extra) == {"diverging", "accept_prob", "num_steps", "energy", "potential_energy"}
    assert extra["potential_energy"].shape == (2, 40)


def test_unknown_sampler_is_refused_by_name():
    X, y = _semi_supervised_rows(0)
    with pytest.raises(
        ValueError, match=r"sampler must be one of 'numpyro', 'blackjax', got 'stan'"
    ):
        run_nuts(STORY, X, y, num_classes=2, sampler="stan")
    estimator = genprob.GaussianNB().fit(X[y >= 0], y[y >= 0])
    with pytest.raises(ValueError, match=r"sampler must be one of .* got 'nutpie'"):
        estimator.posterior(X[y >= 0], y[y >= 0], sampler="nutpie")


def test_settings_blackjax_cannot_take_are_refused():
    X, y = _semi_supervised_rows(0)
    with pytest.raises(TypeError, match=r"sampler='blackjax' takes .* got adapt_mass_matrix"):
        run_nuts(STORY, X, y, num_classes=2, sampler="blackjax", adapt_mass_matrix=False)


def test_missing_blackjax_names_the_extra(monkeypatch, tmp_path, capsys):
    monkeypatch.setitem(sys.modules, "blackjax", None)  # import blackjax raises ImportError
    X, y = _semi_supervised_rows(0)
    extra = r"pip install 'genprob\[blackjax\]'"
    with pytest.raises(
        ImportError, match=r"sampler='blackjax' needs the blackjax package: " + extra
    ):
        run_nuts(STORY, X, y, num_classes=2, sampler="blackjax")
    labeled = y >= 0
    estimator = genprob.GaussianNB().fit(X[labeled], y[labeled])
    with pytest.raises(ImportError, match=extra):
        estimator.posterior(X[labeled], y[labeled], sampler="blackjax")
    table = tmp_path / "rows.csv"
    rows = np.column_stack([X[labeled], y[labeled]])
    np.savetxt(table, rows, delimiter=",", header="a,b,label", comments="")
    argv = ["compare", "gaussian_nb", str(table), "--target", "label", "--sampler", "blackjax"]
    argv += ["--out", str(tmp_path / "out")]
    capsys.readouterr()
    assert cli.main(argv) == 2
    error = capsys.readouterr().err
    assert "--sampler blackjax needs the blackjax package: pip install 'genprob[blackjax]'" in error
    assert not (tmp_path / "out").exists()  # refused before the fit
