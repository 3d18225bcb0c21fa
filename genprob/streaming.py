"""Fits beyond one process's memory: chunk streams and Parquet, by adding sufficient statistics.

A closed-form story fits from statistics that add over rows, so a fit can read the rows chunk by
chunk: each chunk's statistics come from the jitted :func:`genprob.core.sufficient_statistics`
and are combined (:func:`genprob.core.combine_statistics`); the closed-form M-step runs on the
total. Memory is bounded by the chunk size, whatever the number of rows.

Inputs (given to an estimator's ``fit`` in place of ``X``, with ``y=None``):

* an iterator of ``(X, y)`` or ``(X, y, sample_weight)`` chunks (one pass only: labeled data, or
  ``classes=`` given and no unlabeled row), or :class:`Chunks` wrapping a list of chunks or a
  function returning a fresh iterator (re-readable: EM and the label pass need several passes);
* :func:`parquet` (or a path ending in ``.parquet``/``.pq``, or a directory of such files, with
  ``target=`` given to :func:`parquet`): a pyarrow dataset read batch by batch, only the needed
  columns;
* Dask collections (:mod:`genprob.distributed`), reached by the same ``fit``.

Labels. The classes must be known before the statistics are added: pass ``classes=`` (as for
``partial_fit``), or give a re-readable source and a first pass collects them from the label
column alone (Parquet reads only that column). A chunk holding a label outside ``classes`` raises.

Unlabeled rows (``y = -1``) are fitted by EM as in memory: the first pass gives the labeled fit,
then every iteration is one pass that adds, per chunk, the statistics of the E-step
responsibilities and the objective at the current parameters. EM starts from the labeled fit
(``n_init=1``, every class needs a labeled row); ``label_distributions_`` and
``transduction_`` (one value per row) are not kept.

Stories whose statistics do not add over rows refuse (:func:`check_additive`).
"""

from __future__ import annotations

import os
import sys
import time
import warnings
from collections.abc import Callable, Iterable, Iterator

import jax
import jax.numpy as jnp
import numpy as np
from sklearn.exceptions import ConvergenceWarning

from genprob import core, execution
from genprob import em as _em
from genprob._dtype import numpy_dtype, precision
from genprob._validation import check_unlabeled_label_type, unlabeled_mask

__all__ = [
    "Chunks",
    "ParquetSource",
    "parquet",
    "check_additive",
    "adds_over_rows",
    "is_out_of_core",
    "fit",
    "ProgressBar",
]

_PARQUET_SUFFIXES = (".parquet", ".pq")


# -- which stories stream --------------------------------------------------------------------------
def adds_over_rows(story) -> bool:
    """Whether the story's statistics add over rows (its ``adds_over_rows``, else closed form)."""
    return bool(getattr(story, "adds_over_rows", story.has_closed_form))


def check_additive(story, estimator=None) -> None:
    """Raise ``ValueError`` naming the reason when ``story`` cannot be fitted chunk by chunk."""
    name = type(story).__name__
    if not story.has_closed_form:
        raise ValueError(
            f"{name} has no closed form (no sufficient statistics): a streaming or distributed "
            f"fit adds statistics over chunks. Fit it in memory with fit(X, y)."
        )
    if not adds_over_rows(story):
        raise ValueError(
            f"{name}'s statistics do not add over rows (adds_over_rows is False), so chunks "
            f"cannot be fitted separately and combined. Fit it in memory with fit(X, y)."
        )
    if estimator is not None and hasattr(estimator, "_check_partial_fit_supported"):
        # options of the estimator whose statistics do not combine (data-dependent shrinkage, custom
        # covariance estimators) say so in the same words as partial_fit
        estimator._check_partial_fit_supported(story)


# -- sources ---------------------------------------------------------------------------------------
def _as_chunk(item):
    """``(X, y, w)`` from a ``(X, y)`` or ``(X, y, w)`` item; bad items raise naming the shape."""
    if not isinstance(item, tuple) or len(item) not in (2, 3):
        raise ValueError(
            f"a chunk must be a tuple (X, y) or (X, y, sample_weight); got "
            f"{type(item).__name__}{'' if not isinstance(item, tuple) else f' of {len(item)}'}."
        )
    X, y = item[0], item[1]
    w = item[2] if len(item) == 3 else None
    if y is None:
        raise ValueError("a chunk's y is None: every chunk needs its labels (-1 for unlabeled).")
    return X, np.asarray(y), w


class Chunks:
    """A re-readable source of ``(X, y[, sample_weight])`` chunks.

    Args:
        chunks: a list/tuple of chunks, or a function of no argument returning a fresh iterator
            of chunks (read once per pass).
    """

    def __init__(self, chunks: Iterable | Callable[[], Iterator]):
        if not callable(chunks) and not isinstance(chunks, (list, tuple)):
            raise TypeError(
                "Chunks takes a list of chunks or a function returning a fresh iterator; a "
                "one-shot iterator can be passed to fit directly (one pass only)."
            )
        self._chunks = chunks
        self.reiterable = True

    def chunks(self):
        items = self._chunks() if callable(self._chunks) else self._chunks
        for item in items:
            yield _as_chunk(item)

    def labels(self):
        for _, y, _ in self.chunks():
            yield y


class _OneShot:
    """A one-shot iterator of chunks (read once)."""

    reiterable = False

    def __init__(self, iterator):
        self._iterator = iterator
        self._used = False

    def chunks(self):
        if self._used:
            raise ValueError(
                "this fit needs another pass over the data, but the chunks came from a one-shot "
                "iterator. Wrap a list or a function returning a fresh iterator in "
                "genprob.streaming.Chunks, or read from Parquet."
            )
        self._used = True
        for item in self._iterator:
            yield _as_chunk(item)


class ParquetSource:
    """A Parquet file or directory read batch by batch through a pyarrow dataset.

    Args:
        path: a ``.parquet`` file or a directory of them.
        target: the label column (-1, or a missing value, marks an unlabeled row).
        features: feature columns (default: every column but ``target`` and ``weight``).
        weight: optional column of sample weights.
        batch_size: rows per batch read (the chunk size; memory is proportional to it).
    """

    reiterable = True
    #: The label a missing (null) target becomes: the fitted estimator's unlabeled marker.
    unlabeled_label = -1

    def __init__(self, path, target: str, features=None, weight=None, batch_size: int = 262_144):
        import pyarrow.dataset as ds

        path = os.fspath(path)
        if not os.path.exists(path):
            raise ValueError(f"no Parquet file or directory at {path}.")
        if not target:
            raise ValueError("target= (the label column) is required to fit on Parquet.")
        self.path, self.target, self.weight = path, target, weight
        self.batch_size = int(batch_size)
        if self.batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size!r}.")
        self.dataset = ds.dataset(path, format="parquet")
        names = list(self.dataset.schema.names)
        for column in (target, weight):
            if column is not None and column not in names:
                raise ValueError(
                    f"column {column!r} is not in {path}; columns: {', '.join(names)}."
                )
        if features is None:
            features = [n for n in names if n not in (target, weight)]
        missing = [c for c in features if c not in names]
        if missing:
            raise ValueError(f"feature columns {missing} are not in {path}.")
        for role, column in (("target", target), ("weight", weight)):
            if column is not None and column in features:
                raise ValueError(f"features= includes the {role} column {column!r}: drop it.")
        if not features:
            raise ValueError(f"{path} has no feature columns besides {target!r}.")
        self.features = list(features)
        self.num_rows = self.dataset.count_rows()

    def _labels_of(self, column):
        import pyarrow as pa
        import pyarrow.compute as pc

        if not column.null_count:
            return column.to_numpy(zero_copy_only=False)
        # a missing label marks an unlabeled row, as in the CLI
        marker = self.unlabeled_label
        if marker is None:
            raise ValueError(
                f"the label column {self.target!r} has {column.null_count} missing values, but "
                f"unlabeled_label=None says every row is labeled."
            )
        numeric = pa.types.is_integer(column.type) or pa.types.is_floating(column.type)
        if numeric and not isinstance(marker, str):
            return pc.fill_null(column, marker).to_numpy(zero_copy_only=False)
        values = np.asarray(column.to_pylist(), dtype=object)
        values[np.asarray(column.is_null().to_numpy(zero_copy_only=False))] = marker
        return values

    def _batches(self, columns):
        # Arrow's threaded scan reads ahead of a slower consumer without a bound that holds in
        # practice (1.4 GiB of decoded batches at 250,000 rows measured): read in this thread.
        return self.dataset.to_batches(
            columns=columns,
            batch_size=self.batch_size,
            batch_readahead=2,
            fragment_readahead=1,
            use_threads=False,
        )

    def chunks(self):
        columns = self.features + [self.target] + ([self.weight] if self.weight else [])
        for batch in self._batches(columns):
            if batch.num_rows == 0:
                continue
            X = batch.select(self.features).to_pandas()
            y = self._labels_of(batch.column(self.target))
            w = None
            if self.weight:
                w = batch.column(self.weight).to_numpy(zero_copy_only=False).astype(np.float64)
            yield X, y, w

    def labels(self):
        for batch in self._batches([self.target]):
            yield self._labels_of(batch.column(self.target))


def parquet(path, target: str, features=None, weight=None, batch_size: int = 262_144):
    """A Parquet source for ``fit`` (see :class:`ParquetSource`)."""
    return ParquetSource(path, target, features=features, weight=weight, batch_size=batch_size)


def _is_parquet_path(X) -> bool:
    if not isinstance(X, (str, os.PathLike)):
        return False
    path = os.fspath(X)
    return path.endswith(_PARQUET_SUFFIXES) or os.path.isdir(path)


def is_dask_collection(X) -> bool:
    """Whether ``X`` is a Dask collection (checked without importing Dask)."""
    return type(X).__module__.split(".")[0] in ("dask", "dask_expr") and hasattr(X, "dask")


def is_out_of_core(X) -> bool:
    """Whether ``fit`` should take the streaming/distributed path for ``X``."""
    if isinstance(X, (Chunks, ParquetSource, _OneShot)) or is_dask_collection(X):
        return True
    return _is_parquet_path(X) or isinstance(X, Iterator)


def _source(X, y, sample_weight):
    if isinstance(X, (Chunks, ParquetSource, _OneShot)):
        source = X
    elif _is_parquet_path(X):
        raise ValueError(
            f"fit on the Parquet data {os.fspath(X)!r} needs the label column: pass "
            f"genprob.streaming.parquet({os.fspath(X)!r}, target='label')."
        )
    else:
        source = _OneShot(X)
    if y is not None or sample_weight is not None:
        raise ValueError(
            "with chunked or Parquet input, labels and weights travel in the chunks: pass y=None "
            "and no sample_weight (chunks are (X, y) or (X, y, sample_weight) tuples)."
        )
    return source


# -- progress --------------------------------------------------------------------------------------
class ProgressBar:
    """Rows done, rows/s and ETA on one line of ``stream`` (a terminal); silent elsewhere."""

    def __init__(self, total=None, stream=None, label="fit", enabled=None):
        self.stream = stream or sys.stderr
        self.total, self.label, self.done = total, label, 0
        self.enabled = self.stream.isatty() if enabled is None else enabled
        self.start = time.perf_counter()
        self.passes = 0

    def new_pass(self, label):
        self.label, self.done, self.start = label, 0, time.perf_counter()

    def update(self, rows: int):
        self.done += rows
        if not self.enabled:
            return
        elapsed = max(time.perf_counter() - self.start, 1e-9)
        rate = self.done / elapsed
        text = f"\r{self.label}: {self.done:,} rows, {rate:,.0f} rows/s"
        if self.total:
            remaining = max(self.total - self.done, 0) / max(rate, 1e-9)
            text += f", {100 * self.done / self.total:.0f}%, ETA {remaining:.0f} s"
        self.stream.write(text + "   ")
        self.stream.flush()

    def close(self):
        if self.enabled:
            self.stream.write("\n")
            self.stream.flush()


# -- per-chunk work (also run on Dask workers) -----------------------------------------------------
def label_codes(estimator, y):
    """Codes 0..K-1 of ``y`` in ``classes_``, -1 on unlabeled rows; unknown labels raise.

    Numeric labels take a vectorized path (a chunk of a million labels in milliseconds); other
    labels go through the estimator's own encoder.
    """
    y = np.asarray(y)
    unlabeled = estimator._unlabeled_rows(y)
    classes = estimator.classes_
    if y.dtype.kind not in "iuf" or classes.dtype.kind not in "iuf":
        return estimator._label_codes(y, unlabeled)
    codes = np.minimum(np.searchsorted(classes, y), len(classes) - 1)
    known = classes[codes] == y
    if not np.all(known | unlabeled):
        return estimator._label_codes(y, unlabeled)  # raises, naming the unknown labels
    return np.where(unlabeled, -1, codes).astype(np.int32)


def em_chunk(estimator, X, y, w):
    """``(stats, objective, rows)`` of one chunk at the estimator's current parameters.

    ``stats`` is None for an empty chunk. Runs wherever the chunk lives (the driver or a Dask
    worker); the features go through the estimator's own prediction-time checks.
    """
    if X.shape[0] == 0:
        return None, 0.0, 0
    y = np.asarray(y)
    Xv = estimator._check_X(X)
    if y.shape != (Xv.shape[0],):
        raise ValueError(f"a chunk has {Xv.shape[0]} rows of X but y has shape {y.shape}.")
    codes = label_codes(estimator, y)
    weights = _chunk_weights(w, Xv.shape[0])
    weights = np.ones(Xv.shape[0]) if weights is None else weights
    unlabeled_weight = float(getattr(estimator, "unlabeled_weight", 1.0))
    row_weights = np.where(codes >= 0, weights, unlabeled_weight * weights)
    with precision(estimator._dtype):
        # sparse rows as the estimator scores them in compiled code (BCOO)
        Xj = estimator._as_array(Xv)
        stats, objective = execution.em_statistics(
            estimator.story_, estimator._params_jax(), Xj, codes, row_weights
        )
        stats = jax.tree_util.tree_map(np.asarray, stats)
        return stats, float(objective), int(Xv.shape[0])


def _chunk_weights(w, num_rows):
    if w is None:
        return None
    w = np.asarray(w, dtype=np.float64)
    if w.shape != (num_rows,) or np.any(w < 0) or not np.all(np.isfinite(w)):
        raise ValueError(
            f"a chunk's sample_weight must be finite, non-negative and of shape ({num_rows},); "
            f"got shape {w.shape}."
        )
    return w


def add_contexts(a: dict, b: dict) -> dict:
    """Two chunks' fit-time contexts together: values (numbers, or nested dicts of them, as in
    a mixed story's per-block contexts) are sums over rows and add key by key."""
    added = {}
    for key in {**a, **b}:
        first, second = a.get(key), b.get(key)
        if isinstance(first if first is not None else second, dict):
            added[key] = add_contexts(first or {}, second or {})
        else:
            added[key] = (first or 0) + (second or 0)
    return added


def combine(story, dtype, a, b):
    """Sum of two ``(stats, objective, rows)`` partial results (an empty side is None)."""
    if a[0] is None:
        return b
    if b[0] is None:
        return a
    with precision(dtype):
        stats = core.combine_statistics(
            story,
            jax.tree_util.tree_map(jnp.asarray, a[0]),
            jax.tree_util.tree_map(jnp.asarray, b[0]),
        )
        stats = jax.tree_util.tree_map(np.asarray, stats)
    return stats, a[1] + b[1], a[2] + b[2]


def _fold(source, estimator, progress=None):
    """Sequential map-reduce of :func:`em_chunk` over a chunk source."""
    total = (None, 0.0, 0)
    for X, y, w in source.chunks():
        part = em_chunk(estimator, X, y, w)
        total = combine(estimator.story_, estimator._dtype, total, part)
        if progress is not None:
            progress.update(part[2])
    return total


# -- the fit ---------------------------------------------------------------------------------------
_RESET = (
    "n_iter_",
    "converged_",
    "log_likelihood_trace_",
    "label_distributions_",
    "transduction_",
    "stats_",
    "_pending_reason",
    "params_",
    "story_",
    "classes_",
)


def reset(estimator):
    """Forget a previous fit (``fit`` starts afresh, as in memory)."""
    for name in _RESET:
        estimator.__dict__.pop(name, None)


def collect_classes(labels: Iterable, unlabeled_label=-1) -> np.ndarray:
    """Sorted distinct labels, the unlabeled marker excluded, from an iterable of label arrays."""
    seen = None
    for y in labels:
        y = np.asarray(y)
        check_unlabeled_label_type(y, unlabeled_label)
        values = np.unique(y[~unlabeled_mask(y, unlabeled_label)])
        seen = values if seen is None else np.union1d(seen, values)
    if seen is None or seen.size == 0:
        raise ValueError(
            f"no labeled row (every y is {unlabeled_label!r}): pass classes=[...] to name the "
            f"classes of an unsupervised fit."
        )
    return seen


def labeled_pass(estimator, chunks: Iterable, classes, progress=None):
    """Pass 1: the story and the labeled statistics, by the estimator's own ``partial_fit``.

    Unlabeled rows enter with weight 0 (they add nothing to the statistics, but the story sees
    them, as ``fit`` sees every row). Returns ``(rows, unlabeled rows)``.
    """
    rows = unlabeled_rows = 0
    with warnings.catch_warnings():
        # early chunks may miss a class; the final statistics are checked below
        warnings.filterwarnings("ignore", message="partial_fit kept the chunk")
        for X, y, w in chunks:
            num_rows = np.shape(X)[0]
            if num_rows == 0:
                continue
            y = np.asarray(y)
            if y.shape != (num_rows,):
                raise ValueError(f"a chunk has {num_rows} rows of X but y has shape {y.shape}.")
            unlabeled = estimator._unlabeled_rows(y)
            w = np.ones(num_rows) if w is None else _chunk_weights(w, num_rows)
            if unlabeled.any():
                y = y.copy() if y.dtype.kind != "O" else y.astype(object)
                y[unlabeled] = classes[0]
                w = np.where(unlabeled, 0.0, w)
            first = not hasattr(estimator, "stats_")
            if first:
                _check_given_story(estimator)
            estimator.partial_fit(X, y, classes=classes, sample_weight=w)
            if first:
                check_additive(estimator.story_, estimator)
            rows += num_rows
            unlabeled_rows += int(unlabeled.sum())
            if progress is not None:
                progress.update(num_rows)
    if rows == 0:
        raise ValueError("the data has no rows: every chunk is empty.")
    return rows, unlabeled_rows


def _check_given_story(estimator):
    """A user story given to the estimator is checked before any chunk is read."""
    from genprob.story import Story

    story = getattr(estimator, "story", None)
    if isinstance(story, Story):
        check_additive(story, estimator)


def finish_labeled(estimator):
    """After pass 1: parameters must exist (else the reason why not, as an error)."""
    if not hasattr(estimator, "params_"):
        reason = getattr(estimator, "_pending_reason", "not enough data")
        reset(estimator)
        raise ValueError(f"the streamed data do not determine the parameters: {reason}")


def run_em(estimator, one_pass, num_unlabeled: int):
    """EM from the labeled fit; ``one_pass()`` returns ``(stats, objective, rows)`` of all data.

    Mirrors :func:`genprob.fit_em` (same objective, stopping rule and final statistics) with one
    pass over the data per iteration: the pass at parameters θ_t gives both F(θ_t) and the
    statistics of the E-step that the next M-step needs.
    """
    options = estimator._em_options()
    if options["n_init"] != 1:
        raise ValueError(
            f"a streaming or distributed EM fit starts from the labeled fit only; n_init must "
            f"be 1, got {options['n_init']}."
        )
    story = estimator.story_
    counts = np.asarray(estimator.stats_["class_counts"])
    absent = estimator.classes_[counts <= 0]
    if absent.size and num_unlabeled and options["unlabeled_weight"] > 0:
        raise ValueError(
            f"classes {absent.tolist()} have no labeled row: a streaming EM fit starts from the "
            f"labeled fit, which needs a labeled row of every class."
        )
    class_prior, fit_prior = estimator._class_prior_argument()
    dtype = estimator._dtype
    params, stats = estimator.params_, estimator.stats_
    value, trace, n_iter, converged = -np.inf, [], 1, False
    # nothing to impute (λ = 0): the labeled fit is the answer, as in memory
    nothing_to_impute = options["unlabeled_weight"] == 0
    max_iter = 1 if nothing_to_impute else options["max_iter"]
    final = None
    while True:
        estimator.params_ = params  # the pass (on workers too) scores with these
        new_stats, objective, _ = one_pass()
        with precision(dtype):
            penalty = float(
                story.log_penalty(
                    {k: jnp.asarray(v) for k, v in params.items()},
                    jax.tree_util.tree_map(jnp.asarray, stats["emission"]),
                )
            )
        objective += penalty
        trace.append(objective)
        finite = np.isfinite(objective) and all(np.all(np.isfinite(v)) for v in params.values())
        if not finite:
            if final is None:
                raise ValueError(
                    "EM degenerated at its first step (the objective or the parameters are "
                    "not finite): regularize the story or label more rows."
                )
            break
        # the change of the mean per-row objective (the E-step's soft counts sum to the weight)
        total = max(float(np.sum(np.asarray(new_stats["class_counts"]))), np.finfo(float).tiny)
        converged = bool(
            _em.em_converged(objective, value, total, options["tol"], np.finfo(dtype).eps)
        )
        value, final = objective, (params, new_stats)
        if converged or n_iter >= max_iter:
            break
        stats = new_stats
        with precision(dtype):
            new = core.maximize(
                story,
                jax.tree_util.tree_map(estimator._as_array, stats),
                class_prior,
                fit_prior,
            )
            params = {k: np.asarray(v) for k, v in new.items()}
        n_iter += 1
    params, final_stats = final
    converged = converged or nothing_to_impute
    estimator.params_ = params
    estimator.n_iter_ = n_iter
    estimator.converged_ = bool(converged)
    estimator.log_likelihood_trace_ = np.asarray(trace, dtype=numpy_dtype(dtype))
    estimator._set_fitted_attributes(final_stats)
    estimator._check_parameters()
    estimator.stats_ = final_stats
    if not converged:
        warnings.warn(
            f"EM did not converge in max_iter={options['max_iter']} iterations (change of the "
            f"mean per-row objective above em_tol={options['tol']}); raise max_iter.",
            ConvergenceWarning,
            stacklevel=3,
        )
    return estimator


def fit(estimator, X, y=None, *, sample_weight=None, classes=None, progress=None):
    """Fit ``estimator`` on out-of-core data (chunks, Parquet or a Dask collection).

    Equals ``estimator.fit`` on all the rows in memory (to rounding); see the module docstring.

    Args:
        estimator: a genprob estimator whose story's statistics add over rows.
        X: chunk iterator, :class:`Chunks`, :func:`parquet` source, or Dask collection.
        y: None for chunks/Parquet; the Dask labels for a Dask ``X``.
        sample_weight: None for chunks/Parquet; optional Dask weights for a Dask ``X``.
        classes: every class label (needed with a one-shot iterator; else collected in a first
            pass over the labels).
        progress: a :class:`ProgressBar`, or None.

    Returns:
        The fitted estimator.
    """
    if is_dask_collection(X):  # the estimator hands it to genprob.distributed
        return estimator.fit(X, y, sample_weight=sample_weight, classes=classes)
    source = _source(X, y, sample_weight)
    estimator._validate_params()
    if isinstance(source, ParquetSource):
        source.unlabeled_label = estimator._unlabeled_label
    reset(estimator)
    if classes is None:
        if not source.reiterable:
            raise ValueError(
                "fitting on a one-shot iterator of chunks needs classes=[...] (every class "
                "label, as for partial_fit): the classes must be known before the first chunk. "
                "Or wrap the chunks in genprob.streaming.Chunks (re-readable): then a first "
                "pass collects the labels."
            )
        classes = collect_classes(source.labels(), estimator._unlabeled_label)
    if progress is not None:
        progress.new_pass("fit: labeled pass")
    rows, unlabeled_rows = labeled_pass(estimator, source.chunks(), classes, progress)
    finish_labeled(estimator)
    if unlabeled_rows == 0:
        return _check_classes_observed(estimator)
    if not source.reiterable and unlabeled_rows:
        reset(estimator)
        raise ValueError(
            f"{unlabeled_rows} rows are unlabeled (y = {estimator._unlabeled_label!r}): EM needs "
            f"one pass over the data per iteration, but the chunks came from a one-shot "
            f"iterator. Wrap a list or a function returning a fresh iterator in "
            f"genprob.streaming.Chunks, or read from Parquet."
        )
    passes = [0]

    def one_pass():
        passes[0] += 1
        if progress is not None:
            progress.new_pass(f"fit: EM pass {passes[0]}")
        return _fold(source, estimator, progress)

    return run_em(estimator, one_pass, unlabeled_rows)


def _check_classes_observed(estimator):
    """A fully labeled fit needs labeled mass in every class (else no unlabeled row learns it)."""
    absent = estimator.classes_[np.asarray(estimator.stats_["class_counts"]) <= 0]
    if absent.size:
        reset(estimator)
        raise ValueError(
            f"classes {absent.tolist()} have no labeled row (with positive weight), and no "
            f"unlabeled row is left to learn them from."
        )
    return estimator
