"""The guard that keeps a long-lived process below Linux's limit on memory mappings."""

import subprocess
import sys
import textwrap
import warnings

import jax
import numpy as np
import pytest

from genprob import GaussianNB
from genprob.engine import _mappings

linux_proc = pytest.mark.skipif(
    _mappings.mapping_count() is None or _mappings.map_count_limit() is None,
    reason="needs /proc/self/maps and /proc/sys/vm/max_map_count",
)


@pytest.fixture
def guard(monkeypatch):
    """The guard with a fake mapping count; records the cache drops instead of doing them."""
    dropped = []
    monkeypatch.setattr(_mappings, "_calls", 0)
    monkeypatch.setattr(_mappings, "_warned", False)
    monkeypatch.setattr(_mappings, "map_count_limit", lambda: 1000)
    monkeypatch.setattr(jax, "clear_caches", lambda: dropped.append(True))
    return dropped


def _fit_predict():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(30, 3))
    y = np.repeat([0, 1, 2], 10)
    return GaussianNB().fit(X, y).predict_proba(X)


def test_counts_every_check_every_calls(guard, monkeypatch):
    counts = []

    def count():
        counts.append(True)
        return 10

    monkeypatch.setattr(_mappings, "mapping_count", count)
    monkeypatch.setattr(_mappings, "CHECK_EVERY", 3)
    monkeypatch.setattr(_mappings, "MIN_SECONDS", 3600.0)
    monkeypatch.setattr(_mappings, "_last_count", -float("inf"))
    for _ in range(7):
        _mappings.after_call()
    assert len(counts) == 1  # the second count would come within the hour
    monkeypatch.setattr(_mappings, "MIN_SECONDS", 0.0)
    for _ in range(6):
        _mappings.after_call()
    assert len(counts) == 3
    _fit_predict()  # the estimators' calls go through the same counter
    assert len(counts) >= 4
    assert guard == []  # 10 mappings of 1000: nothing dropped


def test_drops_programs_and_warns_once_above_the_fraction(guard, monkeypatch):
    monkeypatch.setattr(_mappings, "mapping_count", lambda: 501)
    monkeypatch.setattr(_mappings, "CHECK_EVERY", 1)
    monkeypatch.setattr(_mappings, "MIN_SECONDS", 0.0)
    with pytest.warns(_mappings.CompiledProgramsDropped, match=r"501 memory mappings of the 1,000"):
        first = _fit_predict()
    drops = len(guard)
    assert drops >= 2  # at least one for the fit and one for predict_proba
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # once per process: no second warning
        second = _fit_predict()
    assert len(guard) == 2 * drops
    np.testing.assert_array_equal(first, second)


def test_at_the_fraction_nothing_is_dropped(guard, monkeypatch):
    monkeypatch.setattr(_mappings, "mapping_count", lambda: 500)
    assert _mappings.release_if_needed() is False
    assert guard == []


def test_without_proc_nothing_is_counted(guard, monkeypatch):
    monkeypatch.setattr(_mappings, "mapping_count", lambda: None)
    assert _mappings.release_if_needed() is False
    monkeypatch.setattr(_mappings, "mapping_count", lambda: 10**6)
    monkeypatch.setattr(_mappings, "map_count_limit", lambda: None)
    assert _mappings.release_if_needed() is False
    assert guard == []


@linux_proc
def test_dropping_returns_the_mappings_of_compiled_programs():
    # A fresh process: compile EM programs for 20 shapes, then drop them through the guard.
    script = textwrap.dedent(
        """
        import warnings
        import numpy as np
        import jax.numpy as jnp
        import genprob
        from genprob.engine import _mappings
        from genprob.families.gaussian import GaussianStory
        rng = np.random.default_rng(0)
        before = _mappings.mapping_count()
        codes = np.where(np.arange(60) % 2 == 0, np.repeat([0, 1], 30), -1)
        story = GaussianStory(covariance="full", reg_param=0.1)
        for d in range(2, 22):
            X = rng.normal(size=(60, d)) + np.repeat([0.0, 3.0], 30)[:, None]
            # EM on JAX rows is compiled (on NumPy rows it runs eagerly)
            genprob.fit_em(story, jnp.asarray(X), codes, num_classes=2)
        grown = _mappings.mapping_count()
        _mappings.FRACTION = 0.0
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            assert _mappings.release_if_needed()
        after = _mappings.mapping_count()
        assert [w.category for w in caught] == [_mappings.CompiledProgramsDropped]
        print(before, grown, after)
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=600, check=False
    )
    assert out.returncode == 0, out.stderr
    before, grown, after = map(int, out.stdout.split())
    assert grown - before > 20 * 15  # each shape's programs hold mappings
    assert after - before < (grown - before) / 4  # and dropping them returns most
