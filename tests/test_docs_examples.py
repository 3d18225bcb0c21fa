"""The documentation's Python examples run as written.

Each page's ```python blocks run in order in one namespace, as a reader would paste them. The
posterior guide is left out (NUTS is too slow for the default suite); notebooks/ executes the
same calls under nbmake.
"""

import contextlib
import io
import re
import sys
from pathlib import Path

import matplotlib
import numpy as np
import pytest

DOCS = Path(__file__).resolve().parents[1] / "docs"
# the site's figure helpers, importable as the docs build makes them (docs/_ext/site_figures.py)
if str(DOCS / "_ext") not in sys.path:
    sys.path.insert(0, str(DOCS / "_ext"))
PAGES = ["index.md", "getting_started.md", "howto/write_a_story.md", "howto/semi_supervised.md"]


def run_page(page: str) -> dict:
    """Every block the reader sees, in order; hidden figure blocks (``exec`` without ``source``)
    are the site build's business."""
    text = (DOCS / page).read_text(encoding="utf-8")
    blocks = [
        body
        for options, body in re.findall(r"```python([^\n]*)\n(.*?)```", text, flags=re.S)
        if "exec=" not in options or "source=" in options
    ]
    assert blocks, f"{page} has no Python example"
    namespace: dict = {"__name__": f"docs_{page.replace('/', '_')}"}
    for block in blocks:
        with contextlib.redirect_stdout(io.StringIO()):
            exec(compile(block, str(DOCS / page), "exec"), namespace)  # noqa: S102
    return namespace


@pytest.mark.parametrize("page", PAGES)
def test_page_examples_run(page):
    matplotlib.use("Agg")
    namespace = run_page(page)
    if page == "getting_started.md":
        assert namespace["qda"].num_parameters() == 44  # the count the page states
        assert namespace["check"].passed
    if page == "howto/write_a_story.md":
        rates = namespace["model"].params_["rates"]
        assert rates.shape == (2, 2)
        # MLE of an exponential rate: class counts over summed durations
        X, y = namespace["X"], namespace["y"]
        expected = [[(y == k).sum() / X[y == k, j].sum() for j in range(2)] for k in range(2)]
        np.testing.assert_allclose(rates, expected, rtol=1e-10)
        assert namespace["model"].num_parameters() == 5
        with pytest.raises(ValueError, match="non-negative"):
            namespace["smoothed"].fit(-namespace["X"], namespace["y"])
