"""MAP EM under mclust's default prior (issue 58): ``MixtureDiscriminantAnalysis(prior=...)``
against R mclust 6.1.3's ``priorControl()`` fits (tests/references/mclust/mclust_priors.json,
made by make_mclust_priors.R; the README there says how)."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from _mclust_data import REFERENCES, load
from sklearn.base import clone
from sklearn.utils._param_validation import InvalidParameterError

import genprob
from genprob.families.gaussian import mclust_prior, mixture
from genprob.families.gaussian.mixture_story import num_parameters

REFERENCE = json.loads((REFERENCES / "mclust_priors.json").read_text())
EDDA = REFERENCE["edda_prior"]
NO_PRIOR = ("VEE", "EVE", "VVE", "EVV")


def _fitted(name):
    return [(name, s) for s, ref in EDDA[name].items() if ref["fitted"]]


CASES = _fitted("iris") + _fitted("wine")


def test_the_references_fit_the_ten_structures_with_a_prior():
    # mclust fails on the four without a prior: the tests cover what it fits
    for name in ("iris", "wine"):
        fitted = {s for s, ref in EDDA[name].items() if ref["fitted"]}
        assert fitted == set(mclust_prior.PRIOR_STRUCTURES)
        assert set(EDDA[name]) - fitted == set(NO_PRIOR)


@pytest.mark.parametrize(("name", "structure"), CASES)
def test_default_prior_hyperparameters_are_mclusts(name, structure):
    X, y = load(name)
    ours = mclust_prior.default_prior(X, len(np.unique(y)), structure)
    ref = EDDA[name][structure]["prior"]
    assert ours["shrinkage"] == ref["shrinkage"]
    assert ours["dof"] == ref["dof"]
    np.testing.assert_allclose(ours["mean"], ref["mean"], rtol=1e-12)
    # a number for the spherical and diagonal structures, a matrix for the others
    assert np.ndim(ours["scale"]) == np.ndim(ref["scale"])
    np.testing.assert_allclose(ours["scale"], ref["scale"], rtol=1e-12)


@pytest.mark.parametrize(("name", "structure"), CASES)
def test_edda_with_the_default_prior_matches_mclust(name, structure):
    X, y = load(name)
    ref = EDDA[name][structure]
    model = genprob.MixtureDiscriminantAnalysis(
        structure=structure, n_components=1, prior="default"
    ).fit(X, y)
    # the plain mixture log-likelihood at the MAP parameters, BIC = 2 log L - df log n
    assert model.log_likelihood_ == pytest.approx(ref["loglik"], rel=1e-4)
    assert model.bic_table_.iloc[0, 0] == pytest.approx(ref["bic"], rel=1e-4)
    df = (2 * model.log_likelihood_ - model.bic_table_.iloc[0, 0]) / math.log(len(X))
    assert df == pytest.approx(ref["df"], abs=1e-6)
    # the M-step itself: posterior means (EEI, EEV: mclust keeps the sample means) and covariances
    means = np.asarray(ref["means"]).T
    np.testing.assert_allclose(model.params_["means"], means, rtol=1e-8)
    sigma = np.stack([np.asarray(ref["sigma"][str(k)]) for k in range(len(means))])
    np.testing.assert_allclose(model.params_["covariances"], sigma, rtol=1e-5, atol=1e-10)
    np.testing.assert_allclose(model.predict_proba(X), np.asarray(ref["z"]), atol=1e-6)
    assert np.mean(model.predict(X) == y) == pytest.approx(ref["accuracy"])


@pytest.mark.parametrize("name", ["iris", "wine"])
def test_edda_over_all_structures_leaves_out_those_without_a_prior(name):
    X, y = load(name)
    model = genprob.MixtureDiscriminantAnalysis(structure="all", prior="default").fit(X, y)
    table = model.bic_table_[1]
    assert table[list(NO_PRIOR)].isna().all()  # missing, as in mclust's BIC table
    for structure in mclust_prior.PRIOR_STRUCTURES:
        assert table[structure] == pytest.approx(EDDA[name][structure]["bic"], rel=1e-4)
    best = max(mclust_prior.PRIOR_STRUCTURES, key=lambda s: EDDA[name][s]["bic"])
    assert set(model.structure_) == {best}


def test_wine_mclustda_one_component_per_class_matches_mclust():
    # MclustDA fits one component by mclust's mvnXII/XXI/XXX under the class's own prior: the
    # G = 1 row of each class's BIC table (G = 2 needs mclust's hierarchical start to compare)
    X, y = load("wine")
    model = genprob.MixtureDiscriminantAnalysis(
        structure=list(mclust_prior.PRIOR_STRUCTURES), n_components=[1, 2], prior="default"
    ).fit(X, y)
    for ref in REFERENCE["wine_mclustda"]["prior"]["classes"]:
        label = ref["class"]
        ours = model.bic_table_.loc[label, 1]
        for structure, value in zip(ref["BIC_columns"], ref["BIC"][0], strict=True):
            assert ours[structure] == pytest.approx(value, rel=1e-4), (label, structure)
        # the hyperparameters of the class's chosen model, from its own rows
        if ref["G"] == 1:
            rows = X[y == label]
            named = {"XII": "VII", "XXI": "VVI", "XXX": "VVV"}[ref["modelName"]]
            ours_prior = mclust_prior.default_prior(rows, 1, named)
            np.testing.assert_allclose(ours_prior["scale"], ref["prior"]["scale"], rtol=1e-12)
            np.testing.assert_allclose(ours_prior["mean"], ref["prior"]["mean"], rtol=1e-12)


def test_em_under_the_prior_runs_and_is_not_the_ml_fit():
    X, y = load("iris")
    ml = genprob.MixtureDiscriminantAnalysis("VVV", n_components=2).fit(X, y)
    mapped = genprob.MixtureDiscriminantAnalysis("VVV", n_components=2, prior="default").fit(X, y)
    assert np.isfinite(mapped.log_likelihood_)
    assert mapped.converged_
    # the prior's mode is not the likelihood's maximum: a lower likelihood at another place
    assert mapped.log_likelihood_ < ml.log_likelihood_
    assert not np.allclose(mapped.params_["covariances"], ml.params_["covariances"])


def test_a_structure_without_a_prior_is_refused_by_name():
    X, y = load("iris")
    for structure in ("VEE", ["EEE", "EVV"]):
        model = genprob.MixtureDiscriminantAnalysis(structure=structure, prior="default")
        with pytest.raises(ValueError, match="no prior for (VEE|EVV)"):
            model.fit(X, y)


def test_user_hyperparameters():
    X, y = load("iris")
    default = mclust_prior.default_prior(X, 3, "VVV")
    given = {k: default[k] for k in ("shrinkage", "mean", "dof", "scale")}
    fits = [
        genprob.MixtureDiscriminantAnalysis("VVV", prior=prior).fit(X, y)
        for prior in ("default", given, {"shrinkage": 0.01}, {"scale": 2.0})
    ]
    # the default's own values (all or some of them) are the default prior
    for fit in fits[1:3]:
        np.testing.assert_allclose(fit.params_["covariances"], fits[0].params_["covariances"])
    # a number as the scale of a full structure is that number times the identity
    counts = np.bincount(y).astype(float)
    xbar = np.stack([X[y == k].mean(0) for k in range(3)])
    scatter = np.stack([(X[y == k] - xbar[k]).T @ (X[y == k] - xbar[k]) for k in range(3)])
    outer = {**default, "scale": 2.0 * np.eye(4)}
    _, expected = mclust_prior.map_step("VVV", counts, xbar, scatter, outer)
    np.testing.assert_allclose(fits[3].params_["covariances"], expected, rtol=1e-12)
    # a matrix as the scale of a diagonal structure: its trace / D, the default's relation
    diagonal = {**default, "scale": default["scale"]}
    _, from_matrix = mclust_prior.map_step("VVI", counts, xbar, scatter, diagonal)
    scalar = {**default, "scale": float(np.trace(default["scale"])) / 4}
    _, from_number = mclust_prior.map_step("VVI", counts, xbar, scatter, scalar)
    np.testing.assert_allclose(from_matrix, from_number, rtol=1e-12)


@pytest.mark.parametrize(
    ("prior", "error", "match"),
    [
        ("flat", InvalidParameterError, "prior"),
        (0.5, InvalidParameterError, "prior"),
        ({"shrinkage": -1.0}, ValueError, r"prior\['shrinkage'\]"),
        ({"dof": 0}, ValueError, r"prior\['dof'\]"),
        ({"mean": [1.0, 2.0]}, ValueError, r"prior\['mean'\] must be 4"),
        ({"scale": -np.eye(4)}, ValueError, r"prior\['scale'\]"),
        ({"scale": np.ones((3, 3))}, ValueError, r"prior\['scale'\]"),
        ({"nu": 3}, ValueError, "unknown hyperparameter"),
    ],
)
def test_bad_priors_are_refused_by_name(prior, error, match):
    X, y = load("iris")
    with pytest.raises(error, match=match):
        genprob.MixtureDiscriminantAnalysis("VVV", prior=prior).fit(X, y)


def test_a_fit_under_a_prior_has_no_partial_fit():
    model = genprob.MixtureDiscriminantAnalysis("VVV", prior="default")
    assert not hasattr(model, "partial_fit")
    X, y = load("iris")
    model.fit(X, y)
    assert "stats_" not in vars(model)


def test_a_model_fitted_under_a_prior_saves_and_loads(tmp_path):
    X, y = load("wine")
    default = mclust_prior.default_prior(X, 3, "EEE")
    for prior in ("default", {"scale": default["scale"], "shrinkage": 0.05}):
        model = genprob.MixtureDiscriminantAnalysis("EEE", prior=prior).fit(X, y)
        loaded = genprob.load(model.save(tmp_path / "mda.npz"))
        assert isinstance(loaded.get_params()["prior"], type(prior))
        np.testing.assert_allclose(loaded.predict_proba(X), model.predict_proba(X), rtol=1e-12)
        assert loaded.log_likelihood_ == model.log_likelihood_
        assert loaded.bic_table_.equals(model.bic_table_)
        # refitting the loaded estimator's settings gives the same MAP fit
        refit = clone(loaded).fit(X, y)
        np.testing.assert_allclose(refit.params_["means"], model.params_["means"], rtol=1e-12)


def test_missing_cells_under_the_prior():
    X, y = load("iris")
    X = X.copy()
    rng = np.random.default_rng(0)
    X[rng.random(X.shape) < 0.05] = np.nan
    model = genprob.MixtureDiscriminantAnalysis("VVV", prior="default", missing="marginalize").fit(
        X, y
    )
    assert np.isfinite(model.log_likelihood_)
    # the prior is built from each feature's observed cells
    prior = mclust_prior.default_prior(X, 3, "VVV")
    observed = [X[~np.isnan(X[:, j]), j] for j in range(4)]
    np.testing.assert_allclose(prior["mean"], [c.mean() for c in observed])
    variances = [c.var(ddof=1) for c in observed]
    np.testing.assert_allclose(np.diag(prior["scale"]), np.divide(variances, 3**0.5))


def test_mclustda_em_under_the_prior_from_mclusts_start_matches_mclust():
    # wine class 1 from mclust's own hierarchical partitions (the "hc" references): MAP EM with
    # mclust's EM M-steps (me*p) and its tolerance reaches each BIC of its table, G = 2 to 5
    X, y = load("wine")
    rows = X[y == 1]
    partitions = REFERENCE["hc"]["wine_class1"]["partitions"]
    (ref,) = [c for c in REFERENCE["wine_mclustda"]["prior"]["classes"] if c["class"] == 1]
    compared = 0
    for G, values in zip(ref["BIC_rows"], ref["BIC"], strict=True):
        if G == 1:
            continue
        start = np.eye(G)[np.asarray(partitions[G - 1]) - 1]
        for structure, value in zip(ref["BIC_columns"], values, strict=True):
            if value is None:  # mclust's EM failed there
                continue
            prior = (mclust_prior.default_prior(rows, G, structure),)
            fit = mixture.fit_mixture(
                rows, np.zeros(len(rows), int), (G,), (structure,), start_from=start,
                prior=prior, prior_step="em", tol=1e-5, max_iter=1000,
            )  # fmt: skip
            df = num_parameters(fit.structures, fit.groups, 1, X.shape[1])
            bic = 2 * fit.log_likelihood - df * math.log(len(rows))
            assert bic == pytest.approx(value, rel=1e-6), (structure, G)
            compared += 1
    assert compared >= 30
