"""A short tour: fit every built-in story on bundled real data and tabulate the results.

For each (story, data set) pair: a stratified 70/30 split, a closed-form fit on the training part,
and on the held-out part the accuracy and the mean log-likelihood per row
``log p(x, y) = log pi_y + log p(x | y)``, plus the story's number of free parameters and the fit
time (the first fit of a shape includes JAX's compilation).

``python -m genprob.app.tour`` prints the table; ``genprob demo`` (``make demo``) puts it in its
report (:mod:`genprob.app.report`).
"""

from __future__ import annotations

import time
from functools import partial
from typing import NamedTuple

import numpy as np
from sklearn.feature_extraction.text import CountVectorizer
from sklearn.model_selection import train_test_split

import genprob
from genprob import datasets

__all__ = ["TourRow", "cases", "quick_cases", "run", "format_table", "main"]


class TourRow(NamedTuple):
    """One fitted (story, data set) pair of the tour.

    Attributes:
        story: the estimator's label, e.g. ``"QDA (reg_param=0.1)"``.
        data: bundled data set name.
        accuracy: held-out accuracy.
        loglik_per_row: held-out mean of ``log p(x, y)`` per row (nats).
        num_parameters: free parameters of the fitted story, class prior included.
        seconds: wall time of the fit.
        train_rows: rows of the training part.
        test_rows: rows of the held-out part.
    """

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
    """A fast subset of :func:`cases`: the three Gaussian stories on iris and Bernoulli naive
    Bayes on the digits (a few seconds in all)."""
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
    """Fit every case and score it on its held-out part.

    Args:
        selected: ``(label, factory, data)`` triples (default: :func:`cases`).
        progress: optional callable ``progress(label, data)`` called before each fit.

    Returns:
        One :class:`TourRow` per case, in order.
    """
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


def format_table(rows) -> str:
    """The rows as a fixed-width text table."""
    header = f"{'story':<34}{'data':<15}{'accuracy':>9}{'loglik/row':>12}{'params':>9}{'fit s':>8}"
    lines = [header, "-" * len(header)]
    for row in rows:
        lines.append(
            f"{row.story:<34}{row.data:<15}{row.accuracy:>9.3f}{row.loglik_per_row:>12.2f}"
            f"{row.num_parameters:>9d}{row.seconds:>8.2f}"
        )
    return "\n".join(lines)


def main() -> int:
    print(__doc__.split("\n\n")[0])
    print()
    print(format_table(run()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
