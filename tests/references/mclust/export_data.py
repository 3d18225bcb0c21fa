"""Write the exact matrices the mclust reference fits read (run from the repository root:
``python tests/references/mclust/export_data.py``)."""

from pathlib import Path

import numpy as np

from genprob.datasets import load_iris, load_wine

HERE = Path(__file__).parent

for name, loader in (("iris", load_iris), ("wine", load_wine)):
    X, y = loader()
    table = np.column_stack([X, y])
    header = ",".join([f"x{j + 1}" for j in range(X.shape[1])] + ["class"])
    np.savetxt(HERE / f"{name}.csv", table, delimiter=",", header=header, comments="", fmt="%s")

# standardized wine (mean 0, sd 1 with ddof 0, as StandardScaler) with 4 labels a class, -1 for
# the hidden ones: the few-label MclustSSC reference (make_ssc_few_labels.R)
X, y = load_wine()
X = (X - X.mean(axis=0)) / X.std(axis=0)
rng = np.random.default_rng(0)
shown = np.concatenate([rng.choice(np.flatnonzero(y == k), 4, replace=False) for k in range(3)])
few = np.full(len(y), -1)
few[shown] = y[shown]
header = ",".join([f"x{j + 1}" for j in range(X.shape[1])] + ["class", "truth"])
np.savetxt(
    HERE / "wine_scaled_few.csv",
    np.column_stack([X, few, y]),
    delimiter=",",
    header=header,
    comments="",
    fmt="%s",
)
