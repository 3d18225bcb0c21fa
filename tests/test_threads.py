"""Host statistics passes on threads: same sums as one pass, BLAS limits honoured and restored."""

from __future__ import annotations

import threading
import warnings

import numpy as np
import pytest
from threadpoolctl import ThreadpoolController, threadpool_limits

import genprob
from genprob import _threads
from genprob._arrays import column_sums
from genprob.families.gaussian.story import GaussianStory

TOL64 = 1e-12


def _blas_threads():
    return [entry["num_threads"] for entry in ThreadpoolController().select(user_api="blas").info()]


@pytest.fixture
def small_spans(monkeypatch):
    """Spans of a few KiB, so that test-sized arrays take the threaded path on 2 threads."""
    monkeypatch.setattr(_threads, "MIN_SPAN_BYTES", 1 << 12)
    monkeypatch.setattr(_threads, "_cpu_count", lambda: 4)
    with threadpool_limits(2, user_api="blas"):
        yield


def _serial(monkeypatch):
    monkeypatch.setattr(_threads, "MIN_SPAN_BYTES", 1 << 60)


def test_span_count_follows_blas_threads_and_size(small_spans):
    assert _threads.span_count(1000, 8 * 20) == 2  # 160 KB: 39 minimum spans, 2 BLAS threads
    assert _threads.span_count(10, 8) == 1  # 80 bytes: below one span
    with threadpool_limits(1, user_api="blas"):
        assert _threads.span_count(1000, 8 * 20) == 1  # the user's limit makes the pass serial


def test_sum_over_spans_matches_one_pass_and_uses_two_threads(small_spans):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(5000, 7))
    names = []

    def partial(start, stop):
        names.append(threading.current_thread().name)
        block = X[start:stop]
        return {"sums": block.sum(axis=0), "squares": (np.dot(block.T, block),)}

    total = _threads.sum_over_spans(partial, X.shape[0], X.shape[1] * X.itemsize, 64)
    assert len(names) == 2 and any(name.startswith("genprob-statistics") for name in names)
    np.testing.assert_allclose(total["sums"], X.sum(axis=0), rtol=TOL64, atol=TOL64)
    np.testing.assert_allclose(total["squares"][0], X.T @ X, rtol=TOL64)


def test_blas_limited_during_a_pass_and_restored_after_it_even_on_error(small_spans):
    seen = []

    def partial(start, stop):
        seen.append(min(_blas_threads()))
        return np.ones(1)

    assert _threads.sum_over_spans(partial, 1000, 160)[0] == 2.0
    assert seen == [1, 1]
    assert min(_blas_threads()) == 2

    def failing(start, stop):
        if start == 0:
            raise RuntimeError("span failed")
        return np.ones(1)

    with pytest.raises(RuntimeError, match="span failed"):
        _threads.sum_over_spans(failing, 1000, 160)
    assert min(_blas_threads()) == 2
    assert _threads._state["limited"] == 0


def test_overlapping_limits_restore_the_original_count(small_spans):
    # two of the user's threads in passes at once: the last one out restores BLAS
    outer = _threads.one_blas_thread()
    outer.__enter__()
    assert min(_blas_threads()) == 1
    with _threads.one_blas_thread():
        assert min(_blas_threads()) == 1
        # a pass started meanwhile counts the threads BLAS will get back, not the limit
        assert _threads.span_count(1000, 160) == 2
    assert min(_blas_threads()) == 1
    outer.__exit__(None, None, None)
    assert min(_blas_threads()) == 2


def test_a_forked_process_gets_a_pool_of_its_own(small_spans, monkeypatch):
    _threads.sum_over_spans(lambda a, b: np.ones(1), 1000, 160)
    before = _threads._state["pool"]
    monkeypatch.setitem(_threads._state, "pid", -1)  # as if this process were a fork's child
    assert _threads.sum_over_spans(lambda a, b: np.ones(1), 1000, 160)[0] == 2.0
    assert _threads._state["pool"] is not before


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("num_rows", [20000, 20001, 9216 // 3])
def test_column_sums_of_large_arrays(threads, num_rows, small_spans):
    rng = np.random.default_rng(1)
    R = rng.random((num_rows, 6))
    assert _threads.blas_would_thread(R)
    with threadpool_limits(threads, user_api="blas"):
        for array in (R, R[:, ::2]):  # rows of 64 lanes plus a tail; a strided view
            np.testing.assert_allclose(column_sums(array), array.sum(axis=0), rtol=TOL64)
    assert _threads._state["limited"] == 0
    assert min(_blas_threads()) == 2


def _data(n=6000, d=6, k=3, seed=0):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, k, n)
    X = rng.normal(size=(n, d)) * (1 + np.arange(d)) + 50.0 + y[:, None]  # off the origin
    return X, y


@pytest.mark.parametrize(
    "story",
    [
        GaussianStory(covariance="diag", shared=False),
        GaussianStory(covariance="full", shared=True),
        GaussianStory(covariance="full", shared=False),
        GaussianStory(covariance="full", shared=True, shrinkage=0.1),
    ],
    ids=["naive-bayes", "lda", "qda", "lda-fixed-shrinkage"],
)
@pytest.mark.parametrize("weighted", [False, True], ids=["unit", "soft-weighted"])
def test_threaded_moments_equal_one_pass(story, weighted, small_spans, monkeypatch):
    X, y = _data()
    R = np.eye(3)[y]
    if weighted:  # soft responsibilities with row weights: the weighted products
        rng = np.random.default_rng(2)
        R = rng.dirichlet(np.ones(3), size=len(y)) * rng.uniform(0.5, 2.0, size=(len(y), 1))
    assert _threads.span_count(X.shape[0], X.shape[1] * 8) == 2
    threaded = story.sufficient_statistics(X, R)
    _serial(monkeypatch)
    serial = story.sufficient_statistics(X, R)
    assert threaded.keys() == serial.keys()
    for name in serial:
        scale = np.max(np.abs(serial[name])) or 1.0
        np.testing.assert_allclose(threaded[name], serial[name], rtol=0, atol=TOL64 * scale)


@pytest.mark.parametrize(
    "make",
    [genprob.GaussianNB, genprob.LinearDiscriminantAnalysis, genprob.QuadraticDiscriminantAnalysis],
)
def test_threaded_fit_equals_serial_fit(make, small_spans, monkeypatch):
    X, y = _data(seed=3)
    weights = np.random.default_rng(4).uniform(0.5, 2.0, size=len(y))
    threaded = make().fit(X, y, sample_weight=weights)
    _serial(monkeypatch)
    serial = make().fit(X, y, sample_weight=weights)
    for name, value in serial.params_.items():
        np.testing.assert_allclose(threaded.params_[name], value, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(threaded.predict_proba(X), serial.predict_proba(X), atol=1e-10)


def test_spans_run_in_the_callers_numpy_error_state(small_spans):
    # np.errstate is a context variable: each span runs in a copy of the caller's context, so
    # an overflow the caller ignores does not warn (or raise) in a pool thread
    def partial(start, stop):
        return np.array([1e300]) * np.array([1e300])

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with np.errstate(over="ignore"):
            parts = _threads.map_spans(partial, 1000, 160)
        assert len(parts) == 2 and all(np.isinf(part[0]) for part in parts)
        with pytest.raises(FloatingPointError), np.errstate(over="raise"):
            _threads.map_spans(partial, 1000, 160)


def test_threaded_fit_overflow_is_named_without_warnings(small_spans):
    X, y = _data()
    X[:, 1] *= 1e200  # finite, but its squares overflow, in every span
    for estimator in (genprob.GaussianNB(), genprob.QuadraticDiscriminantAnalysis()):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            with pytest.raises(ValueError, match="feature 1 has values too large to square"):
                estimator.fit(X, y)


@pytest.mark.parametrize(
    "make",
    [genprob.GaussianNB, genprob.LinearDiscriminantAnalysis, genprob.QuadraticDiscriminantAnalysis],
)
def test_threaded_predictions_equal_serial_ones(make, small_spans, monkeypatch):
    # rows scored in spans on threads (core._host_posteriors) give the serial results, and a
    # row that cannot be scored is named by its index in X, whichever span holds it
    X, y = _data(seed=5)
    estimator = make().fit(X, y)
    names = []
    blocks = type(estimator.story_).discriminant_blocks

    def spying(story, params, rows):
        names.append(threading.current_thread().name)
        yield from blocks(story, params, rows)

    monkeypatch.setattr(type(estimator.story_), "discriminant_blocks", spying)
    kinds = ("predict_proba", "predict_log_proba")
    threaded = {kind: getattr(estimator, kind)(X) for kind in kinds}
    labels = estimator.predict(X)
    assert any(name.startswith("genprob-statistics") for name in names)
    bad = X.copy()
    bad[[10, 5000]] = np.nan
    with pytest.raises(ValueError, match="contains NaN"):
        estimator.predict_proba(bad)
    _serial(monkeypatch)
    names.clear()
    for kind, values in threaded.items():
        np.testing.assert_allclose(values, getattr(estimator, kind)(X), rtol=0, atol=1e-12)
    np.testing.assert_array_equal(labels, estimator.predict(X))
    assert not any(name.startswith("genprob-statistics") for name in names)


@pytest.mark.parametrize("kind", ["proba", "scores"])
def test_threaded_predictions_name_unscored_rows_by_their_index(kind, small_spans):
    from genprob import core

    X, y = _data(seed=6)
    estimator = genprob.QuadraticDiscriminantAnalysis().fit(X, y)
    unchecked = X.copy()
    unchecked[[12, 5001]] = np.nan  # one row in each span
    with np.errstate(invalid="ignore"), pytest.raises(ValueError, match=r"rows 12, 5001 cannot"):
        core._host_posteriors(estimator.story_, estimator._params_jax(), unchecked, kind)


def test_scratch_buffers_are_kept_per_thread(monkeypatch):
    first = _threads.scratch("test", (100, 3), np.float64)
    again = _threads.scratch("test", (50, 2), np.float32)
    assert again.flags.c_contiguous and again.shape == (50, 2) and again.dtype == np.float32
    assert np.shares_memory(first, again)  # the same buffer, no new allocation
    other = _threads._pool(1).submit(_threads.scratch, "test", (100, 3), np.float64).result()
    assert not np.shares_memory(first, other)
    monkeypatch.setattr(_threads, "SCRATCH_BYTES", 1000)
    large = _threads.scratch("test", (100, 3), np.float64)  # 2400 bytes: not kept
    assert not np.shares_memory(first, large)
