r"""The closed-form cross-check: every closed-form solver against numerical maximization.

:func:`crosscheck` fits a story twice on the same labelled data — by its closed form
(:func:`genprob.core.fit_closed_form`) and by L-BFGS on the NumPyro model's likelihood
(:func:`genprob.fit_optimizer`, from a deliberately poor start) — and compares:

* every named parameter: max absolute and max relative difference;
* the objective at both solutions: the log-likelihood plus ``story.log_penalty`` (the MAP
  objective of a smoothed or regularized closed form; the penalty is 0 for plain MLE);
* the norm of the gradient of ``objective / n`` with respect to the unconstrained parameters *at
  the closed-form solution*. It must vanish there whatever the optimizer does: the sharp,
  independent check. (The same norm at the optimizer's solution shows that it converged.)

A wrong derivation cannot hide: dividing a variance by ``n - 1`` where the maximizer needs ``n``,
or dropping a smoothing term that the penalty says is there, moves the closed form off the
maximizer, which shows in all three rows.

Tolerances are keyed by dtype (:data:`TOLERANCES`). Relative parameter differences are taken
entry by entry, ``|a - b| / max(|b|, floor * max|b|)``, so that an entry that is zero up to
rounding (an off-diagonal covariance of uncorrelated features) is measured on its parameter's
scale instead of dividing by ~0.
"""

from __future__ import annotations

import inspect
import math
import time
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from genprob import core
from genprob._dtype import numpy_dtype, precision, resolve_dtype
from genprob._validation import check_class_prior, check_features, check_sample_weight, class_codes
from genprob.optimize import OptimizerResult, evaluate_objective, fit_optimizer
from genprob.story import CLASS_PRIOR, Story

__all__ = ["TOLERANCES", "CheckRow", "CrosscheckResult", "crosscheck"]

#: Pass/fail thresholds by dtype: relative parameter and objective differences, and the
#: gradient norm of ``objective / n`` (per row) at the closed form and at the optimizer's answer.
TOLERANCES = {
    "float64": {"parameters": 1e-6, "objective": 1e-8, "gradient": 1e-6},
    "float32": {"parameters": 1e-3, "objective": 1e-5, "gradient": 1e-3},
}

#: Entries smaller than this fraction of their parameter's largest magnitude are compared on
#: that scale (see the module docstring).
RELATIVE_FLOOR = 1e-6


class CheckRow(NamedTuple):
    """One row of the cross-check table.

    Attributes:
        quantity: parameter name, ``"objective"``, ``"gradient at closed form"`` or
            ``"gradient at optimizer"``.
        kind: ``"parameter"``, ``"objective"`` or ``"gradient"``.
        shape: the parameter's shape (``()`` for the other rows).
        closed_form: objective or gradient norm at the closed form (NaN for parameters).
        optimizer: objective or gradient norm at the optimizer's solution (NaN for parameters).
        abs_diff: max absolute difference (parameters, objective); the norm itself (gradients).
        rel_diff: max relative difference (parameters, objective); the norm (gradients).
        tolerance: threshold on ``rel_diff``.
        passed: ``rel_diff <= tolerance`` (and finite).
        note: explanation when the row fails.
    """

    quantity: str
    kind: str
    shape: tuple
    closed_form: float
    optimizer: float
    abs_diff: float
    rel_diff: float
    tolerance: float
    passed: bool
    note: str = ""


class CrosscheckResult:
    """Outcome of :func:`crosscheck`: the table, both solutions, and a readable printout.

    Attributes:
        story: the checked story.
        data_name: label of the data in the printout.
        dtype: ``"float64"`` or ``"float32"``.
        shape: ``(n_samples, n_features)``.
        num_classes: K.
        rows: list of :class:`CheckRow`.
        closed_form: closed-form parameters (NumPy arrays).
        optimizer: the :class:`~genprob.optimize.OptimizerResult`.
        seconds: wall time of the optimizer fits.
        num_starts: number of optimizer runs (poor starts) made.
    """

    def __init__(
        self,
        story,
        data_name,
        dtype,
        shape,
        num_classes,
        rows,
        closed_form,
        optimizer,
        seconds,
        label=None,
        num_starts=1,
    ):
        self.num_starts = num_starts
        self.story = story
        self.label = label
        self.data_name = data_name
        self.dtype = dtype
        self.shape = shape
        self.num_classes = num_classes
        self.rows = rows
        self.closed_form = closed_form
        self.optimizer = optimizer
        self.seconds = seconds

    @property
    def passed(self) -> bool:
        """True when every row passed."""
        return all(row.passed for row in self.rows)

    @property
    def failures(self) -> list:
        """The rows that failed."""
        return [row for row in self.rows if not row.passed]

    def row(self, quantity: str) -> CheckRow:
        """The row of ``quantity`` (a parameter name, ``"objective"``, ``"gradient at ..."``)."""
        for row in self.rows:
            if row.quantity == quantity:
                return row
        raise KeyError(f"no row {quantity!r}; rows: {[r.quantity for r in self.rows]}.")

    def to_frame(self):
        """The table as a pandas DataFrame, one row per :class:`CheckRow`."""
        import pandas as pd

        return pd.DataFrame([row._asdict() for row in self.rows])

    def __repr__(self) -> str:
        status = "passed" if self.passed else f"FAILED ({len(self.failures)} rows)"
        return f"<CrosscheckResult {self.story!r} on {self.data_name}: {status}>"

    def __str__(self) -> str:
        n, d = self.shape
        opt = self.optimizer
        lines = [
            f"{self.label or _story_label(self.story)} on {self.data_name} "
            f"({n} rows, {d} features, {self.num_classes} classes, {self.dtype})",
            f"  optimizer: L-BFGS from a poor start"
            f"{f' (best of {self.num_starts})' if self.num_starts > 1 else ''}, "
            f"{opt.num_iterations} iterations in "
            f"{opt.num_stages} stage(s), {'converged' if opt.converged else 'NOT converged'}, "
            f"{self.seconds:.1f} s",
        ]
        if self.label:
            lines.insert(1, f"  story: {_story_label(self.story)}")
        header = (
            f"  {'quantity':<30}{'closed form':>20}{'optimizer':>20}"
            f"{'max |diff|':>12}{'max rel diff':>14}{'tolerance':>11}  result"
        )
        lines += [header, "  " + "-" * (len(header) - 2)]
        for row in self.rows:
            label = row.quantity + (f" {row.shape}" if row.kind == "parameter" else "")
            if row.kind == "parameter":
                values = f"{'':>20}{'':>20}{row.abs_diff:>12.2e}{row.rel_diff:>14.2e}"
            elif row.kind == "objective":
                values = (
                    f"{row.closed_form:>20.12g}{row.optimizer:>20.12g}"
                    f"{row.abs_diff:>12.2e}{row.rel_diff:>14.2e}"
                )
            else:
                closed = _fmt(row.closed_form)
                found = _fmt(row.optimizer)
                values = f"{closed:>20}{found:>20}{'':>12}{row.rel_diff:>14.2e}"
            result = "ok" if row.passed else "FAIL"
            lines.append(f"  {label:<30}{values}{row.tolerance:>11.1e}  {result}")
            if row.note:
                lines.append(f"      -> {row.note}")
        lines.append("  " + ("PASSED" if self.passed else f"FAILED: {len(self.failures)} row(s)"))
        return "\n".join(lines)


def _fmt(value) -> str:
    return (
        ""
        if value is None or (isinstance(value, float) and math.isnan(value))
        else (f"{value:.2e}")
    )


def _story_label(story: Story) -> str:
    """``TypeName(option=value, ...)`` listing only the options that differ from the defaults."""
    try:
        parameters = inspect.signature(type(story).__init__).parameters
    except (TypeError, ValueError):
        return repr(story)
    shown = []
    for name, value in vars(story).items():
        if name.startswith("_"):
            continue
        default = parameters[name].default if name in parameters else inspect.Parameter.empty
        if default is inspect.Parameter.empty or not _same(value, default):
            shown.append(f"{name}={_short(value)}")
    return f"{type(story).__name__}({', '.join(shown)})"


def _same(value, default) -> bool:
    try:
        return bool(value == default)
    except (TypeError, ValueError):
        return False


def _short(value) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _relative_difference(found, expected) -> tuple[float, float]:
    """(max |found - expected|, max entrywise relative difference with a floor)."""
    difference = np.abs(found - expected)
    if difference.size == 0:
        return 0.0, 0.0
    magnitude = np.abs(expected)
    scale = np.maximum(magnitude, RELATIVE_FLOOR * magnitude.max())
    scale = np.where(scale > 0, scale, 1.0)
    return float(difference.max()), float((difference / scale).max())


def _parameter_rows(closed_form: dict, found: dict, tolerance: float) -> list:
    rows = []
    names = sorted(closed_form, key=lambda k: (k != CLASS_PRIOR, list(closed_form).index(k)))
    for name in names:
        expected = np.asarray(closed_form[name], dtype=np.float64)
        if name not in found:
            rows.append(
                CheckRow(name, "parameter", expected.shape, math.nan, math.nan, math.nan,
                         math.nan, tolerance, False, "the optimizer returned no such parameter")
            )  # fmt: skip
            continue
        value = np.asarray(found[name], dtype=np.float64)
        if value.shape != expected.shape:
            rows.append(
                CheckRow(name, "parameter", expected.shape, math.nan, math.nan, math.nan,
                         math.nan, tolerance, False,
                         f"shapes differ: optimizer {value.shape}, closed form {expected.shape}")
            )  # fmt: skip
            continue
        absolute, relative = _relative_difference(value, expected)
        passed = bool(np.isfinite(relative) and relative <= tolerance)
        note = "" if passed else "the closed form and the optimizer disagree"
        if not np.all(np.isfinite(expected)):
            note = "the closed form has non-finite entries"
        rows.append(
            CheckRow(name, "parameter", expected.shape, math.nan, math.nan, absolute, relative,
                     tolerance, passed, note)
        )  # fmt: skip
    return rows


def _objective_row(at_closed_form: float, at_optimizer: float, tolerance: float) -> CheckRow:
    absolute = abs(at_optimizer - at_closed_form)
    scale = max(abs(at_optimizer), abs(at_closed_form))
    relative = absolute / scale if scale > 0 else absolute
    passed = bool(np.isfinite(relative) and relative <= tolerance)
    note = ""
    if not passed:
        if not np.isfinite(at_closed_form):
            note = "the objective is not finite at the closed form"
        elif at_optimizer > at_closed_form:
            note = "the optimizer found a higher objective: the closed form is not the maximizer"
        else:
            note = "the closed form is higher: the optimizer stopped short of the maximum"
    return CheckRow(
        "objective", "objective", (), at_closed_form, at_optimizer, absolute, relative,
        tolerance, passed, note,
    )  # fmt: skip


def _gradient_row(where: str, norm: float, tolerance: float) -> CheckRow:
    passed = bool(np.isfinite(norm) and norm <= tolerance)
    at_closed = where == "closed form"
    note = ""
    if not passed:
        note = (
            "the closed form is not a stationary point of the objective"
            if at_closed
            else "the optimizer did not reach a stationary point"
        )
    return CheckRow(
        f"gradient at {where}", "gradient", (), norm if at_closed else math.nan,
        math.nan if at_closed else norm, norm, norm, tolerance, passed, note,
    )  # fmt: skip


def crosscheck(
    story: Story,
    X,
    y,
    *,
    num_classes: int | None = None,
    sample_weight=None,
    class_prior=None,
    fit_prior: bool = True,
    dtype="float64",
    seed: int = 0,
    starts: int = 2,
    tolerances: dict | None = None,
    data_name: str = "data",
    label: str | None = None,
    **optimizer_options,
) -> CrosscheckResult:
    """Fit ``story`` by its closed form and by L-BFGS, and compare the two.

    The optimizer maximizes the *penalized* objective ``log-likelihood + story.log_penalty``
    (the penalty is 0 for plain maximum likelihood), from a poor seeded start. A fixed or uniform
    class prior (``class_prior`` given, or ``fit_prior=False``) is held fixed in both fits.

    Args:
        story: a story with a closed form.
        X: features (n, D).
        y: class codes (n,) in 0..K-1 (every row labeled: the closed form is supervised).
        num_classes: K; defaults to ``max(y) + 1``.
        sample_weight: optional row weights, used by both fits.
        class_prior: fixed class prior (K,), or None.
        fit_prior: estimate the class prior (else uniform, unless ``class_prior`` is given).
        dtype: ``"float64"`` (default) or ``"float32"``; selects the tolerances too.
        seed: seed of the optimizer's initial point.
        starts: at most this many poor starts (seeds ``seed``, ``seed + 1``, ...). A start is
            added only while the best optimizer objective is *below* the closed form's (the
            optimizer stalled); the printout says how many ran and shows the best.
        tolerances: overrides of :data:`TOLERANCES` entries (``parameters``, ``objective``,
            ``gradient``).
        data_name: label of the data in the printout.
        label: name of the story in the printout (default: its type and non-default options).
        **optimizer_options: passed to :func:`genprob.fit_optimizer` (``max_iter``, ``tol``...).

    Returns:
        A :class:`CrosscheckResult`; ``.passed`` tells whether every row is within tolerance.

    Raises:
        ValueError: the story has no closed form, y has unlabeled rows, or bad data.
    """
    dtype = resolve_dtype(dtype)
    limits = dict(TOLERANCES[dtype])
    unknown = set(tolerances or {}) - set(limits)
    if unknown:
        raise ValueError(f"unknown tolerance keys {sorted(unknown)}; known: {sorted(limits)}.")
    limits.update(tolerances or {})
    if not isinstance(story, Story):
        raise TypeError(f"story must be a genprob Story, got {type(story).__name__}.")
    if not story.has_closed_form:
        raise ValueError(
            f"{type(story).__name__} has no closed form to check; fit it with "
            "genprob.fit_optimizer."
        )
    X = check_features(X, numpy_dtype(dtype))
    codes, num_classes = class_codes(y, X.shape[0], num_classes)
    sample_weight = check_sample_weight(sample_weight, X.shape[0])
    class_prior = check_class_prior(class_prior, range(num_classes))
    if np.any(codes < 0):
        raise ValueError(
            f"y has {int(np.sum(codes < 0))} unlabeled rows (-1); the closed form is supervised. "
            "Check semi-supervised fits with genprob.fit_optimizer(..., unlabeled_weight=...)."
        )
    with precision(dtype):
        Xj = jnp.asarray(X)
        story.validate(Xj)
        R = core.one_hot_responsibilities(
            codes, num_classes, sample_weight, dtype=numpy_dtype(dtype)
        )
        stats = core.sufficient_statistics(story, Xj, R)
        closed = core.maximize(story, stats, class_prior, fit_prior)
        closed = {name: np.asarray(value) for name, value in closed.items()}
        penalty_stats = jax.tree_util.tree_map(np.asarray, stats["emission"])
    fixed = None
    if class_prior is not None or not fit_prior:
        fixed = {CLASS_PRIOR: closed[CLASS_PRIOR]}
    common = dict(
        num_classes=num_classes,
        sample_weight=sample_weight,
        penalized=True,
        penalty_stats=penalty_stats,
        fixed=fixed,
        dtype=dtype,
    )
    try:
        at_closed = evaluate_objective(story, closed, X, codes, **common)
    except ValueError as error:
        raise ValueError(f"cannot score the closed-form parameters: {error}") from None
    start = time.perf_counter()
    found: OptimizerResult | None = None
    for start_index in range(max(1, int(starts))):
        candidate = fit_optimizer(
            story, X, codes, seed=seed + start_index, **common, **optimizer_options
        )
        if found is None or candidate.objective > found.objective:
            found = candidate
        # Only an optimizer that ended *below* the closed form gets another start (it stalled,
        # e.g. a softmax saturated by a long early step); one that ends above it has shown the
        # closed form is not the maximum, and no restart can hide that.
        shortfall = at_closed.objective - found.objective
        if shortfall <= limits["objective"] * max(1.0, abs(at_closed.objective)):
            break
    num_starts = start_index + 1
    seconds = time.perf_counter() - start
    rows = _parameter_rows(closed, found.params, limits["parameters"])
    rows.append(_objective_row(at_closed.objective, found.objective, limits["objective"]))
    rows.append(_gradient_row("closed form", at_closed.grad_norm, limits["gradient"]))
    rows.append(_gradient_row("optimizer", found.grad_norm, limits["gradient"]))
    return CrosscheckResult(
        story=story,
        data_name=data_name,
        dtype=dtype,
        shape=tuple(X.shape),
        num_classes=num_classes,
        rows=rows,
        closed_form=closed,
        optimizer=found,
        seconds=seconds,
        label=label,
        num_starts=num_starts,
    )
