"""Exact conjugate posteriors, NUTS against them, calibration, and the estimator's posterior()."""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.stats
from _conjugate_case import BERNOULLI_POISSON, assert_matches_exact, bernoulli_poisson_data

import genprob
from genprob import core
from genprob.families.bernoulli import BernoulliStory
from genprob.families.categorical import CategoricalStory
from genprob.families.gaussian import GaussianStory
from genprob.families.mixed import MixedStory
from genprob.families.multinomial import MultinomialStory
from genprob.families.poisson import PoissonStory
from genprob.inference.posterior import exact_posterior, with_prior
from genprob.io import _arviz_compat as compat


# One story holds both conjugate families checked against NUTS, so one NUTS run covers them.
def _one_hot(codes, K):
    with jax.enable_x64(True):
        return core.one_hot_responsibilities(jnp.asarray(codes), K, dtype=jnp.float64)


def _discrete_cases():
    rng = np.random.default_rng(11)
    y = np.r_[0, 1, 2, rng.integers(0, 3, 37)]
    binary = (rng.random((40, 3)) < 0.4).astype(float)
    counts = rng.poisson(2.0, (40, 3)).astype(float)
    codes = np.column_stack([rng.integers(0, 2, 40), rng.integers(0, 4, 40)]).astype(float)
    return [
        (BernoulliStory(alpha=0.5), binary, y),
        (BernoulliStory(alpha=(0.5, 1.0, 2.0)), binary, y),
        (MultinomialStory(alpha=1.0), counts, y),
        (PoissonStory(alpha=1.0, beta=2.0), counts, y),
        (CategoricalStory(n_categories=(2, 5), alpha=1.0), codes, y),
        (
            MixedStory(
                [
                    ("b", BernoulliStory(0.5), (0, 1, 2)),
                    ("c", CategoricalStory((2, 5), 2.0), (3, 4)),
                ]
            ),
            np.column_stack([binary, codes]),
            y,
        ),
    ]


@pytest.mark.parametrize("case", range(6))
def test_smoothed_fit_is_the_posterior_mode_and_the_mean_under_the_shifted_prior(case):
    story, X, y = _discrete_cases()[case]
    with jax.enable_x64(True):
        fit = core.fit_closed_form(story, jnp.asarray(X), _one_hot(y, 3))
        by_mode = exact_posterior(story, X, y)
        by_mean = exact_posterior(story, X, y, smoothing_as="mean")
        mode, mean = by_mode.mode(), by_mean.mean()
    assert set(mode) == set(fit) == set(mean)
    for name in fit:
        np.testing.assert_allclose(mode[name], fit[name], rtol=1e-12, atol=1e-14, err_msg=name)
        np.testing.assert_allclose(mean[name], fit[name], rtol=1e-12, atol=1e-14, err_msg=name)
        # under the story's own prior (one more pseudo-count) the mean is not the fit
        assert not np.allclose(by_mode.mean()[name], fit[name]), name


def test_exact_posterior_parameters_by_hand():
    # class 0: rows [1, 0], [1, 1]; class 1: row [0, 1]; alpha = 1 -> Beta(c + 2, N - c + 2)
    X = np.array([[1.0, 0.0], [1.0, 1.0], [0.0, 1.0]])
    y = np.array([0, 0, 1])
    with jax.enable_x64(True):
        post = exact_posterior(BernoulliStory(alpha=1.0), X, y, class_concentration=2.0)
        params = post.parameters()
    np.testing.assert_array_equal(params["probs"]["concentration1"], [[4.0, 3.0], [2.0, 3.0]])
    np.testing.assert_array_equal(params["probs"]["concentration0"], [[2.0, 3.0], [3.0, 2.0]])
    # Dirichlet(N_k + a) with a = 2
    np.testing.assert_array_equal(params["class_prior"]["concentration"], [4.0, 3.0])
    reference = scipy.stats.beta(4.0, 2.0)
    assert post.mean()["probs"][0, 0] == pytest.approx(reference.mean(), rel=1e-12)
    assert post.sd()["probs"][0, 0] == pytest.approx(reference.std(), rel=1e-12)
    assert post.mode()["probs"][0, 0] == pytest.approx(3.0 / 4.0, rel=1e-12)
    dirichlet = scipy.stats.dirichlet([4.0, 3.0])
    np.testing.assert_allclose(post.sd()["class_prior"], np.sqrt(dirichlet.var()), rtol=1e-12)
    # the NumPyro distributions carry the same parameters
    with jax.enable_x64(True):
        beta = post.distributions()["probs"]
        assert beta.event_shape == (2, 2)
        np.testing.assert_allclose(beta.mean, post.mean()["probs"], rtol=1e-12)


def test_exact_draws_match_the_posterior_moments():
    story, X, y = _discrete_cases()[4]  # categorical with padded tables
    with jax.enable_x64(True):
        post = exact_posterior(story, X, y)
        draws = post.sample(jax.random.PRNGKey(0), 20000)
        mean, sd = post.mean(), post.sd()
    for name, values in draws.items():
        assert values.shape == (20000,) + mean[name].shape
        assert values.dtype == np.float64
        standard_error = np.asarray(sd[name]) / np.sqrt(20000)
        assert np.all(np.abs(values.mean(axis=0) - mean[name]) <= 4 * standard_error + 1e-15)
        np.testing.assert_allclose(values.std(axis=0), sd[name], rtol=0.05, atol=1e-15)
    # padding cells stay exactly zero, real cells sum to one
    assert np.all(draws["probs"][:, :, 0, 2:] == 0)
    np.testing.assert_allclose(draws["probs"].sum(axis=-1), 1.0, rtol=1e-12)
    # same key, same draws; a (chains, draws) shape
    again = post.sample(jax.random.PRNGKey(0), 20000)
    np.testing.assert_array_equal(again["probs"], draws["probs"])
    assert post.sample(1, (2, 3))["class_prior"].shape == (2, 3, 3)


def test_tiny_concentrations_do_not_underflow():
    rng = np.random.default_rng(0)
    tiny = jnp.full((2, 3), 1e-3, dtype=jnp.float32)
    dirichlet = genprob.posterior.ConjugateFactor("dirichlet", tiny).sample(rng, (500,))
    beta = genprob.posterior.ConjugateFactor("beta", tiny, tiny).sample(rng, (500,))
    assert dirichlet.dtype == beta.dtype == np.float32
    assert np.all(np.isfinite(dirichlet)) and np.all(np.isfinite(beta))
    np.testing.assert_allclose(dirichlet.sum(axis=-1), 1.0, rtol=1e-6)
    # with concentrations this small nearly all mass sits on one category / one end
    assert np.mean(dirichlet.max(axis=-1) > 0.999) > 0.9
    assert np.mean((beta < 1e-3) | (beta > 1 - 1e-3)) > 0.9


def _rank_uniformity_pvalues(ranks, num_draws, bins=10):
    """Chi-square p-value of each column of ranks (0..num_draws) being uniform."""
    edges = np.linspace(0, num_draws + 1, bins + 1)
    counts = np.stack([np.histogram(column, edges)[0] for column in ranks.T])
    return scipy.stats.chisquare(counts, axis=1).pvalue


def _sbc_ranks(true_alpha, posterior_alpha, replications=300, num_draws=99, n=12, seed=0):
    """Ranks of prior-drawn true parameters among exact posterior draws (Bernoulli, K=2, D=2)."""
    rng = np.random.default_rng(seed)
    story = BernoulliStory(alpha=posterior_alpha)
    ranks = []
    with jax.enable_x64(True):
        for _ in range(replications):
            class_prior = rng.dirichlet([1.0, 1.0])
            probs = rng.beta(true_alpha + 1.0, true_alpha + 1.0, (2, 2))
            y = rng.choice(2, n, p=class_prior)  # a class may get no row: K is given
            X = (rng.random((n, 2)) < probs[y]).astype(float)
            draws = exact_posterior(story, X, y, num_classes=2).sample(rng, num_draws)
            ranks.append(
                np.r_[
                    (draws["class_prior"][:, 1] < class_prior[1]).sum(),
                    (draws["probs"] < probs).sum(axis=0).ravel(),
                ]
            )
    return np.array(ranks), num_draws


def test_simulation_based_calibration_of_exact_posteriors():
    ranks, num_draws = _sbc_ranks(true_alpha=1.0, posterior_alpha=1.0)
    pvalues = _rank_uniformity_pvalues(ranks, num_draws)
    assert pvalues.min() > 0.01 / len(pvalues), pvalues  # Bonferroni over the 5 parameters
    # negative control: a posterior computed under the wrong prior is visibly miscalibrated
    ranks, num_draws = _sbc_ranks(true_alpha=1.0, posterior_alpha=20.0, replications=150)
    assert _rank_uniformity_pvalues(ranks, num_draws)[1:].max() < 1e-6


def test_posterior_mean_approaches_the_mle_as_data_grow():
    gaps, sds = [], []
    for n in (40, 4000):
        X, y = bernoulli_poisson_data(n, seed=5)
        with jax.enable_x64(True):
            post = exact_posterior(BERNOULLI_POISSON, X, y)
            fit = core.fit_closed_form(BERNOULLI_POISSON, jnp.asarray(X), _one_hot(y, 2))
            gaps.append(max(float(np.max(np.abs(post.mean()[k] - fit[k]))) for k in fit))
            sds.append(float(np.max(post.sd()["coin.probs"])))
    # the gap is O(1/n) and the spread O(1/sqrt(n)): 100x more data, ~100x and ~10x smaller
    assert gaps[1] < gaps[0] / 30 and gaps[1] < 1e-3
    assert sds[0] / sds[1] == pytest.approx(10.0, rel=0.35)


# -- NUTS against the exact posterior --------------------------------------------------------
@pytest.fixture(scope="module")
def nuts_and_exact():
    X, y = bernoulli_poisson_data(30, seed=1)
    estimator = genprob.GenerativeClassifier(BERNOULLI_POISSON)
    common = dict(num_samples=400, num_chains=2, random_state=0)
    nuts = estimator.posterior(X, y, method="nuts", num_warmup=300, **common)
    exact = estimator.posterior(X, y, method="exact", **common)
    return estimator, X, y, nuts, exact


@pytest.mark.arviz
def test_nuts_matches_the_exact_posterior(nuts_and_exact):
    import arviz as az

    estimator, X, y, nuts, exact = nuts_and_exact
    assert_matches_exact(nuts, estimator, X, y, 400)
    # the exact draws are independent: their bulk ESS is close to the number of draws
    ess = az.ess(exact, method="bulk")
    assert min(float(v.min()) for v in ess.data_vars.values()) > 500


@pytest.mark.arviz
def test_posterior_groups_names_and_shapes(nuts_and_exact):
    estimator, X, y, nuts, exact = nuts_and_exact
    for idata, method in ((nuts, "nuts"), (exact, "exact")):
        assert set(idata.posterior.data_vars) == set(estimator.params_)
        for name, value in estimator.params_.items():
            assert idata.posterior[name].shape == (2, 400) + value.shape
            np.testing.assert_array_equal(idata.mle[name].values, value)
        assert idata.posterior.attrs["inference_method"] == method
        np.testing.assert_array_equal(idata.observed_data["y"].values, y)
        np.testing.assert_array_equal(idata.observed_data["X"].values, X)
    assert compat.has_group(nuts, "sample_stats") and not compat.has_group(exact, "sample_stats")
    assert nuts.posterior["coin.probs"].dims == ("chain", "draw", "class", "coin_feature")
    assert list(nuts.posterior["count.rates"].coords["count_feature"].values) == ["x2"]


@pytest.mark.slow
def test_simulation_based_calibration_of_nuts():
    """SBC of NUTS on genprob's model (Bernoulli story, K = 2, D = 1, n = 12).

    The replications run as one vmapped NUTS chain per data set (NumPyro's functional ``hmc``
    with the potential as a function of the data), so the sampler compiles once.
    """
    from numpyro.infer.hmc import hmc
    from numpyro.infer.util import initialize_model

    story, n, replications, num_draws, thin = BernoulliStory(alpha=1.0), 12, 200, 99, 4
    rng = np.random.default_rng(7)
    class_prior = rng.dirichlet([1.0, 1.0], replications)
    probs = rng.beta(2.0, 2.0, (replications, 2, 1))
    labels = (rng.random((replications, n)) < class_prior[:, 1:]).astype(np.int32)
    X = rng.random((replications, n, 1)) < np.take_along_axis(probs, labels[..., None], 1)
    model = functools.partial(core.model, story, num_classes=2)
    with jax.enable_x64(True):
        X, labels = jnp.asarray(X, jnp.float64), jnp.asarray(labels)
        info, potential_gen, postprocess_gen, _ = initialize_model(
            jax.random.PRNGKey(0), model, model_args=(X[0], labels[0]), dynamic_args=True
        )
        init_kernel, sample_kernel = hmc(potential_fn_gen=potential_gen, algo="NUTS")
        num_warmup, num_samples = 300, num_draws * thin

        def chain(key, data, y):
            state = init_kernel(info.z, num_warmup, model_args=(data, y), rng_key=key)

            def step(state, _):
                state = sample_kernel(state, model_args=(data, y))
                return state, state.z

            _, path = jax.lax.scan(step, state, None, length=num_warmup + num_samples)
            kept = jax.tree_util.tree_map(lambda v: v[num_warmup::thin], path)
            return jax.vmap(postprocess_gen(data, y))(kept)

        keys = jax.random.split(jax.random.PRNGKey(1), replications)
        draws = jax.jit(jax.vmap(chain))(keys, X, labels)
        draws = {k: np.asarray(v) for k, v in draws.items()}
    ranks = np.column_stack(
        [
            (draws["class_prior"][..., 1] < class_prior[:, 1:]).sum(axis=1),
            (draws["probs"][..., 0, 0] < probs[:, None, 0, 0]).sum(axis=1),
            (draws["probs"][..., 1, 0] < probs[:, None, 1, 0]).sum(axis=1),
        ]
    )
    pvalues = _rank_uniformity_pvalues(ranks, num_draws)
    assert pvalues.min() > 0.01 / len(pvalues), pvalues


# -- bad input -------------------------------------------------------------------------------
@pytest.mark.arviz
def test_bad_method_and_stories_without_exact_posterior():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(20, 2))
    y = np.r_[[0, 1] * 10]
    gaussian = genprob.GaussianNB().fit(X, y)
    with pytest.raises(ValueError, match=r"method must be 'nuts' or 'exact', got 'mcmc'"):
        gaussian.posterior(X, y, method="mcmc")
    with pytest.raises(ValueError, match=r"GaussianStory has no exact .*method='nuts'"):
        gaussian.posterior(X, y, method="exact")
    mixed = MixedStory(
        [
            ("num", GaussianStory(covariance="diag", shared=False), (0,)),
            ("b", BernoulliStory(), (1,)),
        ]
    )
    with pytest.raises(
        ValueError, match=r"MixedStory .*holds a GaussianStory\): GaussianStory does not"
    ):
        exact_posterior(mixed, np.c_[X[:, 0], X[:, 1] > 0], y)
    binary = (X > 0).astype(float)
    bernoulli = genprob.BernoulliNB()
    with pytest.raises(ValueError, match=r"3 unlabeled rows .*method='nuts'"):
        bernoulli.posterior(binary, np.r_[y[:-3], [-1, -1, -1]], method="exact")
    assert not hasattr(bernoulli, "params_")  # refused before fitting
    with pytest.raises(ValueError, match=r"2 unlabeled rows"):
        exact_posterior(BernoulliStory(), binary, np.r_[y[:-2], [-1, -1]])
    with pytest.raises(ValueError, match="num_samples must be an int >= 1"):
        bernoulli.posterior(binary, y, method="exact", num_samples=0)
    with pytest.raises(ValueError, match="smoothing_as must be 'mode' or 'mean'"):
        exact_posterior(BernoulliStory(), binary, y, smoothing_as="median")
    with pytest.raises(ValueError, match=r"zero concentration"):
        exact_posterior(BernoulliStory(alpha=0.0), binary[:, :1] * 0, y, smoothing_as="mean")


@pytest.mark.arviz
def test_prior_overrides():
    story = BernoulliStory(alpha=1.0)
    changed = with_prior(story, class_concentration=3.0)
    assert changed.class_concentration == 3.0 and story.class_concentration == 1.0
    assert changed != story  # a different prior compiles separately
    with pytest.raises(ValueError, match=r"no prior setting 'beta'.*known: class_concentration"):
        with_prior(story, beta=2.0)
    with pytest.raises(ValueError, match="class_concentration must be a number > 0"):
        with_prior(story, class_concentration=0.0)
    X = np.array([[1.0], [0.0], [1.0]])
    y = np.array([0, 1, 1])
    estimator = genprob.BernoulliNB().fit(X, y)
    idata = estimator.posterior(
        X, y, method="exact", num_samples=4000, random_state=0, prior={"class_concentration": 5.0}
    )
    # Dirichlet(N_k + 5) = Dirichlet(6, 7): mean 6 / 13
    assert float(idata.posterior["class_prior"].values[..., 0].mean()) == pytest.approx(
        6 / 13, abs=0.01
    )
    with pytest.raises(ValueError, match="prior must be a dict"):
        estimator.posterior(X, y, method="exact", prior=5.0)
