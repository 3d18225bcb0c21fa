"""DiscriminantDirections (issue 58, item 5) against R mclust's ``MclustDR``.

The references are tests/references/mclust/mclustdr_reference.json, made by
make_mclustdr_reference.R (mclust 6.1.3): iris ``MclustDA`` (EEE with 2 components for class 0,
one Gaussian for classes 1 and 2, EM to a relative change of 1e-12) and wine EDDA with VVI, each
with ``lambda`` 1 (mclust's default) and 0.5. mclust's directions are unit-length columns whose
signs are LAPACK's: they are compared up to sign.
"""

import json

import numpy as np
import pytest
from _mclust_data import REFERENCES, load
from sklearn.base import clone
from sklearn.exceptions import NotFittedError
from sklearn.frozen import FrozenEstimator
from sklearn.pipeline import make_pipeline
from sklearn.utils._param_validation import InvalidParameterError

import genprob

REFERENCE = json.loads((REFERENCES / "mclustdr_reference.json").read_text())
LAMBDAS = ("1", "0.5")


@pytest.fixture(scope="module")
def iris_mclustda():
    X, y = load("iris")
    # mclust's choice over the 14 structures x G 1:3 (the reference's models), pinned
    model = genprob.MixtureDiscriminantAnalysis(structure="EEE", n_components=[1, 2], em_tol=1e-12)
    return model.fit(X, y)


def _matches_mclust(dr, case, X):
    """Eigenvalues to 1e-6 relative, directions and projected rows up to each column's sign."""
    numdir = case["numdir"]
    assert dr.n_directions_ == numdir
    evalues = np.asarray(case["evalues"])
    np.testing.assert_allclose(dr.eigenvalues_[:numdir], evalues[:numdir], rtol=1e-6)
    # the rest are rounding noise of zero (mclust's SVD gives their absolute values)
    np.testing.assert_allclose(dr.eigenvalues_[numdir:], 0.0, atol=1e-12)
    basis = np.asarray(case["basis"])
    signs = np.sign(np.sum(basis * dr.directions_.T, axis=0))
    np.testing.assert_allclose(dr.directions_.T * signs, basis, atol=1e-8)
    np.testing.assert_allclose(np.linalg.norm(dr.directions_, axis=1), 1.0, rtol=1e-12)
    head = np.asarray(case["dir_head"])
    np.testing.assert_allclose(dr.transform(X[: len(head)]) * signs, head, atol=1e-8)


@pytest.mark.parametrize("lam", LAMBDAS)
def test_iris_mclustda_matches_mclust(iris_mclustda, lam):
    X, _ = load("iris")
    ref = REFERENCE["iris_mclustda"]
    # the same fit as mclust's first: the models it chose and its log-likelihood
    assert [(m["modelName"], m["G"]) for m in ref["models"]] == [("EEE", 2), ("XXX", 1), ("XXX", 1)]
    assert list(iris_mclustda.n_components_) == [2, 1, 1]
    assert iris_mclustda.log_likelihood_ == pytest.approx(ref["loglik"], rel=1e-10)
    case = ref["cases"][lam]
    dr = genprob.DiscriminantDirections(iris_mclustda, mean_weight=float(lam)).fit(X)
    _matches_mclust(dr, case, X)


@pytest.mark.parametrize("lam", LAMBDAS)
@pytest.mark.parametrize(
    "make",
    [
        lambda: genprob.MixtureDiscriminantAnalysis(structure="VVI"),
        # Gaussian naive Bayes without variance smoothing is EDDA's VVI: one implementation
        lambda: genprob.GaussianNB(var_smoothing=0.0),
    ],
    ids=["edda_VVI", "gaussian_nb"],
)
def test_wine_edda_matches_mclust(make, lam):
    X, y = load("wine")
    model = make().fit(X, y)
    dr = genprob.DiscriminantDirections(model, mean_weight=float(lam)).fit(X)
    _matches_mclust(dr, REFERENCE["wine_edda_VVI"]["cases"][lam], X)


def test_directions_from_the_means_are_fishers():
    """lambda = 1 with a shared covariance is LDA: its directions are LDA's scalings, and EDDA's
    EEE (the same Gaussians) gives the same directions and eigenvalues."""
    X, y = load("wine")
    lda = genprob.LinearDiscriminantAnalysis().fit(X, y)
    dr = genprob.DiscriminantDirections(lda).fit(X)
    assert dr.n_directions_ == 2
    scalings = lda.scalings_[:, :2] / np.linalg.norm(lda.scalings_[:, :2], axis=0)
    cosines = np.abs(np.sum(scalings * dr.directions_.T, axis=0))
    np.testing.assert_allclose(cosines, 1.0, atol=1e-10)
    edda = genprob.MixtureDiscriminantAnalysis(structure="EEE").fit(X, y)
    other = genprob.DiscriminantDirections(edda).fit(X)
    np.testing.assert_allclose(other.eigenvalues_, dr.eigenvalues_, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(other.directions_, dr.directions_, atol=1e-9)


def test_qda_is_edda_vvv():
    X, y = load("iris")
    qda = genprob.DiscriminantDirections(
        genprob.QuadraticDiscriminantAnalysis().fit(X, y), mean_weight=0.5
    ).fit(X)
    edda = genprob.DiscriminantDirections(
        genprob.MixtureDiscriminantAnalysis(structure="VVV").fit(X, y), mean_weight=0.5
    ).fit(X)
    assert qda.n_directions_ == edda.n_directions_ == 4
    np.testing.assert_allclose(qda.eigenvalues_, edda.eigenvalues_, rtol=1e-9)
    np.testing.assert_allclose(qda.directions_, edda.directions_, atol=1e-9)


def test_a_shared_diagonal_story_is_edda_eei():
    X, y = load("wine")
    story = genprob.GaussianStory(covariance="diag", shared=True)
    ours = genprob.DiscriminantDirections(
        genprob.GenerativeClassifier(story).fit(X, y), mean_weight=0.5
    ).fit(X)
    edda = genprob.DiscriminantDirections(
        genprob.MixtureDiscriminantAnalysis(structure="EEI").fit(X, y), mean_weight=0.5
    ).fit(X)
    # one spread for all: no covariance variation, half the means' kernel of mean_weight=1
    assert ours.n_directions_ == edda.n_directions_ == 2
    np.testing.assert_allclose(ours.eigenvalues_, edda.eigenvalues_, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(ours.directions_, edda.directions_, atol=1e-9)
    means_only = genprob.DiscriminantDirections(edda.model).fit(X)
    np.testing.assert_allclose(edda.eigenvalues_[:2], means_only.eigenvalues_[:2] / 2, rtol=1e-9)


def test_directions_span_the_whitened_means_and_are_uncorrelated(iris_mclustda):
    X, _ = load("iris")
    dr = genprob.DiscriminantDirections(iris_mclustda).fit(X)
    params = iris_mclustda.params_
    weights = params["class_prior"][params["component_class"]] * params["weights"]
    means = np.asarray(params["means"])
    # lambda = 1: the span is Sigma^-1 (mu_j - mu), J - 1 = 3 directions
    targets = np.linalg.solve(dr.covariance_, (means - weights @ means).T)
    coefficients, *_ = np.linalg.lstsq(dr.directions_.T, targets, rcond=None)
    np.testing.assert_allclose(dr.directions_.T @ coefficients, targets, atol=1e-8)
    # the directions are Sigma-conjugate: the projected rows are uncorrelated
    Z = dr.transform(X)
    assert Z.shape == (150, 3)
    covariance = np.cov(Z, rowvar=False, bias=True)
    np.testing.assert_allclose(covariance - np.diag(np.diag(covariance)), 0.0, atol=1e-10)
    np.testing.assert_allclose(Z.mean(axis=0), 0.0, atol=1e-12)
    # each direction's largest entry is positive (a deterministic sign)
    rows = np.arange(3)
    assert np.all(dr.directions_[rows, np.argmax(np.abs(dr.directions_), axis=1)] > 0)


def test_n_directions_keeps_the_first(iris_mclustda):
    X, _ = load("iris")
    every = genprob.DiscriminantDirections(iris_mclustda, mean_weight=0.5).fit(X)
    two = genprob.DiscriminantDirections(iris_mclustda, mean_weight=0.5, n_directions=2)
    Z = two.fit_transform(X)
    assert Z.shape == (150, 2) and two.n_directions_ == 2
    np.testing.assert_allclose(Z, every.transform(X)[:, :2], atol=1e-12)
    np.testing.assert_allclose(two.eigenvalues_, every.eigenvalues_)
    assert list(two.get_feature_names_out()) == [
        "discriminantdirections0",
        "discriminantdirections1",
    ]


def test_a_frozen_model_survives_a_pipelines_clone(iris_mclustda):
    X, y = load("iris")
    pipeline = make_pipeline(
        genprob.DiscriminantDirections(FrozenEstimator(iris_mclustda), n_directions=2),
        genprob.LinearDiscriminantAnalysis(),
    )
    clone(pipeline).fit(X, y)
    direct = genprob.DiscriminantDirections(iris_mclustda, n_directions=2).fit(X)
    np.testing.assert_allclose(pipeline.fit(X, y)[0].directions_, direct.directions_)


def test_bad_input_is_named(iris_mclustda):
    X, y = load("iris")
    with pytest.raises(NotFittedError, match="model: MixtureDiscriminantAnalysis is not"):
        genprob.DiscriminantDirections(genprob.MixtureDiscriminantAnalysis()).fit(X)
    counts = np.round(X).astype(int)
    with pytest.raises(TypeError, match="model: .* Gaussian classes"):
        genprob.DiscriminantDirections(genprob.MultinomialNB().fit(counts, y)).fit(counts)
    with pytest.raises(ValueError, match=r"n_directions=4 exceeds the 3 directions"):
        genprob.DiscriminantDirections(iris_mclustda, n_directions=4).fit(X)
    with pytest.raises(InvalidParameterError, match="mean_weight"):
        genprob.DiscriminantDirections(iris_mclustda, mean_weight=1.5).fit(X)
    with pytest.raises(InvalidParameterError, match="n_directions"):
        genprob.DiscriminantDirections(iris_mclustda, n_directions=0).fit(X)
    with pytest.raises(ValueError, match="X has 3 features, but the model was fitted on 4"):
        genprob.DiscriminantDirections(iris_mclustda).fit(X[:, :3])
    with pytest.raises(ValueError, match="NaN"):
        genprob.DiscriminantDirections(iris_mclustda).fit(np.where(X > 7, np.nan, X))
    with pytest.raises(ValueError, match="X: no direction separates"):
        genprob.DiscriminantDirections(iris_mclustda).fit(np.repeat(X[:1], 5, axis=0))
    dr = genprob.DiscriminantDirections(iris_mclustda)
    with pytest.raises(NotFittedError):
        dr.transform(X)
    dr.fit(X)
    with pytest.raises(ValueError, match="features"):
        dr.transform(X[:, :3])
