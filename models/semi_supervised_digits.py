r"""Semi-supervised digits with 3 labels a class: Gaussian classes fitted by EM against label
spreading.

The digits (scikit-learn's 1797 images of 8 x 8 pixels, ``genprob.datasets.load_digits``), of
which 3 rows per digit keep their label and the other 1767 are unlabeled (``-1``). Two
transductive classifiers label the unlabeled rows, and each is scored on them (the accuracy
``LabelSpreading`` is usually reported with):

* **baseline**: ``sklearn.semi_supervised.LabelSpreading(kernel="knn")`` with its defaults
  (7 neighbours, ``alpha=0.2``), on the raw pixels (and, for the record, on the same PCA
  features as the genprob recipe). Nothing of it is tuned.
* **genprob recipe**: the pixels projected on their first 30 principal components, whitened
  (``PCA(30, whiten=True)`` fitted on all 1797 rows: no label is used), then
  ``genprob.MixtureDiscriminantAnalysis(structure="VVV", n_components=1)``: each digit one
  Gaussian with its own full covariance (QDA) whose parameters EM fits to the labeled and the
  unlabeled rows together (maximum likelihood, no prior).

How the recipe was chosen without the test labels of the splits it is judged on: the candidates
(whitened PCA to 10, 15, 20 or 30 dimensions; VVV, VEV, EEE or the 14 structures by BIC; with and
without ``prior="default"``; LDA) were compared on development splits, seeds 0-4, and the recipe
was fixed before the evaluation splits, seeds 5-14, were scored. Choosing by 3-fold
cross-validation on the 30 labeled rows was tried too and is too noisy with 30 rows
(docs/howto/semi_supervised.md, section 4, has the numbers). The splits: for each seed,
``numpy.random.default_rng(seed)`` draws 3 rows of each digit without replacement.

Run: ``python models/semi_supervised_digits.py``.
"""

from __future__ import annotations

import time
import warnings

import numpy as np
from sklearn.decomposition import PCA
from sklearn.exceptions import ConvergenceWarning
from sklearn.semi_supervised import LabelSpreading

import genprob

#: The seeds of the evaluation splits (seeds 0-4 were the development splits).
SEEDS = tuple(range(5, 15))
#: The recipe: PCA dimensions (whitened) and the mixture estimator's settings.
DIMENSIONS = 30
RECIPE = {"structure": "VVV", "n_components": 1}


def split(y, seed: int, per_class: int = 3) -> np.ndarray:
    """Labels with all but ``per_class`` rows of each class (drawn by ``seed``) set to -1."""
    rng = np.random.default_rng(seed)
    partly = np.full_like(y, -1)
    for k in np.unique(y):
        partly[rng.choice(np.flatnonzero(y == k), per_class, replace=False)] = k
    return partly


def features(X, dimensions: int = DIMENSIONS) -> np.ndarray:
    """The recipe's features: whitened principal components, fitted on every row (no labels)."""
    return PCA(dimensions, whiten=True, random_state=0).fit_transform(X)


def genprob_accuracy(Z, y, partly) -> float:
    """Accuracy of the recipe on the unlabeled rows (transductive)."""
    unlabeled = partly < 0
    with warnings.catch_warnings():
        # EM's iteration cap is a warning, not an error: the fit is used as it is
        warnings.simplefilter("ignore", ConvergenceWarning)
        model = genprob.MixtureDiscriminantAnalysis(**RECIPE).fit(Z, partly)
    return float(np.mean(model.predict(Z[unlabeled]) == y[unlabeled]))


def spreading_accuracy(X, y, partly) -> float:
    """Accuracy of ``LabelSpreading(kernel="knn")`` (defaults) on the unlabeled rows."""
    unlabeled = partly < 0
    with warnings.catch_warnings():
        # its default 30 iterations often stop short of its tolerance: defaults are the baseline
        warnings.simplefilter("ignore", ConvergenceWarning)
        model = LabelSpreading(kernel="knn").fit(X, partly)
    return float(np.mean(model.transduction_[unlabeled] == y[unlabeled]))


def main(seeds=SEEDS, dimensions: int = DIMENSIONS) -> dict:
    X, y = genprob.datasets.load_digits()
    Z = features(X, dimensions)
    rows = []
    start = time.perf_counter()
    for seed in seeds:
        partly = split(y, seed)
        rows.append(
            {
                "seed": seed,
                "genprob": genprob_accuracy(Z, y, partly),
                "label_spreading": spreading_accuracy(X, y, partly),
                "label_spreading_pca": spreading_accuracy(Z, y, partly),
            }
        )
    seconds = time.perf_counter() - start
    print(f"digits, 3 labels a class; accuracy on the {int(np.sum(partly < 0))} unlabeled rows")
    print(
        f"{'seed':>4}  {f'genprob PCA-{dimensions} VVV':>18}  {'LabelSpreading':>14}"
        f"  {f'LS on PCA-{dimensions}':>12}"
    )
    for row in rows:
        print(
            f"{row['seed']:>4}  {row['genprob']:>18.3f}  {row['label_spreading']:>14.3f}"
            f"  {row['label_spreading_pca']:>12.3f}"
        )
    mean = {key: float(np.mean([row[key] for row in rows])) for key in rows[0] if key != "seed"}
    print(
        f"{'mean':>4}  {mean['genprob']:>18.3f}  {mean['label_spreading']:>14.3f}"
        f"  {mean['label_spreading_pca']:>12.3f}   ({seconds:.0f} s)"
    )
    return {"rows": rows, "mean": mean, "seconds": seconds}


if __name__ == "__main__":
    main()
