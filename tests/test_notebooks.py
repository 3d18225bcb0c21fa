"""The tour notebooks are committed without outputs; CI executes them (``pytest --nbmake``).

Outputs in git make diffs unreadable and can go stale without anyone noticing, so a notebook
with any output or execution count fails here. ``make strip-notebooks`` clears them.
"""

import json
from pathlib import Path

import pytest

NOTEBOOK_DIR = Path(__file__).resolve().parents[1] / "notebooks"
NOTEBOOKS = sorted(NOTEBOOK_DIR.glob("*.ipynb"))


def test_tour_notebooks_exist():
    names = [path.name for path in NOTEBOOKS]
    assert "01_tour.ipynb" in names and "02_mle_vs_posterior.ipynb" in names, names


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda path: path.name)
def test_notebook_is_stripped(path):
    notebook = json.loads(path.read_text(encoding="utf-8"))
    dirty = [
        index
        for index, cell in enumerate(notebook["cells"])
        if cell["cell_type"] == "code"
        and (cell.get("outputs") or cell.get("execution_count") is not None)
    ]
    assert not dirty, (
        f"{path.name}: code cells {dirty} hold outputs or execution counts; run "
        f"`make strip-notebooks` before committing."
    )


def test_stripped_check_catches_outputs(tmp_path):
    # The check above must be able to fail: an executed cell is reported.
    notebook = json.loads(NOTEBOOKS[0].read_text(encoding="utf-8"))
    cell = next(c for c in notebook["cells"] if c["cell_type"] == "code")
    cell["outputs"] = [{"output_type": "stream", "name": "stdout", "text": ["1\n"]}]
    cell["execution_count"] = 1
    dirty_path = tmp_path / NOTEBOOKS[0].name
    dirty_path.write_text(json.dumps(notebook), encoding="utf-8")
    with pytest.raises(AssertionError, match="hold outputs"):
        test_notebook_is_stripped(dirty_path)
