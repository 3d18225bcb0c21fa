"""A short tour: fit every built-in story on bundled real data and print a table.

For each (story, data set) pair: a stratified 70/30 split, a closed-form fit on the training part,
and on the held-out part the accuracy and the mean log-likelihood per row
``log p(x, y) = log pi_y + log p(x | y)``, plus the story's number of free parameters and the fit
time (the first fit of a shape includes JAX's compilation).

Run it with ``make demo`` or ``python -m genprob.tour``.
"""

from __future__ import annotations

import time

import numpy as np
from sklearn.feature_extraction.text import CountVectorizer
from sklearn.model_selection import train_test_split

import genprob
from genprob import datasets


def cases():
    """(label, estimator factory, data set name) for every built-in story."""
    return [
        ("GaussianNB", genprob.GaussianNB, "iris"),
        ("LDA (svd)", genprob.LinearDiscriminantAnalysis, "iris"),
        ("QDA", genprob.QuadraticDiscriminantAnalysis, "iris"),
        ("GaussianNB", genprob.GaussianNB, "wine"),
        (
            "LDA (lsqr, shrinkage=auto)",
            lambda: genprob.LinearDiscriminantAnalysis(solver="lsqr", shrinkage="auto"),
            "wine",
        ),
        (
            "QDA (reg_param=0.1)",
            lambda: genprob.QuadraticDiscriminantAnalysis(reg_param=0.1),
            "wine",
        ),
        ("GaussianNB", genprob.GaussianNB, "breast_cancer"),
        ("LDA (svd)", genprob.LinearDiscriminantAnalysis, "breast_cancer"),
        (
            "QDA (reg_param=0.1)",
            lambda: genprob.QuadraticDiscriminantAnalysis(reg_param=0.1),
            "breast_cancer",
        ),
        ("LDA (svd, rank-deficient)", genprob.LinearDiscriminantAnalysis, "digits"),
        ("BernoulliNB (binarize=7.5)", lambda: genprob.BernoulliNB(binarize=7.5), "digits"),
        ("MultinomialNB", genprob.MultinomialNB, "digits"),
        ("CategoricalNB", lambda: genprob.CategoricalNB(min_categories=17), "digits"),
        ("PoissonNB", genprob.PoissonNB, "digits"),
        ("MultinomialNB (word counts)", genprob.MultinomialNB, "sms_spam"),
        ("BernoulliNB (word presence)", genprob.BernoulliNB, "sms_spam"),
        (
            "MixedNB (Gaussian + categorical)",
            lambda: genprob.MixedNB(families=datasets.PENGUIN_FAMILIES),
            "penguins",
        ),
    ]


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
        return (
            vectorizer.transform(train_texts),
            vectorizer.transform(test_texts),
            y_train,
            y_test,
        )
    if name == "penguins":
        X, y = datasets.load_penguins(as_frame=True)
    else:
        X, y = datasets.load(name)
    X_train, X_test, y_train, y_test = train_test_split(
        X, y, test_size=0.3, stratify=y, random_state=0
    )
    return X_train, X_test, y_train, y_test


def main() -> int:
    print(__doc__.split("\n\n")[0])
    print()
    header = f"{'story':<34}{'data':<15}{'accuracy':>9}{'loglik/row':>12}{'params':>9}{'fit s':>8}"
    print(header)
    print("-" * len(header))
    splits = {}
    for label, factory, data in cases():
        if data not in splits:
            splits[data] = _split(data)
        X_train, X_test, y_train, y_test = splits[data]
        estimator = factory()
        start = time.perf_counter()
        estimator.fit(X_train, y_train)
        seconds = time.perf_counter() - start
        joint = estimator.predict_joint_log_proba(X_test)
        codes = np.searchsorted(estimator.classes_, np.asarray(y_test))
        loglik = joint[np.arange(len(codes)), codes].mean()
        accuracy = estimator.score(X_test, y_test)
        print(
            f"{label:<34}{data:<15}{accuracy:>9.3f}{loglik:>12.2f}"
            f"{estimator.num_parameters():>9d}{seconds:>8.2f}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
