"""``mixture.fit_mixtures``: candidates fitted on the same rows with their EMs in lockstep (one
E-step and one set of statistics a round) give every number a lone ``fit_mixture`` gives, to
the bit: fits, iterations, traces and errors, with or without a prior, with row weights."""

import warnings

import numpy as np
import pytest
from _mclust_data import class_rows

from genprob.families.gaussian import mclust, mclust_prior, mixture


def _alone(X, candidate, **settings):
    (G, structures, prior) = candidate
    try:
        return mixture.fit_mixture(X, np.zeros(len(X), int), G, structures, prior=prior, **settings)
    except mixture.CollapsedComponentError as error:
        return error


def _assert_same(together, alone):
    if isinstance(alone, Exception):
        assert type(together) is type(alone) and str(together) == str(alone)
        return
    assert together.n_iter == alone.n_iter and together.trace == alone.trace
    assert together.converged == alone.converged
    for name in ("weights", "means", "covariances", "class_prior", "responsibilities"):
        np.testing.assert_array_equal(getattr(together, name), getattr(alone, name), name)


# wine's class 2 (48 rows, 13 features): EEV's EM there turns 1e-15 into a different optimum
@pytest.mark.parametrize("name, label", [("iris", 0), ("wine", 2)])
def test_every_candidate_is_the_lone_fit(name, label):
    X = class_rows(name, label)
    candidates = [((G,), (s,), None) for s in mclust.STRUCTURES for G in (1, 2, 3)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        together = mixture.fit_mixtures(X, np.zeros(len(X), int), candidates)
        alone = [_alone(X, c) for c in candidates]
    assert sum(isinstance(a, Exception) for a in alone) < len(candidates) // 2
    for t, a in zip(together, alone, strict=True):
        _assert_same(t, a)


def test_under_a_prior_with_row_weights():
    X = class_rows("iris", 1)
    weights = np.random.default_rng(0).uniform(0.5, 2.0, len(X))
    candidates = [
        ((G,), (s,), (mclust_prior.default_prior(X, G, s, weights),))
        for s in mclust_prior.PRIOR_STRUCTURES
        for G in (2, 3)
    ]
    settings = dict(row_weight=weights, prior_step="em")
    together = mixture.fit_mixtures(X, np.zeros(len(X), int), candidates, **settings)
    for t, c in zip(together, candidates, strict=True):
        _assert_same(t, _alone(X, c, **settings))


def test_what_lockstep_does_not_cover_is_fitted_alone():
    """Several starts, unlabeled rows: each candidate alone, as fit_mixture."""
    X = class_rows("iris", 2)
    candidates = [((2,), ("VVV",), None), ((3,), ("VEI",), None)]
    codes = np.zeros(len(X), int)
    for t, c in zip(mixture.fit_mixtures(X, codes, candidates, n_init=2), candidates, strict=True):
        _assert_same(t, _alone(X, c, n_init=2))
    two = np.vstack([X, class_rows("iris", 1)])
    partly = np.r_[np.zeros(len(X), int), np.full(len(X), -1)]
    together = mixture.fit_mixtures(two, partly, [((2,), ("EEE",), None)])[0]
    _assert_same(together, mixture.fit_mixture(two, partly, (2,), ("EEE",)))


def test_classes_fitted_together_batch_their_m_steps_and_give_lone_fits(monkeypatch):
    """MclustDA's classes in one lockstep: the warm M-steps of candidates alike (a structure and
    G, each class on its own rows) in one batched call, every number still the lone fit's."""
    candidates = [((G,), (s,), None) for s in mclust.STRUCTURES for G in (2, 3)]
    classes = [class_rows("iris", k) for k in range(3)]
    batched = []
    lone_call = mclust.covariances

    def counting(structure, scatter, weights, **settings):
        batched.append(np.ndim(scatter) == 4)
        return lone_call(structure, scatter, weights, **settings)

    monkeypatch.setattr(mclust, "covariances", counting)
    sets = [(X, np.zeros(len(X), int), candidates, None, None) for X in classes]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        together = mixture.fit_mixture_sets(sets)
        assert sum(batched) > 100
        for X, fits in zip(classes, together, strict=True):
            for t, c in zip(fits, candidates, strict=True):
                _assert_same(t, _alone(X, c))


def test_stacked_posteriors_are_each_fits_own():
    # semi-supervised rows (other classes' cells masked), zero row weights, -inf densities
    rng = np.random.default_rng(3)
    n, members, width = 40, 5, 4
    joint = rng.normal(scale=30.0, size=(n, members, width))
    joint[rng.uniform(size=joint.shape) < 0.1] = -np.inf
    cell_class = np.array([[0, 0, 1, 1], [0, 1, 1, 1], [0, 0, 0, 1], [0, 1, 0, 1], [1, 1, 0, 0]])
    log_prior = np.log(rng.dirichlet(np.ones(2), members))[np.arange(members)[:, None], cell_class]
    codes = rng.integers(-1, 2, n)
    row_weight = rng.uniform(0.5, 2.0, n)
    row_weight[[3, 17]] = 0.0
    R, log_liks = mixture._posteriors(log_prior, cell_class, joint, codes, row_weight)
    scored = np.isfinite(R).all(axis=-1) & (row_weight > 0)[:, None]  # NaN: no cell of its class
    assert scored.mean() > 0.8
    np.testing.assert_allclose(R.sum(axis=-1)[scored], 1.0, rtol=1e-12)
    for b in range(members):
        alone, log_lik = mixture._posteriors(
            log_prior[b], cell_class[b], joint[:, b], codes, row_weight
        )
        np.testing.assert_array_equal(R[:, b], alone)
        assert log_liks[b] == log_lik
        labeled = (codes >= 0) & scored[:, b]
        assert np.all(R[labeled, b][cell_class[b][None, :] != codes[labeled, None]] == 0)
