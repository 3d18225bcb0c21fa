"""The native statistics kernel (genprob/_native.py): the same per-class sums as SciPy's path,
on every layout of labels, weights and shifts, arguments checked before any native call, and
off, missing or small inputs leaving the SciPy path in charge."""

import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from sklearn import naive_bayes as sknb
from test_fuzz_estimators import FAST, GAUSSIAN_SCALES, SLOW, SLOW_TIMEOUT
from test_host_statistics import NUM_CLASSES, _codes_and_weights, offset_data

import genprob
from genprob import _native, core
from genprob.families.gaussian import structures

pytestmark = pytest.mark.skipif(
    not _native.enabled(), reason="the native kernel is switched off (GENPROB_NATIVE=0)"
)

try:
    import llvmlite  # noqa: F401

    HAVE_LLVMLITE = True
except ImportError:  # pragma: no cover - the test extra installs it
    HAVE_LLVMLITE = False

needs_llvmlite = pytest.mark.skipif(not HAVE_LLVMLITE, reason="llvmlite is not installed")


def reference_moments(X, codes, weights, shift):
    """Per-class weighted sums and sums of squares of ``X - shift``, by masks, in float64."""
    Z = X.astype(np.float64) - np.asarray(shift, np.float64)
    w = np.ones(len(codes)) if weights is None else np.asarray(weights, np.float64)
    sums = np.array([(w[codes == k, None] * Z[codes == k]).sum(0) for k in range(NUM_CLASSES)])
    squares = np.array(
        [(w[codes == k, None] * Z[codes == k] ** 2).sum(0) for k in range(NUM_CLASSES)]
    )
    return sums, squares


def scipy_moments(R, X, shift, block):
    """The same sums by SciPy's scatter-add (the path without the kernel)."""
    Z = X - np.asarray(shift, X.dtype)
    sums = np.zeros((NUM_CLASSES, X.shape[1]), X.dtype)
    squares = np.zeros_like(sums)
    add = R.class_sums_adder(X.shape[1], X.dtype)
    for start in range(0, len(X), block):
        add(sums, start, np.ascontiguousarray(Z[start : start + block]))
        add(squares, start, np.ascontiguousarray(Z[start : start + block] ** 2))
    return sums, squares


@needs_llvmlite
def test_kernel_compiles_here():
    assert _native._function(np.dtype(np.float64)) is not None
    assert _native._function(np.dtype(np.float32)) is not None
    assert _native.status().startswith("compiled (llvmlite ")


@needs_llvmlite
@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("kind", ["labels", "weighted", "unlabeled"])
@pytest.mark.parametrize("block", [1, 7, 4096, 10**7])
def test_class_moments_match_direct_sums_and_the_scipy_path(dtype, kind, block, tol):
    codes, weights = _codes_and_weights(kind)
    X, _ = offset_data()
    X = X.astype(dtype)
    shift = X[:1000].mean(axis=0)  # a reference point near the data, as the fit takes it
    R = core.OneHotRows(codes, NUM_CLASSES, weights, dtype)
    R.check()
    labeled = codes >= 0 if weights is None else (codes >= 0) & (weights > 0)
    # rows of zeros in R touch no class, not even with 0 x inf = NaN
    X[np.flatnonzero(~labeled)[:3]] = np.inf
    assert kind == "labels" or np.isinf(X).any()
    sums, squares = R.class_moments(X, shift, block)
    assert sums.dtype == squares.dtype == np.dtype(dtype)
    assert sums.flags.c_contiguous and sums.shape == (NUM_CLASSES, X.shape[1])
    keep = labeled
    kept_weights = None if weights is None else weights[keep]
    expected = reference_moments(X[keep], codes[keep], kept_weights, shift)
    rtol = tol[dtype]["rtol"]
    for got, want in zip((sums, squares), expected, strict=True):
        np.testing.assert_allclose(got, want, rtol=rtol, atol=rtol * np.abs(want).max())
    # the SciPy path sums the same blocks in the same order: equal to rounding
    for got, want in zip((sums, squares), scipy_moments(R, X, shift, block), strict=True):
        np.testing.assert_allclose(got, want, rtol=10 * np.finfo(dtype).eps, atol=0)


@needs_llvmlite
def test_slices_and_odd_shapes():
    rng = np.random.default_rng(1)
    for n, d in [(1, 1), (3, 1), (5, 2), (1000, 3), (257, 64)]:
        codes = rng.integers(-1, NUM_CLASSES, n)
        X = rng.normal(size=(n, d)) * 10.0 + 3.0
        R = core.OneHotRows(codes, NUM_CLASSES)
        R.check()
        for start, stop in [(0, n), (n // 3, n), (0, (n + 1) // 2)]:
            part = R[start:stop]
            sums, squares = part.class_moments(X[start:stop], 0.0, 16)
            want = reference_moments(X[start:stop], codes[start:stop], None, np.zeros(d))
            np.testing.assert_allclose(sums, want[0], rtol=1e-12, atol=1e-12)
            np.testing.assert_allclose(squares, want[1], rtol=1e-12, atol=1e-12)
    empty = core.OneHotRows(np.zeros(0, np.int64), NUM_CLASSES)
    sums, squares = empty.class_moments(np.zeros((0, 4)), 0.0, 16)
    assert not sums.any() and not squares.any() and sums.shape == (NUM_CLASSES, 4)


@needs_llvmlite
def test_other_layouts_take_the_scipy_path():
    codes, _ = _codes_and_weights("labels")
    X, _ = offset_data()
    R = core.OneHotRows(codes, NUM_CLASSES)
    R.check()
    assert R.class_moments(np.asfortranarray(X), 0.0, 64) is None
    assert R.class_moments(X.astype(np.float32), 0.0, 64) is None  # R's float64 would cast it
    assert R.class_moments(X.astype(np.int64), 0.0, 64) is None


@needs_llvmlite
def test_arguments_are_checked_before_the_native_call():
    rng = np.random.default_rng(2)
    n, d, L = 50, 3, 4
    good = {
        "rows": rng.normal(size=(n, d)),
        "targets": rng.integers(0, L, n),
        "weights": np.ones(n),
        "shift": np.zeros(d),
        "out": np.zeros((L, 2, d)),
        "part": np.zeros((L, 2, d)),
    }
    assert _native.class_moments(*good.values(), 8)
    read_only = np.zeros((L, 2, d))
    read_only.flags.writeable = False
    bad_values = {
        "targets": [good["targets"].astype(np.int32), good["targets"][:-1]],
        "weights": [np.ones(n, np.float32), np.ones(2 * n)[::2], np.ones(n + 1)],
        "shift": [np.zeros(d + 1), np.zeros((1, d)), [0.0] * d],
        "out": [np.zeros((L, d, 2)), read_only, np.zeros((L, 2, d), np.float32)],
        "part": [np.zeros((L + 1, 2, d)), read_only],
    }
    for name, values in bad_values.items():
        for value in values:
            arguments = {**good, name: value}
            with pytest.raises(
                ValueError, match=f"class_moments: {name} must be a C-contiguous, aligned"
            ):
                _native.class_moments(*arguments.values(), 8)
    with pytest.raises(ValueError, match="rows must be a C-contiguous, aligned"):
        _native.class_moments(good["rows"][:, :2], *list(good.values())[1:], 8)
    unaligned = np.zeros(n * d * 8 + 1, np.uint8)[1:].view(np.float64).reshape(n, d)
    assert not unaligned.flags.aligned
    with pytest.raises(ValueError, match="rows must be a C-contiguous, aligned"):
        _native.class_moments(unaligned, *list(good.values())[1:], 8)
    with pytest.raises(ValueError, match="rows must be a 2-D NumPy array"):
        _native.class_moments(good["rows"][0], *list(good.values())[1:], 8)
    with pytest.raises(ValueError, match="block_rows must be at least 1"):
        _native.class_moments(*good.values(), 0)


@needs_llvmlite
def test_targets_outside_the_rows_stay_inside_the_arrays():
    # callers pass checked targets; any other goes to the last (dropped) row, never outside
    rng = np.random.default_rng(4)
    n, d, L = 40, 3, 4
    rows = rng.normal(size=(n, d))
    targets = rng.integers(0, L, n)
    targets[[3, 17, 30]] = [L, -1, 2**62]
    out = np.zeros((L + 2, 2, d))  # two guard rows beyond the kernel's L
    view = out[:L]
    assert _native.class_moments(
        rows, targets, np.ones(n), np.zeros(d), view, np.zeros((L, 2, d)), 7
    )
    assert not out[L:].any()
    inside = targets.copy()
    inside[[3, 17, 30]] = L - 1
    for t in range(L):
        np.testing.assert_allclose(out[t, 0], rows[inside == t].sum(0), rtol=1e-12, atol=1e-12)


def test_switched_off_by_the_environment(monkeypatch):
    monkeypatch.setenv("GENPROB_NATIVE", "0")
    assert not _native.enabled()
    assert _native.status() == "off (GENPROB_NATIVE=0)"
    codes, _ = _codes_and_weights("labels")
    X, _ = offset_data()
    R = core.OneHotRows(codes, NUM_CLASSES)
    R.check()
    assert R.class_moments(X, 0.0, 64) is None


def test_without_llvmlite_fits_take_the_scipy_path():
    # llvmlite made unimportable in a fresh process: same fit, reason kept, no error
    script = textwrap.dedent(
        """
        import sys
        sys.modules["llvmlite"] = None
        import numpy as np, genprob
        from genprob import _native
        from genprob.families.gaussian import structures
        structures.NATIVE_MIN_BYTES = 0
        rng = np.random.default_rng(0)
        X = rng.normal(size=(3000, 4)); y = rng.integers(0, 3, 3000)
        est = genprob.GaussianNB().fit(X, y)
        print(_native.status())
        print(float(np.abs(est.theta_ - [X[y == k].mean(0) for k in range(3)]).max()))
        """
    )
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True
    )
    status, error = result.stdout.splitlines()
    assert status == "unavailable: llvmlite is not installed (pip install 'genprob[native]')"
    assert float(error) < 1e-12


@pytest.fixture
def native_everywhere(monkeypatch):
    """Fits of any size take the native kernel (the suite's inputs are below MIN_BYTES)."""
    monkeypatch.setattr(structures, "NATIVE_MIN_BYTES", 0)


@needs_llvmlite
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_gaussian_nb_fits_agree_with_and_without_the_kernel(
    native_everywhere, monkeypatch, weighted, dtype, tol
):
    X, y = offset_data(seed=9)
    if dtype == "float32":
        X = X - X.mean(axis=0)
    weights = np.random.default_rng(5).uniform(0, 2, len(y)) if weighted else None
    native = genprob.GaussianNB(dtype=dtype).fit(X, y, sample_weight=weights)
    assert _native.status().startswith("compiled")
    monkeypatch.setenv("GENPROB_NATIVE", "0")
    scipy_fit = genprob.GaussianNB(dtype=dtype).fit(X, y, sample_weight=weights)
    for name in ("theta_", "var_", "class_prior_", "class_count_"):
        np.testing.assert_allclose(
            getattr(native, name), getattr(scipy_fit, name), rtol=tol[dtype]["rtol"] / 1e3
        )
    reference = sknb.GaussianNB().fit(X, y, sample_weight=weights)
    np.testing.assert_allclose(native.theta_, reference.theta_, **tol[dtype])


@needs_llvmlite
def test_a_large_fit_uses_the_kernel_on_threads():
    # 12 MiB of rows: above MIN_BYTES, two spans on a 2-core machine
    rng = np.random.default_rng(3)
    y = rng.integers(0, 4, 40_000)
    X = rng.normal(size=(40_000, 40)) + y[:, None]
    assert X.nbytes >= _native.MIN_BYTES
    est = genprob.GaussianNB().fit(X, y)
    assert _native.status().startswith("compiled")
    reference = sknb.GaussianNB().fit(X, y)
    np.testing.assert_allclose(est.theta_, reference.theta_, rtol=1e-12)
    np.testing.assert_allclose(est.var_, reference.var_, rtol=1e-10)


@needs_llvmlite
@pytest.mark.parametrize("bad", [np.inf, -np.inf, np.nan])
def test_native_fits_name_nonfinite_input_as_scikit_learn(native_everywhere, bad):
    X, y = offset_data(seed=7)
    X[-1, 0] = bad
    with pytest.raises(ValueError) as expected:
        sknb.GaussianNB().fit(X, y)
    with pytest.raises(ValueError) as actual:
        genprob.GaussianNB().fit(X, y)
    assert str(actual.value) == str(expected.value)


@needs_llvmlite
def test_native_fits_name_overflow_without_warnings(native_everywhere):
    X, y = offset_data(seed=8)
    X[:, 1] *= 1e200  # finite, but its squares overflow
    for weights in (None, np.full(len(y), 2.0)):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            with pytest.raises(ValueError, match="feature 1 has values too large to square"):
                genprob.GaussianNB().fit(X, y, sample_weight=weights)


def test_small_fits_do_not_load_llvm():
    script = textwrap.dedent(
        """
        import sys
        import numpy as np, genprob
        from sklearn.datasets import load_iris
        X, y = load_iris(return_X_y=True)
        genprob.GaussianNB().fit(X, y).predict_proba(X)
        rng = np.random.default_rng(0)
        big = rng.normal(size=(20_000, 40))  # 6 MiB: below MIN_BYTES
        genprob.GaussianNB().fit(big, rng.integers(0, 3, 20_000))
        print("llvmlite" in sys.modules)
        """
    )
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == "False"


KERNEL_CASES = dict(
    n=st.integers(1, 300),
    d=st.integers(1, 9),
    exponent=GAUSSIAN_SCALES,
    weighted=st.booleans(),
    unlabeled=st.booleans(),
    block=st.integers(1, 64),
    seed=st.integers(0, 2**32 - 1),
)


def kernel_agrees_with_scipy(n, d, exponent, weighted, unlabeled, block, seed):
    rng = np.random.default_rng(seed)
    codes = rng.integers(-1 if unlabeled else 0, NUM_CLASSES, n)
    weights = rng.uniform(0, 3, n) * (rng.uniform(size=n) > 0.2) if weighted else None
    X = rng.normal(size=(n, d)) * 10.0**exponent
    R = core.OneHotRows(codes, NUM_CLASSES, weights)
    R.check()
    with np.errstate(over="ignore", invalid="ignore", under="ignore"):
        sums, squares = R.class_moments(X, 0.0, block)
        expected = scipy_moments(R, X, 0.0, block)
    for got, want in zip((sums, squares), expected, strict=True):
        # the same entries overflow; finite ones agree to rounding
        np.testing.assert_array_equal(np.isfinite(got), np.isfinite(want))
        finite = np.isfinite(want)
        np.testing.assert_allclose(got[finite], want[finite], rtol=1e-13, atol=0)


@needs_llvmlite
@FAST
@given(**KERNEL_CASES)
def test_fuzz_kernel_agrees_with_scipy(**case):
    kernel_agrees_with_scipy(**case)


@needs_llvmlite
@pytest.mark.slow
@pytest.mark.timeout(SLOW_TIMEOUT)
@SLOW
@given(**KERNEL_CASES)
def test_fuzz_kernel_agrees_with_scipy_slow(**case):
    kernel_agrees_with_scipy(**case)
