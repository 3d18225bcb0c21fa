"""Plug-in against predictive class probabilities with few rows per class (issue 59).

For each data set (iris, wine, breast cancer) and each of ``--splits`` seeds: ``--rows`` rows of
every class drawn at random for training, every other row for testing. Gaussian NB and QDA are
fitted on the training rows and score the test rows by

* **plug-in**: ``predict_proba(X)``, Bayes' rule at the fitted (maximum-likelihood) parameters;
* **predictive**: ``predict_proba(X, method="predictive")``, the parameters integrated out
  under the default conjugate prior (normal-inverse-gamma / -Wishart on the data's scales).

The table is the mean over splits of the test log-loss ``-mean_i log p(y_i | x_i)`` (computed
from ``predict_log_proba``, so a probability that rounds to 0 still counts its true size), and
the fraction of splits on which the predictive rule's log-loss is the lower. A plug-in fit that
fails (QDA with fewer rows than features: singular covariances) is counted, not scored.

Usage::

    python benchmarks/bench_predictive.py                 # 50 splits, 5 rows a class
    python benchmarks/bench_predictive.py --splits 5      # a quick look

Writes benchmarks/results/bench_predictive.json (docs/howto/predictive.md shows it).
"""

from __future__ import annotations

import argparse
import json
import time
import warnings
from pathlib import Path

import numpy as np

import genprob
from genprob import datasets

MODELS = {
    "Gaussian NB": lambda: genprob.GaussianNB(),
    # tol: the plug-in rule wherever the covariances are nonsingular, collinear or not
    "QDA": lambda: genprob.QuadraticDiscriminantAnalysis(tol=1e-12),
}
DATA = {
    "iris": datasets.load_iris,
    "wine": datasets.load_wine,
    "breast cancer": datasets.load_breast_cancer,
}


def split(y, rows, seed):
    rng = np.random.default_rng(seed)
    train = np.concatenate(
        [rng.choice(np.flatnonzero(y == k), rows, replace=False) for k in np.unique(y)]
    )
    test = np.setdiff1d(np.arange(len(y)), train)
    return train, test


def log_loss(estimator, X, y, method):
    log_proba = estimator.predict_log_proba(X, method=method)
    return float(-np.mean(log_proba[np.arange(len(y)), np.searchsorted(estimator.classes_, y)]))


def run(splits, rows):
    table = []
    for data_name, loader in DATA.items():
        X, y = loader()
        for model_name, make in MODELS.items():
            plugin, predictive, failed = [], [], 0
            for seed in range(splits):
                train, test = split(y, rows, seed)
                try:
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        estimator = make().fit(X[train], y[train])
                    plugin.append(log_loss(estimator, X[test], y[test], "plugin"))
                except ValueError:  # singular covariances: no plug-in rule
                    failed += 1
                    plugin.append(np.nan)
                    # the predictive rule reads the fit's statistics only, which reg_param
                    # does not change: a regularized fit carries them
                    estimator = make().set_params(reg_param=0.5).fit(X[train], y[train])
                predictive.append(log_loss(estimator, X[test], y[test], "predictive"))
            ok = ~np.isnan(plugin)
            row = {
                "data": data_name,
                "model": model_name,
                "features": int(X.shape[1]),
                # means over the splits with a plug-in fit, and over all splits
                "plugin": float(np.nanmean(plugin)) if failed < splits else None,
                "predictive_where_plugin": (
                    float(np.mean(np.array(predictive)[ok])) if failed < splits else None
                ),
                "predictive": float(np.mean(predictive)),
                "plugin_failed": failed,
                "predictive_better": (
                    float(np.mean(np.array(predictive)[ok] < np.array(plugin)[ok]))
                    if failed < splits
                    else None
                ),
            }
            table.append(row)
            print(row, flush=True)
    return table


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--splits", type=int, default=50)
    parser.add_argument("--rows", type=int, default=5)
    parser.add_argument(
        "--out", default=str(Path(__file__).parent / "results" / "bench_predictive.json")
    )
    args = parser.parse_args()
    start = time.time()
    table = run(args.splits, args.rows)
    result = {
        "splits": args.splits,
        "rows_per_class": args.rows,
        "rows": table,
        "seconds": round(time.time() - start, 1),
    }
    Path(args.out).write_text(json.dumps(result, indent=1) + "\n")
    print(f"wrote {args.out} in {result['seconds']} s")


if __name__ == "__main__":
    main()
