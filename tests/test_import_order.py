"""genprob works whatever was imported before it (issue 55).

ArviZ 1.x leaves lazily loaded stand-ins for ``jax`` and ``numpyro`` in ``sys.modules`` at its
import (``lazy_loader``); NumPyro's submodules imported through the stand-in lost
``numpyro.distributions.distribution``, which ``numpyro.factor`` reads, so every semi-supervised
posterior failed after ``import arviz``. Each order runs in a fresh process, and each must draw
the same numbers as a process that imported NumPyro itself first. Marked ``arviz``: the ArviZ
1.x run of ``make test`` (where the stand-ins exist) runs it, and so does the main run.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

pytestmark = pytest.mark.arviz

#: each order's imports, then a semi-supervised posterior of two stories, az.loo and az.compare
SCRIPT = textwrap.dedent(
    """
    import json, sys, warnings
    for name in sys.argv[1].split(","):
        __import__(name)
    import arviz as az
    import numpy as np
    import genprob as gp
    from sklearn.datasets import load_iris

    warnings.simplefilter("ignore")  # short chains: the diagnostics' warnings are expected
    X, y = load_iris(return_X_y=True)
    ys = np.where(np.arange(150) % 5 == 0, y, -1)
    settings = dict(num_samples=40, num_warmup=40, num_chains=2, random_state=0)
    idata = {
        name: est.fit(X, ys).posterior(X, ys, **settings)
        for name, est in [
            ("qda", gp.QuadraticDiscriminantAnalysis()),
            ("lda", gp.LinearDiscriminantAnalysis()),
        ]
    }
    means = {
        name: float(np.sum([np.asarray(v).mean() for v in data.posterior.data_vars.values()]))
        for name, data in idata.items()
    }
    loo = {name: az.loo(data) for name, data in idata.items()}
    elpd = {k: float(getattr(v, "elpd", None) or v["elpd_loo"]) for k, v in loo.items()}
    order = [str(name) for name in az.compare(idata).sort_values("rank").index]
    print(json.dumps({"means": means, "elpd": elpd, "order": order, "lazy": type(
        sys.modules["numpyro"]).__name__}))
    """
)

ORDERS = {
    "numpyro first": "numpyro.distributions",  # no stand-in: the reference numbers
    "arviz first": "arviz",
    "arviz after genprob": "genprob,arviz",
}


def _run(code: str, *args: str, timeout: int = 400) -> subprocess.CompletedProcess:
    env = {**os.environ, "MPLBACKEND": "Agg"}
    return subprocess.run(
        [sys.executable, "-c", code, *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=timeout,
        cwd=os.path.dirname(__file__),  # not the checkout's root: PYTHONPATH decides genprob
    )


@pytest.fixture(scope="module")
def results():
    out = {}
    for label, modules in ORDERS.items():
        done = _run(SCRIPT, modules)
        assert done.returncode == 0, f"{label}: {done.stderr[-3000:]}"
        out[label] = json.loads(done.stdout.strip().splitlines()[-1])
    return out


@pytest.mark.parametrize("label", ["arviz first", "arviz after genprob"])
def test_semi_supervised_posterior_loo_and_compare_whatever_the_import_order(results, label):
    reference, got = results["numpyro first"], results[label]
    assert got["lazy"] == "module"  # the stand-in was loaded in place, not replaced
    assert got["means"] == reference["means"]  # the same draws, bit for bit
    np.testing.assert_allclose(list(got["elpd"].values()), list(reference["elpd"].values()))
    assert np.isfinite(list(got["elpd"].values())).all()
    assert sorted(got["order"]) == ["lda", "qda"] and got["order"] == reference["order"]


def test_lazy_numpyro_stand_in_is_loaded_before_genprob_imports_from_it():
    """The mechanism without ArviZ: ``lazy_loader.load`` (ArviZ 1.x's call) before genprob."""
    pytest.importorskip("lazy_loader")
    code = textwrap.dedent(
        """
        import sys, lazy_loader
        lazy_loader.load("jax"); lazy_loader.load("numpyro")
        import genprob
        import numpyro.distributions as dist
        print(hasattr(dist, "distribution"), type(sys.modules["numpyro"]).__name__)
        """
    )
    done = _run(code)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.split() == ["True", "module"]


def test_genprob_compare_after_arviz(tmp_path):
    """``genprob compare`` called from a process that imported ArviZ first (a notebook's)."""
    from sklearn.datasets import load_iris

    frame = load_iris(as_frame=True).frame
    frame.loc[np.arange(150) % 5 != 0, "target"] = np.nan  # empty target cells: unlabeled
    data = tmp_path / "iris.csv"
    frame.to_csv(data, index=False)
    code = textwrap.dedent(
        """
        import sys
        import arviz
        from genprob.app.cli import main
        sys.exit(main(sys.argv[1:]))
        """
    )
    args = ["compare", "qda", str(data), "--target", "target", "--num-samples", "40"]
    args += ["--num-warmup", "40", "--accept-diagnostics", "--out", str(tmp_path / "out")]
    done = _run(code, *args)
    assert done.returncode == 0, done.stderr[-3000:]
    table = (tmp_path / "out" / "mle_vs_posterior.csv").read_text().splitlines()
    assert table[0].startswith("parameter") and len(table) > 10
