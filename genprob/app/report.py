"""The ``genprob demo`` report: every face of the library on bundled data, as Markdown and PNGs.

Each ``*_section`` function runs one step (docs/cli.md lists them) and returns a :class:`Section`;
figures use :class:`matplotlib.figure.Figure` directly (no pyplot state), imported when drawn.
"""

from __future__ import annotations

import logging
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

import numpy as np

__all__ = [
    "Settings",
    "Section",
    "TRUE_PRIOR",
    "TRUE_MEANS",
    "TRUE_COVARIANCES",
    "three_gaussians",
    "boundaries_figure",
    "bic_figure",
    "semi_supervised_curve",
    "semi_supervised_figure",
    "tour_section",
    "boundaries_section",
    "crosscheck_section",
    "semi_supervised_section",
    "posterior_section",
    "save_figure",
    "STEPS",
    "write_report",
]

#: The three-Gaussian example (the tour notebook's): class prior, means and covariances. Class 0
#: has correlated features, class 1 is narrow and axis-aligned, class 2 is wide and tilted the
#: other way, so the three Gaussian models disagree visibly.
TRUE_PRIOR = np.array([0.3, 0.3, 0.4])
TRUE_MEANS = np.array([[-2.0, 0.0], [1.5, 2.5], [2.0, -1.5]])
TRUE_COVARIANCES = np.array(
    [
        [[1.0, 0.7], [0.7, 1.0]],
        [[0.6, 0.0], [0.0, 0.3]],
        [[2.0, -0.8], [-0.8, 1.0]],
    ]
)
_COLORS = ("tab:blue", "tab:orange", "tab:green")


def _registry():
    from genprob.app import registry

    return registry


@dataclass(frozen=True)
class Settings:
    """Sizes of the demo's steps; :meth:`preset` gives the full and the quick ones.

    Attributes:
        quick: whether this is the quick preset (recorded in the report).
        tour: ``"quick"`` (a subset of the tour) or ``"all"``.
        crosscheck_stories: registry names checked on their default data set (by default the
            stories the families put in the report).
        label_fractions: fractions of the training labels kept in the semi-supervised curve.
        repeats: random label subsets averaged per fraction.
        nuts_warmup: NUTS warm-up iterations per chain.
        nuts_samples: NUTS draws per chain.
        nuts_chains: NUTS chains.
        exact_samples: draws per chain from the exact posterior (two chains).
        seed: seed of every random choice.
        progress_bar: show NumPyro's progress bar while NUTS samples (for a terminal).
    """

    quick: bool = False
    tour: str = "all"
    crosscheck_stories: tuple = field(default_factory=lambda: _registry().report_stories())
    label_fractions: tuple = (0.06, 0.1, 0.2, 0.35, 0.5, 1.0)
    repeats: int = 10
    nuts_warmup: int = 500
    # 4 x 1000 draws: the largest R-hat of the 27 entries stays under 1.01 (1.003 - 1.005 at
    # seeds 0 - 7); 2 x 500 drew 1.01 - 1.02 at seed 0, failing the demo's own check
    nuts_samples: int = 1000
    nuts_chains: int = 4
    exact_samples: int = 2000
    seed: int = 0
    progress_bar: bool = False

    @classmethod
    def preset(cls, quick: bool = False, seed: int = 0) -> Settings:
        """The full report (a few minutes on two cores) or the quick one (``quick=True``: under a
        minute, most of it JAX's compilation)."""
        if not quick:
            return cls(seed=seed)
        return cls(
            quick=True,
            tour="quick",
            crosscheck_stories=("lda",),
            label_fractions=(0.05, 0.2, 1.0),
            repeats=2,
            nuts_warmup=30,
            nuts_samples=30,
            nuts_chains=1,
            exact_samples=500,
            seed=seed,
        )


class Section(NamedTuple):
    """One step of the report.

    Attributes:
        key: short name of the step (``"tour"``, ``"crosscheck"`` ...).
        title: the section heading.
        markdown: the section body (Markdown, figures linked by file name).
        figures: file name -> ``matplotlib.figure.Figure``.
        seconds: wall time of the step.
    """

    key: str
    title: str
    markdown: str
    figures: dict
    seconds: float


def _quiet(progress):
    return progress if progress is not None else (lambda message: None)


def _table(header, rows) -> str:
    """A Markdown table; numbers should already be formatted as strings."""
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
    return "\n".join(lines)


def _figure(width: float, height: float):
    from matplotlib.figure import Figure

    return Figure(figsize=(width, height), layout="constrained")


# -- step 1: the tour ------------------------------------------------------------------------------
def tour_section(settings: Settings, progress: Callable | None = None) -> Section:
    """Fit the tour's stories on bundled real data; a table of held-out scores."""
    from genprob.app import tour

    progress = _quiet(progress)
    started = time.perf_counter()
    selected = tour.quick_cases() if settings.tour == "quick" else tour.cases()
    rows = tour.run(selected, progress=lambda label, data: progress(f"{label} on {data}"))
    table = _table(
        ["story", "data", "train/test rows", "accuracy", "log-lik / row", "parameters", "fit s"],
        [
            [
                r.story,
                r.data,
                f"{r.train_rows}/{r.test_rows}",
                f"{r.accuracy:.3f}",
                f"{r.loglik_per_row:.2f}",
                f"{r.num_parameters:,}",
                f"{r.seconds:.2f}",
            ]
            for r in rows
        ],
    )
    scope = "a subset of the built-in stories (`--quick`)" if settings.quick else "every story"
    text = (
        f"Each of {scope} is fitted in closed form on a stratified 70% of a bundled data set; "
        "the other 30% gives the accuracy and the mean held-out log-likelihood per row, "
        "$\\log \\pi_y + \\log p(x \\mid y)$ in nats. The parameter count is the number of free "
        "numbers of the fitted story, class prior included (a full covariance per class grows "
        "as $K D (D+1)/2$). Log-likelihoods compare models on the *same* data only, and are "
        "densities for continuous features (they can be positive). Fit times include JAX's "
        "compilation the first time a shape is seen.\n\n" + table
    )
    return Section("tour", "Built-in stories on real data", text, {}, time.perf_counter() - started)


# -- step 2: decision boundaries -------------------------------------------------------------------
def three_gaussians(num_samples: int, seed: int):
    """Draw from the three-Gaussian story: a class from :data:`TRUE_PRIOR`, then its Gaussian.

    Returns:
        ``X`` (num_samples, 2) and class codes ``y`` (num_samples,).
    """
    rng = np.random.default_rng(seed)
    y = rng.choice(len(TRUE_PRIOR), size=num_samples, p=TRUE_PRIOR)
    X = np.empty((num_samples, 2))
    for k in range(len(TRUE_PRIOR)):
        rows = y == k
        X[rows] = rng.multivariate_normal(TRUE_MEANS[k], TRUE_COVARIANCES[k], size=rows.sum())
    return X, y


def boundaries_figure(
    models: dict, X, y, X_test=None, y_test=None, *, title=None, class_names=None, data=None
):
    """Decision regions of fitted 2-D classifiers side by side, the training points on top.

    Args:
        models: title -> fitted estimator on two features with classes 0, 1, 2.
        X, y: training points to draw.
        X_test, y_test: optional held-out data; its accuracy goes into each title.
        title: the figure's title (default: the models, ``data`` and the fitting method).
        class_names: legend names of the classes 0, 1, 2 (default: ``class 0`` ...).
        data: what ``X`` is, for the default title.

    Returns:
        A ``matplotlib.figure.Figure``.
    """
    from matplotlib.colors import ListedColormap
    from matplotlib.patches import Patch

    X = np.asarray(X)
    low, high = X.min(axis=0) - 1.0, X.max(axis=0) + 1.0
    grid_x, grid_y = np.meshgrid(
        np.linspace(low[0], high[0], 240), np.linspace(low[1], high[1], 180)
    )
    grid = np.column_stack([grid_x.ravel(), grid_y.ravel()])
    if title is None:
        fitted = ", ".join(models)
        title = f"{fitted} on {data or f'{len(X)} training rows'}: maximum-likelihood fits"
    figure_title = title
    figure = _figure(4.2 * len(models), 4.0)
    axes = figure.subplots(1, len(models), sharey=True, squeeze=False)[0]
    colors = np.array(_COLORS)
    for ax, (name, estimator) in zip(axes, models.items(), strict=True):
        regions = estimator.predict(grid).reshape(grid_x.shape)
        ax.contourf(
            grid_x,
            grid_y,
            regions,
            levels=[-0.5, 0.5, 1.5, 2.5],
            cmap=ListedColormap(_COLORS),
            alpha=0.18,
        )
        ax.contour(grid_x, grid_y, regions, levels=[0.5, 1.5], colors="k", linewidths=0.9)
        ax.scatter(X[:, 0], X[:, 1], c=colors[np.asarray(y)], s=7)
        title = name
        if X_test is not None:
            title += f" (test accuracy {estimator.score(X_test, y_test):.3f})"
        ax.set(title=title, xlabel="$x_1$")
    axes[0].set_ylabel("$x_2$")
    names = class_names or [f"class {k}" for k in range(len(_COLORS))]
    handles = [
        Patch(facecolor=color, edgecolor=color, alpha=0.6, label=str(name))
        for color, name in zip(_COLORS, names, strict=True)
    ]
    figure.legend(handles=handles, loc="outside right upper", title="class (points, region)")
    figure.suptitle(figure_title)
    return figure


def bic_figure(table, title: str = "BIC", suptitle: str | None = None):
    """mclust's BIC plot of a criterion table (``MixtureDiscriminantAnalysis.bic_table_``): one
    line per structure over the number of components, one panel per class when each class chose
    its own model; mclust's sign (larger is better), a collapsed candidate is a gap.

    Returns:
        A ``matplotlib.figure.Figure``.
    """
    import matplotlib as mpl

    panels = (
        [(f"class {c}", table.loc[c]) for c in table.index.get_level_values(0).unique()]
        if table.index.nlevels == 2
        else [(None, table)]
    )
    figure = _figure(3.4 * len(panels) + 1.4, 3.4)
    axes = figure.subplots(1, len(panels), squeeze=False)[0]
    colors = mpl.colormaps["tab20"]
    for ax, (name, block) in zip(axes, panels, strict=True):
        G = np.asarray(block.columns, dtype=int)
        for i, (structure, row) in enumerate(block.iterrows()):
            style = "-o" if len(G) > 1 else "o"
            ax.plot(
                G, row.to_numpy(dtype=float), style, ms=3.5, color=colors(i % 20), label=structure
            )
        ax.set(xlabel="components per class (G)", xticks=G, title=name or title)
    axes[0].set_ylabel(f"{title} (2 log L - df log n, larger is better)")
    axes[-1].legend(fontsize=7, ncol=1, loc="center left", bbox_to_anchor=(1.0, 0.5))
    if suptitle:
        figure.suptitle(suptitle, fontsize=9)
    return figure


def boundaries_section(settings: Settings, progress: Callable | None = None) -> Section:
    """LDA, QDA and Gaussian NB on the three-Gaussian example: regions, accuracy, parameters."""
    import genprob

    progress = _quiet(progress)
    started = time.perf_counter()
    X, y = three_gaussians(300, seed=settings.seed)
    X_test, y_test = three_gaussians(3000, seed=settings.seed + 1)
    models = {
        "LDA": genprob.LinearDiscriminantAnalysis(),
        "QDA": genprob.QuadraticDiscriminantAnalysis(),
        "Gaussian NB": genprob.GaussianNB(),
    }
    for name, estimator in models.items():
        progress(f"{name} on the three-Gaussian example")
        estimator.fit(X, y)
    figure = boundaries_figure(
        models,
        X,
        y,
        X_test,
        y_test,
        data=f"the three-Gaussian example ({len(X)} draws, seed {settings.seed})",
    )
    progress("model-based discriminant analysis (BIC over structures and components)")
    structures = ("EII", "VVI", "EEE", "VVV") if settings.quick else "all"
    mda = genprob.MixtureDiscriminantAnalysis(structure=structures, n_components=(1, 2, 3))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # candidates that collapse are gaps
        mda.fit(X, y)
    chosen = ", ".join(
        f"class {c}: {s} with G = {g}"
        for c, s, g in zip(mda.classes_, mda.structure_, mda.n_components_, strict=True)
    )
    rows = [
        [
            name,
            covariance,
            boundary,
            f"{estimator.num_parameters()}",
            f"{estimator.bic(X, y):.1f}",
            f"{estimator.score(X_test, y_test):.3f}",
        ]
        for (name, estimator), covariance, boundary in zip(
            models.items(),
            ("one full covariance, shared", "a full covariance per class", "diagonal, per class"),
            ("straight lines", "conics", "axis-aligned conics"),
            strict=True,
        )
    ]
    means = ", ".join(f"({m[0]:g}, {m[1]:g})" for m in TRUE_MEANS)
    text = (
        "Three classes in the plane with prior "
        f"$\\pi = ({', '.join(f'{p:g}' for p in TRUE_PRIOR)})$, means {means}; class 0 has "
        "correlated features, class 1 is narrow and axis-aligned, class 2 is wide and tilted "
        f"the other way. 300 training draws (seed {settings.seed}) and 3000 test draws "
        f"(seed {settings.seed + 1}). A boundary is where two classes' "
        "$\\log \\pi_k + \\log p(x \\mid k)$ are equal: with one shared covariance the "
        "quadratic terms cancel and it is a line. BIC is $-2 \\log L + \\mathrm{df} \\log n$ "
        "of the training rows with their labels (smaller is better; df is the parameter count).\n\n"
        + _table(
            ["model", "covariance", "boundaries", "parameters", "BIC (train)", "test accuracy"],
            rows,
        )
        + "\n\n![Decision regions of LDA, QDA and Gaussian naive Bayes](boundaries.png)"
        + "\n\nModel-based discriminant analysis (`genprob fit mda`, R mclust's MclustDA) "
        "fits each class as a mixture of G Gaussians of one covariance structure and chooses "
        "both per class by BIC, here in mclust's sign ($2 \\log L - \\mathrm{df} \\log n$, "
        f"larger is better): {chosen}; test accuracy "
        f"{mda.score(X_test, y_test):.3f}."
        + "\n\n![BIC of each structure and number of components, per class](mda_bic.png)"
    )
    return Section(
        "boundaries",
        "Decision boundaries: LDA, QDA, Gaussian naive Bayes",
        text,
        {
            "boundaries.png": figure,
            "mda_bic.png": bic_figure(
                mda.bic_table_,
                suptitle=(
                    "MixtureDiscriminantAnalysis, BIC per class: the three-Gaussian example "
                    f"({len(X)} draws, seed {settings.seed}), EM fits"
                ),
            ),
        },
        time.perf_counter() - started,
    )


# -- step 3: closed form vs optimizer --------------------------------------------------------------
def crosscheck_section(settings: Settings, progress: Callable | None = None) -> Section:
    """Closed form vs L-BFGS for the chosen registry stories on their default data sets."""
    from genprob.app import registry
    from genprob.inference.crosscheck import TOLERANCES, crosscheck

    progress = _quiet(progress)
    started = time.perf_counter()
    rows, printouts, cache = [], [], {}
    for name in settings.crosscheck_stories:
        data = registry.get(name).datasets[0]
        progress(f"{name} on {data}")
        if data not in cache:
            cache[data] = registry.load_data(data)
        X, y, _ = cache[data]
        result = crosscheck(
            registry.make_story(name, X), X, y, seed=settings.seed, data_name=data, label=name
        )
        parameters = [row for row in result.rows if row.kind == "parameter"]
        objective = result.row("objective")
        gradient = result.row("gradient at closed form")
        rows.append(
            [
                name,
                data,
                f"{max(row.rel_diff for row in parameters):.1e}",
                f"{objective.rel_diff:.1e}",
                f"{gradient.rel_diff:.1e}",
                str(result.optimizer.num_iterations),
                "passed" if result.passed else "**FAILED**",
            ]
        )
        printouts.append(str(result))
    table = _table(
        [
            "story",
            "data",
            "max rel. parameter diff",
            "rel. objective diff",
            "gradient norm at closed form",
            "L-BFGS iterations",
            "result",
        ],
        rows,
    )
    tolerances = ", ".join(f"{name} {limit:g}" for name, limit in TOLERANCES["float64"].items())
    text = (
        "Each closed form is a derivation; the check fits the same story a second time by "
        "L-BFGS on the NumPyro model's log-likelihood (penalized by the smoothing prior where "
        "there is one), from a deliberately poor start, and compares parameters, objective and "
        "the gradient at the closed form, which must vanish whatever the optimizer does "
        f"(float64 tolerances: {tolerances}). "
        "`genprob check` runs the same check from the command line.\n\n"
        + table
        + "\n\n<details><summary>Full tables</summary>\n\n```text\n"
        + "\n\n".join(printouts)
        + "\n```\n\n</details>"
    )
    return Section(
        "crosscheck", "Closed form vs optimizer", text, {}, time.perf_counter() - started
    )


# -- step 4: missing labels ------------------------------------------------------------------------
def semi_supervised_curve(fractions, repeats: int = 5, seed: int = 0, data: str = "iris"):
    """Held-out accuracy of Gaussian NB on the labeled rows only vs EM with the unlabeled rows.

    A stratified 70/30 split of the data set; in the training part a fraction of each class's
    labels is kept (at least two per class, so that every class has a variance) and the rest
    set to -1. Each fraction is repeated over ``repeats`` random label subsets.

    Returns:
        ``pandas.DataFrame`` with one row per fraction: ``fraction``, ``labeled_rows`` (mean),
        ``labeled_only`` and ``em`` (mean held-out accuracy), their standard deviations
        ``labeled_only_sd`` and ``em_sd``, and ``em_iterations`` (mean).
    """
    import pandas as pd
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.model_selection import train_test_split

    import genprob
    from genprob import datasets

    X, y = datasets.load(data)
    X_train, X_test, y_train, y_test = train_test_split(
        X, y, test_size=0.3, stratify=y, random_state=seed
    )
    rows = []
    for fraction in fractions:
        if not 0 < fraction <= 1:
            raise ValueError(f"label fractions must lie in (0, 1], got {fraction!r}.")
        labeled_only, em, counts, iterations = [], [], [], []
        for repeat in range(repeats):
            rng = np.random.default_rng([seed, repeat])
            keep = np.zeros(len(y_train), dtype=bool)
            for k in np.unique(y_train):
                members = np.flatnonzero(y_train == k)
                size = min(len(members), max(2, int(round(fraction * len(members)))))
                keep[rng.choice(members, size=size, replace=False)] = True
            supervised = genprob.GaussianNB().fit(X_train[keep], y_train[keep])
            labeled_only.append(supervised.score(X_test, y_test))
            if keep.all():  # nothing to impute: EM is the supervised fit
                em.append(labeled_only[-1])
                iterations.append(0)
            else:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", ConvergenceWarning)
                    semi = genprob.GaussianNB(random_state=seed).fit(
                        X_train, np.where(keep, y_train, -1)
                    )
                em.append(semi.score(X_test, y_test))
                iterations.append(semi.n_iter_)
            counts.append(int(keep.sum()))
        rows.append(
            {
                "fraction": float(fraction),
                "labeled_rows": float(np.mean(counts)),
                "labeled_only": float(np.mean(labeled_only)),
                "em": float(np.mean(em)),
                "labeled_only_sd": float(np.std(labeled_only)),
                "em_sd": float(np.std(em)),
                "em_iterations": float(np.mean(iterations)),
            }
        )
    return pd.DataFrame(rows)


def semi_supervised_figure(curve, title: str | None = None, data: str = "iris"):
    """Held-out accuracy against the fraction of labels kept: labeled-only vs EM.

    The fractions are spaced to scale (a log axis, ticks at the fractions themselves); the
    title names the story, the data and the two fits unless ``title`` is given.
    """
    figure = _figure(5.5, 3.6)
    ax = figure.subplots()
    fractions = curve["fraction"].to_numpy()
    for column, label, marker in (
        ("labeled_only", "labeled rows only", "o"),
        ("em", "EM with the unlabeled rows", "s"),
    ):
        mean, sd = curve[column].to_numpy(), curve[f"{column}_sd"].to_numpy()
        ax.plot(fractions, mean, marker=marker, label=label)
        ax.fill_between(fractions, mean - sd, mean + sd, alpha=0.15)
    ax.set_xscale("log")
    ax.set_xticks(fractions, [f"{f:g}" for f in fractions])
    ax.minorticks_off()
    if title is None:
        title = (
            f"Gaussian NB on {data}: EM on all training rows\n"
            "vs a fit on the labeled rows alone (mean ± sd)"
        )
    ax.set(
        xlabel="fraction of training labels kept (log scale)",
        ylabel="held-out accuracy",
        title=title,
    )
    ax.legend(loc="lower right")
    return figure


def semi_supervised_section(settings: Settings, progress: Callable | None = None) -> Section:
    """The semi-supervised curve on iris as a table and a figure."""
    progress = _quiet(progress)
    started = time.perf_counter()
    progress(
        f"Gaussian NB on iris, {len(settings.label_fractions)} label fractions x "
        f"{settings.repeats} repeats"
    )
    curve = semi_supervised_curve(settings.label_fractions, settings.repeats, settings.seed)
    table = _table(
        ["labels kept", "labeled rows", "labeled only", "EM", "EM iterations"],
        [
            [
                f"{row.fraction:g}",
                f"{row.labeled_rows:.0f}",
                f"{row.labeled_only:.3f} ± {row.labeled_only_sd:.3f}",
                f"{row.em:.3f} ± {row.em_sd:.3f}",
                f"{row.em_iterations:.0f}",
            ]
            for row in curve.itertuples()
        ],
    )
    partial = curve[curve["fraction"] < 1]
    better = int((partial["em"] > partial["labeled_only"]).sum())
    text = (
        "A generative model explains $x$ as well as $y$, so a row without its label still "
        "informs the fit: its class is summed out, $p(x) = \\sum_k \\pi_k p(x \\mid k)$. "
        "Unlabeled rows are marked $y = -1$ and fitted by EM. Here a stratified 70% of iris "
        "keeps a fraction of its labels (at least two per class), Gaussian naive Bayes is "
        "fitted on the labeled rows alone and by EM on all training rows, and both are scored "
        f"on the held-out 30%; mean ± sd over {settings.repeats} random label subsets. "
        f"EM is ahead at {better} of the {len(partial)} fractions below 1. When labels are "
        "plentiful, unlabeled rows can also pull a misspecified model (naive Bayes ignores the "
        "correlations of iris) away from the supervised fit; `unlabeled_weight` (EM-λ) "
        "down-weights them.\n\n"
        + table
        + "\n\n![Held-out accuracy against the fraction of labels kept](semi_supervised.png)"
    )
    return Section(
        "semi_supervised",
        "Missing labels: EM vs the labeled rows alone",
        text,
        {"semi_supervised.png": semi_supervised_figure(curve)},
        time.perf_counter() - started,
    )


# -- step 5: MLE vs posterior ----------------------------------------------------------------------
def _posterior_table(table, hdi_columns) -> str:
    lower, upper = hdi_columns
    return _table(
        ["parameter", "MLE", "posterior mean", "sd", f"{lower} .. {upper}", "MLE in HDI", "ESS"],
        [
            [
                row["parameter"],
                f"{row['mle']:.4g}",
                f"{row['mean']:.4g}",
                f"{row['sd']:.2g}",
                f"{row[lower]:.4g} .. {row[upper]:.4g}",
                "yes" if row["mle_in_hdi"] else "no",
                f"{row['ess_bulk']:.0f}",
            ]
            for _, row in table.iterrows()
        ],
    )


def save_figure(figure, path):
    """Write a PNG; a figure made through pyplot (ArviZ's) is closed to free its memory."""
    import sys

    with _quiet_fonts():
        figure.savefig(path, dpi=100)
    if "matplotlib.pyplot" in sys.modules:
        sys.modules["matplotlib.pyplot"].close(figure)


def posterior_section(settings: Settings, progress: Callable | None = None) -> Section:
    """NUTS for Gaussian NB on iris and the exact posterior of a categorical story."""
    import pandas as pd

    import genprob
    from genprob import datasets
    from genprob.inference.mcmc import ESS_MIN, RHAT_MAX

    progress = _quiet(progress)
    started = time.perf_counter()
    # (1) NUTS: every parameter of Gaussian naive Bayes on iris
    progress(
        f"NUTS for Gaussian NB on iris ({settings.nuts_chains} chain(s) x "
        f"{settings.nuts_warmup} warm-up + {settings.nuts_samples} draws)"
    )
    X, y = datasets.load_iris()
    names = np.array(["setosa", "versicolor", "virginica"])
    frame = pd.DataFrame(X, columns=["sepal_length", "sepal_width", "petal_length", "petal_width"])
    gnb = genprob.GaussianNB().fit(frame, names[y])
    idata = gnb.posterior(
        frame,
        names[y],
        method="nuts",
        num_warmup=settings.nuts_warmup,
        num_samples=settings.nuts_samples,
        num_chains=settings.nuts_chains,
        random_state=settings.seed,
        progress_bar=settings.progress_bar,
    )
    nuts_table = genprob.mle_vs_posterior_table(idata)
    hdi_columns = tuple(c for c in nuts_table.columns if c.startswith("hdi_"))
    divergences = int(idata.sample_stats["diverging"].sum())
    progress("plotting the posterior of the variances")
    with _quiet_fonts():
        nuts_figure = genprob.plot_posterior_vs_mle(
            idata,
            var_names=["variances"],
            figsize=(13, 11),
            textsize=10,
            title=(
                f"Gaussian NB on iris ({len(y)} rows): NUTS posterior of the variances "
                f"({settings.nuts_chains} chain(s) x {settings.nuts_samples} draws) against the MLE"
            ),
        )
    # (2) exact: a categorical story is conjugate (Dirichlet prior), no sampler needed
    progress(f"exact posterior for categorical NB on penguins ({settings.exact_samples} draws x 2)")
    penguins, species = datasets.load_penguins(as_frame=True)
    islands = penguins[["island"]]
    categories = np.unique(islands["island"].astype(str))
    codes = pd.DataFrame({"island": np.searchsorted(categories, islands["island"].astype(str))})
    categorical = genprob.CategoricalNB(alpha=1.0).fit(codes, species.to_numpy())
    exact = categorical.posterior(
        codes,
        species.to_numpy(),
        method="exact",
        num_samples=settings.exact_samples,
        num_chains=2,
        random_state=settings.seed,
    )
    island_names = {"category": [str(name) for name in categories]}
    exact_table = genprob.mle_vs_posterior_table(exact, labels=island_names)
    with _quiet_fonts():
        exact_figure = genprob.plot_posterior_vs_mle(
            exact,
            var_names=["probs"],
            labels=island_names,
            figsize=(13, 8.5),
            textsize=10,
            title=(
                f"Categorical NB on the penguins' islands ({len(species)} rows): exact "
                "Dirichlet posterior of P(island | species) against the smoothed MLE"
            ),
        )
    inside = int(nuts_table["mle_in_hdi"].sum())
    variances = nuts_table[nuts_table["parameter"].str.startswith("variances")]
    n_above = int((variances["mean"] > variances["mle"]).sum())
    outside = nuts_table.loc[~nuts_table["mle_in_hdi"], "parameter"].tolist()
    chains_note = (
        "R-hat needs two chains or more; "
        if settings.nuts_chains < 2
        else f"largest R-hat {nuts_table['r_hat'].max():.3f}"
        + (" (**above 1.01: not converged**); " if nuts_table["r_hat"].max() > RHAT_MAX else "; ")
    )
    ess_note = f"smallest bulk ESS {nuts_table['ess_bulk'].min():.0f}" + (
        f" (**below {ESS_MIN}: too few draws**)" if nuts_table["ess_bulk"].min() < ESS_MIN else ""
    )
    legend = ", ".join(str(name) for name in categories)
    text = (
        "The MLE is one point; the posterior says how well the data pin it down. "
        '`est.posterior(X, y, method="nuts")` runs NUTS on the story\'s NumPyro model (the '
        "story's priors, a Dirichlet on the class prior) and returns ArviZ's `InferenceData` "
        "(a `DataTree` under ArviZ 1.x) "
        "with the MLE alongside.\n\n"
        f"**NUTS, Gaussian naive Bayes on iris** ({settings.nuts_chains} chain(s), "
        f"{settings.nuts_warmup} warm-up iterations, {settings.nuts_samples} draws each; "
        f"{divergences} divergences; {chains_note}{ess_note}). "
        f"The MLE lies inside the 94% HDI for {inside} "
        f"of {len(nuts_table)} parameters"
        + (f" (not for {', '.join(outside)})" if outside else "")
        + f". The posterior mean of a variance is above its MLE for {n_above} of "
        f"{len(variances)} variances: a variance's posterior is right-skewed. The prior "
        "follows the data's scale: each variance has an InverseGamma(2, (sd_j / 10)^2) prior, "
        "sd_j the feature's standard deviation, which rules out only variances far below the "
        "data's spread (see the *Posteriors and priors* page); "
        '`priors="fixed"` gives the unit-scale prior meant for standardized features.\n\n'
        + _posterior_table(nuts_table, hdi_columns)
        + "\n\n![Posterior of the variances with the MLE marked](posterior_vs_mle.png)\n\n"
        "**Exact posterior, categorical naive Bayes on the island of each penguin** "
        f"(islands {legend}). With a Dirichlet prior the posterior is Dirichlet again, so "
        '`method="exact"` draws independently from the closed form. Laplace smoothing '
        "(`alpha=1`) is the posterior *mode* under a Dirichlet(2) prior; the posterior mean "
        "adds one more pseudo-count, so it sits closer to uniform than the smoothed MLE "
        "(see the Chinstrap and Gentoo rows: each species lives mostly on one island).\n\n"
        + _posterior_table(exact_table, hdi_columns)
        + "\n\n![Exact posterior of the island probabilities with the MLE marked]"
        "(posterior_vs_mle_exact.png)"
    )
    return Section(
        "posterior",
        "MLE vs posterior",
        text,
        {
            "posterior_vs_mle.png": nuts_figure,
            "posterior_vs_mle_exact.png": exact_figure,
        },
        time.perf_counter() - started,
    )


class _quiet_fonts:
    """Silence matplotlib's font-fallback notices (ArviZ asks for a semibold font)."""

    def __enter__(self):
        self.logger = logging.getLogger("matplotlib.font_manager")
        self.level = self.logger.level
        self.logger.setLevel(logging.ERROR)

    def __exit__(self, *exc):
        self.logger.setLevel(self.level)


# -- the whole report ------------------------------------------------------------------------------
#: The steps in report order: (key, short description, section function).
STEPS = (
    ("tour", "fit the built-in stories on bundled data", tour_section),
    ("boundaries", "decision boundaries on the three-Gaussian example", boundaries_section),
    ("crosscheck", "closed form vs optimizer", crosscheck_section),
    ("semi_supervised", "semi-supervised EM curve", semi_supervised_section),
    ("posterior", "MLE vs posterior (NUTS and exact)", posterior_section),
)


def write_report(out_dir, settings: Settings | None = None, progress: Callable | None = None):
    """Run every step and write ``report.md`` and its PNG figures into ``out_dir``.

    Args:
        out_dir: directory to write (created if needed; files of the same names are replaced).
        settings: step sizes (default: the full :meth:`Settings.preset`).
        progress: optional ``progress(step, total, message)`` called at the start of each step
            (``message`` is the step's description) and for sub-steps (``step`` unchanged).

    Returns:
        The path of ``report.md``.
    """
    import genprob

    settings = Settings.preset() if settings is None else settings
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    total = len(STEPS)
    sections = []
    started = time.perf_counter()
    for step, (_, description, function) in enumerate(STEPS, start=1):
        if progress is not None:
            progress(step, total, description)

            def report(message, step=step):
                progress(step, total, f"  {message}")

        else:
            report = None
        section = function(settings, report)
        for name, figure in section.figures.items():
            save_figure(figure, out_dir / name)
        sections.append(section)
    seconds = time.perf_counter() - started
    mode = "quick (`genprob demo --quick`)" if settings.quick else "full (`genprob demo`)"
    lines = [
        "# genprob demo report",
        "",
        f"genprob {genprob.__version__}, {mode}, seed {settings.seed}; "
        f"{seconds:.0f} s in all. Every number below was computed by this run, offline, on "
        "bundled data.",
        "",
        "Contents:",
        "",
    ]
    for number, section in enumerate(sections, start=1):
        lines.append(f"{number}. {section.title} ({section.seconds:.1f} s)")
    for number, section in enumerate(sections, start=1):
        lines += ["", f"## {number}. {section.title}", "", section.markdown]
    path = out_dir / "report.md"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path
