"""The 14 mclust structures in GaussianStory(structure=...) against R's mclust.

The reference numbers are made by tests/references/mclust/make_mclust_reference.R (mclust
6.1.3) and committed; these tests never need R. mclust's EDDA reports the mixture
log-likelihood ``sum_i log sum_k pi_k f_k(x_i)`` at the one-Gaussian-per-class fit, with
``df = K D + nVarParams + (K - 1)`` and ``bic = 2 log L - df log n`` (its sign; genprob's
``bic()`` is ``-2 log L + df log n``).
"""

import json
import math

import numpy as np
import pytest
from _mclust_data import REFERENCES, load

import genprob
from genprob.families.gaussian import GaussianStory
from genprob.families.gaussian.mclust import STRUCTURES, m_step_objective, one_component

DATASETS = ("iris", "wine")

#: Fits where mclust's iterative M-step stopped short of the maximum that genprob reaches (its
#: EVE stops at a relative change of sqrt(eps) in its target; its VVE weights the orientation's
#: MM update by A_k^-1 instead of (lambda_k A_k)^-1): there genprob's complete-data
#: log-likelihood is higher, and so is the mixture log-likelihood mclust reports.
BETTER_OPTIMUM = {("wine", "EVE"), ("iris", "VVE"), ("wine", "VVE")}


@pytest.fixture(scope="module")
def reference():
    return json.loads((REFERENCES / "mclust_reference.json").read_text())


def _scatter(X, y):
    counts = np.bincount(y).astype(float)
    centered = [X[y == k] - X[y == k].mean(axis=0) for k in range(counts.size)]
    return np.stack([c.T @ c for c in centered]), counts


@pytest.fixture(scope="module")
def fits():
    out = {}
    for name in DATASETS:
        X, y = load(name)
        for structure in STRUCTURES:
            story = GaussianStory(structure=structure)
            out[name, structure] = genprob.GenerativeClassifier(story=story).fit(X, y)
    return out


def _covariances(estimator):
    params = estimator.params_
    if "variances" in params:
        variances = np.broadcast_to(params["variances"], params["means"].shape)
        return variances[:, :, None] * np.eye(variances.shape[1])
    return np.broadcast_to(
        params["covariance"], params["means"].shape[:1] + 2 * params["means"].shape[1:]
    )


def test_reference_was_made_with_mclust_611_or_later(reference):
    major, minor, patch = (int(v) for v in reference["mclust_version"].split("."))
    assert (major, minor, patch) >= (6, 1, 1)


@pytest.mark.parametrize("name", DATASETS)
@pytest.mark.parametrize("structure", STRUCTURES)
def test_edda_matches_mclust(fits, reference, name, structure):
    X, y = load(name)
    estimator = fits[name, structure]
    ref = reference[name]["edda"][structure]
    log_lik = float(estimator.log_likelihood(X))
    posteriors = np.asarray(estimator.predict_proba(X))
    W, counts = _scatter(X, y)
    ours = m_step_objective(W, counts, np.asarray(_covariances(estimator)))
    theirs = m_step_objective(W, counts, np.array(list(ref["sigma"].values())))
    if (name, structure) in BETTER_OPTIMUM:
        assert ours > theirs + 1e-6 * abs(theirs)
        assert log_lik > ref["loglik"]
    else:
        assert ours >= theirs - 1e-6 * abs(theirs)
        np.testing.assert_allclose(posteriors, np.array(ref["z"]), atol=1e-3, rtol=0)
        assert abs(log_lik - ref["loglik"]) <= 1e-4 * abs(ref["loglik"])
        np.testing.assert_allclose(estimator.bic(X), -ref["bic"], rtol=1e-4)
    np.testing.assert_allclose(np.asarray(estimator.params_["means"]), np.array(ref["means"]).T)


@pytest.mark.parametrize("name", DATASETS)
@pytest.mark.parametrize("structure", STRUCTURES)
def test_bic_counts_mclust_degrees_of_freedom(fits, reference, name, structure):
    X, _ = load(name)
    n, D = X.shape
    K = 3
    volume, shape, orientation = structure
    # by hand: K - 1 class proportions, K D means, volumes, shapes, orientations
    covariance = (1 if volume == "E" else K) + {"I": 0, "E": D - 1, "V": K * (D - 1)}[shape]
    covariance += {"I": 0, "E": D * (D - 1) // 2, "V": K * D * (D - 1) // 2}[orientation]
    df = (K - 1) + K * D + covariance
    estimator = fits[name, structure]
    assert estimator.num_parameters() == df == reference[name]["edda"][structure]["df"]
    log_lik = float(estimator.log_likelihood(X))
    assert estimator.bic(X) == pytest.approx(-2.0 * log_lik + df * math.log(n), rel=1e-12)


def test_structure_and_covariance_agree_or_raise():
    assert (
        GaussianStory(structure="EEE").covariance_structure is GaussianStory().covariance_structure
    )
    kinds = {"EEE": ("full", True), "VVV": ("full", False), "EEI": ("diag", True)}
    kinds["VVI"] = ("diag", False)
    for name, (covariance, shared) in kinds.items():
        story = GaussianStory(structure=name, covariance=covariance, shared=shared)
        assert story.structure_name == name
        assert GaussianStory(covariance=covariance, shared=shared).structure_name == name
    with pytest.raises(ValueError, match="Give the structure alone"):
        GaussianStory(structure="VEV", shared=True)
    with pytest.raises(ValueError, match="Give the structure alone"):
        GaussianStory(structure="EEI", covariance="full")
    with pytest.raises(ValueError, match="structure must be one of"):
        GaussianStory(structure="XYZ")
    with pytest.raises(ValueError, match="maximum likelihood only"):
        GaussianStory(structure="VEE", reg_param=0.1)
    # replace keeps the structure and its stored kind together
    assert GaussianStory(structure="EVE").replace(mean_prior_scale=3.0).structure == "EVE"


def test_four_structures_keep_their_closed_forms():
    X, y = load("iris")
    for name in ("EEE", "VVV", "EEI", "VVI"):
        old = GaussianStory(**dict(zip(("covariance", "shared"), {
            "EEE": ("full", True), "VVV": ("full", False),
            "EEI": ("diag", True), "VVI": ("diag", False)}[name], strict=True)))  # fmt: skip
        a = genprob.GenerativeClassifier(story=old).fit(X, y).params_
        b = genprob.GenerativeClassifier(story=GaussianStory(structure=name)).fit(X, y).params_
        assert sorted(a) == sorted(b)
        for key in a:
            np.testing.assert_array_equal(np.asarray(a[key]), np.asarray(b[key]))


@pytest.mark.parametrize("structure", ["VEV", "EVE", "EII"])
def test_crosscheck_fast_cases(structure):
    X, y = load("iris")
    assert genprob.crosscheck(GaussianStory(structure=structure), X[::3], y[::3]).passed


@pytest.mark.slow
@pytest.mark.parametrize("structure", STRUCTURES)
def test_crosscheck_every_structure(structure):
    X, y = load("iris")
    result = genprob.crosscheck(GaussianStory(structure=structure), X[::3], y[::3])
    assert result.passed, str(result)


@pytest.mark.parametrize("structure", ["VEE", "EVV"])
def test_em_with_unlabeled_rows(structure):
    X, y = load("iris")
    partial = y.copy()
    partial[1::2] = -1
    estimator = genprob.GenerativeClassifier(story=GaussianStory(structure=structure), max_iter=50)
    estimator.fit(X, partial)
    trace = np.asarray(estimator.log_likelihood_trace_)
    trace = trace[np.isfinite(trace)]
    assert trace.size >= 2 and np.all(np.diff(trace) >= -1e-9 * np.abs(trace[1:]))
    assert np.all(np.isfinite(np.asarray(estimator.params_["covariance"])))
    assert np.mean(estimator.predict(X[1::2]) == y[1::2]) > 0.9


def test_save_load_round_trip(tmp_path):
    X, y = load("iris")
    estimator = genprob.GenerativeClassifier(story=GaussianStory(structure="VEV")).fit(X, y)
    loaded = genprob.load(estimator.save(tmp_path / "vev"))
    assert loaded.story_.structure == "VEV"
    np.testing.assert_array_equal(loaded.predict_proba(X), estimator.predict_proba(X))
    assert loaded.bic(X) == estimator.bic(X)


@pytest.mark.slow
@pytest.mark.parametrize("structure", ["VEI", "EEV"])
def test_nuts_and_arviz(structure):
    X, y = load("iris")
    rows = slice(None, None, 5)
    estimator = genprob.GenerativeClassifier(story=GaussianStory(structure=structure)).fit(
        X[rows], y[rows]
    )
    idata = estimator.posterior(X[rows], y[rows], num_samples=100, num_warmup=100, num_chains=1)
    covariance = np.asarray(idata.posterior["covariance"])
    assert covariance.shape[-3:] == (3, 4, 4) and np.all(np.isfinite(covariance))
    # the draws keep the structure: EEV's classes share their eigenvalues, VEI's are diagonal
    draws = covariance.reshape(-1, 3, 4, 4)
    if structure == "EEV":
        values = np.linalg.eigvalsh(draws)
        np.testing.assert_allclose(values[:, 1:], values[:, :1].repeat(2, axis=1), rtol=1e-8)
    else:
        np.testing.assert_allclose(draws * (1 - np.eye(4)), 0.0, atol=1e-12)


def test_mclustda_and_mclustssc_references_are_recorded(reference):
    # what mclust chose, for the mixture-discriminant tests built on these structures
    mda = reference["iris"]["mclustda"]
    assert [(c["modelName"], c["G"]) for c in mda["classes"]] == [
        ("EEE", 2),
        ("XXX", 1),
        ("XXX", 1),
    ]
    assert mda["bic"] == pytest.approx(2 * mda["loglik"] - mda["df"] * math.log(150))
    ssc = reference["iris"]["mclustssc"]
    assert (ssc["modelName"], ssc["G"]) == ("VEV", 3)
    assert np.asarray(ssc["z"]).shape == (150, 3)


def test_one_component_keeps_the_letters_a_single_group_can_vary():
    """A group of one component: spherical, diagonal or full, its own (mclust's mvnXII, mvnXXI,
    mvnXXX)."""
    expected = {"II": "VII", "VI": "VVI", "EI": "VVI"}
    for name in STRUCTURES:
        assert one_component(name) == expected.get(name[1:], "VVV"), name
    with pytest.raises(ValueError, match="unknown structure 'XYZ'"):
        one_component("XYZ")
