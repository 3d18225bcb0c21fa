"""``MixtureDiscriminantAnalysis.summary()`` against mclust's ``summary(MclustDA)``.

References: tests/references/mclust/mclust_summary.json (make_mclust_summary.R, mclust 6.1.3):
iris MclustDA (14 structures, G 1:3) and wine EDDA over the closed-form structures, on all rows
and trained on half the rows with the other half as ``newdata``; and the wine MclustDA section
of mclust_priors.json (per class log-likelihood, df and BIC).
"""

import json
import math
import warnings

import numpy as np
import pandas as pd
import pytest
from _mclust_data import REFERENCES, load
from sklearn.metrics import brier_score_loss

import genprob
from genprob.estimators._summary import brier_score
from genprob.families.gaussian import mixture

SUMMARY = json.loads((REFERENCES / "mclust_summary.json").read_text())
PRIORS = json.loads((REFERENCES / "mclust_priors.json").read_text())


@pytest.fixture(scope="module")
def iris_mclustda():
    X, y = load("iris")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", mixture.CollapsedComponentWarning)
        model = genprob.MixtureDiscriminantAnalysis("all", n_components=(1, 2, 3)).fit(X, y)
    return X, y, model


def _overall_matches(summary, ref, rel):
    assert summary.n == ref["n"]
    assert summary.df == ref["df"]
    # mclust's EM stops at its own tolerance: ours is at least as high, by at most rel
    assert summary.log_likelihood >= ref["loglik"] - 1e-9 * abs(ref["loglik"])
    assert summary.log_likelihood == pytest.approx(ref["loglik"], rel=rel)
    assert summary.bic == pytest.approx(ref["bic"], rel=rel)


def test_iris_mclustda_summary_is_mclusts(iris_mclustda):
    X, y, model = iris_mclustda
    ref = SUMMARY["iris_mclustda"]
    summary = model.summary(X, y)
    assert summary.type == ref["type"] == "MclustDA"
    _overall_matches(summary, ref, rel=1e-6)
    # the sign: genprob's bic is minus mclust's
    assert summary.bic == pytest.approx(-model.bic(X), rel=1e-12)
    models = summary.models
    for k, cls in enumerate(ref["classes"]):
        row = models.iloc[k]
        assert row["n"] == cls["n"] and row["G"] == cls["G"]
        # one component: every structure is the same fit (mclust names it XXX)
        assert cls["modelName"] == "XXX" if cls["G"] == 1 else row["structure"] == "EEE"
        # mclust's EM stops earlier (class 0: 55.02377 against 55.02399)
        assert row["log_likelihood"] >= cls["loglik"] - 1e-9 * abs(cls["loglik"])
        assert row["log_likelihood"] == pytest.approx(cls["loglik"], rel=1e-5)
        # the class's own BIC, 2 loglik - df log n_k, is the table's chosen cell
        assert row["BIC"] == pytest.approx(
            2 * row["log_likelihood"] - row["df"] * math.log(cls["n"]), rel=1e-12
        )
    assert list(models["df"]) == [19, 14, 14]  # EEE x 2: 1 + 8 + 10; one full Gaussian: 4 + 10
    np.testing.assert_array_equal(summary.confusion.to_numpy(), ref["confusion"])
    assert summary.error == pytest.approx(ref["error"], abs=1e-12)
    assert summary.brier == pytest.approx(ref["brier"], rel=1e-4)
    # the printed numbers, as mclust prints them
    text = str(summary)
    for fragment in ("MclustDA", "-172.8134", "-591.1480", "Classification error = 0.0200"):
        assert fragment in text
    assert f"Brier score          = {ref['brier']:.4f}" in text
    assert repr(summary) == text == summary.text


def test_the_top_of_the_table_is_the_tables_best(iris_mclustda):
    _, _, model = iris_mclustda
    summary = model.summary()
    assert summary.confusion is None and summary.error is None and summary.brier is None
    assert "Confusion" not in summary.text
    top = summary.top
    for k, cls in enumerate(model.classes_):
        block = model.bic_table_.loc[cls]
        best = np.sort(block.to_numpy()[~np.isnan(block.to_numpy())])[::-1][:3]
        mine = top[top["class"] == cls]
        np.testing.assert_allclose(mine["BIC"], best, rtol=0, atol=0)
        first = mine.iloc[0]
        assert (first["structure"], first["G"]) == (model.structure_[k], model.n_components_[k])
        assert block.loc[first["structure"], first["G"]] == first["BIC"]


def test_wine_edda_summary_is_mclusts():
    X, y = load("wine")
    ref = SUMMARY["wine_edda"]
    model = genprob.MixtureDiscriminantAnalysis(ref["modelNames"]).fit(X, y)
    summary = model.summary(X, y)
    assert summary.type == "EDDA"
    _overall_matches(summary, ref, rel=1e-10)  # closed-form M-steps: the same maximum
    assert list(summary.models["structure"]) == [c["modelName"] for c in ref["classes"]]
    assert list(summary.models["n"]) == [c["n"] for c in ref["classes"]]
    # one structure across the classes: no class has a criterion of its own
    assert summary.models["BIC"].isna().all()
    np.testing.assert_array_equal(summary.confusion.to_numpy(), ref["confusion"])
    assert summary.error == pytest.approx(ref["error"], rel=1e-12)
    assert summary.brier == pytest.approx(ref["brier"], rel=1e-6)
    frame = summary.to_frame()
    assert frame.attrs["bic"] == summary.bic and frame.attrs["type"] == "EDDA"
    assert frame["%"].tolist() == [33.15, 39.89, 26.97]  # mclust's percentages


def test_held_out_rows_are_mclusts_newdata():
    X, y = load("wine")
    ref = SUMMARY["wine_edda_half"]
    train = np.arange(len(y)) % 2 == 0
    model = genprob.MixtureDiscriminantAnalysis(ref["modelNames"]).fit(X[train], y[train])
    _overall_matches(model.summary(), ref, rel=1e-10)
    summary = model.summary(X[~train], y[~train])
    np.testing.assert_array_equal(summary.confusion.to_numpy(), ref["test"]["confusion"])
    assert summary.error == pytest.approx(ref["test"]["error"], rel=1e-12)
    assert summary.brier == pytest.approx(ref["test"]["brier"], rel=1e-6)
    assert "Confusion matrix of the 89 labeled rows given" in summary.text


@pytest.mark.slow
def test_wine_mclustda_per_class_numbers_are_mclusts():
    X, y = load("wine")
    ref = PRIORS["wine_mclustda"]["none"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", mixture.CollapsedComponentWarning)
        model = genprob.MixtureDiscriminantAnalysis("all", n_components=range(1, 6)).fit(X, y)
    summary = model.summary(X, y)
    assert summary.df == ref["df"] and summary.n == len(y)
    assert summary.bic >= ref["bic"] - 1e-6  # hc start: at least mclust's (-6877.297)
    assert summary.error == 0 and ref["accuracy"] == 1
    for k, cls in enumerate(ref["classes"]):
        row = summary.models.iloc[k]
        assert (row["structure"], row["G"], row["n"]) == (cls["modelName"], cls["G"], cls["n"])
        assert row["df"] == cls["df"]
        assert row["log_likelihood"] >= cls["loglik"] - 1e-4 * abs(cls["loglik"])
        assert row["BIC"] >= cls["bic"] - 1e-4 * abs(cls["bic"])


def test_brier_score_is_mclusts_definition():
    rng = np.random.default_rng(0)
    proba = rng.dirichlet(np.ones(2), size=40)
    codes = rng.integers(0, 2, size=40)
    # two classes: the mean squared error of the second class's probability (scikit-learn's)
    assert brier_score(proba, np.eye(2)[codes]) == pytest.approx(
        brier_score_loss(codes, proba[:, 1]), rel=1e-12
    )
    three = rng.dirichlet(np.ones(3), size=5)
    onehot = np.eye(3)[[0, 1, 2, 2, 0]]
    by_hand = sum(((three[i] - onehot[i]) ** 2).sum() for i in range(5)) / 10
    # rows rescaled to sum to 1, as mclust's
    assert brier_score(three * 7.0, onehot) == pytest.approx(by_hand, rel=1e-12)


def test_unlabeled_rows_give_mclustssc_and_are_left_out_of_the_confusion():
    X, y = load("iris")
    y_few = y.copy()
    y_few[1::3] = -1
    model = genprob.MixtureDiscriminantAnalysis(["EEE", "VVV"]).fit(X, y_few)
    summary = model.summary(X, y_few)
    assert summary.type == "MclustSSC"
    assert summary.n == 150  # BIC counts every row
    labeled = y_few >= 0
    assert list(summary.models["n"]) == np.bincount(y_few[labeled]).tolist()
    assert int(summary.confusion.to_numpy().sum()) == labeled.sum() == 100
    predicted = model.predict(X[labeled])
    assert summary.error == pytest.approx(np.mean(predicted != y[labeled]), abs=1e-12)
    assert summary.log_likelihood == model.log_likelihood_
    assert summary.bic == pytest.approx(
        2 * model.log_likelihood_ - model.num_parameters() * math.log(150), rel=1e-12
    )


def test_string_labels_and_a_saved_model(tmp_path):
    X, y = load("iris")
    names = np.array(["setosa", "versicolor", "virginica"])[y]
    frame = pd.DataFrame(X, columns=["a", "b", "c", "d"])
    model = genprob.MixtureDiscriminantAnalysis(["EEE", "VVI"], n_components=(1, 2))
    model.fit(frame, names)
    summary = model.summary(frame, names)
    assert list(summary.confusion.index) == list(summary.confusion.columns) == list(names[::50])
    assert summary.confusion.loc["setosa", "setosa"] == 50
    loaded = genprob.load(model.save(tmp_path / "mda.npz"))
    assert loaded.summary(frame, names).text == summary.text


def test_bad_input_is_named():
    X, y = load("iris")
    model = genprob.MixtureDiscriminantAnalysis("EEE").fit(X, y)
    with pytest.raises(ValueError, match="pass both X and y"):
        model.summary(X)
    with pytest.raises(ValueError, match="y has 3 labels for 150 rows"):
        model.summary(X, y[:3])
    with pytest.raises(ValueError, match=r"labels the model does not know: \[7\]"):
        model.summary(X, np.where(y == 2, 7, y))
    with pytest.raises(ValueError, match="no labeled row"):
        model.summary(X[:4], np.full(4, -1))
    streamed = genprob.MixtureDiscriminantAnalysis("EEE")
    streamed.partial_fit(X, y, classes=np.unique(y))
    with pytest.raises(ValueError, match="keeps no criterion table"):
        streamed.summary()
    with pytest.raises(Exception, match="not fitted"):
        genprob.MixtureDiscriminantAnalysis().summary()


def test_cli_fit_mda_prints_the_summary(tmp_path, capsys):
    from genprob.app import cli

    X, y = load("iris")
    frame = pd.DataFrame(X, columns=["a", "b", "c", "d"])
    frame["species"] = np.array(["setosa", "versicolor", "virginica"])[y]
    frame.loc[frame.index % 10 == 1, "species"] = None  # unlabeled rows: left out of the scores
    data = tmp_path / "iris.csv"
    frame.to_csv(data, index=False)
    out = tmp_path / "mda.npz"
    argv = ["fit", "mda", str(data), "--target", "species", "--out", str(out)]
    code = cli.main([*argv, "--param", "structure=EEE,VVV", "--param", "n_components=1"])
    printed = capsys.readouterr().out
    assert code == 0, printed
    model = genprob.load(out)
    labeled = frame["species"].notna().to_numpy()
    expected = model.summary(frame.loc[labeled, ["a", "b", "c", "d"]], frame["species"][labeled])
    assert printed.rstrip().endswith(expected.text)
    assert expected.type == "MclustSSC" and expected.n == 150
    assert "Confusion matrix of the 135 labeled rows given" in printed
    assert f"Brier score          = {expected.brier:.4f}" in printed


def test_a_pinned_refit_summarizes_the_same_models(iris_mclustda):
    from sklearn.base import clone

    X, y, model = iris_mclustda
    pinned = clone(model).set_params(**model.pinned_params()).fit(X, y)
    ours, again = model.summary(X, y), pinned.summary(X, y)
    pd.testing.assert_frame_equal(ours.models, again.models, check_exact=False, rtol=1e-6)
    assert (ours.df, ours.n) == (again.df, again.n)
    assert again.bic == pytest.approx(ours.bic, rel=1e-6)
    # one candidate per class: the top of each class's table is its model alone
    assert len(again.top) == 3 and list(again.top["structure"]) == list(model.structure_)
    pd.testing.assert_frame_equal(ours.confusion, again.confusion)
