"""No block of six or more lines stands twice in genprob/, scikit-learn's constructor idiom aside
(``self.name = name`` lines and the keyword parameters of ``__init__`` signatures, which every
estimator repeats by design: they are left out before blocks are compared)."""

from __future__ import annotations

import re
from collections import defaultdict
from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parents[1] / "genprob"
WINDOW = 6
#: scikit-learn's constructor idiom: parameters stored under their own names, signatures of them
_IDIOM = re.compile(r"^(self\.(\w+) = \2|\w+(: [^=]+)? ?= ?[^,]+,|\w+,|\*,|\)|\):|def __init__\()$")


def _lines(path: Path):
    """(line number, stripped code) of a source file; comments, docstrings, blanks and the
    constructor idiom left out."""
    out, in_string = [], None
    for number, raw in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        line = raw.strip()
        if in_string:
            if in_string in line:
                in_string = None
            continue
        for quote in ('"""', "'''"):
            if line.startswith(quote) or line.startswith(("r" + quote, "f" + quote)):
                if line.count(quote) == 1:
                    in_string = quote
                line = ""
                break
        if not line or line.startswith("#") or _IDIOM.match(line):
            continue
        out.append((number, line))
    return out


def repeated_blocks() -> list[str]:
    seen = defaultdict(list)
    for path in sorted(PACKAGE_DIR.rglob("*.py")):
        lines = _lines(path)
        for i in range(len(lines) - WINDOW + 1):
            block = tuple(code for _, code in lines[i : i + WINDOW])
            seen[block].append(f"{path.relative_to(PACKAGE_DIR.parent)}:{lines[i][0]}")
    return [" ~ ".join(places) for places in seen.values() if len(places) > 1]


def test_no_block_of_six_lines_is_repeated():
    repeats = repeated_blocks()
    assert not repeats, "repeated blocks:\n" + "\n".join(repeats)


def test_the_repeat_finder_finds_a_copied_block(tmp_path, monkeypatch):
    block = "\n".join(f"    total = total + {i} * value" for i in range(6))
    for name in ("a.py", "b.py"):
        (tmp_path / name).write_text(f"def f(value):\n    total = 0\n{block}\n    return total\n")
    monkeypatch.setattr(__import__(__name__), "PACKAGE_DIR", tmp_path)
    repeats = repeated_blocks()  # one row per overlapping window of the copy
    assert repeats and all("a.py:" in row and "b.py:" in row for row in repeats)
