r"""MAP M-steps under mclust's conjugate prior (``priorControl()``, ``defaultPrior``): the
hyperparameters of :func:`default_prior` and the M-step :func:`map_step` of the 10 structures
mclust has one for, each as mclust's Fortran routine computes it (docs/howto/model_based.md,
"A prior in EM"). NumPy only.

The prior on a component is normal for its mean (centre ``mean``, ``shrinkage`` κ prior rows)
and inverse-Wishart-like for its covariance (``dof`` ν, ``scale`` Λ). With the weighted count
``n_k``, mean ``x̄_k``, scatter ``W_k`` and ``c_k = κ n_k / (n_k + κ)``, ``d_k = mean - x̄_k``, the
posterior mode's mean is ``(n_k x̄_k + κ mean) / (n_k + κ)`` and its covariance the structure's
ML M-step on ``Λ + W_k + c_k d_k d_kᵀ`` with counts increased by ν and a few units, which
differ by structure and between mclust's M-step alone and its EM (:data:`STEPS`). mclust's own
choices are reproduced to the letter: EEI keeps the sample means, EEV's M-step alone drops the
shrinkage, EII adds no scale, VEV counts no degrees of freedom.
"""

from __future__ import annotations

import numbers

import numpy as np

from genprob.families.gaussian import mclust
from genprob.families.gaussian.moments import symmetrize

__all__ = ["PRIOR_STRUCTURES", "check_prior", "default_prior", "map_step"]

#: The structures mclust has a MAP M-step for (``?defaultPrior``); VEE, EVE, VVE, EVV have none.
PRIOR_STRUCTURES = ("EII", "VII", "EEI", "VEI", "EVI", "VVI", "EEE", "EEV", "VEV", "VVV")
#: defaultPrior's shrinkage κ.
SHRINKAGE = 0.01
_KEYS = ("shrinkage", "mean", "dof", "scale")


def _spherical_or_diagonal(structure: str) -> bool:
    return structure.endswith("I")


def default_prior(X, num_components: int, structure: str, row_weight=None) -> dict:
    """mclust's ``defaultPrior(X, G, structure)``: ``shrinkage`` 0.01, ``mean`` the rows' mean,
    ``dof`` D + 2 and ``scale`` ``G^{-2/D}`` times the rows' covariance (a scalar, its trace / D,
    for the spherical and diagonal structures; its diagonal when there are at most D rows).
    ``row_weight`` weights the rows (a weight of 2 counts a row twice). NaN cells are left
    out: each feature's mean and variance are its observed cells', the scale is diagonal."""
    _check_structure(structure)
    X = np.asarray(X, dtype=np.float64)
    n, D = X.shape
    w = np.ones(n) if row_weight is None else np.asarray(row_weight, dtype=np.float64)
    observed = ~np.isnan(X)
    cell_weight = w[:, None] * observed
    totals = cell_weight.sum(axis=0)
    if not np.all(totals > 1):
        raise ValueError(
            "the default prior needs each feature observed on a total row weight above 1 "
            "(a variance)."
        )
    mean = np.where(observed, X, 0.0).T @ w / totals
    centered = np.where(observed, X - mean, 0.0)
    # R's var: the n - 1 denominator
    covariance = (centered * w[:, None]).T @ centered / (float(w.sum()) - 1.0)
    variances = (cell_weight * centered**2).sum(axis=0) / (totals - 1.0)
    factor = (1.0 / num_components) ** (2.0 / D)
    if _spherical_or_diagonal(structure):
        scale = factor * float(variances.sum()) / D
    elif observed.all() and float(w.sum()) > D:
        scale = factor * covariance
    else:
        scale = factor * np.diag(variances)
    return {"shrinkage": SHRINKAGE, "mean": mean, "dof": float(D + 2), "scale": scale}


def check_prior(prior, num_features: int, name: str = "prior") -> dict:
    """A user's hyperparameters as floats and arrays, or a ``ValueError`` naming what is wrong:
    ``shrinkage`` >= 0, ``mean`` (D,), ``dof`` > 0, ``scale`` a positive number or a symmetric
    positive definite (D, D) matrix; missing keys are the default prior's."""
    unknown = sorted(set(prior) - set(_KEYS))
    if unknown:
        raise ValueError(f"{name}: unknown hyperparameter(s) {unknown}; expected {list(_KEYS)}.")
    out = dict(prior)
    D = int(num_features)
    if "shrinkage" in out:
        value = out["shrinkage"]
        if not isinstance(value, numbers.Real) or not value >= 0 or not np.isfinite(value):
            raise ValueError(f"{name}['shrinkage'] must be a finite number >= 0, got {value!r}.")
        out["shrinkage"] = float(value)
    if "dof" in out:
        value = out["dof"]
        if not isinstance(value, numbers.Real) or not value > 0 or not np.isfinite(value):
            raise ValueError(f"{name}['dof'] must be a finite number > 0, got {value!r}.")
        out["dof"] = float(value)
    if "mean" in out:
        mean = np.asarray(out["mean"], dtype=np.float64)
        if mean.shape != (D,) or not np.all(np.isfinite(mean)):
            raise ValueError(f"{name}['mean'] must be {D} finite numbers, got shape {mean.shape}.")
        out["mean"] = mean
    if "scale" in out:
        scale = np.asarray(out["scale"], dtype=np.float64)
        if scale.ndim == 0:
            good = np.isfinite(scale) and scale > 0
        else:
            good = (
                scale.shape == (D, D)
                and np.all(np.isfinite(scale))
                and np.allclose(scale, scale.T)
                and np.linalg.eigvalsh(scale)[0] > 0
            )
        if not good:
            raise ValueError(
                f"{name}['scale'] must be a positive number or a symmetric positive definite "
                f"({D}, {D}) matrix."
            )
        out["scale"] = float(scale) if scale.ndim == 0 else scale
    return out


def _check_structure(structure):
    if structure not in PRIOR_STRUCTURES:
        raise ValueError(
            f"{structure}: mclust has no prior for this structure (VEE, EVE, VVE and EVV have "
            f"none); structures with one: {', '.join(PRIOR_STRUCTURES)}."
        )


def _scale_as(structure, scale, D):
    """The scale in the structure's form: a scalar (spherical, diagonal) or a (D, D) matrix."""
    scale = np.asarray(scale, dtype=np.float64)
    if _spherical_or_diagonal(structure):
        return float(np.trace(scale)) / D if scale.ndim else float(scale)
    return scale if scale.ndim else float(scale) * np.eye(D)


#: mclust's two sets of MAP M-steps: ``mstep`` (its M-step alone: EDDA, MclustSSC) and ``em``
#: (inside its EM, ``me*p``; one component is its ``mvn*p``), which differ for EII, EEI, EVI, EEV
STEPS = ("mstep", "em")


def map_step(
    structure: str,
    counts,
    means,
    scatter,
    prior: dict,
    *,
    step: str = "mstep",
    tol=mclust.TOL,
    max_iter=mclust.MAX_ITER,
):
    """The posterior mode's means (G, D) and covariances (G, D, D) of a group of ``G`` cells of
    ``structure`` with weighted counts ``counts`` (G,), means ``means`` (G, D) and scatter
    ``scatter`` (G, D, D) about them, under ``prior`` (:func:`default_prior`'s keys); ``step``:
    which of mclust's routines (:data:`STEPS`)."""
    _check_structure(structure)
    if step not in STEPS:
        raise ValueError(f"step must be one of {STEPS}, got {step!r}.")
    n = np.asarray(counts, dtype=np.float64)
    xbar = np.asarray(means, dtype=np.float64)
    W = symmetrize(np.asarray(scatter, dtype=np.float64))
    G, D = xbar.shape
    em = step == "em"
    if em and G == 1:
        # mclust fits one component by mvnXII, mvnXXI, mvnXXX: the V structures' steps
        structure = mclust.one_component(structure)
    kappa = float(prior["shrinkage"])
    if structure == "EEV" and not em:
        kappa = 0.0  # mclust's mseevp sets a positive shrinkage to zero
    dof = float(prior["dof"])
    scale = _scale_as(structure, prior["scale"], D)
    shrunk = kappa > 0
    d = np.asarray(prior["mean"], dtype=np.float64) - xbar
    c = kappa * n / (n + kappa)
    outer = c[:, None, None] * np.einsum("gi,gj->gij", d, d)
    centre = np.asarray(prior["mean"], dtype=np.float64)
    posterior_means = (n[:, None] * xbar + kappa * centre) / (n + kappa)[:, None]
    if structure == "EEI" or (structure == "EEV" and not em):
        posterior_means = xbar  # mclust keeps the sample means there
    total = float(n.sum())
    diag = np.diagonal(W, axis1=1, axis2=2) + c[:, None] * d**2  # (G, D)
    ml_steps = mclust._STEPS
    context = mclust._Context(structure, float(tol), int(max_iter), np)
    if structure == "EII" and em:
        # no scale term, G D degrees of freedom whatever the shrinkage (meeiip)
        sigsq = np.sum(c * np.sum(d**2, axis=1)) + np.trace(W, axis1=1, axis2=2).sum()
        sigsq /= dof + (total + G) * D + 2.0
        sigma = np.broadcast_to(sigsq * np.eye(D), (G, D, D)).copy()
    elif structure == "EII":
        # residuals about the shrunk means, no scale term (mseiip)
        moved = n * np.sum((xbar - posterior_means) ** 2, axis=1)
        sigsq = np.sum(c * np.sum(d**2, axis=1)) + np.trace(W, axis1=1, axis2=2).sum()
        sigsq += moved.sum()
        sigsq /= dof + total * D + 2.0 + (G * D if shrunk else 0.0)
        sigma = np.broadcast_to(sigsq * np.eye(D), (G, D, D)).copy()
    elif structure == "VII":
        sigsq = (scale + diag.sum(axis=1)) / (dof + n * D + 2.0 + (D if shrunk else 0.0))
        sigma = sigsq[:, None, None] * np.eye(D)
    elif structure == "EEI":
        pooled = scale + diag.sum(axis=0)
        extra = (1.0 + shrunk) if em else 2.0 + (G if shrunk else 0.0)  # meeeip, mseeip
        pooled = pooled / (dof + total + extra)
        sigma = np.broadcast_to(np.diag(pooled), (G, D, D)).copy()
    elif structure == "VVI":
        values = (scale + diag) / (n + dof + 2.0 + (1.0 if shrunk else 0.0))[:, None]
        sigma = values[:, :, None] * np.eye(D)
    elif structure == "EVI":
        values = scale + diag
        size = mclust._geometric_mean(values)
        extra = (1.0 + shrunk) if em else 2.0 + (G if shrunk else 0.0)  # meevip, msevip
        total_count = dof + total + extra
        sigma = (size.sum() / total_count * values / size[:, None])[:, :, None] * np.eye(D)
    elif structure == "VEI":
        values = scale + diag
        count = (dof + n * D + 2.0 + (1.0 if shrunk else 0.0)) / D
        sigma = mclust._diagonal_matrices(
            mclust._volumes_and_common_shape(values, count, context), context
        )
    elif structure == "EEE":
        pooled = scale + (W + outer).sum(axis=0)
        pooled = pooled / (dof + total + D + 1.0 + (G if shrunk else 0.0))
        sigma = np.broadcast_to(pooled, (G, D, D)).copy()
    elif structure == "VVV":
        count = dof + n + D + (2.0 if em else 1.0 + shrunk)  # mevvvp, msvvvp
        sigma = (scale + W + outer) / count[:, None, None]
    elif structure == "EEV":
        # the ML step divides by the counts' sum
        count = np.full(G, (dof + total + D + 1.0 + (shrunk if em else 0.0)) / G)
        sigma = ml_steps["EEV"](scale + W + outer, count, context)
    else:  # VEV: the ML step with the prior's scatter and the plain counts
        sigma = ml_steps["VEV"](scale + W + outer, n, context)
    return posterior_means, symmetrize(sigma)
