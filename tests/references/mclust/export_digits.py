"""Write digits_pca10.csv, the matrix of the digits timing reference in make_mclust_priors.R
(run from the repository root: ``python tests/references/mclust/export_digits.py``).

scikit-learn's bundled digits (1797 rows), reduced to 10 whitened principal components fitted on
all rows (``PCA(10, whiten=True, random_state=0)``); columns x1..x10 and class (0..9)."""

from pathlib import Path

import numpy as np
from sklearn.datasets import load_digits
from sklearn.decomposition import PCA

HERE = Path(__file__).parent

X, y = load_digits(return_X_y=True)
Z = PCA(n_components=10, whiten=True, random_state=0).fit_transform(X)
header = ",".join([f"x{j + 1}" for j in range(Z.shape[1])] + ["class"])
np.savetxt(
    HERE / "digits_pca10.csv",
    np.column_stack([Z, y]),
    delimiter=",",
    header=header,
    comments="",
    fmt=["%.17g"] * Z.shape[1] + ["%d"],
)
