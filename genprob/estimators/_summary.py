"""``MixtureDiscriminantAnalysis.summary()``: mclust's ``summary(MclustDA)`` as text and pandas
DataFrames (docs/howto/model_based.md, "Summary and plots")."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

__all__ = ["MixtureSummary", "brier_score", "summarize"]

_RULE = "-" * 48
#: the line that states the sign of the summary's BIC
SIGN_NOTE = "BIC = 2 log L - df log n: mclust's sign, larger is better (est.bic(X) is minus it)"


@dataclass(frozen=True, repr=False)
class MixtureSummary:
    """What :meth:`MixtureDiscriminantAnalysis.summary` returns; ``str()`` is the printed text.

    Attributes:
        text: the summary as printed (also ``str()`` and ``repr()``).
        type: ``"EDDA"``, ``"MclustDA"`` or ``"MclustSSC"`` (a fit with unlabeled rows).
        log_likelihood: the fit's log-likelihood (``log_likelihood_``).
        n: the rows the criterion counted (weighted).
        df: the free parameters (``num_parameters()``).
        bic: ``2 log L - df log n``, mclust's sign (larger is better): ``-est.bic(X)``.
        models: a DataFrame, a row per class: ``n``, ``%``, ``structure``, ``G`` and, when each
            class chose its model on its own rows (MclustDA), the class's ``log_likelihood``,
            ``df`` and ``BIC`` (mclust's sign; NaN otherwise).
        top: the best candidates of the criterion table (per class for MclustDA): ``structure``,
            ``G`` and the criterion's value, best first (None without a table).
        confusion: rows the true class, columns the predicted one (None without ``X, y``).
        error: the share of misclassified rows (None without ``X, y``).
        brier: mclust's Brier score, ``sum((z - onehot(y))**2) / (2 n)`` (None without ``X, y``).
    """

    text: str
    type: str
    log_likelihood: float
    n: float
    df: int
    bic: float
    models: object
    top: object = None
    confusion: object = None
    error: float | None = None
    brier: float | None = None

    def __str__(self) -> str:
        return self.text

    __repr__ = __str__

    def to_frame(self):
        """The per-class table (:attr:`models`), with the overall numbers in ``attrs``."""
        frame = self.models.copy()
        frame.attrs.update(
            type=self.type, log_likelihood=self.log_likelihood, n=self.n, df=self.df, bic=self.bic
        )
        return frame


def brier_score(proba, indicator) -> float:
    """mclust's ``BrierScore``: ``sum((z - indicator)**2) / (2 n)``, ``indicator`` (n, K) the
    one-hot true classes, rows of ``proba`` rescaled to sum to 1 (0 is perfect, 1 the worst)."""
    proba = np.asarray(proba, dtype=np.float64)
    proba = proba / proba.sum(axis=1, keepdims=True)
    return float(np.sum((proba - np.asarray(indicator)) ** 2) / (2 * len(proba)))


def summarize(model, X=None, y=None, class_df=None, top: int = 3) -> MixtureSummary:
    """The summary of a fitted ``MixtureDiscriminantAnalysis`` (its :meth:`summary`);
    ``class_df``: each class's own parameter count, read when each class chose its model."""
    import pandas as pd

    classes = model.classes_
    rows = (getattr(model, "_tables", None) or {}).get("rows")
    if rows is None:
        raise ValueError(
            "summary(): this fit keeps no criterion table (partial_fit, chunks or Dask, or a "
            "file saved before issue 58); refit it with fit(X, y) on the rows in memory."
        )
    n, counts = float(rows["n"]), np.asarray(rows["class_counts"], dtype=np.float64)
    df = int(model.num_parameters())
    log_l = float(model.log_likelihood_)
    bic = 2.0 * log_l - df * math.log(n)
    table = model.criterion_table_
    per_class = table.index.nlevels == 2
    kind = "MclustSSC" if rows["semi"] else ("MclustDA" if per_class else "EDDA")

    models = pd.DataFrame(
        {
            "n": counts,
            "%": np.round(100 * counts / counts.sum(), 2),
            "structure": list(model.structure_),
            "G": np.asarray(model.n_components_, dtype=int),
            "log_likelihood": np.nan,
            "df": np.nan,
            "BIC": np.nan,
        },
        index=pd.Index(classes, name="class"),
    )
    if per_class:
        bic_table = model.bic_table_
        for k, cls in enumerate(classes):
            df_k = int(class_df[k])
            bic_k = float(bic_table.loc[(cls, model.structure_[k]), int(model.n_components_[k])])
            models.loc[cls, ["log_likelihood", "df", "BIC"]] = [
                (bic_k + df_k * math.log(counts[k])) / 2.0,
                df_k,
                bic_k,
            ]
    best = _top(table, top, per_class)

    confusion = error = brier = None
    if X is not None or y is not None:
        if X is None or y is None:
            raise ValueError("summary(X, y): pass both X and y (or neither).")
        confusion, error, brier = _scores(model, X, y)
    text = _text(kind, log_l, n, df, bic, models, best, table.attrs.get("criterion", "BIC"))
    if confusion is not None:
        text += "\n\n" + _confusion_text(confusion, error, brier)
    return MixtureSummary(text, kind, log_l, n, df, bic, models, best, confusion, error, brier)


def _top(table, top: int, per_class: bool):
    """The ``top`` best cells of the criterion table (per class when it has a class level)."""
    import pandas as pd

    name = table.attrs.get("criterion", "BIC")
    blocks = (
        [(c, table.loc[c]) for c in table.index.get_level_values(0).unique()]
        if per_class
        else [(None, table)]
    )
    frames = []
    for cls, block in blocks:
        long = block.stack().dropna().sort_values(ascending=False).head(top)
        frame = pd.DataFrame(
            {
                "structure": long.index.get_level_values(0),
                "G": long.index.get_level_values(1).astype(int),
                name: long.to_numpy(),
            }
        )
        if per_class:
            frame.insert(0, "class", cls)
        frames.append(frame)
    return pd.concat(frames, ignore_index=True)


def _scores(model, X, y):
    """Confusion matrix, error and Brier score of the labeled rows of ``X, y``."""
    import pandas as pd

    y = np.asarray(y)
    proba = model.predict_proba(X)
    if len(y) != len(proba):
        raise ValueError(f"summary(X, y): y has {len(y)} labels for {len(proba)} rows of X.")
    unlabeled = model._unlabeled_rows(y)
    classes = model.classes_
    labeled = y[~unlabeled]
    known = np.isin(labeled, classes)
    if not known.all():
        raise ValueError(
            f"summary(X, y): y holds labels the model does not know: "
            f"{sorted(set(labeled[~known].tolist()))[:5]} (classes {list(classes)})."
        )
    if not len(labeled):
        raise ValueError("summary(X, y): y has no labeled row to score.")
    where = {c: k for k, c in enumerate(classes.tolist())}
    codes = np.array([where[v] for v in labeled.tolist()], dtype=int)
    proba = proba[~unlabeled]
    predicted = proba.argmax(axis=1)
    K = len(classes)
    counts = np.zeros((K, K), dtype=int)
    np.add.at(counts, (codes, predicted), 1)
    confusion = pd.DataFrame(
        counts,
        index=pd.Index(classes, name="class"),
        columns=pd.Index(classes, name="predicted"),
    )
    return confusion, float(np.mean(codes != predicted)), brier_score(proba, np.eye(K)[codes])


def _number(value) -> str:
    return f"{value:g}" if float(value) != int(value) else str(int(value))


def _text(kind, log_l, n, df, bic, models, top, criterion) -> str:
    import pandas as pd

    title = "Gaussian finite mixture model for classification"
    overall = pd.DataFrame(
        {"log-likelihood": [f"{log_l:.4f}"], "n": [_number(n)], "df": [df], "BIC": [f"{bic:.4f}"]},
        index=[""],
    )
    shown = models.copy()
    shown["n"] = [_number(v) for v in shown["n"]]
    shown["%"] = [f"{v:.2f}" for v in shown["%"]]
    if shown["BIC"].notna().any():
        shown["log_likelihood"] = [f"{v:.4f}" for v in shown["log_likelihood"]]
        shown["df"] = [str(int(v)) for v in shown["df"]]
        shown["BIC"] = [f"{v:.4f}" for v in shown["BIC"]]
        shown = shown.rename(columns={"log_likelihood": "log-likelihood"})
    else:  # one structure across the classes: no class has a criterion of its own
        shown = shown.drop(columns=["log_likelihood", "df", "BIC"])
    best = top.copy()
    best[criterion] = [f"{v:.4f}" for v in best[criterion]]
    parts = [
        _RULE,
        title,
        _RULE,
        "",
        kind,
        _RULE,
        overall.to_string(),
        SIGN_NOTE,
        "",
        shown.to_string(),
        "",
        f"Top of the {criterion} table (mclust's sign)" + (" per class" if "class" in best else ""),
        _RULE,
        best.to_string(index=False),
    ]
    return "\n".join(parts)


def _confusion_text(confusion, error, brier) -> str:
    n = int(confusion.to_numpy().sum())
    return "\n".join(
        [
            f"Confusion matrix of the {n} labeled rows given",
            _RULE,
            confusion.to_string(),
            "",
            f"Classification error = {error:.4f}",
            f"Brier score          = {brier:.4f}",
        ]
    )
