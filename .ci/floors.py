"""Print ``name==floor`` for every runtime dependency of pyproject.toml (its ``>=`` bound).

The "oldest" environment of ``make test`` installs exactly these, so a floor lowered below a
version that fails is caught there. ``--except NAME`` leaves a package to the resolver (the
scikit-learn that the parity tests compare against is pinned by the ``test`` extra);
``--check`` instead verifies that this interpreter has every floor installed.
"""

import re
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def floors(skip=()) -> list[str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    pins = []
    for requirement in project["dependencies"]:
        match = re.match(r"^\s*([A-Za-z0-9_.\-]+)(\[[^\]]*\])?\s*(.*)$", requirement)
        name, extras, spec = match.group(1), match.group(2) or "", match.group(3)
        if name.lower() in skip:
            continue
        floor = re.search(r">=\s*([0-9][^,;\s]*)", spec)
        if floor is None:
            sys.exit(f"pyproject.toml: {requirement!r} states no floor (>=).")
        pins.append(f"{name}{extras}=={floor.group(1)}")
    return pins


def check(pins: list[str]) -> None:
    from importlib.metadata import version

    from packaging.version import Version

    wrong = [
        f"{pin} but {version(pin.split('==')[0])} is installed"
        for pin in pins
        if Version(version(re.sub(r"\[.*\]", "", pin.split("==")[0])))
        != Version(pin.split("==")[1])
    ]
    if wrong:
        sys.exit("not at the floor: " + "; ".join(wrong))
    print(f"{len(pins)} runtime dependencies at their floors: {', '.join(pins)}")


if __name__ == "__main__":
    args = sys.argv[1:]
    skip = {args[i + 1].lower() for i, a in enumerate(args) if a == "--except"}
    if "--check" in args:
        check(floors(skip))
    else:
        print("\n".join(floors(skip)))
