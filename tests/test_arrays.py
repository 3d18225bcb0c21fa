"""Host-to-device transfer and label encoding: the estimators' input plumbing."""

import jax
import numpy as np
import pytest
import scipy.sparse
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from genprob.engine._arrays import (
    class_sums,
    encode_labels,
    hard_labels,
    placed,
    without_duplicates,
)


@settings(max_examples=60, deadline=None)
@given(
    arrays(
        st.sampled_from([np.int8, np.int32, np.int64, np.uint8, np.uint64]),
        st.integers(1, 60),
        elements=st.integers(0, 120),
    ),
    st.integers(-50, 50),
)
def test_encode_labels_equals_numpy_unique(labels, offset):
    if labels.dtype.kind == "i":
        labels = labels + labels.dtype.type(offset // 2)
    classes, codes = encode_labels(labels)
    expected_classes, expected_codes = np.unique(labels, return_inverse=True)
    assert classes.dtype == expected_classes.dtype
    np.testing.assert_array_equal(classes, expected_classes)
    np.testing.assert_array_equal(codes, expected_codes)


@pytest.mark.parametrize(
    "labels",
    [
        np.array(["b", "a", "b"]),
        np.array([0.0, 2.0, 0.0]),
        np.array([-(2**62), 2**62, 0]),  # wide span: falls back to sorting
        np.array([True, False, True]),
    ],
    ids=["strings", "floats", "wide-integers", "booleans"],
)
def test_encode_labels_other_kinds(labels):
    classes, codes = encode_labels(labels)
    np.testing.assert_array_equal(classes[codes], labels)
    np.testing.assert_array_equal(classes, np.unique(labels))


def test_placed_parameters_are_read_only_views():
    """Compiled programs and host code read fitted NumPy arrays in place, read only."""
    tree = {"a": np.arange(3.0)}
    kept = placed(tree)
    assert np.shares_memory(kept["a"], tree["a"]) and not kept["a"].flags.writeable
    assert tree["a"].flags.writeable  # the caller's array is left writeable


@settings(max_examples=80, deadline=None)
@given(
    st.integers(1, 7),
    st.integers(1, 7),
    st.lists(st.tuples(st.integers(0, 6), st.integers(0, 6), st.integers(1, 5)), max_size=30),
    st.sampled_from(["csr", "csc"]),
)
def test_without_duplicates_keeps_the_matrix_and_sums_only_repeats(rows, cols, entries, fmt):
    """Entries stored in any order: the answer is X itself when no (row, column) repeats, else
    a copy with repeats summed; its values equal the dense matrix either way, and X is kept."""
    entries = [(i % rows, j % cols, v) for i, j, v in entries]
    r = np.array([e[0] for e in entries], dtype=int)
    c = np.array([e[1] for e in entries], dtype=int)
    v = np.array([e[2] for e in entries], dtype=float)
    # the raw (data, indices, indptr) constructor keeps repeats and their order within a row
    major, minor, length = (r, c, rows) if fmt == "csr" else (c, r, cols)
    order = np.argsort(major, kind="stable")
    indptr = np.concatenate([[0], np.cumsum(np.bincount(major, minlength=length))])
    cls = scipy.sparse.csr_matrix if fmt == "csr" else scipy.sparse.csc_matrix
    X = cls((v[order], minor[order], indptr), shape=(rows, cols))
    before = (X.data.copy(), X.indices.copy())
    out = without_duplicates(X)
    repeats = len({(i, j) for i, j, _ in entries}) < len(entries)
    assert (out is X) == (not repeats)
    assert out.nnz == len({(i, j) for i, j, _ in entries})
    np.testing.assert_array_equal(out.toarray(), X.toarray())
    np.testing.assert_array_equal(X.data, before[0])
    np.testing.assert_array_equal(X.indices, before[1])


def test_without_duplicates_of_unsorted_count_vectorizer_rows():
    """CountVectorizer's rows are unsorted but free of repeats: no copy, no sorting."""
    from sklearn.feature_extraction.text import CountVectorizer

    texts = ["bb aa cc aa", "cc cc bb", "aa", "dd bb aa cc", ""]
    X = CountVectorizer().fit_transform(texts)
    unsorted = scipy.sparse.csr_matrix((X.data, X.indices, X.indptr), shape=X.shape)
    unsorted.indices[:2] = unsorted.indices[:2][::-1].copy()
    unsorted.data[:2] = unsorted.data[:2][::-1].copy()
    unsorted.has_sorted_indices = False
    assert not unsorted.has_canonical_format
    assert without_duplicates(unsorted) is unsorted
    np.testing.assert_array_equal(unsorted.toarray(), X.toarray())


def test_labels_zero_to_k_are_their_own_read_only_codes():
    y = np.array([2, 0, 1, 1, 0, 2], dtype=np.intp)
    classes, codes = encode_labels(y)
    np.testing.assert_array_equal(classes, [0, 1, 2])
    assert np.shares_memory(codes, y) and not codes.flags.writeable
    assert y.flags.writeable  # the caller's labels stay writeable
    # a label missing from 0..K-1: counted codes, a new array
    classes, codes = encode_labels(np.array([3, 0, 3], dtype=np.intp))
    np.testing.assert_array_equal(classes, [0, 3])
    np.testing.assert_array_equal(codes, [1, 0, 1])


@pytest.mark.parametrize(
    "name", ["GaussianNB", "LinearDiscriminantAnalysis", "QuadraticDiscriminantAnalysis"]
)
def test_scoring_parameters_and_factors_are_read_only(name):
    """What predictions read (parameters, factors, LDA's directions) cannot be written through,
    as the JAX arrays they replace could not."""
    import genprob
    from genprob.engine._dtype import precision

    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(60, 3)), np.arange(60) % 3
    estimator = getattr(genprob, name)().fit(X, y)
    with precision("float64"):
        leaves = jax.tree_util.tree_leaves(estimator._params_jax())
    assert leaves and all(
        not leaf.flags.writeable for leaf in leaves if isinstance(leaf, np.ndarray)
    )
    before = estimator.predict_proba(X)
    np.testing.assert_array_equal(estimator.predict_proba(X), before)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_class_sums_equal_the_product_and_hard_labels_are_found(dtype):
    rng = np.random.default_rng(3)
    X = rng.normal(size=(50, 4)).astype(dtype)
    codes = rng.integers(0, 5, 50)
    codes[:7] = -1  # rows of zeros (unlabeled rows of a labeled fit)
    codes[codes == 3] = 4  # class 3 empty
    weights = rng.uniform(0.5, 2.0, 50).astype(dtype)
    R = (codes[:, None] == np.arange(5)).astype(dtype) * weights[:, None]
    found = hard_labels(R)
    assert found is not None and np.all(found[0][codes >= 0] == codes[codes >= 0])
    sums = class_sums(R, X)
    assert sums.dtype == dtype and not sums[3].any()
    np.testing.assert_allclose(sums, R.T @ X, rtol=1e-12 if dtype == np.float64 else 1e-5)
    R[0, :2] = 0.5  # a soft row
    assert hard_labels(R) is None
    np.testing.assert_allclose(
        class_sums(R, X), R.T @ X, rtol=1e-12 if dtype == np.float64 else 1e-5
    )
    assert class_sums(R[:0], X[:0]).shape == (5, 4)


def test_padding_rows_of_weight_zero_leave_class_sums_unchanged():
    from genprob.engine.execution import padded

    rng = np.random.default_rng(4)
    X, codes = rng.normal(size=(37, 3)), rng.integers(0, 3, 37)
    R = (codes[:, None] == np.arange(3)) * rng.uniform(0.5, 2.0, (37, 1))
    X_padded, R_padded, codes_padded = padded(X, R, codes)
    assert X_padded.shape[0] > 37 and not R_padded[37:].any() and np.all(codes_padded[37:] == -1)
    np.testing.assert_array_equal(X_padded[37:], np.broadcast_to(X[0], (X_padded.shape[0] - 37, 3)))
    np.testing.assert_array_equal(class_sums(R_padded, X_padded), class_sums(R, X))
