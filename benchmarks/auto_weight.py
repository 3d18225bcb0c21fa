"""Evidence for ``unlabeled_weight="auto"``: on few-label splits of several data sets, the test
accuracy of the λ it chooses against every fixed λ of its grid.

    python benchmarks/auto_weight.py [--splits 5] [--out benchmarks/results/auto_weight.md]

Each setting: a stratified 70/30 split (seed s), ``labels`` labeled rows a class drawn at
random from the training part (seed s), the other training rows unlabeled; PCA (whitened) is
fitted on the training rows. Printed: per setting, the mean test accuracy over the splits of
``auto`` and of each fixed λ, how often ``auto`` chose each λ, and how often it warned
that the unlabeled rows hurt or that its comparison failed (every λ scored alike).
"""

from __future__ import annotations

import argparse
import time
import warnings
from pathlib import Path

import numpy as np

import genprob
from genprob.estimators._criteria import AUTO_WEIGHT_GRID


def tilted_clouds(seed):
    """Two long parallel clouds a narrow gap apart (docs/semi_supervised.md): no diagonal
    Gaussian describes a class, so EM's components leave the classes."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, size=1000)
    along, across = rng.normal(0, 3.0, 1000), rng.normal(0.6 * (2.0 * y - 1.0), 0.3)
    return np.column_stack([along + across, along - across]) / np.sqrt(2), y


def _digits(seed):
    from sklearn.datasets import load_digits

    return load_digits(return_X_y=True)


def _cancer(seed):
    from sklearn.datasets import load_breast_cancer

    return load_breast_cancer(return_X_y=True)


def _wine(seed):
    from sklearn.datasets import load_wine

    return load_wine(return_X_y=True)


#: name -> (data, PCA dimensions or None (standardized), labels a class, estimator factory)
SETTINGS = {
    "digits, PCA-20, LDA, 3 labels a class": (
        _digits,
        20,
        3,
        lambda w: genprob.LinearDiscriminantAnalysis(unlabeled_weight=w),
    ),
    "digits, PCA-10, LDA, 3 labels a class": (
        _digits,
        10,
        3,
        lambda w: genprob.LinearDiscriminantAnalysis(unlabeled_weight=w),
    ),
    "digits, PCA-20, QDA reg 0.5, 3 labels a class": (
        _digits,
        20,
        3,
        lambda w: genprob.QuadraticDiscriminantAnalysis(reg_param=0.5, unlabeled_weight=w),
    ),
    "wine, Gaussian NB, 3 labels a class": (
        _wine,
        None,
        3,
        lambda w: genprob.GaussianNB(unlabeled_weight=w),
    ),
    "breast cancer, Gaussian NB, 5 labels a class": (
        _cancer,
        None,
        5,
        lambda w: genprob.GaussianNB(unlabeled_weight=w),
    ),
    "tilted clouds, Gaussian NB, 50 labels a class": (
        tilted_clouds,
        None,
        50,
        lambda w: genprob.GaussianNB(unlabeled_weight=w),
    ),
}


def split(data, dims, labels, seed):
    from sklearn.decomposition import PCA
    from sklearn.model_selection import train_test_split
    from sklearn.preprocessing import StandardScaler

    X, y = data(seed)
    X_train, X_test, y_train, y_test = train_test_split(
        X, y, test_size=0.3, stratify=y, random_state=seed
    )
    if dims is None:
        scaler = StandardScaler().fit(X_train)
    else:
        scaler = PCA(dims, whiten=True, random_state=seed).fit(X_train)
    X_train, X_test = scaler.transform(X_train), scaler.transform(X_test)
    rng = np.random.default_rng(seed)
    partly = np.full_like(y_train, -1)
    for k in np.unique(y_train):
        partly[rng.choice(np.flatnonzero(y_train == k), labels, replace=False)] = k
    return X_train, partly, X_test, y_test


def run_setting(data, dims, labels, make, splits):
    from genprob.estimators import UnlabeledRowsHurtWarning

    rows = []
    for seed in range(splits):
        X_train, partly, X_test, y_test = split(data, dims, labels, seed)
        fixed = {}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for weight in AUTO_WEIGHT_GRID:
                fixed[weight] = make(weight).fit(X_train, partly).score(X_test, y_test)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            model = make("auto").set_params(random_state=seed).fit(X_train, partly)
        kinds = {type(w.message).__name__ for w in caught}
        rows.append(
            {
                "auto": model.score(X_test, y_test),
                "chosen": model.unlabeled_weight_,
                "hurt": UnlabeledRowsHurtWarning.__name__ in kinds,
                "failed": "UnlabeledWeightTieWarning" in kinds,
                **fixed,
            }
        )
    return rows


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--splits", type=int, default=5)
    parser.add_argument("--only", nargs="*", default=None, help="settings whose name has this")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    lines = [
        f"| setting | auto | {' | '.join(f'λ = {w:g}' for w in AUTO_WEIGHT_GRID)} | "
        f"auto chose (λ: times) | hurt warnings | failed comparisons |",
        "|---" * (len(AUTO_WEIGHT_GRID) + 5) + "|",
    ]
    for name, (data, dims, labels, make) in SETTINGS.items():
        if args.only and not any(part in name for part in args.only):
            continue
        start = time.perf_counter()
        rows = run_setting(data, dims, labels, make, args.splits)
        mean = {key: np.mean([r[key] for r in rows]) for key in ["auto", *AUTO_WEIGHT_GRID]}
        chosen = [r["chosen"] for r in rows]
        counts = ", ".join(f"{w:g}: {chosen.count(w)}" for w in AUTO_WEIGHT_GRID if w in chosen)
        line = (
            f"| {name} | {mean['auto']:.3f} | "
            + " | ".join(f"{mean[w]:.3f}" for w in AUTO_WEIGHT_GRID)
            + f" | {counts} | {sum(r['hurt'] for r in rows)} | {sum(r['failed'] for r in rows)} |"
        )
        lines.append(line)
        print(line, f"({time.perf_counter() - start:.0f} s)", flush=True)
    table = "\n".join(lines)
    print()
    print(f"Mean test accuracy over {args.splits} splits.")
    print(table)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(
            f"Mean test accuracy over {args.splits} splits "
            f"(`python benchmarks/auto_weight.py --splits {args.splits}`).\n\n{table}\n"
        )


if __name__ == "__main__":
    main()
