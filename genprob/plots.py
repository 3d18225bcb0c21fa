"""Figures of a fitted ``MixtureDiscriminantAnalysis``, as R mclust draws them: the BIC table
(``plot(mclustBIC)``), the classification and the uncertainty of rows (``plot.MclustDA``,
``uncertainty``). Each returns a ``matplotlib.figure.Figure`` made without pyplot (no GUI
state), or draws into the ``ax=`` given; matplotlib is imported when a figure is drawn."""

from __future__ import annotations

import numpy as np

__all__ = ["plot_bic", "plot_classification", "plot_uncertainty", "uncertainty"]

#: marker areas (points^2) of an uncertainty of 0 and of the largest possible, 1 - 1/K
UNCERTAINTY_SIZES = (4.0, 160.0)


def _new_axes(ax, width: float, height: float, panels: int = 1):
    """``(figure, [axes])``: the ``ax`` given (an Axes, or a sequence of ``panels``), else a new
    Figure of ``panels`` side by side."""
    if ax is None:
        from matplotlib.figure import Figure  # no pyplot state; imported when drawn

        figure = Figure(figsize=(width, height), layout="constrained")
        return figure, list(figure.subplots(1, panels, squeeze=False)[0])
    axes = list(np.ravel(np.asarray(ax, dtype=object)))
    if len(axes) != panels:
        raise ValueError(f"ax: {panels} Axes needed (one per panel), got {len(axes)}.")
    return axes[0].figure, axes


def plot_bic(model, criterion: str = "bic", *, ax=None, title: str | None = None, suptitle=None):
    """mclust's BIC plot: a line per structure over the numbers of components G, a panel per
    class when each class chose its own model (MclustDA); a collapsed candidate is a gap.

    Args:
        model: a fitted ``MixtureDiscriminantAnalysis``.
        criterion: ``"bic"`` (``bic_table_``) or ``"icl"`` (``icl_table_``), mclust's sign
            (``2 log L - df log n``, larger is better).
        ax: an Axes to draw into (a sequence of one per class for a per-class table).
        title: the single panel's title (default: the criterion's name).
        suptitle: a title over the figure.

    Returns:
        The ``matplotlib.figure.Figure``.
    """
    import matplotlib as mpl

    if criterion not in ("bic", "icl"):
        raise ValueError(f"criterion must be 'bic' or 'icl', got {criterion!r}.")
    table = model.bic_table_ if criterion == "bic" else model.icl_table_
    name = criterion.upper()
    panels = (
        [(f"class {c}", table.loc[c]) for c in table.index.get_level_values(0).unique()]
        if table.index.nlevels == 2
        else [(None, table)]
    )
    figure, axes = _new_axes(ax, 3.4 * len(panels) + 1.4, 3.4, len(panels))
    colors = mpl.colormaps["tab20"]
    for axis, (panel, block) in zip(axes, panels, strict=True):
        G = np.asarray(block.columns, dtype=int)
        for i, (structure, row) in enumerate(block.iterrows()):
            style = "-o" if len(G) > 1 else "o"
            axis.plot(
                G, row.to_numpy(dtype=float), style, ms=3.5, color=colors(i % 20), label=structure
            )
        axis.set(xlabel="components per class (G)", xticks=G, title=panel or title or name)
    axes[0].set_ylabel(f"{name} (2 log L - df log n, larger is better)")
    axes[-1].legend(fontsize=7, ncol=1, loc="center left", bbox_to_anchor=(1.0, 0.5))
    if suptitle:
        figure.suptitle(suptitle, fontsize=9)
    return figure


def uncertainty(model, X) -> np.ndarray:
    """mclust's uncertainty of each row: ``1 - max_k p(k | x)``, from 0 to ``1 - 1/K``."""
    return 1.0 - np.max(model.predict_proba(X), axis=1)


def _coordinates(model, X, dims):
    """The two columns ``dims`` of ``X`` (indices, or names of ``feature_names_in_``) and their
    axis labels."""
    names = getattr(model, "feature_names_in_", None)
    columns = np.asarray(X, dtype=np.float64)
    if columns.ndim != 2:
        raise ValueError(f"X must be a 2-d table of rows, got shape {columns.shape}.")
    D = columns.shape[1]
    picked = []
    for d in tuple(dims):
        if isinstance(d, str) and names is not None and d in list(names):
            d = list(names).index(d)
        if isinstance(d, bool) or not isinstance(d, int | np.integer) or not -D <= d < D:
            raise ValueError(
                f"dims must be two column indices in 0..{D - 1} (or feature names), got {dims!r}."
            )
        picked.append(int(d) % D)
    if len(picked) != 2 or picked[0] == picked[1]:
        raise ValueError(f"dims must name two different columns, got {dims!r}.")
    labels = [str(names[d]) if names is not None else f"x{d}" for d in picked]
    return columns[:, picked], labels


def _class_colors(K: int):
    import matplotlib as mpl

    colors = mpl.colormaps["tab10" if K <= 10 else "tab20"]
    return [colors(k % colors.N) for k in range(K)]


def plot_classification(model, X, dims=(0, 1), *, ax=None, title: str | None = None):
    """mclust's ``plot.MclustDA(what = "classification")``: the rows of ``X`` on two of their
    columns, a marker and color per predicted class (a collection per class, labeled by it).

    Args:
        model: a fitted classifier with ``predict_proba`` and ``classes_``.
        X: the rows (n, D).
        dims: the two columns shown, indices (or names of ``feature_names_in_``).
        ax: an Axes to draw into.
        title: the panel's title.

    Returns:
        The ``matplotlib.figure.Figure``.
    """
    points, labels = _coordinates(model, X, dims)
    predicted = np.argmax(model.predict_proba(X), axis=1)
    figure, (axis,) = _new_axes(ax, 4.6, 3.8)
    markers = "os^Dv<>ph*"
    colors = _class_colors(len(model.classes_))
    for k, cls in enumerate(model.classes_):
        rows = predicted == k
        axis.scatter(
            points[rows, 0],
            points[rows, 1],
            s=14,
            marker=markers[k % len(markers)],
            color=colors[k],
            label=str(cls),
        )
    axis.set(xlabel=labels[0], ylabel=labels[1], title=title or "classification")
    axis.legend(title="predicted class", fontsize=7)
    return figure


def plot_uncertainty(model, X, dims=(0, 1), *, ax=None, title: str | None = None):
    """mclust's uncertainty plot: the rows of ``X`` on two of their columns, each marker's area
    growing with the row's uncertainty ``1 - max_k p(k | x)`` (:func:`uncertainty`, from
    ``UNCERTAINTY_SIZES[0]`` at 0 to ``UNCERTAINTY_SIZES[1]`` at ``1 - 1/K``), colored by the
    predicted class; one collection, the rows in their order.

    Args:
        model: a fitted classifier with ``predict_proba`` and ``classes_``.
        X: the rows (n, D).
        dims: the two columns shown, indices (or names of ``feature_names_in_``).
        ax: an Axes to draw into.
        title: the panel's title.

    Returns:
        The ``matplotlib.figure.Figure``.
    """
    from matplotlib.lines import Line2D

    points, labels = _coordinates(model, X, dims)
    proba = model.predict_proba(X)
    K = proba.shape[1]
    u = 1.0 - proba.max(axis=1)
    # scaled by the largest possible uncertainty, so that figures of one K compare
    small, large = UNCERTAINTY_SIZES
    sizes = small + (large - small) * np.clip(u / (1.0 - 1.0 / K), 0.0, 1.0)
    colors = _class_colors(K)
    figure, (axis,) = _new_axes(ax, 4.6, 3.8)
    axis.scatter(
        points[:, 0],
        points[:, 1],
        s=sizes,
        c=[colors[k] for k in proba.argmax(axis=1)],
        alpha=0.6,
        edgecolors="none",
    )
    handles = [
        Line2D([], [], ls="", marker="o", color=colors[k], label=str(c))
        for k, c in enumerate(model.classes_)
    ]
    axis.legend(handles=handles, title="predicted class", fontsize=7)
    axis.set(
        xlabel=labels[0],
        ylabel=labels[1],
        title=title or f"uncertainty 1 - max p(k | x) (largest {u.max():.3g})",
    )
    return figure
