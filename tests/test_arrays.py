"""Host-to-device transfer and label encoding: the estimators' input plumbing."""

import jax
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from genprob._arrays import class_destinations, encode_labels, move_rows, to_device


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


def test_to_device_shares_aligned_memory_and_realigns_the_rest():
    rng = np.random.default_rng(0)
    raw = np.empty(8 * 301 + 64, dtype=np.uint8)
    start = -raw.ctypes.data % 64
    aligned = raw[start : start + 8 * 300].view(np.float64).reshape(100, 3)
    aligned[...] = rng.normal(size=(100, 3))
    misaligned = raw[start + 8 : start + 8 + 8 * 300].view(np.float64).reshape(100, 3)
    with jax.enable_x64(True):
        shared = to_device(aligned, np.float64)
        assert shared.unsafe_buffer_pointer() == aligned.ctypes.data  # no copy
        moved = to_device(misaligned, np.float64)
        assert moved.unsafe_buffer_pointer() % 64 == 0
        np.testing.assert_array_equal(np.asarray(moved), misaligned)
        transposed = to_device(aligned.T, np.float64)  # not C-contiguous
        np.testing.assert_array_equal(np.asarray(transposed), aligned.T)
        destinations = rng.permutation(100)
        moved = to_device(aligned, np.float64, row_destinations=destinations)
        np.testing.assert_array_equal(np.asarray(moved)[destinations], aligned)
        np.testing.assert_array_equal(np.asarray(moved), move_rows(aligned, destinations))
        on_device = to_device(shared, np.float64, row_destinations=destinations)
        np.testing.assert_array_equal(np.asarray(on_device), np.asarray(moved))
    single = to_device(aligned, np.float32)
    assert single.dtype == np.float32
    np.testing.assert_allclose(np.asarray(single), aligned, rtol=1e-7)


@pytest.mark.parametrize("num_classes", [3, 300, 70_000])
def test_class_destinations_group_rows_stably(num_classes):
    codes = np.random.default_rng(1).integers(0, num_classes, size=5000)
    destinations = class_destinations(codes, num_classes)
    grouped = move_rows(codes, destinations)
    np.testing.assert_array_equal(grouped, np.sort(codes))
    # stable: within a class, rows keep their order
    np.testing.assert_array_equal(
        move_rows(np.arange(5000), destinations), np.argsort(codes, kind="stable")
    )
    assert class_destinations(grouped, num_classes) is None  # already grouped: nothing to do
