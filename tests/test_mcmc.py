"""NUTS on the semi-supervised model (labels -1 summed out) and posterior label draws."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from genprob import core
from genprob.engine.em import fit_em
from genprob.families.gaussian import GaussianStory
from genprob.inference.mcmc import fit_nuts, params_from_samples, run_nuts, sample_labels

STORY = GaussianStory(covariance="diag", shared=False)
NUM_SAMPLES = 400


@pytest.fixture(scope="module")
def semi_supervised_nuts():
    """80 rows drawn from a two-class diagonal Gaussian story, half of the labels hidden."""
    truth = {
        "class_prior": np.array([0.4, 0.6]),
        "means": np.array([[0.0, 0.0], [2.0, 1.0]]),
        "variances": np.array([[1.0, 1.0], [1.0, 0.5]]),
    }
    with jax.enable_x64(True):
        truth = {k: jnp.asarray(v) for k, v in truth.items()}
        X, y = core.sample(STORY, truth, 80, jax.random.PRNGKey(0))
        X, y = np.asarray(X), np.asarray(y)
        y_partial = np.where(np.random.default_rng(0).random(80) < 0.5, -1, y)
        em = fit_em(STORY, X, y_partial, tol=1e-14, max_iter=1000)
        mcmc = run_nuts(
            STORY,
            X,
            y_partial,
            num_classes=2,
            num_warmup=300,
            num_samples=NUM_SAMPLES,
            seed=1,
            init_params=em.params,
        )
        samples = {k: np.asarray(v) for k, v in mcmc.get_samples().items()}
    return X, y, y_partial, em, samples, mcmc


def test_nuts_posterior_mean_is_near_the_mle(semi_supervised_nuts):
    _, _, _, em, samples, mcmc = semi_supervised_nuts
    assert set(samples) == {"class_prior", "means", "variances"}
    for name, draws in samples.items():
        mle = np.asarray(em.params[name])
        assert draws.shape == (NUM_SAMPLES,) + mle.shape
        mean, sd = draws.mean(axis=0), draws.std(axis=0)
        assert np.all(sd > 0), name
        # n = 80: the posterior mean sits within half a posterior sd of the MLE (the weak prior
        # and O(1/n) skewness move it a little; Monte Carlo error is ~sd / 20)
        assert np.all(np.abs(mean - mle) <= 0.5 * sd), (name, mean, mle, sd)
    # NUTS was healthy: no divergences, good acceptance
    extra = mcmc.get_extra_fields()
    assert not np.any(np.asarray(extra["diverging"]))
    assert np.mean(np.asarray(extra["accept_prob"])) > 0.6


def test_label_draws_follow_the_class_posterior(semi_supervised_nuts):
    X, y, y_partial, em, samples, _ = semi_supervised_nuts
    with jax.enable_x64(True):
        draws = np.asarray(sample_labels(STORY, samples, X, y_partial, jax.random.PRNGKey(2)))
        params = params_from_samples(STORY, samples, X.shape[1])
        posteriors = np.asarray(
            jax.vmap(lambda p: core.predict_proba(STORY, p, jnp.asarray(X)))(params)
        )
    unlabeled = y_partial < 0
    assert draws.shape == (NUM_SAMPLES, 80) and draws.dtype == np.int32
    assert set(np.unique(draws)) <= {0, 1}
    assert np.all(draws[:, ~unlabeled] == y[~unlabeled])
    # given the parameter draws, the label draws are independent Bernoulli(p_s): their frequency
    # matches the mean posterior probability within 5 binomial standard errors
    frequency = draws[:, unlabeled].mean(axis=0)
    expected = posteriors[:, unlabeled, 1].mean(axis=0)
    standard_error = np.sqrt(np.maximum(expected * (1 - expected), 1e-4) / NUM_SAMPLES)
    assert np.all(np.abs(frequency - expected) <= 5 * standard_error)
    # and close to the plug-in (EM) posterior of each unlabeled row
    plug_in = np.asarray(em.responsibilities)[unlabeled, 1]
    assert np.max(np.abs(frequency - plug_in)) < 0.15
    # most draws recover the hidden true labels (the classes overlap a little)
    assert (draws[:, unlabeled] == y[unlabeled]).mean() > 0.8


def test_label_draws_keep_chain_axes(semi_supervised_nuts):
    X, _, y_partial, _, samples, _ = semi_supervised_nuts
    grouped = {k: v.reshape((2, NUM_SAMPLES // 2) + v.shape[1:]) for k, v in samples.items()}
    with jax.enable_x64(True):
        draws = sample_labels(STORY, grouped, X, y_partial, jax.random.PRNGKey(2))
        params = params_from_samples(STORY, grouped, X.shape[1])
    assert draws.shape == (2, NUM_SAMPLES // 2, 80)
    assert params["means"].shape == (2, NUM_SAMPLES // 2, 2, 2)
    np.testing.assert_array_equal(np.asarray(params["means"]).reshape(-1, 2, 2), samples["means"])


def test_fit_nuts_rejects_bad_labels():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(12, 2))
    y = np.array([0, 1] * 3 + [-1] * 6)
    with jax.enable_x64(True):
        with pytest.raises(ValueError, match=r"class codes 0..1; got 2"):
            fit_nuts(STORY, X, np.r_[y[:-1], 2], num_classes=2, num_warmup=5, num_samples=5)
        with pytest.raises(ValueError, match=r"got -3"):
            fit_nuts(STORY, X, np.r_[y[:-1], -3], num_classes=2, num_warmup=5, num_samples=5)
        with pytest.raises(ValueError, match="y has 11 rows but X has 12"):
            fit_nuts(STORY, X, y[:-1], num_classes=2, num_warmup=5, num_samples=5)


def _semi_supervised_rows(seed, n=60):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    X = np.array([[0.0, 0.0], [2.5, 1.5]])[y] + rng.normal(0.0, 1.0, (n, 2))
    return X, np.where(rng.random(n) < 0.5, -1, y)


def test_a_repeat_call_compiles_nothing():
    """New data values, seed and prior hyperparameters with the same shapes reuse the compiled
    chains: no backend compilation on the repeat call (jax.monitoring's compile events)."""
    import jax.monitoring

    compiled = []

    def listener(event, duration, **kwargs):
        if event.endswith("backend_compile_duration"):
            compiled.append(event)

    options = dict(num_classes=2, num_warmup=30, num_samples=30, num_chains=2, check=False)
    X, y = _semi_supervised_rows(0)
    run_nuts(STORY, X, y, seed=0, **options)
    jax.monitoring.register_event_duration_secs_listener(listener)
    try:
        X, y = _semi_supervised_rows(1)
        story = STORY.replace(mean_prior_scale=3.0)
        second = run_nuts(story, X, y, seed=7, **options)
    finally:
        jax.monitoring.unregister_event_duration_listener(listener)
    assert compiled == []
    assert np.all(np.isfinite(np.asarray(second.get_samples()["means"])))


def test_chains_side_by_side_equal_chains_one_after_the_other():
    """The threads' schedule changes nothing: every chain is the same compiled program with the
    same starting point and key."""
    X, y = _semi_supervised_rows(2)
    options = dict(num_classes=2, num_warmup=40, num_samples=40, num_chains=2, seed=3, check=False)
    parallel = run_nuts(STORY, X, y, chain_method="parallel", **options)
    sequential = run_nuts(STORY, X, y, chain_method="sequential", **options)
    for name, value in parallel.get_samples(group_by_chain=True).items():
        np.testing.assert_array_equal(value, sequential.get_samples(group_by_chain=True)[name])
    first, second = parallel.get_samples(group_by_chain=True)["means"]
    assert not np.array_equal(first, second)  # two chains, not one run twice


def test_work_without_draws_runs_on_the_callers_thread_before_the_chains(monkeypatch):
    """``while_compiling`` runs once, on the caller's thread, before any chain has run; starting
    points and chain keys come from the seed alone (NumPy), so a rerun gives the same draws."""
    import threading

    import genprob.inference.mcmc as mcmc

    X, y = _semi_supervised_rows(4)
    options = dict(num_classes=2, num_warmup=20, num_samples=20, num_chains=2, seed=5, check=False)
    calls, chains_run = [], []
    original = mcmc._run_chains

    def recording(*args, **kwargs):
        chains_run.append(True)
        return original(*args, **kwargs)

    monkeypatch.setattr(mcmc, "_run_chains", recording)

    def hook():
        calls.append((threading.get_ident(), len(chains_run)))

    first = run_nuts(STORY, X, y, while_compiling=hook, **options)
    assert calls == [(threading.get_ident(), 0)] and chains_run == [True]
    again = run_nuts(STORY, X, y, **options)
    for name, value in first.get_samples(group_by_chain=True).items():
        np.testing.assert_array_equal(value, again.get_samples(group_by_chain=True)[name])
