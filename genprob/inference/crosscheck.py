"""The cross-check: a fit against an independent numerical maximization of the same objective."""

from __future__ import annotations

import inspect
import math
import time
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from genprob import core
from genprob._lazy import LazyModule
from genprob.engine._dtype import numpy_dtype, precision, resolve_dtype
from genprob.engine._labels import class_codes
from genprob.engine._validation import check_class_prior, check_features, check_sample_weight
from genprob.engine.capabilities import capability, has_closed_form
from genprob.story import CLASS_PRIOR, Story

jax = LazyModule("jax")
jnp = LazyModule("jax.numpy")
#: the optimizer compiles at import: imported with the first cross-check
optimize = LazyModule("genprob.inference.optimize")

__all__ = ["TOLERANCES", "CheckRow", "CrosscheckResult", "crosscheck"]

#: Pass/fail thresholds by dtype: relative differences, and gradient norms of ``objective / n``.
TOLERANCES = {
    "float64": {"parameters": 1e-6, "objective": 1e-8, "gradient": 1e-6},
    "float32": {"parameters": 1e-3, "objective": 1e-5, "gradient": 1e-3},
}

#: Entries below this fraction of their parameter's largest magnitude are compared on that scale.
RELATIVE_FLOOR = 1e-6


class CheckRow(NamedTuple):
    """One row of the cross-check table: a parameter, the ``"objective"`` or a ``"gradient at
    ..."`` (``kind``), the values at the checked fit (``closed_form``) and at the ``optimizer``
    (NaN for parameters), the max absolute and relative differences (the norm for gradients),
    the ``tolerance``, whether it ``passed``, a ``note`` and whether it is ``decisive``."""

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
    decisive: bool = True


@dataclass(eq=False)
class CrosscheckResult:
    """Outcome of :func:`crosscheck`: the table (``rows``, :class:`CheckRow`), the checked
    parameters (``closed_form``: the closed form, or a fit of a story without one), the best
    :class:`~genprob.inference.optimize.OptimizerResult` compared (``optimizer``, of
    ``num_starts`` runs in ``seconds``), ``reference`` (``"closed form"`` or ``"fit"``),
    ``smooth`` (whether parameter and gradient rows decide) and a readable printout."""

    story: Story
    data_name: str
    dtype: str
    shape: tuple
    num_classes: int
    rows: list
    closed_form: dict
    optimizer: object
    seconds: float
    label: str | None = None
    num_starts: int = 1
    reference: str = "closed form"
    smooth: bool = True

    @property
    def passed(self) -> bool:
        """True when every decisive row passed."""
        return all(row.passed for row in self.rows if row.decisive)

    @property
    def failures(self) -> list:
        """The decisive rows that failed."""
        return [row for row in self.rows if row.decisive and not row.passed]

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
        restart = self.reference != "closed form"
        what = "independent restart" if restart else "L-BFGS from a poor start"
        lines = [
            f"{self.label or _story_label(self.story)} on {self.data_name} "
            f"({n} rows, {d} features, {self.num_classes} classes, {self.dtype})",
            f"  {'restart' if restart else 'optimizer'}: {what}"
            f"{f' (best of {self.num_starts})' if self.num_starts > 1 else ''}, "
            f"{opt.num_iterations} iterations in "
            f"{opt.num_stages} stage(s), {'converged' if opt.converged else 'NOT converged'}, "
            f"{self.seconds:.1f} s",
        ]
        if self.label:
            lines.insert(1, f"  story: {_story_label(self.story)}")
        if restart:
            lines.insert(-1, "  checked: the optimizer fit (no closed form), against a restart")
        header = (
            f"  {'quantity':<30}{self.reference:>20}{'restart' if restart else 'optimizer':>20}"
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
                found = _fmt(row.optimizer)
                values = f"{_fmt(row.closed_form):>20}{found:>20}{'':>12}{row.rel_diff:>14.2e}"
            result = "(info)" if not row.decisive else "ok" if row.passed else "FAIL"
            lines.append(f"  {label:<30}{values}{row.tolerance:>11.1e}  {result}")
            if row.note:
                lines.append(f"      -> {row.note}")
        if not self.smooth:
            lines.append(
                "  the likelihood is not smooth (capability smooth_likelihood is False): the "
                "objective decides; parameter and gradient rows are (info)"
            )
        lines.append("  " + ("PASSED" if self.passed else f"FAILED: {len(self.failures)} row(s)"))
        return "\n".join(lines)


def _fmt(value) -> str:
    return "" if value is None or math.isnan(value) else f"{value:.2e}"


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
            text = repr(value)  # long values cut to 60 characters
            shown.append(f"{name}={text if len(text) <= 60 else text[:57] + '...'}")
    return f"{type(story).__name__}({', '.join(shown)})"


def _same(value, default) -> bool:
    try:
        return bool(value == default)
    except (TypeError, ValueError):
        return False


def _relative_difference(found, expected) -> tuple[float, float]:
    """(max |found - expected|, max entrywise relative difference with a floor)."""
    difference = np.abs(found - expected)
    if difference.size == 0:
        return 0.0, 0.0
    magnitude = np.abs(expected)
    scale = np.maximum(magnitude, RELATIVE_FLOOR * magnitude.max())
    scale = np.where(scale > 0, scale, 1.0)
    return float(difference.max()), float((difference / scale).max())


def _parameter_rows(closed_form: dict, found: dict, tolerance: float, decisive: bool) -> list:
    rows = []
    names = sorted(closed_form, key=lambda k: (k != CLASS_PRIOR, list(closed_form).index(k)))
    for name in names:
        expected = np.asarray(closed_form[name], dtype=np.float64)
        value = np.asarray(found.get(name, np.nan), dtype=np.float64)
        if name not in found or value.shape != expected.shape:
            missing = "the optimizer returned no such parameter"
            shapes = f"shapes differ: optimizer {value.shape}, closed form {expected.shape}"
            rows.append(
                CheckRow(name, "parameter", expected.shape, math.nan, math.nan, math.nan,
                         math.nan, tolerance, False, shapes if name in found else missing)
            )  # fmt: skip
            continue
        absolute, relative = _relative_difference(value, expected)
        passed = bool(np.isfinite(relative) and relative <= tolerance)
        note = "" if passed else "the two answers disagree"
        if not passed and not decisive:
            note = "differ, not judged: a non-smooth likelihood can have several maximizers"
        if not np.all(np.isfinite(expected)):
            note = "the checked parameters have non-finite entries"
            decisive = True
        rows.append(
            CheckRow(name, "parameter", expected.shape, math.nan, math.nan, absolute, relative,
                     tolerance, passed, note, decisive)
        )  # fmt: skip
    return rows


def _objective_row(
    at_reference: float, at_optimizer: float, tolerance: float, reference: str
) -> CheckRow:
    """The verdict's row: ``reference`` must not be below the optimizer by more than tolerance."""
    absolute = abs(at_optimizer - at_reference)
    scale = max(abs(at_optimizer), abs(at_reference))
    relative = absolute / scale if scale > 0 else absolute
    shortfall = (at_optimizer - at_reference) / scale if scale > 0 else at_optimizer - at_reference
    passed = bool(np.isfinite(relative) and shortfall <= tolerance)
    note = ""
    if not np.isfinite(at_reference):
        note = f"the objective is not finite at the {reference}"
    elif not passed:
        note = f"the optimizer found a higher objective: the {reference} is not the maximizer"
    elif relative > tolerance:
        note = f"the {reference} is higher: the optimizer stopped short of the maximum"
    return CheckRow(
        "objective", "objective", (), at_reference, at_optimizer, absolute, relative,
        tolerance, passed, note,
    )  # fmt: skip


def _gradient_row(where: str, norm: float, tolerance: float, decisive: bool) -> CheckRow:
    passed = bool(np.isfinite(norm) and norm <= tolerance)
    at_reference = where in ("closed form", "fit")
    note = ""
    if not passed:
        note = (
            f"the {where} is not a stationary point of the objective"
            if at_reference
            else "the optimizer did not reach a stationary point"
        )
        if not decisive:
            note = "not judged: the likelihood is not differentiable everywhere"
    return CheckRow(
        f"gradient at {where}", "gradient", (), norm if at_reference else math.nan,
        math.nan if at_reference else norm, norm, norm, tolerance, passed, note, decisive,
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
    starts: int = 3,
    tolerances: dict | None = None,
    data_name: str = "data",
    label: str | None = None,
    params: dict | None = None,
    **optimizer_options,
) -> CrosscheckResult:
    """Check a fit of ``story`` against an independent numerical maximization of the penalized
    objective (docs/reference/crosscheck.md).

    Args:
        y: class codes (n,) in 0..K-1 (every row labeled: the check is supervised).
        num_classes: K; defaults to ``max(y) + 1``.
        sample_weight: optional row weights, used by every fit.
        class_prior, fit_prior: a fixed class prior (K,), or ``fit_prior=False`` for a uniform
            one, held fixed in every fit.
        dtype: ``"float64"`` (default) or ``"float32"``; selects the tolerances too.
        seed: seed of the optimizer's first start.
        starts: at most this many poor starts of the comparison run.
        tolerances: overrides of :data:`TOLERANCES` entries.
        data_name, label: the data's and the story's names in the printout.
        params: parameters to check instead of fitting them (a story without a closed form).
        **optimizer_options: passed to :func:`genprob.fit_optimizer` (``max_iter``, ``tol``...).

    Returns:
        A :class:`CrosscheckResult`; ``.passed`` tells whether every decisive row passed.

    Raises:
        ValueError: the story has neither a closed form nor a prior to optimize, y has
            unlabeled rows, or bad data.
    """
    dtype = resolve_dtype(dtype)
    limits = dict(TOLERANCES[dtype])
    unknown = set(tolerances or {}) - set(limits)
    if unknown:
        raise ValueError(f"unknown tolerance keys {sorted(unknown)}; known: {sorted(limits)}.")
    limits.update(tolerances or {})
    if not isinstance(story, Story):
        raise TypeError(f"story must be a genprob Story, got {type(story).__name__}.")
    closed_form = has_closed_form(story)
    if not closed_form and type(story).prior is Story.prior:
        raise ValueError(
            f"{type(story).__name__} has no closed form to check and no prior to fit by "
            "optimization: write its prior and emission (or a closed form)."
        )
    if closed_form and params is not None:
        raise ValueError("params are for stories without a closed form; the closed form is fit.")
    X = check_features(X, numpy_dtype(dtype))
    codes, num_classes = class_codes(y, X.shape[0], num_classes)
    sample_weight = check_sample_weight(sample_weight, X.shape[0])
    class_prior = check_class_prior(class_prior, range(num_classes))
    if np.any(codes < 0):
        raise ValueError(
            f"y has {int(np.sum(codes < 0))} unlabeled rows (-1); the cross-check is supervised. "
            "Check semi-supervised fits with genprob.fit_optimizer(..., unlabeled_weight=...)."
        )
    with precision(dtype):
        Xj = jnp.asarray(X)
        story.validate(Xj)  # before the closed form is computed on it
        R = core.one_hot_responsibilities(codes, num_classes, sample_weight, dtype=X.dtype)
        penalty_stats = None
        if closed_form:
            stats = core.sufficient_statistics(story, Xj, R)
            checked = core.maximize(story, stats, class_prior, fit_prior)
            penalty_stats = jax.tree_util.tree_map(np.asarray, stats["emission"])
        prior = core.class_prior_from_counts(R.sum(axis=0), class_prior, fit_prior)
    fixed = None if class_prior is None and fit_prior else {CLASS_PRIOR: np.asarray(prior)}
    common = dict(
        num_classes=num_classes,
        sample_weight=sample_weight,
        penalized=closed_form,
        penalty_stats=penalty_stats,
        fixed=fixed,
        dtype=dtype,
    )
    # the table reports convergence and collapse itself
    options = {"warn": False, **optimizer_options}
    start = time.perf_counter()
    first_seed = seed
    if not closed_form:
        if params is None:
            params = optimize.fit_optimizer(story, X, codes, seed=seed, **common, **options).params
            first_seed = seed + 1
        checked = params
    checked = {name: np.asarray(value) for name, value in checked.items()}
    reference = "closed form" if closed_form else "fit"
    try:
        at_checked = optimize.evaluate_objective(story, checked, X, codes, **common)
    except ValueError as error:
        raise ValueError(f"cannot score the {reference} parameters: {error}") from None
    found: optimize.OptimizerResult | None = None
    for start_index in range(max(1, int(starts))):
        candidate = optimize.fit_optimizer(
            story, X, codes, seed=first_seed + start_index, **common, **options
        )
        if found is None or candidate.objective > found.objective:
            found = candidate
        # another start only while the optimizer ends below the checked fit (it stalled)
        shortfall = at_checked.objective - found.objective
        if shortfall <= limits["objective"] * max(1.0, abs(at_checked.objective)):
            break
    num_starts = start_index + 1
    seconds = time.perf_counter() - start
    smooth = bool(capability(story, "smooth_likelihood"))
    # a restart may return a mixture's components in another order: compare like with like
    aligned = story.align_parameters(dict(found.params), checked)
    rows = _parameter_rows(checked, aligned, limits["parameters"], smooth)
    other = "optimizer" if closed_form else "restart"
    rows += [
        _objective_row(at_checked.objective, found.objective, limits["objective"], reference),
        _gradient_row(reference, at_checked.grad_norm, limits["gradient"], smooth),
        _gradient_row(other, found.grad_norm, limits["gradient"], smooth),
    ]
    return CrosscheckResult(
        story=story,
        data_name=data_name,
        dtype=dtype,
        shape=tuple(X.shape),
        num_classes=num_classes,
        rows=rows,
        closed_form=checked,
        optimizer=found,
        seconds=seconds,
        label=label,
        num_starts=num_starts,
        reference=reference,
        smooth=smooth,
    )
