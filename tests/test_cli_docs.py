"""Every command-line example of docs/cli.md runs and prints what the page shows.

The page's ``bash`` blocks write the examples' files (run with bash in a fresh directory); its
``text`` blocks holding ``$ genprob ...`` lines are sessions: each command line runs in bash in
that directory, in page order, in a fresh process (``genprob`` is ``python -m genprob`` of this
checkout), and its output (stderr and stdout as they interleave) must match the lines shown. A
shown ``...`` line stands for any number of lines; durations (``18.4 s``) and runs of spaces are
not compared. Sessions that run NUTS (``compare``, ``demo``) are marked slow.
"""

from __future__ import annotations

import math
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "cli.md"
TEXT = PAGE.read_text(encoding="utf-8")
FILES = re.findall(r"```bash\n(.*?)```", TEXT, flags=re.S)
SESSIONS = [
    block
    for block in re.findall(r"```text\n(.*?)```", TEXT, flags=re.S)
    if block.startswith("$ genprob")
]
_SOURCE_WARNING = re.compile(r"\.py:\d+: \w*Warning")
_SECONDS = re.compile(r"\d+(\.\d+)? s\b")


def commands(block: str) -> list[tuple[str, list[str]]]:
    """``(command line, shown output lines)`` of a session, continuation lines joined."""
    out, lines = [], block.splitlines()
    i = 0
    while i < len(lines):
        command = lines[i][2:]
        while command.endswith("\\"):
            i += 1
            command = command[:-1].rstrip() + " " + lines[i].strip()
        shown = []
        i += 1
        while i < len(lines) and not lines[i].startswith("$ "):
            shown.append(lines[i])
            i += 1
        out.append((command, shown))
    return out


def _normal(line: str) -> str:
    return " ".join(_SECONDS.sub("<seconds> s", line).split())


_NUMBER = re.compile(r"-?\d+\.\d+(?:e[-+]?\d+)?")


def same(shown: str, actual: str) -> bool:
    """Equal lines, or lines equal but for full-precision floats that agree to 1e-9 (the last
    digits of a float's repr differ between BLAS builds)."""
    if shown == actual:
        return True
    a, b = _NUMBER.split(shown), _NUMBER.split(actual)
    x, y = _NUMBER.findall(shown), _NUMBER.findall(actual)
    return (
        a == b
        and len(x) == len(y)
        and all(
            u == v or (len(u) > 12 and math.isclose(float(u), float(v), rel_tol=1e-9))
            for u, v in zip(x, y, strict=True)
        )
    )


def matches(shown: list[str], actual: list[str]) -> bool:
    """Do the shown lines match the actual ones, ``...`` standing for any run of lines?"""
    shown = [_normal(s) for s in shown if s.strip()]
    actual = [_normal(a) for a in actual if a.strip()]
    # reachable[j]: the shown lines so far can match actual[:j]
    reachable = [True] + [False] * len(actual)
    for line in shown:
        if line == "...":
            for j in range(1, len(actual) + 1):
                reachable[j] = reachable[j] or reachable[j - 1]
        else:
            reachable = [False] + [
                reachable[j] and same(line, actual[j]) for j in range(len(actual))
            ]
    return reachable[-1]


def test_matching_rules():
    assert matches(["a", "...", "d"], ["a", "b", "c", "d"])
    assert matches(["a  b", "took 3.2 s"], ["a b", "took 18 s"])
    assert not matches(["a", "d"], ["a", "b", "d"])
    assert not matches(["a", "..."], ["b", "c"])
    assert matches(["p,1.3578426545097727e-18"], ["p,1.357842654509763e-18"])
    assert not matches(["accuracy 0.9600"], ["accuracy 0.9601"])
    assert commands("$ genprob x \\\n   --y 1\nout\n$ genprob z") == [
        ("genprob x --y 1", ["out"]),
        ("genprob z", []),
    ]


def run(command: str, workdir: Path, env: dict, status: int = 0) -> tuple[list[str], int]:
    """The output lines and exit status of one shown command, run by bash in ``workdir`` as a
    reader would (stderr and stdout unbuffered into one stream, so that they interleave as at a
    terminal); ``$?`` reads ``status``, the previous command's."""
    script = f'genprob() {{ python -m genprob "$@"; }}\nexec 2>&1\n(exit {status})\n{command}'
    result = subprocess.run(
        ["bash", "-c", script], cwd=workdir, env=env, capture_output=True, text=True
    )
    return result.stdout.splitlines(), result.returncode


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    """A directory holding the files the page's bash blocks write, and the environment of the
    page's commands (this Python and this checkout's genprob)."""
    path = tmp_path_factory.mktemp("cli_docs")
    env = {
        **os.environ,
        # what `import jax` writes (a notebook's shell): the command must still keep XLA quiet
        "TF_CPP_MIN_LOG_LEVEL": "1",
        "PATH": f"{os.path.dirname(sys.executable)}{os.pathsep}{os.environ.get('PATH', '')}",
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
        "PYTHONUNBUFFERED": "1",
        "XDG_CACHE_HOME": str(path / ".cache"),  # the command line's compiled programs
    }
    for block in FILES:
        subprocess.run(["bash", "-e", "-c", block], cwd=path, env=env, check=True)
    return path, env


def test_the_page_has_its_examples():
    assert len(FILES) >= 2 and len(SESSIONS) >= 8, (len(FILES), len(SESSIONS))


def _nuts(block: str) -> bool:
    return re.search(r"^\$ genprob (compare|demo)", block, flags=re.M) is not None


def _check_session(block: str, workdir: Path, env: dict) -> None:
    status = 0
    for command, shown in commands(block):
        actual, status = run(command, workdir, env, status)
        # a problem is one line in the command's terms, never Python's warning with its source
        assert not [line for line in actual if _SOURCE_WARNING.search(line)], actual
        assert matches(shown, actual), (
            f"$ {command}\n--- the page shows:\n"
            + "\n".join(shown)
            + "\n--- the command printed:\n"
            + "\n".join(actual)
        )


def test_cli_examples_print_what_the_page_shows(workdir):
    # one test, in the page's order: later examples read the files earlier ones write
    for block in SESSIONS:
        if not _nuts(block):
            _check_session(block, *workdir)


@pytest.mark.slow
@pytest.mark.parametrize("index", [i for i, block in enumerate(SESSIONS) if _nuts(block)])
def test_nuts_example_prints_what_the_page_shows(workdir, index):
    _check_session(SESSIONS[index], *workdir)
