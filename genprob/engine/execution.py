"""Where rows live and how a pass over them runs, decided in one place (docs/reference/core.md)."""

from __future__ import annotations

import contextlib
import math

import numpy as np
import scipy.sparse

from genprob._lazy import LazyModule, is_jax_array, jax_context, jitted
from genprob.engine._arrays import (
    column_sums,
    namespace,
    row_blocks,
    row_sums,
    tree_leaves,
    tree_map,
)
from genprob.engine._limits import check_statistics_size, traced_once
from genprob.engine._validation import check_feature_width, describe, is_concrete
from genprob.engine.capabilities import capability
from genprob.story import CLASS_PRIOR, Story, gram_form

__all__ = [
    "on_host",
    "responsibilities",
    "statistics",
    "labeled_statistics",
    "em_statistics",
    "combine_statistics",
    "parameters",
    "class_prior_from_counts",
    "joint_log_prob",
    "class_scores",
    "class_posteriors",
    "check_host_width",
    "refuse_unscored",
    "padded_rows",
    "padded",
]

jax = LazyModule("jax")
jnp = LazyModule("jax.numpy")

#: Bytes of rows a host pass (statistics or scores) reads per block: its temporaries stay in cache.
BLOCK_BYTES = 1 << 21
#: ... and at least this many rows, so that wide rows do not make a block per row.
_MIN_BLOCK_ROWS = 256
#: Dense inputs up to this many rows and entries are padded to a bucket size (``padded_rows``)
PAD_LIMIT = 1 << 16
PAD_ENTRY_LIMIT = 1 << 21
#: Entries (rows x features) of the smallest bucket: iris's folds and refits share 256 rows.
_SMALLEST_BUCKET_ENTRIES = 1 << 10


# -- where a pass runs -----------------------------------------------------------------------------
def on_host(story: Story, X) -> bool:
    """True when the pass over ``X`` runs eagerly in NumPy: SciPy sparse rows, or concrete
    NumPy rows of a story written against the array namespace of its inputs."""
    return scipy.sparse.issparse(X) or (
        capability(story, "array_api") and isinstance(X, np.ndarray)
    )


def padded_rows(num_rows: int, num_features: int | None = None) -> int:
    """Row count a dense input is padded to: powers of two up to 4096, then multiples of 4096."""
    smallest = 16
    if num_features:
        rows = max(1, _SMALLEST_BUCKET_ENTRIES // num_features)
        smallest = min(4096, max(smallest, 1 << (rows.bit_length() - 1)))
    if num_rows <= 4096:
        return max(smallest, 1 << (num_rows - 1).bit_length())
    return -(-num_rows // 4096) * 4096


def padded(X, *rows):
    """``(X, *rows)``, a small concrete dense ``X`` padded to its bucket by copies of its first row,
    each of ``rows`` by weight 0 (zeros, or -1 in integer codes)."""
    shape = np.shape(X)
    if not (isinstance(X, np.ndarray) or is_jax_array(X)) or len(shape) != 2:
        return (X, *rows)
    if not (is_concrete(X) and 0 < shape[0] <= PAD_LIMIT and math.prod(shape) <= PAD_ENTRY_LIMIT):
        return (X, *rows)
    extra = padded_rows(*shape) - shape[0]
    if not extra:
        return (X, *rows)

    def pad(array, fill):
        array = np.asarray(array)  # on the host: an eager JAX concatenation compiles per shape
        tail = np.broadcast_to(fill, (extra, *array.shape[1:])).astype(array.dtype)
        return np.concatenate([array, tail])

    fills = [-1 if np.asarray(r).dtype.kind in "iu" else 0 for r in rows]
    return (pad(X, np.asarray(X)[:1]), *(pad(r, f) for r, f in zip(rows, fills, strict=True)))


def _host_tree(tree):
    return tree_map(np.asarray, tree)


def _all_host(tree) -> bool:
    return all(isinstance(leaf, np.ndarray | np.generic) for leaf in tree_leaves(tree))


# -- statistics ------------------------------------------------------------------------------------
def responsibilities(codes, num_classes: int, weights=None, dtype=np.float64) -> np.ndarray:
    """Dense R (n, K) of label codes times ``weights``, zeros for code -1; other codes raise."""
    codes = np.asarray(codes)
    if codes.size and not -1 <= int(codes.min()) <= int(codes.max()) < num_classes:
        first = int(np.flatnonzero((codes < -1) | (codes >= num_classes))[0])
        raise ValueError(
            f"code {int(codes[first])} of row {first} is not a class of 0..{num_classes - 1} "
            f"(or -1, an unlabeled row)."
        )
    # code -1 takes the last row of the (K+1, K) identity, a row of zeros
    R = np.eye(num_classes + 1, num_classes, dtype=dtype).take(codes, axis=0)  # faster than []
    if weights is not None:
        R *= np.asarray(weights, dtype=dtype)[:, None]
    return R


def statistics(story: Story, X, R, *, pad: bool = False) -> dict:
    """``{"class_counts": R.sum(0), "emission": story.sufficient_statistics(X, R)}``: host rows in
    blocks added by ``story.combine_statistics``, others compiled (padded with ``pad``)."""
    check_statistics_size(story, R.shape[1], X.shape[1], X.dtype, X.shape[0])
    if not on_host(story, X):
        if pad and is_concrete(R):
            X, R = padded(X, R)
        return _statistics(story, X, R)
    R = np.asarray(R)
    num_rows = X.shape[0]
    step = _block_rows(X) if capability(story, "adds_over_rows") else max(num_rows, 1)
    emission = None
    # a combine written in jax.numpy keeps float64 blocks in float64
    x64 = contextlib.nullcontext()
    if X.dtype == np.float64:
        x64 = jax_context(lambda jax: jax.enable_x64(True))
    with x64, np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        for _, X_block, R_block in row_blocks(step, X, R):
            part = story.sufficient_statistics(X_block, R_block)
            emission = part if emission is None else add_emission_statistics(story, emission, part)
    return {"class_counts": column_sums(R), "emission": _host_tree(emission)}


def _block_rows(X) -> int:
    """Rows of a host block: about ``BLOCK_BYTES`` of dense rows, all rows of SciPy sparse ones."""
    num_rows, num_features = X.shape
    step = max(_MIN_BLOCK_ROWS, BLOCK_BYTES // max(1, num_features * X.dtype.itemsize))
    return max(num_rows, 1) if num_rows <= step or scipy.sparse.issparse(X) else step


@jitted
def _statistics(story: Story, X, R) -> dict:
    return {"class_counts": column_sums(R), "emission": story.sufficient_statistics(X, R)}


def labeled_statistics(story: Story, X, codes, num_classes: int, weights=None) -> dict:
    """:func:`statistics` of label codes (-1: a row that adds nothing) and optional weights."""
    dtype = X.dtype if np.dtype(X.dtype).kind == "f" else np.float64
    return statistics(story, X, responsibilities(codes, num_classes, weights, dtype), pad=True)


def combine_statistics(story: Story, stats_a: dict, stats_b: dict) -> dict:
    """Statistics of two data chunks together (``partial_fit``, streaming and Dask rest on it)."""
    if capability(story, "array_api") and _all_host((stats_a, stats_b)):
        return _host_tree(_combine(story, stats_a, stats_b))
    return _combined(story, stats_a, stats_b)


def _combine(story: Story, stats_a: dict, stats_b: dict) -> dict:
    return {
        "class_counts": stats_a["class_counts"] + stats_b["class_counts"],
        "emission": add_emission_statistics(story, stats_a["emission"], stats_b["emission"]),
    }


def add_emission_statistics(story: Story, emission_a: dict, emission_b: dict) -> dict:
    """``story.combine_statistics`` of two chunks, rows kept as a Gram matrix once too many."""
    return gram_form(story.combine_statistics(emission_a, emission_b))


_combined = jitted(_combine)


def em_statistics(story: Story, params: dict, X, codes, row_weights):
    """``(stats, objective)`` of one E-step over rows ``X`` (code -1: unlabeled), compiled."""
    check_statistics_size(story, np.shape(params[CLASS_PRIOR])[-1], X.shape[1], X.dtype)
    X, codes, row_weights = padded(X, np.asarray(codes), np.asarray(row_weights))
    return _em_step(story, params, X, codes, row_weights.astype(X.dtype))


@jitted
def _em_step(story, params, X, codes, row_weights):
    labeled = codes >= 0
    num_classes = params[CLASS_PRIOR].shape[-1]
    one_hot = jax.nn.one_hot(jnp.where(labeled, codes, 0), num_classes, dtype=X.dtype)
    scores = story.discriminant(params, X) + jnp.log(params[CLASS_PRIOR])
    R = jnp.where(labeled[:, None], one_hot, jax.nn.softmax(scores, axis=-1))
    R = R * row_weights[:, None]
    joint = jnp.log(params[CLASS_PRIOR]) + story.emission(params).log_prob(X[:, None, :])
    values = rows_log_likelihood(joint, codes)
    objective = jnp.sum(jnp.where(row_weights > 0, row_weights * values, 0.0))
    return _statistics(story, X, R), objective


def rows_log_likelihood(joint, codes):
    """Each row's log-likelihood from its joint (n, K): the label's entry, else the log-sum-exp."""
    xp, labeled = namespace(joint, codes), codes >= 0
    chosen = xp.take_along_axis(joint, xp.where(labeled, codes, 0)[:, None], axis=-1)[:, 0]
    if xp is np:
        top = _row_max(joint)
        top = np.where(np.isfinite(top), top, 0.0)
        with np.errstate(divide="ignore"):  # a row no class can produce: -inf, as JAX's
            marginal = np.log(row_sums(np.exp(joint - top[:, None]))) + top
    else:
        marginal = jax.nn.logsumexp(joint, axis=-1)
    return xp.where(labeled, chosen, marginal)


# -- parameters ------------------------------------------------------------------------------------
def class_prior_from_counts(class_counts, class_prior=None, fit_prior: bool = True):
    """Class prior: MLE ``N_k / N``, a fixed user prior, or uniform when ``fit_prior`` is false."""
    num_classes = class_counts.shape[-1]
    xp = np if isinstance(class_counts, np.ndarray) else jnp
    if class_prior is not None:
        return xp.asarray(class_prior, dtype=class_counts.dtype)
    if not fit_prior:
        return xp.full(num_classes, 1.0 / num_classes, dtype=class_counts.dtype)
    return class_counts / class_counts.sum()


def emission_parameters(story: Story, emission_stats) -> dict:
    """The story's M-step: eager for host statistics of an ``array_api`` story, else compiled."""
    if capability(story, "array_api") and _all_host(emission_stats):
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            return dict(story.maximize(emission_stats))
    try:
        return dict(_maximize(story, emission_stats))
    except (jax.errors.ConcretizationTypeError, jax.errors.TracerArrayConversionError):
        return dict(story.maximize(emission_stats))


_maximize = jitted(lambda story, stats: story.maximize(stats))


def parameters(story: Story, stats: dict, class_prior=None, fit_prior: bool = True) -> dict:
    """Closed-form parameters (class prior included) from :func:`statistics`."""
    params = emission_parameters(story, stats["emission"])
    counts = stats["class_counts"]
    if is_concrete(counts) and is_concrete(class_prior):
        counts = np.asarray(counts)
    params[CLASS_PRIOR] = class_prior_from_counts(counts, class_prior, fit_prior)
    return params


# -- scores and posteriors -------------------------------------------------------------------------
def _rows_of(compiled, story, params, X, **options):
    """``compiled(story, params, X)`` on ``X`` padded to a bucket size, padding rows dropped."""
    rows = padded(X)[0]
    values = compiled(story, params, rows, **options)
    if rows is X:
        return values
    # concrete values sliced on the host: a device slice compiles a program per row count
    return (np.asarray(values) if is_concrete(values) else values)[: X.shape[0]]


def _check_width(event_shape, X) -> None:
    """Shapes only: inside a compiled program it runs once per compilation, not per call."""
    if event_shape:  # X is 2-D: every entry checks it
        check_feature_width(X, event_shape[-1])


@jitted(static_argnames="hook")
def _scores(story: Story, params: dict, X, hook: str = "discriminant"):
    """``log pi_k`` plus the story's ``hook`` (``discriminant`` or ``log_density``) of ``X``."""
    _check_width(story.emission(params).event_shape, X)  # the unused emission is not computed
    return jnp.log(params[CLASS_PRIOR]) + getattr(story, hook)(params, X)


def joint_log_prob(story: Story, params: dict, X, *, eager: bool = False):
    """``log pi_k + log p(x_i | k)`` (n, K) of checked features; ``eager``: host rows of a story
    with its own ``log_density`` scored without compiling (EM on the host)."""
    if scipy.sparse.issparse(X):
        emission = story.emission(params)
        _check_width(emission.event_shape, X)
        return np.log(np.asarray(params[CLASS_PRIOR])) + np.asarray(emission.log_prob(X))
    if eager and on_host(story, X) and type(story).log_density is not Story.log_density:
        params = _host_tree(params)
        with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
            return np.log(params[CLASS_PRIOR]) + story.log_density(params, X)
    return _rows_of(_scores, story, params, X, hook="log_density")


_EVENT_SHAPES: dict = {}


def check_host_width(story: Story, params: dict, X) -> None:
    """:func:`_check_width` of host rows, the event shape traced once per structure."""
    if not on_host(story, X):
        return  # the compiled program checks it while tracing

    def trace(tree):
        shapes = []
        jax.eval_shape(lambda s, p: shapes.append(s.emission(p).event_shape), *tree)
        return shapes[0]

    _check_width(traced_once(_EVENT_SHAPES, trace, (story, params)), X)


def class_scores(story: Story, params: dict, X):
    """``log pi_k + story.discriminant(params, X)`` (n, K) of checked features; host rows in blocks,
    rows without a finite score refused (:func:`refuse_unscored`)."""
    if not on_host(story, X):
        return _rows_of(_scores, story, params, X)
    params, step, scores = _host_tree(params), _block_rows(X), None
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
        log_prior = np.log(params[CLASS_PRIOR])
        for rows, X_block in row_blocks(step, X):
            block = np.asarray(story.discriminant(params, X_block)) + log_prior
            if rows == slice(None):
                scores = block
                break
            if scores is None:
                scores = np.empty((X.shape[0], block.shape[1]), block.dtype)
            scores[rows] = block
    refuse_unscored(scores, X)
    return scores


def class_posteriors(story: Story, params: dict, X, kind: str = "log") -> np.ndarray:
    """Class scores (``kind="scores"``), log posteriors (``"log"``) or posteriors (``"proba"``) as
    NumPy; rows without a finite score refused."""
    scores = np.asarray(class_scores(story, params, X))
    if not on_host(story, X):
        refuse_unscored(scores, X)
    if kind == "scores":
        return scores
    if not scores.flags.writeable:  # a view of a compiled program's output
        scores = scores.copy()
    # normalized in place: one temporary of a column, no (n, K) copies
    scores -= _row_max(scores)[:, None]
    if kind == "proba":
        np.exp(scores, out=scores)
        scores /= row_sums(scores)[:, None]
        return scores
    scores -= np.log(row_sums(np.exp(scores)))[:, None]
    return scores


def _row_max(scores) -> np.ndarray:
    """Each row's maximum, class by class (faster than NumPy's reduction of a narrow array)."""
    if scores.shape[1] > 64:  # wide enough for NumPy's own reduction
        return scores.max(axis=1)
    top = scores[:, 0].copy()
    for k in range(1, scores.shape[1]):
        np.maximum(top, scores[:, k], out=top)
    return top


def refuse_unscored(scores, X=None) -> None:
    """Raise ``ValueError`` naming the rows of ``scores`` without a finite class score."""
    scores = np.asarray(scores)
    if np.isfinite(scores.sum()):  # the usual case, one reduction without a boolean temporary
        return
    # a NaN or +inf, or -inf under every class
    bad = np.flatnonzero(np.isnan(scores).any(axis=1) | ~np.isfinite(scores.max(axis=1)))
    if not bad.size:  # finite scores whose sum overflowed
        return
    dtype = np.dtype(getattr(X, "dtype", None) or scores.dtype)
    dtype = dtype if dtype.kind == "f" else np.dtype(np.float64)
    scale = ""
    if X is not None and is_concrete(X):
        row = X[int(bad[0])]
        row = row.toarray() if scipy.sparse.issparse(row) else np.asarray(row)
        largest = np.max(np.abs(row)) if row.size else 0.0
        scale = f"; row {int(bad[0])}'s largest |feature| is {largest:.3g}"
    rows, their = (
        (f"row {bad[0]} has", "its") if bad.size == 1 else (f"rows {describe(bad)} have", "their")
    )
    raise ValueError(
        f"{rows} values too large to score in {dtype} (beyond about "
        f"{np.sqrt(np.finfo(dtype).max):.2g}, where their squares overflow{scale}): {their} "
        "log-density is not finite under any class. Rescale the features (e.g. standardize "
        "them) before fitting."
    )
