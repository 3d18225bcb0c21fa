"""LDA's predictive and debiased rules against R MASS's predict.lda (references committed in
tests/references/mass/, made by make_mass_reference.R; the tests never need R)."""

import csv
from pathlib import Path

import numpy as np
import pytest

import genprob
from genprob.families.gaussian import GaussianStory

HERE = Path(__file__).parent / "references"
# MASS's predictive rule is exact under the improper prior flat in the means and
# |Sigma|^-(D+1)/2: kappa0 = 0, Psi0 = 0 and nu0 = -K in the normal-inverse-Wishart family
MASS_PRIOR = {
    "conjugate_prior": "fixed",
    "mean_prior_rows": 0.0,
    "covariance_prior_scale": 0.0,
    "covariance_prior_dof": -3.0,
}


def _reference(name):
    table = {}
    with open(HERE / "mass" / "mass_lda_reference.csv") as handle:
        for row in csv.DictReader(handle):
            if row["data"] == name:
                table.setdefault(row["method"], []).append(row)
    train = np.array([int(r["row"]) for r in table.pop("train_rows")])
    posteriors = {}
    for method, rows in table.items():
        z = np.zeros((1 + max(int(r["row"]) for r in rows), 3))
        for r in rows:
            z[int(r["row"]), int(r["class"])] = float(r["posterior"])
        posteriors[method] = z
    data = np.loadtxt(HERE / "mclust" / f"{name}.csv", delimiter=",", skiprows=1)
    return data[:, :2], data[:, -1].astype(int), train, posteriors


@pytest.mark.parametrize("name", ["iris", "wine"])
def test_lda_rules_equal_mass_predict_lda(name):
    X, y, train, mass = _reference(name)
    lda = genprob.LinearDiscriminantAnalysis().fit(X[train], y[train])
    # MASS's plug-in rule uses the unbiased pooled covariance (divisor N - K)
    unbiased = genprob.GenerativeClassifier(GaussianStory("full", True, estimator="unbiased"))
    np.testing.assert_allclose(
        unbiased.fit(X[train], y[train]).predict_proba(X), mass["plugin"], rtol=0, atol=1e-8
    )
    np.testing.assert_allclose(
        lda.predict_proba(X, method="debiased"), mass["debiased"], rtol=0, atol=1e-8
    )
    predictive = lda.predict_proba(X, method="predictive", prior=MASS_PRIOR)
    np.testing.assert_allclose(predictive, mass["predictive_fixed"], rtol=0, atol=1e-8)
    # MASS 7.3-58 itself scales the rows but not the class means (see the R script): a
    # different number, and the three rules differ from each other on 5 rows a class
    assert np.max(np.abs(predictive - mass["predictive"])) > 1e-3
    assert np.max(np.abs(predictive - mass["plugin"])) > 1e-2
    assert np.max(np.abs(mass["debiased"] - mass["plugin"])) > 1e-2
