"""Missing feature values: NaN entries of X summed out of the story instead of imputed
(docs/howto/missing.md); :class:`Marginalized` is :mod:`genprob.engine.masking`'s."""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from genprob._lazy import lazy_attribute
from genprob.core import class_prior_from_counts, joint_log_prob
from genprob.engine._arrays import plain
from genprob.engine._limits import check_statistics_size, check_traced_size
from genprob.engine.capabilities import capability
from genprob.engine.em import _labeled_responsibilities, _row_weights, run_statistics_em
from genprob.engine.masking import Marginalized, fill_missing, has_missing, marginalized
from genprob.story import CLASS_PRIOR, Story

__all__ = [
    "Marginalized",
    "marginalized",
    "has_missing",
    "fill_missing",
    "fit_observed",
    "MissingFitResult",
]

__getattr__ = lazy_attribute(__name__, {"MaskedEmission": "genprob.engine.masked_emission"})


class MissingFitResult(NamedTuple):
    """Outcome of :func:`fit_observed`: ``stats`` are those the final ``params`` were maximized
    from; ``log_likelihood`` has ``n_iter + 1`` entries (before each M-step and after the last)."""

    params: dict
    stats: dict
    responsibilities: jax.Array
    log_likelihood: np.ndarray
    n_iter: int
    converged: bool


@jax.jit
def _m_step(story, filled, observed, R, params, class_prior, fit_prior_scale):
    emission_stats = story.observed_statistics(filled, R, observed, params)
    class_counts = R.sum(axis=0)
    new = dict(story.maximize(emission_stats))
    fitted_prior = class_prior_from_counts(class_counts)
    # fit_prior_scale: 1 estimates the prior, 0 keeps the given one (traced: no recompiling)
    new[CLASS_PRIOR] = fit_prior_scale * fitted_prior + (1 - fit_prior_scale) * class_prior
    return new, {"class_counts": class_counts, "emission": emission_stats}


@jax.jit
def _e_step(story, X, labels_R, labeled, row_weights, params):
    joint = joint_log_prob(marginalized(story), params, X)
    posterior = jax.nn.softmax(joint, axis=-1)
    chosen = jnp.sum(joint * labels_R, axis=-1)
    values = jnp.where(labeled, chosen, jax.nn.logsumexp(joint, axis=-1))
    R = jnp.where(labeled[:, None], labels_R, posterior)
    return R * row_weights[:, None], jnp.sum(row_weights * values), R


def fit_observed(
    story: Story,
    X,
    codes,
    *,
    num_classes: int,
    class_prior=None,
    fit_prior: bool = True,
    sample_weight=None,
    unlabeled_weight: float = 1.0,
    max_iter: int = 100,
    tol: float = 1e-12,
    feature_names=None,
    class_names=None,
) -> MissingFitResult:
    """Maximize the observed-data likelihood of ``X`` (NaN = missing) by EM over missing entries
    and unlabeled rows (codes -1) of a story that ``marginalized`` accepts; ``feature_names`` and
    ``class_names`` name them in errors.

    Raises:
        ValueError: a feature has no observed entry to learn a class's parameters from (named).
    """
    check_statistics_size(story, num_classes, np.shape(X)[1], X.dtype)
    X = jnp.asarray(X)
    dtype = X.dtype
    filled, observed = fill_missing(X)
    codes = np.asarray(codes)
    labeled = codes >= 0
    row_weights = _row_weights(codes, unlabeled_weight, sample_weight, xp=np)
    one_hot, labeled_R, rest = _labeled_responsibilities(codes, row_weights, num_classes, float)
    _check_observed(np.asarray(observed), labeled_R, labeled, feature_names, class_names)
    scale = jnp.asarray(float(class_prior is None and fit_prior), dtype)  # 1: estimate the prior
    even = np.full(num_classes, 1.0 / num_classes)
    class_prior = jnp.asarray(even if class_prior is None else class_prior, dtype)
    labels_R = jnp.asarray(one_hot, dtype)
    labeled_j = jnp.asarray(labeled)
    row_weights_j = jnp.asarray(row_weights, dtype)
    # start from the labeled rows (every class has one) or from uniform responsibilities
    uniform = 0.0 if np.unique(codes[labeled]).size == num_classes else 1.0 / num_classes
    R = jnp.asarray(labeled_R + rest[:, None] * uniform, dtype)
    needs_em = capability(story, "missing_needs_em")
    iterate = needs_em or not labeled.all()

    def maximize(expectation):  # the missing cells' expected statistics at the E-step's params
        R, params = expectation
        return _m_step(story, filled, observed, R, params, class_prior, scale)

    def e_pass(params):  # an exact M-step: its drops are rounding, no step is judged
        R, value, posterior = _e_step(story, X, labels_R, labeled_j, row_weights_j, params)
        return float(value), (R, params, posterior)

    start = maximize((R, None))
    if iterate and needs_em:  # a D x D matrix per row and class: measure first
        check_traced_size(
            _m_step, story, filled, observed, R, start[0], class_prior, scale,
            what="an EM step over the missing entries",
            advice="Fit fewer rows or features, or a diagonal story (GaussianNB), whose "
            "missing entries need no per-row matrices.",
        )  # fmt: skip
    loop = run_statistics_em(
        maximize, e_pass, start, statistics=lambda extra: extra[:2],
        max_iter=max_iter if iterate else 1, tol=tol, eps=float(jnp.finfo(dtype).eps),
        scale=float(row_weights.sum()),
    )  # fmt: skip
    (params, stats), posterior = loop.params, loop.expectation[1][2]
    return MissingFitResult(
        params=params,
        stats=stats,
        responsibilities=posterior,
        log_likelihood=np.asarray(loop.trace),
        n_iter=loop.n_iter,
        converged=loop.converged or not iterate,
    )


def _check_observed(observed, labeled_R, labeled, feature_names, class_names) -> None:
    """Refuse, by name, a feature no row of a class (nor any unlabeled row) observes."""
    seen_unlabeled = observed[~labeled].any(axis=0)
    per_class = labeled_R.T @ observed  # (K, D) weight of observed entries
    has_rows = labeled_R.sum(axis=0) > 0
    bad = np.argwhere(has_rows[:, None] & (per_class == 0) & ~seen_unlabeled[None, :])
    if bad.size:
        k, j = bad[0]
        feature = plain(feature_names[j] if feature_names is not None else j)
        label = plain(class_names[k] if class_names is not None else k)
        raise ValueError(
            f"feature {feature} is missing (NaN) in every row of class {label}: its "
            f"parameters in that class cannot be estimated. Drop the feature, or give that "
            f"class rows where it is observed ({len(bad)} such class/feature pairs)."
        )
    all_missing = np.flatnonzero(~observed.any(axis=0))
    if all_missing.size:
        j = all_missing[0]
        feature = plain(feature_names[j] if feature_names is not None else j)
        raise ValueError(f"feature {feature} is missing (NaN) in every row.")
