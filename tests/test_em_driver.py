"""The one EM driver (genprob.engine.em_driver.run_em_loop): its stopping rule, ascent guard (a
floor from the E-step), refusal of non-finite steps, and max_iter, on scripted objectives
(parameters = step index)."""

import math
import warnings

import numpy as np
import pytest

from genprob.engine.em_driver import em_loop, run_em_loop, run_in_lockstep, run_program


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


def _program(values):
    """:func:`em_loop` of the scripted objective ``values`` (parameters = step index)."""
    settings = dict(max_iter=len(values) + 5, tol=1e-6, eps=np.finfo(float).eps, scale=1.0)
    return em_loop(lambda t: t + 1, params=0, **settings)


def test_lockstep_runs_each_program_as_alone_and_scores_a_round_at_once():
    scripts = [[-10.0, -5.0, -4.0, -3.9999995, 0.0], [-3.0, -2.0, -2.5], [-1.0, -1.0]]
    rounds = []

    def e_steps(pending):  # one call per round for every waiting program
        rounds.append([index for index, _ in pending])
        return [(scripts[index][t], t) for index, t in pending]

    outcomes = run_in_lockstep([_program(s) for s in scripts], e_steps)
    for outcome, script in zip(outcomes, scripts, strict=True):
        alone = run_em_loop(lambda t: t + 1, lambda t, s=script: (s[t], t), params=0,
                            max_iter=len(script) + 5, tol=1e-6, eps=np.finfo(float).eps,
                            scale=1.0)  # fmt: skip
        assert outcome == alone
    # the programs leave the rounds as they stop: 3 after 2 E-steps, 2 after 3, 1 after 4
    assert rounds == [[0, 1, 2], [0, 1, 2], [0, 1], [0]]
    assert run_program(_program(scripts[1]), lambda t: (scripts[1][t], t)) == outcomes[1]


def test_lockstep_keeps_one_programs_failure_to_itself():
    class Collapsed(ValueError):
        pass

    def e_steps(pending):  # program 1's second E-step fails; the error is thrown into it
        return [
            Collapsed("boom") if (index, t) == (1, 1) else (-10.0 + t, t) for index, t in pending
        ]

    outcomes = run_in_lockstep([_program([0.0] * 6) for _ in range(3)], e_steps)
    assert isinstance(outcomes[1], Collapsed) and str(outcomes[1]) == "boom"
    assert outcomes[0] == outcomes[2] and not outcomes[0].converged  # max_iter = 11 E-steps
    assert outcomes[0].trace == [-10.0 + t for t in range(11)]
