"""Figures, tables and the numbers quoted beside them, computed from genprob while the site builds.

The pages call these functions from ``markdown-exec`` blocks (``python exec="on" html="1"``);
each returns HTML: an ``<img>`` with the PNG inline (no file to go stale, no network), a table,
or a sentence whose numbers come from the same run as the table next to it. Everything is
seeded, float64 and small enough to keep the strict build within a minute or so.
"""

from __future__ import annotations

import base64
import functools
import html
import io
import sys
from pathlib import Path

import matplotlib
import matplotlib.ticker

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

import genprob  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
COLORS = ["#1b6ca8", "#e07b39", "#3a9e5c", "#b04a8f"]
plt.rcParams.update({"font.size": 9, "axes.spines.top": False, "axes.spines.right": False})


def on_config(config, **kwargs):
    """MkDocs hook: make this module importable from the pages' code blocks."""
    here = str(Path(__file__).parent)
    if here not in sys.path:
        sys.path.insert(0, here)
    return config


def img(fig, alt: str) -> str:
    """The figure as an inline PNG ``<img>`` (closed afterwards)."""
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=110, bbox_inches="tight")
    plt.close(fig)
    data = base64.b64encode(buffer.getvalue()).decode("ascii")
    return (
        f'<img class="genprob-figure" alt="{html.escape(alt)}" src="data:image/png;base64,{data}">'
    )


def html_table(header, rows, bold=None) -> str:
    """A plain HTML table; ``bold`` is a set of (row, column) cells to emphasize."""
    bold = bold or set()
    head = "".join(f"<th>{html.escape(str(h))}</th>" for h in header)
    body = []
    for i, row in enumerate(rows):
        cells = []
        for j, cell in enumerate(row):
            text = html.escape(str(cell))
            cells.append(
                f"<td><strong>{text}</strong></td>" if (i, j) in bold else f"<td>{text}</td>"
            )
        body.append("<tr>" + "".join(cells) + "</tr>")
    table = f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"
    return f'<div class="genprob-wide">{table}</div>'  # compact cells: see extra.css


# -- decision regions, one figure per built-in family ------------------------------------------


def _regions(ax, model, xs, ys, classes):
    """Colour the grid ``xs`` x ``ys`` by the predicted class; draw the class boundaries."""
    xx, yy = np.meshgrid(xs, ys)
    pred = model.predict(np.c_[xx.ravel(), yy.ravel()]).reshape(xx.shape)
    codes = np.searchsorted(classes, pred)
    cmap = matplotlib.colors.ListedColormap(COLORS[: len(classes)])
    ax.contourf(xx, yy, codes, levels=np.arange(len(classes) + 1) - 0.5, cmap=cmap, alpha=0.18)
    ax.contour(xx, yy, codes, levels=np.arange(len(classes)) + 0.5, colors="k", linewidths=0.8)


def _scatter(ax, X, y, classes, **kwargs):
    for color, label in zip(COLORS, classes, strict=False):
        rows = y == label
        ax.scatter(X[rows, 0], X[rows, 1], s=9, color=color, label=str(label), **kwargs)


@functools.cache
def _penguins():
    X, y = genprob.datasets.load_penguins(as_frame=True)
    return X, np.asarray(y)


def gaussian_regions() -> str:
    """LDA, QDA and Gaussian naive Bayes on two penguin measurements."""
    frame, y = _penguins()
    X = frame[["bill_length_mm", "bill_depth_mm"]].to_numpy()
    classes = np.unique(y)
    models = [
        ("LDA: lines", genprob.LinearDiscriminantAnalysis()),
        ("QDA: conics", genprob.QuadraticDiscriminantAnalysis()),
        ("Gaussian NB: axis-aligned", genprob.GaussianNB()),
    ]
    fig, axes = plt.subplots(1, 3, figsize=(11, 3.6), sharey=True)
    xlim, ylim = (30, 62), (12.5, 22.5)
    for ax, (title, model) in zip(axes, models, strict=True):
        model.fit(X, y)
        _regions(ax, model, np.linspace(*xlim, 200), np.linspace(*ylim, 200), classes)
        _scatter(ax, X, y, classes)
        ax.set(
            title=f"{title}\n(training accuracy {model.score(X, y):.3f})", xlabel="bill length (mm)"
        )
        ax.set_xlim(xlim)
        ax.set_ylim(ylim)
    axes[0].set_ylabel("bill depth (mm)")
    axes[0].legend(title="species", loc="lower left", fontsize=8)
    fig.suptitle(
        f"Palmer penguins ({len(y)} birds), two bill measurements: "
        "maximum-likelihood fits of three Gaussian stories"
    )
    return img(fig, "Decision regions of LDA, QDA and Gaussian naive Bayes on penguin bills")


@functools.cache
def _digit_ink():
    """Ink in the top two rows and in the two middle columns of the digits 0, 1 and 7."""
    X, y = genprob.datasets.load_digits()
    keep = np.isin(y, [0, 1, 7])
    images = X[keep].reshape(-1, 8, 8)
    counts = np.c_[images[:, :2].sum(axis=(1, 2)), images[:, :, 3:5].sum(axis=(1, 2))]
    return counts, y[keep]


def count_regions() -> str:
    """Multinomial and Poisson naive Bayes on the same two counts."""
    X, y = _digit_ink()
    classes = np.unique(y)
    fig, axes = plt.subplots(1, 2, figsize=(8.5, 3.8), sharey=True)
    lim = (0, int(1.05 * X.max()))
    for ax, (title, model) in zip(
        axes,
        [
            ("Multinomial NB: only the ratio counts", genprob.MultinomialNB()),
            ("Poisson NB: the total counts too", genprob.PoissonNB()),
        ],
        strict=True,
    ):
        model.fit(X, y)
        _regions(ax, model, np.arange(lim[1]), np.arange(lim[1]), classes)
        _scatter(ax, X, y, classes, alpha=0.6)
        ax.set(
            title=f"{title}\n(training accuracy {model.score(X, y):.3f})",
            xlabel="ink in the top two rows",
        )
    axes[0].set_ylabel("ink in the two middle columns")
    axes[0].legend(title="digit", loc="upper left", fontsize=8)
    return img(fig, "Decision regions of multinomial and Poisson naive Bayes on digit ink counts")


@functools.cache
def _sms_words(words=("free", "call")):
    data = genprob.datasets.load_sms_spam(return_dataset=True)
    texts = np.char.lower(data.X.astype(str))
    X = np.stack([np.char.find(texts, w) >= 0 for w in words], axis=1).astype(float)
    return X, np.asarray(data.y).astype(str), words


def bernoulli_regions() -> str:
    """Bernoulli naive Bayes on the presence of two words: one line through the unit square."""
    X, y, words = _sms_words()
    model = genprob.BernoulliNB().fit(X, y)
    spam = list(model.classes_).index("spam")
    w, b = genprob.linear_boundary(model.story_, model.params_, spam, 1 - spam)
    w, b = np.asarray(w), float(b)
    fig, ax = plt.subplots(figsize=(4.6, 4))
    t = np.linspace(-0.25, 1.25, 200)
    xx, yy = np.meshgrid(t, t)
    odds = w[0] * xx + w[1] * yy + b
    ax.contourf(
        xx, yy, odds > 0, levels=[-0.5, 0.5, 1.5], colors=[COLORS[0], COLORS[1]], alpha=0.18
    )
    ax.contour(xx, yy, odds, levels=[0], colors="k", linewidths=0.8)
    for a in (0, 1):
        for c in (0, 1):
            rows = (X[:, 0] == a) & (X[:, 1] == c)
            n_spam = int(np.sum(y[rows] == "spam"))
            p_spam = model.predict_proba([[a, c]])[0, spam]
            ax.annotate(
                f"{n_spam} spam\n{rows.sum() - n_spam} ham\np(spam)={p_spam:.2f}",
                (a, c),
                ha="center",
                va="center",
                fontsize=8,
                bbox={"boxstyle": "round", "fc": "white", "ec": "0.6"},
            )
    ax.set(
        xticks=[0, 1],
        yticks=[0, 1],
        xlabel=f'"{words[0]}" in the message',
        ylabel=f'"{words[1]}" in the message',
        title=f"Bernoulli NB: the line w·x + b = 0 (orange side: spam)\n"
        f"w = ({w[0]:.2f}, {w[1]:.2f}), b = {b:.2f}",
    )
    return img(fig, "Bernoulli naive Bayes on the presence of two words in SMS messages")


def categorical_regions() -> str:
    """Categorical naive Bayes on island and sex: the predicted species of each cell."""
    frame, y = _penguins()
    islands, sexes = sorted(frame["island"].unique()), sorted(frame["sex"].unique())
    codes = np.c_[
        frame["island"].map(islands.index).to_numpy(), frame["sex"].map(sexes.index).to_numpy()
    ]
    model = genprob.CategoricalNB().fit(codes, y)
    classes = list(model.classes_)
    fig, ax = plt.subplots(figsize=(6.2, 3))
    for i in range(len(islands)):
        for s in range(len(sexes)):
            proba = model.predict_proba([[i, s]])[0]
            k = int(np.argmax(proba))
            ax.add_patch(plt.Rectangle((i - 0.5, s - 0.5), 1, 1, color=COLORS[k], alpha=0.25))
            n = int(np.sum((codes[:, 0] == i) & (codes[:, 1] == s)))
            ax.text(
                i, s, f"{classes[k]}\np = {proba[k]:.2f}\n({n} birds)", ha="center", va="center"
            )
    ax.set(
        xlim=(-0.5, len(islands) - 0.5),
        ylim=(-0.5, len(sexes) - 0.5),
        xticks=range(len(islands)),
        xticklabels=islands,
        yticks=range(len(sexes)),
        yticklabels=sexes,
        title="Categorical NB: linear in the one-hot codes; one class per cell",
    )
    return img(fig, "Categorical naive Bayes on island and sex of penguins")


def mixed_regions() -> str:
    """Mixed naive Bayes: a Gaussian bill length and a categorical island."""
    frame, y = _penguins()
    X = frame[["bill_length_mm", "island"]]
    model = genprob.MixedNB({"bill_length_mm": "gaussian", "island": "categorical"}).fit(X, y)
    classes = np.asarray(model.classes_)
    islands = sorted(frame["island"].unique())
    grid = np.linspace(30, 62, 400)
    fig, ax = plt.subplots(figsize=(7.5, 3))
    cmap = matplotlib.colors.ListedColormap(COLORS[: len(classes)])
    rng = np.random.default_rng(0)
    for i, island in enumerate(islands):
        points = frame.iloc[[0] * len(grid)][["bill_length_mm", "island"]].assign(
            bill_length_mm=grid, island=island
        )
        pred = np.searchsorted(classes, model.predict(points))
        ax.pcolormesh(
            grid,
            [i - 0.45, i + 0.45],
            pred[None, :-1],
            cmap=cmap,
            alpha=0.25,
            vmin=-0.5,
            vmax=len(classes) - 0.5,
        )
        on = (frame["island"] == island).to_numpy()
        for k, label in enumerate(classes):
            sel = on & (y == label)
            jitter = rng.uniform(-0.3, 0.3, sel.sum())
            ax.scatter(
                frame["bill_length_mm"][sel],
                i + jitter,
                s=7,
                color=COLORS[k],
                label=label if i == 0 else None,
            )
    ax.set(
        yticks=range(len(islands)),
        yticklabels=islands,
        xlabel="bill length (mm)",
        title="Mixed NB: a Gaussian column and a categorical one; regions per island",
    )
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1), fontsize=8)
    return img(fig, "Mixed naive Bayes on bill length and island")


# -- figures of the home page, getting started and the how-to guides ----------------------------


def regions_figure(model, X, y, *, xlabel, ylabel, title, alt, ax=None, legend_title="class"):
    """Decision regions of a fitted two-feature ``model`` with the rows ``(X, y)`` on top and a
    legend naming each class's colour; returns the ``<img>`` (or draws into ``ax``)."""
    X, y = np.asarray(X, dtype=float), np.asarray(y)
    classes = np.asarray(model.classes_)
    pad = 0.08 * (X.max(axis=0) - X.min(axis=0))
    low, high = X.min(axis=0) - pad, X.max(axis=0) + pad
    if X.min() > 0:  # positive data (durations): a story may score no x <= 0
        low = np.maximum(low, 1e-3 * high)
    fig = None
    if ax is None:
        fig, ax = plt.subplots(figsize=(5.2, 3.8))
    xs, ys = np.linspace(low[0], high[0], 200), np.linspace(low[1], high[1], 200)
    _regions(ax, model, xs, ys, classes)
    _scatter(ax, X, y, classes)
    ax.set(xlabel=xlabel, ylabel=ylabel, title=title, xlim=(low[0], high[0]))
    ax.set_ylim(low[1], high[1])
    ax.legend(title=legend_title, fontsize=8, loc="best")
    return None if fig is None else img(fig, alt)


def iris_first_fit() -> str:
    """Getting started: QDA on two iris features, and rows sampled from the fitted story."""
    X, y = genprob.datasets.load_iris()
    names = np.array(["setosa", "versicolor", "virginica"])
    petals = X[:, 2:]
    qda = genprob.QuadraticDiscriminantAnalysis().fit(petals, names[y])
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8), sharex=True, sharey=True)
    regions_figure(
        qda,
        petals,
        names[y],
        xlabel="petal length (cm)",
        ylabel="petal width (cm)",
        title="QDA on iris petals (150 flowers): MLE decision regions",
        alt="",
        ax=axes[0],
        legend_title="species",
    )
    X_new, y_new = qda.sample(150, random_state=0)
    regions_figure(
        qda,
        X_new,
        y_new,
        xlabel="petal length (cm)",
        ylabel="",
        title="150 rows sampled from the fitted story (qda.sample)",
        alt="",
        ax=axes[1],
        legend_title="species",
    )
    return img(fig, "QDA decision regions on iris petals, and rows sampled from the fitted QDA")


def missing_accuracy_bars(results: dict, rows: int) -> str:
    """The missing-values how-to: 5-fold accuracy of QDA per way of handling the holes."""
    fig, ax = plt.subplots(figsize=(6.4, 3.2))
    settings = list(results)
    methods = list(results[settings[0]])
    width = 0.8 / len(methods)
    for i, (color, method) in enumerate(zip(COLORS, methods, strict=False)):
        values = [results[setting][method] for setting in settings]
        at = np.arange(len(settings)) + (i - (len(methods) - 1) / 2) * width
        bars = ax.bar(at, values, width, color=color, label=method)
        ax.bar_label(bars, fmt="%.3f", fontsize=7, padding=2)
    low = min(min(r.values()) for r in results.values())
    ax.set(
        xticks=range(len(settings)),
        xticklabels=settings,
        ylim=(max(0.0, low - 0.06), 1.0),
        xlabel="entries missing",
        ylabel="5-fold accuracy",
        title=f"QDA on Palmer penguins ({rows} birds): three ways with missing measurements",
    )
    ax.legend(loc="upper right", fontsize=8)
    return img(fig, "Accuracy of QDA with missing measurements: marginalize, drop, impute")


def home_figures() -> str:
    """The home page: decision regions of the Gaussian family, and an MLE against its posterior."""
    forest = _spam_forest(
        "exact posterior of p(word | spam)\nagainst the MLE (smoothed fit)", {"class": ["spam"]}
    )
    return gaussian_regions() + "\n" + img(forest, "Posterior of p(word | spam) with the MLE")


def _spam_forest(what: str, coords=None):
    """genprob.plot_forest of the SMS spam posterior's word probabilities, titled with ``what``."""
    _, idata, _ = spam_posterior()
    rows = idata.observed_data["y"].size
    title = f"Bernoulli NB on SMS spam ({rows:,} messages): {what}"
    return genprob.plot_forest(idata, var_names=["probs"], coords=coords, title=title)


# -- missing labels: EM's objective per iteration, and a learning curve ---------------------------


def _hide(y, fraction, seed):
    """All labels but a stratified ``fraction`` (at least one per class) set to -1."""
    from sklearn.model_selection import train_test_split

    if fraction >= 1:
        return y.copy()
    keep_count = max(int(round(fraction * len(y))), len(np.unique(y)))
    keep, _ = train_test_split(
        np.arange(len(y)), train_size=keep_count, stratify=y, random_state=seed
    )
    partial = np.full_like(y, -1)
    partial[keep] = y[keep]
    return partial


@functools.cache
def _digits_split(seed):
    from sklearn.model_selection import train_test_split

    X, y = genprob.datasets.load_digits()
    return train_test_split(X, y, test_size=0.3, stratify=y, random_state=seed)


def em_trace() -> str:
    """The EM objective after every iteration: multinomial NB on digits, 5% of labels kept."""
    X_train, _, y_train, _ = _digits_split(0)
    fig, ax = plt.subplots(figsize=(6, 3.2))
    for color, weight in zip(COLORS, (1.0, 0.1), strict=False):
        model = genprob.MultinomialNB(unlabeled_weight=weight)
        model.fit(X_train, _hide(y_train, 0.05, 0), classes=np.arange(10))
        trace = np.asarray(model.log_likelihood_trace_) / len(y_train)
        ax.plot(
            np.arange(1, len(trace) + 1),
            trace,
            "o-",
            ms=3,
            color=color,
            label=f"λ = {weight:g}: {model.n_iter_} iterations",
        )
        assert np.all(np.diff(trace) >= -1e-9 * np.abs(trace[:-1])), "EM objective decreased"
    ax.set(
        xlabel="EM iteration",
        ylabel="objective per row (nats)",
        title="EM never decreases its objective (digits, 5% of labels)",
    )
    ax.legend()
    return img(fig, "EM log-likelihood per iteration on digits with 5% of the labels")


def learning_curve(seeds: int = 3) -> str:
    """Test accuracy against the number of labels: labeled rows alone against EM (λ = 1, 0.1)."""
    fractions = (0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0)
    curves = {"labeled rows only": [], "EM, λ = 1": [], "EM, λ = 0.1": []}
    sizes = []
    for fraction in fractions:
        scores = {name: [] for name in curves}
        for seed in range(seeds):
            X_train, X_test, y_train, y_test = _digits_split(seed)
            partial = _hide(y_train, fraction, seed)
            labeled = partial >= 0
            only = genprob.MultinomialNB().fit(X_train[labeled], partial[labeled])
            scores["labeled rows only"].append(only.score(X_test, y_test))
            for weight, name in ((1.0, "EM, λ = 1"), (0.1, "EM, λ = 0.1")):
                # a few of these fits need up to ~150 iterations to meet EM's tolerance
                model = genprob.MultinomialNB(unlabeled_weight=weight, max_iter=300)
                model.fit(X_train, partial, classes=np.arange(10))
                scores[name].append(model.score(X_test, y_test))
        sizes.append(int(labeled.sum()))
        for name in curves:
            curves[name].append(np.mean(scores[name]))
    fig, ax = plt.subplots(figsize=(6, 3.4))
    for color, (name, values) in zip(COLORS, curves.items(), strict=False):
        ax.plot(sizes, values, "o-", ms=4, color=color, label=name)
    ax.set(
        xscale="log",
        xlabel=f"labeled training rows (of {sizes[-1]})",
        ylabel="test accuracy",
        title=f"Multinomial NB on digits, mean of {seeds} splits",
    )
    ax.legend()
    only, em, em_small = (np.asarray(v) for v in curves.values())
    gap = np.max(np.maximum(only, em) - em_small)
    text = (
        f"With {sizes[0]} labels EM reaches {em[0]:.3f} (λ = 1) and {em_small[0]:.3f} (λ = 0.1) "
        f"against {only[0]:.3f} for the labeled rows alone; with {sizes[-2]} labels the three are "
        f"at {em[-2]:.3f}, {em_small[-2]:.3f} and {only[-2]:.3f}. At no size is λ = 0.1 more "
        f"than {gap:.3f} below the better of the other two."
    )
    return img(fig, "Semi-supervised learning curve on digits") + f"<p>{text}</p>"


# -- generative against discriminative (models/gda_vs_logistic.py) ----------------------------


def _model_script(name):
    models = str(ROOT / "models")
    if models not in sys.path:
        sys.path.insert(0, models)
    return __import__(name)


GDA_SIZES = {"iris": (6, 9, 12, 24, 48, 100), "breast_cancer": (4, 8, 16, 32, 64, 128, 379)}
GDA_NAMES = {"gaussian_nb": "Gaussian NB", "lda": "LDA", "softmax": "softmax"}


@functools.cache
def gda_results() -> dict:
    """``models/gda_vs_logistic.main`` at the gallery's settings (10 draws per size)."""
    import contextlib

    script = _model_script("gda_vs_logistic")
    with contextlib.redirect_stdout(io.StringIO()):
        return script.main(sizes=GDA_SIZES, seeds=10)


def q(value) -> str:
    """A number quoted in prose from the table beside it (the site test checks it is there)."""
    return f'<span class="from-table">{value}</span>'


def q3(value) -> str:
    return q(f"{value:.3f}")


def qx(value) -> str:
    return q(f"{value:.1f}x")


def verb(below: bool) -> str:
    return "ends below" if below else "does not overtake"


def gda_table(name: str) -> str:
    """Mean held-out error per training size; the best model of each row in bold."""
    result = gda_results()[name]
    rows, bold = [], set()
    for i, m in enumerate(result["sizes"]):
        errors = [result["error"][model][i] for model in GDA_NAMES]
        rows.append([m, *(f"{e:.3f}" for e in errors)])
        best = min(f"{e:.3f}" for e in errors)
        bold |= {(i, j + 1) for j, e in enumerate(errors) if f"{e:.3f}" == best}
    return html_table(["m", *GDA_NAMES.values()], rows, bold)


def gda_figure() -> str:
    results = gda_results()
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.4))
    for ax, (name, title) in zip(
        axes, (("iris", "Iris"), ("breast_cancer", "Breast cancer")), strict=True
    ):
        r = results[name]
        for color, (model, label) in zip(COLORS, GDA_NAMES.items(), strict=False):
            mean, se = np.asarray(r["error"][model]), np.asarray(r["error_se"][model])
            ax.plot(r["sizes"], mean, "o-", ms=4, color=color, label=label)
            ax.fill_between(r["sizes"], mean - se, mean + se, color=color, alpha=0.15)
        ax.set(xscale="log", xlabel="training rows m", ylabel="held-out error", title=title)
    axes[0].legend()
    return img(fig, "Learning curves of Gaussian NB, LDA and softmax regression")


def gda_verdict() -> str:
    """The prose under the tables, each number taken from them."""
    out = []
    for name, title in (("iris", "Iris"), ("breast_cancer", "Breast cancer")):
        r = gda_results()[name]
        err = {m: [float(f"{e:.3f}") for e in r["error"][m]] for m in GDA_NAMES}
        sizes = r["sizes"]
        gen_first = min(err["gaussian_nb"][0], err["lda"][0])
        if gen_first < err["softmax"][0]:
            first = (
                f"at the smallest size (m = {sizes[0]}) the generative side wins: LDA "
                f"{q3(err['lda'][0])} against softmax {q3(err['softmax'][0])}"
            )
        else:
            first = (
                f"at the smallest size (m = {sizes[0]}) softmax regression is already better: "
                f"{q3(err['softmax'][0])} against LDA's {q3(err['lda'][0])}, "
                "no small-sample advantage for the generative side"
            )
        lda_ahead = [m for i, m in enumerate(sizes) if err["lda"][i] < err["softmax"][i]]
        if lda_ahead and lda_ahead != list(sizes):
            middle = "; LDA is ahead of softmax regression at m = " + ", ".join(
                str(m) for m in lda_ahead
            )
        elif lda_ahead:
            middle = "; LDA stays ahead of softmax regression at every size"
        else:
            middle = "; softmax regression is ahead of LDA at every size"
        last = sizes[-1]
        ends = [
            f"softmax regression {verb(err['softmax'][-1] < err[m][-1])} "
            f"{GDA_NAMES[m]} ({q3(err['softmax'][-1])} against {q3(err[m][-1])})"
            for m in ("gaussian_nb", "lda")
        ]
        out.append(
            f"<li><strong>{title}</strong>: {first}{middle}. At m = {last}, "
            f"{ends[0]} and {ends[1]}.</li>"
        )
    return "<ul>" + "".join(out) + "</ul>"


# -- posterior next to the MLE ----------------------------------------------------------------


POSTERIOR_WORDS = ("free", "call", "txt", "prize", "later")


@functools.cache
def spam_posterior():
    """Exact (conjugate) posterior of Bernoulli NB on the presence of five words in SMS."""
    import pandas as pd

    X, y, words = _sms_words(POSTERIOR_WORDS)
    X = pd.DataFrame(X, columns=list(words))  # the words name the "feature" coordinate
    model = genprob.BernoulliNB().fit(X, y)
    idata = model.posterior(X, y, method="exact", num_samples=2000, num_chains=2, random_state=0)
    return model, idata, words


def posterior_table() -> str:
    _, idata, _ = spam_posterior()
    table = genprob.mle_vs_posterior_table(idata, var_names=["probs"])
    header = list(table.columns)
    rows = []
    for record in table.itertuples(index=False):
        rows.append(
            [
                f"{v:.4f}"
                if isinstance(v, float) and not np.isnan(v) and name not in ("ess_bulk",)
                else (f"{v:.0f}" if name == "ess_bulk" else str(v))
                for name, v in zip(header, record, strict=True)
            ]
        )
    for row in rows:
        if "r_hat" in header:
            j = header.index("r_hat")
            row[j] = row[j] if row[j] == "nan" else f"{float(row[j]):.3f}"
    return html_table(header, rows)


def posterior_figure() -> str:
    """Posterior draws of p(word | class) with the 94% HDI and the MLE (the smoothed fit) marked."""
    _, idata, words = spam_posterior()
    draws, mle = idata.posterior["probs"], idata.mle["probs"]
    hdi_low, hdi_high = 0.03, 0.97
    fig, axes = plt.subplots(2, len(words), figsize=(12, 4.2))
    for row, (color, label) in enumerate(zip(COLORS, ("ham", "spam"), strict=False)):
        for ax, word in zip(axes[row], words, strict=True):
            values = np.asarray(draws.sel({"class": label, "feature": word})).ravel()
            ax.hist(values, bins=40, density=True, color=color, alpha=0.5)
            low, high = np.quantile(values, [hdi_low, hdi_high])
            ax.plot([low, high], [0, 0], color="k", lw=4, solid_capstyle="butt")
            ax.axvline(float(mle.sel({"class": label, "feature": word})), color="k", ls="--")
            ax.set(title=f'p("{word}" | {label})', yticks=[])
            ax.tick_params(axis="x", labelsize=7)
            ax.xaxis.set_major_locator(matplotlib.ticker.MaxNLocator(4))
    fig.suptitle("Exact posterior draws; dashed: the MLE (smoothed fit); bar: 3%-97% quantiles")
    fig.tight_layout()
    return img(fig, "Posterior of the word probabilities with the MLE marked")


def posterior_forest() -> str:
    """genprob.plot_forest on the same draws: 94% HDI, posterior mean and MLE per entry."""
    fig = _spam_forest("exact posterior against the MLE")
    return img(fig, "Forest plot of the word probabilities with the MLE marked")


# -- penguins: measurements and categories (models/penguins_mixed.py) ----------------------------


@functools.cache
def penguin_results() -> dict:
    import contextlib

    script = _model_script("penguins_mixed")
    with contextlib.redirect_stdout(io.StringIO()):
        return script.main()


def penguin_tables() -> str:
    """Held-out accuracy of the three models, P(island | species), and the sentence on them."""
    r = penguin_results()
    acc, sd = r["accuracy"], r["accuracy_std"]
    models = [
        ("mixed", "MixedNB", "4 Gaussian + island, sex"),
        ("gaussian_only", "GaussianNB", "4 measurements"),
        ("categorical_only", "MixedNB", "island, sex only"),
    ]
    accuracy = html_table(
        ["model", "columns", "held-out accuracy"],
        [[m, cols, f"{acc[key]:.3f} ± {sd[key]:.3f}"] for key, m, cols in models],
    )
    table = r["island_given_species"]
    islands = sorted(next(iter(table.values())))
    island = html_table(
        ["P(island | species)", *islands],
        [[species, *(f"{table[species][i]:.3f}" for i in islands)] for species in table],
    )
    home = {s: max(table[s], key=table[s].get) for s in table}
    spread = [s for s in table if table[s][home[s]] < 0.5]
    sentence = "The fitted island probabilities (smoothed, last split) show why the island helps: "
    sentence += ", ".join(
        f"{s} {q3(table[s][home[s]])} on {home[s]}" for s in table if s not in spread
    )
    if spread:
        sentence += "; " + ", ".join(
            f"{s} spread over all three ({', '.join(q3(table[s][i]) for i in islands)})"
            for s in spread
        )
    return f"{accuracy}\n{island}\n<p>{sentence}.</p>"


# -- gallery: spam filter, Poisson counts, kernel-density NB (models/*.py, run small) -------------


def _quiet_main(name, **kwargs) -> dict:
    import contextlib
    import warnings

    script = _model_script(name)
    with contextlib.redirect_stdout(io.StringIO()), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return script.main(**kwargs)


@functools.cache
def spam_results() -> dict:
    """``models/spam_filter.main`` at its default settings (one split, two closed-form fits)."""
    return _quiet_main("spam_filter")


def spam_tables() -> str:
    """Settings, the accuracy table and the sentence on the telling words, from one run."""
    r = spam_results()
    rows = []
    for key, label in (("bernoulli", "BernoulliNB (presence)"), ("multinomial", "MultinomialNB")):
        (tn, fp), (fn, tp) = np.asarray(r["confusion"][key]).tolist()
        rows.append(
            [label, f"{r['accuracy'][key]:.4f}", f"{fp} of {tn + fp:,}", f"{fn} of {fn + tp:,}"]
        )
    settings = (
        f"<p>Settings: stratified split, 25% held out (<code>seed=0</code>): {r['n_train']:,} "
        f"training and {r['n_test']:,} held-out messages, {r['vocabulary_size']:,} words, "
        "smoothing <code>alpha = 1</code>. Computed by the script while this site is built.</p>"
    )
    table = html_table(["model", "held-out accuracy", "ham flagged as spam", "spam missed"], rows)
    words, weights = r["spam_words"]["multinomial"], r["spam_weights"]["multinomial"]
    same = set(words) == set(r["spam_words"]["bernoulli"])
    error = max(r["boundary_error"].values())
    text = (
        "Both stories have log-odds linear in the features, so "
        "<code>genprob.linear_boundary(story, params, spam, ham)</code> returns "
        "<code>(w, b)</code> "
        "with <code>w · x + b = log p(spam | x) - log p(ham | x)</code> (checked on the held-out "
        f"messages to {error:.0e}). The largest weights are the most spam-indicative words"
        + (", the same ten for both stories" if same else "")
        + f": <em>{html.escape(words[0])}</em> ({weights[0]:+.1f} in the multinomial story: each "
        f"occurrence multiplies the odds of spam by about {np.exp(weights[0]):,.0f}), "
        + ", ".join(f"<em>{html.escape(w)}</em>" for w in words[1:])
        + ". The most ham-indicative are "
        + ", ".join(f"<em>{html.escape(w)}</em>" for w in r["ham_words"]["multinomial"][:7])
        + " (the corpus writes placeholders as <code>&amp;lt;#&amp;gt;</code>, hence "
        "<em>lt</em> and <em>gt</em>)."
    )
    return f"{settings}\n{table}\n<p>{text}</p>"


#: The closed form is cross-checked on the first two digits only: L-BFGS on all ten takes
#: longer than the rest of the gallery together.
POISSON_CROSSCHECK_CLASSES = 2


@functools.cache
def poisson_results() -> dict:
    return _quiet_main("poisson_counts", crosscheck_classes=POISSON_CROSSCHECK_CLASSES)


def poisson_table() -> str:
    r = poisson_results()
    ink = r["total_ink"]
    verdict = "passed" if r["crosscheck_passed"] else "FAILED"
    rows = [
        ["PoissonNB held-out accuracy", f"{r['accuracy']['poisson']:.4f}"],
        ["MultinomialNB held-out accuracy", f"{r['accuracy']['multinomial']:.4f}"],
        ["majority-class baseline", f"{r['chance']:.4f}"],
        ["images on which the two predict the same digit", f"{r['agreement']:.1%}"],
        ["median variance / mean of a pixel's counts in a class", f"{r['dispersion']:.2f}"],
        ["expected total ink per digit", f"{min(ink):.0f} to {max(ink):.0f}"],
        [
            f"cross-check on digits 0 to {POISSON_CROSSCHECK_CLASSES - 1}: largest relative "
            "difference of the rates, closed form against L-BFGS",
            f"{r['crosscheck_max_rel_diff']:.1e} ({verdict})",
        ],
    ]
    table = html_table(["quantity", "value"], rows)
    p, m, chance = r["accuracy"]["poisson"], r["accuracy"]["multinomial"], r["chance"]
    text = (
        f"PoissonNB makes {q(f'{p:.4f}')} and MultinomialNB {q(f'{m:.4f}')} against a baseline "
        f"of {q(f'{chance:.4f}')}; a pixel's counts vary {q(rows[4][1])} times "
        "as much as their mean (a Poisson has 1)."
    )
    return f"{table}\n<p>{text}</p>"


KDE_SPLITS = 3


@functools.cache
def kde_results() -> dict:
    """``models/kde_naive_bayes.main`` with 3 splits (the script's default is 5)."""
    return _quiet_main("kde_naive_bayes", n_splits=KDE_SPLITS)


def kde_table() -> str:
    r = kde_results()
    err, ll = r["error"], r["log_likelihood"]
    best_err, best_ll = int(np.argmin(err)), int(np.argmax(ll))

    def loglik(v):
        return f"{v:.1f}" if abs(v) < 100 else f"{v:.0f}"

    rows = [
        [f"{h:.2g}", f"{e:.3f}", loglik(v)]
        for h, e, v in zip(r["bandwidths"], err, ll, strict=True)
    ]
    rows.append(["Gaussian NB (parametric)", f"{r['gaussian_nb_error']:.3f}", "-"])
    bold = {(i, 1) for i, e in enumerate(err) if f"{e:.3f}" == f"{err[best_err]:.3f}"}
    bold.add((best_ll, 2))
    table = html_table(
        ["bandwidth h", "held-out error", "held-out log p(x, y) per wine"], rows, bold
    )
    settings = (
        "<p>Settings: wine (178 wines, 13 measurements standardized on each training set), "
        f"{KDE_SPLITS} stratified splits with 30% held out (<code>seed=0</code>); computed by the "
        "script while this site is built.</p>"
    )
    text = (
        "A tiny bandwidth puts a spike on every training value (over-fitting: each feature is "
        "decided by its nearest training value, and the held-out density collapses); a huge one "
        "smears every class into one broad bump, and the class prior alone decides "
        f"({q3(err[-1])}: the error of always answering the most common cultivar). The smallest "
        f"error, {q3(err[best_err])}, is at h = {q(rows[best_err][0])}, the best held-out density "
        f"at h = {q(rows[best_ll][0])}; Gaussian NB, the parametric counterpart, makes "
        f"{q3(r['gaussian_nb_error'])} on the same splits."
    )
    return f"{settings}\n{table}\n<p>{text}</p>"


# -- model-based classification (issue 44) --------------------------------------------------------
def _two_blob_class(seed: int = 0, n: int = 150):
    """Class "a" is two separate blobs, class "b" one blob between them: one Gaussian per class
    cannot draw this boundary, a mixture of two can."""
    rng = np.random.default_rng(seed)
    a = np.vstack(
        [
            rng.multivariate_normal([-2.5, 0.0], [[0.6, 0.3], [0.3, 0.6]], n // 2),
            rng.multivariate_normal([2.5, 0.5], [[0.6, -0.3], [-0.3, 0.6]], n // 2),
        ]
    )
    b = rng.multivariate_normal([0.0, 0.3], [[0.5, 0.0], [0.0, 1.5]], n)
    return np.vstack([a, b]), np.repeat(["a", "b"], [len(a), len(b)])


@functools.cache
def _mda_fit():
    import warnings

    X, y = _two_blob_class()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # collapsed candidates are table gaps
        model = genprob.MixtureDiscriminantAnalysis(structure="all", n_components=(1, 2, 3))
        model.fit(X, y)
    return X, y, model


def mda_bic_figure() -> str:
    """The BIC table of the two-blob example as mclust plots it, one panel per class."""
    from genprob.plots import plot_bic

    _, _, model = _mda_fit()
    return img(plot_bic(model), "BIC of every structure and number of components")


def mda_summary() -> str:
    """``model.summary(X, y)`` of the two-blob fit, as printed."""
    X, y, model = _mda_fit()
    return f"<pre><code>{html.escape(model.summary(X, y).text)}</code></pre>"


def mda_class_plots() -> str:
    """``genprob.plots.plot_classification`` and ``plot_uncertainty`` of the two-blob fit."""
    from matplotlib.figure import Figure

    from genprob import plots

    X, _, model = _mda_fit()
    fig = Figure(figsize=(8.5, 3.6), layout="constrained")
    left, right = fig.subplots(1, 2, sharey=True)
    plots.plot_classification(model, X, ax=left)
    plots.plot_uncertainty(model, X, ax=right)
    return img(fig, "Rows by predicted class, and marker size by uncertainty 1 - max p(k | x)")


def mda_chosen() -> str:
    """What the fit chose per class (the numbers of the figure above)."""
    _, _, model = _mda_fit()
    table = model.bic_table_
    rows = [
        [c, s, int(g), f"{table.loc[(c, s), g]:.1f}"]
        for c, s, g in zip(model.classes_, model.structure_, model.n_components_, strict=True)
    ]
    return html_table(["class", "structure", "components G", "BIC (mclust's sign)"], rows)


def mda_regions() -> str:
    """Decision regions of QDA (one Gaussian per class) and of the chosen mixtures."""
    X, y, model = _mda_fit()
    classes = np.unique(y)
    qda = genprob.MixtureDiscriminantAnalysis(structure="VVV", n_components=1).fit(X, y)
    fig, axes = plt.subplots(1, 2, figsize=(8.5, 3.6), sharey=True)
    xs, ys = np.linspace(-5.5, 5.5, 220), np.linspace(-4.5, 5.0, 200)
    chosen = ", ".join(
        f"{c}: {s} x {g}"
        for c, s, g in zip(classes, model.structure_, model.n_components_, strict=True)
    )
    for ax, (title, m) in zip(
        axes,
        [("one Gaussian per class (VVV, QDA)", qda), (f"chosen by BIC ({chosen})", model)],
        strict=True,
    ):
        _regions(ax, m, xs, ys, classes)
        _scatter(ax, X, y, classes)
        ax.set(title=f"{title}\ntraining accuracy {m.score(X, y):.3f}", xlabel="$x_1$")
    axes[0].set_ylabel("$x_2$")
    axes[0].legend(loc="upper left", fontsize=8)
    return img(fig, "Decision regions of one Gaussian per class and of the mixtures chosen by BIC")


def mda_semi_supervised() -> str:
    """Four labels per class: the labeled rows alone against EM over the unlabeled rows."""
    import warnings

    X, y = _two_blob_class(seed=1)
    X_test, y_test = _two_blob_class(seed=2)
    rng = np.random.default_rng(0)
    partial = np.full(len(y), -1, dtype=object)
    for label, count in (("a", 4), ("b", 4)):
        # two labels on each blob of class "a", so that every component starts from a label
        rows = np.flatnonzero(y == label)
        if label == "a":
            rows = np.r_[
                rng.choice(rows[: len(rows) // 2], 2), rng.choice(rows[len(rows) // 2 :], 2)
            ]
        else:
            rows = rng.choice(rows, count, replace=False)
        partial[rows] = label
    labeled = partial != -1
    settings = dict(structure=["EII", "VII", "EEE", "VVV"], n_components=2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        alone = genprob.MixtureDiscriminantAnalysis(structure="VII", n_components=(1, 2))
        alone.fit(X[labeled], partial[labeled].astype(str))
        semi = genprob.MixtureDiscriminantAnalysis(**settings).fit(X, partial)
    classes = np.array(["a", "b"])
    fig, axes = plt.subplots(1, 2, figsize=(8.5, 3.6), sharey=True)
    xs, ys = np.linspace(-5.5, 5.5, 220), np.linspace(-4.5, 5.0, 200)
    for ax, (title, m) in zip(
        axes,
        [("the 8 labeled rows alone", alone), ("with the unlabeled rows (EM)", semi)],
        strict=True,
    ):
        _regions(ax, m, xs, ys, classes)
        ax.scatter(X[~labeled, 0], X[~labeled, 1], s=5, color="0.6", label="unlabeled")
        _scatter(ax, X[labeled], partial[labeled].astype(str), classes, edgecolor="k", zorder=3)
        ax.set(title=f"{title}\ntest accuracy {m.score(X_test, y_test):.3f}", xlabel="$x_1$")
    axes[0].set_ylabel("$x_2$")
    axes[0].legend(loc="upper left", fontsize=8)
    return img(fig, "Semi-supervised model-based classification with four labels per class")


def mda_benchmark_table() -> str:
    """The committed output of benchmarks/semi_supervised_mda.py, whatever it shows."""
    import json

    path = ROOT / "benchmarks" / "results" / "semi_supervised_mda.json"
    result = json.loads(path.read_text())
    methods = result["methods"]
    rows = []
    for r in result["rows"]:
        cells = [r["data"], r["labels_per_class"]]
        cells += [
            f"{r['accuracy'][m]:.3f}" + (f" ({r['failed'][m]} failed)" if r["failed"][m] else "")
            for m in methods
        ]
        rows.append(cells)
    bold = {
        (i, 2 + j)
        for i, r in enumerate(result["rows"])
        for j, m in enumerate(methods)
        if f"{r['accuracy'][m]:.3f}" == f"{max(r['accuracy'].values()):.3f}"
    }
    seeds = result["rows"][0]["seeds"]
    note = (
        f"<p>Mean test accuracy over {seeds} seeds (the same splits for every method); "
        f"structures chosen from {', '.join(result['structures'])}. Made by "
        "<code>python benchmarks/semi_supervised_mda.py</code>, committed in "
        "<code>benchmarks/results/semi_supervised_mda.json</code>.</p>"
    )
    return note + html_table(["data", "labels per class", *methods], rows, bold)


def mda_directions() -> str:
    """Iris on the first two MclustDR directions of mclust's MclustDA model, with the
    eigenvalues beside mclust's (tests/references/mclust/mclustdr_reference.json)."""
    import json

    X, y = genprob.datasets.load_iris()
    names = np.array(["setosa", "versicolor", "virginica"])[y]
    model = genprob.MixtureDiscriminantAnalysis(structure="EEE", n_components=(1, 2), em_tol=1e-12)
    model.fit(X, y)
    path = ROOT / "tests" / "references" / "mclust" / "mclustdr_reference.json"
    reference = json.loads(path.read_text())["iris_mclustda"]["cases"]
    fig, axes = plt.subplots(1, 2, figsize=(8.5, 3.6))
    for ax, (weight, title) in zip(
        axes, [(1.0, "means (mean_weight=1)"), (0.5, "means and covariances (0.5)")], strict=True
    ):
        dr = genprob.DiscriminantDirections(model, mean_weight=weight, n_directions=2).fit(X)
        theirs = reference["1" if weight == 1.0 else "0.5"]["evalues"][:2]
        _scatter(ax, dr.transform(X), names, names[[0, 50, 100]])
        ours = ", ".join(f"{v:.4f}" for v in dr.eigenvalues_[:2])
        mclust = ", ".join(f"{v:.4f}" for v in theirs)
        ax.set(
            title=f"{title}\neigenvalues {ours}\n(mclust: {mclust})",
            xlabel="direction 1",
            ylabel="direction 2",
        )
    axes[0].legend(loc="best", fontsize=8)
    return img(fig, "Iris on the first two discriminant directions of its Gaussian mixtures")


# -- Bayes in closed form (issue 59) --------------------------------------------------------------
PREDICTIVE_SIZES = (5, 10, 20, 50, 200)
PREDICTIVE_SPLITS = 8


@functools.cache
def _predictive_runs():
    """Test log-loss of plug-in and predictive rules on breast cancer as rows per class grow,
    and the pooled test probabilities of Gaussian NB at 10 rows a class."""
    import warnings

    X, y = genprob.datasets.load_breast_cancer()
    losses, pooled = {}, {"plugin": [], "predictive": [], "y": []}
    for size in PREDICTIVE_SIZES:
        for seed in range(PREDICTIVE_SPLITS):
            rng = np.random.default_rng(seed)
            train = np.concatenate(
                [rng.choice(np.flatnonzero(y == k), size, replace=False) for k in (0, 1)]
            )
            test = np.setdiff1d(np.arange(len(y)), train)
            for name, make in (
                ("Gaussian NB", genprob.GaussianNB),
                # tol: the plug-in rule wherever the covariances are nonsingular
                ("QDA", lambda **k: genprob.QuadraticDiscriminantAnalysis(tol=1e-12, **k)),
            ):
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    try:
                        model = make().fit(X[train], y[train])
                        rules = ("plugin", "predictive")
                    except ValueError:  # singular covariances: the plug-in rule is undefined
                        model = make(reg_param=0.5).fit(X[train], y[train])  # same statistics
                        rules = ("predictive",)
                for rule in rules:
                    log_proba = model.predict_log_proba(X[test], method=rule)
                    loss = -np.mean(log_proba[np.arange(len(test)), y[test]])
                    losses.setdefault((name, rule, size), []).append(loss)
                    if name == "Gaussian NB" and size == 10:
                        pooled[rule].append(np.exp(log_proba[:, 1]))
            if size == 10:
                pooled["y"].append(y[test])
    pooled = {k: np.concatenate(v) for k, v in pooled.items()}
    return losses, pooled


def predictive_figure() -> str:
    """Left: mean test log-loss against rows per class; right: reliability at 10 rows a class."""
    from sklearn.calibration import calibration_curve

    losses, pooled = _predictive_runs()
    fig, (left, right) = plt.subplots(1, 2, figsize=(8.4, 3.2))
    for i, name in enumerate(("Gaussian NB", "QDA")):
        for rule, style in (("plugin", "--"), ("predictive", "-")):
            sizes = [s for s in PREDICTIVE_SIZES if (name, rule, s) in losses]
            values = [np.mean(losses[name, rule, s]) for s in sizes]
            left.plot(sizes, values, style, marker="o", color=COLORS[i], label=f"{name}, {rule}")
    left.set(xscale="log", yscale="log", xlabel="training rows per class",
             ylabel="mean test log-loss")  # fmt: skip
    left.xaxis.set_major_formatter(matplotlib.ticker.ScalarFormatter())
    left.set_xticks(PREDICTIVE_SIZES)
    left.legend(frameon=False, fontsize=7)
    right.plot([0, 1], [0, 1], ":", color="grey")
    for rule, style in (("plugin", "--"), ("predictive", "-")):
        observed, predicted = calibration_curve(pooled["y"], pooled[rule], n_bins=8)
        right.plot(predicted, observed, style, marker="o", color=COLORS[0], label=rule)
    right.set(xlabel="predicted p(benign)", ylabel="observed frequency",
              title="Gaussian NB, 10 rows a class")  # fmt: skip
    right.legend(frameon=False, fontsize=7)
    return img(fig, "test log-loss against rows per class, and reliability curves")


def predictive_table() -> str:
    """The numbers behind the figure's left panel."""
    losses, _ = _predictive_runs()
    rows = []
    for size in PREDICTIVE_SIZES:
        cells = [size]
        for name in ("Gaussian NB", "QDA"):
            for rule in ("plugin", "predictive"):
                values = losses.get((name, rule, size))
                cells.append(f"{np.mean(values):.3f}" if values else "no fit")
        rows.append(cells)
    header = ["rows per class", "Gaussian NB plug-in", "Gaussian NB predictive",
              "QDA plug-in", "QDA predictive"]  # fmt: skip
    return html_table(header, rows)


def bayes_factor_table() -> str:
    """log evidence and BIC of Gaussian NB, LDA and QDA on iris and wine (every row)."""
    rows = []
    for data in ("iris", "wine"):
        X, y = getattr(genprob.datasets, f"load_{data}")()
        fits = {}
        for name, make in (
            ("Gaussian NB", genprob.GaussianNB),
            ("LDA", genprob.LinearDiscriminantAnalysis),
            ("QDA", genprob.QuadraticDiscriminantAnalysis),
        ):
            model = make().fit(X, y)
            fits[name] = (model.log_evidence(X, y), model.bic(X, y))
        best = max(v[0] for v in fits.values())
        for name, (evidence, bic) in fits.items():
            rows.append([data, name, f"{evidence:,.1f}", f"{evidence - best:,.1f}",
                         f"{bic:,.1f}", f"{-bic / 2:,.1f}"])  # fmt: skip
    header = ["data", "story", "log evidence", "log Bayes factor to the best", "BIC",
              "-BIC / 2"]  # fmt: skip
    return html_table(header, rows)


def predictive_benchmark_table() -> str:
    """The committed output of benchmarks/bench_predictive.py, whatever it shows."""
    import json

    result = json.loads((ROOT / "benchmarks" / "results" / "bench_predictive.json").read_text())
    rows = []
    for r in result["rows"]:
        fmt = lambda v: "—" if v is None else f"{v:.3f}"  # noqa: E731
        better = r["predictive_better"]
        rows.append([
            r["data"], r["model"], r["features"], fmt(r["plugin"]),
            fmt(r["predictive_where_plugin"]), fmt(r["predictive"]),
            f"{r['plugin_failed']} / {result['splits']}",
            "—" if better is None else f"{100 * better:.0f}%",
        ])  # fmt: skip
    header = ["data", "model", "features", "plug-in", "predictive (same splits)",
              "predictive (all splits)", "plug-in undefined", "predictive lower"]  # fmt: skip
    note = (
        f"<p>Mean test log-loss over {result['splits']} random splits with "
        f"{result['rows_per_class']} training rows per class (the rest tested). Made by "
        "<code>python benchmarks/bench_predictive.py</code>, committed in "
        "<code>benchmarks/results/bench_predictive.json</code>.</p>"
    )
    return note + html_table(header, rows)
