"""Fits and predictions on Dask collections: statistics per partition, added by a tree reduction.

``estimator.fit(X, y)`` with a ``dask.array`` or ``dask.dataframe`` ``X`` (and labels ``y``, and
optionally ``sample_weight``, of the same partitioning) runs here. Each partition's statistics
come from the jitted statistics function on the worker that holds it; pairs of partial results
are combined (:func:`genprob.core.combine_statistics`) in a binary tree of tasks, and the driver
runs the closed-form M-step on the total. EM broadcasts the current parameters with the task
graph and makes one such reduction per iteration. The scheduler is Dask's current one (a
``distributed.Client`` when one is active).

The story is fixed from the first :data:`HEAD_ROWS` rows (the only data the driver reads), and
every partition's statistics are computed on the workers under it; traced settings, which
statistics do not read and which leave the story's structure alone (the multinomial's document
length), are set afterwards from every partition's additive context. Stories that grow with the data
(category tables, say) may change in a later partition: the pass is then made again with the
story of the whole first partition, and if that still grows, the partitions are read one at a
time through the driver's ``partial_fit`` (exact, slower).

Fault tolerance: Dask recomputes the tasks of a lost worker; the fit also checks that the
reduced row count equals the input's, so a statistic that missed a partition is an error,
never a silent answer.

Prediction methods on a Dask collection return Dask collections (lazy, block by block).
Dask is imported here only, so ``import genprob`` does not import it.
"""

from __future__ import annotations

import copy
from functools import partial

import jax
import numpy as np

from genprob import execution, streaming
from genprob._dtype import precision

__all__ = ["fit", "predict", "partitions"]


def _dask():
    try:
        import dask
        import dask.array as da
    except ImportError as error:  # pragma: no cover - the extra is installed in CI
        raise ImportError(
            "fitting on Dask collections needs Dask: pip install 'genprob[dask]'."
        ) from error
    return dask, da


def _is_frame(X) -> bool:
    return hasattr(X, "npartitions") and hasattr(X, "map_partitions")


def partitions(X, y=None, sample_weight=None):
    """Aligned per-partition delayed pieces ``[(X_i, y_i, w_i)]`` and the row count (or None)."""
    dask, da = _dask()
    if _is_frame(X):
        pieces = [X.to_delayed()]
        for other, name in ((y, "y"), (sample_weight, "sample_weight")):
            if other is None:
                pieces.append([None] * X.npartitions)
                continue
            if not _is_frame(other) or other.npartitions != X.npartitions:
                raise ValueError(
                    f"{name} must be a Dask Series partitioned like X ({X.npartitions} "
                    f"partitions), e.g. a column of the same Dask DataFrame."
                )
            pieces.append(other.to_delayed())
        return list(zip(*pieces, strict=True)), None
    if X.ndim != 2:
        raise ValueError(f"X must be a 2-D Dask array; got {X.ndim} dimensions.")
    if any(np.isnan(c) for c in X.chunks[0]):
        X = X.compute_chunk_sizes()
    X = X.rechunk({1: -1})
    pieces = [X.to_delayed().ravel()]
    for other, name in ((y, "y"), (sample_weight, "sample_weight")):
        if other is None:
            pieces.append([None] * len(X.chunks[0]))
            continue
        other = other if hasattr(other, "rechunk") else da.from_array(np.asarray(other))
        if other.ndim != 1 or other.shape[0] != X.shape[0]:
            raise ValueError(
                f"{name} must be 1-D with one entry per row of X ({X.shape[0]}); got shape "
                f"{other.shape}."
            )
        pieces.append(other.rechunk((X.chunks[0],)).to_delayed().ravel())
    return list(zip(*pieces, strict=True)), int(X.shape[0])


def _classes(y, unlabeled_label=-1):
    """Sorted distinct labels (without the unlabeled marker) of a Dask array or Series, computed
    on the cluster."""
    dask, da = _dask()
    values = y.unique() if _is_frame(y) else da.unique(y)
    (values,) = dask.compute(values)
    return streaming.collect_classes([np.asarray(values)], unlabeled_label)


# -- per-partition work (runs on the workers) ------------------------------------------------------
def _labeled_part(estimator, X, y, w):
    """``((stats, 0, rows), unlabeled rows, context)`` of a partition with the story fixed by
    the driver (``context``: the estimator's :meth:`_chunk_context`, summed by the driver).

    Returns None when the partition would change the story's statistics (new categories...) or
    fails the fitted story's checks: the driver then reads the partitions itself.
    """
    num_rows = np.shape(X)[0]
    if num_rows == 0:
        return (None, 0.0, 0), 0, {}
    local = copy.copy(estimator)
    # marked fitted so that the estimator's prediction-time checks (encoding, binarizing,
    # support) prepare the features as they will be scored
    local.params_ = estimator.__dict__.get("params_", {})
    try:
        Xv = local._check_X(X)
        grown = local._partial_fit_story(Xv, estimator.story_)
    except ValueError:
        return None
    # the same structure: statistics of the same layout (traced settings such as the
    # multinomial's document length do not change them)
    if jax.tree_util.tree_structure(grown) != jax.tree_util.tree_structure(estimator.story_):
        return None
    y = np.asarray(y)
    if y.shape != (num_rows,):
        raise ValueError(f"a partition has {num_rows} rows of X but y has shape {y.shape}.")
    codes = streaming.label_codes(local, y)
    weights = streaming._chunk_weights(w, num_rows)
    weights = np.ones(num_rows) if weights is None else weights
    with precision(local._dtype):
        stats = execution.labeled_statistics(
            estimator.story_, local._as_features(Xv), codes, len(local.classes_), weights
        )
        stats = jax.tree_util.tree_map(np.asarray, stats)
    return (stats, 0.0, int(num_rows)), int(np.sum(codes < 0)), local._chunk_context(Xv)


def _combine_labeled(story, dtype, a, b):
    if a is None or b is None:
        return None
    return (
        streaming.combine(story, dtype, a[0], b[0]),
        a[1] + b[1],
        streaming.add_contexts(a[2], b[2]),
    )


def _tree(dask, parts, merge):
    """Binary tree of ``merge`` tasks over delayed partial results (depth log2 of their number)."""
    while len(parts) > 1:
        merged = [merge(parts[i], parts[i + 1]) for i in range(0, len(parts) - 1, 2)]
        if len(parts) % 2:
            merged.append(parts[-1])
        parts = merged
    return parts[0]


def _check_rows(rows, expected, what):
    if expected is not None and rows != expected:
        raise RuntimeError(
            f"the {what} reduced {rows} rows but the input has {expected}: a partition's "
            f"statistics were lost. Refusing a fit that would silently miss data."
        )


#: Rows of the first partition the driver reads to fix the story before the workers' pass.
HEAD_ROWS = 1024


def _head(block, rows):
    if block is None:
        return None
    return block.iloc[:rows] if hasattr(block, "iloc") else block[:rows]


def _reduce_labeled(dask, estimator, parts):
    """Statistics of ``parts`` under ``estimator.story_``, reduced on the workers (None: grows)."""
    if not parts:
        return (None, 0.0, 0), 0, {}
    shipped = dask.delayed(estimator, pure=False)
    tasks = [dask.delayed(_labeled_part)(shipped, xd, yd, wd) for xd, yd, wd in parts]
    merge = dask.delayed(partial(_combine_labeled, estimator.story_, estimator._dtype))
    return dask.compute(_tree(dask, tasks, merge))[0]


def _labeled_from_head(dask, estimator, parts, classes):
    """Story from the first rows (a few kB to the driver), every partition on the workers.

    None when the rows are empty or a partition would change that story (new categories...).
    """
    head = dask.compute(*(dask.delayed(_head)(piece, HEAD_ROWS) for piece in parts[0]))
    if not np.shape(head[0])[0]:
        return None
    streaming.labeled_pass(estimator, [head], classes)
    return _reduce_labeled(dask, estimator, parts)


def _labeled_from_first_partition(dask, estimator, parts, classes):
    """Story from the first non-empty partition (read by the driver), the rest on the workers."""
    index, piece = 0, None
    while piece is None or not np.shape(piece[0])[0]:
        if index == len(parts):
            raise ValueError("the data has no rows: every partition is empty.")
        piece = dask.compute(*parts[index])
        index += 1
    streaming.labeled_pass(estimator, [piece], classes)
    rows = int(np.shape(piece[0])[0])
    unlabeled = int(estimator._unlabeled_rows(np.asarray(piece[1])).sum())
    head = (jax.tree_util.tree_map(np.asarray, estimator.stats_), 0.0, rows)
    checker = copy.copy(estimator)  # checks as at prediction, as on the workers
    checker.params_ = estimator.__dict__.get("params_", {})
    context = checker._chunk_context(checker._check_X(piece[0]))
    total = _reduce_labeled(dask, estimator, parts[index:])
    if total is None:
        return None
    (stats, _, rest_rows), rest_unlabeled, rest_context = total
    story, dtype = estimator.story_, estimator._dtype
    stats = streaming.combine(story, dtype, head, (stats, 0.0, rest_rows))[0]
    return (
        (stats, 0.0, rows + rest_rows),
        unlabeled + rest_unlabeled,
        streaming.add_contexts(context, rest_context),
    )


def fit(estimator, X, y, *, sample_weight=None, classes=None):
    """Fit ``estimator`` on a Dask array or DataFrame ``X`` with Dask labels ``y``.

    Equals ``estimator.fit`` on the computed arrays (to rounding): see the module docstring and
    :mod:`genprob.streaming` for labels, EM and the stories accepted.
    """
    dask, da = _dask()
    if y is None:
        raise ValueError("y is required with a Dask X: a Dask array or Series of labels.")
    estimator._validate_params()
    streaming.reset(estimator)
    parts, expected = partitions(X, y, sample_weight)
    if classes is None:
        classes = _classes(y, estimator._unlabeled_label)
    classes = np.asarray(classes)

    total = _labeled_from_head(dask, estimator, parts, classes)
    if total is None:
        streaming.reset(estimator)
        total = _labeled_from_first_partition(dask, estimator, parts, classes)
    if total is None:
        # the story grows with later partitions: read them through the driver (exact)
        streaming.reset(estimator)
        rows, unlabeled_rows = streaming.labeled_pass(
            estimator, (dask.compute(xd, yd, wd) for xd, yd, wd in parts), classes
        )
    else:
        (stats, _, rows), unlabeled_rows, context = total
        estimator.stats_ = stats
        if context:  # the story from every partition's context (the document length, say)
            estimator.story_ = estimator._story_for_context(context, estimator.n_features_in_)
        estimator._refit_from_statistics(*estimator._class_prior_argument())
    _check_rows(rows, expected, "labeled pass")
    streaming.finish_labeled(estimator)
    if unlabeled_rows == 0:
        return streaming._check_classes_observed(estimator)

    def one_pass():
        shipped = dask.delayed(estimator, pure=False)
        tasks = [dask.delayed(streaming.em_chunk)(shipped, xd, yd, wd) for xd, yd, wd in parts]
        merge = dask.delayed(partial(streaming.combine, estimator.story_, estimator._dtype))
        result = dask.compute(_tree(dask, tasks, merge))[0]
        _check_rows(result[2], rows, "EM pass")
        return result

    return streaming.run_em(estimator, one_pass, unlabeled_rows)


# -- prediction ------------------------------------------------------------------------------------
def _block(estimator, method, X, *args, **kwargs):
    if np.shape(X)[0] == 0:
        num_classes = len(estimator.classes_)
        if method == "predict":
            return np.empty(0, dtype=estimator.classes_.dtype)
        if method == "log_likelihood":
            return np.empty(0)
        return np.empty((0, num_classes))
    return np.asarray(getattr(estimator, method)(X, *args, **kwargs))


def _block_y(estimator, method, X, y, **kwargs):
    return _block(estimator, method, X, np.asarray(y).reshape(-1), **kwargs)


def predict(estimator, method, X, y=None, pointwise=False):
    """``estimator.<method>`` over the blocks of a Dask collection, as a lazy Dask collection.

    ``predict`` and pointwise ``log_likelihood`` give one value per row, the probability
    methods (n, K); ``log_likelihood`` without ``pointwise`` is a lazy scalar (the sum).
    """
    dask, da = _dask()
    num_classes = len(estimator.classes_)
    per_row = method in ("predict", "log_likelihood")
    dtype = estimator.classes_.dtype if method == "predict" else np.float64
    kwargs = {"pointwise": True} if method == "log_likelihood" else {}
    if _is_frame(X):
        import pandas as pd

        def frame_block(block, *labels):
            values = (
                _block_y(estimator, method, block, labels[0], **kwargs)
                if labels
                else _block(estimator, method, block, **kwargs)
            )
            if per_row:
                return pd.Series(values, index=block.index)
            return pd.DataFrame(values, index=block.index, columns=list(estimator.classes_))

        meta = (
            pd.Series([], dtype=dtype)
            if per_row
            else pd.DataFrame({c: pd.Series([], dtype=float) for c in estimator.classes_})
        )
        args = () if y is None else (y,)
        result = X.map_partitions(frame_block, *args, meta=meta)
    else:
        if X.ndim != 2:
            raise ValueError(f"X must be a 2-D Dask array; got {X.ndim} dimensions.")
        X = X.rechunk({1: -1})
        if y is None:
            args, block = (X,), partial(_block, estimator, method, **kwargs)
        else:
            y = y if hasattr(y, "rechunk") else da.from_array(np.asarray(y))
            y = y.rechunk((X.chunks[0],)).reshape(-1, 1).rechunk((X.chunks[0], 1))
            args, block = (X, y), partial(_block_y, estimator, method, **kwargs)
        if per_row:
            result = da.map_blocks(block, *args, drop_axis=1, dtype=dtype, meta=np.empty(0, dtype))
        else:
            result = da.map_blocks(
                block,
                *args,
                chunks=(X.chunks[0], (num_classes,)),
                dtype=dtype,
                meta=np.empty((0, 0), dtype),
            )
    if method == "log_likelihood" and not pointwise:
        return result.sum()
    return result
