"""``sampler=``: BlackJAX's NUTS beside NumPyro's, on the same model, starts and ArviZ groups."""

import sys

import numpy as np
import pytest
from _conjugate_case import BERNOULLI_POISSON, assert_matches_exact, bernoulli_poisson_data

import genprob
from genprob.app import cli
from genprob.families.gaussian import GaussianStory
from genprob.inference.mcmc import run_nuts
from genprob.io import _arviz_compat as compat

STORY = GaussianStory(covariance="diag", shared=False)


def _semi_supervised_rows(seed, n=60):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    X = np.array([[0.0, 0.0], [2.5, 1.5]])[y] + rng.normal(0.0, 1.0, (n, 2))
    return X, np.where(rng.random(n) < 0.5, -1, y)


@pytest.fixture(scope="module")
def blackjax_and_numpyro():
    X, y = bernoulli_poisson_data(30, seed=1)
    estimator = genprob.GenerativeClassifier(BERNOULLI_POISSON).fit(X, y)
    common = dict(num_warmup=300, num_samples=400, num_chains=2, random_state=0)
    blackjax = estimator.posterior(X, y, sampler="blackjax", **common)
    numpyro = estimator.posterior(X, y, sampler="numpyro", **common)
    return estimator, X, y, blackjax, numpyro


@pytest.mark.arviz
def test_blackjax_matches_the_exact_posterior(blackjax_and_numpyro):
    import arviz as az

    estimator, X, y, draws, _ = blackjax_and_numpyro
    assert_matches_exact(draws, estimator, X, y, 400)
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
    assert "sampler='blackjax' needs the blackjax package: pip install 'genprob[blackjax]'" in error
    assert not (tmp_path / "out").exists()  # refused before the fit
