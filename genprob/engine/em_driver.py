"""The one EM driver: one stopping rule (:func:`em_step`) and one loop of E- and M-steps, which
every EM of the package runs with its own step callables (docs/reference/em.md)."""

from __future__ import annotations

import math
from typing import Any, NamedTuple

from genprob.engine._warnings import warn_user

__all__ = [
    "EMLoop",
    "em_loop",
    "em_step",
    "run_em_loop",
    "run_in_lockstep",
    "run_program",
    "warn_decrease",
    "warn_max_iter",
]


def em_step(new_value, old_value, floor, judged, scale, tol, eps):
    """``(finite, decreased, converged)`` of one EM step, host or compiled loop alike: a change
    per unit of ``scale`` within ``tol`` (or, with ``tol > 0``, the objective's rounding level)
    converges; a drop below ``floor`` beyond that, when ``judged``, is refused."""

    def within(change):
        return (change <= tol) | ((tol > 0) & (change <= 4 * eps * abs(new_value) / scale))

    finite = abs(new_value) < math.inf
    # (x < 1) is "not x" for Python bools and traced arrays alike
    drop = (floor - new_value) / scale
    decreased = finite & judged & (within(drop) < 1)
    converged = finite & (decreased < 1) & within(abs(new_value - old_value) / scale)
    return finite, decreased, converged


def warn_decrease(iteration: int, drop: float, value: float) -> None:
    """The warning of an EM stopped by a refused step (:func:`em_step`) at M-step ``iteration``."""
    from sklearn.exceptions import ConvergenceWarning

    warn_user(
        f"EM stopped at iteration {iteration}: its objective would go down by {drop:.3g} (from "
        f"{value:.6g}), which an exact EM step never does (an M-step that only approximates "
        f"the maximum: a rank-deficient covariance, or classes without the data to tell them "
        f"apart). The parameters of iteration {iteration - 1} are kept and the fit is not "
        f"converged. Regularize the story (reg_param, shrinkage, var_smoothing), label more "
        f"rows, or ask for fewer classes.",
        ConvergenceWarning,
    )


def warn_max_iter(max_iter: int, tol: float, what: str = "EM", change="mean per-row") -> None:
    """The one warning of an EM that reached ``max_iter`` without meeting :func:`em_step`'s rule."""
    from sklearn.exceptions import ConvergenceWarning

    warn_user(
        f"{what} did not converge in max_iter={max_iter} iterations (change of the {change} "
        f"objective above em_tol={tol}); raise max_iter.",
        ConvergenceWarning,
    )


class EMLoop(NamedTuple):
    """Outcome of :func:`run_em_loop`: the last kept parameters, their E-step output and
    objective, the objective after each M-step, and ``drop``, what a refused step would lose."""

    params: Any
    expectation: Any
    value: float
    trace: list
    n_iter: int
    converged: bool
    finite: bool
    drop: float


def em_loop(m_step, *, params, max_iter, tol, eps, scale):
    """:func:`run_em_loop` as a generator: it yields the parameters each E-step scores and is
    sent back that E-step's ``(objective, expectation[, floor])``; it returns the
    :class:`EMLoop`. :func:`run_program` drives one, :func:`run_in_lockstep` several at a time."""
    value, expectation, *floor = yield params
    trace, n_iter, converged, drop = [value], 1, False, 0.0
    while math.isfinite(value) and n_iter < max_iter:
        new_params = m_step(expectation)
        new_value, new_expectation, *new_floor = yield new_params
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


def run_em_loop(m_step, e_step, *, params, max_iter, tol, eps, scale):
    """EM from ``params`` until :func:`em_step`'s rule is met or ``max_iter`` E-steps ran.

    ``m_step``: expectation -> params; ``e_step``: params -> ``(objective, expectation[,
    floor])``, ``floor`` the value the next step must not fall below (default the objective,
    -inf judges no step; the start's step is never judged). ``scale`` may be a function of the
    new objective (mclust's relative rule). The caller warns (:func:`warn_decrease`,
    :func:`warn_max_iter`)."""
    loop = em_loop(m_step, params=params, max_iter=max_iter, tol=tol, eps=eps, scale=scale)
    return run_program(loop, e_step)


def run_program(program, e_step):
    """The return value of ``program``, a generator of :func:`em_loop`'s protocol (it yields
    parameters, ``e_step`` scores them), run alone."""
    try:
        params = next(program)
        while True:
            params = program.send(e_step(params))
    except StopIteration as done:
        return done.value


def run_in_lockstep(programs, e_steps):
    """Run several programs of :func:`em_loop`'s protocol a round at a time: each round,
    ``e_steps(pending)``, ``pending`` a list of ``(index, params)``, scores every waiting
    program's parameters at once and returns, for each, its E-step or the exception that E-step
    raises (thrown into that program). Returns each program's return value or the exception it
    raised, in order: one failing program leaves the others running."""
    outcomes, pending = [None] * len(programs), []

    def advance(index, step):
        try:
            pending.append((index, step()))
        except StopIteration as done:
            outcomes[index] = done.value
        except Exception as error:  # noqa: BLE001 - the caller decides what a failure means
            outcomes[index] = error

    for index, program in enumerate(programs):
        advance(index, program.__next__)
    while pending:
        round_, pending = pending, []
        for (index, _), result in zip(round_, e_steps(round_), strict=True):
            program = programs[index]
            if isinstance(result, Exception):
                advance(index, lambda p=program, e=result: p.throw(e))
            else:
                advance(index, lambda p=program, r=result: p.send(r))
    return outcomes
