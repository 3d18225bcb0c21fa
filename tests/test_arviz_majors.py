"""The same posterior call gives the same ArviZ result under ArviZ 0.x and 1.x.

This interpreter's result is compared with the other major's, computed by the other virtualenv
(``tests/arviz_parity.py`` in a subprocess): ``.venv-arviz1`` from the 0.x environment and
``.venv`` from the 1.x one, both built by ``make test``; ``GENPROB_OTHER_ARVIZ_PYTHON`` names
another interpreter.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from genprob.io import _arviz_compat as compat

pytestmark = pytest.mark.arviz

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
import arviz_parity  # noqa: E402


def _other_python() -> str:
    default = ".venv-arviz1" if compat.major() == 0 else ".venv"
    python = os.environ.get("GENPROB_OTHER_ARVIZ_PYTHON", str(ROOT / default / "bin" / "python"))
    if not Path(python).exists():
        pytest.fail(
            f"no interpreter with the other ArviZ major at {python}: `make test` builds it "
            "(`make .venv-arviz1/.installed`), or set GENPROB_OTHER_ARVIZ_PYTHON."
        )
    return python


@pytest.fixture(scope="module")
def both(tmp_path_factory):
    folder = tmp_path_factory.mktemp("parity")
    here, there = folder / "here.npz", folder / "there.npz"
    env = {**os.environ, "MPLBACKEND": "Agg"}
    child = subprocess.Popen(
        [_other_python(), str(ROOT / "tests" / "arviz_parity.py"), str(there)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    arviz_parity.dump(str(here))  # runs while the other interpreter works
    output, _ = child.communicate(timeout=500)
    assert child.returncode == 0, output[-3000:]
    loaded = [np.load(path) for path in (here, there)]
    return [(json.loads(str(f["meta"])), {k: f[k] for k in f.files if k != "meta"}) for f in loaded]


def test_the_other_interpreter_has_the_other_major(both):
    (meta_here, _), (meta_there, _) = both
    assert {meta_here["major"], meta_there["major"]} == {0, 1}


@pytest.mark.parametrize("key", ["nuts", "bernoulli", "multinomial"])
def test_same_groups_dims_coords_attrs_and_bitwise_values(both, key):
    (meta_here, here), (meta_there, there) = both
    assert meta_here[key]["groups"] == meta_there[key]["groups"]
    groups = meta_here[key]["groups"]
    stats = ["sample_stats"] if key == "nuts" else []
    # ArviZ's canonical group order, then genprob's maximum-likelihood group
    expected = ["posterior", "posterior_predictive", "log_likelihood", *stats, "prior"]
    assert list(groups) == [*expected, "observed_data", "mle"]
    if key == "nuts":
        assert groups["posterior"]["coords"]["class"] == ["ham", "spam"]
        assert groups["posterior"]["coords"]["feature"] == ["width", "height"]
        assert groups["posterior"]["vars"]["means"] == ["chain", "draw", "class", "feature"]
    stored = sorted(n for n in here if n.startswith(f"{key}/") and "/loo/" not in n)
    assert stored == sorted(n for n in there if n.startswith(f"{key}/") and "/loo/" not in n)
    assert f"{key}/log_likelihood/obs" in stored and f"{key}/posterior/class_prior" in stored
    for name in stored:
        # draws, pointwise log-likelihoods, the MLE and the whole table: bit for bit
        np.testing.assert_array_equal(here[name], there[name], err_msg=name)


@pytest.mark.parametrize("key", ["nuts", "bernoulli", "multinomial"])
def test_loo_agrees_across_the_two_psis_implementations(both, key):
    (meta_here, here), (meta_there, there) = both
    a, b = meta_here[key]["loo"], meta_there[key]["loo"]
    assert a["elpd"] == pytest.approx(b["elpd"], rel=1e-3)
    assert a["p"] == pytest.approx(b["p"], rel=1e-2)
    np.testing.assert_allclose(here[f"{key}/loo/elpd_i"], there[f"{key}/loo/elpd_i"], rtol=1e-3)


def test_compare_ranks_the_two_stories_the_same_way(both):
    (meta_here, _), (meta_there, _) = both
    assert meta_here["compare_order"] == meta_there["compare_order"]
    assert sorted(meta_here["compare_order"]) == ["bernoulli", "multinomial"]


_RACED_IMPORT = """
import pathlib, sys

replace = pathlib.Path.replace
calls = []


def raced(self, target):
    calls.append(str(target))
    if pathlib.Path(target).name != "daily_warning":
        return replace(self, target)
    if sys.argv[1] == "raced" and len(calls) == 1:
        # the other process renames its own temporary file first: the stamp is there and this
        # process's temporary file was replaced by it
        replace(self, target)
        raise FileNotFoundError(2, "No such file or directory", str(self), str(target))
    raise PermissionError(13, "Permission denied", str(self), str(target))


pathlib.Path.replace = raced
from genprob.io import _arviz_compat

try:
    module = _arviz_compat.arviz()
except ImportError as error:
    print("ImportError:", error)
else:
    stamped = any(pathlib.Path(call).name == "daily_warning" for call in calls)
    print(module.__version__, len(calls) if stamped else "no daily stamp")
"""


@pytest.mark.parametrize("case", ["raced", "read-only"])
def test_arviz_import_survives_the_daily_stamp_race(tmp_path, case):
    # ArviZ 0.x writes a daily stamp at import: a second process importing it at the same moment
    # fails on the rename; genprob's import retries, and a cache it cannot write is named
    env = {k: v for k, v in os.environ.items() if not k.startswith("GENPROB_")}
    env["XDG_CACHE_HOME"] = str(tmp_path)
    done = subprocess.run(
        [sys.executable, "-c", _RACED_IMPORT, case],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    out = done.stdout.strip()
    if out.endswith("no daily stamp"):
        pytest.skip(f"ArviZ {out.split()[0]} writes no daily stamp (0.23 does, 1.x does not)")
    if case == "raced":
        assert out.split() == [compat.arviz().__version__, "1"], done.stdout + done.stderr
    else:
        assert out.startswith("ImportError: ArviZ could not be imported"), out
        assert "daily_warning" in out and "XDG_CACHE_HOME" in out, out
