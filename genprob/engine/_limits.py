"""Size limits checked before anything is allocated (XLA aborts the interpreter on an absurd
buffer), and checks of count arguments."""

from __future__ import annotations

import contextlib
import math
import numbers
import os

import numpy as np

from genprob._lazy import jax
from genprob.engine.capabilities import capability, has_closed_form
from genprob.story import keeps_rows, structure_key

# Largest single array (bytes) sampling or a category table may allocate (a user may raise it)
MAX_ARRAY_BYTES = 2**32
# Largest total (bytes) of the arrays a model file may declare (refused before inflating any)
MAX_LOAD_BYTES = 2**32
# Largest metadata document (bytes of its .npy member) a model file may declare: read first
MAX_METADATA_BYTES = 2**26

#: Most chains a posterior may run: each is a copy of the sampler's state, scored on every row.
MAX_CHAINS = 1024
#: Most iterations (warm-up plus draws) a NUTS chain may run: more would not finish.
MAX_ITERATIONS = 10**6


class SizeLimitError(ValueError, MemoryError):
    """A request whose arrays would exceed :data:`MAX_ARRAY_BYTES` (refused before allocation)."""


def compact(value) -> str:
    """A number short enough for an error message (``1e+300`` rather than 301 digits)."""
    if isinstance(value, numbers.Integral) and abs(int(value)) < 10**12:
        return str(int(value))
    try:
        number = float(value)
    except OverflowError:
        digits = len(str(abs(int(value))))
        return f"{'-' if value < 0 else ''}~1e{digits - 1}"
    if number.is_integer() and abs(number) < 1e12:
        return str(int(number))
    return f"{number:.4g}"


def check_count(value, name: str, minimum: int = 1, *, noun="an int", type_error=TypeError) -> int:
    """``value`` as an int >= ``minimum``: ``type_error`` unless an integer, else ``ValueError``."""
    if isinstance(value, bool | np.bool_) or not isinstance(value, numbers.Integral):
        raise type_error(
            f"{name} must be {noun} >= {minimum}, got {type(value).__name__} {value!r}."
        )
    value = int(value)
    if value < minimum:
        raise ValueError(f"{name} must be {noun} >= {minimum}, got {compact(value)}.")
    return value


def _itemsize(dtype) -> int:
    try:
        return np.dtype(dtype).itemsize
    except TypeError:  # JAX's extended dtypes (typed PRNG keys) are not NumPy dtypes
        return 8


def _largest_aval(jaxpr):
    """(bytes, aval) of the largest array produced anywhere in ``jaxpr`` (sub-jaxprs included)."""
    best = (0, None)
    for eqn in jaxpr.eqns:
        for var in eqn.outvars:
            aval = var.aval
            shape = getattr(aval, "shape", None)
            if shape is None:
                continue
            size = math.prod(int(d) for d in shape) * _itemsize(aval.dtype)
            best = max(best, (size, aval), key=lambda pair: pair[0])
        for param in eqn.params.values():
            for sub in param if isinstance(param, tuple | list) else (param,):
                inner = getattr(sub, "jaxpr", None)
                if inner is not None and hasattr(getattr(inner, "jaxpr", inner), "eqns"):
                    found = _largest_aval(getattr(inner, "jaxpr", inner))
                    best = max(best, found, key=lambda pair: pair[0])
    return best


def check_traced_size(
    function, *args, what: str, advice: str = "Ask for fewer rows at a time."
) -> None:
    """Trace ``function(*args)`` without running it; ``SizeLimitError`` if an array is too large."""
    size, aval = _largest_aval(jax().make_jaxpr(function)(*args).jaxpr)
    if size > MAX_ARRAY_BYTES:
        raise SizeLimitError(
            f"{what} would allocate an array of {compact(size)} bytes "
            f"({aval.dtype}{list(aval.shape)}); the limit is {compact(MAX_ARRAY_BYTES)} bytes "
            f"(genprob.engine._limits.MAX_ARRAY_BYTES). {advice}"
        )


def check_posterior_size(
    *,
    num_chains: int,
    num_samples: int,
    num_warmup: int = 0,
    parameter_entries: int,
    num_rows: int = 0,
    num_classes: int = 1,
    itemsize: int = 8,
    nuts: bool = True,
    log_likelihood: bool = True,
) -> None:
    """Refuse a posterior whose chains, iterations or largest array are too large."""
    if num_chains > MAX_CHAINS:
        raise SizeLimitError(
            f"num_chains={compact(num_chains)} is more than {MAX_CHAINS} chains "
            f"(genprob.engine._limits.MAX_CHAINS): R-hat and ESS need a few chains (2 to 8), and "
            f"each chain is a copy of the sampler's state. Ask for more draws per chain instead."
        )
    if nuts and num_warmup + num_samples > MAX_ITERATIONS:
        raise SizeLimitError(
            f"num_warmup + num_samples = {compact(num_warmup + num_samples)} iterations per "
            f"chain is more than {compact(MAX_ITERATIONS)} "
            f"(genprob.engine._limits.MAX_ITERATIONS): "
            f"such a run would not finish. A few hundred to a few thousand of each are usual; "
            f"check R-hat and ESS, and run more only if they ask for it."
        )
    chains, draws, rows = (num_chains, "chains"), (num_samples, "draws"), (num_rows, "rows")
    classes = (num_classes, "classes")
    arrays = [("the draws", itemsize, [chains, draws, (parameter_entries, "parameter entries")])]
    if log_likelihood:
        arrays.append(("the pointwise log-likelihood", 8, [chains, draws, rows]))
    if nuts:
        arrays.append(("one step of the chains", itemsize, [chains, rows, classes]))
    # the largest array, with its dimensions for the message
    what, item, dims = max(arrays, key=lambda array: math.prod(n for n, _ in array[2]) * array[1])
    size = math.prod(n for n, _ in dims) * item
    sizes = " x ".join(f"{compact(n)} {unit}" for n, unit in dims) + f" x {item} bytes"
    if size > MAX_ARRAY_BYTES:
        raise SizeLimitError(
            f"this posterior would allocate {compact(size)} bytes for {what} ({sizes}); the "
            f"limit is {compact(MAX_ARRAY_BYTES)} bytes (genprob.engine._limits.MAX_ARRAY_BYTES). "
            f"Ask for fewer draws or chains (num_samples, num_chains), or raise the limit on a "
            f"machine with the memory."
        )


def physical_memory() -> int | None:
    """The machine's physical memory in bytes (None where the platform does not say)."""
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, OSError, ValueError):  # not POSIX, or an unknown name
        return None


def check_working_set(array_bytes: int, copies: int, *, what: str, sizes: str, advice: str):
    """Refuse an array over :data:`MAX_ARRAY_BYTES`, or ``copies`` of it over physical memory."""
    memory = physical_memory()
    if array_bytes > MAX_ARRAY_BYTES:
        limit = (
            f"the limit is {compact(MAX_ARRAY_BYTES)} bytes per array "
            f"(genprob.engine._limits.MAX_ARRAY_BYTES)"
        )
    elif memory is not None and array_bytes * copies > memory:
        limit = (
            f"working on it takes about {copies} such arrays at once, "
            f"{compact(array_bytes * copies)} bytes, more than this machine's "
            f"{compact(memory)} bytes of physical memory"
        )
    else:
        return
    raise SizeLimitError(
        f"{what} would allocate {compact(array_bytes)} bytes ({sizes}); {limit}. {advice}"
    )


# -- a story's statistics --------------------------------------------------------------------------
#: Arrays the size of its largest statistic that a closed-form fit holds at its peak (LDA's)
FIT_COPIES = 12
#: Bytes of K x D x D up to which an ``array_api`` story's statistics are measured in NumPy
PROBE_BYTES = 1 << 22
_STATISTIC_SIZES: dict = {}
_PROBED_SIZES: dict = {}


def traced_once(cache: dict, trace, tree, *static):
    """``trace(tree)`` once per pytree structure, leaf shapes and dtypes and ``static`` values."""
    leaves, structure = jax().tree_util.tree_flatten(tree)
    key = (
        structure,
        tuple((np.shape(leaf), getattr(leaf, "dtype", type(leaf))) for leaf in leaves),
        *static,
    )
    return _once(cache, key, trace, tree)


def _once(cache: dict, key, compute, value):
    """``cache[key]``, ``compute(value)`` the first time (every time for an unhashable key)."""
    try:
        known = key in cache
    except TypeError:
        return compute(value)
    if not known:
        cache[key] = compute(value)
    return cache[key]


def _largest_statistic(
    story, num_classes: int, num_features: int, dtype, num_rows=None, own: bool = False
) -> tuple:
    """(bytes, name, shape) of the largest statistic: probed in NumPy when small, else traced."""
    few = num_rows is not None and keeps_rows(num_rows, num_features)
    rows = int(num_rows) if few else max(2, num_features)
    small = num_classes * num_features**2 * dtype.itemsize <= PROBE_BYTES
    if not own and small and capability(story, "array_api"):

        def probe(story):
            X = np.zeros((rows, num_features), dtype)
            R = np.full((rows, num_classes), 0.5, dtype)
            with np.errstate(all="ignore"):
                return _largest(_named_leaves(story.sufficient_statistics(X, R)))

        key = (structure_key(story), num_classes, num_features, dtype, rows)
        with contextlib.suppress(ValueError, ArithmeticError):  # rows of zeros it refuses
            return _once(_PROBED_SIZES, key, probe, story)
    X = jax().ShapeDtypeStruct((rows, num_features), dtype)
    R = jax().ShapeDtypeStruct((rows, num_classes), dtype)

    def trace(statistics, *args):
        shapes = jax().tree_util.tree_flatten_with_path(jax().eval_shape(statistics, *args))[0]
        return _largest((jax().tree_util.keystr(path), leaf) for path, leaf in shapes)

    if own:
        return trace(story.sufficient_statistics, X, R)
    return traced_once(
        _STATISTIC_SIZES,
        lambda story: trace(lambda s, X, R: s.sufficient_statistics(X, R), story, X, R),
        story,
        num_classes,
        num_features,
        dtype,
        rows,
    )


def _named_leaves(tree, name: str = ""):
    """``(keystr, leaf)`` of a tree of dicts, lists and tuples (JAX's key string)."""
    if isinstance(tree, dict):
        for key in sorted(tree):
            yield from _named_leaves(tree[key], f"{name}[{key!r}]")
    elif isinstance(tree, list | tuple):
        for i, item in enumerate(tree):
            yield from _named_leaves(item, f"{name}[{i}]")
    elif tree is not None:
        yield name, tree


def _largest(named_leaves) -> tuple:
    """(bytes, name, shape) of the largest of ``(name, array)`` pairs."""
    sizes = [
        (math.prod(np.shape(a)) * np.dtype(a.dtype).itemsize, name, np.shape(a))
        for name, a in named_leaves
    ]
    size, name, shape = max(sizes, key=lambda entry: entry[0], default=(0, "", ()))
    return size, name, tuple(int(d) for d in shape)


def check_statistics_size(story, num_classes: int, num_features: int, dtype, num_rows=None):
    """Refuse a fit whose largest statistic, or :data:`FIT_COPIES` of it, is too large."""
    if not has_closed_form(story):
        return  # no statistics: a gradient M-step's arrays are the parameters'

    def check(own=False):
        size, name, shape = _largest_statistic(
            story, int(num_classes), int(num_features), np.dtype(dtype), num_rows, own
        )
        check_working_set(
            size,
            FIT_COPIES,
            what=f"the statistics of {type(story).__name__} on {compact(num_features)} features "
            f"and {compact(num_classes)} classes",
            sizes=f"{name}: {' x '.join(map(compact, shape))} x {np.dtype(dtype).itemsize} bytes",
            advice="Fit fewer features (feature selection, PCA), or a story with smaller "
            "statistics (for a full covariance, a diagonal one: GaussianNB, or "
            "GaussianStory(covariance='diag')), or raise the limit on a machine with the memory.",
        )

    if num_rows is None or not keeps_rows(num_rows, num_features):
        return check()
    try:
        return check()
    except SizeLimitError:
        # traced settings cannot say whether the story keeps its rows: measure with its own
        check(own=True)
