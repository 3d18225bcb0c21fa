"""Wide-data LDA against scikit-learn: fit, first and repeated predict_proba, model file size.

    python benchmarks/bench_wide.py [--features 2000 5000] [--rows 300]
        [--solvers svd eigen-auto eigen-0.2 eigen lsqr-auto lsqr-0.2] [--repeats 3]
        [--json benchmarks/results/bench_wide.json]

Both libraries run in the same process on the same data (3 classes, Gaussian rows), one solver
after the other (``--solvers``: a solver name, with ``-auto`` or ``-<float>`` for its
shrinkage; default ``svd``). genprob's LDA factorizes its covariance once per fit and reuses the
factorization for every prediction; the first fit and prediction of a shape also compile.
Ratios are genprob / scikit-learn. The floor of a fit from D x D statistics, timed in NumPy and
printed, is one X^T X plus, for ``svd`` and unregularized ``eigen`` (a covariance of rank < n),
the range finder's two (D, D) x (D, n) products; with shrinkage (full rank) a D x D Cholesky
factorization instead; and for ``eigen`` one D x D symmetric eigendecomposition (its discriminant
directions: scikit-learn's generalized ``eigh`` reduces to one too). scikit-learn's svd solver
never forms a D x D matrix (O(n^2 D)). ``eigen`` without shrinkage fails in scikit-learn when
n < D (a singular covariance): its columns are left empty.
"""

from __future__ import annotations

import argparse
import json
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


def solver_options(name: str) -> dict:
    """``"eigen-auto"`` -> ``{"solver": "eigen", "shrinkage": "auto"}``, ``"lsqr-0.2"`` -> 0.2."""
    solver, _, shrinkage = name.partition("-")
    if solver not in ("svd", "lsqr", "eigen"):
        raise ValueError(f"unknown solver {solver!r} in {name!r}.")
    if not shrinkage:
        return {"solver": solver}
    return {"solver": solver, "shrinkage": shrinkage if shrinkage == "auto" else float(shrinkage)}


def _floor(X, options, repeats, rng) -> float:
    """What any fit with ``options`` spends, timed in NumPy (see the module docstring)."""
    num_rows, num_features = X.shape
    gram = X.T @ X
    floor = _best(lambda: X.T @ X, repeats)
    if options.get("shrinkage") is None:
        # the range finder's two (D, D) x (D, n) products (sketch, projection)
        probes = rng.normal(size=(num_features, num_rows))
        floor += 2 * _best(lambda: gram @ probes, repeats)
    else:
        regular = gram / num_rows + np.eye(num_features)
        floor += _best(lambda: np.linalg.cholesky(regular), repeats)
    if options["solver"] == "eigen":
        symmetric = gram / num_rows + np.eye(num_features)
        floor += _best(lambda: np.linalg.eigh(symmetric), min(repeats, 2))
    return floor


def run(num_features: int, num_rows: int, seed: int = 9, solver="svd", repeats=3) -> dict:
    from sklearn.discriminant_analysis import LinearDiscriminantAnalysis as SkLDA

    import genprob

    options = solver_options(solver)
    rng = np.random.default_rng(seed)
    y = np.arange(num_rows) % 3
    X = rng.normal(size=(num_rows, num_features)) + 0.1 * y[:, None]
    rows = X[:10]
    try:
        reference, sk_fit = _timed(lambda: SkLDA(**options).fit(X, y))
    except np.linalg.LinAlgError:  # eigen without shrinkage: a singular covariance
        reference, sk_fit = None, float("nan")
    else:
        expected, sk_predict = _timed(lambda: reference.predict_proba(rows))
        sk_fit = min(sk_fit, _best(lambda: SkLDA(**options).fit(X, y), repeats))
    estimator, fit = _timed(lambda: genprob.LinearDiscriminantAnalysis(**options).fit(X, y))
    refit = _best(lambda: genprob.LinearDiscriminantAnalysis(**options).fit(X, y), repeats)
    floor = _floor(X, options, repeats, rng)
    _, first = _timed(lambda: estimator.predict_proba(rows))
    proba, again = _timed(lambda: estimator.predict_proba(rows))
    if reference is None:
        expected, sk_predict = np.full_like(proba, np.nan), float("nan")
    with tempfile.TemporaryDirectory() as folder:
        path, save = _timed(lambda: estimator.save(Path(folder) / "wide"))
        size = path.stat().st_size
        _, load = _timed(lambda: genprob.load(path))
    return {
        "solver": solver,
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
    parser.add_argument(
        "--solvers",
        nargs="+",
        default=["svd"],
        help="solver[-shrinkage] of each run: svd, eigen, eigen-auto, eigen-0.2, lsqr-auto, ...",
    )
    parser.add_argument("--repeats", type=int, default=3, help="refits timed (the best is kept)")
    parser.add_argument(
        "--json", help="also write the rows, date and machine here (the docs read it)"
    )
    args = parser.parse_args(argv)
    for name in args.solvers:
        solver_options(name)  # unknown names fail before anything runs
    from _run_info import machine, run_date

    record = {
        "date": run_date(),
        "machine": machine(),
        "load_average_1min": os.getloadavg()[0],
        "rows": [],
    }
    print(f"{record['date']}; {record['machine']}; load average {record['load_average_1min']:.1f}")
    header = (
        f"{'solver':>10} {'D':>6} {'fit s':>8} {'refit s':>8} {'sk fit':>8} {'ratio':>6} "
        f"{'floor s':>8} {'/floor':>6} {'pred s':>8} {'sk pred':>8} "
        f"{'ratio':>6} {'1st pred':>8} {'file MB':>8} {'DxD MB':>7} {'save+load':>9} "
        f"{'max |dp|':>9}"
    )
    print(header)
    for num_features in args.features:
        for solver in args.solvers:
            result = run(num_features, args.rows, solver=solver, repeats=args.repeats)
            _report(result)
            record["rows"].append(result)
    if args.json:
        Path(args.json).write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")


def _report(r):
    print(
        f"{r['solver']:>10} {r['features']:>6} {r['fit_s']:>8.2f} {r['refit_s']:>8.2f} "
        f"{r['sklearn_fit_s']:>8.2f} {r['refit_s'] / r['sklearn_fit_s']:>6.1f} "
        f"{r['gram_s']:>8.2f} {r['refit_s'] / r['gram_s']:>6.1f} {r['predict_s']:>8.4f} "
        f"{r['sklearn_predict_s']:>8.4f} {r['predict_s'] / r['sklearn_predict_s']:>6.1f} "
        f"{r['first_predict_s']:>8.2f} {r['file_mb']:>8.1f} {r['dxd_mb']:>7.1f} "
        f"{r['save_s'] + r['load_s']:>9.2f} {r['max_proba_difference']:>9.1e}",
        flush=True,
    )


if __name__ == "__main__":
    main()
