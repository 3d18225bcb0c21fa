"""Missing feature values (NaN) summed out of the stories (docs/howto/missing.md)."""

import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd
import pytest
import scipy.optimize
from scipy.stats import multivariate_normal, norm
from sklearn.datasets import load_iris, load_wine

from genprob.engine._dtype import precision
from genprob.estimators import (
    BernoulliNB,
    CategoricalNB,
    GaussianNB,
    LinearDiscriminantAnalysis,
    MultinomialNB,
    PoissonNB,
    QuadraticDiscriminantAnalysis,
)


def _iris():
    return load_iris(return_X_y=True)


def _mcar(X, fraction, seed):
    X = X.copy()
    X[np.random.default_rng(seed).random(X.shape) < fraction] = np.nan
    return X


@pytest.mark.parametrize(
    "make, transform",
    [
        (GaussianNB, lambda X: X),
        (LinearDiscriminantAnalysis, lambda X: X),
        (QuadraticDiscriminantAnalysis, lambda X: X),
        (BernoulliNB, lambda X: (X > X.mean(axis=0)).astype(float)),
        (CategoricalNB, np.floor),
        (PoissonNB, np.floor),
    ],
)
def test_no_missing_values_give_todays_results(make, transform):
    X, y = _iris()
    X = transform(X)
    today = make().fit(X, y)
    marginalizing = make(missing="marginalize").fit(X, y)
    for name, value in today.params_.items():
        np.testing.assert_array_equal(marginalizing.params_[name], value)
    np.testing.assert_array_equal(marginalizing.predict_proba(X), today.predict_proba(X))
    # complete rows keep their exact score when other rows of the batch miss entries
    Xm = X.copy()
    Xm[0, 1] = np.nan
    np.testing.assert_array_equal(
        marginalizing.predict_joint_log_proba(Xm)[1:], today.predict_joint_log_proba(X)[1:]
    )


def test_default_refuses_nan_and_bad_option():
    X, y = _iris()
    Xm = _mcar(X, 0.1, 0)
    with pytest.raises(ValueError, match="NaN"):
        GaussianNB().fit(Xm, y)
    with pytest.raises(ValueError, match="NaN"):
        GaussianNB().fit(X, y).predict(Xm)
    with pytest.raises(ValueError, match="missing must be"):
        GaussianNB(missing="impute").fit(X, y)


def test_gaussian_nb_equals_hand_computation():
    X, y = _iris()
    Xm = _mcar(X, 0.2, 1)
    model = GaussianNB(missing="marginalize").fit(Xm, y)
    observed = ~np.isnan(Xm)
    largest = max(np.var(Xm[observed[:, j], j]) for j in range(4))
    for k in range(3):
        rows = Xm[y == k]
        mean = np.nanmean(rows, axis=0)
        var = np.nanvar(rows, axis=0) + 1e-9 * largest
        np.testing.assert_allclose(model.params_["means"][k], mean, rtol=1e-12)
        np.testing.assert_allclose(model.params_["variances"][k], var, rtol=1e-10)
    joint = model.predict_joint_log_proba(Xm)
    prior = np.bincount(y) / len(y)
    for i in range(0, 150, 7):
        o = observed[i]
        for k in range(3):
            expected = (
                np.log(prior[k])
                + norm.logpdf(
                    Xm[i, o],
                    model.params_["means"][k, o],
                    np.sqrt(model.params_["variances"][k, o]),
                ).sum()
            )
            assert joint[i, k] == pytest.approx(expected, rel=1e-12, abs=1e-12)


def test_bernoulli_nb_equals_hand_computation():
    X, y = _iris()
    Xb = (X > X.mean(axis=0)).astype(float)
    Xb[np.isnan(_mcar(X, 0.25, 2))] = np.nan
    model = BernoulliNB(missing="marginalize", alpha=1.0).fit(Xb, y)
    observed = ~np.isnan(Xb)
    for k in range(3):
        rows, seen = Xb[y == k], observed[y == k]
        probs = (np.nansum(rows, axis=0) + 1.0) / (seen.sum(axis=0) + 2.0)
        np.testing.assert_allclose(model.params_["probs"][k], probs, rtol=1e-13)
    joint = model.predict_joint_log_proba(Xb)
    p = model.params_["probs"]
    for i in range(0, 150, 11):
        o = observed[i]
        x = Xb[i, o]
        expected = np.log(model.params_["class_prior"]) + (
            x * np.log(p[:, o]) + (1 - x) * np.log1p(-p[:, o])
        ).sum(axis=1)
        np.testing.assert_allclose(joint[i], expected, rtol=1e-12)


def test_categorical_and_poisson_count_observed_entries():
    X, y = _iris()
    codes = np.floor(X)
    codes[np.isnan(_mcar(X, 0.2, 3))] = np.nan
    observed = ~np.isnan(codes)
    categorical = CategoricalNB(missing="marginalize", alpha=0.5).fit(codes, y)
    poisson = PoissonNB(missing="marginalize", alpha=1.0, beta=1.0).fit(codes, y)
    for k in range(3):
        rows, seen = codes[y == k], observed[y == k]
        for j in range(4):
            values = rows[seen[:, j], j].astype(int)
            counts = np.bincount(values, minlength=categorical.n_categories_[j]) + 0.5
            np.testing.assert_allclose(
                np.exp(categorical.feature_log_prob_[j][k]), counts / counts.sum(), rtol=1e-12
            )
        rates = (np.nansum(rows, axis=0) + 1.0) / (seen.sum(axis=0) + 1.0)
        np.testing.assert_allclose(poisson.params_["rates"][k], rates, rtol=1e-12)


@pytest.mark.parametrize("make", [LinearDiscriminantAnalysis, QuadraticDiscriminantAnalysis])
def test_full_covariance_predict_is_the_marginal_gaussian(make):
    X, y = _iris()
    model = make(missing="marginalize").fit(X, y)
    Xm = _mcar(X, 0.3, 4)
    Xm[5] = np.nan
    joint = model.predict_joint_log_proba(Xm)
    means = model.params_["means"]
    covariance = model.params_["covariance"]
    prior = model.params_["class_prior"]
    for i in range(150):
        o = ~np.isnan(Xm[i])
        for k in range(3):
            cov = covariance if covariance.ndim == 2 else covariance[k]
            expected = np.log(prior[k])
            if o.any():
                expected += multivariate_normal(means[k, o], cov[np.ix_(o, o)]).logpdf(Xm[i, o])
            assert abs(joint[i, k] - expected) < 1e-10
    # nothing observed: the posterior is the class prior
    np.testing.assert_allclose(model.predict_proba(Xm[5:6])[0], prior, rtol=1e-12)


def _observed_negative_log_likelihood(X, means_chol, num_features):
    """Independent reference: -sum_i log N(x_i,o; mu_o, Sigma_oo), Sigma = L L^T, per pattern."""
    mean = means_chol[:num_features]
    lower = jnp.zeros((num_features, num_features))
    rows, cols = np.tril_indices(num_features)
    lower = lower.at[rows, cols].set(means_chol[num_features:])
    diagonal = jnp.exp(jnp.diagonal(lower))
    lower = lower - jnp.diag(jnp.diagonal(lower)) + jnp.diag(diagonal)
    sigma = lower @ lower.T
    total = 0.0
    patterns = np.unique(~np.isnan(X), axis=0)
    for pattern in patterns:
        if not pattern.any():
            continue
        rows_p = X[np.all((~np.isnan(X)) == pattern, axis=1)][:, pattern]
        index = np.flatnonzero(pattern)
        sub = sigma[np.ix_(index, index)]
        chol = jnp.linalg.cholesky(sub)
        z = jax.scipy.linalg.solve_triangular(chol, (rows_p - mean[index]).T, lower=True)
        total = (
            total
            + 0.5 * jnp.sum(z * z)
            + rows_p.shape[0]
            * (jnp.sum(jnp.log(jnp.diagonal(chol))) + 0.5 * len(index) * np.log(2 * np.pi))
        )
    return total


@pytest.mark.slow
def test_em_reaches_the_observed_data_mle_and_never_decreases():
    X, y = _iris()
    Xm = _mcar(X, 0.2, 5)
    model = QuadraticDiscriminantAnalysis(missing="marginalize", max_iter=5000, em_tol=0.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # em_tol = 0 runs to max_iter or an exact fixed point
        model.fit(Xm, y)
    trace = model.log_likelihood_trace_
    assert np.all(np.diff(trace) >= -1e-9 * np.abs(trace[1:]))
    with precision("float64"):
        for k in range(3):
            data = Xm[y == k]
            objective = jax.jit(lambda v, data=data: _observed_negative_log_likelihood(data, v, 4))
            gradient = jax.jit(jax.grad(objective))
            start = np.concatenate([np.nanmean(data, 0), np.zeros(10)])
            found = scipy.optimize.minimize(
                lambda v, f=objective: float(f(v)),
                start,
                jac=lambda v, g=gradient: np.asarray(g(v)),
                method="BFGS",
                options={"gtol": 1e-10, "maxiter": 10000},
            )
            mean = found.x[:4]
            lower = np.zeros((4, 4))
            lower[np.tril_indices(4)] = found.x[4:]
            lower[np.diag_indices(4)] = np.exp(np.diagonal(lower))
            np.testing.assert_allclose(model.params_["means"][k], mean, rtol=1e-6)
            np.testing.assert_allclose(
                model.params_["covariance"][k], lower @ lower.T, rtol=1e-6, atol=1e-9
            )


def test_em_with_missing_entries_and_missing_labels():
    X, y = _iris()
    Xm = _mcar(X, 0.1, 6)
    partial = y.copy()
    partial[np.random.default_rng(6).random(150) < 0.5] = -1
    model = LinearDiscriminantAnalysis(missing="marginalize").fit(Xm, partial)
    trace = model.log_likelihood_trace_
    assert model.converged_
    assert np.all(np.diff(trace) >= -1e-9 * np.abs(trace[1:]))
    assert model.label_distributions_.shape == (150, 3)
    assert model.score(Xm, y) > 0.9


def test_refusals_name_the_problem():
    X, y = _iris()
    counts = np.floor(X)
    counts[0, 0] = np.nan
    with pytest.raises(ValueError, match="multinomial row is one document"):
        MultinomialNB(missing="marginalize").fit(counts, y)
    Xm = X.copy()
    Xm[y == 1, 2] = np.nan
    with pytest.raises(ValueError, match="feature 2 is missing .* every row of class 1"):
        GaussianNB(missing="marginalize").fit(Xm, y)


def _mle(X, y, shared):
    means = np.stack([X[y == k].mean(0) for k in range(3)])
    if shared:
        return means, sum(np.cov(X[y == k].T, bias=True) * (y == k).sum() for k in range(3)) / len(
            y
        )
    return means, np.stack([np.cov(X[y == k].T, bias=True) for k in range(3)])


@pytest.mark.parametrize("load", [load_iris, load_wine])
def test_marginalizing_beats_mean_imputation_under_mcar(load):
    X, y = load(return_X_y=True)
    X = (X - X.mean(0)) / X.std(0)
    full_means, full_cov = _mle(X, y, shared=True)
    errors = {"marginalize": [], "impute": []}
    for seed in range(3):
        Xm = _mcar(X, 0.1, seed)
        model = LinearDiscriminantAnalysis(missing="marginalize", solver="lsqr").fit(Xm, y)
        imputed = np.where(np.isnan(Xm), np.nanmean(Xm, axis=0), Xm)
        means, cov = _mle(imputed, y, shared=True)
        for name, (m, c) in {
            "marginalize": (model.params_["means"], model.params_["covariance"]),
            "impute": (means, cov),
        }.items():
            errors[name].append(np.linalg.norm(m - full_means) + np.linalg.norm(c - full_cov))
    assert np.mean(errors["marginalize"]) < 0.5 * np.mean(errors["impute"])


@pytest.mark.slow
def test_nuts_log_likelihood_is_the_observed_data_one():
    X, y = _iris()
    X, y = X[::5], y[::5]
    Xm = _mcar(X, 0.1, 7)
    model = GaussianNB(missing="marginalize").fit(Xm, y)
    result = model.posterior(Xm, y, num_samples=20, num_warmup=20, num_chains=1, random_state=0)
    pointwise = np.asarray(result.log_likelihood["obs"])
    assert pointwise.shape == (1, 20, 30)
    assert np.all(np.isfinite(pointwise))
    # the draws' pointwise values are observed-data log-likelihoods, computed by hand here
    draw = {name: np.asarray(result.posterior[name])[0, 3] for name in model.params_}
    observed = ~np.isnan(Xm)
    for i in range(30):
        o, k = observed[i], y[i]
        expected = (
            np.log(draw["class_prior"][k])
            + norm.logpdf(Xm[i, o], draw["means"][k, o], np.sqrt(draw["variances"][k, o])).sum()
        )
        assert pointwise[0, 3, i] == pytest.approx(expected, rel=1e-9)


def test_cli_fit_and_predict_with_empty_cells(tmp_path, capsys):
    from genprob import load
    from genprob.app import cli

    frame = load_iris(as_frame=True).frame
    frame.iloc[::7, 1] = np.nan
    frame.iloc[3, :4] = np.nan
    data = tmp_path / "iris.csv"
    frame.to_csv(data, index=False)
    model_file = tmp_path / "model.npz"
    assert cli.main(["fit", "qda", str(data), "--target", "target", "--out", str(model_file)]) == 2
    assert "--missing marginalize" in capsys.readouterr().err
    arguments = ["fit", "qda", str(data), "--target", "target", "--missing", "marginalize"]
    assert cli.main([*arguments, "--out", str(model_file)]) == 0
    capsys.readouterr()
    model = load(model_file)
    X = frame.drop(columns="target")
    direct = QuadraticDiscriminantAnalysis(missing="marginalize").fit(X, frame["target"])
    np.testing.assert_allclose(model.predict_proba(X), direct.predict_proba(X), rtol=1e-12)
    assert cli.main(["predict", str(model_file), str(data)]) == 0
    lines = capsys.readouterr().out.split()
    assert lines[0] == "prediction"
    np.testing.assert_array_equal(np.asarray(lines[1:], dtype=int), direct.predict(X))


def test_partial_fit_refuses_missing_entries_clearly():
    X, y = _iris()
    with pytest.raises(ValueError, match="partial_fit does not take missing entries"):
        GaussianNB(missing="marginalize").partial_fit(_mcar(X, 0.1, 8), y, classes=[0, 1, 2])


def test_a_user_story_opts_in_with_an_independent_emission():
    import numpyro
    import numpyro.distributions as dist

    from genprob import core
    from genprob.engine.masking import marginalized
    from genprob.story import Story

    class LaplaceStory(Story):
        def prior(self, num_classes, num_features):
            shape = [num_classes, num_features]
            loc = numpyro.sample("loc", dist.Normal(0.0, 10.0).expand(shape).to_event(2))
            scale = numpyro.sample("scale", dist.HalfNormal(5.0).expand(shape).to_event(2))
            return {"loc": loc, "scale": scale}

        capabilities = {"supports_missing": True}

        def emission(self, params):
            return dist.Laplace(params["loc"], params["scale"]).to_event(1)

    rng = np.random.default_rng(9)
    params = {
        "loc": rng.normal(size=(2, 3)),
        "scale": rng.uniform(0.5, 2.0, size=(2, 3)),
        "class_prior": np.array([0.3, 0.7]),
    }
    X = _mcar(rng.normal(size=(20, 3)), 0.3, 9)
    X[0] = np.nan
    with precision("float64"):
        joint = np.asarray(core.joint_log_prob(marginalized(LaplaceStory()), params, X))
    observed = ~np.isnan(X)
    for i in range(20):
        o = observed[i]
        for k in range(2):
            expected = np.log(params["class_prior"][k]) - np.sum(
                np.abs(X[i, o] - params["loc"][k, o]) / params["scale"][k, o]
                + np.log(2 * params["scale"][k, o])
            )
            assert joint[i, k] == pytest.approx(expected, rel=1e-12, abs=1e-12)
    with pytest.raises(ValueError, match="does not declare how to leave out missing entries"):
        marginalized(Story())


def test_lda_scores_rows_with_missing_entries_and_refuses_to_project_them():
    X, y = _iris()
    Xm = _mcar(X, 0.2, 10)
    model = LinearDiscriminantAnalysis(missing="marginalize").fit(Xm, y)
    scores = model.decision_function(Xm)
    np.testing.assert_allclose(
        np.exp(scores - scores.max(axis=1, keepdims=True))
        / np.exp(scores - scores.max(axis=1, keepdims=True)).sum(axis=1, keepdims=True),
        model.predict_proba(Xm),
        rtol=1e-10,
    )
    complete = ~np.isnan(Xm).any(axis=1)
    assert np.all(np.isfinite(model.transform(Xm[complete])))
    with pytest.raises(ValueError, match="transform projects complete rows"):
        model.transform(Xm)
    binary = LinearDiscriminantAnalysis(missing="marginalize").fit(Xm[y > 0], y[y > 0])
    log_odds = binary.predict_log_proba(Xm[y > 0]) @ np.array([-1.0, 1.0])
    np.testing.assert_allclose(binary.decision_function(Xm[y > 0]), log_odds, rtol=1e-9)


def test_em_is_at_a_fixed_point_of_the_observed_data_likelihood():
    """Fast companion of the slow optimizer comparison: at EM's answer the gradient of the
    observed-data log-likelihood (independent reference, by JAX) vanishes."""
    X, y = _iris()
    Xm = _mcar(X, 0.2, 5)
    model = QuadraticDiscriminantAnalysis(missing="marginalize", em_tol=0.0).fit(Xm, y)
    assert model.converged_
    with precision("float64"):
        data = Xm[y == 0]
        lower = np.linalg.cholesky(model.params_["covariance"][0])
        log_lower = lower.copy()
        log_lower[np.diag_indices(4)] = np.log(np.diagonal(lower))
        point = np.concatenate([model.params_["means"][0], log_lower[np.tril_indices(4)]])
        gradient = jax.grad(lambda v: _observed_negative_log_likelihood(data, v, 4))(point)
    assert np.max(np.abs(np.asarray(gradient))) < 1e-6


def test_mixed_nb_masks_each_block():
    from palmerpenguins import load_penguins

    from genprob import MixedNB

    frame = load_penguins()
    numeric = ["bill_length_mm", "bill_depth_mm", "flipper_length_mm", "body_mass_g"]
    table = frame[[*numeric, "island"]].copy()
    table.loc[np.random.default_rng(11).random(len(table)) < 0.2, "bill_depth_mm"] = np.nan
    y = frame["species"].to_numpy()
    families = {**dict.fromkeys(numeric, "gaussian"), "island": "categorical"}
    mixed = MixedNB(families=families, missing="marginalize").fit(table, y)
    gaussian = GaussianNB(missing="marginalize").fit(table[numeric].to_numpy(), y)
    codes = np.unique(table["island"], return_inverse=True)[1].astype(float)[:, None]
    categorical = CategoricalNB().fit(codes, y)
    expected = (
        gaussian.predict_joint_log_proba(table[numeric].to_numpy())
        + categorical.predict_joint_log_proba(codes)
        - np.log(gaussian.params_["class_prior"])
    )
    np.testing.assert_allclose(mixed.predict_joint_log_proba(table), expected, rtol=1e-10)


def test_mixed_nb_sums_out_missing_categories():
    # penguins' own missing values: 11 rows without sex (and 2 without any measurement)
    from palmerpenguins import load_penguins

    from genprob import MixedNB

    frame = load_penguins()
    numeric = ["bill_length_mm", "bill_depth_mm", "flipper_length_mm", "body_mass_g"]
    table = frame[[*numeric, "island", "sex"]].copy()
    table["island"] = table["island"].astype(object)
    table.loc[np.random.default_rng(3).random(len(table)) < 0.1, "island"] = None
    assert table["sex"].isna().sum() == 11 and table["island"].isna().sum() > 20
    y = frame["species"].to_numpy()
    families = {**dict.fromkeys(numeric, "gaussian"), "island": "categorical", "sex": "categorical"}
    with pytest.raises(ValueError, match=r"column 'island' has \d+ missing values.*marginalize"):
        MixedNB(families=families).fit(table, y)
    mixed = MixedNB(families=families, missing="marginalize").fit(table, y)
    assert mixed.categories_["sex"].tolist() == ["female", "male"]  # NA is not a category

    gaussian = GaussianNB(missing="marginalize").fit(table[numeric].to_numpy(), y)
    codes = np.column_stack(
        [
            np.where(table[c].isna(), np.nan, pd.Index(mixed.categories_[c]).get_indexer(table[c]))
            for c in ("island", "sex")
        ]
    )
    categorical = CategoricalNB(missing="marginalize").fit(codes, y)
    expected = (
        gaussian.predict_joint_log_proba(table[numeric].to_numpy())
        + categorical.predict_joint_log_proba(codes)
        - np.log(gaussian.params_["class_prior"])
    )
    np.testing.assert_allclose(mixed.predict_joint_log_proba(table), expected, rtol=1e-10)
    # a row with nothing observed gets the class prior
    empty = table.iloc[[3]].astype(object)
    empty.loc[:, :] = None
    np.testing.assert_allclose(
        mixed.predict_proba(empty)[0], gaussian.params_["class_prior"], rtol=1e-10
    )


def test_a_story_without_closed_form_fits_the_observed_data_likelihood():
    import genprob
    from tests._optim_stories import GaussianNoClosedForm

    class MaskableGaussian(GaussianNoClosedForm):
        capabilities = {"supports_missing": True}

    X, y = _iris()
    Xm = _mcar(X, 0.15, 12)
    model = genprob.GenerativeClassifier(MaskableGaussian(), missing="marginalize").fit(Xm, y)
    # the diagonal Gaussian's observed-data MLE in closed form: per class and feature, the mean
    # and (biased) variance of the observed entries
    reference = GaussianNB(missing="marginalize", var_smoothing=0.0).fit(Xm, y)
    np.testing.assert_allclose(model.params_["loc"], reference.params_["means"], rtol=1e-5)
    np.testing.assert_allclose(
        model.params_["scale"] ** 2, reference.params_["variances"], rtol=1e-4
    )
    np.testing.assert_allclose(model.predict_proba(Xm), reference.predict_proba(Xm), atol=1e-5)
    assert type(model.story_) is MaskableGaussian  # the user's story, not the masking wrapper

    yu = y.copy()
    yu[::7] = -1
    with pytest.raises(ValueError, match=r"no closed form.*missing labels.*22 unlabeled rows"):
        genprob.GenerativeClassifier(MaskableGaussian(), missing="marginalize").fit(Xm, yu)


def test_em_over_missing_entries_checks_its_memory_before_running(monkeypatch):
    from genprob.engine import _limits

    X, y = _iris()
    Xm = _mcar(X, 0.1, 13)
    model = QuadraticDiscriminantAnalysis(missing="marginalize").fit(Xm, y)  # well within
    # one (rows, classes, D, D) array of float64: 150 x 3 x 4 x 4 x 8 = 57,600 bytes
    monkeypatch.setattr(_limits, "MAX_ARRAY_BYTES", 50_000)
    with pytest.raises(_limits.SizeLimitError, match=r"EM step over the missing entries.*diagonal"):
        QuadraticDiscriminantAnalysis(missing="marginalize").fit(Xm, y)
    assert model.predict_proba(Xm).shape == (150, 3)


def test_nuts_priors_on_the_data_scale_with_a_missing_cell_in_every_row(monkeypatch):
    """No complete row: the prior still takes the observed cells' means and sds (it kept the
    story's unit-scale prior when it read complete rows only)."""
    from genprob.estimators import _posterior

    X, y = _iris()
    Xm = X * 100.0
    Xm[np.arange(len(Xm)), np.arange(len(Xm)) % 4] = np.nan  # one empty cell in every row
    model = GaussianNB(missing="marginalize").fit(Xm, y)
    seen = []

    def stop(story, *args, **kwargs):
        seen.append(story)
        raise RuntimeError("stop before sampling")

    monkeypatch.setattr(_posterior, "run_nuts", stop)
    with pytest.raises(RuntimeError, match="stop before sampling"):
        model.posterior(Xm, y, num_samples=5, num_warmup=5, num_chains=1, random_state=0)
    inner = seen[0].story  # the marginalizing wrapper's story
    np.testing.assert_allclose(inner.mean_prior_loc, np.nanmean(Xm, axis=0), rtol=1e-12)
    assert np.all(np.asarray(inner.mean_prior_scale) > 10.0)  # sds of about 40 to 180


@pytest.mark.parametrize("fraction", [0.0, 0.3])
def test_cell_densities_in_row_blocks_are_scipys(monkeypatch, fraction):
    """The density's BLAS products go in blocks of rows past a size (one thread each); every
    block, with or without missing cells, is the Gaussian's own log density."""
    from genprob.families.gaussian import distributions
    from genprob.families.gaussian.mixture_story import cell_log_density

    X, _ = _iris()
    X = _mcar(X, fraction, 7)
    rng = np.random.default_rng(3)
    means = X[rng.choice(len(X), 5, replace=False)]
    means = np.where(np.isnan(means), 3.0, means)
    A = rng.normal(size=(5, 4, 4))
    covariances = A @ np.swapaxes(A, 1, 2) + np.eye(4)
    observed = ~np.isnan(X)
    whole = cell_log_density(np.nan_to_num(X), means, covariances, observed=observed)
    monkeypatch.setattr(distributions, "_ONE_THREAD_SIZE", 16 * 7)  # blocks of 7 rows
    blocks = cell_log_density(np.nan_to_num(X), means, covariances, observed=observed)
    np.testing.assert_allclose(blocks, whole, rtol=1e-13, atol=0)
    for i in range(len(X)):
        o = observed[i]
        for j in range(5):
            expected = 0.0
            if o.any():
                cov = covariances[j][np.ix_(o, o)]
                expected = multivariate_normal(means[j, o], cov).logpdf(X[i, o])
            assert abs(blocks[i, j] - expected) < 1e-10
