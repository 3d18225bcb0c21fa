"""The report's and the posterior helpers' figures read alone: a title naming story, data and
method, a legend for every colour, labeled axes spaced to scale (the matplotlib objects)."""

import numpy as np
import pandas as pd
import pytest
from matplotlib.figure import Figure

import genprob
from genprob.app import report


def _texts(legend):
    return [text.get_text() for text in legend.get_texts()]


def test_boundaries_figure_has_a_class_legend_and_a_title_naming_data_and_method():
    X, y = report.three_gaussians(300, seed=0)
    models = {
        "LDA": genprob.LinearDiscriminantAnalysis().fit(X, y),
        "QDA": genprob.QuadraticDiscriminantAnalysis().fit(X, y),
    }
    figure = report.boundaries_figure(models, X, y, data="the three-Gaussian example")
    title = figure.get_suptitle()
    for word in ("LDA", "QDA", "three-Gaussian example", "maximum-likelihood"):
        assert word in title, title
    (legend,) = figure.legends
    assert _texts(legend) == ["class 0", "class 1", "class 2"]
    # each legend colour is the colour of that class's points
    points = figure.axes[0].collections[-1].get_facecolors()
    for k, patch in enumerate(legend.legend_handles):
        np.testing.assert_allclose(patch.get_facecolor()[:3], points[np.flatnonzero(y == k)[0]][:3])
    assert [ax.get_xlabel() for ax in figure.axes] == ["$x_1$", "$x_1$"]
    assert figure.axes[0].get_ylabel() == "$x_2$"
    named = report.boundaries_figure(models, X, y, class_names=["a", "b", "c"], title="T")
    assert _texts(named.legends[0]) == ["a", "b", "c"] and named.get_suptitle() == "T"


def test_semi_supervised_curve_is_spaced_to_scale_and_labeled():
    fractions = [0.05, 0.2, 1.0]
    curve = pd.DataFrame(
        {
            "fraction": fractions,
            "labeled_only": [0.7, 0.85, 0.95],
            "em": [0.8, 0.9, 0.95],
            "labeled_only_sd": [0.05, 0.03, 0.0],
            "em_sd": [0.04, 0.02, 0.0],
        }
    )
    figure = report.semi_supervised_figure(curve)
    (ax,) = figure.axes
    assert ax.get_xscale() == "log"
    np.testing.assert_allclose(ax.get_xticks(), fractions)
    assert [t.get_text() for t in ax.get_xticklabels()] == ["0.05", "0.2", "1"]
    # to scale: screen distances in the ratio of the log fractions (0.05 -> 0.2 is log 4,
    # 0.2 -> 1 is log 5), not evenly spaced
    figure.canvas.draw()
    x = ax.transData.transform(np.c_[fractions, [0.9] * 3])[:, 0]
    np.testing.assert_allclose((x[1] - x[0]) / (x[2] - x[1]), np.log(4) / np.log(5), rtol=1e-6)
    assert "fraction of training labels" in ax.get_xlabel()
    assert ax.get_ylabel() == "held-out accuracy"
    for word in ("Gaussian NB", "iris", "EM", "labeled rows alone"):
        assert word in ax.get_title(), ax.get_title()
    assert _texts(ax.get_legend()) == ["labeled rows only", "EM with the unlabeled rows"]


@pytest.fixture(scope="module")
def exact_posterior():
    rng = np.random.default_rng(0)
    y = np.array(["ham", "spam"] * 20)
    X = pd.DataFrame(
        (rng.random((40, 2)) < np.where(y[:, None] == "spam", 0.7, 0.3)).astype(float),
        columns=["free", "win"],
    )
    estimator = genprob.BernoulliNB().fit(X, y)
    return estimator.posterior(X, y, method="exact", num_samples=200, random_state=0)


def test_forest_plot_has_an_x_label_a_legend_and_a_title(exact_posterior):
    figure = genprob.plot_forest(exact_posterior, var_names=["probs"])
    assert isinstance(figure, Figure)
    (ax,) = figure.axes
    assert ax.get_xlabel() == "parameter value"
    assert _texts(ax.get_legend()) == ["posterior mean, 94% HDI", "MLE"]
    title = ax.get_title()
    for word in ("BernoulliStory", "40 rows", "exact conjugate posterior", "MLE"):
        assert word in title, title
    assert [t.get_text() for t in ax.get_yticklabels()][0] == "probs[ham, free]"
    named = genprob.plot_forest(exact_posterior, var_names=["probs"], title="spam words")
    assert named.axes[0].get_title() == "spam words"
    assert genprob.plot_forest(exact_posterior, title="").axes[0].get_title() == ""


def test_posterior_vs_mle_has_a_title_axis_labels_and_a_legend(exact_posterior):
    figure = genprob.plot_posterior_vs_mle(exact_posterior, var_names=["class_prior"])
    title = figure.get_suptitle()
    for word in (
        "BernoulliStory",
        "40 rows",
        "exact conjugate posterior",
        "2 chain(s) x 200 draws",
    ):
        assert word in title, title
    assert [ax.get_xlabel() for ax in figure.axes] == ["parameter value"] * 2
    assert figure.get_supylabel() == "posterior density"
    (legend,) = figure.legends
    assert _texts(legend)[0] == "posterior density" and "94% HDI" in _texts(legend)[1]
    assert [ax.get_title() for ax in figure.axes] == ["class_prior[ham]", "class_prior[spam]"]


def test_predictive_vs_plugin_has_a_title(exact_posterior):
    estimator = genprob.BernoulliNB().fit(
        exact_posterior.observed_data["X"].values, exact_posterior.observed_data["y"].values
    )
    figure = genprob.plot_predictive_vs_plugin(estimator, exact_posterior, [[0.0, 1.0]])
    assert "exact conjugate posterior" in figure.get_suptitle()
    assert [ax.get_xlabel() for ax in figure.axes] == ["point", "point"]
    assert figure.axes[0].get_ylabel() == "probability"
