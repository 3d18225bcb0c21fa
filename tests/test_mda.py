"""MixtureDiscriminantAnalysis (issue 44): R mclust's EDDA, MclustDA and MclustSSC numbers,
the BIC's parameter counts, EM's monotonicity, recovery of sampled parameters and NaN cells
against the observed-data likelihood written by hand."""

import json
import math
import warnings

import numpy as np
import pytest
from _mclust_data import REFERENCES, load
from scipy.optimize import minimize
from scipy.stats import norm

import genprob
from genprob.families.gaussian import mixture
from genprob.families.gaussian.mclust import STRUCTURES

REFERENCE = json.loads((REFERENCES / "mclust_reference.json").read_text())


def _close_or_better(ours, theirs, rel=1e-4):
    """Our log-likelihood equals mclust's within ``rel`` (relative), or is higher."""
    assert ours >= theirs - rel * abs(theirs), (ours, theirs)


# -- EDDA: one Gaussian per class, each structure ------------------------------------------------
@pytest.mark.parametrize("structure", STRUCTURES)
@pytest.mark.parametrize("data", ["iris", pytest.param("wine", marks=pytest.mark.slow)])
def test_edda_matches_mclust(data, structure):
    X, y = load(data)
    ref = REFERENCE[data]["edda"][structure]
    model = genprob.MixtureDiscriminantAnalysis(structure=structure).fit(X, y)
    _close_or_better(model.log_likelihood_, ref["loglik"])
    assert model.num_parameters() == ref["df"]
    n = len(y)
    # mclust's sign in the table, scikit-learn's in bic()
    bic = 2 * model.log_likelihood_ - model.num_parameters() * math.log(n)
    assert model.criterion_table_.loc[structure, 1] == pytest.approx(bic, rel=1e-12)
    assert model.bic(X) == pytest.approx(-bic, rel=1e-10)
    # a higher optimum (wine EVE: by 2e-7 relative) moves the posteriors; the same one must not
    if model.log_likelihood_ <= ref["loglik"] + 1e-7 * abs(ref["loglik"]):
        np.testing.assert_allclose(model.predict_proba(X), np.asarray(ref["z"]), atol=1e-3)
        assert ref["bic"] == pytest.approx(bic, rel=1e-4)


def _hand_count(structure, K, D):
    """Free covariance parameters counted by hand: volume, shape, orientation."""
    volume = {"E": 1, "V": K}[structure[0]]
    shape = {"I": 0, "E": D - 1, "V": K * (D - 1)}[structure[1]]
    orientation = {"I": 0, "E": D * (D - 1) // 2, "V": K * D * (D - 1) // 2}[structure[2]]
    return volume + shape + orientation


@pytest.mark.parametrize("structure", STRUCTURES)
def test_bic_counts_parameters_by_hand(structure):
    X, y = load("iris")
    K, D = 3, X.shape[1]
    model = genprob.MixtureDiscriminantAnalysis(structure=structure).fit(X, y)
    df = (K - 1) + K * D + _hand_count(structure, K, D)
    assert model.num_parameters() == df
    log_lik = model.log_likelihood(X)
    assert model.bic(X) == pytest.approx(-2 * log_lik + df * math.log(len(y)), rel=1e-12)
    assert model.aic(X) == pytest.approx(-2 * log_lik + 2 * df, rel=1e-12)


# -- MclustDA: mixtures within classes chosen by BIC per class ------------------------------------
@pytest.mark.slow
def test_mclustda_matches_mclust():
    X, y = load("iris")
    ref = REFERENCE["iris"]["mclustda"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", mixture.CollapsedComponentWarning)
        model = genprob.MixtureDiscriminantAnalysis(structure="all", n_components=range(1, 4))
        model.fit(X, y)
    assert list(model.n_components_) == [c["G"] for c in ref["classes"]]
    assert model.structure_[0] == ref["classes"][0]["modelName"]
    _close_or_better(model.log_likelihood_, ref["loglik"])
    assert model.num_parameters() == ref["df"]
    bic = 2 * model.log_likelihood_ - ref["df"] * math.log(len(y))
    assert bic == pytest.approx(ref["bic"], rel=1e-4)
    np.testing.assert_allclose(model.predict_proba(X), np.asarray(ref["z"]), atol=1e-3)
    table = model.criterion_table_
    assert "larger is better" in table.attrs["sign"]
    for k, cls in enumerate(ref["classes"]):
        theirs = np.array([[np.nan if v == "NA" else v for v in row] for row in cls["BIC"]])
        ours = table.loc[model.classes_[k]].loc[list(cls["BIC_columns"])].to_numpy().T
        # G = 1 is closed form: the same numbers; G > 1 from mclust's hierarchical start: every
        # cell mclust fits is fitted and at least as good (EM runs to a tighter tolerance)
        np.testing.assert_allclose(ours[0], theirs[0], rtol=1e-6)
        fitted = ~np.isnan(theirs)
        assert np.all(ours[fitted] >= theirs[fitted] - 1e-6 * np.abs(theirs[fitted]))


def test_banknote_mclustda_matches_mclust():
    """mclust's banknote data, MclustDA over 14 structures x G 1-5 from the hierarchical start:
    mclust's chosen models (counterfeit EVE with 2 components, genuine one Gaussian, which
    mclust names XXX), its log-likelihood, BIC, posteriors and training accuracy."""
    X, y = load("banknote")
    ref = json.loads((REFERENCES / "banknote_mclustda.json").read_text())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", mixture.CollapsedComponentWarning)
        model = genprob.MixtureDiscriminantAnalysis(structure="all", n_components=range(1, 6))
        model.fit(X, y)
    chosen = [(c["modelName"], c["G"]) for c in ref["classes"]]
    assert (model.structure_[0], model.n_components_[0]) == chosen[0] == ("EVE", 2)
    assert model.n_components_[1] == chosen[1][1] == 1
    _close_or_better(model.log_likelihood_, ref["loglik"], rel=1e-6)
    assert model.num_parameters() == ref["df"]
    assert -model.bic(X) == pytest.approx(ref["bic"], rel=1e-6)
    assert np.mean(model.predict(X) == y) == ref["accuracy"] == 1
    np.testing.assert_allclose(model.predict_proba(X), np.asarray(ref["z"]), atol=1e-3)
    for k, cls in enumerate(ref["classes"]):
        theirs = np.array([[np.nan if v == "NA" else v for v in row] for row in cls["BIC"]])
        ours = model.criterion_table_.loc[model.classes_[k]].loc[cls["BIC_columns"]].to_numpy().T
        np.testing.assert_array_equal(np.isnan(ours), np.isnan(theirs))
        np.testing.assert_allclose(ours[0], theirs[0], rtol=1e-6)  # G = 1: closed form
        assert np.nanmax(ours) >= np.nanmax(theirs) - 1e-6 * abs(np.nanmax(theirs))


def test_mclustda_chosen_model_is_the_table_maximum():
    X, y = load("iris")
    model = genprob.MixtureDiscriminantAnalysis(structure=["EEE", "VVI"], n_components=[1, 2])
    model.fit(X, y)
    for k, cls in enumerate(model.classes_):
        block = model.criterion_table_.loc[cls]
        best = np.unravel_index(np.nanargmax(block.to_numpy()), block.shape)
        assert model.n_components_[k] == block.columns[best[1]]
        assert model.structure_[k] == block.index[best[0]]
    assert model.structure_[0] == "EEE" and model.n_components_[0] == 2


# -- MclustSSC: semi-supervised ------------------------------------------------------------------
def test_mclustssc_matches_mclust():
    X, y = load("iris")
    ref = REFERENCE["iris"]["mclustssc"]
    y = y.copy()
    y[1::2] = -1
    model = genprob.MixtureDiscriminantAnalysis(structure=ref["modelName"], em_tol=1e-10)
    model.fit(X, y)
    _close_or_better(model.log_likelihood_, ref["loglik"])
    assert model.num_parameters() == ref["df"]
    bic = model.criterion_table_.loc[ref["modelName"], 1]
    assert bic == pytest.approx(ref["bic"], rel=1e-4)
    # mclust's z holds the known labels on labeled rows: compare the unlabeled ones
    hidden = y == -1
    np.testing.assert_allclose(
        model.predict_proba(X[hidden]), np.asarray(ref["z"])[hidden], atol=1e-3
    )
    trace = model.log_likelihood_trace_
    assert np.all(np.diff(trace) >= -1e-9 * np.abs(trace[1:]))


@pytest.mark.slow
def test_mclustssc_table_matches_mclust():
    X, y = load("iris")
    ref = REFERENCE["iris"]["mclustssc"]
    y = y.copy()
    y[1::2] = -1
    model = genprob.MixtureDiscriminantAnalysis(structure="all", em_tol=1e-10).fit(X, y)
    assert model.structure_[0] == ref["modelName"]
    ours = model.criterion_table_.loc[ref["BIC_columns"], 1].to_numpy()
    theirs = np.asarray(ref["BIC"], dtype=float)
    assert np.all(ours >= theirs - 1e-4 * np.abs(theirs))


# -- EM ------------------------------------------------------------------------------------------
def _two_component_data(seed, n=400):
    rng = np.random.default_rng(seed)
    # class 0: two components; class 1: one
    a = rng.multivariate_normal([0, 0], [[1, 0.5], [0.5, 1]], size=n // 2)
    b = rng.multivariate_normal([5, 5], [[1, -0.3], [-0.3, 0.5]], size=n // 2)
    c = rng.multivariate_normal([5, 0], [[0.5, 0], [0, 2]], size=n)
    X = np.vstack([a, b, c])
    y = np.repeat([0, 1], [n, n])
    return X, y


def test_semi_supervised_em_never_decreases_its_objective():
    X, y = _two_component_data(1, n=120)
    rng = np.random.default_rng(2)
    y = y.copy()
    y[rng.random(len(y)) < 0.9] = -1
    X = X.copy()
    X[rng.random(X.shape) < 0.1] = np.nan
    X[np.isnan(X).all(axis=1), 0] = 0.0
    for structure in ("VVV", "EVE"):
        model = genprob.MixtureDiscriminantAnalysis(
            structure=structure, n_components=2, missing="marginalize", n_init=2, max_iter=60
        ).fit(X, y)
        trace = model.log_likelihood_trace_
        assert len(trace) > 2
        assert np.all(np.diff(trace) >= -1e-9 * np.abs(trace[1:])), structure
        assert np.all(np.isfinite(model.predict_proba(X)))


def test_refit_recovers_sampled_parameters():
    X, y = _two_component_data(3, n=600)
    model = genprob.MixtureDiscriminantAnalysis(structure="VVV", n_components=[1, 2, 3])
    model.fit(X, y)
    assert list(model.n_components_) == [2, 1]
    means = model.params_["means"][model.params_["component_class"] == 0]
    means = means[np.argsort(means[:, 0])]
    np.testing.assert_allclose(means, [[0, 0], [5, 5]], atol=0.15)
    np.testing.assert_allclose(model.params_["weights"][:2], [0.5, 0.5], atol=0.05)
    cov = model.params_["covariances"][model.params_["component_class"] == 1][0]
    np.testing.assert_allclose(cov, [[0.5, 0], [0, 2]], atol=0.15)


def test_collapsing_component_is_named():
    X, y = _two_component_data(4, n=40)
    X, y = X[np.r_[0:3, 40:80]], y[np.r_[0:3, 40:80]]  # class 0 keeps 3 rows
    with pytest.raises(ValueError, match="class 0: no candidate.*G=3: component"):
        genprob.MixtureDiscriminantAnalysis(structure="VVV", n_components=3).fit(X, y)
    with pytest.warns(mixture.CollapsedComponentWarning, match="class 0: VVV with G=3"):
        model = genprob.MixtureDiscriminantAnalysis(structure="VVV", n_components=[1, 3])
        model.fit(X, y)
    assert np.isnan(model.criterion_table_.loc[(0, "VVV"), 3])
    assert np.all(np.isfinite(model.predict_proba(X)))


# -- NaN cells: the observed-data likelihood written by hand -------------------------------------
def _hand_log_likelihood(theta, X, y):
    """sum_i log(pi_y N(x_i,o; mu_y,o, Sigma_y,oo)) for two classes of two features, VVV:
    theta = (mu_0 (2), mu_1 (2), Cholesky entries (3 per class), logit of pi_1)."""
    total = 0.0
    pi1 = 1 / (1 + math.exp(-theta[10]))
    for i in range(len(y)):
        k = y[i]
        mu = theta[2 * k : 2 * k + 2]
        a, b, c = theta[4 + 3 * k : 7 + 3 * k]
        L = np.array([[math.exp(a), 0], [b, math.exp(c)]])
        S = L @ L.T
        o = ~np.isnan(X[i])
        log_pi = math.log(pi1 if k else 1 - pi1)
        if o.all():
            r = X[i] - mu
            quad = r @ np.linalg.solve(S, r)
            total += log_pi - 0.5 * (math.log(np.linalg.det(2 * math.pi * S)) + quad)
        else:
            j = int(np.flatnonzero(o)[0])
            var = S[j, j]
            total += log_pi - 0.5 * (math.log(2 * math.pi * var) + (X[i, j] - mu[j]) ** 2 / var)
    return total


def test_missing_cells_match_the_hand_written_likelihood():
    rng = np.random.default_rng(5)
    X = np.vstack([rng.normal([0, 0], 1, (8, 2)), rng.normal([2, 1], [1, 0.5], (8, 2))])
    X[:, 1] += 0.6 * X[:, 0]
    y = np.repeat([0, 1], 8)
    X[[1, 5, 9], 1] = np.nan
    X[[3, 12], 0] = np.nan
    model = genprob.MixtureDiscriminantAnalysis(
        structure="VVV", missing="marginalize", em_tol=1e-14, max_iter=5000
    ).fit(X, y)
    start = np.r_[np.nanmean(X[:8], 0), np.nanmean(X[8:], 0), 0, 0, 0, 0, 0, 0, 0]
    best = minimize(lambda t: -_hand_log_likelihood(t, X, y), start, method="BFGS", tol=1e-12)
    hand = -best.fun
    # the fitted value of the labeled likelihood, and the optimum written by hand
    assert model.log_likelihood(X, y) == pytest.approx(hand, rel=1e-6)
    assert model.log_likelihood(X, y) == pytest.approx(
        _hand_log_likelihood(_as_theta(model), X, y), rel=1e-10
    )
    np.testing.assert_allclose(model.params_["means"], best.x[:4].reshape(2, 2), atol=1e-3)
    # prediction marginalizes too: a row with a NaN cell scores its observed cell only
    row = np.array([[0.5, np.nan]])
    joint = model.predict_joint_log_proba(row)[0]
    for k in range(2):
        S = model.params_["covariances"][k]
        expected = math.log(model.params_["class_prior"][k]) + norm(
            model.params_["means"][k, 0], math.sqrt(S[0, 0])
        ).logpdf(0.5)
        assert joint[k] == pytest.approx(expected, rel=1e-10)


def _as_theta(model):
    theta = list(model.params_["means"].ravel())
    for k in range(2):
        L = np.linalg.cholesky(model.params_["covariances"][k])
        theta += [math.log(L[0, 0]), L[1, 0], math.log(L[1, 1])]
    pi1 = model.params_["class_prior"][1]
    return np.array(theta + [math.log(pi1 / (1 - pi1))])


# -- the estimator face --------------------------------------------------------------------------
def test_sample_weight_counts_rows():
    X, y = load("iris")
    weight = np.where(np.arange(len(y)) % 3 == 0, 2.0, 1.0)
    repeated = np.repeat(np.arange(len(y)), weight.astype(int))
    a = genprob.MixtureDiscriminantAnalysis(structure=["EEE", "VEV"]).fit(X, y, weight)
    b = genprob.MixtureDiscriminantAnalysis(structure=["EEE", "VEV"]).fit(X[repeated], y[repeated])
    np.testing.assert_allclose(a.predict_proba(X), b.predict_proba(X), atol=1e-6)
    np.testing.assert_allclose(
        a.criterion_table_.to_numpy(), b.criterion_table_.to_numpy(), rtol=1e-6
    )


def test_dask_and_bad_settings_are_refused_clearly():
    X, y = load("iris")
    with pytest.raises(ValueError, match="unknown structure"):
        genprob.MixtureDiscriminantAnalysis(structure="XYZ").fit(X, y)
    with pytest.raises(ValueError, match="n_components must be integers"):
        genprob.MixtureDiscriminantAnalysis(n_components=[0, 1]).fit(X, y)
    # partial_fit and Dask: one structure, one Gaussian per class (tests/test_mda_gaps.py)
    # no partial_fit where the statistics do not add; the reason is the error's cause
    with pytest.raises(AttributeError, match="has no attribute 'partial_fit'") as info:
        genprob.MixtureDiscriminantAnalysis().partial_fit(X, y, classes=[0, 1, 2])
    assert "fits one structure only, got 14 candidates" in str(info.value.__cause__)
    assert not hasattr(genprob.MixtureDiscriminantAnalysis(), "partial_fit")
    assert hasattr(genprob.MixtureDiscriminantAnalysis(structure="VEV"), "partial_fit")
    dask_array = pytest.importorskip("dask.array")
    with pytest.raises(ValueError, match="Dask collection fits one structure only"):
        genprob.MixtureDiscriminantAnalysis().fit(dask_array.from_array(X), y)


# -- the command line ----------------------------------------------------------------------------
def test_cli_fits_and_predicts_mda(tmp_path, capsys):
    import pandas as pd

    from genprob.app import cli

    X, y = load("iris")
    frame = pd.DataFrame(X, columns=["a", "b", "c", "d"]).assign(species=y)
    frame.loc[1::2, "species"] = None  # half the labels hidden: MclustSSC
    data = tmp_path / "iris.csv"
    frame.to_csv(data, index=False)
    model = tmp_path / "model.npz"
    argv = ["fit", "mda", str(data), "--target", "species", "--out", str(model)]
    assert cli.main([*argv, "--param", "n_components=1", "--param", "structure=VEV"]) == 0
    out = capsys.readouterr().out
    assert "MixtureDiscriminantAnalysis, 38 parameters" in out
    assert "chosen:         0: VEV x 1, 1: VEV x 1, 2: VEV x 1" in out
    assert "BIC 570.304" in out  # R mclust: MclustSSC bic = -570.304 (its sign)
    loaded = genprob.load(model)
    ref = REFERENCE["iris"]["mclustssc"]
    _close_or_better(loaded.log_likelihood_, ref["loglik"])
    assert cli.main(["predict", str(model), str(data)]) == 0
    predicted = capsys.readouterr().out.split()[1:]
    assert np.mean(np.asarray(predicted, dtype=float) == y) > 0.95


def test_cli_check_refuses_mda_and_skips_it_by_default():
    from genprob.app import cli, registry

    assert not registry.has_story("mda") and registry.has_story("lda")
    with pytest.raises(cli.UserError, match="'mda' is not one story"):
        cli._check_jobs(cli.build_parser().parse_args(["check", "mda"]))
    jobs = cli._check_jobs(cli.build_parser().parse_args(["check"]))
    assert "mda" not in {name for name, _, _ in jobs}


def test_icl_is_bic_plus_the_map_entropy_term():
    X, y = _two_component_data(6, n=200)
    model = genprob.MixtureDiscriminantAnalysis(structure=["VVV", "EEE"], n_components=[1, 2])
    model.fit(X, y)
    icl = genprob.MixtureDiscriminantAnalysis(
        structure=["VVV", "EEE"], n_components=[1, 2], criterion="icl"
    ).fit(X, y)
    assert icl.criterion_table_.attrs["criterion"] == "ICL"
    # class 0, VVV, G = 2: z over its two components, refitted alone
    rows = y == 0
    fit = mixture.fit_mixture(X[rows], np.zeros(rows.sum(), int), (2,), ("VVV",))
    z = fit.responsibilities
    penalty = 2 * np.sum(np.log(z.max(axis=1)))
    table_bic, table_icl = model.bic_table_.loc[(0, "VVV"), 2], model.icl_table_.loc[(0, "VVV"), 2]
    assert table_icl == pytest.approx(table_bic + penalty, rel=1e-9)
    assert np.all(model.icl_table_.to_numpy() <= model.bic_table_.to_numpy() + 1e-9)


def test_a_model_of_several_components_a_class_saves_and_loads(tmp_path):
    # 6 components over 3 classes and 4 features: the components' axis is neither
    X, y = load("iris")
    model = genprob.MixtureDiscriminantAnalysis("VVV", n_components=2).fit(X, y)
    path = tmp_path / "mda.npz"
    model.save(path)
    loaded = genprob.load(path)
    assert loaded.params_["weights"].shape == (6,)
    np.testing.assert_allclose(loaded.predict_proba(X), model.predict_proba(X), rtol=1e-12)
    assert loaded.log_likelihood(X) == pytest.approx(model.log_likelihood(X), rel=1e-12)
    # parameters whose components disagree (an edited file) are refused by name
    from genprob.io import persistence

    loaded.params_["weights"] = loaded.params_["weights"][:5]
    with pytest.raises(persistence.ModelFileError, match="5 entries along 'component'"):
        persistence._check_consistent(loaded)
