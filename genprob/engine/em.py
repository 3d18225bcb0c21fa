"""Semi-supervised fits: expectation-maximization on partly labeled data.

The λ-weighted objective, the E- and M-steps, why no iteration decreases it, and what happens
when a fit degenerates: docs/reference/em.md.
"""

from __future__ import annotations

import math
from functools import partial
from typing import NamedTuple

import numpy as np
from scipy.special import softmax

from genprob import core
from genprob._lazy import LazyModule, jitted
from genprob.engine import execution
from genprob.engine._arrays import tree_leaves, tree_map
from genprob.engine._labels import encode_partial_labels, unlabeled_mask
from genprob.engine._limits import check_statistics_size
from genprob.engine._validation import (
    check_class_prior,
    check_features,
    check_positive_int,
    check_sample_weight,
    check_unlabeled_weight,
    describe,
)
from genprob.engine.capabilities import capability, has_closed_form
from genprob.engine.em_driver import em_step, run_em_loop, warn_decrease
from genprob.engine.execution import padded
from genprob.story import CLASS_PRIOR, Story

jax = LazyModule("jax")
jnp = LazyModule("jax.numpy")
numpyro = LazyModule("numpyro")
infer_util = LazyModule("numpyro.infer.util")

__all__ = [
    "EMResult",
    "fit_em",
    "weighted_log_likelihood",
    "unlabeled_mask",
    "encode_partial_labels",
    "params_from_latent",
]

#: L-BFGS steps of a gradient M-step (warm-started from the previous iteration's parameters).
GRADIENT_STEPS = 20


class EMResult(NamedTuple):
    """Result of :func:`fit_em`.

    Attributes:
        params: fitted parameters (dict of arrays, ``class_prior`` included).
        log_likelihood: trace (n_iter,) of the λ-weighted objective after every M-step of the
            kept initialization; non-decreasing from its second entry (docs/reference/em.md).
        n_iter: number of M-steps of the kept initialization.
        converged: whether the change of the mean per-row objective fell below ``tol``.
        responsibilities: final E-step (n, K): ``p(k | x_i)`` on unlabeled rows, one-hot labels
            on labeled rows (no weights applied).
        init_log_likelihoods: final objective of every initialization (n_init,); NaN for an
            initialization that degenerated.
    """

    params: dict
    log_likelihood: jax.Array
    n_iter: int
    converged: bool
    responsibilities: jax.Array
    init_log_likelihoods: jax.Array


# -- the objective --------------------------------------------------------------------------------
def _row_weights(codes, unlabeled_weight, sample_weight, xp=jnp):
    """Weights of every row in the objective: w_i (labeled) and λ w_i (unlabeled)."""
    w = 1.0 if sample_weight is None else sample_weight
    return xp.where(codes >= 0, w, unlabeled_weight * w)


def weighted_log_likelihood(
    story: Story, params: dict, X, y, *, unlabeled_weight=1.0, sample_weight=None
):
    """λ-weighted marginal log-likelihood ``F`` of docs/reference/em.md without the penalty;
    ``y``: class codes (n,), -1 for unlabeled rows; ``unlabeled_weight``: λ."""
    y = jnp.asarray(y)
    return _objective(story, params, X, y, _row_weights(y, unlabeled_weight, sample_weight))


def _objective(story, params, X, codes, row_weights, penalty=0.0):
    """``Σ_i row_weights_i log p(x_i, y_i or marginal) + penalty``: the one objective of EM."""
    values = core.log_likelihood(story, params, X, codes, pointwise=True)
    # rows of weight 0 contribute nothing, even where their log-likelihood is -inf
    return jnp.sum(jnp.where(row_weights > 0, row_weights * values, 0.0)) + penalty


def _labeled_responsibilities(codes, row_weights, num_classes, dtype):
    """One-hot labels, labeled rows' weighted responsibilities, unlabeled rows' weights."""
    labeled = codes >= 0
    one_hot = (np.where(labeled, codes, 0)[:, None] == np.arange(num_classes)).astype(dtype)
    labeled_R = np.where(labeled[:, None], one_hot * row_weights[:, None], 0.0)
    return one_hot, labeled_R, np.where(labeled, 0.0, row_weights)


# -- the gradient M-step -------------------------------------------------------------------------
def params_from_latent(story: Story, latent: dict, num_classes: int, num_features: int) -> dict:
    """Emission parameters from values of the prior's latent sites (the prior run substituted)."""
    with numpyro.handlers.seed(rng_seed=0), numpyro.handlers.substitute(data=latent):
        return dict(story.prior(num_classes, num_features))


def _gradient_m_step(story, X, R, latent, class_prior):
    """Generalized M-step: L-BFGS on Σ R_ik log p(x_i, k) over unconstrained latent values."""
    import optax  # imported on first use: closed-form fits never need it

    num_classes, num_features = R.shape[1], X.shape[1]
    prior_args = (num_classes, num_features)
    total = R.sum()

    def negative_expected_log_joint(unconstrained):
        constrained = infer_util.constrain_fn(story.prior, prior_args, {}, unconstrained)
        params = params_from_latent(story, constrained, num_classes, num_features)
        params[CLASS_PRIOR] = class_prior
        joint = core.joint_log_prob(story, params, X)
        return -jnp.sum(jnp.where(R > 0, R * joint, 0.0)) / total

    start = infer_util.unconstrain_fn(story.prior, prior_args, {}, latent)
    optimizer = optax.lbfgs()
    value_and_grad = optax.value_and_grad_from_state(negative_expected_log_joint)

    def step(carry, _):
        unconstrained, state = carry
        value, grad = value_and_grad(unconstrained, state=state)
        updates, state = optimizer.update(
            grad,
            state,
            unconstrained,
            value=value,
            grad=grad,
            value_fn=negative_expected_log_joint,
        )
        return (optax.apply_updates(unconstrained, updates), state), None

    (end, _), _ = jax.lax.scan(step, (start, optimizer.init(start)), None, length=GRADIENT_STEPS)
    before = negative_expected_log_joint(start)
    after = negative_expected_log_joint(end)
    # keep the step only when it does not lower the expected log-joint: EM's monotonicity
    accept = jnp.isfinite(after) & (after <= before)
    new = infer_util.constrain_fn(story.prior, prior_args, {}, end)
    return jax.tree_util.tree_map(lambda a, b: jnp.where(accept, a, b), new, latent)


def _neutral_latent(story: Story, num_classes: int, num_features: int, dtype) -> dict:
    """Starting values of the latent sites: the image of 0 in NumPyro's unconstrained space."""
    from genprob.inference.optimize import model_sites

    rows = jax.ShapeDtypeStruct((1, num_features), dtype), jax.ShapeDtypeStruct((1,), jnp.int32)
    sites = [s for s in model_sites((story, *rows), num_classes) if s.name != CLASS_PRIOR]
    zeros = {site.name: jnp.zeros(site.unconstrained_shape, dtype) for site in sites}
    return infer_util.constrain_fn(story.prior, (num_classes, num_features), {}, zeros)


# -- the EM loop ----------------------------------------------------------------------------------
def _m_step(story, X, R, latent, class_prior, fit_prior, previous=None):
    """One M-step from ``R``: (params, latent, penalty, the ``previous`` params' penalty)."""
    if has_closed_form(story):
        stats = core.sufficient_statistics(story, X, R)
        params = core.maximize(story, stats, class_prior, fit_prior)
        before = 0.0 if previous is None else story.log_penalty(previous, stats["emission"])
        return params, latent, story.log_penalty(params, stats["emission"]), before
    num_classes, num_features = R.shape[1], X.shape[1]
    prior = core.class_prior_from_counts(R.sum(axis=0), class_prior, fit_prior)
    latent = _gradient_m_step(story, X, R, latent, prior)
    params = params_from_latent(story, latent, num_classes, num_features)
    params[CLASS_PRIOR] = prior
    return params, latent, 0.0, 0.0


@jitted(static_argnames=("capacity", "fit_prior"))
def _em_runs(
    story,
    X,
    codes,
    row_weights,
    fixed,
    R0,
    latent,
    tol,
    class_prior,
    max_iter,
    *,
    capacity,
    fit_prior,
):
    """EM from responsibilities ``R0`` (n, K) compiled: a while_loop judged by ``em_step``."""
    _, labeled_R, unlabeled_weights = fixed
    total_weight = jnp.maximum(jnp.sum(row_weights), jnp.finfo(X.dtype).tiny)

    def e_step(params):
        posterior = core.predict_proba(story, params, X)
        return labeled_R + unlabeled_weights[:, None] * posterior

    # parameters of the right structure for the loop's carry; iteration 0 ignores them
    shapes = jax.eval_shape(lambda R: _m_step(story, X, R, latent, class_prior, fit_prior)[0], R0)
    state = (
        jax.tree_util.tree_map(lambda s: jnp.ones(s.shape, s.dtype), shapes),
        latent,
        jnp.asarray(-jnp.inf, X.dtype),
        jnp.full(capacity, jnp.nan, dtype=X.dtype),
        jnp.asarray(0),
        jnp.asarray(False),
        jnp.asarray(True),
        R0.sum(axis=0),
        jnp.asarray(0.0, X.dtype),
        jnp.asarray(0.0, X.dtype),
    )

    def keep_going(state):
        _, _, _, _, iteration, converged, finite, _, drop, _ = state
        return (iteration < max_iter) & ~converged & finite & ~(drop > 0)

    def iterate(state):
        params, latent, value, trace, iteration, _, _, _, _, old_penalty = state
        # one M-step site in the program (from R0 first, then the E-step): shorter compilation
        R = jnp.where(iteration == 0, R0, e_step(params))
        new_params, new_latent, penalty, penalty_before = _m_step(
            story, X, R, latent, class_prior, fit_prior, previous=params
        )
        new_value = _objective(story, new_params, X, codes, row_weights, penalty)
        finite_params = jnp.stack([jnp.isfinite(a).all() for a in tree_leaves(new_params)])
        new_value = jnp.where(finite_params.all(), new_value, jnp.nan)
        # the floor: the last objective with the penalty at this step's statistics
        floor = value - old_penalty + penalty_before
        finite, decreased, converged = em_step(
            new_value, value, floor, iteration > 1, total_weight, tol, jnp.finfo(X.dtype).eps
        )
        drop = jnp.where(decreased, floor - new_value, 0.0).astype(X.dtype)
        trace = jnp.where(decreased, trace, trace.at[iteration].set(new_value))
        # a degenerate step is recorded (NaN/inf in the trace) but its parameters are not kept
        keep = finite & ~decreased
        params, latent, value = jax.tree_util.tree_map(
            lambda a, b: jnp.where(keep, a, b),
            (new_params, new_latent, new_value),
            (params, latent, value),
        )
        iteration = jnp.where(decreased, iteration, iteration + 1)
        old_penalty = jnp.where(keep, penalty, old_penalty).astype(X.dtype)
        return (
            *(params, latent, value, trace, iteration, converged, finite, R.sum(0), drop),
            old_penalty,
        )

    final = jax.lax.while_loop(keep_going, iterate, state)
    params, _, value, trace, n_iter, converged, finite, class_mass, drop, _ = final
    posterior = core.predict_proba(story, params, X)
    return params, trace, n_iter, converged, finite, value, posterior, class_mass, drop


def run_statistics_em(maximize, e_pass, params, *, statistics=None, penalty=None, **rule):
    """Every host EM: ``run_em_loop`` over ``(params, the statistics they maximize)`` from
    ``e_pass(params) -> (fit, extra)``, ``statistics(extra)`` and ``penalty`` (None: no judging)."""
    statistics = statistics or (lambda extra: extra)

    def e_step(state):
        params, used = state
        fit, extra = e_pass(params)
        if penalty is None:
            return fit, (statistics(extra), extra), -math.inf
        if not all(np.all(np.isfinite(a)) for a in tree_leaves(params)):
            return math.nan, (None, extra)
        value = fit + penalty(params, used)
        if not math.isfinite(value):
            return value, (None, extra)
        stats = statistics(extra)
        # the floor: the penalty at these statistics (a prior scaled by the soft counts moves)
        return value, (stats, extra), fit + penalty(params, stats)

    return run_em_loop(lambda expectation: maximize(expectation[0]), e_step, params=params, **rule)


def _em_host(story, X, codes, row_weights, fixed, R0, tol, class_prior, max_iter, fit_prior):
    """:func:`_em_runs` of one start on NumPy rows, eagerly (no JAX import for a closed form)."""
    _, labeled_R, unlabeled_weights = fixed

    def maximize(stats):
        return core.maximize(story, stats, class_prior, fit_prior), stats

    def e_pass(params):
        joint = np.asarray(execution.joint_log_prob(story, params, X, eager=True))
        with np.errstate(invalid="ignore"):
            rows = execution.rows_log_likelihood(joint, codes)
            fit = float(np.sum(np.where(row_weights > 0, row_weights * rows, 0.0)))
        return fit, softmax(joint, axis=1)

    def statistics(posterior):
        R = labeled_R + unlabeled_weights[:, None] * posterior
        return core.sufficient_statistics(story, X, R.astype(X.dtype, copy=False))

    start = core.sufficient_statistics(story, X, R0.astype(X.dtype, copy=False))
    loop = run_statistics_em(
        maximize, e_pass, maximize(start), statistics=statistics,
        penalty=lambda params, stats: float(story.log_penalty(params, stats["emission"])),
        max_iter=max_iter, tol=tol, eps=float(np.finfo(X.dtype).eps),
        scale=max(float(row_weights.sum()), float(np.finfo(X.dtype).tiny)),
    )  # fmt: skip
    # the mass of the statistics the last step maximized (a failed one: the class that vanished)
    mass = (loop.expectation[0] or loop.params[1])["class_counts"]
    trace, value, drop = (np.asarray(a, X.dtype) for a in (loop.trace, loop.value, loop.drop))
    return (loop.params[0], trace, loop.n_iter, loop.converged, loop.finite, value,
            loop.expectation[1], mass, drop)  # fmt: skip


def fit_em(
    story: Story,
    X,
    y,
    *,
    classes=None,
    num_classes=None,
    unlabeled_weight: float = 1.0,
    max_iter: int = 100,
    tol: float = 1e-12,
    n_init: int = 1,
    seed: int = 0,
    init=None,
    class_prior=None,
    fit_prior: bool = True,
    sample_weight=None,
    unlabeled_label=-1,
) -> EMResult:
    """Fit a story to partly labeled data by (λ-weighted) expectation-maximization.

    Maximizes the objective ``F`` of docs/reference/em.md, which never decreases.

    Args:
        story: the story (closed form or not).
        X: features (n, D), in the current JAX precision.
        y: class codes (n,) in ``0..K-1`` and -1 for unlabeled rows (or values of ``classes``).
        classes: every class label in code order; needed (with ``num_classes`` as the alternative)
            when no row is labeled or a class has no labeled row.
        num_classes: K.
        unlabeled_weight: λ in [0, 1], the weight of every unlabeled row.
        max_iter: maximum number of M-steps per initialization.
        tol: stop when the mean per-row objective changes by at most ``tol`` (or by rounding).
        n_init: number of initializations; the one with the largest final ``F`` is kept.
        seed: seed of the random initializations.
        init: None (the labeled-only fit first, when every class has a labeled row, then random
            responsibilities), ``"labeled"``, ``"random"`` (random responsibilities for every
            initialization), or a parameter dict to start the first initialization from.
        class_prior: fixed class prior (K,), not estimated.
        fit_prior: estimate the class prior (True) or use a uniform one (False).
        sample_weight: optional non-negative row weights (n,).
        unlabeled_label: the label of unlabeled rows (-1; a string with string ``classes``), or
            None when every label is a class (every row labeled).

    Returns:
        :class:`EMResult`: NumPy arrays from NumPy rows of an ``array_api`` closed form, else JAX.

    Raises:
        ValueError: bad labels, λ outside [0, 1], bad controls, a class with no mass to learn it
            from, or every initialization degenerating.
    """
    codes, num_classes = encode_partial_labels(
        y, num_classes=num_classes, classes=classes, unlabeled_label=unlabeled_label
    )
    X = check_features(X, keep_sparse=True)
    # closed forms written in the array namespace run EM on NumPy rows eagerly: no compiler
    host = has_closed_form(story) and capability(story, "array_api") and isinstance(X, np.ndarray)
    if not host:
        X = check_features(X, keep_sparse=True, to_device=True)
    if X.shape[0] != codes.shape[0]:
        raise ValueError(f"X has {X.shape[0]} rows but y has {codes.shape[0]}.")
    story.validate(X)
    check_statistics_size(story, num_classes, X.shape[1], X.dtype)
    unlabeled_weight = check_unlabeled_weight(unlabeled_weight)
    max_iter = check_positive_int("max_iter", max_iter)
    n_init = check_positive_int("n_init", n_init)
    if not (np.isfinite(tol) and tol >= 0):
        raise ValueError(f"tol must be a finite number >= 0, got {tol!r}.")
    weights = check_sample_weight(sample_weight, codes.shape[0], dtype=X.dtype)
    # (n, K) work before the loop is NumPy: a JAX operation would compile a program per shape
    if weights is not None:
        weights = np.asarray(weights, dtype=X.dtype)
    if class_prior is not None:
        class_prior = np.asarray(check_class_prior(class_prior, range(num_classes)), X.dtype)

    num_rows = X.shape[0]
    if not host:  # rows of weight 0 up to a bucket size: a new row count reuses the compiled EM
        real = np.ones(num_rows, X.dtype) if weights is None else weights
        padded_X, codes, weights = padded(X, codes, real)
        X = X if padded_X is X else jax.device_put(padded_X)
    labeled = codes >= 0
    row_weights = _row_weights(codes, unlabeled_weight, weights, xp=np)
    labeled_mass = np.bincount(codes[labeled], weights=row_weights[labeled], minlength=num_classes)
    unlabeled_mass = float(row_weights[~labeled].sum())
    unlearnable = np.flatnonzero(labeled_mass <= 0)
    if unlabeled_mass <= 0 and unlearnable.size:
        raise ValueError(
            f"{_named(unlearnable, classes)} have no labeled row, and no unlabeled mass "
            f"(no unlabeled rows, or unlabeled_weight=0) is left to learn them from."
        )

    latent = {}
    if not has_closed_form(story):
        latent = _neutral_latent(story, num_classes, X.shape[1], X.dtype)
        if isinstance(init, dict):
            latent |= {k: jnp.asarray(v, X.dtype) for k, v in init.items() if k in latent}
    fixed = _labeled_responsibilities(codes, row_weights, num_classes, X.dtype)

    if unlabeled_mass <= 0:
        # Nothing to impute: EM is the supervised closed form (or gradient fit), in one step.
        n_init, max_iter = 1, 1
        initial_R = fixed[1][None]
    else:
        initial_R = _initial_responsibilities(
            story, X, init, n_init, seed, fixed, labeled_mass, num_rows, classes
        )
    # one start per call: a vmapped while loop compiles longer and runs until the slowest stops
    run, put = _em_host, np.asarray
    if not host:
        # the trace's length a power of two: nearby max_iter share the compiled program
        capacity = max(128, 1 << (int(max_iter) - 1).bit_length())
        run = partial(_em_runs, latent=latent, capacity=capacity)
        put, codes = jax.device_put, jax.device_put(codes)
        tol, max_iter = np.asarray(tol, X.dtype), np.asarray(max_iter)
    settings = {"tol": tol, "class_prior": class_prior, "max_iter": max_iter}
    runs = [
        run(story, X, codes, row_weights, fixed, R0, **settings, fit_prior=bool(fit_prior))
        for R0 in initial_R
    ]
    # to the host, sliced, then device_put: a device slice compiles a program per shape
    runs = [tree_map(np.asarray, run) for run in runs]
    values = np.array([run[5] if run[4] else np.nan for run in runs], X.dtype)
    if np.isnan(values).all():
        class_mass = runs[0][7]
        lightest = int(np.argmin(class_mass))
        raise ValueError(
            f"EM degenerated in every initialization: the objective or the parameters became "
            f"non-finite (e.g. a Gaussian covariance collapsed onto a few points, or "
            f"{_named([lightest], classes, plural=False)} lost its responsibility mass: "
            f"{class_mass[lightest]:.3g}"
            f"). Regularize the story (reg_param, shrinkage or var_smoothing for Gaussians, alpha "
            f"for discrete features), label more rows, or lower unlabeled_weight."
        )
    best = int(np.nanargmax(values))
    params, trace, n_iter, converged, _, _, posterior, _, drop = runs[best]
    responsibilities = np.where(labeled[:, None], fixed[0], posterior)
    if drop > 0:
        warn_decrease(int(n_iter) + 1, float(drop), float(values[best]))
    return EMResult(
        params=tree_map(put, params),
        log_likelihood=put(trace[:n_iter]),
        n_iter=int(n_iter),
        converged=bool(converged) or unlabeled_mass <= 0,
        responsibilities=put(responsibilities[:num_rows]),
        init_log_likelihoods=put(values),
    )


def _named(codes, classes, plural=True):
    """Classes in a message: their labels when the caller gave ``classes``, else their codes."""
    if classes is None:
        return f"class code{'s' * plural} {describe(codes)}"
    return f"class{'es' * plural} {describe(np.asarray(classes)[np.asarray(codes)])}"


def _initial_responsibilities(story, X, init, n_init, seed, fixed, labeled_mass, num_rows, classes):
    """Initial weighted responsibilities (n_init, n, K); random draws for the real rows only."""
    _, labeled_R, unlabeled_weights = fixed
    num_classes = labeled_R.shape[1]
    every_class_labeled = bool(np.all(labeled_mass > 0))
    if isinstance(init, dict):
        params = {k: np.asarray(v, X.dtype) for k, v in init.items()}
        if CLASS_PRIOR not in params:
            raise ValueError("init parameters must include 'class_prior'.")
        posterior = execution.class_posteriors(story, params, X, "proba")
        first = [labeled_R + unlabeled_weights[:, None] * posterior]
    elif init in (None, "labeled", "random"):
        if init == "labeled" and not every_class_labeled:
            missing = np.flatnonzero(labeled_mass <= 0)
            raise ValueError(
                f"init='labeled' needs a labeled row in every class; "
                f"{_named(missing, classes)} have none."
            )
        first = [labeled_R] if every_class_labeled and init != "random" else []
    else:
        raise ValueError(
            f"init must be None, 'labeled', 'random' or a parameter dict; got {init!r}."
        )
    num_random = n_init - len(first)
    if num_random > 0:
        # NumPy's sampler: JAX's Dirichlet compiles for seconds per shape, for a few draws
        draws = np.zeros((num_random, X.shape[0], num_classes), X.dtype)  # padding rows: 0
        rng = np.random.default_rng(int(seed))
        draws[:, :num_rows] = rng.dirichlet(np.ones(num_classes), (num_random, num_rows))
        first.extend(labeled_R + unlabeled_weights[:, None] * draws)
    return np.stack(first[:n_init])
