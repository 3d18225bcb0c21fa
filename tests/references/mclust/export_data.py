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
