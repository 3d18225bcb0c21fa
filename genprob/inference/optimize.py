"""Maximum likelihood of any story by numerical optimization (L-BFGS in unconstrained space)."""

from __future__ import annotations

import math
from functools import partial
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from sklearn.exceptions import ConvergenceWarning

from genprob import core
from genprob._lazy import LazyModule
from genprob.engine import execution
from genprob.engine._dtype import numpy_dtype, precision, resolve_dtype
from genprob.engine._labels import class_codes
from genprob.engine._validation import check_features, check_sample_weight, check_unlabeled_weight
from genprob.engine._warnings import warn_user
from genprob.engine.capabilities import has_closed_form
from genprob.engine.masking import reads_nan_as_missing
from genprob.story import CLASS_PRIOR, Story

handlers = LazyModule("numpyro.handlers")
constraints = LazyModule("numpyro.distributions.constraints")
infer_util = LazyModule("numpyro.infer.util")
transforms = LazyModule("numpyro.distributions.transforms")

__all__ = ["OptimizerResult", "ObjectiveValue", "fit_optimizer", "evaluate_objective"]

#: Default convergence tolerance on the (whitened) gradient of ``objective / n``, by dtype.
DEFAULT_TOL = {"float64": 1e-10, "float32": 1e-4}


class OptimizerResult(NamedTuple):
    """Outcome of :func:`fit_optimizer`.

    Attributes:
        params: named parameters (NumPy arrays): ``class_prior``, the prior's sample and
            deterministic sites, and the dict the story's ``prior`` returns.
        log_likelihood: weighted log-likelihood at ``params`` (penalty excluded).
        log_penalty: ``story.log_penalty`` at ``params`` (0 unless ``penalized``).
        objective: ``log_likelihood + log_penalty``, the maximized value.
        num_iterations: L-BFGS iterations over all stages.
        grad_norm: norm of the gradient of ``objective / n`` (``n`` the total row weight) in the
            unconstrained parameters at the solution.
        trace: ``objective / n`` at the start and after every iteration, stages concatenated.
        converged: the last stage met ``tol``.
        num_stages: number of L-BFGS runs (restarts with a fresh whitening).
        start_objectives: final objective of every start, in seed order (NaN: not finite).
        collapsed: ``(site, index, weight)`` of every simplex entry (class prior, mixture
            weights) below ``min_weight`` at the solution.
    """

    params: dict
    log_likelihood: float
    log_penalty: float
    objective: float
    num_iterations: int
    grad_norm: float
    trace: np.ndarray
    converged: bool
    num_stages: int
    start_objectives: np.ndarray = np.zeros(0)
    collapsed: tuple = ()


class ObjectiveValue(NamedTuple):
    """:func:`evaluate_objective`'s answer: ``log_likelihood``, ``log_penalty``, their sum
    ``objective``, and the unconstrained ``gradient`` of ``objective / n`` (flat, in the model's
    site order) with its norm ``grad_norm`` (0 at an interior maximum)."""

    log_likelihood: float
    log_penalty: float
    objective: float
    grad_norm: float
    gradient: np.ndarray


# -- the problem: a static spec (hashable, shared compiled code) and a data pytree -----------------
class _Spec(NamedTuple):
    structure: object  # the story's pytree structure: its static fields (numbers are traced)
    num_classes: int
    penalized: bool
    sites: tuple  # the latent sites optimized (all but the fixed ones), in model order


class _Data(NamedTuple):
    story: Story
    X: jax.Array
    y: jax.Array
    row_weights: jax.Array
    penalty_stats: object
    fixed_values: dict


class _Site(NamedTuple):
    name: str
    shape: tuple  # constrained value
    unconstrained_shape: tuple
    simplex: bool = False  # weights (last axis sums to 1): a class prior, a mixture's weights


def _is_simplex(support) -> bool:
    while isinstance(support, constraints.independent):  # batch axes moved into the event
        support = support.base_constraint
    return support is constraints.simplex


def model_sites(args, num_classes: int) -> tuple[_Site, ...]:
    """The latent sites of ``core.model(*args)`` in model order, with their constrained and
    unconstrained shapes, from an abstract trace (nothing is sampled or compiled)."""
    supports = {}

    def probe(args):
        with handlers.seed(rng_seed=0):
            model_trace = handlers.trace(core.model).get_trace(*args, num_classes=num_classes)
        values = {}
        for name, site in model_trace.items():
            if site["type"] != "sample" or site["is_observed"]:
                continue
            supports[name] = support = site["fn"].support
            if support.is_discrete:
                raise ValueError(
                    f"latent site {name!r} of {type(args[0]).__name__}.prior is discrete; "
                    "the optimizer and NUTS need continuous parameters."
                )
            values[name] = (site["value"], transforms.biject_to(support).inv(site["value"]))
        return values

    shapes = jax.eval_shape(probe, args)  # its dicts come back sorted: model order from supports
    return tuple(
        _Site(name, tuple(shapes[name][0].shape), tuple(shapes[name][1].shape), _is_simplex(s))
        for name, s in supports.items()
    )


def _size(sites) -> int:
    return sum(math.prod(site.unconstrained_shape) for site in sites)


def _unflatten(spec: _Spec, data: _Data, u) -> dict:
    """The free sites' unconstrained values from the flat vector ``u``."""
    pieces, start = {}, 0
    for site in spec.sites:
        size = math.prod(site.unconstrained_shape)
        pieces[site.name] = u[start : start + size].reshape(site.unconstrained_shape)
        start += size
    return pieces


def _params_from_latents(spec: _Spec, story, latents: dict, num_features: int) -> dict:
    """Named parameters: latent and deterministic sites, then the dict ``prior`` returns."""
    story_latents = {k: v for k, v in latents.items() if k != CLASS_PRIOR}
    with handlers.trace() as prior_trace, handlers.substitute(data=story_latents):
        returned = story.prior(spec.num_classes, num_features)
    params = {
        name: site["value"]
        for name, site in prior_trace.items()
        if site["type"] in ("sample", "deterministic")
    }
    params.update(returned)
    params[CLASS_PRIOR] = latents[CLASS_PRIOR]
    return params


def _loss_and_terms(spec: _Spec, data: _Data, u):
    """Minus the objective per unit of row weight; aux: (loglik, penalty, named parameters)."""
    # NumPyro's reparametrization without the Jacobian: a likelihood, not a density over u
    model = handlers.substitute(core.model, data=data.fixed_values)  # the fixed sites held
    args, kwargs = (data.story, data.X, data.y), {"num_classes": spec.num_classes}
    latents = {
        **data.fixed_values,
        **infer_util.constrain_fn(model, args, kwargs, _unflatten(spec, data, u)),
    }
    pointwise = infer_util.log_likelihood(model, latents, *args, batch_ndims=0, **kwargs)
    loglik = sum(jnp.sum(values * data.row_weights) for values in pointwise.values())
    params = _params_from_latents(spec, data.story, latents, data.X.shape[-1])
    if spec.penalized:
        penalty = jnp.asarray(data.story.log_penalty(params, data.penalty_stats), loglik.dtype)
    else:
        penalty = jnp.zeros((), loglik.dtype)
    loss = -(loglik + penalty) / data.row_weights.sum()
    return loss, (loglik, penalty, params)


@partial(jax.jit, static_argnums=0)
def _evaluate(spec: _Spec, data: _Data, u):
    """``((loss, (loglik, penalty, params)), grad)``: the one compiled evaluation of a problem."""
    return jax.value_and_grad(partial(_loss_and_terms, spec, data), has_aux=True)(u)


@partial(jax.jit, static_argnums=2)
def unconstrain(args, values: dict, num_classes: int) -> dict:
    """``values`` in NumPyro's unconstrained coordinates of ``core.model(*args)`` (NUTS too)."""
    return infer_util.unconstrain_fn(core.model, args, {"num_classes": num_classes}, values)


@partial(jax.jit, static_argnums=0)
def _unconstrain_values(spec: _Spec, data: _Data, params: dict):
    values = {**data.fixed_values, **params}  # the fixed sites held, as in the loss
    unconstrained = unconstrain((data.story, data.X, data.y), values, spec.num_classes)
    pieces = [jnp.ravel(unconstrained[site.name]) for site in spec.sites]
    return jnp.concatenate(pieces) if pieces else jnp.zeros(0, data.X.dtype)


def _unconstrain(spec: _Spec, data: _Data, params: dict) -> jax.Array:
    """Unconstrained vector of named parameters (NumPyro's inverse bijections)."""
    values = {}
    for site in spec.sites:
        if site.name not in params:
            raise ValueError(
                f"parameters have no entry {site.name!r}, a latent site of the model's prior; "
                f"got {sorted(params)}."
            )
        value = jnp.asarray(params[site.name], dtype=data.X.dtype)
        if value.shape != site.shape:
            raise ValueError(
                f"parameter {site.name!r} has shape {value.shape}; the prior samples {site.shape}."
            )
        values[site.name] = value
    return _unconstrain_values(spec, data, values)


@partial(jax.jit, static_argnums=0)
def _prior_draw(spec: _Spec, data: _Data, key):
    seeded = handlers.seed(core.model, rng_seed=key)
    model_trace = handlers.trace(seeded).get_trace(
        data.story, data.X, data.y, num_classes=spec.num_classes
    )
    return {site.name: model_trace[site.name]["value"] for site in spec.sites}


#: Central differences above this 2 P^2 n (about 5 s of gradients) give way to an exact Hessian:
#: a count, not a timing, so that a call's answer never depends on the machine's load.
HESSIAN_EXACT_WORK = 5e8


def _hessian(spec: _Spec, data: _Data, u) -> np.ndarray:
    """Hessian of the loss in unconstrained coordinates (docs/reference/optimize.md)."""
    size = u.shape[0]
    if 2 * size * size * data.X.shape[0] > HESSIAN_EXACT_WORK:
        return np.asarray(_exact_hessian(spec, data, u))
    u = np.asarray(u)
    steps = 1e-5 * np.maximum(1.0, np.abs(u))
    columns = []
    for j in range(size):
        shifted = u.copy()
        shifted[j] = u[j] + steps[j]
        forward = _evaluate(spec, data, jnp.asarray(shifted))[1]
        shifted[j] = u[j] - steps[j]
        backward = _evaluate(spec, data, jnp.asarray(shifted))[1]
        columns.append((np.asarray(forward) - np.asarray(backward)) / (2.0 * steps[j]))
    hessian = np.stack(columns, axis=1)
    return 0.5 * (hessian + hessian.T)


@partial(jax.jit, static_argnums=0)
def _exact_hessian(spec: _Spec, data: _Data, u):
    gradient = jax.grad(lambda u: _loss_and_terms(spec, data, u)[0])

    def column(direction):
        return jax.jvp(gradient, (u,), (direction,))[1]

    # one direction at a time: batched directions stalled XLA:CPU compilation (jax 0.10)
    hessian = jax.lax.map(column, jnp.eye(u.shape[0], dtype=u.dtype))
    return 0.5 * (hessian + hessian.T)


def _whitening(hessian: np.ndarray, dtype):
    """``V |Lambda|^{-1/2}`` from ``H = V Lambda V^T``: coordinates where the Hessian is ~I."""
    if not np.all(np.isfinite(hessian)):
        return None
    eigenvalues, eigenvectors = np.linalg.eigh(hessian)
    magnitude = np.abs(eigenvalues)
    floor = max(magnitude.max(initial=0.0), 1e-300) * 1e-12
    return jnp.asarray(eigenvectors / np.sqrt(np.maximum(magnitude, floor)), dtype=dtype)


@partial(jax.jit, static_argnames=("spec", "trace_size", "memory_size"))
def _lbfgs_stage(
    spec, data, anchor, whitening, value0, grad0, tol, max_iter, *, trace_size, memory_size
):
    """One L-BFGS run in ``u = anchor + whitening v`` from ``v = 0`` (``max_iter`` traced)."""
    import optax  # imported on first use: closed-form fits never need it

    def to_u(v):
        return anchor + (whitening * v if whitening.ndim == 1 else whitening @ v)

    def loss(v):
        return _loss_and_terms(spec, data, to_u(v))[0]

    solver = optax.lbfgs(
        memory_size=memory_size,
        linesearch=optax.scale_by_zoom_linesearch(max_linesearch_steps=30),
    )
    v0 = jnp.zeros(whitening.shape[-1], anchor.dtype)
    grad_v0 = whitening * grad0 if whitening.ndim == 1 else whitening.T @ grad0
    state0 = optax.tree.set(solver.init(v0), value=value0, grad=grad_v0)
    trace0 = jnp.full(trace_size, jnp.nan, anchor.dtype).at[0].set(value0)

    def keep_going(carry):
        _, _, count, grad_norm, moved, _ = carry
        return (count < max_iter) & (grad_norm > tol) & moved

    def step(carry):
        v, state, count, _, _, trace = carry
        value, grad = optax.tree.get(state, "value"), optax.tree.get(state, "grad")
        updates, state = solver.update(grad, state, v, value=value, grad=grad, value_fn=loss)
        new_v = optax.apply_updates(v, updates)
        new_value = optax.tree.get(state, "value")
        # a line search that can no longer move (rounding level) ends the stage
        moved = jnp.any(new_v != v) & jnp.isfinite(new_value)
        grad_norm = jnp.linalg.norm(optax.tree.get(state, "grad"))
        return new_v, state, count + 1, grad_norm, moved, trace.at[count + 1].set(new_value)

    carry = (v0, state0, 0, jnp.linalg.norm(grad_v0), jnp.isfinite(value0), trace0)
    v, _, count, grad_norm, _, trace = jax.lax.while_loop(keep_going, step, carry)
    return to_u(v), count, grad_norm, trace


# -- input handling --------------------------------------------------------------------------------
def _problem(arguments: dict):
    """``(spec, data)`` of a public function's checked ``arguments``."""
    story, X, y, penalized = (arguments[k] for k in ("story", "X", "y", "penalized"))
    if not isinstance(story, Story):
        raise TypeError(f"story must be a genprob Story, got {type(story).__name__}.")
    # a marginalized story reads NaN as missing entries (genprob.engine.masking)
    X = check_features(X, numpy_dtype(arguments["dtype"]), allow_nan=reads_nan_as_missing(story))
    y, num_classes = class_codes(y, X.shape[0], arguments["num_classes"])
    labeled = y >= 0
    weights = np.where(labeled, 1.0, check_unlabeled_weight(arguments["unlabeled_weight"]))
    sample_weight = check_sample_weight(arguments["sample_weight"], X.shape[0])
    if sample_weight is not None:
        weights = weights * sample_weight
    if not weights.sum() > 0:
        raise ValueError("the rows' total weight is zero: there is nothing to fit.")
    story.validate(X)
    # unlabeled rows of weight 0 up to a bucket size: a new row count reuses the compiled fit
    X, y, weights = execution.padded(X, y.astype(np.int32), weights)
    labeled = y >= 0
    Xj = jax.device_put(X)
    row_weights = jax.device_put(np.asarray(weights, dtype=Xj.dtype))
    codes = jax.device_put(y)
    penalty_stats = arguments["penalty_stats"]
    if penalized and penalty_stats is None and has_closed_form(story):
        R = core.one_hot_responsibilities(np.where(labeled, y, 0), num_classes, dtype=Xj.dtype)
        R = R * jnp.where(codes >= 0, row_weights, 0.0)[:, None]
        penalty_stats = core.sufficient_statistics(story, Xj, R)["emission"]
    fixed = {k: jnp.asarray(v, Xj.dtype) for k, v in (arguments["fixed"] or {}).items()}
    sites = model_sites((story, Xj, codes), num_classes)
    unknown = sorted(set(fixed) - {site.name for site in sites})
    if unknown:
        raise ValueError(
            f"fixed parameters {unknown} are not latent sites of the model; latent sites: "
            f"{[site.name for site in sites]}."
        )
    free = tuple(site for site in sites if site.name not in fixed)
    spec = _Spec(jax.tree_util.tree_structure(story), num_classes, bool(penalized), free)
    data = _Data(story, Xj, codes, row_weights, penalty_stats if penalized else None, fixed)
    return spec, data


def _initial_point(spec, data, init, seed, init_scale):
    if isinstance(init, dict):
        return _unconstrain(spec, data, init)
    if init == "poor":
        # seeded standard-normal unconstrained values: deliberately far from the answer
        key = jax.random.PRNGKey(int(seed))
        draw = np.asarray(jax.random.normal(key, (_size(spec.sites),), data.X.dtype))
        return jnp.asarray(init_scale * draw, data.X.dtype)
    if init == "prior":
        return _unconstrain(spec, data, _prior_draw(spec, data, jax.random.PRNGKey(int(seed))))
    raise ValueError(f"init must be 'poor', 'prior' or a dict of parameters, got {init!r}.")


class _NotFinite(ValueError):
    """The objective is not finite at a start."""


def _run(spec, data, u, *, max_iter, tol, whiten, first_stage_iter, stage_iter, memory_size):
    """L-BFGS from ``u`` in stages (docs/reference/optimize.md): one start of fit_optimizer."""
    size = u.shape[0]
    # a full matrix from the start when whitening (one compilation), built on the host
    whitening = jnp.asarray(np.eye(size) if whiten else np.ones(size), dtype=u.dtype)
    (value, (loglik, penalty, params)), grad = _evaluate(spec, data, u)
    if not np.isfinite(float(value)):
        raise _NotFinite(
            "the objective is not finite at the initial point; try another seed or init."
        )
    traces, total, stage, converged = [], 0, 0, False
    while total < max_iter and size > 0:
        budget = max_iter - total
        if whiten:
            budget = min(budget, first_stage_iter if stage == 0 else stage_iter)
        u, count, grad_norm, trace = _lbfgs_stage(
            spec,
            data,
            u,
            whitening,
            value,
            grad,
            np.asarray(tol, dtype=u.dtype),
            budget,
            trace_size=max_iter + 1,
            memory_size=memory_size,
        )
        count = int(count)
        # sliced on the host: a device slice would compile once per iteration count
        traces.append(np.asarray(trace)[int(stage > 0) : count + 1])
        total += count
        stage += 1
        (value, (loglik, penalty, params)), grad = _evaluate(spec, data, u)
        converged = float(grad_norm) <= tol and (stage > 1 or not whiten)
        if converged or not whiten:
            break
        hessian = _hessian(spec, data, u)
        whitening = _whitening(hessian, u.dtype)
        if whitening is None:  # a non-finite Hessian: no reliable whitening, stop here
            break
    return OptimizerResult(
        params={k: np.asarray(v) for k, v in params.items()},
        log_likelihood=float(loglik),
        log_penalty=float(penalty),
        objective=float(loglik) + float(penalty),
        num_iterations=total,
        grad_norm=float(np.linalg.norm(np.asarray(grad))),
        # the stages minimize -objective / n; report the objective per unit weight
        trace=-(np.concatenate(traces) if traces else np.asarray([float(value)])),
        converged=converged or size == 0,
        num_stages=stage,
    )


def _collapsed(sites, params: dict, min_weight: float) -> tuple:
    """``(site, index, weight)`` of every free simplex entry below ``min_weight``."""
    found = []
    for site in sites:
        if not site.simplex:
            continue
        weights = np.asarray(params[site.name])
        for index in zip(*np.nonzero(weights < min_weight), strict=True):
            index = tuple(int(i) for i in index)
            found.append((site.name, index, float(weights[index])))
    return tuple(found)


def _warn_if_dishonest(result: OptimizerResult, *, max_iter, tol, min_weight, n_init):
    if not result.converged:
        warn_user(
            f"L-BFGS did not converge in max_iter={max_iter} iterations (gradient norm "
            f"{result.grad_norm:.2e}, tol {tol:.1e}); the parameters may be far from the "
            "maximum. Increase max_iter, try n_init > 1 or another init, or standardize the "
            "features. (A likelihood that is not differentiable everywhere, e.g. a Laplace "
            "location, may never meet tol.)",
            ConvergenceWarning,
        )
    if result.collapsed:
        shown = ", ".join(
            f"{name}[{', '.join(map(str, index))}] = {weight:.1e}"
            for name, index, weight in result.collapsed[:6]
        )
        more = f" and {len(result.collapsed) - 6} more" if len(result.collapsed) > 6 else ""
        warn_user(
            f"{len(result.collapsed)} weight(s) collapsed below min_weight={min_weight:g}: "
            f"{shown}{more}. A class or mixture component with such a weight explains no rows; "
            f"the fit is probably a poor local maximum (best of n_init={n_init}). Try a larger "
            "n_init, another init, or fewer components.",
            ConvergenceWarning,
        )


# -- public API ------------------------------------------------------------------------------------
def fit_optimizer(
    story: Story,
    X,
    y,
    *,
    num_classes: int | None = None,
    init="poor",
    seed: int = 0,
    max_iter: int = 10000,
    tol: float | None = None,
    unlabeled_weight: float = 1.0,
    sample_weight=None,
    penalized: bool = False,
    penalty_stats=None,
    fixed: dict | None = None,
    precondition: str = "auto",
    max_whitened_size: int = 1000,
    first_stage_iter: int = 300,
    stage_iter: int = 100,
    memory_size: int = 20,
    init_scale: float = 1.0,
    dtype="float64",
    n_init: int = 1,
    min_weight: float = 1e-6,
    warn: bool = True,
) -> OptimizerResult:
    """Maximize the log-likelihood of a story's NumPyro model with L-BFGS
    (docs/reference/optimize.md).

    Args:
        story: any :class:`~genprob.story.Story` with ``prior`` and ``emission`` (plus
            ``log_penalty`` when ``penalized``).
        X: features (n, D); a SciPy sparse matrix is densified.
        y: class codes (n,) in 0..K-1; -1 marks an unlabeled row.
        num_classes: K; defaults to ``max(y) + 1``.
        init: ``"poor"``, ``"prior"`` (a draw from the prior) or a dict of named parameters
            (the first start; the other starts are ``"poor"``).
        seed: seed of the initial point (start ``i`` uses ``seed + i``).
        max_iter: L-BFGS iteration budget over all stages, per start.
        tol: threshold on the stage's gradient norm of ``objective / n`` (:data:`DEFAULT_TOL`).
        unlabeled_weight: lambda in [0, 1], the weight of unlabeled rows (EM-lambda).
        sample_weight: optional non-negative row weights (n,).
        penalized: add ``story.log_penalty(params, penalty_stats)`` (the MAP objective).
        penalty_stats: default: the labeled rows' weighted statistics (closed-form stories).
        fixed: named latent sites held at given values, e.g. ``{"class_prior": pi}``.
        precondition: ``"auto"`` (whiten at most ``max_whitened_size`` parameters),
            ``"hessian"`` (always) or ``"none"`` (plain L-BFGS, one stage).
        max_whitened_size, first_stage_iter, stage_iter, memory_size: the ``"auto"`` threshold,
            the budgets of the first and later stages, the L-BFGS memory.
        init_scale: spread of the ``"poor"`` initial point.
        dtype: ``"float64"`` (default) or ``"float32"``; the work runs in that precision.
        n_init: number of starts; the one with the highest objective is kept.
        min_weight: simplex entries below it at the solution are ``result.collapsed``.
        warn: emit a ``ConvergenceWarning`` when the kept start did not converge or collapsed.

    Returns:
        An :class:`OptimizerResult`.

    Raises:
        ValueError: bad data (shape, NaN, labels, weights), data outside the story's support, or
            an objective that is not finite at every start.
    """
    arguments = dict(locals())
    dtype = arguments["dtype"] = resolve_dtype(dtype)
    tol = DEFAULT_TOL[dtype] if tol is None else float(tol)
    max_iter = int(max_iter)
    if max_iter < 1:
        raise ValueError(f"max_iter must be >= 1, got {max_iter!r}.")
    if int(n_init) < 1:
        raise ValueError(f"n_init must be an integer >= 1, got {n_init!r}.")
    if not 0.0 <= float(min_weight) < 1.0:
        raise ValueError(f"min_weight must lie in [0, 1), got {min_weight!r}.")
    if precondition not in ("auto", "hessian", "none"):
        raise ValueError(f"precondition must be 'auto', 'hessian' or 'none', got {precondition!r}.")
    with precision(dtype):
        spec, data = _problem(arguments)
        size = _size(spec.sites)
        whiten = size > 0 and (
            precondition == "hessian" or (precondition == "auto" and size <= int(max_whitened_size))
        )
        best, objectives, failure = None, [], None
        for start in range(int(n_init)):
            start_init = init if start == 0 or not isinstance(init, dict) else "poor"
            u = _initial_point(spec, data, start_init, seed + start, init_scale)
            try:
                result = _run(
                    spec,
                    data,
                    u,
                    max_iter=max_iter,
                    tol=tol,
                    whiten=whiten,
                    first_stage_iter=int(first_stage_iter),
                    stage_iter=int(stage_iter),
                    memory_size=int(memory_size),
                )
            except _NotFinite as error:
                objectives.append(math.nan)
                failure = error
                continue
            objectives.append(result.objective)
            if best is None or result.objective > best.objective:
                best = result
        if best is None:
            raise ValueError(str(failure)) from None
        best = best._replace(
            start_objectives=np.asarray(objectives),
            collapsed=_collapsed(spec.sites, best.params, float(min_weight)),
        )
    if warn:
        _warn_if_dishonest(best, max_iter=max_iter, tol=tol, min_weight=min_weight, n_init=n_init)
    return best


def evaluate_objective(
    story: Story,
    params: dict,
    X,
    y,
    *,
    num_classes: int | None = None,
    unlabeled_weight: float = 1.0,
    sample_weight=None,
    penalized: bool = False,
    penalty_stats=None,
    fixed: dict | None = None,
    dtype="float64",
) -> ObjectiveValue:
    """The :func:`fit_optimizer` objective and its unconstrained gradient at ``params`` (every
    latent site of the model, as a closed-form fit names them)."""
    arguments = dict(locals())
    dtype = arguments["dtype"] = resolve_dtype(dtype)
    with precision(dtype):
        spec, data = _problem(arguments)
        u = _unconstrain(spec, data, params)
        (_, (loglik, penalty, _)), grad = _evaluate(spec, data, u)
        return ObjectiveValue(
            log_likelihood=float(loglik),
            log_penalty=float(penalty),
            objective=float(loglik) + float(penalty),
            grad_norm=float(np.linalg.norm(np.asarray(grad))),
            gradient=np.asarray(grad),
        )
