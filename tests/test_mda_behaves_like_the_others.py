"""MixtureDiscriminantAnalysis behaves as the other estimators do (issue 56's examples): extreme
rows refused by name, few-label fits of every structure, EM stopped by max_iter warned, classes
named by their labels, one warning per fit for left-out candidates, and the CLI's numbers the
estimator's."""

import json
import re
import warnings
from pathlib import Path

import numpy as np
import pytest
from sklearn.datasets import load_iris, load_wine
from sklearn.exceptions import ConvergenceWarning
from sklearn.preprocessing import StandardScaler

import genprob
from genprob.families.gaussian import mclust, mixture

REFERENCES = Path(__file__).parent / "references" / "mclust"


@pytest.fixture(scope="module")
def iris():
    return load_iris(return_X_y=True)


@pytest.mark.parametrize("G", [1, 2])
def test_extreme_rows_are_refused_by_name(iris, G):
    X, y = iris
    model = genprob.MixtureDiscriminantAnalysis("VVV", n_components=G).fit(X, y)
    reference = genprob.QuadraticDiscriminantAnalysis().fit(X, y)
    rows = np.vstack([X[:2], np.full((1, 4), 1e160)])
    for method in ("predict_proba", "predict", "predict_log_proba"):
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # no overflow warning on the way to the refusal
            with pytest.raises(ValueError, match=r"row 2 has values too large to score") as a:
                getattr(model, method)(rows)
        with pytest.raises(ValueError) as b:
            getattr(reference, method)(rows)
        assert str(a.value) == str(b.value)  # the same words as QDA's
    assert np.allclose(model.predict_proba(X[:5]).sum(axis=1), 1.0)


def test_em_stopped_by_max_iter_is_warned_once():
    X, y = load_wine(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    X[np.random.default_rng(0).random(X.shape) < 0.1] = np.nan
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model = genprob.MixtureDiscriminantAnalysis("VVV", missing="marginalize", max_iter=5)
        model.fit(X, y)
    assert not model.converged_ and model.n_iter_ == 5
    assert np.diff(model.log_likelihood_trace_).min() > 0  # still rising when stopped
    found = [w for w in caught if issubclass(w.category, ConvergenceWarning)]
    assert len(found) == 1 and "max_iter=5" in str(found[0].message)
    assert found[0].filename == __file__  # points at the caller's fit


def test_per_class_failures_name_the_class_by_its_label(iris):
    X, y = iris
    keep = np.r_[np.flatnonzero(y != 2), np.flatnonzero(y == 2)[:2]]
    labels = np.array(["setosa", "versicolor", "virginica"])[y[keep]]
    with pytest.raises(ValueError) as error:
        genprob.MixtureDiscriminantAnalysis("EII", n_components=3).fit(X[keep], labels)
    text = str(error.value)
    assert text.startswith("class 'virginica': no candidate model could be fitted")
    assert "component 2: 2 labeled rows cannot start 3 components" in text
    assert "setosa" not in text and "class 0" not in text


def test_left_out_candidates_are_one_warning_and_gaps_in_the_table():
    X, y = load_wine(return_X_y=True)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model = genprob.MixtureDiscriminantAnalysis(structure="all", n_components=range(1, 6))
        model.fit(X, y)
    found = [w for w in caught if issubclass(w.category, mixture.CollapsedComponentWarning)]
    gaps = int(model.bic_table_.isna().to_numpy().sum())
    assert gaps > 3 and len(found) == 1
    message = str(found[0].message)
    assert message.startswith(f"{gaps} candidate model(s) left out")
    assert f"and {gaps - 3} more" in message and found[0].filename == __file__
    assert re.search(r"class 0: \w{3} with G=\d \(component \d", message)


def test_cli_fit_prints_the_estimators_numbers(tmp_path, capsys, iris):
    from genprob.app.cli import main

    frame = load_iris(as_frame=True).frame
    data = tmp_path / "iris.csv"
    frame.to_csv(data, index=False)
    args = ["fit", "mda", str(data), "--target", "target", "--param", "n_components=1,2"]
    assert main([*args, "--out", str(tmp_path / "m.npz")]) == 0
    out = capsys.readouterr().out
    loglik = float(re.search(r"log-likelihood: (\S+)", out).group(1))
    bic, aic = map(float, re.search(r"BIC (\S+), AIC (\S+) \(est\.bic\(X, y\)", out).groups())
    X, y = frame.iloc[:, :4], frame["target"]
    model = genprob.MixtureDiscriminantAnalysis(n_components=[1, 2]).fit(X, y)
    np.testing.assert_allclose(loglik, model.log_likelihood(X, y), rtol=1e-5)
    np.testing.assert_allclose(bic, model.bic(X, y), rtol=1e-5)
    np.testing.assert_allclose(aic, model.aic(X, y), rtol=1e-5)
    assert "with the labels, est.log_likelihood(X, y)" in out
    loaded = genprob.load(tmp_path / "m.npz")
    assert loaded.log_likelihood(X, y) == model.log_likelihood(X, y)


def _few_labels():
    table = np.loadtxt(REFERENCES / "wine_scaled_few.csv", delimiter=",", skiprows=1)
    return table[:, :-2], table[:, -2].astype(int), table[:, -1].astype(int)


@pytest.mark.parametrize(
    "structure",
    [
        pytest.param(s, marks=pytest.mark.slow) if s in ("EVE", "VVE") else s
        for s in mclust.STRUCTURES
    ],
)
def test_few_labels_fit_every_structure_mclustssc_fits(structure):
    """Standardized wine, 4 labels a class: the labeled rows alone identify no full covariance
    (12 rows, 13 features); EM starts from every row (mixture.STARTS), the better start kept."""
    X, few, truth = _few_labels()
    ref = json.loads((REFERENCES / "ssc_few_labels.json").read_text())["fits"][structure]
    if not ref["fitted"]:
        pytest.skip(f"mclust's MclustSSC does not fit {structure} here either")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model = genprob.MixtureDiscriminantAnalysis(structure, n_components=1).fit(X, few)
    assert model.log_likelihood_ >= ref["loglik"] - 1e-6 * abs(ref["loglik"])
    assert np.all(np.diff(model.log_likelihood_trace_) >= -1e-9 * abs(ref["loglik"]))
    assert np.mean(model.predict(X) == truth) >= 0.9


@pytest.fixture(scope="module")
def digits_few():
    """PCA-10 (whitened) digits with 3 labeled rows a class (issue 56's few-label example)."""
    from sklearn.datasets import load_digits
    from sklearn.decomposition import PCA

    X, y = load_digits(return_X_y=True)
    X = PCA(10, whiten=True, random_state=0).fit_transform(X)
    rng = np.random.default_rng(0)
    partly = np.full_like(y, -1)
    for k in range(10):
        partly[rng.choice(np.flatnonzero(y == k), 3, replace=False)] = k
    return X, y, partly


@pytest.mark.parametrize(("structure", "G"), [("EEE", 1), ("VVV", 1), ("EEE", [1, 2])])
def test_few_labels_on_digits_fit_every_start_and_range(digits_few, structure, G):
    """Both raised "group 0 has a singular covariance" for VVV and the range: a start from every
    row that collapsed stopped the next one (mixture.STARTS are now tried in turn)."""
    X, y, partly = digits_few
    test = partly < 0
    lda = genprob.LinearDiscriminantAnalysis().fit(X, partly)
    lda_accuracy = np.mean(lda.predict(X[test]) == y[test])
    assert lda_accuracy >= 0.828
    with warnings.catch_warnings():
        warnings.simplefilter("error", mixture.CollapsedComponentWarning)
        warnings.simplefilter("ignore", ConvergenceWarning)
        model = genprob.MixtureDiscriminantAnalysis(structure=structure, n_components=G)
        model.fit(X, partly)
    accuracy = np.mean(model.predict(X[test]) == y[test])
    assert accuracy >= (lda_accuracy - 1e-9 if (structure, G) == ("EEE", 1) else 0.85)
    assert np.isfinite(model.bic_table_.to_numpy()).all()


def test_a_range_starts_from_the_one_component_fit_split():
    """Wine, 4 labels a class: VVV with G=2 collapsed from every start of its own (left out of
    the table); started from the one-component fit split (mixture.split_start) it fits."""
    X, few, truth = _few_labels()
    with warnings.catch_warnings():
        warnings.simplefilter("error", mixture.CollapsedComponentWarning)
        warnings.simplefilter("ignore", ConvergenceWarning)
        model = genprob.MixtureDiscriminantAnalysis("VVV", n_components=[1, 2]).fit(X, few)
    bic = model.bic_table_.to_numpy()
    assert np.isfinite(bic).all() and bic[0, 0] > bic[0, 1]
    assert np.mean(model.predict(X) == truth) >= 0.94
