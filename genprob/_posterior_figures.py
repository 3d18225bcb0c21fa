"""Posterior-vs-MLE figures drawn with matplotlib alone, so ArviZ 0.x and 1.x give the same figure.

ArviZ 1.x replaced ``plot_posterior``/``plot_forest`` by ``arviz-plots`` functions with other
names and arguments; drawing the few marks genprob needs (density, HDI, MLE line, forest rows)
directly keeps one figure for both majors. The numbers come from :mod:`genprob._arviz_compat`.
"""

from __future__ import annotations

import numpy as np

from genprob import _arviz_compat as compat

#: ArviZ's default cap on the panels of one figure.
MAX_PANELS = 40


def _entries(posterior, mle, names):
    """``(label, draws (chain*draw,), mle value or None)`` for every scalar entry of ``names``."""
    for name in names:
        values = posterior[name]
        dims = [d for d in values.dims if d not in ("chain", "draw")]
        draws = values.transpose("chain", "draw", *dims).values
        draws = draws.reshape((-1,) + draws.shape[2:])
        point = None if mle is None else mle[name].transpose(*dims).values
        for index in np.ndindex(draws.shape[1:]):
            parts = [str(values.coords[d].values[i]) for d, i in zip(dims, index, strict=True)]
            label = f"{name}[{', '.join(parts)}]" if parts else name
            value = None if point is None else float(point[index])
            yield label, draws[(slice(None),) + index], value


def _density(ax, sample, color):
    """Gaussian-kernel density of ``sample``; a constant sample is drawn as a spike."""
    from scipy.stats import gaussian_kde

    low, high = float(sample.min()), float(sample.max())
    if not high > low:
        ax.axvline(low, color=color)
        return 1.0
    grid = np.linspace(low, high, 256)
    try:
        height = gaussian_kde(sample)(grid)
    except np.linalg.LinAlgError:  # a sample with (numerically) no spread
        ax.axvline(low, color=color)
        return 1.0
    ax.plot(grid, height, color=color)
    return float(height.max())


def posterior_vs_mle(
    idata, names, hdi_prob, *, figsize=None, textsize=None, columns=3, max_panels=MAX_PANELS
):
    """One panel per scalar entry: density, HDI bar with its bounds, MLE line with the mass on
    each side (the layout of ArviZ 0.x's ``plot_posterior`` with ``ref_val``).

    Returns:
        ``matplotlib.figure.Figure`` (created without pyplot).
    """
    from matplotlib.figure import Figure

    posterior = compat.get_group(idata, "posterior")[names]
    mle = compat.get_group(idata, "mle")
    entries = list(_entries(posterior, mle, names))[:max_panels]
    intervals = compat.hdi(posterior, hdi_prob)
    columns = max(1, min(columns, len(entries)))
    rows = -(-len(entries) // columns)
    figure = Figure(figsize=figsize or (4.3 * columns, 2.8 * rows), layout="constrained")
    axes = np.atleast_1d(figure.subplots(rows, columns, squeeze=False)).ravel()
    flat_bounds = []
    for name in names:
        bounds = intervals[name]
        dims = [d for d in bounds.dims if d != compat.HDI_DIM]
        flat_bounds.extend(bounds.transpose(*dims, compat.HDI_DIM).values.reshape(-1, 2))
    fontsize = textsize
    for ax, (label, sample, value), (lower, upper) in zip(axes, entries, flat_bounds, strict=False):
        top = _density(ax, sample, "C0")
        ax.plot([lower, upper], [0.0, 0.0], color="k", linewidth=4, solid_capstyle="butt")
        ax.text(lower, 0.05 * top, f"{lower:.3g}", ha="center", fontsize=fontsize)
        ax.text(upper, 0.05 * top, f"{upper:.3g}", ha="center", fontsize=fontsize)
        ax.text(
            (lower + upper) / 2,
            0.15 * top,
            f"{100 * hdi_prob:g}% HDI",
            ha="center",
            fontsize=fontsize,
        )
        below = 100 * float(np.mean(sample < value))
        ax.axvline(value, color="C3", linestyle="--")
        ax.text(
            value,
            1.04 * top,
            f"{below:.1f}% < MLE {value:.3g} < {100 - below:.1f}%",
            color="C3",
            ha="center",
            va="bottom",
            fontsize=fontsize,
            bbox={"facecolor": "white", "edgecolor": "none", "alpha": 0.85, "pad": 1},
        )
        ax.set_ylim(-0.05 * top, 1.25 * top)  # room for the MLE label above the density
        ax.set_title(label, fontsize=fontsize)
        ax.set_yticks([])
        ax.tick_params(labelsize=fontsize)
    for ax in axes[len(entries) :]:
        ax.set_visible(False)
    return figure


def forest(idata, names, hdi_prob, *, figsize=None, textsize=None):
    """Forest of posterior HDIs (bar, mean as a dot) with the MLE as a second marker per row.

    Returns:
        ``matplotlib.figure.Figure`` (created without pyplot).
    """
    from matplotlib.figure import Figure

    posterior = compat.get_group(idata, "posterior")[names]
    mle = compat.get_group(idata, "mle") if compat.has_group(idata, "mle") else None
    entries = list(_entries(posterior, mle, names))
    intervals = compat.hdi(posterior, hdi_prob)
    bounds = []
    for name in names:
        values = intervals[name]
        dims = [d for d in values.dims if d != compat.HDI_DIM]
        bounds.extend(values.transpose(*dims, compat.HDI_DIM).values.reshape(-1, 2))
    height = max(2.0, 0.35 * len(entries) + 1.0)
    figure = Figure(figsize=figsize or (7.0, height), layout="tight")
    ax = figure.subplots()
    rows = np.arange(len(entries))[::-1]
    for row, (_, sample, value), (lower, upper) in zip(rows, entries, bounds, strict=True):
        ax.plot([lower, upper], [row, row], color="C0", linewidth=2)
        ax.plot([float(np.mean(sample))], [row], "o", color="C0")
        if value is not None:
            ax.plot([value], [row - 0.2], "D", color="C3")
    ax.plot([], [], "o-", color="C0", label=f"posterior mean, {100 * hdi_prob:g}% HDI")
    if mle is not None:
        ax.plot([], [], "D", color="C3", label="MLE")
    ax.set_yticks(rows, [label for label, _, _ in entries], fontsize=textsize)
    ax.tick_params(axis="x", labelsize=textsize)
    ax.legend(loc="best", fontsize="small")
    return figure
