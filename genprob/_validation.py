"""Checks of user input, in one place: features, labels (``-1`` unlabeled), sample weights,
class priors and the EM controls.

The estimators, :func:`genprob.fit_em`, :func:`genprob.fit_optimizer`, :func:`genprob.crosscheck`
and :mod:`genprob.mcmc` all validate through these functions, so an error message (or a new
check) is written once. Every check raises ``ValueError`` naming the problem.
"""

from __future__ import annotations

import numbers
import sys
import warnings
from numbers import Integral, Real

import numpy as np
import scipy.sparse
from sklearn.utils._param_validation import (
    Interval,
    InvalidParameterError,
    StrOptions,
    validate_parameter_constraints,
)

from genprob._arrays import tree_leaves
from genprob._lazy import LazyModule, is_jax_array

jax = LazyModule("jax")
jnp = LazyModule("jax.numpy")

__all__ = [
    "EM_PARAMETER_CONSTRAINTS",
    "NumberInterval",
    "validate_params",
    "check_class_prior",
    "check_alpha",
    "check_classes",
    "check_known_labels",
    "check_num_classes",
    "check_partial_fit_classes",
    "check_features",
    "check_positive_int",
    "check_sample_weight",
    "check_unlabeled_label",
    "check_unlabeled_label_type",
    "check_unlabeled_weight",
    "class_codes",
    "describe",
    "encode_partial_labels",
    "FeatureValueError",
    "unknown_labels",
    "unlabeled_mask",
]


class FeatureValueError(ValueError):
    """A ``ValueError`` about the values of one feature (column) of ``X``.

    ``feature`` is the column's position, so that an estimator fitted on named columns can put
    the column's name in the message (a story's ``validate`` knows positions only).
    """

    def __init__(self, message: str, feature: int | None = None):
        super().__init__(message)
        self.feature = feature

    def __reduce__(self):  # pickled with its feature (Dask workers send errors back)
        return type(self), (str(self), self.feature)


def describe(values, limit: int = 5) -> str:
    """The first ``limit`` values, comma-separated (NumPy scalars shown as Python values)."""
    values = list(values)
    shown = ", ".join(repr(v.item() if hasattr(v, "item") else v) for v in values[:limit])
    return shown + (f", ... ({len(values)} in all)" if len(values) > limit else "")


# -- features -------------------------------------------------------------------------------------
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
    """Features checked at a public entry: 2-D, ``num_rows`` rows if given, and finite (NaN
    with ``allow_nan``) where the values are concrete; the one feature checker of genprob.

    By default ``X`` is also made a numeric, non-empty, floating array: a SciPy sparse matrix is
    densified, and a ``jax.experimental.sparse.BCOO`` one too unless ``keep_sparse``.

    Args:
        X: array-like (n, D).
        dtype: floating dtype to cast to; None keeps a floating dtype and casts anything else to
            JAX's default float.
        as_given: check ``X`` as it is (NumPy, JAX, SciPy sparse, BCOO, or a tracer inside
            ``jit``/``vmap``, of which only the shape is checked) and return it unchanged: the
            functional core's check.
        keep_sparse: keep a BCOO matrix sparse.
        to_device: return a JAX array (dense or BCOO), not a NumPy one.
        allow_nan: let NaN through (a story that reads NaN as missing); infinities are refused.
        nan_hint: appended to the message when NaN is refused (how to read it as missing).
        num_rows: the rows ``X`` must have (those of the labels or responsibilities).

    Raises:
        ValueError: naming the problem; non-finite values as scikit-learn's "Input X contains
            NaN" / "infinity", with the columns and the first offending entry (row, column).
    """
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
    """Refuse text and complex values in ``name`` (an array, a list or a sparse matrix), as
    scikit-learn does: a cast would read ``"1"`` as 1 and cut ``1+1j`` to 1. Object arrays of
    weights are checked item by item (every ``sample_weight`` is a number). Returns ``values``.

    Raises:
        ValueError: naming ``name`` and what it holds.
    """
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
    """``X`` as a 2-D, non-empty, floating NumPy array (or the JAX array, dense or BCOO, that
    was given)."""
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


# -- labels ---------------------------------------------------------------------------------------
#: The label that marks unlabeled rows unless the caller names another (scikit-learn's convention).
UNLABELED = -1


def check_unlabeled_label(value):
    """The ``unlabeled_label`` parameter: a finite number, a string, or None (no marker)."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, numbers.Real) and not isinstance(value, bool | np.bool_):
        if np.isfinite(value):
            return value.item() if hasattr(value, "item") else value
    raise ValueError(
        f"unlabeled_label must be the label value that marks unlabeled rows (a finite number or "
        f"a string), or None when every label is a class; got {value!r}."
    )


def marker_text(unlabeled_label) -> str:
    """How messages name the unlabeled marker: ``-1`` or ``'?'``."""
    return repr(unlabeled_label)


def check_unlabeled_label_type(y, unlabeled_label) -> None:
    """Refuse a marker of another type than the labels (no row could carry it).

    A string marker needs string (or object) labels; a number other than the default -1 needs
    numeric (or object) labels. The default -1 with string labels marks no row, as before.
    """
    if unlabeled_label is None:
        return
    kind = np.asarray(y).dtype.kind
    if isinstance(unlabeled_label, str) and kind in "biuf":
        raise ValueError(
            f"unlabeled_label={unlabeled_label!r} is a string, but y holds numbers (dtype "
            f"{np.asarray(y).dtype}), so no row can be marked unlabeled: pass the number that "
            f"marks unlabeled rows, or None when every label is a class."
        )
    if not isinstance(unlabeled_label, str) and kind in "US" and unlabeled_label != UNLABELED:
        raise ValueError(
            f"unlabeled_label={unlabeled_label!r} is a number, but y holds strings (dtype "
            f"{np.asarray(y).dtype}), so no row can be marked unlabeled: pass the string that "
            f"marks unlabeled rows, or None when every label is a class."
        )


def unlabeled_mask(y, unlabeled_label=UNLABELED) -> np.ndarray:
    """Boolean mask of the rows whose label is the unlabeled marker (``-1`` by default).

    A numeric marker matches numbers only (scikit-learn's semi-supervised convention): in a
    numeric array every entry equal to it; in an object array the entries that are that number
    (so string labels can be mixed with ``-1`` in an object array); a string array has no
    unlabeled rows (the string ``"-1"`` is an ordinary class name). A string marker matches
    strings only. ``None`` marks no row: every label is a class.
    """
    y = np.asarray(y)
    if unlabeled_label is None:
        return np.zeros(y.shape, dtype=bool)
    text = isinstance(unlabeled_label, str)
    if y.dtype.kind in ("US" if text else "iuf"):
        return y == unlabeled_label
    if y.dtype.kind == "O":
        kind = str if text else numbers.Real
        return np.fromiter(
            (
                isinstance(v, kind) and not isinstance(v, bool) and v == unlabeled_label
                for v in y.ravel()
            ),
            dtype=bool,
            count=y.size,
        ).reshape(y.shape)
    return np.zeros(y.shape, dtype=bool)


def unknown_labels(labels, classes) -> list:
    """The distinct values of ``labels`` that are not in ``classes``, sorted by their repr."""
    known = {c.item() if hasattr(c, "item") else c for c in np.asarray(classes).tolist()}
    values = np.asarray(labels).tolist()
    return sorted({v for v in values if v not in known}, key=repr)


def check_classes(classes, unlabeled_label=UNLABELED) -> np.ndarray:
    """The ``classes`` argument as sorted unique labels; the unlabeled marker and duplicates
    raise."""
    array = np.asarray(classes)
    if array.ndim != 1 or array.size == 0 or np.any(unlabeled_mask(array, unlabeled_label)):
        raise ValueError(
            f"classes must be a non-empty 1-D sequence of labels without "
            f"{marker_text(unlabeled_label)} (the unlabeled marker; unlabeled_label=None makes "
            f"it a class); got {classes!r}."
        )
    unique = np.unique(array)
    if len(unique) != len(array):
        raise ValueError(f"classes contains duplicates: {classes!r}.")
    return unique


def check_num_classes(classes, minimum: int) -> None:
    """Refuse fewer than ``minimum`` classes (2 for LDA and QDA) with scikit-learn's message."""
    if len(classes) < minimum:
        raise ValueError(
            f"The number of classes has to be greater than one. Got {len(classes)} class. "
            f"(a discriminant needs at least 2 classes to tell apart; classes: "
            f"[{describe(classes)}].)"
        )


def check_partial_fit_classes(classes, previous, unlabeled_label=UNLABELED) -> np.ndarray:
    """``classes`` of a ``partial_fit`` call, checked against the first call's (None: first)."""
    try:
        checked, problem = check_classes(classes, unlabeled_label), ""
    except ValueError as error:
        if previous is None:
            raise
        checked, problem = None, f" {error}"
    if previous is not None and (checked is None or not np.array_equal(checked, previous)):
        # scikit-learn's message first (its own tests match it), even for a malformed list
        raise ValueError(
            f"`classes={classes!r}` is not the same as on last call to partial_fit, was: "
            f"{previous!r}. (classes={classes!r} differs from the classes of the first "
            f"partial_fit call, {previous.tolist()}.){problem}"
        )
    return checked


def check_known_labels(y, classes) -> None:
    """Refuse labels of a ``partial_fit`` chunk that are not in the first call's ``classes``."""
    unknown = unknown_labels(y, classes)
    if unknown:
        classes = np.asarray(classes)
        raise ValueError(
            f"The target label(s) {np.asarray(unknown)} in y do not exist in the initial classes "
            f"{classes} (y contains labels {unknown[:5]} that are not in classes "
            f"{classes.tolist()}, given on the first partial_fit call)."
        )


def encode_partial_labels(y, *, num_classes=None, classes=None, unlabeled_label=UNLABELED):
    """Check partly labeled ``y`` and return ``(codes, num_classes)``.

    Args:
        y: labels (n,); ``unlabeled_label`` marks an unlabeled row. Without ``classes`` the
            labels are class codes ``0..K-1``; with ``classes`` they are values of ``classes``.
        num_classes: K, when the labels are codes and some class may have no labeled row.
        classes: every class label, in code order (code k is ``classes[k]``).
        unlabeled_label: the label of unlabeled rows (-1); None: every row is labeled.

    Returns:
        ``codes`` (n,) int32 NumPy array with -1 on unlabeled rows, and ``K``.

    Raises:
        ValueError: unknown labels, negative codes other than the marker, all rows unlabeled with
            neither ``num_classes`` nor ``classes``, inconsistent ``num_classes``/``classes``,
            or a marker of another type than the labels.
    """
    y = np.asarray(y)
    if y.ndim != 1:
        raise ValueError(f"y must be one-dimensional, got shape {y.shape}.")
    unlabeled_label = check_unlabeled_label(unlabeled_label)
    check_unlabeled_label_type(y, unlabeled_label)
    marker = f"{marker_text(unlabeled_label)} (unlabeled)" if unlabeled_label is not None else ""
    unlabeled = unlabeled_mask(y, unlabeled_label)
    if classes is not None:
        classes = np.asarray(classes)
        if classes.ndim != 1 or len(classes) < 1:
            raise ValueError(f"classes must be a non-empty 1-D sequence, got {classes!r}.")
        if np.any(unlabeled_mask(classes, unlabeled_label)):
            raise ValueError(
                f"classes contains {marker_text(unlabeled_label)}, which marks unlabeled rows; it "
                f"cannot be a class (unless unlabeled_label=None: every label is a class)."
            )
        index = {c.item() if hasattr(c, "item") else c: k for k, c in enumerate(classes)}
        if len(index) != len(classes):
            raise ValueError(f"classes contains duplicates: {classes!r}.")
        if num_classes is not None and int(num_classes) != len(classes):
            raise ValueError(
                f"num_classes={num_classes} disagrees with the {len(classes)} classes given."
            )
        labeled_values = [v.item() if hasattr(v, "item") else v for v in y[~unlabeled]]
        unknown = unknown_labels(labeled_values, classes)
        if unknown:
            raise ValueError(
                f"y contains labels that are neither {marker + ' nor ' if marker else ''}one of "
                f"the classes [{describe(classes)}]: [{describe(unknown)}]."
            )
        codes = np.full(y.shape, -1, dtype=np.int32)
        codes[~unlabeled] = [index[v] for v in labeled_values]
        return codes, len(classes)

    if y.dtype.kind not in "iuf":
        raise ValueError(
            f"y must hold integer class codes (0..K-1{', ' + marker if marker else ''}) unless "
            f"classes= is given; got dtype {y.dtype}."
        )
    if y.dtype.kind == "f" and not np.all(np.isfinite(y)):
        raise ValueError(
            f"y contains NaN or infinite values; mark unlabeled rows with "
            f"{marker_text(UNLABELED if unlabeled_label is None else unlabeled_label)}."
        )
    if y.dtype.kind == "f" and np.any(y != np.round(y)):
        raise ValueError(f"y must hold integer class codes; got {describe(y[y != np.round(y)])}.")
    labeled_codes = y[~unlabeled].astype(np.int64)
    bad = labeled_codes[labeled_codes < 0]
    if bad.size:
        row = int(np.flatnonzero(~unlabeled & (y < 0))[0])
        raise ValueError(
            f"labels must be {marker + ' or ' if marker else ''}class codes 0..K-1; got "
            f"{describe(np.unique(bad))} (found {describe(y[row : row + 1])} at row {row})"
            f"{'' if marker else '; unlabeled_label=None: every row is labeled'}."
        )
    if num_classes is None:
        if labeled_codes.size == 0:
            raise ValueError(
                f"every row is unlabeled (y = {marker_text(unlabeled_label)}) and the classes are "
                f"unknown: pass num_classes= or classes= to fit without labels."
            )
        num_classes = int(labeled_codes.max()) + 1
        missing = np.setdiff1d(np.arange(num_classes), labeled_codes)
        if missing.size:
            raise ValueError(
                f"class codes {describe(missing)} have no labeled row, so K cannot be inferred "
                f"from y alone; pass num_classes= (or classes=) to fit classes without labels."
            )
    num_classes = int(num_classes)
    if num_classes < 1:
        raise ValueError(f"num_classes must be >= 1, got {num_classes}.")
    too_big = labeled_codes[labeled_codes >= num_classes]
    if too_big.size:
        raise ValueError(
            f"labels must be {marker + ' or ' if marker else ''}class codes "
            f"0..{num_classes - 1}; got "
            f"{describe(np.unique(too_big))} (y holds class code {int(too_big.max())} but "
            f"num_classes is {num_classes})."
        )
    return np.where(unlabeled, -1, y).astype(np.int32), num_classes


def class_codes(y, num_samples: int, num_classes=None, unlabeled_label=UNLABELED):
    """Class codes (n,) of ``y`` for ``num_samples`` rows of X and K >= 2: ``(codes, K)``.

    As :func:`encode_partial_labels` (codes 0..K-1, -1 unlabeled) with the row count checked.
    """
    y = np.asarray(y)
    if y.shape != (num_samples,):
        raise ValueError(f"y has shape {y.shape}; expected ({num_samples},) to match X.")
    codes, num_classes = encode_partial_labels(
        y, num_classes=num_classes, unlabeled_label=unlabeled_label
    )
    if num_classes < 2:
        raise ValueError(f"num_classes must be >= 2, got {num_classes}.")
    return codes, num_classes


# -- sample weights -------------------------------------------------------------------------------
def weight_range(dtype=np.float64) -> tuple[float, float]:
    """Where the largest sample weight must lie in a fit of ``dtype``: the square root of the
    smallest normal number and its inverse (1.5e-154 to 6.7e153 in float64, 1.1e-19 to 9.2e18
    in float32), so weight x feature products stay normal for features of sqrt(tiny) to
    sqrt(1 / sqrt(tiny))."""
    root = float(np.sqrt(np.finfo(dtype).tiny))
    return root, 1.0 / root


def check_sample_weight(
    sample_weight, num_samples: int, *, allow_all_zero: bool = True, dtype=np.float64
):
    """Row weights as float64 (n,), or None; a scalar weighs every row alike.

    Args:
        sample_weight: None, a number, or one non-negative finite weight per row.
        num_samples: rows of X.
        allow_all_zero: accept weights that are all zero (a chunk of ``partial_fit``, an EM
            whose unlabeled rows carry the mass); a fit needs a positive one.
        dtype: the fit's precision, which bounds the largest weight (:func:`weight_range`).
    """
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
    low, high = weight_range(dtype)
    if largest > 0 and not low <= largest <= high:
        # the statistics multiply weights by features (and their squares): out of this range
        # the products leave the normal doubles and the fit goes wrong without a sign
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
    """A fixed class prior (K,) as float64, checked against the ``classes``; None stays None.

    Args:
        prior: one probability per class, in the order of ``classes``.
        classes: the class labels (or ``range(K)`` for codes).
        name: the argument's name in messages (``priors``, ``class_prior``).
        renormalize: warn and divide by the sum when it is not 1 (LDA, QDA) instead of raising.
    """
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
            warnings.warn(
                f"The priors sum to {total:.6g}, not 1: renormalizing.", UserWarning, stacklevel=3
            )
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
    """Smoothing ``alpha`` as a float, or a per-feature tuple: finite and >= 0.

    Stories call it with ``alpha`` alone; estimators add scikit-learn's checks and floor.

    Args:
        alpha: a number, or one number per feature when ``per_feature``.
        num_features: D, the length a per-feature ``alpha`` needs (None: not checked here).
        per_feature: whether an array ``alpha`` is accepted.
        force_alpha: keep an ``alpha`` below 1e-10 (otherwise it is raised to 1e-10, warned).
    """
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
        warnings.warn(
            f"alpha too small will result in numeric errors, setting alpha = "
            f"{ALPHA_LOWER_BOUND:.1e}. Use `force_alpha=True` to keep alpha unchanged.",
            UserWarning,
            stacklevel=4,
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
    """An integer control (``max_iter``, ``n_init``) >= 1."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
        raise ValueError(f"{name} must be an integer >= 1, got {value!r}.")
    return int(value)


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

#: What a parameter means, appended to scikit-learn's message when its value is refused
#: (``{value}`` is the refused value).
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
    """Check an estimator's constructor parameters against its ``_parameter_constraints``.

    scikit-learn's validation (``InvalidParameterError``, a ``ValueError`` and ``TypeError``),
    one parameter at a time so that the message can say what the refused parameter means.
    """
    constraints_of = estimator._parameter_constraints
    # the constructor's parameters are attributes of the same names (get_params inspects the
    # signature at every call)
    params = {name: getattr(estimator, name) for name in constraints_of}
    caller = type(estimator).__name__
    try:
        validate_parameter_constraints(constraints_of, params, caller)
        return
    except InvalidParameterError:
        pass  # found again below, with what the parameter means
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
    """Whether ``value`` holds numbers (not a JAX tracer inside ``jit``/``vmap``): only then can
    its values be checked; shapes are checked either way. A BCOO matrix is concrete when its
    stored values and indices are."""
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
    """True when every leaf of the pytrees (arrays, numbers) is concrete (:func:`is_concrete`):
    their values can go to NumPy."""
    return "jax" not in sys.modules or all(map(is_concrete, tree_leaves(trees)))


def check_class_codes(codes, num_classes: int, *, name: str = "y", unlabeled_label=UNLABELED):
    """Class codes must be integers in ``0..num_classes-1``, or the unlabeled marker (-1 unless
    ``unlabeled_label`` names another integer; None: every row is labeled)."""
    if unlabeled_label is not None and (
        isinstance(unlabeled_label, bool)
        or not isinstance(unlabeled_label, numbers.Integral)
        or 0 <= unlabeled_label < num_classes
    ):
        raise ValueError(
            f"unlabeled_label={unlabeled_label!r} cannot mark unlabeled rows of class codes "
            f"0..{num_classes - 1}: it must be an integer outside them (-1), or None when every "
            f"row is labeled."
        )
    if not is_concrete(codes):
        return
    codes = np.asarray(codes)
    if codes.ndim != 1:
        raise ValueError(f"{name} must be 1-D class codes, got shape {codes.shape}.")
    if codes.size and not np.issubdtype(codes.dtype, np.integer):
        raise ValueError(f"{name} must hold integer class codes, got dtype {codes.dtype}.")
    valid = (codes >= 0) & (codes < num_classes)
    if unlabeled_label is not None:
        valid |= codes == unlabeled_label
    bad = np.unique(codes[~valid])
    if bad.size:
        marker = (
            "every row labeled: unlabeled_label=None"
            if unlabeled_label is None
            else f"and {unlabeled_label} for an unlabeled row"
        )
        raise ValueError(
            f"{name} holds class codes {describe(bad)} outside 0..{num_classes - 1} ({marker})."
        )


def core_label_codes(codes, num_classes: int, unlabeled_label=UNLABELED):
    """Class codes checked (:func:`check_class_codes`), with -1 on unlabeled rows."""
    check_class_codes(codes, num_classes, unlabeled_label=unlabeled_label)
    codes = jnp.asarray(codes)
    if unlabeled_label is None or unlabeled_label == UNLABELED:
        return codes
    return jnp.where(codes == unlabeled_label, UNLABELED, codes)


def check_feature_width(X, expected: int) -> None:
    """``X`` (n, D) must have the parameters' feature count ``expected``."""
    if X.shape[1] != expected:
        raise ValueError(
            f"X has {X.shape[1]} features, but the parameters are for {expected} features."
        )


def _check_finite_features(X, allow_nan: bool, nan_hint: str) -> None:
    """NaN (unless ``allow_nan``) and infinity refused where the values are concrete: a pass
    over the values, and only on failure a second one to name the columns."""
    if not is_concrete(X):
        return
    rows, cols, values = _stored_entries(X)
    # a BCOO matrix is no tracer, but its stored values are one inside jit/vmap
    if values is None or not is_concrete(values) or np.dtype(values.dtype).kind not in "fc":
        return  # integers and booleans are finite
    xp = _array_module(values)
    values = values if xp is jnp else np.asarray(values)  # a CPU JAX array is read in place
    if bool(xp.isfinite(values).all()) or (allow_nan and not bool(xp.isinf(values).any())):
        return
    values = np.asarray(values)
    found = []
    for kind, mask in (
        ("NaN", None if allow_nan else np.isnan(values)),
        ("infinity", np.isinf(values)),
    ):
        if mask is None or not mask.any():
            continue
        at = np.flatnonzero(mask.ravel())
        bad_rows, bad_cols = _entry_positions(at, rows, cols, values.shape)
        columns = np.unique(bad_cols)
        where = f"column {columns[0]}" if columns.size == 1 else f"columns {describe(columns)}"
        first = f"row {bad_rows[0]}" + ("" if columns.size == 1 else f", column {bad_cols[0]}")
        count = f"; {at.size} entries in all" if at.size > 1 else ""
        found.append(f"{kind} in {where} (first at {first}{count})")
    hint = nan_hint if not allow_nan and found[0].startswith("NaN") else ""
    allowed = "NaN marks a missing entry" if allow_nan else "not NaN or infinite ones"
    raise ValueError(
        f"Input X contains {' and '.join(found)}: the functional core takes finite feature "
        f"values only ({allowed}){'; ' + hint if hint else ''}."
    )


def _stored_entries(X):
    """``(rows, cols, values)`` of a sparse ``X`` (its stored entries), ``(None, None, X)`` of a
    dense one; values None when ``X`` is not an array."""
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


def _array_module(values):
    """NumPy for host memory (a JAX array on the CPU is read in place), JAX on an accelerator."""
    if is_jax_array(values) and any(d.platform != "cpu" for d in values.devices()):
        return jnp
    return np


def _entry_positions(flat, rows, cols, shape):
    """(rows, columns) of the flat positions ``flat`` among the stored values, as Python ints."""
    if rows is None:
        bad_rows, bad_cols = np.unravel_index(flat, shape)
    else:
        bad_rows, bad_cols = np.asarray(rows)[flat], np.asarray(cols)[flat]
    return [int(r) for r in bad_rows], [int(c) for c in bad_cols]


def check_responsibilities(R) -> None:
    """A responsibility matrix R (n, K): 2-D and, where concrete, finite and non-negative.

    Raises:
        ValueError: the shape, or the entries that are NaN, infinite or negative, by class
            (column of R) and first row.
    """
    if np.ndim(R) != 2:
        raise ValueError(f"R must be a (n, K) responsibility matrix, got shape {np.shape(R)}.")
    if not is_concrete(R):
        return
    xp = _array_module(R)
    values = R if xp is jnp else np.asarray(R)  # a CPU JAX array is read in place
    valid = values >= 0
    if np.dtype(values.dtype).kind == "f":
        valid = valid & xp.isfinite(values)  # NaN fails ``R >= 0`` too; +inf passes it
    if bool(valid.all()):
        return
    values = np.asarray(values)
    found = []
    for kind, mask in (
        ("NaN", np.isnan(values)),
        ("infinite", np.isinf(values)),
        ("negative", values < 0),  # -inf is both infinite and negative
    ):
        if mask.any():
            bad_rows, bad_cols = np.nonzero(mask)
            row, col = int(bad_rows[0]), int(bad_cols[0])
            classes = np.unique(bad_cols)
            if classes.size == 1:
                which, first = f"class {col} (column {col} of R", f"row {row}"
            else:
                which, first = (
                    f"classes {describe(classes)} (columns of R",
                    f"row {row}, class {col}",
                )
            found.append(
                f"{kind} entries in {which}; first at {first}: {float(values[row, col])!r})"
            )
    raise ValueError(
        f"R holds {' and '.join(found)}: responsibilities must be finite and non-negative "
        f"(one-hot labels times sample weights, or class posteriors)."
    )
