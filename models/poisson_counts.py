r"""Handwritten digits as counts: Poisson naive Bayes against multinomial naive Bayes.

The data are scikit-learn's 1,797 handwritten digits (``genprob.datasets.load_digits``): 8x8
images whose pixels are integers 0..16 — the number of "on" cells in a 4x4 block of the original
32x32 bitmap, so genuinely counts.

The Poisson story of an image: pick the digit ``y ~ Categorical(pi)``; then every pixel ``j``
independently emits a count ``x_j | y ~ Poisson(rate_{yj})``. The closed form is the per-class
mean intensity, smoothed by a Gamma prior: ``rate_{kj} = (S_{kj} + alpha) / (N_k + beta)``.

The multinomial story draws the image's total ink first and then spreads it over the pixels with
the class's proportions ``p_y``. The two are close relatives: independent Poissons *conditioned
on their total* are multinomial with ``p_{kj} = rate_{kj} / sum_j rate_{kj}``. So Poisson NB is
multinomial NB plus a Poisson model of the total ink. Here the digits were size-normalized, so
every class uses about the same ink (the script prints it): the total carries little evidence and
the two classifiers agree on almost every image.

The story is knowingly wrong: the pixel counts are bounded by 16 and pile up at 0 and 16, far
more spread than a Poisson (variance = mean). The script reports that dispersion, and still the
classifier works well: naive Bayes needs the right *ranking* of classes, not the right density.

The closed form is checked against numerical maximization of the same likelihood
(``PoissonNB.crosscheck``: L-BFGS from a poor start; parameters, objective and gradients must
agree).

Run: ``python models/poisson_counts.py``.
"""

from __future__ import annotations

import numpy as np
from sklearn.model_selection import train_test_split

import genprob


def main(*, test_size: float = 0.3, crosscheck_classes: int | None = None, seed: int = 0) -> dict:
    """Fit Poisson and multinomial NB on digit pixel counts, compare, and cross-check.

    Args:
        test_size: fraction of the images held out.
        crosscheck_classes: cross-check on the training images of the first this many digits
            (a smaller problem: the check's cost grows with the number of parameters); None
            uses all ten.
        seed: seed of the split.

    Returns:
        Dict with ``accuracy`` (model -> held-out accuracy), ``chance`` (accuracy of always
        predicting the most frequent training class), ``agreement`` (fraction of held-out images
        on which the Poisson and multinomial models predict the same digit), ``dispersion``
        (median over class and pixel of variance / mean of the training counts, where the mean
        is positive; 1 for a Poisson), ``total_ink`` (expected total count per digit),
        ``crosscheck_passed`` and ``crosscheck_max_rel_diff``
        (largest relative difference between closed-form and optimizer rates).
    """
    X, y = genprob.datasets.load_digits()
    X_train, X_test, y_train, y_test = train_test_split(
        X, y, test_size=test_size, random_state=seed, stratify=y
    )
    print(f"digits: {len(y_train)} training / {len(y_test)} held-out images, 64 pixel counts")

    models = {
        "poisson": genprob.PoissonNB(alpha=1.0, beta=1.0),
        "multinomial": genprob.MultinomialNB(alpha=1.0),
    }
    accuracy, predictions = {}, {}
    for name, model in models.items():
        model.fit(X_train, y_train)
        predictions[name] = model.predict(X_test)
        accuracy[name] = float(np.mean(predictions[name] == y_test))
        print(f"  {name:<12} naive Bayes: held-out accuracy {accuracy[name]:.4f}")
    chance = float(np.mean(y_test == np.bincount(y_train).argmax()))
    agreement = float(np.mean(predictions["poisson"] == predictions["multinomial"]))
    print(f"  majority-class baseline: {chance:.4f}; the two models agree on {agreement:.1%}")

    # How wrong is "variance = mean"? Per class and pixel, on the training counts.
    ratios = []
    for k in np.unique(y_train):
        rows = X_train[y_train == k]
        mean, variance = rows.mean(axis=0), rows.var(axis=0)
        ratios.append(variance[mean > 0] / mean[mean > 0])
    dispersion = float(np.median(np.concatenate(ratios)))
    print(f"  median variance/mean of pixel counts: {dispersion:.2f} (a Poisson has 1)")

    rates = models["poisson"].rates_
    total_ink = rates.sum(axis=1)
    print(
        "  expected total ink per digit: "
        + ", ".join(
            f"{k}: {t:.0f}" for k, t in zip(models["poisson"].classes_, total_ink, strict=True)
        )
    )

    keep = np.ones(len(y_train), dtype=bool)
    if crosscheck_classes is not None:
        keep = y_train < crosscheck_classes
    check = genprob.PoissonNB().crosscheck(
        X_train[keep], y_train[keep], data_name="digit pixel counts"
    )
    print(check)
    rates_row = next(row for row in check.rows if row.quantity == "rates")
    return {
        "accuracy": accuracy,
        "chance": chance,
        "agreement": agreement,
        "dispersion": dispersion,
        "total_ink": [float(t) for t in total_ink],
        "crosscheck_passed": bool(check.passed),
        "crosscheck_max_rel_diff": float(rates_row.rel_diff),
    }


if __name__ == "__main__":
    main()
