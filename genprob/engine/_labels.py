"""Labels: the unlabeled marker, class labels and codes, and responsibilities, checked once."""

from __future__ import annotations

import numbers

import numpy as np

from genprob._lazy import LazyModule
from genprob.engine._arrays import plain
from genprob.engine._validation import (
    PARAMETER_HINTS,
    array_module,
    bad_entries,
    describe,
    is_concrete,
)

jnp = LazyModule("jax.numpy")


# -- labels ---------------------------------------------------------------------------------------
#: The label that marks unlabeled rows unless the caller names another (scikit-learn's convention).
UNLABELED = -1


def check_unlabeled_label(value):
    """The ``unlabeled_label`` parameter: a finite number, a string, or None (no marker)."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, numbers.Real) and not isinstance(value, bool | np.bool_):
        if np.isfinite(value):
            return plain(value)
    raise ValueError(f"{PARAMETER_HINTS['unlabeled_label']} Got {value!r}.")


def check_unlabeled_label_type(y, unlabeled_label) -> None:
    """Refuse a marker of another type than the labels (no row could carry it)."""
    if unlabeled_label is None:
        return
    dtype = np.asarray(y).dtype
    text = isinstance(unlabeled_label, str)
    if (text and dtype.kind in "biuf") or (
        not text and dtype.kind in "US" and unlabeled_label != UNLABELED
    ):
        kinds = ("a string", "numbers", "number") if text else ("a number", "strings", "string")
        raise ValueError(
            f"unlabeled_label={unlabeled_label!r} is {kinds[0]}, but y holds {kinds[1]} (dtype "
            f"{dtype}), so no row can be marked unlabeled: pass the {kinds[2]} that marks "
            f"unlabeled rows, or None when every label is a class."
        )


def unlabeled_mask(y, unlabeled_label=UNLABELED) -> np.ndarray:
    """Rows whose label is the marker: a numeric one matches numbers only, a string strings."""
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
    known = set(np.asarray(classes).tolist())
    values = np.asarray(labels).tolist()
    return sorted({v for v in values if v not in known}, key=repr)


def check_classes(classes, unlabeled_label=UNLABELED, *, sort: bool = True) -> np.ndarray:
    """The ``classes`` argument as unique labels (sorted unless ``sort`` is False)."""
    array = np.asarray(classes)
    if array.ndim != 1 or array.size == 0 or np.any(unlabeled_mask(array, unlabeled_label)):
        raise ValueError(
            f"classes must be a non-empty 1-D sequence of labels without {unlabeled_label!r} "
            f"(the unlabeled marker, which cannot be a class unless unlabeled_label=None); got "
            f"{classes!r}."
        )
    if len(set(array.tolist())) != len(array):
        raise ValueError(f"classes contains duplicates: {classes!r}.")
    return np.unique(array) if sort else array


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
    """``(codes, K)`` of partly labeled ``y``: int32 codes, -1 on unlabeled rows; ``y`` holds codes
    0..K-1, or values of ``classes`` (code k is ``classes[k]``) when given."""
    y = np.asarray(y)
    if y.ndim != 1:
        raise ValueError(f"y must be one-dimensional, got shape {y.shape}.")
    unlabeled_label = check_unlabeled_label(unlabeled_label)
    check_unlabeled_label_type(y, unlabeled_label)
    marker = f"{unlabeled_label!r} (unlabeled)" if unlabeled_label is not None else ""
    unlabeled = unlabeled_mask(y, unlabeled_label)
    if classes is not None:
        classes = check_classes(classes, unlabeled_label, sort=False)
        index = {c: k for k, c in enumerate(classes.tolist())}
        if num_classes is not None and int(num_classes) != len(classes):
            raise ValueError(
                f"num_classes={num_classes} disagrees with the {len(classes)} classes given."
            )
        labeled_values = y[~unlabeled].tolist()
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
            f"{UNLABELED if unlabeled_label is None else unlabeled_label!r}."
        )
    if y.dtype.kind == "f" and np.any(y != np.round(y)):
        raise ValueError(f"y must hold integer class codes; got {describe(y[y != np.round(y)])}.")
    labeled_codes = y[~unlabeled].astype(np.int64)
    if num_classes is None and labeled_codes.size == 0:
        raise ValueError(
            f"every row is unlabeled (y = {unlabeled_label!r}) and the classes are unknown: pass "
            f"num_classes= or classes= to fit without labels."
        )
    if num_classes is not None and int(num_classes) < 1:
        raise ValueError(f"num_classes must be >= 1, got {num_classes}.")
    top = "K-1" if num_classes is None else int(num_classes) - 1
    bad = (labeled_codes < 0) | (labeled_codes > (np.inf if num_classes is None else top))
    if bad.any():
        row = int(np.flatnonzero(~unlabeled)[np.argmax(bad)])
        raise ValueError(
            f"labels must be {marker + ' or ' if marker else ''}class codes 0..{top}; got "
            f"{describe(np.unique(labeled_codes[bad]))} (found {describe(y[row : row + 1])} at "
            f"row {row}{'' if top == 'K-1' else f'; num_classes is {top + 1}'})"
            f"{'' if marker else '; unlabeled_label=None: every row is labeled'}."
        )
    if num_classes is None:
        num_classes = int(labeled_codes.max()) + 1
        missing = np.setdiff1d(np.arange(num_classes), labeled_codes)
        if missing.size:
            raise ValueError(
                f"class codes {describe(missing)} have no labeled row, so K cannot be inferred "
                f"from y alone; pass num_classes= (or classes=) to fit classes without labels."
            )
    return np.where(unlabeled, -1, y).astype(np.int32), int(num_classes)


def class_codes(y, num_samples: int, num_classes=None, unlabeled_label=UNLABELED):
    """:func:`encode_partial_labels` of ``y`` with its row count and K >= 2 checked."""
    y = np.asarray(y)
    if y.shape != (num_samples,):
        raise ValueError(f"y has shape {y.shape}; expected ({num_samples},) to match X.")
    codes, num_classes = encode_partial_labels(
        y, num_classes=num_classes, unlabeled_label=unlabeled_label
    )
    if num_classes < 2:
        raise ValueError(f"num_classes must be >= 2, got {num_classes}.")
    return codes, num_classes


# -- the functional core: class codes and responsibilities ----------------------------------------
def check_class_codes(codes, num_classes: int, *, name: str = "y", unlabeled_label=UNLABELED):
    """Class codes must be integers in ``0..num_classes-1`` or the unlabeled marker."""
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


def check_responsibilities(R) -> None:
    """R (n, K) must be 2-D and, where concrete, finite and non-negative."""
    if np.ndim(R) != 2:
        raise ValueError(f"R must be a (n, K) responsibility matrix, got shape {np.shape(R)}.")
    if not is_concrete(R):
        return
    xp = array_module(R)
    values = R if xp is jnp else np.asarray(R)  # a CPU JAX array is read in place
    valid = values >= 0
    if np.dtype(values.dtype).kind == "f":
        valid = valid & xp.isfinite(values)  # NaN fails ``R >= 0`` too; +inf passes it
    if bool(valid.all()):
        return
    values = np.asarray(values)
    found = []
    # -inf is both infinite and negative
    masks = (("NaN", np.isnan(values)), ("infinite", np.isinf(values)), ("negative", values < 0))
    for kind, bad_rows, bad_cols in bad_entries(masks, values.shape):
        row, col = bad_rows[0], bad_cols[0]
        classes = np.unique(bad_cols)
        if classes.size == 1:
            which, first = f"class {col} (column {col} of R", f"row {row}"
        else:
            which, first = f"classes {describe(classes)} (columns of R", f"row {row}, class {col}"
        found.append(f"{kind} entries in {which}; first at {first}: {float(values[row, col])!r})")
    raise ValueError(
        f"R holds {' and '.join(found)}: responsibilities must be finite and non-negative "
        f"(one-hot labels times sample weights, or class posteriors)."
    )
