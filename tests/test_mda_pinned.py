"""Per-class candidates, the pinned refit and fixed-model cross-validation (issue 58, item 3):
``MixtureDiscriminantAnalysis(structure={label: ...}, n_components={label: ...})``,
``pinned_params()`` and ``genprob.cross_validate_model`` against R mclust 6.1.3's
``MclustDA(G = list(...), modelNames = list(...))`` and ``cvMclustDA`` with its folds recorded
(tests/references/mclust/mclust_cv.json, made by make_cv_reference.R)."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pandas as pd
import pytest
from _mclust_data import REFERENCES, load
from sklearn.base import clone
from sklearn.model_selection import StratifiedKFold

import genprob
from genprob.families.gaussian import mixture

CV = json.loads((REFERENCES / "mclust_cv.json").read_text())
#: mclust names a class's one-component model by its parameter count: the same fit as these
ONE_COMPONENT = {"XXX": "VVV", "XXI": "VVI", "XII": "VII"}
METRICS = ("error", "error_se", "brier", "brier_se")


def _quiet(model, X, y):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", mixture.CollapsedComponentWarning)
        return model.fit(X, y)


def _mclust_model(ref):
    """mclust's chosen models, pinned: EDDA as one structure, MclustDA as dicts per class."""
    if ref["type"] == "EDDA":
        return genprob.MixtureDiscriminantAnalysis(ref["structure"][0], 1)
    structure = {k: ONE_COMPONENT.get(s, s) for k, s in enumerate(ref["structure"])}
    return genprob.MixtureDiscriminantAnalysis(structure, dict(enumerate(ref["G"])))


def _folds(ref):
    fold = np.asarray(ref["fold"])
    return [(np.flatnonzero(fold != i), np.flatnonzero(fold == i)) for i in range(1, 11)]


def _rel(a, b):
    return abs(a - b) / abs(b)


# -- per-class candidates ------------------------------------------------------------------------
def test_per_class_dicts_give_each_class_its_own_candidates():
    X, y = load("iris")
    model = genprob.MixtureDiscriminantAnalysis(
        structure={0: "EEE", 1: "EII,VII", 2: "VVV"}, n_components={0: [1, 2], 1: 1, 2: 1}
    )
    _quiet(model, X, y)
    table = model.bic_table_
    assert list(table.index) == [(0, "EEE"), (1, "EII"), (1, "VII"), (2, "VVV")]
    assert list(table.columns) == [1, 2]
    assert np.isnan(table.loc[(1, "EII"), 2]) and np.isnan(table.loc[(2, "VVV"), 2])
    # class 0's cells are those of a fit with its candidates for every class
    alone = _quiet(genprob.MixtureDiscriminantAnalysis("EEE", [1, 2]), X, y).bic_table_
    np.testing.assert_allclose(table.loc[(0, "EEE")], alone.loc[(0, "EEE")], rtol=1e-12)
    assert list(model.n_components_) == [2, 1, 1]
    assert model.structure_[2] == "VVV"


def test_mclust_chosen_models_given_as_dicts_reach_its_log_likelihood():
    """mclust's MclustDA(G = 1:3) on iris chose EEE with 2 components, XXX, XXX; given as
    dicts, one candidate a class, genprob's fit has its log-likelihood (EM to mclust's 1e-5)."""
    X, y = load("iris")
    ref = CV["iris_mclustda"]
    model = _mclust_model(ref).fit(X, y)
    assert _rel(model.log_likelihood_, ref["loglik"]) < 1e-6
    assert _rel(-model.bic(X), ref["bic"]) < 1e-6
    assert model.bic_table_.notna().to_numpy().sum() == 3


def test_one_component_dicts_are_mclustda_not_edda():
    """{label: 1} fits each class alone: EEE per class is each class's own covariance (QDA),
    not EDDA's EEE shared across the classes (LDA)."""
    X, y = load("iris")
    per_class = genprob.MixtureDiscriminantAnalysis(
        dict.fromkeys((0, 1, 2), "EEE"), {0: 1, 1: 1, 2: 1}
    )
    per_class.fit(X, y)
    qda = genprob.MixtureDiscriminantAnalysis("VVV", 1).fit(X, y)
    lda = genprob.MixtureDiscriminantAnalysis("EEE", 1).fit(X, y)
    np.testing.assert_allclose(per_class.log_likelihood_, qda.log_likelihood_, rtol=1e-10)
    assert per_class.log_likelihood_ > lda.log_likelihood_ + 10


@pytest.mark.parametrize(
    ("params", "message"),
    [
        (
            {"structure": {0: "VVV", 1: "VVV", 5: "VVV"}},
            r"structure: .*unknown labels \[5\].*\[2\]",
        ),
        ({"n_components": {0: 1, 1: 2}}, r"n_components: .*no entry for \[2\]"),
        (
            {"structure": {"0": "VVV", 1: "VVV", 2: "VVV"}, "n_components": 2},
            r"unknown labels \['0'\]",
        ),
        ({"structure": {0: "VVV", 1: "VVV", 2: "XYZ"}, "n_components": 2}, "unknown structure"),
        ({"n_components": {0: 0, 1: 1, 2: 1}}, "n_components must be integers >= 1"),
        ({"structure": {0: "VVV", 1: "EEE", 2: "VVV"}}, "ambiguous: n_components=1 is EDDA"),
        (
            {"structure": {0: "EVE", 1: "VVV", 2: "VVV"}, "n_components": 2, "prior": "default"},
            "structure: mclust has no prior for EVE",
        ),
    ],
)
def test_bad_dicts_are_refused_by_name(params, message):
    X, y = load("iris")
    with pytest.raises(ValueError, match=message):
        genprob.MixtureDiscriminantAnalysis(**params).fit(X, y)


def test_dicts_with_unlabeled_rows_are_refused():
    X, y = load("iris")
    y = np.where(np.arange(len(y)) % 2 == 1, -1, y)
    model = genprob.MixtureDiscriminantAnalysis("VVV", {0: 1, 1: 2, 2: 1})
    with pytest.raises(ValueError, match="unlabeled rows.*one structure and G"):
        model.fit(X, y)


def test_dicts_have_no_fit_over_chunks():
    assert hasattr(genprob.MixtureDiscriminantAnalysis("VVV", 1), "partial_fit")
    assert not hasattr(genprob.MixtureDiscriminantAnalysis({0: "VVV"}, 1), "partial_fit")
    assert not hasattr(genprob.MixtureDiscriminantAnalysis("VVV", {0: 1}), "partial_fit")


def test_string_labels_and_a_saved_file_keep_the_dicts(tmp_path):
    X, y = load("iris")
    labels = np.array(["setosa", "versicolor", "virginica"])[y]
    structure = {"setosa": "EEE", "versicolor": "VVV", "virginica": "EII,VVV"}
    model = genprob.MixtureDiscriminantAnalysis(
        structure, {"setosa": 2, "versicolor": 1, "virginica": 1}
    )
    model.fit(X, labels)
    assert model.pinned_params() == {
        "structure": {"setosa": "EEE", "versicolor": "VVV", "virginica": "VVV"},
        "n_components": {"setosa": 2, "versicolor": 1, "virginica": 1},
    }
    loaded = genprob.load(model.save(tmp_path / "model.npz"))
    assert loaded.get_params()["structure"] == structure
    assert loaded.pinned_params() == model.pinned_params()
    np.testing.assert_allclose(loaded.predict_proba(X), model.predict_proba(X), rtol=1e-12)


# -- the pinned refit ---------------------------------------------------------------------------
def _assert_pinned_refit(model, X, y):
    pinned = clone(model).set_params(**model.pinned_params())
    _quiet(pinned, X, y)
    assert _rel(pinned.log_likelihood_, model.log_likelihood_) < 1e-8
    assert _rel(pinned.bic(X), model.bic(X)) < 1e-8
    # one candidate a class: one cell of each class's table (one cell under EDDA)
    assert pinned.bic_table_.notna().to_numpy().sum() in (1, len(model.classes_))
    np.testing.assert_array_equal(pinned.n_components_, model.n_components_)
    return pinned


def test_pinned_refit_of_mclustda_reproduces_the_choice():
    X, y = load("iris")
    model = _quiet(genprob.MixtureDiscriminantAnalysis("all", range(1, 4)), X, y)
    params = model.pinned_params()
    # mclust's choice on iris with G 1:3: EEE with 2 components, then one component a class
    assert params["n_components"] == {0: 2, 1: 1, 2: 1}
    assert params["structure"][0] == "EEE"
    pinned = _assert_pinned_refit(model, X, y)
    assert pinned.bic_table_.notna().to_numpy().sum() == 3
    assert _rel(model.log_likelihood_, CV["iris_mclustda"]["loglik"]) < 1e-6


def test_pinned_refit_of_edda_and_of_a_semi_supervised_fit_are_plain_values():
    X, y = load("iris")
    edda = genprob.MixtureDiscriminantAnalysis("all", 1).fit(X, y)
    assert edda.pinned_params() == {"structure": "VEV", "n_components": 1}
    _assert_pinned_refit(edda, X, y)
    assert _rel(edda.log_likelihood_, CV["iris_edda"]["loglik"]) < 1e-8
    hidden = np.where(np.arange(len(y)) % 2 == 1, -1, y)
    for structures, G, expected in [("EEE,VVV", [2, 3], ("EEE", 2)), ("EEE", [1, 2], ("VVV", 1))]:
        semi = _quiet(genprob.MixtureDiscriminantAnalysis(structures, G), X, hidden)
        params = semi.pinned_params()
        # one component a class in a range with unlabeled rows: the EDDA structure of the same
        # covariances (each class its own full one), as mclust names it XXX
        assert (params["structure"], params["n_components"]) == expected
        _assert_pinned_refit(semi, X, hidden)


# -- fixed-model cross-validation --------------------------------------------------------------
@pytest.mark.parametrize("case", ["iris_edda", "iris_mclustda"])
def test_cross_validation_matches_cvmclustda_on_its_folds(case):
    ref = CV[case]
    X, y = load("iris")
    result = genprob.cross_validate_model(_mclust_model(ref), X, y, cv=_folds(ref))
    for name in METRICS:
        assert _rel(result[name], ref[name]) < 1e-6, name
    np.testing.assert_allclose(result["proba"], np.asarray(ref["z"]), atol=1e-6)
    np.testing.assert_array_equal(result["predicted"], ref["classification"])


def test_cross_validation_of_wine_mclustda_on_mclust_folds():
    """Wine's VEI models (5, 3, 3 components): the error is mclust's; the Brier score is within
    1%, as in fold 10 EM from genprob's start of class 2 (VEI, G = 3) stops at a log-likelihood
    of -617.40 where mclust's reaches -609.83 (the other class fits are within 0.2)."""
    ref = CV["wine_mclustda"]
    X, y = load("wine")
    result = genprob.cross_validate_model(_mclust_model(ref), X, y, cv=_folds(ref))
    assert _rel(result["error"], ref["error"]) < 1e-6
    assert _rel(result["error_se"], ref["error_se"]) < 1e-6
    assert _rel(result["brier"], ref["brier"]) < 2e-2
    assert _rel(result["brier_se"], ref["brier_se"]) < 2e-2


def test_cross_validation_keeps_the_model_fixed_and_uses_the_full_fit_proportions():
    X, y = load("iris")
    model = _quiet(genprob.MixtureDiscriminantAnalysis("all", range(1, 4)), X, y)
    folds = _folds(CV["iris_mclustda"])
    result = genprob.cross_validate_model(model, X, y, cv=folds)
    for name in METRICS:  # the fitted model's choice is mclust's: its numbers
        assert _rel(result[name], CV["iris_mclustda"][name]) < 1e-6, name
    # balanced iris folds: every training fold has the full fit's proportions
    own = genprob.cross_validate_model(model, X, y, cv=folds, class_prior="fold")
    np.testing.assert_allclose(own["proba"], result["proba"], rtol=1e-12, atol=1e-300)
    # wine's are not: the fold's own proportions change the posteriors a little
    X, y = load("wine")
    folds, edda = _folds(CV["wine_mclustda"]), genprob.MixtureDiscriminantAnalysis("VVV", 1)
    full = genprob.cross_validate_model(edda, X, y, cv=folds)
    own = genprob.cross_validate_model(edda, X, y, cv=folds, class_prior="fold")
    assert 1e-6 < np.max(np.abs(own["proba"] - full["proba"])) < 0.05
    with pytest.raises(ValueError, match="class_prior must be"):
        genprob.cross_validate_model(model, X, y, class_prior="train")


def test_cross_validation_with_an_int_is_seeded():
    X, y = load("iris")
    model = genprob.MixtureDiscriminantAnalysis("VEV", 1)
    first = genprob.cross_validate_model(model, X, y, cv=5, random_state=3)
    again = genprob.cross_validate_model(model, X, y, cv=5, random_state=3)
    other = genprob.cross_validate_model(model, X, y, cv=5, random_state=4)
    np.testing.assert_array_equal(first["proba"], again["proba"])
    assert not np.array_equal(first["proba"], other["proba"])
    assert not np.isnan(first["proba"]).any()
    assert 0 < first["error"] < 0.1 and 0 < first["brier"] < 0.1
    assert first["error"] == np.mean(first["predicted"] != y)
    # rows as nested lists and as a DataFrame: the same folds, the same numbers
    listed = genprob.cross_validate_model(model, X.tolist(), y, cv=5, random_state=3)
    framed = genprob.cross_validate_model(model, pd.DataFrame(X), y, cv=5, random_state=3)
    np.testing.assert_array_equal(listed["proba"], first["proba"])
    # a frame's columns are laid out otherwise: the same numbers to rounding
    np.testing.assert_allclose(framed["proba"], first["proba"], rtol=1e-9, atol=1e-300)


def test_cross_validation_with_unlabeled_rows_scores_the_labeled_rows_only():
    X, y = load("iris")
    hidden = np.where(np.arange(len(y)) % 2 == 1, -1, y)
    model = genprob.MixtureDiscriminantAnalysis("VEV", 1)
    labeled = np.flatnonzero(hidden >= 0)
    splitter = StratifiedKFold(5, shuffle=True, random_state=0)
    splits = list(splitter.split(labeled[:, None], hidden[labeled]))
    result = genprob.cross_validate_model(model, X, hidden, cv=splits)
    assert np.isnan(result["proba"][hidden == -1]).all()
    assert not np.isnan(result["proba"][labeled]).any()
    assert (result["predicted"][hidden == -1] == -1).all()
    scored = result["predicted"][labeled] != y[labeled]
    assert result["error"] == pytest.approx(scored.mean(), rel=1e-12)
    assert 0 < result["error"] < 0.1
    # the first fold by hand: its labeled training rows and every unlabeled row
    full = clone(model).fit(X, hidden)
    train, test = splits[0]
    rows = np.sort(np.concatenate([labeled[train], np.flatnonzero(hidden == -1)]))
    fold = clone(model).fit(X[rows], hidden[rows])
    joint = fold.predict_joint_log_proba(X[labeled[test]])
    joint = joint - np.log(fold.params_["class_prior"]) + np.log(full.params_["class_prior"])
    expected = np.exp(joint - np.logaddexp.reduce(joint, axis=1, keepdims=True))
    np.testing.assert_allclose(result["proba"][labeled[test]], expected, rtol=1e-12)
