"""EVE's and VVE's M-step with SQUAREM cycles (issue 58's speed): the same covariances as MM's
own updates, in fewer of them (benchmarks/bench_mclust.py times it against R's mclust)."""

import json

import numpy as np
import pytest
from _mclust_data import REFERENCES, load

from genprob.families.gaussian import mclust


def _wine_scatter():
    """Each wine class's scatter about its mean (EDDA's M-step), and its row count."""
    X, y = load("wine")
    rows = [X[y == k] - X[y == k].mean(axis=0) for k in np.unique(y)]
    return np.stack([Z.T @ Z for Z in rows]), np.array([len(Z) for Z in rows], dtype=float)


def _counted(monkeypatch):
    """How many orientation updates (two Procrustes steps each) the M-steps run."""
    calls = [0]
    procrustes = mclust._procrustes

    def counted(F, xp):
        calls[0] += 1
        return procrustes(F, xp)

    monkeypatch.setattr(mclust, "_procrustes", counted)
    return calls


@pytest.mark.parametrize("structure", ["EVE", "VVE"])
def test_squarem_reaches_mm_covariances_in_fewer_updates(structure, monkeypatch):
    W, n = _wine_scatter()
    calls = _counted(monkeypatch)
    tight = dict(tol=1e-13)  # far into MM's slow tail, where SQUAREM earns its keep
    fast = mclust.covariances(structure, W, n, **tight)
    fast_calls, calls[0] = calls[0], 0
    monkeypatch.setattr(mclust, "ACCELERATE_FROM", mclust.MAX_ITER + 1)  # MM's own updates
    plain = mclust.covariances(structure, W, n, **tight)
    # the same fixed point: MM stops within ~4e-11 of it (its steps shrink by ~0.998)
    np.testing.assert_allclose(fast, plain, rtol=1e-9, atol=1e-9 * np.abs(plain).max())
    q_fast = mclust.m_step_objective(W, n, fast)
    q_plain = mclust.m_step_objective(W, n, plain)
    assert q_fast >= q_plain - 1e-12 * abs(q_plain)
    assert fast_calls < 0.7 * calls[0], (fast_calls, calls[0])


def test_squarem_edda_wine_at_least_mclust():
    """EDDA's one M-step on wine: at least mclust 6.1.3's log-likelihood (its MM stops at a
    looser tolerance, and its VVE at a lower optimum: -3014.25; make_mclust_reference.R)."""
    import genprob

    reference = json.loads((REFERENCES / "mclust_reference.json").read_text())
    X, y = load("wine")
    for structure in ("EVE", "VVE"):
        model = genprob.MixtureDiscriminantAnalysis(structure=structure).fit(X, y)
        expected = reference["wine"]["edda"][structure]["loglik"]
        assert model.log_likelihood_ >= expected
