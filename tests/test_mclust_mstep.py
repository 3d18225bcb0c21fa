"""The M-steps of the 14 Celeux–Govaert structures (genprob.families.gaussian.mclust)."""

import numpy as np
import pytest
from scipy.linalg import expm

from genprob.families.gaussian.mclust import (
    STRUCTURES,
    covariances,
    m_step_objective,
    num_covariance_parameters,
)

#: Free parameters by hand for G = 3 groups in D = 4 dimensions: volumes (1 or 3) + shapes
#: (0, 3 or 9) + orientations (0, 6 or 18).
BY_HAND_G3_D4 = {
    "EII": 1,
    "VII": 3,
    "EEI": 1 + 3,
    "VEI": 3 + 3,
    "EVI": 1 + 9,
    "VVI": 3 + 9,
    "EEE": 1 + 3 + 6,
    "VEE": 3 + 3 + 6,
    "EVE": 1 + 9 + 6,
    "VVE": 3 + 9 + 6,
    "EEV": 1 + 3 + 18,
    "VEV": 3 + 3 + 18,
    "EVV": 1 + 9 + 18,
    "VVV": 3 + 9 + 18,
}


def test_structures_in_mclust_order():
    assert STRUCTURES == tuple(BY_HAND_G3_D4)


@pytest.mark.parametrize("structure", STRUCTURES)
def test_parameter_count_by_hand(structure):
    assert num_covariance_parameters(structure, 3, 4) == BY_HAND_G3_D4[structure]


def test_parameter_counts_match_mclust_formulas():
    # mclust's nVarParams, written as in R/mclust.R
    for G, d in [(1, 1), (2, 3), (4, 13)]:
        formulas = {
            "EII": 1, "VII": G, "EEI": d, "VEI": G + (d - 1), "EVI": 1 + G * (d - 1),
            "VVI": G * d, "EEE": d * (d + 1) / 2, "EVE": 1 + G * (d - 1) + d * (d - 1) / 2,
            "VEE": G + (d - 1) + d * (d - 1) / 2, "VVE": G + G * (d - 1) + d * (d - 1) / 2,
            "EEV": 1 + (d - 1) + G * d * (d - 1) / 2, "VEV": G + (d - 1) + G * d * (d - 1) / 2,
            "EVV": 1 - G + G * d * (d + 1) / 2, "VVV": G * d * (d + 1) / 2,
        }  # fmt: skip
        for name, count in formulas.items():
            assert num_covariance_parameters(name, G, d) == count, (name, G, d)


def _scatter(seed, G=3, D=4, n=(30.0, 45.0, 25.0)):
    rng = np.random.default_rng(seed)
    W, counts = [], np.asarray(n[:G])
    for g in range(G):
        X = rng.normal(size=(int(counts[g]), D)) @ rng.normal(size=(D, D)) * (1.0 + g)
        X = X - X.mean(axis=0)
        W.append(X.T @ X)
    return np.stack(W), counts


def _perturbed(structure, sigma, rng, size):
    """A covariance of the same structure near ``sigma``: volumes, shapes and orientations
    moved, equal ones together."""
    G, D = sigma.shape[:2]
    volume_letter, shape_letter, orientation_letter = structure
    values, vectors = np.linalg.eigh(sigma)
    if orientation_letter == "E":
        vectors = np.broadcast_to(vectors[0], vectors.shape)
        values = np.einsum("ij,gik,kj->gj", vectors[0], sigma, vectors[0])
    if orientation_letter == "I":
        vectors = np.broadcast_to(np.eye(D), vectors.shape)
        values = np.diagonal(sigma, axis1=1, axis2=2)
    log_volume = np.log(values).mean(axis=1)
    log_shape = np.log(values) - log_volume[:, None]

    def step(shape, equal):
        move = rng.normal(size=shape[1:]) if equal else rng.normal(size=shape)
        return size * np.broadcast_to(move, shape)

    log_volume = log_volume + step((G,), volume_letter == "E")
    if shape_letter != "I":
        move = step((G, D), shape_letter == "E")
        log_shape = log_shape + move - move.mean(axis=1, keepdims=True)
    if orientation_letter != "I":
        skew = step((G, D, D), orientation_letter == "E")
        rotations = np.stack([expm(s - s.T) for s in skew])
        vectors = vectors @ rotations
    diagonals = np.exp(log_volume[:, None] + log_shape)
    return np.einsum("gij,gj,gkj->gik", vectors, diagonals, vectors)


@pytest.mark.parametrize("structure", STRUCTURES)
def test_m_step_is_a_local_maximum(structure):
    rng = np.random.default_rng(7)
    W, n = _scatter(0)
    sigma = covariances(structure, W, n)
    assert sigma.shape == (3, 4, 4) and np.all(np.isfinite(sigma))
    best = m_step_objective(W, n, sigma)
    # the answer has the structure: perturbing it by 0 gives it back
    np.testing.assert_allclose(_perturbed(structure, sigma, rng, 0.0), sigma, rtol=1e-9, atol=1e-9)
    for size in (1e-1, 1e-2, 1e-3):
        for _ in range(20):
            moved = m_step_objective(W, n, _perturbed(structure, sigma, rng, size))
            assert moved <= best + 1e-9 * abs(best), (size, moved, best)


def test_closed_forms_by_hand():
    W, n = _scatter(1)
    D = 4
    np.testing.assert_allclose(covariances("VVV", W, n), W / n[:, None, None])
    np.testing.assert_allclose(covariances("EEE", W, n)[1], W.sum(0) / n.sum())
    np.testing.assert_allclose(
        covariances("VVI", W, n),
        np.stack([np.diag(np.diag(w)) / m for w, m in zip(W, n, strict=True)]),
    )
    np.testing.assert_allclose(covariances("EEI", W, n)[2], np.diag(np.diag(W.sum(0))) / n.sum())
    np.testing.assert_allclose(
        covariances("VII", W, n),
        np.stack([np.trace(w) / (D * m) * np.eye(D) for w, m in zip(W, n, strict=True)]),
    )
    np.testing.assert_allclose(
        covariances("EII", W, n)[0], np.trace(W.sum(0)) / (D * n.sum()) * np.eye(D)
    )
    # EVV: lambda C_g with |C_g| = 1 and lambda = sum_g |W_g|^(1/D) / n (Celeux & Govaert)
    roots = np.linalg.det(W) ** (1 / D)
    np.testing.assert_allclose(
        covariances("EVV", W, n), roots.sum() / n.sum() * W / roots[:, None, None]
    )


@pytest.mark.parametrize("structure", STRUCTURES)
def test_one_group_every_structure_of_its_kind_agrees(structure):
    # with one group, E and V coincide: the structures reduce to spherical, diagonal or full
    W, n = _scatter(2, G=1, n=(40.0,))
    sigma = covariances(structure, W, n)
    kind = {"II": "VII", "EI": "VVI", "VI": "VVI"}.get(structure[1:], "VVV")
    np.testing.assert_allclose(sigma, covariances(kind, W, n), rtol=1e-7, atol=1e-10)


@pytest.mark.parametrize("structure", ["VEI", "VEE", "EVE", "VVE", "VEV"])
def test_one_group_shortcut_equals_the_iterations_on_two_equal_groups(structure):
    # one group takes the closed form; two equal groups run the iterations to the same answer
    W, n = _scatter(3, G=1, n=(40.0,))
    one = covariances(structure, W, n)
    two = covariances(structure, np.concatenate([W, W]), np.concatenate([n, n]), tol=1e-13)
    np.testing.assert_allclose(two, np.concatenate([one, one]), rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("structure", STRUCTURES)
def test_degenerate_group_raises_naming_group_and_structure(structure):
    W, n = _scatter(3)
    W[1] = 0.0
    pooled_only = {"EII", "EEI", "EEE", "EEV"}
    if structure in pooled_only:
        # a shared spread is still identified by the other groups
        assert np.all(np.isfinite(covariances(structure, W, n)))
        W[:] = 0.0
    with pytest.raises(ValueError, match=structure) as info:
        covariances(structure, W, n)
    assert "group" in str(info.value)
    n[2] = 0.0
    with pytest.raises(ValueError, match=f"{structure}: group 2"):
        covariances(structure, _scatter(3)[0], n)


def test_a_covariance_is_refused_at_the_mixture_m_steps_bound():
    # a ratio of 1.5e-13 passes the scatter's 1e-13 check; the result's bound is 1e3 epsilons
    W, n = np.tile(np.eye(2), (2, 1, 1)), np.array([4.0, 4.0])
    W[0, 1, 1] = 1.5e-13
    with pytest.raises(ValueError, match="VVV: group 0 has a singular covariance"):
        covariances("VVV", W, n)
    W[0, 1, 1] = 3e-13
    assert np.isclose(covariances("VVV", W, n)[0, 1, 1], 7.5e-14)


def test_bad_inputs():
    W, n = _scatter(4)
    with pytest.raises(ValueError, match="unknown structure"):
        covariances("XYZ", W, n)
    with pytest.raises(ValueError, match="finite"):
        covariances("VVV", W * np.nan, n)
    with pytest.raises(ValueError, match=r"\(\.\.\., G, D, D\)"):
        covariances("VVV", W[0], n)


@pytest.mark.parametrize("structure", ["VEI", "VEE", "EVE", "VVE", "VEV"])
def test_iterations_stop_at_the_cap(structure):
    W, n = _scatter(5)
    one = covariances(structure, W, n, max_iter=1)
    full = covariances(structure, W, n)
    assert np.all(np.isfinite(one))
    assert m_step_objective(W, n, one) <= m_step_objective(W, n, full) + 1e-9


def _orientation_run(structure, W, n, orientation):
    """The M-step run to a tight tol from ``orientation`` (a warm start with that orientation)."""
    ramp = orientation @ np.diag(np.arange(1.0, W.shape[1] + 1.0)) @ orientation.T
    start = np.broadcast_to(ramp, W.shape)
    return m_step_objective(W, n, covariances(structure, W, n, start=start, tol=1e-12))


@pytest.mark.parametrize(
    ("seed", "structure", "winner"),
    [(180, "EVE", "pooled"), (180, "VVE", "pooled"), (161, "EVE", "identity")],
)
def test_cold_start_keeps_the_better_of_its_two_starts(seed, structure, winner):
    """EVE's and VVE's orientation has local optima: the cold M-step screens mclust's start
    (identity) and the pooled scatter's eigenvectors and keeps the better optimum."""
    rng = np.random.default_rng(seed)
    n = np.array([8.0, 12.0, 20.0])
    rows = [rng.normal(size=(int(k), 4)) * rng.uniform(0.3, 2.0, size=4) for k in n]
    W = np.stack([r.T @ r for r in rows])
    by_start = {
        "identity": _orientation_run(structure, W, n, np.eye(4)),
        "pooled": _orientation_run(structure, W, n, np.linalg.eigh(W.sum(axis=0))[1]),
    }
    loser = by_start["pooled" if winner == "identity" else "identity"]
    assert by_start[winner] - loser > 1e-4 * abs(loser)  # two optima, far apart
    cold = m_step_objective(W, n, covariances(structure, W, n))
    assert cold == pytest.approx(by_start[winner], rel=1e-9)


@pytest.mark.parametrize("structure", STRUCTURES)
def test_a_batch_gives_each_member_its_lone_bits(structure):
    """Leading axes are independent problems, each member's covariances its lone call's to the
    bit (what lets MclustDA's classes share an M-step call and still give lone fits' numbers)."""
    rng = np.random.default_rng(12)
    B, G, D = 4, 3, 5
    X = rng.normal(size=(B, G, 40, D)) * rng.uniform(0.3, 3.0, size=(B, G, 1, D))
    n = rng.uniform(5.0, 40.0, size=(B, G))
    W = np.einsum("bgni,bgnj->bgij", X, X) * (n / 40.0)[..., None, None]
    start = np.stack([covariances("VVV", W[b], n[b]) for b in range(B)]) * 1.1
    for settings in ({}, {"start": start, "max_iter": 5}, {"start": start}):
        batch = covariances(structure, W, n, **settings)
        for b in range(B):
            own = {k: v[b] if k == "start" else v for k, v in settings.items()}
            np.testing.assert_array_equal(batch[b], covariances(structure, W[b], n[b], **own))
    if structure not in ("EII", "EEI", "EEE", "EEV"):  # these pool a zero group with the others
        W[2, 1] = 0.0  # one member's degenerate group fails the batch, naming the group
        with pytest.raises(ValueError, match="group 1"):
            covariances(structure, W, n)
