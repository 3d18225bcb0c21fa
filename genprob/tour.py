"""A short tour (``make demo``): fit every built-in story on bundled real data, print a table."""

from __future__ import annotations

import time

import numpy as np
from sklearn.model_selection import train_test_split

from genprob import datasets


def _rows():
    import genprob

    yield "GaussianNB", genprob.GaussianNB(), "iris"


def main() -> int:
    print(f"{'story':<34}{'data':<15}{'accuracy':>9}{'loglik/row':>12}{'params':>8}{'fit s':>8}")
    for label, estimator, data in _rows():
        X, y = datasets.load(data)
        X_train, X_test, y_train, y_test = train_test_split(
            X, y, test_size=0.3, stratify=y, random_state=0
        )
        start = time.perf_counter()
        estimator.fit(X_train, y_train)
        seconds = time.perf_counter() - start
        joint = estimator.predict_joint_log_proba(X_test)
        codes = np.searchsorted(estimator.classes_, y_test)
        loglik = joint[np.arange(len(codes)), codes].mean()
        accuracy = estimator.score(X_test, y_test)
        print(
            f"{label:<34}{data:<15}{accuracy:>9.3f}{loglik:>12.2f}"
            f"{estimator.num_parameters():>8d}{seconds:>8.2f}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
