"""A short tour: every built-in story fitted on a 70% split of bundled real data, scored on the
rest; ``genprob demo`` puts its table in the report, ``python -m genprob.app.tour`` prints it."""

from __future__ import annotations

import time
from functools import partial
from typing import NamedTuple

import numpy as np
from sklearn.feature_extraction.text import CountVectorizer
from sklearn.model_selection import train_test_split

import genprob
from genprob import datasets

__all__ = ["TourRow", "cases", "quick_cases", "run", "table", "markdown_table", "main"]


class TourRow(NamedTuple):
    """One fitted (story, data set) pair (docs/cli.md describes the fields)."""

    story: str
    data: str
    accuracy: float
    loglik_per_row: float
    num_parameters: int
    seconds: float
    train_rows: int
    test_rows: int


def cases():
    """(label, estimator factory, data set name) for every built-in story."""
    lda_auto = partial(genprob.LinearDiscriminantAnalysis, solver="lsqr", shrinkage="auto")
    qda_reg = partial(genprob.QuadraticDiscriminantAnalysis, reg_param=0.1)
    mixed = partial(genprob.MixedNB, families=datasets.PENGUIN_FAMILIES)
    return [
        ("GaussianNB", genprob.GaussianNB, "iris"),
        ("LDA (svd)", genprob.LinearDiscriminantAnalysis, "iris"),
        ("QDA", genprob.QuadraticDiscriminantAnalysis, "iris"),
        ("GaussianNB", genprob.GaussianNB, "wine"),
        ("LDA (lsqr, shrinkage=auto)", lda_auto, "wine"),
        ("QDA (reg_param=0.1)", qda_reg, "wine"),
        ("GaussianNB", genprob.GaussianNB, "breast_cancer"),
        ("LDA (svd)", genprob.LinearDiscriminantAnalysis, "breast_cancer"),
        ("QDA (reg_param=0.1)", qda_reg, "breast_cancer"),
        ("LDA (svd, rank-deficient)", genprob.LinearDiscriminantAnalysis, "digits"),
        ("BernoulliNB (binarize=7.5)", partial(genprob.BernoulliNB, binarize=7.5), "digits"),
        ("MultinomialNB", genprob.MultinomialNB, "digits"),
        ("CategoricalNB", partial(genprob.CategoricalNB, min_categories=17), "digits"),
        ("PoissonNB", genprob.PoissonNB, "digits"),
        ("MultinomialNB (word counts)", genprob.MultinomialNB, "sms_spam"),
        ("BernoulliNB (word presence)", genprob.BernoulliNB, "sms_spam"),
        ("MixedNB (Gaussian + categorical)", mixed, "penguins"),
    ]


def quick_cases():
    """A fast subset of :func:`cases`: the Gaussian stories on iris, Bernoulli NB on digits."""
    wanted = {
        ("GaussianNB", "iris"),
        ("LDA (svd)", "iris"),
        ("QDA", "iris"),
        ("BernoulliNB (binarize=7.5)", "digits"),
    }
    return [case for case in cases() if (case[0], case[2]) in wanted]


def _split(name):
    if name == "sms_spam":
        texts, labels = datasets.load_sms_spam()
        train_texts, test_texts, y_train, y_test = train_test_split(
            np.asarray(texts, dtype=object),
            np.asarray(labels),
            test_size=0.3,
            stratify=labels,
            random_state=0,
        )
        vectorizer = CountVectorizer().fit(train_texts)
        return vectorizer.transform(train_texts), vectorizer.transform(test_texts), y_train, y_test
    if name == "penguins":
        X, y = datasets.load_penguins(as_frame=True)
    else:
        X, y = datasets.load(name)
    return train_test_split(X, y, test_size=0.3, stratify=y, random_state=0)


def run(selected=None, progress=None) -> list[TourRow]:
    """A :class:`TourRow` per case of ``selected`` (default: all); ``progress(label, data)``."""
    rows, splits = [], {}
    for label, factory, data in cases() if selected is None else selected:
        if progress is not None:
            progress(label, data)
        if data not in splits:
            splits[data] = _split(data)
        X_train, X_test, y_train, y_test = splits[data]
        estimator = factory()
        start = time.perf_counter()
        estimator.fit(X_train, y_train)
        seconds = time.perf_counter() - start
        joint = estimator.predict_joint_log_proba(X_test)
        codes = np.searchsorted(estimator.classes_, np.asarray(y_test))
        rows.append(
            TourRow(
                story=label,
                data=data,
                accuracy=float(estimator.score(X_test, y_test)),
                loglik_per_row=float(joint[np.arange(len(codes)), codes].mean()),
                num_parameters=int(estimator.num_parameters()),
                seconds=seconds,
                train_rows=int(X_train.shape[0]),
                test_rows=int(X_test.shape[0]),
            )
        )
    return rows


def markdown_table(header, rows) -> str:
    """A Markdown table of string cells (the tour's and the demo report's)."""
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
    return "\n".join(lines)


def table(rows) -> str:
    """The rows as a Markdown table (the report's, and what ``python -m`` prints)."""
    header = [
        "story",
        "data",
        "train/test rows",
        "accuracy",
        "log-lik / row",
        "parameters",
        "fit s",
    ]
    cells = [
        [r.story, r.data, f"{r.train_rows}/{r.test_rows}", f"{r.accuracy:.3f}"]
        + [f"{r.loglik_per_row:.2f}", f"{r.num_parameters:,}", f"{r.seconds:.2f}"]
        for r in rows
    ]
    return markdown_table(header, cells)


def main() -> int:
    print(table(run()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
