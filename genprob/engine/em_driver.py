"""The one EM driver: one stopping rule (:func:`em_step`) plus a loop of E- and M-steps.

Every EM of the package runs here with its own E-step and M-step callables: partly labeled
closed forms on the host (:func:`genprob.fit_em`), missing cells (:func:`genprob.engine.missing.
fit_observed`), streaming and Dask passes (:func:`genprob.engine.streaming.run_em`) and the Gaussian
mixtures within classes (:mod:`genprob.families.gaussian.mixture`). The compiled loop of
:func:`genprob.fit_em` judges its steps with the same :func:`em_step` (a ``while_loop`` cannot
call host callables). No NumPy nor JAX import.
"""

from __future__ import annotations

import math
import warnings
from typing import Any, NamedTuple

__all__ = [
    "EMLoop",
    "em_step",
    "run_em_loop",
    "warn_decrease",
    "warn_max_iter",
]


def em_step(new_value, old_value, floor, judged, scale, tol, eps):
    """EM's one rule on one step, for the host loop and the compiled one (floats or arrays).

    A change of the objective per unit of ``scale`` is within the rule when it is at most
    ``tol`` or, with ``tol > 0``, at the objective's rounding level (a float32 fit cannot
    resolve a tiny ``tol``). ``scale`` is the total row weight (unit-free: rescaling X shifts
    the objective by a constant), or ``max(1, |objective|)`` for mclust's relative rule.

    Returns ``(finite, decreased, converged)``: the new objective is finite; it went below
    ``floor`` by more than the rule forgives (only when ``judged``: not an ascent step, an
    M-step that is not the exact maximizer, a rank-truncated covariance say; EM stops there and
    keeps the previous parameters); it converged (changed within the rule from ``old_value``).
    """

    def within(change):
        return (change <= tol) | ((tol > 0) & (change <= 4 * eps * abs(new_value) / scale))

    finite = abs(new_value) < math.inf
    # (x < 1) is "not x" for Python bools and traced arrays alike
    drop = (floor - new_value) / scale
    decreased = finite & judged & (within(drop) < 1)
    converged = finite & (decreased < 1) & within(abs(new_value - old_value) / scale)
    return finite, decreased, converged


def warn_decrease(iteration: int, drop: float, value: float, stacklevel: int = 3) -> None:
    """The warning of an EM stopped by a refused step (:func:`em_step`) at M-step ``iteration``."""
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
    """The one warning of an EM that reached ``max_iter`` without meeting :func:`em_step`'s rule."""
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
        converged: :func:`em_step`'s rule was met.
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


def run_em_loop(m_step, e_step, *, params, max_iter, tol, eps, scale):
    """EM from ``params``: their E-step, then M-step and E-step in turn until the rule is met.

    Args:
        m_step: ``expectation -> params``, the whole state the next E-step needs (the
            parameters and the statistics they were maximized from, say).
        e_step: ``params -> (objective, expectation[, floor])``. ``floor``, the value the next
            step must not fall below, defaults to the objective: a penalty that moves with the
            soft counts is scored at this E-step's statistics there; -inf judges no step (exact
            M-steps whose drops are rounding, which ``tol=0`` would refuse). The start's step is
            not judged: the start may be a density on a subspace, whose values do not compare.
        params: the start (the caller's first M-step).
        max_iter: most E-steps, the start's included (as many M-steps with the caller's first).
        tol, eps, scale: :func:`em_step`'s (``scale`` a function of the new objective for
            mclust's relative rule); the caller warns of a refused step (``drop``) and of
            ``max_iter`` (:func:`warn_decrease`, :func:`warn_max_iter`).
    """
    value, expectation, *floor = e_step(params)
    trace, n_iter, converged, drop = [value], 1, False, 0.0
    while math.isfinite(value) and n_iter < max_iter:
        new_params = m_step(expectation)
        new_value, new_expectation, *new_floor = e_step(new_params)
        size = scale(new_value) if callable(scale) else scale
        before = floor[0] if floor else value
        finite, decreased, converged = em_step(new_value, value, before, n_iter > 1, size, tol, eps)
        if decreased:
            drop = before - new_value
            break
        trace.append(new_value)
        n_iter += 1
        if not finite:
            break
        params, value, expectation, floor = new_params, new_value, new_expectation, new_floor
        if converged:
            break
    finite = all(map(math.isfinite, trace))
    return EMLoop(params, expectation, value, trace, n_iter, converged, finite, drop)
