"""``genprob.plots``: the artists hold the model's numbers (BIC lines, scatter offsets, marker
sizes by uncertainty), drawn without pyplot on the Agg backend."""

import subprocess
import sys
import warnings

import matplotlib
import numpy as np
import pytest

import genprob
from genprob import plots
from genprob.families.gaussian import mixture

matplotlib.use("Agg")


@pytest.fixture(scope="module")
def iris_fit():
    X, y = genprob.datasets.load_iris()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", mixture.CollapsedComponentWarning)
        model = genprob.MixtureDiscriminantAnalysis(["EII", "EEE", "VVV"], n_components=(1, 2, 3))
        model.fit(X, y)
    return X, y, model


def test_bic_lines_are_the_table(iris_fit):
    _, _, model = iris_fit
    figure = plots.plot_bic(model)
    table = model.bic_table_
    assert len(figure.axes) == 3  # a panel per class (MclustDA)
    for ax, cls in zip(figure.axes, model.classes_, strict=True):
        assert ax.get_title() == f"class {cls}"
        lines = {line.get_label(): line for line in ax.get_lines()}
        assert set(lines) == {"EII", "EEE", "VVV"}
        for structure, line in lines.items():
            np.testing.assert_array_equal(line.get_xdata(), [1, 2, 3])
            np.testing.assert_array_equal(line.get_ydata(), table.loc[(cls, structure)].to_numpy())
    icl = plots.plot_bic(model, "icl")
    line = icl.axes[0].get_lines()[1]
    np.testing.assert_array_equal(line.get_ydata(), model.icl_table_.loc[(0, "EEE")].to_numpy())
    assert "ICL" in icl.axes[0].get_ylabel()


def test_bic_of_one_structure_across_classes_and_into_given_axes():
    from matplotlib.figure import Figure

    X, y = genprob.datasets.load_wine()
    model = genprob.MixtureDiscriminantAnalysis(["EII", "VVI", "EEE"]).fit(X, y)
    figure = Figure()
    ax = figure.add_subplot()
    assert plots.plot_bic(model, ax=ax, title="wine EDDA") is figure
    assert ax.get_title() == "wine EDDA"
    points = {line.get_label(): line.get_ydata() for line in ax.get_lines()}
    assert {k: v[0] for k, v in points.items()} == model.bic_table_[1].to_dict()
    with pytest.raises(ValueError, match="ax: 3 Axes needed"):
        iris = genprob.datasets.load_iris()
        mda = genprob.MixtureDiscriminantAnalysis("EEE", n_components=(1, 2)).fit(*iris)
        plots.plot_bic(mda, ax=ax)
    with pytest.raises(ValueError, match="criterion must be 'bic' or 'icl'"):
        plots.plot_bic(model, "aic")


def test_classification_points_are_the_rows_by_predicted_class(iris_fit):
    X, _, model = iris_fit
    figure = plots.plot_classification(model, X, dims=(2, 3))
    (ax,) = figure.axes
    predicted = model.predict(X)
    collections = ax.collections
    assert [c.get_label() for c in collections] == [str(c) for c in model.classes_]
    for cls, collection in zip(model.classes_, collections, strict=True):
        np.testing.assert_array_equal(collection.get_offsets(), X[predicted == cls][:, [2, 3]])
    assert sum(len(c.get_offsets()) for c in collections) == len(X)
    assert (ax.get_xlabel(), ax.get_ylabel()) == ("x2", "x3")


def test_uncertainty_sizes_grow_with_uncertainty(iris_fit):
    X, _, model = iris_fit
    figure = plots.plot_uncertainty(model, X, dims=(0, 1))
    (collection,) = figure.axes[0].collections
    np.testing.assert_array_equal(collection.get_offsets(), X[:, [0, 1]])
    u = plots.uncertainty(model, X)
    np.testing.assert_allclose(u, 1 - model.predict_proba(X).max(axis=1), rtol=0, atol=0)
    sizes = collection.get_sizes()
    order = np.argsort(u, kind="stable")
    assert np.all(np.diff(sizes[order]) >= 0)  # monotone in uncertainty
    assert np.ptp(u) > 0.1 and sizes[np.argmax(u)] > 5 * sizes[np.argmin(u)]
    small, large = plots.UNCERTAINTY_SIZES
    # the scale: UNCERTAINTY_SIZES at 0 and at the largest possible uncertainty 1 - 1/K
    np.testing.assert_allclose(sizes, small + (large - small) * u / (2 / 3), rtol=1e-12)
    colors = collection.get_facecolors()[:, :3]
    predicted = model.predict_proba(X).argmax(axis=1)
    for k in range(3):  # one color per predicted class
        assert len(np.unique(colors[predicted == k], axis=0)) == 1


def test_feature_names_label_the_axes_and_bad_dims_are_named():
    import pandas as pd

    X, y = genprob.datasets.load_iris()
    frame = pd.DataFrame(X, columns=["sl", "sw", "pl", "pw"])
    model = genprob.MixtureDiscriminantAnalysis("EEE").fit(frame, y)
    ax = plots.plot_uncertainty(model, frame, dims=("pl", "pw")).axes[0]
    assert (ax.get_xlabel(), ax.get_ylabel()) == ("pl", "pw")
    np.testing.assert_array_equal(ax.collections[0].get_offsets(), X[:, [2, 3]])
    for dims in [(0, 0), (0, 4), (0,), ("pl", "nope"), (0.5, 1)]:
        with pytest.raises(ValueError, match="dims"):
            plots.plot_classification(model, frame, dims=dims)


def test_the_report_draws_bic_with_plot_bic_and_matplotlib_is_imported_lazily():
    from genprob.app import report

    assert not hasattr(report, "bic_figure")  # one implementation: genprob.plots.plot_bic
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys, genprob.plots; print('matplotlib' in sys.modules)",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    assert done.stdout.split() == ["False"]
