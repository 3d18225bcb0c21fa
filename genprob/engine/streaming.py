"""Fits beyond one process's memory: chunk streams and Parquet, by adding sufficient statistics
(one pass per EM iteration; docs/scaling.md)."""

from __future__ import annotations

import copy
import os
import sys
import time
import warnings
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from functools import partial

import numpy as np

from genprob import core
from genprob._lazy import LazyModule
from genprob.engine._dtype import numpy_dtype, precision
from genprob.engine._labels import check_unlabeled_label, check_unlabeled_label_type, unlabeled_mask
from genprob.engine._validation import check_sample_weight, validate_params
from genprob.engine.capabilities import chunk_refusal
from genprob.engine.em import run_statistics_em
from genprob.engine.em_driver import warn_decrease, warn_max_iter
from genprob.story import Story

jax = LazyModule("jax")
jnp = LazyModule("jax.numpy")

__all__ = [
    "ChunkStatistics",
    "Chunks",
    "ParquetSource",
    "parquet",
    "check_additive",
    "is_out_of_core",
    "fit",
    "fit_or_keep",
    "combine",
    "ProgressBar",
]

_PARQUET_SUFFIXES = (".parquet", ".pq")


# -- which stories stream --------------------------------------------------------------------------
def check_additive(story) -> None:
    """Raise ``ValueError`` naming the reason when ``story`` cannot be fitted chunk by chunk."""
    if reason := chunk_refusal(story):
        raise ValueError(
            f"{reason}: a streaming or distributed fit adds statistics over chunks. Fit it in "
            f"memory with fit(X, y)."
        )


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


class _OneShot(Chunks):
    """A one-shot iterator of chunks (read once)."""

    reiterable = False

    def __init__(self, iterator):
        self._chunks, self._used = iterator, False

    def chunks(self):
        if self._used:
            raise ValueError(
                "this fit needs another pass over the data (EM over unlabeled rows makes one per "
                "iteration), but the chunks came from a one-shot iterator. Wrap a list or a "
                "function returning a fresh iterator in genprob.streaming.Chunks, or read from "
                "Parquet."
            )
        self._used = True
        yield from super().chunks()


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
        if features is None:
            features = [n for n in names if n not in (target, weight)]
        for role, column in (("target", target), ("weight", weight)):
            if column is not None and column not in names:
                raise ValueError(
                    f"column {column!r} is not in {path}; columns: {', '.join(names)}."
                )
            if column is not None and column in features:
                raise ValueError(f"features= includes the {role} column {column!r}: drop it.")
        missing = [c for c in features if c not in names]
        if missing:
            raise ValueError(f"feature columns {missing} are not in {path}.")
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
        # Arrow's threaded scan reads ahead of a slow consumer without bound: read in this thread
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


#: A Parquet source for ``fit``.
parquet = ParquetSource


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
    if isinstance(X, (Chunks, ParquetSource)) or is_dask_collection(X):
        return True
    return _is_parquet_path(X) or isinstance(X, Iterator)


# -- progress --------------------------------------------------------------------------------------
class ProgressBar:
    """Rows done, rows/s and ETA on one line of ``stream`` (a terminal); silent elsewhere."""

    def __init__(self, total=None, stream=None, label="fit", enabled=None):
        self.stream = stream or sys.stderr
        self.total, self.label, self.done = total, label, 0
        self.enabled = self.stream.isatty() if enabled is None else enabled
        self.start = time.perf_counter()

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
@dataclass(frozen=True)
class ChunkStatistics:
    """Sufficient statistics of a chunk of rows (an estimator's ``chunk_statistics``), added
    by :func:`combine`: ``stats`` as NumPy arrays (None for no rows), the rows' weighted
    ``log_likelihood`` (an E-step's), and the additive ``context`` the story is built from."""

    story: object
    dtype: str
    stats: dict | None
    log_likelihood: float = 0.0
    rows: int = 0
    unlabeled_rows: int = 0
    context: dict = field(default_factory=dict)


#: A chunk's ``sample_weight`` (None stays None) is checked as a fit's.
chunk_weights = check_sample_weight


def add_contexts(a: dict, b: dict) -> dict:
    """Two chunks' fit-time contexts (sums over rows, nested dicts too) added key by key."""
    added = {}
    for key in {**a, **b}:
        first, second = a.get(key), b.get(key)
        if isinstance(first if first is not None else second, dict):
            added[key] = add_contexts(first or {}, second or {})
        else:
            added[key] = (first or 0) + (second or 0)
    return added


def combine(a: ChunkStatistics | None, b: ChunkStatistics | None) -> ChunkStatistics | None:
    """Two chunks' :class:`ChunkStatistics` added; None when either is (the story changed)."""
    if a is None or b is None:
        return None
    if a.stats is None or b.stats is None:
        stats = b.stats if a.stats is None else a.stats
    else:
        with precision(a.dtype):
            stats = core.combine_statistics(
                a.story,
                jax.tree_util.tree_map(jnp.asarray, a.stats),
                jax.tree_util.tree_map(jnp.asarray, b.stats),
            )
            stats = jax.tree_util.tree_map(np.asarray, stats)
    return ChunkStatistics(
        a.story,
        a.dtype,
        stats,
        a.log_likelihood + b.log_likelihood,
        a.rows + b.rows,
        a.unlabeled_rows + b.unlabeled_rows,
        add_contexts(a.context, b.context),
    )


# -- the fit ---------------------------------------------------------------------------------------
_RESET = (
    "n_iter_",
    "converged_",
    "log_likelihood_trace_",
    "label_distributions_",
    "transduction_",
    "stats_",
    "params_",
    "story_",
    "classes_",
)


def reset(estimator):
    """Forget a previous fit (``fit`` starts afresh, as in memory)."""
    state = vars(estimator)
    for name in _RESET:
        state.pop(name, None)


def fit_or_keep(estimator, fit: Callable):
    """``fit(work)`` on a fresh copy of ``estimator``, whose state it takes when ``fit`` returns."""
    work = copy.copy(estimator)  # shallow: the fit rebinds attributes, it mutates none
    reset(work)
    fit(work)
    state = vars(estimator)
    state.clear()
    state.update(vars(work))
    return estimator


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
    """Pass 1: the story and the labeled statistics by ``partial_fit`` (unlabeled rows with
    weight 0: the story sees them). Returns ``(rows, unlabeled rows)``."""
    rows = unlabeled_rows = 0
    marker = check_unlabeled_label(estimator.unlabeled_label)
    if isinstance(getattr(estimator, "story", None), Story):
        check_additive(estimator.story)  # a user's story, before any chunk is read
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
            check_unlabeled_label_type(y, marker)
            unlabeled = unlabeled_mask(y, marker)
            w = np.ones(num_rows) if w is None else chunk_weights(w, num_rows)
            if unlabeled.any():
                y = y.copy() if y.dtype.kind != "O" else y.astype(object)
                y[unlabeled] = classes[0]
                w = np.where(unlabeled, 0.0, w)
            estimator.partial_fit(X, y, classes=classes, sample_weight=w)  # refuses the rest
            rows += num_rows
            unlabeled_rows += int(unlabeled.sum())
            if progress is not None:
                progress.update(num_rows)
    if rows == 0:
        raise ValueError("the data has no rows: every chunk is empty.")
    return rows, unlabeled_rows


def finish(estimator, one_pass, unlabeled_rows: int, total: ChunkStatistics | None = None):
    """After pass 1, the parameters (from a distributed pass's ``total`` when given) or the
    reason why not, then EM from them through ``run_em_loop`` when rows are unlabeled;
    ``one_pass()``: the :class:`ChunkStatistics` of an E-step over all the data at ``params_``."""
    if total is not None or not hasattr(estimator, "params_"):
        stats = estimator.stats_ if total is None else total.stats
        try:
            estimator.fit_statistics(stats, context=None if total is None else total.context)
        except ValueError as error:
            raise ValueError(
                f"the streamed data do not determine the parameters: {error}"
            ) from None
    absent = estimator.classes_[np.asarray(estimator.stats_["class_counts"]) <= 0]
    if absent.size and (not unlabeled_rows or estimator.unlabeled_weight > 0):
        reason = (
            ": a streaming EM fit starts from the labeled fit, which needs a labeled row of "
            "every class"
            if unlabeled_rows
            else " (with positive weight), and no unlabeled row is left to learn them from"
        )
        raise ValueError(f"classes {absent.tolist()} have no labeled row{reason}.")
    if not unlabeled_rows:
        return
    max_iter, tol = estimator.max_iter, estimator.em_tol
    if estimator.n_init != 1:
        raise ValueError(
            f"a streaming or distributed EM fit starts from the labeled fit only; n_init must "
            f"be 1, got {estimator.n_init}."
        )
    # nothing to impute (λ = 0): the labeled fit is the answer, as in memory
    nothing_to_impute = estimator.unlabeled_weight == 0
    first = one_pass()  # the start's pass; its soft counts, the rows' weight, scale the rule
    passes, dtype = [first], first.dtype

    def e_pass(params):  # one pass at θ_t (on workers too): F(θ_t) and the next statistics
        estimator.params_ = params
        part = passes.pop() if passes else one_pass()
        return part.log_likelihood, part.stats

    def penalty(params, stats):
        with precision(dtype):
            as_jax = partial(jax.tree_util.tree_map, jnp.asarray)
            return float(estimator.story_.log_penalty(as_jax(params), as_jax(stats["emission"])))

    loop = run_statistics_em(
        lambda stats: (estimator.parameters_from_statistics(stats), stats), e_pass,
        (estimator.params_, estimator.stats_), penalty=penalty,
        max_iter=1 if nothing_to_impute else max_iter, tol=tol, eps=float(np.finfo(dtype).eps),
        scale=max(float(np.sum(first.stats["class_counts"])), np.finfo(float).tiny),
    )  # fmt: skip
    if not loop.finite and loop.n_iter == 1:
        raise ValueError(
            "EM degenerated at its first step (the objective or the parameters are not "
            "finite): regularize the story or label more rows."
        )
    converged = loop.converged or nothing_to_impute
    estimator.fit_statistics(loop.expectation[0], params=loop.params[0])
    estimator.n_iter_ = loop.n_iter
    estimator.converged_ = bool(converged)
    estimator.log_likelihood_trace_ = np.asarray(loop.trace, dtype=numpy_dtype(dtype))
    if loop.drop:
        warn_decrease(loop.n_iter + 1, loop.drop, loop.value)
    elif not converged and loop.n_iter >= max_iter:
        warn_max_iter(max_iter, tol)
    return estimator


def fit(estimator, X, y=None, *, sample_weight=None, classes=None, progress=None):
    """Fit ``estimator`` on out-of-core data as ``estimator.fit`` on the rows in memory (to
    rounding); it finishes or leaves the estimator as it was.

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
    if is_dask_collection(X):  # the estimator hands it to genprob.engine.distributed
        return estimator.fit(X, y, sample_weight=sample_weight, classes=classes)
    if _is_parquet_path(X):
        raise ValueError(
            f"fit on the Parquet data {os.fspath(X)!r} needs the label column: pass "
            f"genprob.streaming.parquet({os.fspath(X)!r}, target='label')."
        )
    if y is not None or sample_weight is not None:
        raise ValueError(
            "with chunked or Parquet input, labels and weights travel in the chunks: pass y=None "
            "and no sample_weight (chunks are (X, y) or (X, y, sample_weight) tuples)."
        )
    source = X if isinstance(X, (Chunks, ParquetSource)) else _OneShot(X)
    validate_params(estimator)
    marker = check_unlabeled_label(estimator.unlabeled_label)
    if isinstance(source, ParquetSource):
        source.unlabeled_label = marker
    if classes is None:
        if not source.reiterable:
            raise ValueError(
                "fitting on a one-shot iterator of chunks needs classes=[...] (every class "
                "label, as for partial_fit): the classes must be known before the first chunk. "
                "Or wrap the chunks in genprob.streaming.Chunks (re-readable): then a first "
                "pass collects the labels."
            )
        classes = collect_classes(source.labels(), marker)
    progress = progress or ProgressBar(enabled=False)
    return fit_or_keep(estimator, partial(_fit_source, source, classes, progress))


def _fit_source(source, classes, progress, estimator):
    progress.new_pass("fit: labeled pass")
    _, unlabeled_rows = labeled_pass(estimator, source.chunks(), classes, progress)
    passes = [0]  # EM's passes (a one-shot iterator refuses the first, saying why)

    def one_pass():  # E-step statistics added chunk by chunk
        passes[0] += 1
        progress.new_pass(f"fit: EM pass {passes[0]}")
        total = None
        for X, y, w in source.chunks():
            part = estimator.chunk_statistics(X, y, w, e_step=True)
            total = part if total is None else combine(total, part)
            progress.update(part.rows)
        return total

    finish(estimator, one_pass, unlabeled_rows)
