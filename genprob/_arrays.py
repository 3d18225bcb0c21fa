"""Host arrays into JAX and labels into codes, without passes the fit does not need."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import scipy.sparse

#: XLA's CPU client adopts a host buffer without copying when it is aligned to this many bytes.
_ALIGNMENT = 64
#: Rows moved per step when ``to_device`` reorders rows.
_MOVE_ROWS = 8192
#: Integer labels spanning at most this many values (or 2n) are encoded by counting.
_COUNTING_SPAN = 1 << 16
#: Dense inputs up to this many rows are padded to a few bucket sizes (``padded_rows``) so that
#: new row counts (cross-validation folds, learning curves) reuse compiled code; larger inputs
#: compile in a small fraction of their run time and are not copied.
PAD_LIMIT = 1 << 16
#: ... and up to this many entries (16 MiB of float64): copying a wider input to pad it costs
#: more at every call than compiling its shape once.
PAD_ENTRY_LIMIT = 1 << 21
#: Entries (rows x features) of the smallest bucket of dense one-pass inputs (32 KiB of float64).
_SMALLEST_BUCKET_ENTRIES = 1 << 12


def to_device(array, dtype, row_destinations=None) -> jax.Array:
    """A JAX array holding ``array`` in ``dtype``, sharing its memory when XLA allows.

    ``jnp.asarray`` always copies, and on CPU a large copy made by XLA costs several times a
    NumPy copy (it maps fresh memory each time). ``jax.device_put`` of a C-contiguous array
    whose buffer is 64-byte aligned costs nothing, so the cast, the reordering and, if needed,
    the realignment happen in NumPy (each a no-op for aligned float input in C order) and at
    most one copy is made. The result may alias ``array``: callers use it within one call.

    ``row_destinations`` (optional, a permutation) moves row ``i`` to position
    ``row_destinations[i]`` on the way, in that same single copy.
    """
    if isinstance(array, jax.Array):
        array = _in_dtype(array, dtype)
        if row_destinations is None:
            return array
        return array.at[row_destinations].set(array)
    if row_destinations is None:
        return jax.device_put(_host_buffer(array, dtype))
    host = np.asarray(array, dtype=dtype)
    moved = _aligned_empty(host.shape, host.dtype)
    # Read the rows in order and write each to its place, a few thousand at a time: with
    # few classes the writes form a few sequential streams, where gathering by a sorting
    # permutation reads the whole array once per class (2.3x slower at 1e6 x 20, K = 3).
    for start in range(0, len(row_destinations), _MOVE_ROWS):
        stop = start + _MOVE_ROWS
        moved[row_destinations[start:stop]] = host[start:stop]
    return jax.device_put(moved)


def namespace(*arrays):
    """NumPy when every argument is a NumPy array or a number, else ``jax.numpy``: code written
    against their shared functions then runs eagerly on the host or traced in a program."""
    if all(isinstance(a, (np.ndarray, np.generic, int, float)) for a in arrays):
        return np
    return jnp


def placed(tree):
    """A pytree of host arrays as read-only views of the same buffers (as JAX arrays are
    read-only: a buffer may be the fitted estimator's own array). Host code reads them directly
    and a compiled program takes host arrays too, so asking for a device (which starts JAX's
    backend) is left to the first compiled call."""
    return jax.tree_util.tree_map(_read_only, tree)


def _read_only(array):
    if not isinstance(array, np.ndarray) or not array.flags.writeable:
        return array
    view = array.view()
    view.flags.writeable = False
    return view


def to_device_all(arrays: dict, dtype) -> dict:
    """Every array of a dict in ``dtype``, C-contiguous and aligned, :func:`placed` together:
    a fitted model's parameters, read by every prediction."""
    return placed(
        {
            key: _in_dtype(array, dtype)
            if isinstance(array, jax.Array)
            else _host_buffer(array, dtype)
            for key, array in arrays.items()
        }
    )


def sparse_as_float(X):
    """A SciPy CSR or CSC matrix of integer or boolean values with its values as float64 and
    the same indices; anything else unchanged.

    SciPy's ``astype`` (what input validation calls) first sorts each row's indices and sums
    duplicates: half of a prediction on a ``CountVectorizer`` output, whose indices are not
    sorted. Products and sums do not need sorted indices; stories that need unique ones
    (log x! of a word's total count, binarized values) sum duplicates themselves.
    """
    if not (scipy.sparse.issparse(X) and X.format in ("csr", "csc")):
        return X
    if X.dtype.kind not in "biu":
        return X
    return type(X)((X.data.astype(np.float64), X.indices, X.indptr), shape=X.shape, copy=False)


def _in_dtype(array: jax.Array, dtype) -> jax.Array:
    return array.astype(dtype) if array.dtype != np.dtype(dtype) else array


def _host_buffer(array, dtype) -> np.ndarray:
    """``array`` in ``dtype``, C-contiguous and 64-byte aligned (so that ``device_put`` adopts
    it without a copy), copied only when it is not already."""
    host = np.asarray(array, dtype=dtype)
    if not host.flags.c_contiguous or host.ctypes.data % _ALIGNMENT:
        aligned = _aligned_empty(host.shape, host.dtype)
        np.copyto(aligned, host)
        host = aligned
    return host


def move_rows(values: np.ndarray, row_destinations: np.ndarray) -> np.ndarray:
    """``values`` (n, ...) with row ``i`` moved to position ``row_destinations[i]``."""
    moved = np.empty_like(values)
    moved[row_destinations] = values
    return moved


def without_duplicates(X):
    """A SciPy sparse matrix storing each (row, column) at most once: ``X`` itself when it does
    (sorted or not), else a copy with the duplicates summed (SciPy's meaning of them).

    Unsorted CSR (what ``CountVectorizer`` returns) is checked without sorting it: converted to
    CSC, each column lists its rows in increasing order, so a duplicate shows as two equal
    neighbours, one linear pass (0.6 ms on the SMS corpus against 1.9 ms to sort its rows).
    """
    if X.has_canonical_format:
        return X
    if X.format in ("csr", "csc") and X.nnz > 1:
        other = X.tocsc() if X.format == "csr" else X.tocsr()
        increasing = np.diff(other.indices) > 0
        starts = other.indptr[1:-1]
        # a pair across two columns (or rows) is no duplicate
        increasing[starts[(starts > 0) & (starts < other.nnz)] - 1] = True
        if increasing.all():
            return X
    X = X.copy()
    X.sum_duplicates()
    return X


def column_sums(array):
    """``array.sum(axis=0)`` of a 2-D array; a NumPy one through BLAS (``ones @ array``), much
    faster than NumPy's reduction over the rows of a narrow array (R of a few classes)."""
    if isinstance(array, OneHotRows):
        return array.column_sums()
    if isinstance(array, np.ndarray) and array.ndim == 2 and array.dtype.kind == "f":
        return np.ones(array.shape[0], array.dtype) @ array
    return array.sum(axis=0)


class OneHotRows:
    """The responsibilities of hard labels, ``R[i] = w_i e_{codes[i]}`` (a row of zeros for
    code -1), held as the codes and weights: a host statistics pass writes R block by block
    into a buffer in cache (:meth:`block_reader`) and finds each class's rows from the codes
    (:meth:`class_rows`), so the (n, K) matrix is never allocated. A new (n, K) array costs a
    page fault per 4 KiB on first touch (2 ms for 1e5 x 5 in a process that did other work),
    and the pass reads K values a row fewer; class sums ``R^T Z`` are a scatter-add of the rows
    (:meth:`class_sums_adder`). ``np.asarray`` gives the dense matrix, for
    consumers that take NumPy arrays; slicing rows (``R[i:j]``) gives the rows' own
    ``OneHotRows``.
    """

    __slots__ = ("codes", "num_classes", "weights", "dtype", "_scatter")
    ndim = 2

    def __init__(self, codes, num_classes: int, weights=None, dtype=None):
        self.codes = np.asarray(codes)
        self.num_classes = int(num_classes)
        self.dtype = np.dtype(dtype or np.result_type(float))
        self.weights = None if weights is None else np.asarray(weights, dtype=self.dtype)
        self._scatter = None

    def check(self) -> None:
        """Raise ``ValueError`` unless the codes are integers in -1..K-1 and the weights, one
        per row, finite and non-negative (what :func:`genprob.core.fit_closed_form` asks of R).
        """
        self.check_codes()
        weights = self.weights
        if weights is None:
            return
        bad = np.flatnonzero(~(np.isfinite(weights) & (weights >= 0)))
        if bad.size:
            raise ValueError(
                f"weight {weights[bad[0]]} of row {int(bad[0])} is not finite and non-negative."
            )

    @property
    def shape(self) -> tuple[int, int]:
        return (self.codes.shape[0], self.num_classes)

    def __len__(self) -> int:
        return self.codes.shape[0]

    def __getitem__(self, rows):
        if not isinstance(rows, slice):
            raise TypeError("OneHotRows takes a slice of rows; np.asarray(R) is the matrix.")
        weights = None if self.weights is None else self.weights[rows]
        sliced = OneHotRows(self.codes[rows], self.num_classes, weights, self.dtype)
        if self._scatter is not None:
            sliced._scatter = tuple(part[rows] for part in self._scatter)
        return sliced

    def dense(self) -> np.ndarray:
        """The rows as a new dense (n, K) array."""
        return self.block_reader(np.empty(self.shape, self.dtype))(0, len(self))

    def block_reader(self, buffer: np.ndarray):
        """``read(start, stop)``: the dense rows ``start:stop`` written into ``buffer`` (at
        least that many rows), a few microseconds of Python per block."""
        identity = np.eye(self.num_classes + 1, self.num_classes, dtype=self.dtype)
        codes, weights = self.codes, self.weights

        def read(start, stop):
            block = codes[start:stop]
            # code -1 takes the identity's last row, of zeros ("wrap"); with out=, "raise"
            # would copy twice
            R = np.take(identity, block, axis=0, out=buffer[: block.shape[0]], mode="wrap")
            if weights is not None:
                np.multiply(R, weights[start:stop, None], out=R)
            return R

        return read

    def class_sums_adder(self, num_features: int, dtype):
        """``add(out, start, rows)``: ``out += R[start:start + m]^T rows`` for C-contiguous
        rows (m, D) in ``dtype`` and ``out`` (K, D): each row added, times its weight, to its
        class's row of ``out``, in row order (into a zeroed (K+1, D) block, then added to
        ``out``: blocked sums, as the products summed).

        A scatter-add (a SciPy sparse matrix in CSC form times a dense block, R^T being that
        matrix with one entry per column) reads the block once with one multiply-add per entry,
        where the dense product ``R^T Z`` spends K. Rows of code -1 or weight 0 go to the
        block's K+1-th row, which is dropped: their entries, finite or not, touch no class.
        """
        dtype = np.dtype(dtype)
        index = self._scatter_index()
        weights = None if self.weights is None else self.weights.astype(dtype, copy=False)
        targets = self.num_classes + 1
        classes = slice(0, self.num_classes)

        def add(out, start, rows):
            stop = start + rows.shape[0]
            if not rows.flags.c_contiguous or rows.dtype != dtype:
                rows = np.ascontiguousarray(rows, dtype=dtype)
            row_weights = (
                _shared_range(stop - start, dtype, ones=True)
                if weights is None
                else weights[start:stop]
            )
            np.add(
                out, _scatter_rows(index[start:stop], row_weights, rows, targets)[classes], out=out
            )

        return add

    def check_codes(self) -> None:
        """Raise ``ValueError``, naming the first bad row, unless the codes are a 1-D integer
        array with every code in -1..K-1 and the weights (if any) one per row: the part of
        :meth:`check` every consumer of the codes needs (a scatter writes where a code points),
        a minimum and a maximum once per rows."""
        self._scatter_index()

    def _scatter_index(self) -> np.ndarray:
        """Each row's target in :meth:`class_sums_adder`: its code as int64, K for code -1
        and for weight 0 (a row of zeros in R: it adds nothing, not even ``0 x inf``); made
        once per rows, after :meth:`check_codes`'s checks (and kept by their slices)."""
        if self._scatter is not None:
            return self._scatter[0]
        codes, weights, num_classes = self.codes, self.weights, self.num_classes
        if codes.ndim != 1 or codes.dtype.kind not in "iu":
            raise ValueError(
                f"OneHotRows needs a 1-D integer array of codes, got {codes.dtype} of shape "
                f"{codes.shape}."
            )
        low, high = (int(codes.min()), int(codes.max())) if codes.size else (0, 0)
        if not -1 <= low <= high < num_classes:
            first = int(np.flatnonzero((codes < -1) | (codes >= num_classes))[0])
            raise ValueError(
                f"code {int(codes[first])} of row {first} is not a class of "
                f"0..{num_classes - 1} (or -1, a row of zeros)."
            )
        if weights is not None and weights.shape != codes.shape:
            raise ValueError(
                f"OneHotRows has {codes.shape[0]} codes but weights of shape {weights.shape}."
            )
        index = codes.astype(np.int64, copy=False)
        empty = codes < 0 if low < 0 else None
        if weights is not None:
            empty = weights == 0 if empty is None else empty | (weights == 0)
        if empty is not None:
            index = np.where(empty, num_classes, index)
        self._scatter = (index,)
        return index

    def __array__(self, dtype=None, copy=None):
        R = self.dense()
        return R if dtype is None else R.astype(dtype, copy=False)

    @property
    def unit_rows(self) -> bool:
        """True when every row holds one 1 and zeros (no weights, no code -1)."""
        return self.weights is None and (len(self) == 0 or int(self.codes.min()) >= 0)

    def row_sums(self) -> np.ndarray:
        """``R 1`` (n,): each row's weight, 0 for code -1."""
        weights = np.ones(len(self), self.dtype) if self.weights is None else self.weights
        return np.where(self.codes >= 0, weights, 0).astype(self.dtype, copy=False)

    def column_sums(self) -> np.ndarray:
        """``R^T 1`` (K,), by counting (code -1 counted as K and dropped)."""
        index = self._scatter_index()
        counts = np.bincount(index, self.weights, minlength=self.num_classes + 1)
        return counts[: self.num_classes].astype(self.dtype)

    def class_rows(self) -> list[tuple[np.ndarray, np.ndarray | None]]:
        """Per class, the indices of its rows of non-zero weight and their weights (None
        where every one weighs 1), in row order."""
        # comparisons of one-byte codes read 8x less (code -1 becomes 255, no class below 255)
        codes = self.codes.astype(np.uint8) if self.num_classes < 255 else self.codes
        result = []
        for k in range(self.num_classes):
            member = codes == k
            if self.weights is None:
                result.append((np.flatnonzero(member), None))
                continue
            rows = np.flatnonzero(member & (self.weights != 0))
            weights = self.weights[rows]
            result.append((rows, None if np.all(weights == 1) else weights))
        return result


_SHARED_RANGES: dict = {}


def _shared_range(size: int, dtype=np.int64, ones: bool = False) -> np.ndarray:
    """``0..size-1`` (or ``size`` ones) in ``dtype``, read-only and shared by every thread:
    the CSC column pointers and unit weights of :func:`_scatter_rows`, without fresh memory
    (a page fault per 4 KiB) at every pass."""
    key = (np.dtype(dtype), ones)
    shared = _SHARED_RANGES.get(key)
    if shared is None or shared.shape[0] < size:
        length = max(size, 2 * (0 if shared is None else shared.shape[0]), 1024)
        shared = np.ones(length, dtype) if ones else np.arange(length, dtype=dtype)
        shared.flags.writeable = False
        _SHARED_RANGES[key] = shared
    return shared[:size]


def _scatter_rows(index, weights, rows, targets: int) -> np.ndarray:
    """``out[index[i]] += weights[i] rows[i]`` for every row i of ``rows`` (m, D) into a new
    (targets, D) ``out``, ``index`` in 0..targets-1: a SciPy CSC matrix times the rows."""
    num_rows = rows.shape[0]
    matrix = scipy.sparse.csc_matrix(
        (weights, index, _shared_range(num_rows + 1)), shape=(targets, num_rows)
    )
    return matrix @ rows


def _aligned_empty(shape, dtype) -> np.ndarray:
    dtype = np.dtype(dtype)
    nbytes = int(np.prod(shape)) * dtype.itemsize
    raw = np.empty(nbytes + _ALIGNMENT, dtype=np.uint8)
    offset = -raw.ctypes.data % _ALIGNMENT
    return raw[offset : offset + nbytes].view(dtype).reshape(shape)


def class_destinations(codes, num_classes: int) -> np.ndarray | None:
    """Where each row goes so that rows are grouped by class code, in their order within a class.

    None when the rows are grouped already (codes never decrease). The grouping order is a
    stable radix sort of the codes; its inverse gives the destinations.
    """
    codes = np.asarray(codes)
    if np.all(codes[1:] >= codes[:-1]):
        return None
    small = np.uint8 if num_classes <= 1 << 8 else np.uint16 if num_classes <= 1 << 16 else None
    order = np.argsort(codes if small is None else codes.astype(small), kind="stable")
    destinations = np.empty_like(order)
    destinations[order] = np.arange(len(order))
    return destinations


def encode_labels(y) -> tuple[np.ndarray, np.ndarray]:
    """Sorted distinct labels and each row's code (index into them): ``np.unique``'s answer.

    Integer labels over a modest range are encoded by counting (two linear passes) instead of
    ``np.unique``'s sort, which dominates a closed-form fit's label handling at 1e6 rows.
    """
    y = np.asarray(y)
    if y.dtype.kind in "iu" and y.size:
        low, high = int(y.min()), int(y.max())
        span = high - low + 1
        if span <= max(_COUNTING_SPAN, 2 * y.size):
            # in a type that holds the span: int8 labels -128 and 8 are 136 apart
            if low == 0 and y.dtype == np.intp:
                offsets = y
            elif y.dtype.kind == "u":
                offsets = (y - y.dtype.type(low)).astype(np.intp, copy=False)
            else:
                offsets = (y.astype(np.int64, copy=False) - low).astype(np.intp, copy=False)
            present = np.bincount(offsets, minlength=span) > 0
            classes = (np.flatnonzero(present) + low).astype(y.dtype)
            if offsets is y and present.all():
                # labels 0..K-1, each present, are their own codes: a read-only view, no copy
                codes = y.view()
                codes.flags.writeable = False
                return classes, codes
            codes_of_offset = np.cumsum(present) - 1
            return classes, codes_of_offset[offsets]
    return np.unique(y, return_inverse=True)


def is_integer_labels(y) -> bool:
    """True when ``y`` holds integers, which scikit-learn always reads as class labels."""
    return np.asarray(y).dtype.kind in "iu"


def padded_rows(num_rows: int, num_features: int | None = None) -> int:
    """Row count a chunk is padded to: powers of two up to 4096, then multiples of 4096.

    Jitted statistics compile once per shape; padding chunks of streaming data to a few sizes
    bounds the number of compilations (at most twice the work for small chunks). Given
    ``num_features``, the smallest size holds about ``_SMALLEST_BUCKET_ENTRIES`` entries, so the
    folds, test sets and refits of a small data set share one program (a few microseconds of
    arithmetic on padding rows against a trace and a compilation per shape).
    """
    smallest = 16
    if num_features:
        rows = max(1, _SMALLEST_BUCKET_ENTRIES // num_features)
        smallest = min(4096, max(smallest, 1 << (rows.bit_length() - 1)))
    if num_rows <= 4096:
        return max(smallest, 1 << (num_rows - 1).bit_length())
    return -(-num_rows // 4096) * 4096


def is_small(X) -> bool:
    """True for a dense 2-D ``X`` that is padded to a bucket size (:func:`row_padding`): at
    most ``PAD_LIMIT`` rows and ``PAD_ENTRY_LIMIT`` entries."""
    return (
        X.ndim == 2 and 0 < X.shape[0] <= PAD_LIMIT and X.shape[0] * X.shape[1] <= PAD_ENTRY_LIMIT
    )


def row_padding(X, *, passes: str = "one") -> int:
    """Rows to append to the dense 2-D ``X`` (NumPy or JAX) to reach its bucket size
    (``padded_rows``); 0 for sparse input, more than ``PAD_LIMIT`` rows or more than
    ``PAD_ENTRY_LIMIT`` entries.

    ``passes="many"`` (an iterative fit such as EM, which reads the rows at every step) keeps
    the power-of-two buckets from 16 rows up, at most twice the work; one pass over the rows
    (``"one"``) pads small inputs to the smallest bucket sized by entries.
    """
    if not isinstance(X, np.ndarray | jax.Array) or X.ndim != 2:
        return 0
    if not is_small(X):
        return 0
    return padded_rows(X.shape[0], X.shape[1] if passes == "one" else None) - X.shape[0]


def pad_with_first_row(X, extra: int) -> np.ndarray:
    """Host copy of ``X`` with ``extra`` copies of its first row appended (``X`` itself when
    ``extra`` is 0): real values, inside the support of every story, so padding rows score
    finitely wherever real rows do."""
    if not extra:
        return X
    X = np.asarray(X)
    # aligned, so that ``to_device`` adopts the copy instead of copying it again
    padded = _aligned_empty((X.shape[0] + extra, X.shape[1]), X.dtype)
    padded[: X.shape[0]] = X
    padded[X.shape[0] :] = X[:1]
    return padded
