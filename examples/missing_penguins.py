"""Missing values in palmerpenguins: marginalizing vs dropping rows vs mean imputation.

Prints the numbers quoted in docs/howto/missing.md. Run: python examples/missing_penguins.py
"""

import numpy as np
from palmerpenguins import load_penguins
from sklearn.model_selection import StratifiedKFold

from genprob import QuadraticDiscriminantAnalysis

COLUMNS = ["bill_length_mm", "bill_depth_mm", "flipper_length_mm", "body_mass_g"]


def main(extra_missing=0.2, seed=0):
    frame = load_penguins()
    X = frame[COLUMNS].to_numpy(dtype=float)
    X[:, 3] /= 1000.0  # kg, so the features have comparable scales
    y = frame["species"].to_numpy()
    print(f"rows {len(y)}, rows with a missing value {int(np.isnan(X).any(axis=1).sum())}")
    rng = np.random.default_rng(seed)
    X_more = X.copy()
    X_more[rng.random(X.shape) < extra_missing] = np.nan
    for name, data in [("as shipped", X), (f"+{extra_missing:.0%} MCAR", X_more)]:
        scores = {"marginalize": [], "drop rows": [], "mean imputation": []}
        folds = StratifiedKFold(5, shuffle=True, random_state=seed)
        for train, test in folds.split(data, y):
            Xtr, Xte, ytr, yte = data[train], data[test], y[train], y[test]
            model = QuadraticDiscriminantAnalysis(missing="marginalize").fit(Xtr, ytr)
            scores["marginalize"].append(model.score(Xte, yte))
            keep = ~np.isnan(Xtr).any(axis=1)
            dropped = QuadraticDiscriminantAnalysis().fit(Xtr[keep], ytr[keep])
            means = np.nanmean(Xtr, axis=0)
            imputed_test = np.where(np.isnan(Xte), means, Xte)
            # dropping rows cannot predict a row with a hole: it gets the training means
            scores["drop rows"].append(dropped.score(imputed_test, yte))
            imputed = QuadraticDiscriminantAnalysis().fit(
                np.where(np.isnan(Xtr), means, Xtr), ytr
            )
            scores["mean imputation"].append(imputed.score(imputed_test, yte))
        summary = ", ".join(f"{k} {np.mean(v):.4f}" for k, v in scores.items())
        print(f"{name}: 5-fold accuracy: {summary}")


if __name__ == "__main__":
    main()
