"""The one EM driver: E-step, M-step, one stopping rule, one warning for ``max_iter``.

Every EM of the package runs here with its own E-step and M-step callables: partly labeled
closed forms on the host (:func:`genprob.fit_em`), missing cells (:func:`genprob.missing.
fit_observed`), streaming and Dask passes (:func:`genprob.streaming.run_em`) and the Gaussian
mixtures within classes (:mod:`genprob.families.gaussian.mixture`). The compiled loop of
:func:`genprob.fit_em` is the same rule traced (a ``while_loop`` cannot call host callables); it
calls :func:`em_converged` and :func:`em_decreased` from here. NumPy only: no JAX import.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from typing import Any, NamedTuple

__all__ = [
    "EMLoop",
    "em_converged",
    "em_decreased",
    "run_em_loop",
    "warn_decrease",
    "warn_max_iter",
]


def em_converged(new_value, old_value, scale, tol, eps):
    """EM's stopping rule (arrays or floats): the change of the objective per unit of ``scale``
    is at most ``tol``, or, with ``tol > 0``, at the rounding level of the objective (a float32
    fit cannot resolve a tiny ``tol``). ``scale`` is the total row weight (unit-free: rescaling
    X shifts the objective by a constant), or ``max(1, |objective|)`` for mclust's relative rule.
    """
    change = abs(new_value - old_value) / scale
    rounding = 4 * eps * abs(new_value) / scale
    return (change <= tol) | ((tol > 0) & (change <= rounding))


def em_decreased(new_value, old_value, scale, tol, eps):
    """The objective went down by more than :func:`em_converged` forgives: not an ascent step
    (an M-step that is not the exact maximizer, e.g. a rank-truncated covariance). EM stops there
    and keeps the previous parameters (arrays or floats)."""
    return (new_value < old_value) & ~em_converged(new_value, old_value, scale, tol, eps)


def warn_decrease(iteration: int, drop: float, value: float, stacklevel: int = 3) -> None:
    """The warning of an EM stopped by :func:`em_decreased` at M-step ``iteration``."""
    from sklearn.exceptions import ConvergenceWarning

    warnings.warn(
        f"EM stopped at iteration {iteration}: its objective would go down by {drop:.3g} (from "
        f"{value:.6g}), which an exact EM step never does (an M-step that only approximates "
        f"the maximum: a rank-deficient covariance, or classes without the data to tell them "
        f"apart). The parameters of iteration {iteration - 1} are kept and the fit is not "
        f"converged. Regularize the story (reg_param, shrinkage, var_smoothing), label more "
        f"rows, or ask for fewer classes.",
        ConvergenceWarning,
        stacklevel=stacklevel,
    )


def warn_max_iter(
    max_iter: int, tol: float, stacklevel: int = 3, what: str = "EM", change="mean per-row"
) -> None:
    """The one warning of an EM that reached ``max_iter`` without meeting :func:`em_converged`."""
    from sklearn.exceptions import ConvergenceWarning

    warnings.warn(
        f"{what} did not converge in max_iter={max_iter} iterations (change of the {change} "
        f"objective above em_tol={tol}); raise max_iter.",
        ConvergenceWarning,
        stacklevel=stacklevel,
    )


class EMLoop(NamedTuple):
    """Outcome of :func:`run_em_loop`.

    Attributes:
        params: the last kept parameters (never a step that decreased the objective, nor a
            non-finite one after the first).
        expectation: the E-step's output at ``params``.
        value: the objective at ``params``.
        trace: the objective after every M-step counted in ``n_iter`` (a non-finite one
            included: it stopped EM).
        n_iter: M-steps, the first included.
        converged: :func:`em_converged` was met.
        finite: every recorded objective is finite.
        drop: how much the refused step would have lowered the objective (0 if none).
    """

    params: Any
    expectation: Any
    value: float
    trace: list
    n_iter: int
    converged: bool
    finite: bool
    drop: float


def run_em_loop(
    m_step: Callable[[Any], Any],
    e_step: Callable[[Any], tuple[float, Any]],
    expectation,
    *,
    max_iter: int,
    tol: float,
    eps: float | Callable[[], float],
    scale: float | Callable[[float], float],
    params=None,
    ascent_base: Callable[[Any, float], float] | None = None,
    refine: Callable[[], bool] | None = None,
    warn: bool = True,
    check_ascent: bool = True,
) -> EMLoop:
    """EM from ``expectation`` (or from ``params``, skipping the first M-step).

    Args:
        m_step: ``expectation -> params``.
        e_step: ``params -> (objective at params, expectation at params)``.
        expectation: the first M-step's input (ignored when ``params`` is given).
        max_iter: most M-steps (the first included; with ``params``, most E-steps).
        tol, eps: :func:`em_converged`'s tolerance and the objective's machine epsilon (or a
            function giving it once the first E-step ran).
        scale: :func:`em_converged`'s scale, or a function of the new objective giving it.
        params: start parameters (the first step is then their E-step).
        ascent_base: ``(previous params, previous objective) -> value`` the next step must not
            fall below (a penalty that moves with the statistics); default the previous
            objective. The ascent is checked from the first E-step's step on: the start's
            parameters may be a density on a subspace, whose values do not compare.
        refine: called when the rule is met; True continues with finer M-steps (generalized EM
            whose capped M-steps are lifted).
        warn: warn (:func:`warn_decrease`) when a step would lower the objective.
        check_ascent: refuse such a step (False: exact M-steps whose drops are rounding, which
            ``tol=0`` would otherwise refuse before the exact fixed point).
    """
    if params is None:
        params = m_step(expectation)
    value, expectation = e_step(params)
    trace, n_iter, converged, drop = [value], 1, False, 0.0
    finite = math.isfinite(value)
    eps = eps() if callable(eps) else eps
    while finite and n_iter < max_iter:
        new_params = m_step(expectation)
        before = value if ascent_base is None else ascent_base(params, value)
        new_value, new_expectation = e_step(new_params)
        size = scale(new_value) if callable(scale) else scale
        if not math.isfinite(new_value):
            trace.append(new_value)
            n_iter, finite = n_iter + 1, False
            break
        if check_ascent and n_iter > 1 and em_decreased(new_value, before, size, tol, eps):
            drop = before - new_value
            if warn:
                warn_decrease(n_iter + 1, drop, before, stacklevel=4)
            break
        params, value, expectation = new_params, new_value, new_expectation
        trace.append(value)
        n_iter += 1
        if em_converged(value, trace[-2], size, tol, eps):
            if refine is not None and refine():
                continue
            converged = True
            break
    return EMLoop(params, expectation, value, trace, n_iter, converged, finite, drop)
