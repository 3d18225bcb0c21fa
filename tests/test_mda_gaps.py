"""MixtureDiscriminantAnalysis (issue 44), the remaining gaps: warm-started iterative M-steps
inside EM, partial_fit and Dask for EDDA, and NaN cells marginalized with the named structures
in GaussianStory."""

from pathlib import Path

import numpy as np
import pytest

from genprob.families.gaussian import mclust, mixture

REFERENCES = Path(__file__).parent / "references" / "mclust"


def _data(name):
    table = np.loadtxt(REFERENCES / f"{name}.csv", delimiter=",", skiprows=1)
    return table[:, :-1], table[:, -1].astype(int)


def _class_scatter(X, y):
    scatter = np.stack([np.cov(X[y == k].T, bias=True) * np.sum(y == k) for k in np.unique(y)])
    return scatter, np.bincount(y).astype(float)


# -- (d) warm starts -----------------------------------------------------------------------------
@pytest.mark.parametrize("structure", mclust.ITERATIVE)
def test_warm_start_reaches_the_cold_maximum(structure):
    X, y = _data("iris")
    W, n = _class_scatter(X, y)
    cold = mclust.covariances(structure, W, n)
    # from the answer itself: nothing moves
    np.testing.assert_allclose(mclust.covariances(structure, W, n, start=cold), cold, rtol=1e-10)
    # from the previous EM iteration's answer (slightly other scatter): Q never below start's,
    # and the same maximum as from scratch
    other = mclust.covariances(structure, W * np.array([1.02, 0.99, 1.01])[:, None, None], n)
    warm = mclust.covariances(structure, W, n, start=other)
    np.testing.assert_allclose(warm, cold, rtol=1e-8, atol=1e-12)
    few = mclust.covariances(structure, W, n, start=other, max_iter=2)
    assert mclust.m_step_objective(W, n, few) >= mclust.m_step_objective(W, n, other)
    with pytest.raises(ValueError, match="start must have"):
        mclust.covariances(structure, W, n, start=cold[:2])


@pytest.mark.parametrize("structure", ["EVE", "VEI"])
def test_capped_warm_m_steps_give_the_full_fit(structure, monkeypatch):
    X, y = _data("iris")
    rows = y == 2
    fits = []
    for cap in (mixture.WARM_MAX_ITER, mclust.MAX_ITER):
        monkeypatch.setattr(mixture, "WARM_MAX_ITER", cap)
        fits.append(mixture.fit_mixture(X[rows], np.zeros(rows.sum(), int), (2,), (structure,)))
    capped, full = fits
    assert capped.converged and full.converged
    assert capped.log_likelihood == pytest.approx(full.log_likelihood, rel=1e-7)
    np.testing.assert_allclose(capped.means, full.means, atol=1e-3)
    assert np.all(np.diff(capped.trace) >= -1e-9 * abs(capped.trace[-1]))
