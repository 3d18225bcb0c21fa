"""Few labels: semi-supervised model-based discriminant analysis against scikit-learn's
semi-supervised classifiers, on real data (issue 44).

For each data set, labels per class m and seed (the same splits for every method):

1. stratified split: 30% test, 70% training pool; features standardized with the pool's mean
   and standard deviation (no test row seen);
2. keep the labels of m pool rows per class (chosen at random), mark the other pool rows
   unlabeled (y = -1);
3. fit on the pool and score the test split (accuracy):

   * **MDA labeled**: ``MixtureDiscriminantAnalysis(structure=STRUCTURES)`` (one Gaussian per
     class, EDDA, structure chosen by BIC) on the labeled rows alone;
   * **MDA semi-supervised**: the same on the whole pool, unlabeled rows included (MclustSSC:
     EM over the classes of the unlabeled rows, structure chosen by the BIC of the partly
     labeled log-likelihood);
   * **SelfTraining**: ``SelfTrainingClassifier(LogisticRegression(max_iter=1000))``, scikit-
     learn's defaults otherwise (threshold 0.75);
   * **LabelSpreading**: ``LabelSpreading(kernel="knn", n_neighbors=7)`` (the RBF default,
     gamma = 20, leaves most rows isolated on standardized features).

Usage::

    python benchmarks/semi_supervised_mda.py              # 5 seeds, writes the results
    python benchmarks/semi_supervised_mda.py --seeds 2    # a quick look

Writes ``benchmarks/results/semi_supervised_mda.json`` and ``.md`` (the table the docs print).
"""

from __future__ import annotations

import argparse
import json
import time
import warnings
from pathlib import Path

import numpy as np
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import train_test_split
from sklearn.semi_supervised import LabelSpreading, SelfTrainingClassifier

import genprob
from genprob.datasets import load_breast_cancer, load_iris, load_wine

RESULTS = Path(__file__).parent / "results"
DATASETS = {"iris": load_iris, "wine": load_wine, "breast_cancer": load_breast_cancer}
LABELS_PER_CLASS = (3, 5, 10)
#: The structures the model-based fits choose from (the closed-form ones and VEV, mclust's
#: usual choices; the other iterative structures make the run several times longer).
STRUCTURES = ["EII", "VII", "EEI", "VVI", "EEE", "EEV", "VEV", "VVV"]
METHODS = ("MDA labeled", "MDA semi-supervised", "SelfTraining", "LabelSpreading")


def _split(X, y, per_class, seed):
    rng = np.random.default_rng(seed)
    X_pool, X_test, y_pool, y_test = train_test_split(
        X, y, test_size=0.3, stratify=y, random_state=seed
    )
    mean, std = X_pool.mean(axis=0), X_pool.std(axis=0)
    std[std == 0] = 1.0
    X_pool, X_test = (X_pool - mean) / std, (X_test - mean) / std
    partial = np.full_like(y_pool, -1)
    for k in np.unique(y_pool):
        rows = rng.choice(np.flatnonzero(y_pool == k), size=per_class, replace=False)
        partial[rows] = k
    return X_pool, partial, X_test, y_test


def _fit(method, X, partial):
    labeled = partial != -1
    if method == "MDA labeled":
        return genprob.MixtureDiscriminantAnalysis(structure=STRUCTURES).fit(
            X[labeled], partial[labeled]
        )
    if method == "MDA semi-supervised":
        return genprob.MixtureDiscriminantAnalysis(structure=STRUCTURES).fit(X, partial)
    if method == "SelfTraining":
        return SelfTrainingClassifier(LogisticRegression(max_iter=1000)).fit(X, partial)
    return LabelSpreading(kernel="knn", n_neighbors=7).fit(X, partial)


def run(seeds: int):
    rows = []
    for name, load in DATASETS.items():
        X, y = load()
        for per_class in LABELS_PER_CLASS:
            scores = {m: [] for m in METHODS}
            seconds = {m: 0.0 for m in METHODS}
            for seed in range(seeds):
                X_pool, partial, X_test, y_test = _split(X, y, per_class, seed)
                for method in METHODS:
                    start = time.perf_counter()
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")  # collapsed candidates, convergence
                        try:
                            model = _fit(method, X_pool, partial)
                            score = float(model.score(X_test, y_test))
                        except ValueError:  # no candidate could be fitted: counted as failed
                            score = float("nan")
                    seconds[method] += time.perf_counter() - start
                    scores[method].append(score)
            rows.append(
                {
                    "data": name,
                    "labels_per_class": per_class,
                    "seeds": seeds,
                    "accuracy": {m: float(np.nanmean(v)) for m, v in scores.items()},
                    "failed": {m: int(np.sum(np.isnan(v))) for m, v in scores.items()},
                    "seconds": seconds,
                }
            )
            print(_row(rows[-1]), flush=True)
    return rows


def _row(row) -> str:
    cells = [row["data"], str(row["labels_per_class"])]
    for m in METHODS:
        text = f"{row['accuracy'][m]:.3f}"
        if row["failed"][m]:
            text += f" ({row['failed'][m]} failed)"
        cells.append(text)
    return "| " + " | ".join(cells) + " |"


def table(rows) -> str:
    header = ["data", "labels per class", *METHODS]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return "\n".join(lines + [_row(r) for r in rows])


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--no-write", action="store_true", help="print only")
    args = parser.parse_args(argv)
    rows = run(args.seeds)
    text = table(rows)
    print(text)
    if not args.no_write:
        RESULTS.mkdir(exist_ok=True)
        meta = {"structures": STRUCTURES, "methods": list(METHODS), "rows": rows}
        (RESULTS / "semi_supervised_mda.json").write_text(json.dumps(meta, indent=1) + "\n")
        (RESULTS / "semi_supervised_mda.md").write_text(text + "\n")


if __name__ == "__main__":
    main()
