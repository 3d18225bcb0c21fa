"""The README's Python examples run as written, each on its own (a reader pastes one)."""

import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"
BLOCKS = re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), flags=re.S)


def run_alone(block: str) -> dict:
    """One snippet in a fresh namespace: a name it reuses from another snippet is a NameError."""
    namespace: dict = {"__name__": "readme_snippet"}
    exec(compile(block, str(README), "exec"), namespace)  # noqa: S102
    return namespace


def test_readme_has_its_three_faces():
    assert len(BLOCKS) >= 3


@pytest.mark.parametrize("index", range(len(BLOCKS)))
def test_each_readme_snippet_runs_alone(index):
    namespace = run_alone(BLOCKS[index])
    assert {"lda", "joint", "robust"} & set(namespace), "a snippet this test does not check"
    if "lda" in namespace:
        assert namespace["proba"].shape == (3, 3)
        assert namespace["semi"].classes_.tolist() == [0, 1, 2]
    if "joint" in namespace:
        assert namespace["joint"].shape == (150, 3)
        assert sorted(namespace["params"]) == ["class_prior", "covariance", "means"]
    if "robust" in namespace:
        assert namespace["robust"].score(namespace["X"], namespace["y"]) > 0.9
