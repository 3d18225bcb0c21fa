"""Checks of user input, written once for every entry (rows, weights, priors, smoothing, EM
controls); labels are in :mod:`genprob.engine._labels`, a family's own check in ``validate``."""

from __future__ import annotations

import sys
from numbers import Integral, Real

import numpy as np
import scipy.sparse
from sklearn.utils._param_validation import (
    Interval,
    InvalidParameterError,
    StrOptions,
    validate_parameter_constraints,
)
from sklearn.utils.validation import validate_data

from genprob._lazy import LazyModule, is_jax_array
from genprob.engine._arrays import plain, sparse_as_float, tree_leaves
from genprob.engine._limits import check_count
from genprob.engine._warnings import warn_user

jax = LazyModule("jax")
jnp = LazyModule("jax.numpy")


class FeatureValueError(ValueError):
    """A ``ValueError`` about the feature at position ``feature``, which an estimator can name."""

    def __init__(self, message: str, feature: int | None = None):
        super().__init__(message)
        self.feature = feature

    def __reduce__(self):  # pickled with its feature (Dask workers send errors back)
        return type(self), (str(self), self.feature)


def describe(values, limit: int = 5) -> str:
    """The first ``limit`` values, comma-separated (NumPy scalars shown as Python values)."""
    values = list(values)
    shown = ", ".join(repr(plain(v)) for v in values[:limit])
    return shown + (f", ... ({len(values)} in all)" if len(values) > limit else "")


# -- features -------------------------------------------------------------------------------------
def check_rows(estimator, X, y="no_validation", *, reset: bool, allow_nan=False, **options):
    """An estimator's rows checked once: text and complex refused, then ``validate_data``."""
    X = sparse_as_float(check_real_numbers(X, "X"))
    options = {"dtype": [np.float64, np.float32], **options}
    options["ensure_all_finite"] = "allow-nan" if allow_nan else True
    return validate_data(estimator, X, y, reset=reset, **options)


def check_features(
    X,
    dtype=None,
    *,
    as_given: bool = False,
    keep_sparse: bool = False,
    to_device: bool = False,
    allow_nan: bool = False,
    nan_hint: str = "",
    num_rows: int | None = None,
):
    """Features at a functional entry, refused by name unless 2-D, finite (NaN with ``allow_nan``)
    and of ``num_rows`` rows; made a non-empty float array unless ``as_given`` (returned as is)."""
    check_real_numbers(X, "X")
    if not as_given:
        X = _as_float_features(X, dtype, keep_sparse)
    elif np.ndim(X) != 2:
        raise ValueError(f"X must be a 2-D array (n_samples, n_features); got shape {np.shape(X)}.")
    if num_rows is not None and X.shape[0] != num_rows:
        raise ValueError(f"X has {X.shape[0]} rows but the responsibilities have {num_rows}.")
    _check_finite_features(X, allow_nan, nan_hint)
    if to_device and not (is_jax_array(X) or is_bcoo(X)):
        # device_put, not jnp.asarray, which compiles a copy program per shape for host arrays
        X = jax.device_put(X)
    return X


def check_real_numbers(values, name: str):
    """Refuse text and complex values in ``name`` as scikit-learn does (a cast misreads them)."""
    dtype = getattr(values, "dtype", None)
    if dtype is None and isinstance(values, list | tuple):
        try:
            dtype = np.asarray(values).dtype
        except (ValueError, TypeError):  # ragged: the caller's conversion says what is wrong
            return values
    if not isinstance(dtype, np.dtype):
        return values  # a DataFrame: its columns' dtypes are checked by its conversion
    kind = dtype.kind
    if kind == "O" and name != "X":
        kinds = {type(v) for v in np.ravel(values) if isinstance(v, str | bytes | complex)}
        kind = "c" if kinds == {complex} else "U" if kinds else kind
    if kind in "US":
        raise ValueError(
            f"{name} holds text (dtype {dtype}): genprob, like scikit-learn, does not read "
            f"strings as numbers. Convert {name} to numbers first (e.g. .astype(float))"
            + (", or use MixedNB for text columns." if name == "X" else ".")
        )
    if kind == "c":
        raise ValueError(
            f"{name} is complex (dtype {dtype}): Complex data not supported (scikit-learn's "
            f"words; a cast would drop the imaginary part). Pass real numbers."
        )
    return values


def _as_float_features(X, dtype, keep_sparse: bool):
    """``X`` as a 2-D, non-empty, floating NumPy array (or the given JAX array, dense or BCOO)."""
    if is_bcoo(X) and not keep_sparse:
        X = X.todense()
    elif scipy.sparse.issparse(X):
        X = X.toarray()
    xp = jnp if is_jax_array(X) or is_bcoo(X) else np  # JAX's dtypes (bfloat16) too
    if xp is np:
        X = np.asarray(X)
    if X.dtype == object or not (xp.issubdtype(X.dtype, xp.number) or X.dtype == bool):
        raise ValueError(f"X must be numeric; got an array of dtype {X.dtype}.")
    if X.ndim != 2:
        raise ValueError(f"X must be a 2-D array (n_samples, n_features); got shape {X.shape}.")
    if X.shape[0] == 0 or X.shape[1] == 0:
        raise ValueError(f"X is empty (shape {X.shape}).")
    if dtype is None and not xp.issubdtype(X.dtype, xp.floating):
        dtype = jnp.result_type(float)
    if dtype is not None and X.dtype != dtype:
        X = X.astype(dtype)
    return X


# -- sample weights -------------------------------------------------------------------------------
def check_sample_weight(
    sample_weight, num_samples: int, *, allow_all_zero: bool = True, dtype=np.float64
):
    """Row weights as float64 (n,) (a scalar weighs every row alike), or None."""
    if sample_weight is None:
        return None
    sample_weight = np.asarray(check_real_numbers(sample_weight, "sample_weight"), np.float64)
    if sample_weight.ndim == 0:
        sample_weight = np.full(num_samples, float(sample_weight))
    if sample_weight.shape != (num_samples,):
        raise ValueError(
            f"sample_weight has shape {sample_weight.shape}; expected ({num_samples},), one "
            f"weight per row of X."
        )
    if np.any(sample_weight < 0) or not np.all(np.isfinite(sample_weight)):
        raise ValueError("sample_weight must be finite and non-negative.")
    if not allow_all_zero and not sample_weight.sum() > 0:
        raise ValueError("every sample_weight is zero: at least one row needs a positive weight.")
    largest = float(sample_weight.max(initial=0.0))
    low = float(np.sqrt(np.finfo(dtype).tiny))
    high = 1.0 / low
    if largest > 0 and not low <= largest <= high:
        # weight x feature (squared) products out of this range leave the normal doubles
        raise ValueError(
            f"sample_weight's largest value is {largest:.3g}: weights that "
            f"{'small underflow' if largest < 1 else 'large overflow'} in the fit's statistics "
            f"(weight x feature products leave the range of normal doubles), which would give "
            f"a wrong fit. Multiply the weights by one constant so that the largest lies in "
            f"[{low:.3g}, {high:.3g}] ({np.dtype(dtype).name}), e.g. divide them by their "
            f"largest value: a Gaussian fit does not change; for smoothed counts (alpha, "
            f"beta) scale those by the same constant."
        )
    return sample_weight


# -- class priors ---------------------------------------------------------------------------------
def check_class_prior(prior, classes, *, name: str = "class_prior", renormalize: bool = False):
    """A fixed class prior (K,) as float64 in ``classes`` order, or None; ``renormalize`` warns."""
    if prior is None:
        return None
    values = np.array(prior, dtype=np.float64)  # a copy: the user's array may change later
    classes = list(classes)
    num_classes = len(classes)
    if values.ndim != 1 or values.shape[0] != num_classes:
        raise ValueError(
            f"Number of priors must match number of classes. (got {values.size} priors for "
            f"{num_classes} classes [{describe(classes)}]: {name} has {values.size} entries, "
            f"one per class, in classes_ order.)"
        )
    if not np.all(np.isfinite(values)):
        raise ValueError(f"{name} must be finite; got {values.tolist()}.")
    if np.any(values < 0):
        negative = [classes[i] for i in np.flatnonzero(values < 0)]
        raise ValueError(
            f"Priors must be non-negative. {name} is negative for classes {negative}: "
            f"{name} must be non-negative and sum to 1, got {values.tolist()}."
        )
    total = float(values.sum())
    if renormalize:
        if total <= 0:
            raise ValueError(f"{name} sum to 0: at least one class needs a positive prior.")
        if abs(total - 1.0) > 1e-5:
            warn_user(f"The priors sum to {total:.6g}, not 1: renormalizing.", UserWarning)
            values = values / total
    elif not np.isclose(total, 1.0):
        raise ValueError(
            f"The sum of the priors should be 1. Got {total:.6g} ({name} must be non-negative "
            f"and sum to 1, got {values.tolist()})."
        )
    return values


# -- smoothing ------------------------------------------------------------------------------------
#: The smallest ``alpha`` used without ``force_alpha`` (scikit-learn's floor).
ALPHA_LOWER_BOUND = 1e-10


def check_alpha(alpha, num_features: int | None = None, *, per_feature=True, force_alpha=True):
    """Smoothing ``alpha`` as a float or per-feature tuple, finite and >= 0 (or floored)."""
    if not per_feature and not isinstance(alpha, Real):
        raise ValueError(f"alpha must be a single number, got {alpha!r}.")
    values = np.asarray(alpha, dtype=float)
    if values.ndim > 1:
        raise ValueError(f"alpha must be a number or a 1-D array, got shape {values.shape}.")
    if values.ndim == 1 and num_features is not None and values.shape != (num_features,):
        raise ValueError(
            f"When alpha is an array, it should contains `n_features`. Got "
            f"{values.size} elements instead of {num_features}. (alpha has shape "
            f"{values.shape}; an array alpha needs one value per feature.)"
        )
    bad = (values < 0) | ~np.isfinite(values)
    if np.any(bad):
        where = f" at features {describe(np.flatnonzero(bad))}" if values.ndim else ""
        raise ValueError(
            f"All values in alpha must be greater than 0. (alpha must be finite and >= 0, got "
            f"{alpha!r}{where}.)"
        )
    if values.size and np.min(values) < ALPHA_LOWER_BOUND and not force_alpha:
        warn_user(
            f"alpha too small will result in numeric errors, setting alpha = "
            f"{ALPHA_LOWER_BOUND:.1e}. Use `force_alpha=True` to keep alpha unchanged.",
            UserWarning,
        )
        values = np.maximum(values, ALPHA_LOWER_BOUND)
    return float(values) if values.ndim == 0 else tuple(float(a) for a in values)


# -- EM controls ----------------------------------------------------------------------------------
def check_unlabeled_weight(value) -> float:
    """λ, the weight of unlabeled rows, as a float in [0, 1]."""
    if not isinstance(value, bool | np.bool_) and isinstance(value, Real) and 0 <= value <= 1:
        return float(value)
    raise ValueError(
        f"unlabeled_weight must lie in [0, 1] (the weight λ of unlabeled rows in EM); got "
        f"{value!r}."
    )


def check_positive_int(name: str, value) -> int:
    """An integer control (``max_iter``, ``n_init``) >= 1: ``ValueError`` for any bad value."""
    return check_count(value, name, noun="an integer", type_error=ValueError)


# -- estimator parameters (scikit-learn's _parameter_constraints) ---------------------------------
class NumberInterval(Interval):
    """scikit-learn's ``Interval`` that refuses booleans (``True`` is not a count or a weight)."""

    def is_satisfied_by(self, val):
        return not isinstance(val, bool | np.bool_) and super().is_satisfied_by(val)


#: The EM controls every estimator takes, as scikit-learn parameter constraints.
EM_PARAMETER_CONSTRAINTS = {
    # "auto": chosen by cross-validation over the labeled rows (genprob.estimators._criteria)
    "unlabeled_weight": [NumberInterval(Real, 0, 1, closed="both"), StrOptions({"auto"})],
    "max_iter": [NumberInterval(Integral, 1, None, closed="left")],
    "em_tol": [NumberInterval(Real, 0, np.inf, closed="left")],
    "n_init": [NumberInterval(Integral, 1, None, closed="left")],
    "random_state": ["random_state"],
    # resolve_dtype names the supported dtypes (it also takes NumPy dtype objects)
    "dtype": "no_validation",
    "unlabeled_label": [None, str, NumberInterval(Real, None, None, closed="neither")],
}

#: How NaN entries of X are read: refused (scikit-learn's behaviour) or summed out of the story.
MISSING_PARAMETER_CONSTRAINTS = {"missing": [StrOptions({"error", "marginalize"})]}

#: What a parameter means, appended to scikit-learn's message when its ``{value}`` is refused
PARAMETER_HINTS = {
    "unlabeled_weight": (
        "unlabeled_weight must lie in [0, 1] (the weight λ of unlabeled rows in EM), or be "
        "'auto' (chosen by cross-validation over the labeled rows)."
    ),
    "max_iter": "max_iter must be an integer >= 1.",
    "n_init": "n_init must be an integer >= 1.",
    "em_tol": "em_tol must be a finite number >= 0.",
    "alpha": "alpha must be >= 0 (a number, or one per feature where the estimator allows it).",
    "solver": "solver must be one of the options above.",
    "missing": (
        "missing must be 'error' (NaN in X is refused) or 'marginalize' (NaN entries are "
        "missing values, summed out of the story)."
    ),
    "random_state": "{value!r} cannot be used to seed a numpy.random.RandomState instance.",
    "unlabeled_label": (
        "unlabeled_label is the label value that marks unlabeled rows (a finite number or a "
        "string), or None when every label is a class."
    ),
}


def validate_params(estimator) -> None:
    """Parameter validation of scikit-learn, one by one, so a message can explain it."""
    constraints_of = estimator._parameter_constraints
    # the constructor's parameters by attribute (get_params inspects the signature every call)
    params = {name: getattr(estimator, name) for name in constraints_of}
    caller = type(estimator).__name__
    for name, constraints in constraints_of.items():
        try:
            validate_parameter_constraints({name: constraints}, {name: params[name]}, caller)
        except InvalidParameterError as error:
            if name not in PARAMETER_HINTS:
                raise
            hint = PARAMETER_HINTS[name].format(value=params[name])
            raise InvalidParameterError(f"{error} {hint}") from None


# -- the functional core --------------------------------------------------------------------------
def is_concrete(value) -> bool:
    """Whether ``value`` holds numbers, not a JAX tracer (a BCOO: whether its arrays do)."""
    if "jax" not in sys.modules:  # no tracer exists before JAX is imported
        return True
    if is_bcoo(value):  # no tracer itself, but its arrays are inside jit/vmap
        return is_concrete(value.data) and is_concrete(value.indices)
    return not isinstance(value, sys.modules["jax"].core.Tracer)


def is_bcoo(value) -> bool:
    """``isinstance(value, jax.experimental.sparse.BCOO)`` without importing JAX."""
    sparse = sys.modules.get("jax.experimental.sparse")
    return sparse is not None and isinstance(value, sparse.BCOO)


def all_concrete(*trees) -> bool:
    """True when every leaf of the pytrees is concrete (:func:`is_concrete`)."""
    return "jax" not in sys.modules or all(map(is_concrete, tree_leaves(trees)))


def check_feature_width(X, expected: int) -> None:
    """``X`` (n, D) must have the parameters' feature count ``expected``."""
    if X.shape[1] != expected:
        raise ValueError(
            f"X has {X.shape[1]} features, but the parameters are for {expected} features."
        )


def _check_finite_features(X, allow_nan: bool, nan_hint: str) -> None:
    """Refuse NaN (unless ``allow_nan``) and infinity where concrete, naming the columns."""
    if not is_concrete(X):
        return
    rows, cols, values = _stored_entries(X)
    # a BCOO matrix is no tracer, but its stored values are one inside jit/vmap
    if values is None or not is_concrete(values) or np.dtype(values.dtype).kind not in "fc":
        return  # integers and booleans are finite
    xp = array_module(values)
    values = values if xp is jnp else np.asarray(values)  # a CPU JAX array is read in place
    if bool(xp.isfinite(values).all()) or (allow_nan and not bool(xp.isinf(values).any())):
        return
    values = np.asarray(values)
    found = []
    masks = (("NaN", None if allow_nan else np.isnan(values)), ("infinity", np.isinf(values)))
    for kind, bad_rows, bad_cols in bad_entries(masks, values.shape, rows, cols):
        columns = np.unique(bad_cols)
        where = f"column {columns[0]}" if columns.size == 1 else f"columns {describe(columns)}"
        first = f"row {bad_rows[0]}" + ("" if columns.size == 1 else f", column {bad_cols[0]}")
        count = f"; {len(bad_rows)} entries in all" if len(bad_rows) > 1 else ""
        found.append(f"{kind} in {where} (first at {first}{count})")
    hint = nan_hint if not allow_nan and found[0].startswith("NaN") else ""
    allowed = "NaN marks a missing entry" if allow_nan else "not NaN or infinite ones"
    raise ValueError(
        f"Input X contains {' and '.join(found)}: the functional core takes finite feature "
        f"values only ({allowed}){'; ' + hint if hint else ''}."
    )


def _stored_entries(X):
    """``(rows, cols, values)`` of a sparse ``X``, ``(None, None, X)`` of a dense one."""
    if is_bcoo(X):
        return X.indices[:, 0], X.indices[:, 1], X.data
    if scipy.sparse.issparse(X):
        coo = X.tocoo()
        return coo.row, coo.col, coo.data
    if isinstance(X, np.ndarray) or is_jax_array(X):
        return None, None, X
    try:
        return None, None, np.asarray(X)
    except (TypeError, ValueError):
        return None, None, None


def array_module(values):
    """NumPy for host memory (a JAX array on the CPU is read in place), JAX on an accelerator."""
    if is_jax_array(values) and any(d.platform != "cpu" for d in values.devices()):
        return jnp
    return np


def bad_entries(masks, shape, rows=None, cols=None):
    """``(kind, rows, columns)`` (Python ints) of the entries of each ``(kind, mask)`` that marks
    any; ``rows``, ``cols``: the positions of a sparse matrix's stored values."""
    for kind, mask in masks:
        if mask is None or not mask.any():
            continue
        flat = np.flatnonzero(mask.ravel())
        if rows is None:
            bad_rows, bad_cols = np.unravel_index(flat, shape)
        else:
            bad_rows, bad_cols = np.asarray(rows)[flat], np.asarray(cols)[flat]
        yield kind, bad_rows.tolist(), bad_cols.tolist()
