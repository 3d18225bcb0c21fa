"""Wide-data LDA against scikit-learn: fit, first and repeated predict_proba, model file size.

    python benchmarks/bench_wide.py [--features 2000 5000] [--rows 300]

Both libraries run in the same process on the same data (3 classes, Gaussian rows). genprob's
LDA factorizes its covariance once per fit and reuses the factorization for every prediction;
the first fit and prediction of a shape also compile. Ratios are genprob / scikit-learn. The
floor of a fit from D x D statistics is one X^T X plus the range finder's two (D, D) x (D, n)
products, timed in NumPy and printed; scikit-learn's svd solver never forms a D x D matrix
(O(n^2 D)).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))


def _timed(function):
    start = time.perf_counter()
    result = function()
    return result, time.perf_counter() - start


def _best(function, repeats=3):
    return min(_timed(function)[1] for _ in range(repeats))


def run(num_features: int, num_rows: int, seed: int = 9) -> dict:
    from sklearn.discriminant_analysis import LinearDiscriminantAnalysis as SkLDA

    import genprob

    rng = np.random.default_rng(seed)
    y = np.arange(num_rows) % 3
    X = rng.normal(size=(num_rows, num_features)) + 0.1 * y[:, None]
    rows = X[:10]
    reference, sk_fit = _timed(lambda: SkLDA().fit(X, y))
    expected, sk_predict = _timed(lambda: reference.predict_proba(rows))
    estimator, fit = _timed(lambda: genprob.LinearDiscriminantAnalysis().fit(X, y))
    refit = _best(lambda: genprob.LinearDiscriminantAnalysis().fit(X, y))
    sk_fit = min(sk_fit, _best(lambda: SkLDA().fit(X, y)))
    gram = X.T @ X
    probes = rng.normal(size=(num_features, num_rows))
    # one X^T X, then the range finder's two (D, D) x (D, n) products (sketch, projection)
    floor = _best(lambda: X.T @ X) + 2 * _best(lambda: gram @ probes)
    _, first = _timed(lambda: estimator.predict_proba(rows))
    proba, again = _timed(lambda: estimator.predict_proba(rows))
    with tempfile.TemporaryDirectory() as folder:
        path, save = _timed(lambda: estimator.save(Path(folder) / "wide"))
        size = path.stat().st_size
        _, load = _timed(lambda: genprob.load(path))
    return {
        "features": num_features,
        "rows": num_rows,
        "fit_s": fit,
        "refit_s": refit,
        "gram_s": floor,
        "sklearn_fit_s": sk_fit,
        "first_predict_s": first,
        "predict_s": again,
        "sklearn_predict_s": sk_predict,
        "save_s": save,
        "load_s": load,
        "file_mb": size / 2**20,
        "dxd_mb": num_features**2 * 8 / 2**20,
        "max_proba_difference": float(np.abs(proba - expected).max()),
    }


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--features", type=int, nargs="+", default=[2000])
    parser.add_argument("--rows", type=int, default=300)
    args = parser.parse_args(argv)
    from _run_info import machine, run_date

    print(f"{run_date()}; {machine()}; load average {os.getloadavg()[0]:.1f}")
    header = (
        f"{'D':>6} {'fit s':>8} {'refit s':>8} {'sk fit':>8} {'ratio':>6} {'floor s':>8} "
        f"{'/floor':>6} {'pred s':>8} {'sk pred':>8} "
        f"{'ratio':>6} {'1st pred':>8} {'file MB':>8} {'DxD MB':>7} {'save+load':>9} "
        f"{'max |dp|':>9}"
    )
    print(header)
    for num_features in args.features:
        r = run(num_features, args.rows)
        print(
            f"{r['features']:>6} {r['fit_s']:>8.2f} {r['refit_s']:>8.2f} "
            f"{r['sklearn_fit_s']:>8.2f} {r['refit_s'] / r['sklearn_fit_s']:>6.1f} "
            f"{r['gram_s']:>8.2f} {r['refit_s'] / r['gram_s']:>6.1f} {r['predict_s']:>8.4f} "
            f"{r['sklearn_predict_s']:>8.4f} {r['predict_s'] / r['sklearn_predict_s']:>6.1f} "
            f"{r['first_predict_s']:>8.2f} {r['file_mb']:>8.1f} {r['dxd_mb']:>7.1f} "
            f"{r['save_s'] + r['load_s']:>9.2f} {r['max_proba_difference']:>9.1e}",
            flush=True,
        )


if __name__ == "__main__":
    main()
