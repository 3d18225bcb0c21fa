"""Property-based fuzzing of issue 48 ("nothing lost, nothing silently wrong"), by family:

* containers and dtypes: X, y and sample_weight as lists, NumPy arrays of every dtype (text and
  complex included), object arrays, pandas and SciPy sparse give the plain float64 fit, or a
  ``ValueError`` naming the argument (text, complex);
* labels: integers (beyond 2**53 and int64), strings (NUL-suffixed ones too), objects and bools
  come back exactly (values, types, dtype) from predict and through save/load;
* model files and archives: random byte flips and truncations of a saved model give a
  ``ModelFileError``, or load the same model;
* posteriors' sizes: huge ``num_samples``/``num_chains``/``num_warmup`` (and ``sample(n)``) are
  refused before anything is allocated;
* damaged caches: damaged entries of the command line's compilation cache are compiled again,
  with the same results, and dropped.

The interrupted-fits family (streaming sources failing midway) lives with the streaming tests.
Profiles as in tests/test_fuzz_estimators.py: ``genprob-fuzz`` (fixed seed, ``make test``; this
file stays under about a minute) and ``genprob-fuzz-slow`` (``pytest -m slow``).
"""

import datetime
import io
import os
import re
import shutil
import tempfile
import tracemalloc
import warnings
import zipfile

import numpy as np
import pytest
import scipy.sparse
from hypothesis import given, settings
from hypothesis import strategies as st
from test_fuzz_estimators import FAST, SLOW, SLOW_TIMEOUT

import genprob
from genprob.engine import _limits
from genprob.io.persistence import ModelFileError

pandas = pytest.importorskip("pandas")

#: Small examples per family in the fast profile: each example fits, saves or runs a process.
FAST_SMALL = settings(FAST, max_examples=100)
FAST_PROCESSES = settings(FAST, max_examples=3)

RNG = np.random.default_rng(48)
X_BASE = RNG.integers(0, 4, size=(12, 3)).astype(np.float64)
X_BASE[:6] += 3.0  # two classes apart
Y_BASE = np.repeat([0, 1], 6)
W_BASE = RNG.integers(1, 4, size=12).astype(np.float64)


# -- containers and dtypes ------------------------------------------------------------------------
def _containers(values):
    """Every way a user may hand over a numeric matrix or vector, with what it must give."""
    matrix = values.ndim == 2
    ways = {
        "list": (values.tolist(), None),
        "tuple": (tuple(map(tuple, values)) if matrix else tuple(values), None),
        "float64": (values, None),
        "float32": (values.astype(np.float32), None),
        "int64": (values.astype(np.int64), None),
        "uint8": (values.astype(np.uint8), None),
        "int16": (values.astype(np.int16), None),
        "object numbers": (values.astype(object), None),
        "text": (values.astype(str), "holds text"),
        "bytes": (values.astype(bytes), "holds text"),
        "text list": (values.astype(str).tolist(), "holds text"),
        "complex": (values + 0j, "is complex"),
        "complex64": (values.astype(np.complex64), "is complex"),
        "pandas": (pandas.DataFrame(values) if matrix else pandas.Series(values), None),
    }
    if matrix:
        ways["csr"] = (scipy.sparse.csr_matrix(values), "sparse")
        ways["csc int"] = (scipy.sparse.csc_matrix(values.astype(np.int64)), "sparse")
    return ways


X_WAYS = list(_containers(X_BASE))
W_WAYS = ["none"] + [w for w in _containers(W_BASE) if w != "tuple"]
Y_WAYS = ["numpy", "list", "pandas", "int8", "uint64", "float"]
ESTIMATORS = {
    "GaussianNB": genprob.GaussianNB,
    "MultinomialNB": genprob.MultinomialNB,
    "LinearDiscriminantAnalysis": lambda: genprob.LinearDiscriminantAnalysis(solver="lsqr"),
}


def _y(way):
    return {
        "numpy": Y_BASE,
        "list": Y_BASE.tolist(),
        "pandas": pandas.Series(Y_BASE),
        "int8": Y_BASE.astype(np.int8),
        "uint64": Y_BASE.astype(np.uint64),
        "float": Y_BASE.astype(float),
    }[way]


_REFERENCE = {}


def _reference(name, weighted):
    key = (name, weighted)
    if key not in _REFERENCE:
        fitted = ESTIMATORS[name]().fit(X_BASE, Y_BASE, sample_weight=W_BASE if weighted else None)
        _REFERENCE[key] = fitted.predict_proba(X_BASE), fitted.predict(X_BASE).tolist()
    return _REFERENCE[key]


def _check_container(name, x_way, y_way, w_way):
    X, x_error = _containers(X_BASE)[x_way]
    weights, w_error = (None, None) if w_way == "none" else _containers(W_BASE)[w_way]
    if x_error == "sparse" and name != "MultinomialNB":
        x_error = "sparse input"  # dense-only estimators ask for .toarray()
    elif x_error == "sparse":
        x_error = None
    if w_error == "sparse":
        w_error = None
    estimator = ESTIMATORS[name]()
    if x_error or w_error:
        expected = (ValueError, TypeError) if x_error == "sparse input" else ValueError
        with pytest.raises(expected) as info:
            estimator.fit(X, _y(y_way), sample_weight=weights)
        message = str(info.value)
        if x_error == "sparse input":
            assert "toarray" in message, message
        elif x_error:
            assert f"X {x_error}" in message, message
        else:
            assert f"sample_weight {w_error}" in message, message
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # float32 rows, say: the estimator may note it
        estimator.fit(X, _y(y_way), sample_weight=weights)
    proba = estimator.predict_proba(X)
    reference, predicted = _reference(name, weights is not None)
    single = "float32" in x_way or "float32" in w_way
    np.testing.assert_allclose(proba, reference, rtol=1e-4 if single else 1e-12, atol=1e-9)
    assert estimator.predict(X).tolist() == predicted  # the labels as given (0.0 == 0)


CONTAINER_CASES = st.tuples(
    st.sampled_from(list(ESTIMATORS)),
    st.sampled_from(X_WAYS),
    st.sampled_from(Y_WAYS),
    st.sampled_from(W_WAYS),
)


@FAST_SMALL
@given(CONTAINER_CASES)
def test_containers_and_dtypes_give_the_float64_fit_or_name_the_argument(case):
    _check_container(*case)


@pytest.mark.slow
@pytest.mark.timeout(SLOW_TIMEOUT)
@SLOW
@given(CONTAINER_CASES)
def test_containers_and_dtypes_at_length(case):
    _check_container(*case)


# -- labels ---------------------------------------------------------------------------------------
_TEXT = st.text(st.characters(blacklist_categories=("Cs",)), max_size=6)


def _labels(kind, values):
    if kind in ("str", "str NUL"):
        return np.array(values, dtype=object)
    if kind == "unicode":
        return np.array(values)
    return np.array(values, dtype={"int64": np.int64, "uint64": np.uint64, "int8": np.int8}[kind])


LABEL_KINDS = {
    "int64": st.integers(-(2**63), 2**63 - 1),
    "beyond 2**53": st.integers(2**53, 2**53 + 64),
    "uint64": st.integers(2**63, 2**64 - 1),
    "int8": st.integers(-128, 127),
    "unicode": _TEXT.filter(lambda s: not s.endswith("\x00")),  # NumPy's U strips NULs
    "str": _TEXT,
    "str NUL": st.tuples(_TEXT, st.integers(1, 3)).map(lambda p: p[0] + "\x00" * p[1]),
}


@st.composite
def label_sets(draw):
    kind = draw(st.sampled_from(list(LABEL_KINDS)))
    values = draw(st.lists(LABEL_KINDS[kind], min_size=2, max_size=3, unique=True))
    if kind == "str NUL":  # the same text with and without NULs: two classes
        values = [values[0], values[0].rstrip("\x00")] + values[1:2]
    if kind == "beyond 2**53":
        kind = "int64"
    return kind, values


def _check_labels(kind, values, directory):
    classes = _labels(kind, values)
    if len(set(classes.tolist())) < 2:
        return  # NumPy's own conversion merged them (not genprob's concern)
    centers = np.arange(len(classes))[:, None] * 10.0
    X = (RNG.normal(size=(len(classes), 4, 2)) * 0.1 + centers[:, None, :]).reshape(-1, 2)
    y = np.repeat(classes, 4)
    estimator = genprob.GaussianNB(unlabeled_label=None).fit(X, y)
    predicted = estimator.predict(X)
    assert predicted.dtype == y.dtype
    assert predicted.tolist() == y.tolist()
    assert [type(v) for v in predicted.tolist()] == [type(v) for v in y.tolist()]
    loaded = genprob.load(estimator.save(os.path.join(directory, "labels.npz")))
    assert loaded.classes_.dtype == estimator.classes_.dtype
    assert loaded.classes_.tolist() == estimator.classes_.tolist()
    again = loaded.predict(X)
    assert again.dtype == predicted.dtype and again.tolist() == predicted.tolist()


@FAST_SMALL
@given(label_sets())
def test_labels_come_back_exactly_from_predict_and_load(labels):
    with tempfile.TemporaryDirectory() as directory:
        _check_labels(*labels, directory)


@pytest.mark.slow
@pytest.mark.timeout(SLOW_TIMEOUT)
@SLOW
@given(label_sets())
def test_labels_at_length(labels):
    with tempfile.TemporaryDirectory() as directory:
        _check_labels(*labels, directory)


# -- model files and archives ---------------------------------------------------------------------
def _saved(estimator, X, y):
    with tempfile.TemporaryDirectory() as directory:
        path = estimator.fit(X, y).save(os.path.join(directory, "model.npz"))
        return estimator, path.read_bytes()


MODELS = {
    "GaussianNB": _saved(genprob.GaussianNB(), X_BASE, Y_BASE),
    "CategoricalNB text labels": _saved(
        genprob.CategoricalNB(), X_BASE, np.repeat(["a\x00", "a"], 6).astype(object)
    ),
    "LDA": _saved(genprob.LinearDiscriminantAnalysis(), X_BASE, Y_BASE),
}


@st.composite
def damages(draw):
    name = draw(st.sampled_from(list(MODELS)))
    size = len(MODELS[name][1])
    if draw(st.booleans()):
        return name, ("truncate", draw(st.integers(0, size - 1)))
    flips = draw(
        st.lists(st.tuples(st.integers(0, size - 1), st.integers(1, 255)), min_size=1, max_size=4)
    )
    return name, ("flip", flips)


def _damaged(data: bytes, damage) -> bytes:
    kind, spec = damage
    if kind == "truncate":
        return data[:spec]
    data = bytearray(data)
    for position, mask in spec:
        data[position] ^= mask
    return bytes(data)


def _check_damage(name, damage, directory):
    estimator, data = MODELS[name]
    path = os.path.join(directory, "damaged.npz")
    with open(path, "wb") as stream:
        stream.write(_damaged(data, damage))
    try:
        loaded = genprob.load(path)
    except ModelFileError as error:
        assert str(error)
        return
    # a flip without meaning (a zip timestamp, say): the same model, bit for bit
    assert loaded.classes_.tolist() == estimator.classes_.tolist()
    np.testing.assert_array_equal(loaded.predict_proba(X_BASE), estimator.predict_proba(X_BASE))


@FAST_SMALL
@given(damages())
def test_damaged_model_files_are_refused_or_load_unchanged(case):
    with tempfile.TemporaryDirectory() as directory:
        _check_damage(*case, directory)


@pytest.mark.slow
@pytest.mark.timeout(SLOW_TIMEOUT)
@SLOW
@given(damages())
def test_damaged_model_files_at_length(case):
    with tempfile.TemporaryDirectory() as directory:
        _check_damage(*case, directory)


def test_every_member_damaged_is_refused():
    """Each archive member's data rewritten (same size): always a ModelFileError (the digest)."""
    estimator, data = MODELS["GaussianNB"]
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        members = [(info.filename, archive.read(info.filename)) for info in archive.infolist()]
    with tempfile.TemporaryDirectory() as directory:
        path = os.path.join(directory, "model.npz")
        for target, _ in members:
            buffer = io.BytesIO()
            with zipfile.ZipFile(buffer, "w") as archive:
                for name, content in members:
                    if name == target:
                        content = content[:-1] + bytes([content[-1] ^ 1])
                    archive.writestr(name, content)
            with open(path, "wb") as stream:
                stream.write(buffer.getvalue())
            with pytest.raises(ModelFileError):
                genprob.load(path)


# -- posteriors' sizes ----------------------------------------------------------------------------
X_BINARY = (RNG.random((60, 5)) > 0.5).astype(float)
Y_BINARY = np.repeat([0, 1], 30)
BERNOULLI = genprob.BernoulliNB().fit(X_BINARY, Y_BINARY)


@st.composite
def huge_requests(draw):
    """Requests over a limit by construction: too many chains, NUTS iterations, or bytes."""
    method = draw(st.sampled_from(["exact", "nuts"]))
    which = draw(st.sampled_from(["chains", "iterations", "bytes"] if method == "nuts" else
                                 ["chains", "bytes"]))  # fmt: skip
    chains = draw(st.integers(1, _limits.MAX_CHAINS))
    samples, warmup = draw(st.integers(1, 1000)), draw(st.integers(0, 1000))
    if which == "chains":
        chains = draw(st.integers(_limits.MAX_CHAINS + 1, 10**12))
    elif which == "iterations":
        samples = draw(st.integers(_limits.MAX_ITERATIONS + 1, 10**15))
    else:  # more draws x chains x rows x 8 bytes than the array limit, under the others
        least = _limits.MAX_ARRAY_BYTES // (8 * 60 * chains) + 1
        if method == "nuts":
            chains = draw(st.integers(_limits.MAX_CHAINS // 2, _limits.MAX_CHAINS))
            least = _limits.MAX_ARRAY_BYTES // (8 * 60 * chains) + 1
            warmup = 0
            samples = draw(st.integers(least, _limits.MAX_ITERATIONS))
        else:
            samples = draw(st.integers(least, max(least, 10**15)))
    return method, {"num_chains": chains, "num_samples": samples, "num_warmup": warmup}


def _check_huge(method, sizes):
    tracemalloc.start()
    try:
        with pytest.raises(_limits.SizeLimitError) as info:
            BERNOULLI.posterior(X_BINARY, Y_BINARY, method=method, **sizes)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    message = str(info.value)
    assert "MAX_" in message, message  # the limit named
    assert peak < 32 << 20  # nothing of the request's size was allocated


@FAST_SMALL
@given(huge_requests())
def test_huge_posteriors_are_refused_before_allocating(request_):
    _check_huge(*request_)


@pytest.mark.slow
@pytest.mark.timeout(SLOW_TIMEOUT)
@SLOW
@given(huge_requests())
def test_huge_posteriors_at_length(request_):
    _check_huge(*request_)


@FAST_SMALL
@given(st.integers(10**9, 10**30))
def test_huge_samples_are_refused_before_allocating(n_samples):
    with pytest.raises(_limits.SizeLimitError, match="MAX_ARRAY_BYTES"):
        BERNOULLI.sample(n_samples)


# -- damaged caches (the command line's compilation cache) ---------------------------------------
@pytest.fixture(scope="module")
def filled_cache():
    from test_compile_speed import _cli_process

    home = tempfile.mkdtemp()
    try:
        expected = _cli_process(home)
        yield home, expected
    finally:
        shutil.rmtree(home, ignore_errors=True)


@st.composite
def cache_damages(draw):
    """(entry index, how) for one or more entries: truncated, emptied, flipped or replaced."""
    how = st.one_of(
        st.tuples(st.just("truncate"), st.floats(0, 0.99)),
        st.just(("empty", None)),
        st.tuples(st.just("flip"), st.floats(0, 0.999)),
        st.tuples(st.just("replace"), st.binary(min_size=1, max_size=64)),
    )
    return draw(st.lists(st.tuples(st.integers(0, 100), how), min_size=1, max_size=3))


def _damage_entry(path, how, argument):
    data = path.read_bytes()
    if how == "truncate":
        data = data[: int(len(data) * argument)]
    elif how == "empty":
        data = b""
    elif how == "flip" and data:
        position = int(len(data) * argument)
        data = data[:position] + bytes([data[position] ^ 0xFF]) + data[position + 1 :]
    elif how == "replace":
        data = argument
    path.write_bytes(data)


def _check_cache(filled, damage, refill=False):
    from pathlib import Path

    from test_compile_speed import _cli_process

    home, expected = filled
    with tempfile.TemporaryDirectory() as copy:
        shutil.copytree(home, copy, dirs_exist_ok=True)
        directory = Path(copy) / "genprob" / "jax"
        entries = sorted(p for p in directory.iterdir() if p.is_file() and "lock" not in p.name)
        assert entries
        for index, (how, argument) in damage:
            _damage_entry(entries[index % len(entries)], how, argument)
        # compiled again: the same result (the first line is the cache's directory)
        assert _cli_process(copy)[1:] == expected[1:]
        if refill:  # a cache dropped at exit (an entry JAX could not read) is filled again
            assert _cli_process(copy)[1:] == expected[1:]
            assert any(p.is_file() for p in directory.iterdir())


@FAST_PROCESSES
@given(damage=cache_damages())
def test_damaged_cache_entries_are_compiled_again_and_dropped(filled_cache, damage):
    _check_cache(filled_cache, damage)


@pytest.mark.slow
@pytest.mark.timeout(SLOW_TIMEOUT)
@settings(SLOW, max_examples=200)
@given(damage=cache_damages())
def test_damaged_cache_entries_at_length(filled_cache, damage):
    _check_cache(filled_cache, damage, refill=True)


# -- issue 60: NUTS setting values checked before any work ----------------------------------------
BAD_NUTS_SETTINGS = [
    *[("target_accept_prob", v) for v in (1.5, 0, -1, float("nan"), 1, True, "0.9", None)],
    *[("step_size", v) for v in (0, -0.1, float("inf"), float("nan"), False, "1")],
    *[("max_tree_depth", v) for v in (0, -1, 2.5, 31, True, (5, 0), (5,), "10", 10.0)],
    ("dense_mass", "yes"),
    ("dense_mass", 1),
    ("dense_mass", [("class_prior", 2)]),
    *[(flag, v) for flag in ("adapt_step_size", "forward_mode_differentiation") for v in (1, "no")],
    ("regularize_mass_matrix", None),
]


@pytest.fixture
def no_sampling(monkeypatch):
    """Any start of the sampler's work fails the test."""
    from genprob.inference import mcmc

    def never(*args, **kwargs):
        raise AssertionError("NUTS work started before its settings were checked")

    for name in ("_prepare", "start_values", "_compiled_chain", "_run_chains"):
        monkeypatch.setattr(mcmc, name, never)


@pytest.mark.parametrize(("name", "value"), BAD_NUTS_SETTINGS, ids=repr)
def test_nuts_setting_values_are_refused_before_any_work(name, value, no_sampling):
    from genprob.inference import mcmc

    estimator = genprob.GaussianNB().fit(X_BASE, Y_BASE)
    message = rf"^{name} must be .*, got {re.escape(repr(value))}\.$"
    with pytest.raises(ValueError, match=message):
        estimator.posterior(X_BASE, Y_BASE, num_samples=10, num_warmup=10, **{name: value})
    with pytest.raises(ValueError, match=message):
        mcmc.run_nuts(estimator.story_, X_BASE, Y_BASE, **{name: value})


def test_nuts_setting_ranges_name_the_valid_values(no_sampling):
    from genprob.inference import mcmc

    estimator = genprob.MixtureDiscriminantAnalysis(n_components=1).fit(X_BASE, Y_BASE)
    with pytest.raises(ValueError, match=r"target_accept_prob must be a number strictly between"):
        estimator.posterior(X_BASE, Y_BASE, target_accept_prob=1.5)
    expected = {
        "step_size": "a finite number > 0",
        "max_tree_depth": "an int in [1, 30]",
        "adapt_mass_matrix": "True or False",
    }
    for name, words in expected.items():
        with pytest.raises(ValueError, match=re.escape(f"{name} must be {words}")):
            mcmc._kernel_settings({name: -1})
    # the edges of each range, and NumPyro's other forms, are accepted
    settings_ = {
        "target_accept_prob": 0.999,
        "step_size": 1e-300,
        "max_tree_depth": (1, 30),
        "dense_mass": [("class_prior", "means")],
        "adapt_step_size": np.bool_(False),
    }
    assert dict(mcmc._kernel_settings(settings_))["max_tree_depth"] == (1, 30)
    with pytest.raises(ValueError, match="max_tree_depth must be an int in"):  # BlackJAX: an int
        mcmc._kernel_settings({"max_tree_depth": (5, 10)}, "blackjax")


# -- issue 60: columns a model file cannot hold are refused at fit, by name ------------------------
DATE_COLUMNS = {
    "datetime64": pandas.date_range("2020-01-01", periods=12, freq="D"),
    "tz-aware": pandas.date_range("2020-01-01", periods=12, freq="h", tz="UTC"),
    "timedelta64": pandas.to_timedelta(np.arange(12), unit="s"),
    "date objects": [datetime.date(2020, 1, 1 + i) for i in range(12)],
    "time objects": [datetime.time(i) for i in range(12)],
}


@pytest.mark.parametrize("family", ["gaussian", "categorical"])
@pytest.mark.parametrize("kind", list(DATE_COLUMNS))
def test_date_columns_are_refused_at_fit_by_name(kind, family):
    frame = pandas.DataFrame({"x": X_BASE[:, 0], "when": DATE_COLUMNS[kind]})
    with pytest.raises(ValueError, match="^column 'when' holds dates, times or durations"):
        genprob.MixedNB({"x": "gaussian", "when": family}).fit(frame, Y_BASE)
    values = np.empty((12, 2), dtype=object)  # an array: the column named by position
    values[:, 0], values[:, 1] = X_BASE[:, 0], list(frame["when"])
    with pytest.raises(ValueError, match="^column 1 holds dates, times or durations"):
        genprob.MixedNB({0: "gaussian", 1: family}).fit(values, Y_BASE)


def test_a_date_column_is_not_read_as_nanoseconds_at_predict():
    estimator = genprob.MixedNB().fit(pandas.DataFrame({"x": X_BASE[:, 0]}), Y_BASE)
    dates = pandas.DataFrame({"x": DATE_COLUMNS["datetime64"]})
    with pytest.raises(ValueError, match="^column 'x' holds dates, times or durations"):
        estimator.predict(dates)


@pytest.mark.parametrize(
    ("values", "kind"),
    [
        ([{"a": i % 2} for i in range(12)], "dict"),
        ([[i % 2, 1] for i in range(12)], "list"),
        ([b"a", b"b"] * 6, "bytes"),
    ],
)
def test_categories_that_a_file_cannot_hold_are_refused_by_name(values, kind):
    frame = pandas.DataFrame({"x": X_BASE[:, 0], "odd": values})
    message = f"^categorical column 'odd' holds {kind} values .*a category is a string, a number"
    with pytest.raises(ValueError, match=message):
        genprob.MixedNB({"x": "gaussian", "odd": "categorical"}).fit(frame, Y_BASE)
