"""The one EM driver (genprob.engine.em_driver.run_em_loop): its stopping rule, ascent guard (a
floor from the E-step), refusal of non-finite steps, and max_iter, on scripted objectives
(parameters = step index)."""

import math
import warnings

import numpy as np
import pytest

from genprob.engine.em_driver import run_em_loop


def _run(values, **options):
    """EM whose step t has objective values[t] (and floors[t], when given); the M-step advances
    t by one."""
    settings = dict(max_iter=len(values) + 5, tol=1e-6, eps=np.finfo(float).eps, scale=1.0)
    floors = options.pop("floors", None)

    def e_step(t):
        return (values[t], t) if floors is None else (values[t], t, floors[t])

    return run_em_loop(lambda t: t + 1, e_step, params=0, **{**settings, **options})


def test_stops_when_the_change_per_unit_of_scale_is_within_tol():
    loop = _run([-10.0, -5.0, -4.0, -3.9999995, 0.0], scale=10.0)
    # 5e-7 / 10 = 5e-8 <= 1e-6 stops; 1 / 10 did not
    assert loop.converged and loop.n_iter == 4 and loop.params == 3
    assert loop.trace == [-10.0, -5.0, -4.0, -3.9999995]
    assert not _run([-10.0, -5.0, -4.0, -3.9999995, 0.0], scale=1e-3, max_iter=4).converged


def test_a_step_that_lowers_the_objective_is_refused_and_its_caller_warns():
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the caller warns once per fit (fit_em, streaming)
        loop = _run([-10.0, -5.0, -4.0, -4.5, -1.0])
    assert not loop.converged and loop.params == 2 and loop.n_iter == 3
    assert loop.drop == pytest.approx(0.5) and loop.trace == [-10.0, -5.0, -4.0]


def test_the_floor_of_an_e_step_judges_the_next_step():
    # a penalty at the new statistics: the next step must reach the floor, not the objective
    loop = _run([-10.0, -5.0, -4.0, -4.2, -4.2], floors=[-10.0, -5.0, -4.3, -4.2, -4.2])
    assert loop.converged and loop.trace == [-10.0, -5.0, -4.0, -4.2, -4.2]
    loop = _run([-10.0, -5.0, -4.0, -4.2, -4.2], floors=[-10.0, -5.0, -4.1, -4.2, -4.2])
    assert not loop.converged and loop.drop == pytest.approx(0.1) and loop.params == 2


def test_the_first_e_steps_step_is_not_judged_and_a_floor_of_minus_inf_judges_none():
    # the start may be a density on a subspace: its value does not compare with the next
    assert _run([5.0, -5.0, -4.0, -4.0]).converged
    loop = _run([-10.0, -5.0, -5.5, -5.5], floors=[-math.inf] * 4)  # missing.fit_observed's
    assert loop.converged and loop.trace[-1] == -5.5 and loop.drop == 0.0
    assert _run([-10.0, -5.0, -5.5, -5.5]).drop == pytest.approx(0.5)


def test_a_non_finite_step_stops_and_keeps_the_last_finite_one():
    loop = _run([-10.0, -5.0, math.nan, 0.0])
    assert not loop.finite and not loop.converged and loop.params == 1 and loop.value == -5.0
    assert loop.n_iter == 3 and math.isnan(loop.trace[-1])


def test_max_iter_counts_m_steps():
    loop = _run([-10.0 + t for t in range(20)], max_iter=4)
    assert not loop.converged and loop.n_iter == 4 and loop.trace == [-10.0, -9.0, -8.0, -7.0]
    loop = _run([-10.0], max_iter=1)  # from given parameters: their E-step first
    assert loop.trace == [-10.0] and loop.params == 0
