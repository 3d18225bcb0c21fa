"""The README's Python examples run as written."""

import re
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"


def test_readme_examples_run():
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)
    assert len(blocks) >= 3
    namespace: dict = {}
    for block in blocks:
        exec(compile(block, str(README), "exec"), namespace)  # noqa: S102
    assert namespace["proba"].shape == (3, 3)
    assert namespace["semi"].classes_.tolist() == [0, 1, 2]
    assert namespace["robust"].score(namespace["X"], namespace["y"]) > 0.9
