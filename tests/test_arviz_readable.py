"""Readable comparison output: distinct entries once, labeled MLE, panel limit and selection."""

import jax
import numpy as np
import pandas as pd
import pytest
from matplotlib.figure import Figure

import genprob
from genprob.datasets import load_iris

pytestmark = pytest.mark.arviz

SPECIES = np.array(["setosa", "versicolor", "virginica"])
FEATURES = ["sepal_length", "sepal_width", "petal_length", "petal_width"]


@pytest.fixture(scope="module")
def qda_iris():
    """QDA on iris and 2 x 200 draws around its fit (covariances kept symmetric)."""
    X, y = load_iris()
    frame = pd.DataFrame(X, columns=FEATURES)
    estimator = genprob.QuadraticDiscriminantAnalysis().fit(frame, SPECIES[y])
    rng = np.random.default_rng(0)
    draws = {}
    for name, value in estimator.params_.items():
        noise = 0.01 * rng.standard_normal((2, 200) + value.shape)
        if name == "covariance":
            noise = noise + np.swapaxes(noise, -1, -2)
        if name == "class_prior":
            noise = noise - noise.mean(-1, keepdims=True)
        draws[name] = value + noise * np.maximum(np.abs(value), 0.1)
    with jax.enable_x64(True):
        idata = genprob.to_arviz(
            draws,
            estimator.story_,
            X,
            y,
            mle=estimator.params_,
            classes=list(SPECIES),
            feature_names=FEATURES,
        )
    return estimator, idata


def test_symmetric_entries_are_listed_once(qda_iris):
    estimator, idata = qda_iris
    table = genprob.mle_vs_posterior_table(idata)
    # 3 priors + 3 x 4 means + 3 x 10 distinct covariance entries (of 3 x 16 listed before)
    assert len(table) == 45
    covariance = table[table["parameter"].str.startswith("covariance")]
    assert len(covariance) == 30
    assert "covariance[setosa, sepal_length, sepal_width]" in set(covariance["parameter"])
    assert "covariance[setosa, sepal_width, sepal_length]" not in set(covariance["parameter"])
    # the upper triangle, row by row, with the estimator's covariance as MLE
    rows, columns = np.triu_indices(4)
    expected = np.concatenate([estimator.params_["covariance"][k][rows, columns] for k in range(3)])
    np.testing.assert_array_equal(covariance["mle"].to_numpy(), expected)
    # "MLE in HDI" counts each free parameter once
    inside = (table["hdi_3%"] <= table["mle"]) & (table["mle"] <= table["hdi_97%"])
    assert int(table["mle_in_hdi"].sum()) == int(inside.sum())
    # a non-symmetric selection keeps every entry (no entry's mirror image is in it)
    part = genprob.mle_vs_posterior_table(
        idata,
        var_names=["covariance"],
        coords={"class": "setosa", "feature": ["sepal_length"], "feature2": FEATURES},
    )
    assert len(part) == 4
    assert part["parameter"].iloc[1] == "covariance[setosa, sepal_length, sepal_width]"


def test_figure_panel_limit_and_selection(qda_iris):
    _, idata = qda_iris
    with pytest.raises(ValueError, match=r"45 panels selected .* at most 12") as error:
        genprob.plot_posterior_vs_mle(idata)
    message = str(error.value)
    assert "var_names" in message and "coords={'class': ['setosa']}" in message
    assert "virginica" in message and "petal_width" in message
    figure = genprob.plot_posterior_vs_mle(
        idata, var_names=["covariance"], coords={"class": ["virginica"]}
    )
    assert isinstance(figure, Figure)
    axes = [ax for ax in figure.axes if ax.get_visible()]
    assert len(axes) == 10
    assert axes[1].get_title() == "covariance[virginica, sepal_length, sepal_width]"
    # one legend for the figure, naming the MLE line
    (legend,) = figure.legends
    texts = [text.get_text() for text in legend.get_texts()]
    assert texts[0] == "posterior density" and texts[1] == "94% HDI"
    assert texts[2].startswith("MLE")
    # the mass label sits inside its axes, under the title
    for ax in axes:
        (label,) = [t for t in ax.texts if "< MLE" in t.get_text()]
        assert label.get_transform() == ax.transAxes and label.get_position()[1] < 1.0
    # max_panels opts in to more
    figure = genprob.plot_posterior_vs_mle(idata, var_names=["covariance"], max_panels=30)
    assert len([ax for ax in figure.axes if ax.get_visible()]) == 30
    forest = genprob.plot_forest(idata, var_names=["covariance"], coords={"class": "setosa"})
    assert len(forest.axes[0].get_yticklabels()) == 10


def test_selection_errors_name_the_options(qda_iris):
    _, idata = qda_iris
    with pytest.raises(ValueError, match=r"coords name dims \['species'\].*'class'"):
        genprob.mle_vs_posterior_table(idata, coords={"species": ["setosa"]})
    with pytest.raises(ValueError, match="unknown labels"):
        genprob.mle_vs_posterior_table(idata, coords={"class": ["rose"]})
    with pytest.raises(ValueError, match=r"labels\['class'\] has 2 names for 3"):
        genprob.mle_vs_posterior_table(idata, labels={"class": ["a", "b"]})


def test_labels_name_categories():
    rng = np.random.default_rng(5)
    codes = pd.DataFrame({"island": rng.integers(0, 3, 60)})
    y = np.repeat(["Adelie", "Gentoo"], 30)
    estimator = genprob.CategoricalNB(alpha=1.0).fit(codes, y)
    exact = estimator.posterior(codes, y, method="exact", num_samples=200, random_state=0)
    islands = ["Biscoe", "Dream", "Torgersen"]
    table = genprob.mle_vs_posterior_table(exact, labels={"category": islands})
    assert table["parameter"].iloc[2] == "probs[Adelie, island, Biscoe]"
    figure = genprob.plot_posterior_vs_mle(exact, var_names=["probs"], labels={"category": islands})
    titles = [ax.get_title() for ax in figure.axes if ax.get_visible()]
    assert titles[:3] == [f"probs[Adelie, island, {name}]" for name in islands]
