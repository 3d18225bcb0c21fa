"""ArviZ conversion: groups, dims, the marginal pointwise log-likelihood, the MLE table, plots."""

import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd
import pytest
import scipy.sparse
from matplotlib.figure import Figure
from scipy.special import logsumexp

import genprob
from genprob import core
from genprob.families.categorical import CategoricalStory
from genprob.families.gaussian import GaussianStory
from genprob.families.mixed import MixedStory
from genprob.io import _arviz_compat as compat

with warnings.catch_warnings():
    warnings.simplefilter("ignore", FutureWarning)
    import arviz as az

# Runs under ArviZ 0.x (InferenceData) and 1.x (DataTree): `make test` runs `-m arviz` in both.
pytestmark = pytest.mark.arviz


# -- a semi-supervised NUTS fit ----------------------------------------------------------------
@pytest.fixture(scope="module")
def semi_supervised():
    """60 rows of a two-class Gaussian NB story, half of the labels hidden; NUTS + to_arviz."""
    rng = np.random.default_rng(4)
    y = np.r_[[0, 1] * 30]
    X = rng.normal(size=(60, 2)) + np.where(y[:, None] == 1, [2.0, 1.0], [0.0, 0.0])
    y_partial = np.where(rng.random(60) < 0.5, -1, y)
    y_partial[:4] = y[:4]
    estimator = genprob.GaussianNB(var_smoothing=0.0).fit(X, y_partial)  # EM
    story = estimator.story_
    with jax.enable_x64(True):
        # num_classes is inferred from the labeled rows
        mcmc = genprob.run_nuts(
            story,
            X,
            y_partial,
            num_warmup=300,
            num_samples=500,
            num_chains=2,
            seed=3,
            chain_method="vectorized",
        )
        idata = genprob.to_arviz(
            mcmc,
            story,
            X,
            y_partial,
            mle=estimator.params_,
            classes=["left", "right"],
            feature_names=["width", "height"],
        )
    return estimator, story, X, y_partial, idata


def test_groups_dims_and_coords(semi_supervised):
    estimator, _, X, y_partial, idata = semi_supervised
    assert compat.group_names(idata) == [
        "posterior",
        "posterior_predictive",
        "log_likelihood",
        "sample_stats",
        "prior",
        "observed_data",
        "mle",
    ]
    assert type(idata).__name__ == ("DataTree" if compat.major() >= 1 else "InferenceData")
    assert idata.posterior.attrs["inference_method"] == "nuts"
    means = idata.posterior["means"]
    assert means.dims == ("chain", "draw", "class", "feature")
    assert means.shape == (2, 500, 2, 2)
    assert list(means.coords["class"].values) == ["left", "right"]
    assert list(means.coords["feature"].values) == ["width", "height"]
    assert idata.posterior["variances"].dims == ("chain", "draw", "class", "feature")
    assert idata.log_likelihood["obs"].dims == ("chain", "draw", "row")
    # class names, "" on unlabeled rows
    names = np.where(y_partial >= 0, np.array(["left", "right"])[np.maximum(y_partial, 0)], "")
    np.testing.assert_array_equal(idata.observed_data["y"].values, names)
    np.testing.assert_array_equal(idata.observed_data["X"].values, X)
    for name, value in estimator.params_.items():
        np.testing.assert_array_equal(idata.mle[name].values, value)
        assert idata.mle[name].dims == idata.posterior[name].dims[2:]
    stats = idata.sample_stats
    assert {"diverging", "acceptance_rate", "n_steps", "energy"} <= set(stats.data_vars)
    assert stats["acceptance_rate"].shape == (2, 500)
    assert float(stats["acceptance_rate"].mean()) > 0.6


def test_log_likelihood_group_is_the_marginal_log_likelihood_at_each_draw(semi_supervised):
    _, story, X, y_partial, idata = semi_supervised
    log_lik = idata.log_likelihood["obs"].values
    unlabeled = y_partial < 0
    assert unlabeled.sum() > 20
    with jax.enable_x64(True):
        for chain, draw in [(0, 0), (0, 137), (1, 249)]:
            params = {
                name: jnp.asarray(values.values[chain, draw])
                for name, values in idata.posterior.data_vars.items()
            }
            expected = core.log_likelihood(story, params, jnp.asarray(X), y_partial, pointwise=True)
            np.testing.assert_allclose(log_lik[chain, draw], expected, rtol=1e-10)
            # by hand: labeled rows log pi_y + log p(x | y), unlabeled rows a log-sum-exp over k
            joint = np.asarray(core.joint_log_prob(story, params, jnp.asarray(X)))
            np.testing.assert_allclose(
                log_lik[chain, draw][unlabeled], logsumexp(joint[unlabeled], axis=1), rtol=1e-10
            )
            labeled = np.flatnonzero(~unlabeled)
            np.testing.assert_allclose(
                log_lik[chain, draw][labeled], joint[labeled, y_partial[labeled]], rtol=1e-10
            )


@pytest.mark.filterwarnings("ignore:Estimated shape parameter of Pareto", "ignore:For one or more")
def test_loo_and_compare_run_on_the_semi_supervised_fit(semi_supervised):
    *_, idata = semi_supervised
    log_lik = idata.log_likelihood["obs"].values.reshape(-1, 60)
    loo = compat.loo_numbers(az.loo(idata, pointwise=True))
    assert loo["elpd_i"].shape == (60,)
    assert float(loo["elpd_i"].sum()) == pytest.approx(loo["elpd"], rel=1e-10)
    assert np.all(loo["pareto_k"] < 0.7)
    # PSIS-LOO stays close to the plain importance-sampling estimate log(1 / E_s[1 / p_i])
    # from its definition on the log_likelihood group
    is_loo = -(logsumexp(-log_lik, axis=0) - np.log(log_lik.shape[0]))
    np.testing.assert_allclose(loo["elpd_i"], is_loo, atol=0.05)
    lppd = logsumexp(log_lik, axis=0) - np.log(log_lik.shape[0])
    assert loo["p"] == pytest.approx(float(np.sum(lppd - loo["elpd_i"])), rel=1e-8)
    compared = az.compare({"semi-supervised": idata, "same again": idata})
    assert list(compared["rank"]) == [0, 1]
    unrounded = compat.compare({"semi-supervised": idata, "same again": idata})
    assert list(unrounded["elpd"]) == pytest.approx([loo["elpd"]] * 2, rel=1e-12)


def test_table_and_plots_on_the_nuts_fit(semi_supervised):
    estimator, _, _, _, idata = semi_supervised
    table = genprob.mle_vs_posterior_table(idata, var_names=["means"])
    assert list(table["parameter"]) == [
        "means[left, width]",
        "means[left, height]",
        "means[right, width]",
        "means[right, height]",
    ]
    np.testing.assert_array_equal(table["mle"], estimator.params_["means"].ravel())
    assert table["r_hat"].max() < 1.05 and table["ess_bulk"].min() > 100
    # n = 60: the EM fit sits inside every 94% HDI of the means
    assert table["mle_in_hdi"].all()
    figure = genprob.plot_forest(idata, var_names=["means"])
    assert isinstance(figure, Figure)


# -- exact posteriors: the table against ArviZ's summary ---------------------------------------
@pytest.fixture(scope="module")
def exact_bernoulli():
    rng = np.random.default_rng(2)
    y = np.array(["ham", "spam"] * 20)
    X = pd.DataFrame(
        (rng.random((40, 3)) < np.where(y[:, None] == "spam", 0.7, 0.3)).astype(float),
        columns=["free", "win", "hello"],
    )
    estimator = genprob.BernoulliNB(alpha=1.0).fit(X, y)
    idata = estimator.posterior(X, y, method="exact", num_samples=500, random_state=0)
    return estimator, X, y, idata


def test_table_matches_the_closed_form_fit_and_arviz_summary(exact_bernoulli):
    estimator, X, y, idata = exact_bernoulli
    table = genprob.mle_vs_posterior_table(idata)
    assert list(table.columns) == [
        "parameter",
        "mle",
        "mean",
        "sd",
        "hdi_3%",
        "hdi_97%",
        "mle_in_hdi",
        "r_hat",
        "ess_bulk",
    ]
    assert len(table) == 2 + 2 * 3
    assert table["parameter"].iloc[2] == "probs[ham, free]"
    # the MLE column is the closed-form fit
    codes = (y == "spam").astype(int)
    with jax.enable_x64(True):
        R = core.one_hot_responsibilities(jnp.asarray(codes), 2, dtype=jnp.float64)
        fit = core.fit_closed_form(estimator.story_, jnp.asarray(X.to_numpy()), R)
    expected = np.r_[np.asarray(fit["class_prior"]), np.asarray(fit["probs"]).ravel()]
    np.testing.assert_allclose(table["mle"], expected, rtol=1e-12)
    # the other columns are ArviZ's own summary
    summary = compat.summary(idata, hdi_prob=0.94)  # az.summary, its HDI columns named as 0.x
    summary = summary.loc[table["parameter"]]
    for column in ("mean", "sd", "hdi_3%", "hdi_97%", "ess_bulk", "r_hat"):
        np.testing.assert_allclose(table[column], summary[column], rtol=1e-10, err_msg=column)
    inside = (table["hdi_3%"] <= table["mle"]) & (table["mle"] <= table["hdi_97%"])
    np.testing.assert_array_equal(table["mle_in_hdi"], inside)


def test_plot_posterior_marks_the_mle(exact_bernoulli):
    estimator, _, _, idata = exact_bernoulli
    figure = genprob.plot_posterior_vs_mle(idata, var_names=["class_prior", "probs"])
    assert isinstance(figure, Figure)
    axes = [ax for ax in figure.axes if ax.get_visible()]
    assert len(axes) == 8
    mle = np.r_[estimator.params_["class_prior"], estimator.params_["probs"].ravel()]
    for ax, value in zip(axes, mle, strict=True):
        positions = [line.get_xdata()[0] for line in ax.get_lines() if len(line.get_xdata()) == 2]
        assert any(np.isclose(p, value) for p in positions), (ax.get_title(), value)


def test_predictive_vs_plugin(exact_bernoulli):
    estimator, X, _, idata = exact_bernoulli
    points = X.iloc[:4]
    table = genprob.predictive_vs_plugin(estimator, idata, points)
    assert list(table["class"][:2]) == ["ham", "spam"]
    plugin = table["plugin"].to_numpy().reshape(4, 2)
    np.testing.assert_allclose(plugin, estimator.predict_proba(points), rtol=1e-12)
    # posterior predictive by hand: the mean over draws of p(y | x, θ_s)
    with jax.enable_x64(True):
        draws = {k: v.values.reshape((-1,) + v.shape[2:]) for k, v in idata.posterior.items()}
        per_draw = [
            np.asarray(
                core.predict_proba(
                    estimator.story_,
                    {k: jnp.asarray(v[s]) for k, v in draws.items()},
                    jnp.asarray(points.to_numpy()),
                )
            )
            for s in range(0, 1000, 50)
        ]
        subset = genprob.posterior_predict_proba(
            estimator.story_, {k: v[::50] for k, v in draws.items()}, points.to_numpy()
        )
    np.testing.assert_allclose(np.asarray(subset), np.stack(per_draw), rtol=1e-10)
    mean = table["posterior_mean"].to_numpy().reshape(4, 2)
    np.testing.assert_allclose(mean.sum(axis=1), 1.0, rtol=1e-12)
    assert np.all(table["hdi_3%"] <= table["posterior_mean"])
    assert np.all(table["posterior_mean"] <= table["hdi_97%"])
    # averaging over the posterior pulls confident plug-in probabilities towards 1/2
    assert np.all(np.abs(mean - 0.5) <= np.abs(plugin - 0.5) + 0.02)
    figure = genprob.plot_predictive_vs_plugin(estimator, idata, points)
    assert isinstance(figure, Figure)
    assert [ax.get_title() for ax in figure.axes] == ["P(y = ham | x)", "P(y = spam | x)"]


# -- dims of every family, sparse data, bad input ------------------------------------------------
def _replicated(params, chains=2, draws=3):
    return {k: np.broadcast_to(v, (chains, draws) + np.shape(v)).copy() for k, v in params.items()}


@pytest.mark.parametrize(
    "estimator, expected",
    [
        (
            genprob.LinearDiscriminantAnalysis(),
            {"means": ("class", "feature"), "covariance": ("feature", "feature2")},
        ),
        (
            genprob.QuadraticDiscriminantAnalysis(),
            {"covariance": ("class", "feature", "feature2")},
        ),
        (
            genprob.GenerativeClassifier(GaussianStory(covariance="diag", shared=True)),
            {"variances": ("feature",)},
        ),
    ],
)
def test_gaussian_dims(estimator, expected):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(30, 3))
    y = np.r_[[0, 1, 2] * 10]
    estimator.fit(X, y)
    with jax.enable_x64(True):
        idata = genprob.to_arviz(
            _replicated(estimator.params_), estimator.story_, X, y, mle=estimator.params_
        )
        expected_log_lik = estimator.log_likelihood(X, y, pointwise=True)
    for name, dims in expected.items():
        assert idata.posterior[name].dims == ("chain", "draw") + dims
    if "covariance" in expected:
        assert list(idata.posterior.coords["feature2"].values) == ["x0", "x1", "x2"]
    # every draw is the MLE here, so every draw's log-likelihood is the estimator's
    np.testing.assert_allclose(idata.log_likelihood["obs"].values[1, 2], expected_log_lik)


def test_categorical_and_mixed_dims():
    rng = np.random.default_rng(1)
    codes = np.column_stack([rng.integers(0, 2, 30), rng.integers(0, 4, 30)]).astype(float)
    X = np.column_stack([rng.normal(size=30), codes])
    y = np.r_[[0, 1] * 15]
    story = MixedStory(
        [
            ("num", GaussianStory(covariance="diag", shared=False), (0,)),
            ("cat", CategoricalStory((2, 4)), (1, 2)),
        ]
    )
    estimator = genprob.GenerativeClassifier(story).fit(X, y)
    with jax.enable_x64(True):
        idata = genprob.to_arviz(
            _replicated(estimator.params_),
            story,
            X,
            y,
            mle=estimator.params_,
            feature_names=["size", "colour", "shape"],
        )
    probs = idata.posterior["cat.probs"]
    assert probs.dims == ("chain", "draw", "class", "cat_feature", "cat_category")
    assert list(probs.coords["cat_feature"].values) == ["colour", "shape"]
    assert list(probs.coords["cat_category"].values) == [0, 1, 2, 3]
    assert idata.posterior["num.means"].dims == ("chain", "draw", "class", "num_feature")
    table = genprob.mle_vs_posterior_table(idata, var_names="cat.probs")
    assert table["parameter"].iloc[0] == "cat.probs[0, colour, 0]"
    assert len(table) == 2 * 2 * 4
    with jax.enable_x64(True):
        single = CategoricalStory((2, 4))
        fit = genprob.CategoricalNB().fit(codes, y)
        idata = genprob.to_arviz(_replicated(fit.params_), single, codes, y)
    assert idata.posterior["probs"].dims == ("chain", "draw", "class", "feature", "category")


def test_sparse_counts_keep_the_data_out_but_score_it():
    rng = np.random.default_rng(3)
    dense = rng.poisson(0.3, (40, 25)).astype(float)
    y = np.r_[[0, 1] * 20]
    estimator = genprob.MultinomialNB().fit(scipy.sparse.csr_matrix(dense), y)
    idata = estimator.posterior(
        scipy.sparse.csr_matrix(dense),
        y,
        method="exact",
        num_samples=20,
        num_chains=1,
        random_state=0,
    )
    assert "X" not in idata.observed_data
    with jax.enable_x64(True):
        params = {k: jnp.asarray(v.values[0, 5]) for k, v in idata.posterior.items()}
        expected = core.log_likelihood(
            estimator.story_, params, jnp.asarray(dense), y, pointwise=True
        )
    np.testing.assert_allclose(idata.log_likelihood["obs"].values[0, 5], expected, rtol=1e-10)


def test_to_arviz_bad_input():
    rng = np.random.default_rng(0)
    X = (rng.random((10, 2)) < 0.5).astype(float)
    y = np.r_[[0, 1] * 5]
    estimator = genprob.BernoulliNB().fit(X, y)
    draws = _replicated(estimator.params_)
    story = estimator.story_
    with pytest.raises(ValueError, match="must include 'class_prior'"):
        genprob.to_arviz({"probs": draws["probs"]}, story, X, y)
    with pytest.raises(ValueError, match="same chains and draws"):
        genprob.to_arviz({**draws, "probs": draws["probs"][:, :2]}, story, X, y)
    with pytest.raises(ValueError, match=r"mle\['probs'\] has shape \(2,\)"):
        genprob.to_arviz(draws, story, X, y, mle={**estimator.params_, "probs": np.ones(2)})
    with pytest.raises(ValueError, match="3 class names for 2 classes"):
        genprob.to_arviz(draws, story, X, y, classes=["a", "b", "c"])
    with pytest.raises(ValueError, match="y has 9 rows but X has 10"):
        genprob.to_arviz(draws, story, X, y[:9])
    with pytest.raises(ValueError, match="NumPyro MCMC object or a dict"):
        genprob.to_arviz([1, 2], story, X, y)
    with pytest.raises(ValueError, match="no 'mle' group"):
        genprob.mle_vs_posterior_table(genprob.to_arviz(draws, story, X, y))
    with pytest.raises(ValueError, match=r"unknown parameters \['means'\]"):
        genprob.mle_vs_posterior_table(
            genprob.to_arviz(draws, story, X, y, mle=estimator.params_), var_names=["means"]
        )
    # draws without a chain axis get one
    flat = {k: v[0] for k, v in draws.items()}
    assert genprob.to_arviz(flat, story, X, y).posterior["probs"].shape == (1, 3, 2, 2)
