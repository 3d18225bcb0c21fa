"""Gaussian mixtures within classes (MclustDA, EDDA, MclustSSC): EM and its starts.

Components are *cells* (of class ``cell_class[j]``); a structure constrains a *group* of cells (a
class's components in MclustDA, one component per class in EDDA). EM maximizes the partly
labeled log-likelihood, NaN cells summed out, by the story's M-step; NumPy throughout.
"""

from __future__ import annotations

import copy
import warnings
from dataclasses import dataclass, field

import numpy as np
from numpy.linalg import LinAlgError

from genprob.engine._arrays import column_sums
from genprob.engine.em_driver import em_loop, run_in_lockstep, run_program, warn_decrease
from genprob.families.gaussian import hc, mclust
from genprob.families.gaussian.distributions import observed_patterns as _patterns
from genprob.families.gaussian.mixture_story import (
    CollapsedComponentError,
    GaussianMixtureStory,
    _collapsed,
    cell_log_density,
    log_sum_exp,
    num_parameters,
)

__all__ = [
    "CollapsedComponentError",
    "CollapsedComponentWarning",
    "MixtureFit",
    "cell_log_density",
    "fit_mixture",
    "fit_mixture_sets",
    "fit_mixtures",
    "num_parameters",
    "split_start",
]

#: Warm updates of an iterative structure's M-step per EM iteration until EM first converges.
WARM_MAX_ITER = 5


class CollapsedComponentWarning(UserWarning):
    """A candidate model was left out because one of its components collapsed."""


@dataclass
class MixtureFit:
    """A fitted mixture-within-classes model: ``weights`` (J,) within each class, ``means``
    (J, D), ``covariances`` (J, D, D) of the cells, the structure of each group of cells, the
    partly labeled (weighted) log-likelihood, its trace and the last E-step's responsibilities.
    """

    class_prior: np.ndarray
    weights: np.ndarray
    means: np.ndarray
    covariances: np.ndarray
    cell_class: np.ndarray
    structures: tuple
    groups: tuple
    log_likelihood: float = float("nan")
    trace: list = field(default_factory=list)
    n_iter: int = 0
    converged: bool = True
    responsibilities: np.ndarray | None = None


# -- EM ------------------------------------------------------------------------------------------
def _e_step(story, fit: MixtureFit, X, codes, row_weight, observed, patterns=None):
    """Responsibilities (n, J) over the row's class's cells (all if unlabeled), log-likelihood."""
    with np.errstate(divide="ignore", invalid="ignore"):
        joint = story._cell_joint(vars(fit), X, observed, patterns)
    return _posterior(fit, joint, codes, row_weight)


def _posterior(fit: MixtureFit, joint, codes, row_weight):
    """:func:`_e_step` from the cells' ``log tau_j f_j(x)`` (n, J)."""
    log_prior = np.log(fit.class_prior)[fit.cell_class]
    R, log_lik = _posteriors(log_prior, fit.cell_class, joint, codes, row_weight)
    return R, float(log_lik)


def _posteriors(log_prior, cell_class, joint, codes, row_weight):
    """:func:`_posterior` of fits alike stacked: ``joint`` (n, ..., J), ``log_prior`` and
    ``cell_class`` (..., J); each fit's numbers are its own call's, to the bit."""
    n, members = joint.shape[0], (1,) * (joint.ndim - 1)
    with np.errstate(divide="ignore", invalid="ignore"):
        joint = joint + log_prior
        labeled = codes.reshape(n, *members)
        other = (labeled >= 0) & (cell_class != labeled)
        masked = np.where(other, -np.inf, joint)
        row_log = log_sum_exp(masked)
        R = np.exp(masked - row_log[..., None])
    R[row_weight == 0] = 0.0
    weight = row_weight.reshape(n, *members[1:])
    kept = weight * np.where(weight > 0, row_log, 0.0)
    # each fit's sum over contiguous rows: a 1-D pairwise sum, whatever the stack
    return R, np.moveaxis(kept, 0, -1).copy().sum(axis=-1)


def _m_step(
    story,
    fit: MixtureFit,
    X,
    R,
    row_weight,
    observed,
    max_iter,
    warm=False,
    moments=None,
    solved=None,
):
    """The story's M-step from ``R`` into ``fit``; ``warm``: from ``fit``'s covariances;
    ``moments``: :meth:`.GaussianMixtureStory.moments` of ``R``'s statistics already computed,
    ``solved``: ``(max_iter, covariances)`` of this warm M-step already computed in a batch
    (:func:`_lockstep_e_steps`; used if ``max_iter`` is this M-step's)."""
    WR = R * row_weight[:, None]
    counts = WR.sum(axis=0)  # (J,)
    if np.any(counts <= 0):
        j = int(np.flatnonzero(counts <= 0)[0])
        raise _collapsed(fit.cell_class, j, "no row is assigned to it (the component collapsed).")
    cells = story._cells()  # the statistics of the cells given their responsibilities
    stats = None
    if moments is None and (observed is None or observed.all()):
        stats = cells.sufficient_statistics(X, WR)
    elif moments is None:
        current = {"means": fit.means, "covariance": np.asarray(fit.covariances)}
        stats = cells.observed_statistics(X, WR, observed, current)
    try:
        new = story.maximize(
            stats,
            tol=mclust.TOL,
            max_iter=max_iter,
            start=fit.covariances if warm else None,
            moments=moments,
            solved=solved[1] if warm and solved and solved[0] == max_iter else None,
        )
    except ValueError as error:
        raise _collapsed(
            fit.cell_class, error.cell, f"{error} (the component collapsed)."
        ) from None
    class_counts = np.bincount(fit.cell_class, weights=counts, minlength=len(fit.class_prior))
    fit.class_prior = class_counts / class_counts.sum()
    fit.weights, fit.means, fit.covariances = new["weights"], new["means"], new["covariances"]


def _initial_responsibilities(X, codes, row_weight, cell_class, observed, seed, init="hc"):
    """One-hot responsibilities of the labeled rows, split among a class's cells by mclust's
    hierarchical agglomeration (``init="hc"``, :mod:`.hc`) or by k-means seeded ``seed``."""
    R = np.zeros((X.shape[0], len(cell_class)))
    for k in np.unique(cell_class):
        cells = np.flatnonzero(cell_class == k)
        rows = np.flatnonzero((codes == k) & (row_weight > 0))
        if len(cells) == 1:
            R[rows, cells[0]] = 1.0
            continue
        if len(rows) < len(cells):
            raise CollapsedComponentError(
                f"class {k}, component {len(rows)}: {len(rows)} labeled rows cannot start "
                f"{len(cells)} components.",
                int(k),
                len(rows),
            )
        Xk = X[rows]
        if observed is not None:
            fill = np.nanmean(np.where(observed[rows], Xk, np.nan), axis=0)
            Xk = np.where(observed[rows], Xk, np.nan_to_num(fill))
        # hc weighs rows alike and needs a varying column; past MAX_ROWS k-means (documented)
        if init == "hc" and len(rows) <= hc.MAX_ROWS and np.ptp(Xk, axis=0).max() > 0:
            labels = hc.hclass(hc.tree_of(Xk), len(cells))
        else:
            # imported here: sklearn.cluster loads ~150 modules, more than an EDDA fit's time
            from sklearn.cluster import KMeans

            km = KMeans(n_clusters=len(cells), n_init=1, random_state=seed)
            labels = km.fit_predict(Xk, sample_weight=row_weight[rows])
        R[rows, cells[labels]] = 1.0
    return R


#: EM's first M-step: labeled rows, else the better of two from every row (howto/model_based)
STARTS = ("labeled", "diagonal", "uniform")
_IDENTIFIABLE = ("VVI", "EEI", "EII")


def _run_em(story, fit, X, codes, row_weight, observed, R, *, max_iter, tol, start):
    """EM from responsibilities ``R`` (M-step first; ``start``: see :data:`STARTS`)."""
    # the rows' observed patterns once, not at every E-step (all observed: one pattern)
    patterns = _patterns(np.ones(X.shape, dtype=bool) if observed is None else observed)
    floor = _floor(story)

    def e_step(params):
        R, log_lik = _e_step(story, params, X, codes, row_weight, observed, patterns)
        return log_lik, (R, params), *floor

    program = _em_program(story, fit, X, codes, row_weight, observed, R, max_iter, tol, start)
    return run_program(program, e_step)


def _floor(story):
    """The E-step's floor: under a prior EM climbs the posterior, not the likelihood, and no
    step is judged (as mclust)."""
    return () if story.em_prior is None else (-np.inf,)


def _em_program(story, fit, X, codes, row_weight, observed, R, max_iter, tol, start, caps=None):
    """:func:`_run_em` as a program of :func:`.em_driver.em_loop`'s protocol: it yields each
    fit to score and takes its E-step ``(log_lik, (R, fit[, moments of R[, solved]]),
    *floor)``; ``caps``: a list the program keeps its next warm M-steps' ``max_iter`` in, first."""
    unlabeled = bool(np.any((codes < 0) & (row_weight > 0)))
    multi = len(fit.cell_class) > len(fit.class_prior)
    iterative = unlabeled or multi or observed is not None  # fit_mixture: None if all observed
    # a few warm M-step updates per iteration until EM converges, then full M-steps (still monotone)
    caps = [] if caps is None else caps
    caps[:] = [mclust.MAX_ITER]
    # the starts from every row take full M-steps, as mclust: capped ones led EVE lower there
    warm = start == "labeled" and any(s in mclust.ITERATIVE for s in fit.structures)
    if warm and WARM_MAX_ITER < caps[0]:
        caps.insert(0, WARM_MAX_ITER)
    # EM's first M-step is only a starting point; without EM it is the fit
    first_cap = caps[0] if iterative else caps[-1]
    if start == "uniform":
        R = np.where((codes < 0)[:, None], 1.0 / R.shape[1], R)
    elif start == "diagonal":  # the first diagonal structure the labeled rows identify
        for simpler in _IDENTIFIABLE:
            diagonal = story.replace(structures=(simpler,) * len(story.structures))
            try:
                _m_step(diagonal, fit, X, R, row_weight * (codes >= 0), observed, first_cap)
                break
            except CollapsedComponentError:
                if simpler == _IDENTIFIABLE[-1]:
                    raise
        R = _e_step(story, fit, X, codes, row_weight, observed)[0]
    rows = row_weight * (codes >= 0) if start == "labeled" else row_weight  # "given": as is
    _m_step(story, fit, X, R, rows, observed, first_cap)

    def m_step(expectation):  # from the E-step's fit: its covariances fill missing cells
        R, previous, *stats = expectation
        new = copy.copy(previous)
        _m_step(story, new, X, R, row_weight, observed, caps[0], True, *stats)
        return new

    # the mclust rule (relative change); met with capped M-steps, EM goes on with full ones
    budget, trace = max_iter + 1 if iterative else 1, []
    while True:
        loop = yield from em_loop(
            m_step, params=fit, max_iter=budget - max(len(trace) - 1, 0), tol=tol,
            eps=np.finfo(float).eps, scale=lambda value: max(1.0, abs(value)),
        )  # fmt: skip
        trace += loop.trace[1:] if trace else loop.trace
        fit = loop.params
        if loop.drop:
            warn_decrease(len(trace) + 1, loop.drop, loop.value)
        if not (loop.converged and len(caps) > 1):
            break
        caps.pop(0)
    fit.trace, fit.n_iter = trace, len(trace) - 1
    fit.converged = loop.converged or not iterative
    fit.log_likelihood = fit.trace[-1]
    fit.responsibilities = loop.expectation[0]
    return fit


def _lockstep_e_steps(sets, owners):
    """The E-steps of several candidates' fits on complete rows a round at a time
    (:func:`.em_driver.run_in_lockstep`): per row set ``sets[s]`` = ``(X, codes, row_weight,
    patterns)``, one density of every cell and one set of statistics of every candidate's
    responsibilities, the calls a lone fit makes once per candidate; and the next warm M-step's
    covariances of candidates alike (:func:`_solve_together`). ``owners[index]``: ``(set,
    story, caps)`` of each program."""
    cells = GaussianMixtureStory._cells()

    def e_steps(pending):
        results, by_set = [None] * len(pending), {}
        for p, (index, _) in enumerate(pending):
            by_set.setdefault(owners[index][0], []).append(p)
        for s, mine in by_set.items():
            pairs = [(owners[pending[p][0]][1], pending[p][1]) for p in mine]
            for p, result in zip(mine, _set_e_steps(cells, pairs, *sets[s]), strict=True):
                results[p] = result
        _solve_together(pending, results, owners)
        return results

    return e_steps


def _set_e_steps(cells, pairs, X, codes, row_weight, patterns):
    """The E-steps of ``pairs`` ``(story, fit)`` on one row set (:func:`_lockstep_e_steps`)."""
    fits = [fit for _, fit in pairs]
    try:
        with np.errstate(divide="ignore", invalid="ignore"):
            log_f = cell_log_density(
                X,
                np.concatenate([fit.means for fit in fits]),
                np.concatenate([np.asarray(fit.covariances) for fit in fits]),
                patterns=patterns,
            )
    except CollapsedComponentError:  # each candidate's own E-step names its own cell
        log_f = None
    if log_f is None:
        results = []
        for story, fit in pairs:
            try:
                R, log_lik = _e_step(story, fit, X, codes, row_weight, None, patterns)
            except CollapsedComponentError as error:
                results.append(error)
            else:
                results.append((log_lik, (R, fit), *_floor(story)))
    else:
        results = _stacked_posteriors(pairs, log_f, codes, row_weight)
    scored = [i for i, r in enumerate(results) if not isinstance(r, Exception)]
    if scored:  # the statistics of every responsibility matrix in one pass over the rows
        WR = np.hstack([results[i][1][0] for i in scored]) * row_weight[:, None]
        stats = cells.sufficient_statistics(X, WR)
        # a lone fit's product, not a slice of the wider one: BLAS rounds them apart
        counts = [column_sums(results[i][1][0] * row_weight[:, None]) for i in scored]
        # cell by cell, so each fit's slice is its own call's
        stats["counts"] = np.concatenate(counts)
        _, means, scatter = GaussianMixtureStory.moments(stats)
        start = 0
        for i, own in zip(scored, counts, strict=True):
            end = start + len(own)
            log_lik, expectation, *floor = results[i]
            moments = (own, means[start:end], scatter[start:end])
            results[i] = (log_lik, (*expectation, moments), *floor)
            start = end
    return results


def _stacked_posteriors(pairs, log_f, codes, row_weight):
    """The E-steps of ``pairs`` from the density ``log_f`` of all their cells side by side:
    one :func:`_posteriors` call for the fits of each number of cells."""
    results, widths = [None] * len(pairs), [len(fit.cell_class) for _, fit in pairs]
    starts = np.cumsum([0, *widths[:-1]])
    for width in dict.fromkeys(widths):
        mine = [i for i, w in enumerate(widths) if w == width]
        fits = [pairs[i][1] for i in mine]
        cell_class = np.stack([fit.cell_class for fit in fits])
        log_prior = np.take_along_axis(
            np.log(np.stack([fit.class_prior for fit in fits])), cell_class, axis=1
        )
        with np.errstate(divide="ignore"):
            joint = log_f[:, starts[mine][:, None] + np.arange(width)]
            joint = joint + np.log(np.stack([fit.weights for fit in fits]))
        R, log_liks = _posteriors(log_prior, cell_class, joint, codes, row_weight)
        for b, i in enumerate(mine):
            story, fit = pairs[i]
            results[i] = (float(log_liks[b]), (R[:, b], fit), *_floor(story))
    return results


def _solve_together(pending, results, owners):
    """The next warm M-step's covariances of the scored candidates of one group of cells with
    the same structure, G and settings, in one batched :func:`.mclust.covariances` call (a
    member's bits are its lone call's); a batch that fails leaves each member to its own
    M-step, which names its own error."""
    alike = {}
    for p, (index, fit) in enumerate(pending):
        story, caps = owners[index][1], owners[index][2]
        if isinstance(results[p], Exception) or story.em_prior is not None:
            continue
        if len(story.groups) == 1 and caps:
            key = (story.structures[0], np.shape(fit.covariances), caps[0])
            alike.setdefault(key, []).append(p)
    for (structure, _, cap), group in alike.items():
        if len(group) < 2:
            continue
        members = []
        for p in group:
            moments = results[p][1][2]
            if np.all(moments[0] > 0):  # a cell without rows: its own M-step names it
                members.append((p, moments, np.asarray(pending[p][1].covariances)))
        if len(members) < 2:
            continue
        try:
            with np.errstate(all="ignore"):
                solved = mclust.covariances(
                    structure,
                    np.stack([scatter for _, (_, _, scatter), _ in members]),
                    np.stack([counts for _, (counts, _, _), _ in members]),
                    tol=mclust.TOL,
                    max_iter=cap,
                    start=np.stack([start for _, _, start in members]),
                )
        except (ValueError, LinAlgError):
            continue
        for (p, _, _), sigma in zip(members, solved, strict=True):
            log_lik, expectation, *floor = results[p]
            results[p] = (log_lik, (*expectation, (cap, sigma)), *floor)


def fit_mixture(
    X,
    codes,
    num_components,
    structures,
    *,
    across_classes: bool = False,
    row_weight=None,
    observed=None,
    n_init: int = 1,
    random_state: int = 0,
    max_iter: int = 100,
    tol: float = 1e-8,
    start_from=None,
    prior=None,
    prior_step: str = "mstep",
    init: str = "hc",
) -> MixtureFit:
    """Fit class mixtures by EM (the partly labeled log-likelihood; see the module).

    Args:
        X, codes: (n, D) floats (NaN where ``observed`` is False); (n,) class codes, -1 unlabeled.
        num_components, structures: G_k per class; a structure name per class, or one name
            for all when ``across_classes`` (it constrains one component per class: EDDA).
        row_weight, observed: (n,) sample weights (unlabeled rows already scaled by their
            weight); (n, D) mask of observed cells (None: all observed).
        n_init, random_state: starts per class with several components, the best kept: the
            first from ``init``, the others from k-means seeded ``random_state + r`` (start r).
        max_iter, tol: EM's iterations and relative tolerance on the log-likelihood.
        start_from: (n, J) responsibilities of every row for the first M-step, the only start
            (e.g. :func:`split_start`); None: the starts of :data:`STARTS`.
        prior: None (maximum likelihood), or one hyperparameter dict per group of cells
            (:func:`.mclust_prior.default_prior`'s keys): MAP EM, mclust's M-steps under its prior.
        prior_step: which of mclust's MAP M-steps (:data:`.mclust_prior.STEPS`): ``"mstep"``
            (EDDA's, MclustSSC's) or ``"em"`` (MclustDA's within a class).
        init: how the labeled rows of a class split among its components at the first start:
            ``"hc"``, mclust's hierarchical agglomeration (deterministic; k-means past
            :data:`hc.MAX_ROWS` rows a class, and where its start collapses a component, which
            mclust reports as NA), or ``"kmeans"`` seeded ``random_state``.

    Raises:
        CollapsedComponentError: every start collapsed a component (named in the message).
    """
    X, codes, row_weight, observed = _rows(X, codes, row_weight, observed, init)
    story = _story(num_components, structures, across_classes, prior, prior_step)
    num_components, cell_class = tuple(int(g) for g in num_components), story.cell_class
    data = (X, codes, row_weight, observed)
    split = start_from is None and any(g > 1 for g in num_components)
    # (seed, how the classes split): the first from init, the others from seeded k-means
    plan = [(seed, init if seed == 0 else "kmeans") for seed in range(n_init if split else 1)]
    best, error = None, None
    unlabeled = bool(np.any((codes < 0) & (row_weight > 0)))
    for seed, how in plan:
        found = False
        R = None if start_from is None else np.asarray(start_from, dtype=np.float64)
        for start in STARTS if start_from is None else ("given",):
            fit = _blank(story, X.shape[1])
            try:
                if R is None:
                    R = _initial_responsibilities(
                        X, codes, row_weight, cell_class, observed, random_state + seed, how
                    )
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", RuntimeWarning)
                    fit = _run_em(story, fit, *data, R, max_iter=max_iter, tol=tol, start=start)
            except (CollapsedComponentError, np.linalg.LinAlgError) as caught:
                if not isinstance(caught, CollapsedComponentError):
                    caught = CollapsedComponentError(f"the fit failed: {caught}", -1, -1)
                error = error or caught
                if start != STARTS[-1] and unlabeled and R is not None:
                    continue  # this start cannot start it: the next start from every row
                break
            if not np.isfinite(fit.log_likelihood):
                error = error or CollapsedComponentError(
                    "the log-likelihood is not finite.", -1, -1
                )
            else:
                found = True
                if best is None or fit.log_likelihood > best.log_likelihood:
                    best = fit
            if start == "labeled":
                break
        if split and how == "hc" and not found:
            # a group of hc too small for the structure (mclust's NA): seeded k-means instead
            plan.append((seed, "kmeans"))
    if best is None:
        raise error
    return best


def fit_mixtures(X, codes, candidates, *, row_weight=None, observed=None, **settings):
    """:func:`fit_mixture` of each candidate ``(num_components, structures, prior)`` on the same
    rows, with its keywords (one structure per class: no ``across_classes``, no ``start_from``;
    ``settings``: :func:`fit_mixture_sets`'): a list of fits, or of the
    :class:`CollapsedComponentError` of a candidate that failed (:func:`fit_mixture_sets` of one
    row set)."""
    return fit_mixture_sets([(X, codes, candidates, row_weight, observed)], **settings)[0]


def fit_mixture_sets(
    sets,
    *,
    n_init: int = 1,
    random_state: int = 0,
    max_iter: int = 100,
    tol: float = 1e-8,
    prior_step: str = "mstep",
    init: str = "hc",
):
    """:func:`fit_mixtures` of several row sets ``(X, codes, candidates, row_weight,
    observed)`` (e.g. MclustDA's classes), a list of results per set.

    Labeled complete rows and one start: the candidates' EMs, of every set, run in lockstep, their
    E-steps a round at a time and the warm M-steps of candidates alike (one structure and G, each
    on its own rows) in one batched call (:func:`_lockstep_e_steps`); a candidate that fails
    there is fitted again alone, so every fit and every error is :func:`fit_mixture`'s."""
    prepared, results, programs, owners, slots = [], [], [], [], []
    for s, (X, codes, candidates, row_weight, observed) in enumerate(sets):
        X, codes, row_weight, observed = _rows(X, codes, row_weight, observed, init)
        prepared.append((X, codes, row_weight, observed))
        results.append([None] * len(candidates))
        if observed is not None or n_init != 1 or np.any((codes < 0) & (row_weight > 0)):
            continue
        for i, (num_components, structures, prior) in enumerate(candidates):
            story = _story(num_components, structures, False, prior, prior_step)
            try:
                R = _initial_responsibilities(
                    X, codes, row_weight, story.cell_class, None, random_state, init
                )
            except CollapsedComponentError:
                continue  # fit_mixture's other starts
            fit, caps = _blank(story, X.shape[1]), []
            args = (story, fit, X, codes, row_weight, None, R, max_iter, tol, "labeled", caps)
            programs.append(_em_program(*args))
            owners.append((s, story, caps))
            slots.append((s, i))
    if programs:
        complete = [
            (X, codes, w, _patterns(np.ones(X.shape, dtype=bool))) for X, codes, w, _ in prepared
        ]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            outcomes = run_in_lockstep(programs, _lockstep_e_steps(complete, owners))
        for (s, i), outcome in zip(slots, outcomes, strict=True):
            if isinstance(outcome, MixtureFit) and np.isfinite(outcome.log_likelihood):
                results[s][i] = outcome
            elif not isinstance(outcome, (MixtureFit, CollapsedComponentError, LinAlgError)):
                raise outcome
    for s, (X, codes, row_weight, observed) in enumerate(prepared):
        settings = dict(
            row_weight=row_weight, observed=observed, n_init=n_init, random_state=random_state,
            max_iter=max_iter, tol=tol, prior_step=prior_step, init=init,
        )  # fmt: skip
        for i, (components, structures, prior) in enumerate(sets[s][2]):
            if results[s][i] is None:  # alone: fit_mixture's starts, fallbacks and errors
                try:
                    fit = fit_mixture(X, codes, components, structures, prior=prior, **settings)
                except CollapsedComponentError as error:
                    fit = error
                results[s][i] = fit
    return results


def _rows(X, codes, row_weight, observed, init):
    """The rows as the fits take them: float64, NaN cells 0 under ``observed`` (None if all)."""
    if init not in ("hc", "kmeans"):
        raise ValueError(f"init must be 'hc' or 'kmeans'; got {init!r}.")
    X = np.asarray(X, dtype=np.float64)
    codes = np.asarray(codes, dtype=int)
    row_weight = np.ones(len(X)) if row_weight is None else np.asarray(row_weight, dtype=np.float64)
    if observed is not None:
        observed = np.asarray(observed, dtype=bool)
        X = np.where(observed, X, 0.0)
        if observed.all():
            observed = None
    return X, codes, row_weight, observed


def _story(num_components, structures, across_classes, prior, prior_step):
    """The story of G_k components a class, a structure per class (or one across classes)."""
    num_components = tuple(int(g) for g in num_components)
    structures = (structures,) if isinstance(structures, str) else tuple(structures)
    cell_class = np.repeat(np.arange(len(num_components)), num_components)
    if across_classes:
        if any(g != 1 for g in num_components):
            raise ValueError("a structure across classes needs one component per class (EDDA).")
        structures, groups = structures[:1], (tuple(range(len(cell_class))),)
    else:
        groups = tuple(tuple(np.flatnonzero(cell_class == k)) for k in range(len(num_components)))
    return GaussianMixtureStory(
        cell_class, structures, groups, em_prior=prior, em_prior_step=prior_step
    )


def _blank(story, num_features):
    """The fit EM starts from: its first M-step sets every number."""
    K, J, D = story.num_classes, len(story.cell_class), num_features
    return MixtureFit(
        class_prior=np.full(K, 1.0 / K),
        weights=np.ones(J),
        means=np.zeros((J, D)),
        covariances=np.broadcast_to(np.eye(D), (J, D, D)),
        cell_class=np.asarray(story.cell_class),
        structures=story.structures,
        groups=story.groups,
    )


def split_start(X, class_responsibilities, num_components, row_weight, seed=0):
    """Responsibilities (n, J) of every row: a one-component fit's class responsibilities
    (n, K), each class's share split among its ``num_components[k]`` by weighted k-means."""
    from sklearn.cluster import KMeans

    R1 = np.asarray(class_responsibilities, dtype=np.float64)
    X = np.where(np.isnan(X), np.nanmean(X, axis=0), X)  # missing cells: a start needs no more
    cell_class = np.repeat(np.arange(len(num_components)), num_components)
    R = np.zeros((R1.shape[0], len(cell_class)))
    for k, G in enumerate(num_components):
        cells, share = np.flatnonzero(cell_class == k), R1[:, k] * row_weight
        rows = np.flatnonzero(share > 1e-8 * share.max())
        if G == 1 or len(rows) < G:  # too few rows to split: the first M-step says which
            R[:, cells[0]] = R1[:, k]
            continue
        labels = KMeans(G, n_init=1, random_state=seed).fit_predict(
            X[rows], sample_weight=share[rows]
        )
        R[rows, cells[labels]] = R1[rows, k]
    return R


def mixture_log_likelihood(fit: MixtureFit, X, row_weight=None, observed=None) -> float:
    """``sum_i w_i log sum_k pi_k p(x_i | k)``: the mixture log-likelihood (mclust's BIC's)."""
    story = GaussianMixtureStory(fit.cell_class, fit.structures, fit.groups)
    w = np.ones(len(X)) if row_weight is None else row_weight
    return _e_step(story, fit, X, np.full(len(X), -1), w, observed)[1]


def icl_penalty(responsibilities, row_weight=None) -> float:
    """``sum_i w_i log max_j z_ij`` (<= 0): ICL's term added to BIC's log-likelihood."""
    R = np.asarray(responsibilities)
    top = R.max(axis=1)
    w = np.ones(len(top)) if row_weight is None else row_weight
    keep = w > 0
    return float(np.sum(w[keep] * np.log(np.maximum(top[keep], np.finfo(float).tiny))))
