"""Fits and predictions on Dask collections: statistics per partition, added by a tree
reduction, one per EM iteration (docs/scaling.md). Dask is imported here only."""

from __future__ import annotations

import threading
from functools import partial

import numpy as np

from genprob._lazy import jax
from genprob.engine import streaming
from genprob.engine._labels import check_unlabeled_label
from genprob.engine._validation import validate_params

__all__ = ["class_labels", "fit", "predict", "partitions"]


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
    frame = _is_frame(X)
    if not frame:
        if X.ndim != 2:
            raise ValueError(f"X must be a 2-D Dask array; got {X.ndim} dimensions.")
        if any(np.isnan(c) for c in X.chunks[0]):
            X = X.compute_chunk_sizes()
        X = X.rechunk({1: -1})
    pieces = [X.to_delayed() if frame else X.to_delayed().ravel()]
    count = X.npartitions if frame else len(X.chunks[0])
    for other, name in ((y, "y"), (sample_weight, "sample_weight")):
        if other is None:
            pieces.append([None] * count)
        elif frame:
            if not _is_frame(other) or other.npartitions != count:
                raise ValueError(
                    f"{name} must be a Dask Series partitioned like X ({count} "
                    f"partitions), e.g. a column of the same Dask DataFrame."
                )
            pieces.append(other.to_delayed())
        else:
            other = other if hasattr(other, "rechunk") else da.from_array(np.asarray(other))
            if other.ndim != 1 or other.shape[0] != X.shape[0]:
                raise ValueError(
                    f"{name} must be 1-D with one entry per row of X ({X.shape[0]}); got shape "
                    f"{other.shape}."
                )
            pieces.append(other.rechunk((X.chunks[0],)).to_delayed().ravel())
    return list(zip(*pieces, strict=True)), None if frame else int(X.shape[0])


def class_labels(y, unlabeled_label=-1) -> np.ndarray:
    """Sorted distinct labels of Dask labels ``y`` (an array or Series), the unlabeled marker
    excluded, computed on the cluster."""
    dask, da = _dask()
    values = y.unique() if _is_frame(y) else da.unique(y)
    (values,) = dask.compute(values)
    return streaming.collect_classes([np.asarray(values)], unlabeled_label)


# -- per-partition work (runs on the workers) ------------------------------------------------------
#: One worker thread imports JAX, the others wait: concurrent imports of it fail.
_IMPORTING = threading.Lock()


def _part(estimator, X, y, w, e_step=False):
    """The partition's (E-step's) ``ChunkStatistics`` under the driver's story; None: changed."""
    with _IMPORTING:
        jax()
    return estimator.chunk_statistics(X, y, w, e_step=e_step)


def _tree(parts, merge):
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


def _reduce(dask, estimator, parts, e_step=False):
    """Every partition's (E-step's) statistics on the workers, added in a tree of tasks."""
    shipped = dask.delayed(estimator, pure=False)
    tasks = [dask.delayed(_part)(shipped, xd, yd, wd, e_step) for xd, yd, wd in parts]
    return dask.compute(_tree(tasks, dask.delayed(streaming.combine)))[0]


def _first_rows(dask, parts, rows):
    """The first ``rows`` rows (None: all) of the first non-empty partition, on the driver."""
    for part in parts:
        piece = dask.compute(*(dask.delayed(_head)(block, rows) for block in part))
        if np.shape(piece[0])[0]:
            return piece
    raise ValueError("the data has no rows: every partition is empty.")


def fit(estimator, X, y, *, sample_weight=None, classes=None):
    """Fit ``estimator`` on a Dask array or DataFrame ``X`` with Dask labels ``y``, as
    ``estimator.fit`` on the computed arrays (to rounding); it finishes or changes nothing."""
    dask, _ = _dask()
    if y is None:
        raise ValueError("y is required with a Dask X: a Dask array or Series of labels.")
    validate_params(estimator)
    parts, expected = partitions(X, y, sample_weight)
    if classes is None:
        classes = class_labels(y, check_unlabeled_label(estimator.unlabeled_label))
    classes = np.asarray(classes)
    return streaming.fit_or_keep(estimator, partial(_fit_parts, dask, parts, expected, classes))


def _fit_parts(dask, parts, expected, classes, estimator):
    # the story from the head, else from the first partition; the workers add every partition
    for head_rows in (HEAD_ROWS, None):
        streaming.labeled_pass(estimator, [_first_rows(dask, parts, head_rows)], classes)
        total = _reduce(dask, estimator, parts)
        if total is not None:
            rows, unlabeled_rows = total.rows, total.unlabeled_rows
            break
        streaming.reset(estimator)  # None: a partition changed the story
    else:
        # the story grows with later partitions: read them through the driver (exact)
        rows, unlabeled_rows = streaming.labeled_pass(
            estimator, (dask.compute(xd, yd, wd) for xd, yd, wd in parts), classes
        )
    _check_rows(rows, expected, "labeled pass")

    def one_pass():
        result = _reduce(dask, estimator, parts, e_step=True)
        _check_rows(result.rows, rows, "EM pass")
        return result

    streaming.finish(estimator, one_pass, unlabeled_rows, total)


# -- prediction ------------------------------------------------------------------------------------
def _block(estimator, method, X, /, *y, **kwargs):
    if np.shape(X)[0] == 0:
        if method == "predict":
            return np.empty(0, dtype=estimator.classes_.dtype)
        return np.empty(0 if method == "log_likelihood" else (0, len(estimator.classes_)))
    labels = [np.asarray(values).reshape(-1) for values in y]  # a Dask array's are (rows, 1)
    return np.asarray(getattr(estimator, method)(X, *labels, **kwargs))


def predict(estimator, method, X, /, y=None, pointwise=False, **settings):
    """``estimator.<method>`` over the blocks of a Dask collection, lazily: one value per row,
    (n, K) probabilities, or a scalar sum for ``log_likelihood`` without ``pointwise``."""
    dask, da = _dask()
    num_classes = len(estimator.classes_)
    per_row = method in ("predict", "log_likelihood")
    dtype = estimator.classes_.dtype if method == "predict" else np.float64
    kwargs = {"pointwise": True} if method == "log_likelihood" else settings
    if _is_frame(X):
        import pandas as pd

        def frame_block(block, *labels):
            values = _block(estimator, method, block, *labels, **kwargs)
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
        block, args = partial(_block, estimator, method, **kwargs), (X,)
        if y is not None:
            y = y if hasattr(y, "rechunk") else da.from_array(np.asarray(y))
            args = (X, y.rechunk((X.chunks[0],)).reshape(-1, 1).rechunk((X.chunks[0], 1)))
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
