"""Posterior-vs-MLE figures drawn with matplotlib alone, so ArviZ 0.x and 1.x give the same figure
(docs/reference/arviz_io.md)."""

from __future__ import annotations

import numpy as np

from genprob.io import _arviz_compat as compat

#: Most panels of one posterior-vs-MLE figure (select with ``var_names`` / ``coords``).
MAX_PANELS = 12


def _symmetric_pairs(values, point, dims) -> list:
    """Axis pairs ``(d, d + "2")`` of ``dims`` on which the parameter is a symmetric matrix."""
    pairs = []
    for i, dim in enumerate(dims):
        twin = dim + "2"
        if twin not in dims:
            continue
        j = dims.index(twin)
        if list(values.coords[dim].values) != list(values.coords[twin].values):
            continue  # a selection made the two axes differ: no entry has its mirror image
        reference = point if point is not None else values.mean(("chain", "draw")).values
        if np.allclose(reference, np.swapaxes(reference, i, j), rtol=1e-10, atol=0.0):
            pairs.append((i, j))
    return pairs


def distinct_entries(posterior, mle, names):
    """``(name, dims, index, label, mle value or None)`` for every distinct scalar entry (of a
    symmetric matrix, row <= column); ``dims`` exclude ``chain`` and ``draw``."""
    for name in names:
        values = posterior[name]
        dims = [d for d in values.dims if d not in ("chain", "draw")]
        point = None if mle is None else mle[name].transpose(*dims).values
        shape = tuple(values.sizes[d] for d in dims)
        pairs = _symmetric_pairs(values, point, dims)
        for index in np.ndindex(shape):
            if any(index[i] > index[j] for i, j in pairs):
                continue
            parts = [str(values.coords[d].values[i]) for d, i in zip(dims, index, strict=True)]
            label = f"{name}[{', '.join(parts)}]" if parts else name
            value = None if point is None else float(point[index])
            yield name, dims, index, label, value


def _entries(posterior, mle, names, hdi_prob):
    """``(label, draws (chain*draw,), mle value or None, HDI (lower, upper))`` of every distinct
    scalar entry."""
    intervals = compat.hdi(posterior[names], hdi_prob)
    for name, dims, index, label, value in distinct_entries(posterior, mle, names):
        draws = posterior[name].transpose("chain", "draw", *dims).values
        bounds = intervals[name].transpose(*dims, compat.HDI_DIM).values[index]
        yield label, draws.reshape((-1,) + draws.shape[2:])[(slice(None),) + index], value, bounds


def _too_many_panels(count, max_panels, posterior, names) -> ValueError:
    dims = {}
    for name in names:
        for dim in posterior[name].dims:
            if dim not in ("chain", "draw") and not dim.endswith("2"):
                dims.setdefault(dim, [str(v) for v in posterior[name].coords[dim].values])
    listed = "; ".join(
        f"{d}: {', '.join(v[:6])}{', ...' if len(v) > 6 else ''}" for d, v in dims.items()
    )
    example = next(iter(dims.items()), None)
    hint = f", e.g. coords={{{example[0]!r}: [{example[1][0]!r}]}}" if example else ""
    return ValueError(
        f"{count} panels selected ({', '.join(names)}); a figure holds at most {max_panels}. "
        f"Select fewer with var_names=[...] (parameters: {', '.join(posterior.data_vars)}) "
        f"and/or coords={{dim: [labels]}}{hint} (dims: {listed}), or pass max_panels."
    )


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
    posterior,
    mle,
    names,
    hdi_prob,
    *,
    figsize=None,
    textsize=None,
    columns=3,
    max_panels=MAX_PANELS,
    title=None,
):
    """A ``matplotlib.figure.Figure`` (without pyplot), one panel per distinct scalar entry:
    density, HDI bar, MLE line with the posterior mass on each side; ValueError past
    ``max_panels`` entries, saying how to select fewer."""
    from matplotlib.figure import Figure
    from matplotlib.lines import Line2D

    entries = list(_entries(posterior, mle, names, hdi_prob))
    if len(entries) > max_panels:
        raise _too_many_panels(len(entries), max_panels, posterior, names)
    columns = max(1, min(columns, len(entries)))
    rows = -(-len(entries) // columns)
    figure = Figure(figsize=figsize or (4.3 * columns, 2.6 * rows + 0.6), layout="constrained")
    axes = np.atleast_1d(figure.subplots(rows, columns, squeeze=False)).ravel()
    for ax, (label, sample, value, (lower, upper)) in zip(axes, entries, strict=False):
        top = _density(ax, sample, "C0")
        ax.plot([lower, upper], [0.0, 0.0], color="k", linewidth=4, solid_capstyle="butt")
        ax.text(lower, 0.05 * top, f"{lower:.3g}", ha="center", fontsize=textsize)
        ax.text(upper, 0.05 * top, f"{upper:.3g}", ha="center", fontsize=textsize)
        below = 100 * float(np.mean(sample < value))
        ax.axvline(value, color="C3", linestyle="--")
        # inside the axes (axes coordinates), so that it cannot run into the title or a neighbour
        ax.text(
            0.5,
            0.97,
            f"{below:.1f}% < MLE {value:.3g} < {100 - below:.1f}%",
            transform=ax.transAxes,
            color="C3",
            ha="center",
            va="top",
            fontsize=textsize,
            bbox={"facecolor": "white", "edgecolor": "none", "alpha": 0.85, "pad": 1},
        )
        ax.set_ylim(-0.05 * top, 1.3 * top)  # room for the mass label above the density
        ax.set_title(label, fontsize=textsize)
        ax.set_xlabel("parameter value", fontsize=textsize)
        ax.set_yticks([])
        ax.tick_params(labelsize=textsize)
    for ax in axes[len(entries) :]:
        ax.set_visible(False)
    handles = [
        Line2D([], [], color="C0", label="posterior density"),
        Line2D([], [], color="k", linewidth=4, label=f"{100 * hdi_prob:g}% HDI"),
        Line2D(
            [], [], color="C3", linestyle="--", label="MLE (posterior mass below < MLE < above)"
        ),
    ]
    # below the panels: constrained layout stacks an outside legend over a suptitle
    figure.legend(handles=handles, loc="outside lower center", ncols=3, fontsize=textsize)
    if title:
        figure.suptitle(title, fontsize=textsize)
    figure.supylabel("posterior density", fontsize=textsize)
    return figure


def forest(posterior, mle, names, hdi_prob, *, figsize=None, textsize=None, title=None):
    """Forest of posterior HDIs (bar, mean as a dot) with the MLE as a second marker per row:
    a ``matplotlib.figure.Figure`` (without pyplot)."""
    from matplotlib.figure import Figure

    entries = list(_entries(posterior, mle, names, hdi_prob))
    height = max(2.0, 0.35 * len(entries) + 1.0)
    figure = Figure(figsize=figsize or (7.0, height), layout="tight")
    ax = figure.subplots()
    rows = np.arange(len(entries))[::-1]
    for row, (_, sample, value, (lower, upper)) in zip(rows, entries, strict=True):
        ax.plot([lower, upper], [row, row], color="C0", linewidth=2)
        ax.plot([float(np.mean(sample))], [row], "o", color="C0")
        if value is not None:
            ax.plot([value], [row - 0.2], "D", color="C3")
    ax.plot([], [], "o-", color="C0", label=f"posterior mean, {100 * hdi_prob:g}% HDI")
    if mle is not None:
        ax.plot([], [], "D", color="C3", label="MLE")
    ax.set_yticks(rows, [entry[0] for entry in entries], fontsize=textsize)
    ax.tick_params(axis="x", labelsize=textsize)
    ax.set_xlabel("parameter value", fontsize=textsize)
    ax.legend(loc="best", fontsize="small")
    if title:
        ax.set_title(title, fontsize=textsize)
    return figure
