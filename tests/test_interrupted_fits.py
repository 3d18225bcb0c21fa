"""Fits over chunks that fail midway leave the estimator exactly as it was (issue 48, item 7).

A streaming fit (a generator, ``Chunks``, Parquet) or a Dask fit whose source raises after some
chunks, in the labeled pass or in an EM pass, must either finish or leave the estimator as it
was: the same attributes (the very same objects), the same predictions; an unfitted estimator
stays unfitted. The fuzz family "interrupted fits" draws the estimator, the data, the chunks,
the state before and the chunk after which the source raises.
"""

import warnings

import numpy as np
import pytest
from _scaling_cases import CASES, as_frame, make_data, make_estimator
from hypothesis import event, given
from hypothesis import strategies as st
from sklearn.exceptions import ConvergenceWarning, NotFittedError
from test_fuzz_estimators import FAST, SLOW, SLOW_TIMEOUT

from genprob.engine.streaming import Chunks, parquet


class SourceFailed(RuntimeError):
    """What the failing sources raise (a disk or network error, say)."""


def _chunks(X, y, sizes):
    bounds = np.cumsum([0, *sizes])
    bounds = np.append(bounds[bounds < len(y)], len(y))
    return [(X[a:b], y[a:b]) for a, b in zip(bounds[:-1], bounds[1:], strict=True)]


def _failing(chunks, after, error=SourceFailed):
    """A function returning a fresh iterator of ``chunks`` that raises ``error`` once ``after``
    chunks were read in all, counted over every pass (labeled pass, EM passes)."""
    read = [0]

    def fresh():
        for chunk in chunks:
            if read[0] == after:
                raise error(f"the source failed after {after} chunks")
            read[0] += 1
            yield chunk

    return fresh


def _state(estimator):
    """Everything the estimator holds: its attributes, the very objects."""
    return dict(vars(estimator))


def _predictions(estimator, X):
    try:
        return estimator.predict_proba(X)
    except NotFittedError:
        return None


def _assert_as_before(estimator, before, predictions, X):
    state = vars(estimator)
    assert sorted(state) == sorted(before), "attributes added or removed"
    changed = [name for name in state if state[name] is not before[name]]
    assert changed == [], f"attributes replaced: {changed}"
    if predictions is None:
        with pytest.raises(NotFittedError):
            estimator.predict_proba(X)
    else:
        np.testing.assert_array_equal(estimator.predict_proba(X), predictions)


def _fitted(name, seed=1):
    X, y, _ = make_data(name, seed=seed)
    return make_estimator(name).fit(X, y)


def _quiet_em(estimator):
    return estimator.set_params(max_iter=3)


@pytest.mark.parametrize("name", CASES)
def test_a_generator_failing_midway_keeps_the_previous_fit(name):
    estimator = _fitted(name)
    X, y, _ = make_data(name, seed=2)
    before, predictions = _state(estimator), _predictions(estimator, X)
    source = _failing(_chunks(X, y, (50, 50, 50, 50, 40)), after=3)()
    with pytest.raises(SourceFailed):
        estimator.fit(source, classes=[0, 1, 2])
    _assert_as_before(estimator, before, predictions, X)


@pytest.mark.parametrize("name", ["gaussian_nb", "categorical", "mixed"])
def test_an_unfitted_estimator_stays_unfitted(name):
    estimator = make_estimator(name)
    X, y, _ = make_data(name, seed=2)
    before = _state(estimator)
    with pytest.raises(SourceFailed):
        estimator.fit(Chunks(_failing(_chunks(X, y, (60, 60, 60, 60)), after=2)))
    _assert_as_before(estimator, before, None, X)


@pytest.mark.parametrize("name", ["gaussian_nb", "qda", "multinomial"])
def test_a_source_failing_in_an_em_pass_keeps_the_previous_fit(name):
    estimator = _quiet_em(_fitted(name))
    X, y, _ = make_data(name, seed=3, unlabeled_fraction=0.4)
    before, predictions = _state(estimator), _predictions(estimator, X)
    chunks = _chunks(X, y, (80, 80, 80))
    # the label pass and the labeled pass read 3 chunks each; the EM pass fails at its second
    with pytest.raises(SourceFailed), warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        estimator.fit(Chunks(_failing(chunks, after=3 + 3 + 1)))
    _assert_as_before(estimator, before, predictions, X)


def test_an_interrupt_keeps_the_previous_fit():
    estimator = _fitted("lda")
    X, y, _ = make_data("lda", seed=2)
    before, predictions = _state(estimator), _predictions(estimator, X)
    source = _failing(_chunks(X, y, (100, 100, 40)), after=1, error=KeyboardInterrupt)()
    with pytest.raises(KeyboardInterrupt):
        estimator.fit(source, classes=[0, 1, 2])
    _assert_as_before(estimator, before, predictions, X)


def test_a_chunk_with_an_unknown_label_keeps_the_previous_fit():
    estimator = _fitted("poisson")
    X, y, _ = make_data("poisson", seed=2)
    before, predictions = _state(estimator), _predictions(estimator, X)
    y = y.copy()
    y[-1] = 7  # in the last chunk: every other chunk was added already
    with pytest.raises(ValueError, match="7"):
        estimator.fit(iter(_chunks(X, y, (100, 100, 40))), classes=[0, 1, 2])
    _assert_as_before(estimator, before, predictions, X)


def test_a_parquet_file_failing_midway_keeps_the_previous_fit(tmp_path):
    pytest.importorskip("pyarrow")
    Xp, yp, _ = make_data("gaussian_nb", seed=1)
    estimator = make_estimator("gaussian_nb").fit(as_frame(Xp), yp)
    X, y, _ = make_data("gaussian_nb", seed=2)
    before, predictions = _state(estimator), _predictions(estimator, as_frame(X))
    frame = as_frame(X).assign(label=y)
    for k, part in enumerate(np.array_split(np.arange(len(y)), 3)):
        frame.iloc[part].to_parquet(tmp_path / f"part-{k}.parquet")
    source = parquet(tmp_path, target="label", batch_size=50)
    # the last file is damaged after the source was opened (a disk error, a concurrent writer)
    (tmp_path / "part-2.parquet").write_bytes(b"PAR1 not a Parquet file any more PAR1")
    with pytest.raises(Exception, match="(?i)parquet|magic|invalid|size"):
        estimator.fit(source, classes=[0, 1, 2])
    _assert_as_before(estimator, before, predictions, as_frame(X))


@pytest.mark.parametrize("unlabeled_fraction", [0.0, 0.4])
def test_a_dask_partition_failing_keeps_the_previous_fit(unlabeled_fraction):
    da = pytest.importorskip("dask.array")
    dask = pytest.importorskip("dask")
    estimator = _quiet_em(_fitted("gaussian_nb"))
    X, y, _ = make_data("gaussian_nb", seed=2, unlabeled_fraction=unlabeled_fraction)
    before, predictions = _state(estimator), _predictions(estimator, X)
    computed = [0]
    # labeled fit: the third partition fails at once; EM: in the first EM pass
    fail_at = 1 if unlabeled_fraction == 0 else 2

    def third_partition_fails(block, block_info=None):
        if block_info is not None and block_info[0]["chunk-location"][0] == 2:
            computed[0] += 1
            if computed[0] == fail_at:
                raise SourceFailed("the partition's worker lost its data")
        return block

    Xd = da.from_array(X, chunks=(60, 3)).map_blocks(third_partition_fails, dtype=X.dtype)
    yd = da.from_array(y, chunks=60)
    with dask.config.set(scheduler="synchronous"), warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        with pytest.raises(SourceFailed):
            estimator.fit(Xd, yd)
    _assert_as_before(estimator, before, predictions, X)


# -- fuzz family "interrupted fits" ----------------------------------------------------------------
@st.composite
def interrupted_fits(draw):
    """An estimator in some state, and a chunk source that raises after a random chunk."""
    name = draw(st.sampled_from(CASES))
    unlabeled = draw(st.sampled_from([0.0, 0.3]))
    X, y, _ = make_data(name, seed=draw(st.integers(0, 3)), unlabeled_fraction=unlabeled)
    sizes = draw(st.lists(st.integers(1, 120), min_size=1, max_size=6))
    chunks = _chunks(X, y, sizes)
    state = draw(st.sampled_from(["fitted", "streamed", "unfitted"]))
    # reads: labels pass + labeled pass + a few EM passes (beyond them the fit finishes)
    after = draw(st.integers(0, 4 * len(chunks)))
    error = draw(st.sampled_from([SourceFailed, KeyboardInterrupt]))
    one_shot = draw(st.booleans()) and not unlabeled
    return name, X, y, chunks, state, after, error, one_shot


def _check_interrupted_fit(case):
    name, X, y, chunks, state, after, error, one_shot = case
    estimator = _quiet_em(make_estimator(name))
    if state == "fitted":
        estimator = _quiet_em(_fitted(name, seed=5))
    elif state == "streamed":
        Xs, ys, _ = make_data(name, seed=6)
        estimator.fit(Chunks(_chunks(Xs, ys, (100, 140))))
    before, predictions = _state(estimator), _predictions(estimator, X)
    source = _failing(chunks, after, error)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        try:
            if one_shot:
                estimator.fit(source(), classes=[0, 1, 2])
            else:
                estimator.fit(Chunks(source))
        except (SourceFailed, KeyboardInterrupt):
            event(f"interrupted, {state} before")
            _assert_as_before(estimator, before, predictions, X)
            return
    event("finished")
    assert estimator.predict_proba(X).shape == (len(y), 3)  # the fit finished


@FAST
@given(interrupted_fits())
def test_interrupted_fits_leave_the_estimator_as_it_was(case):
    _check_interrupted_fit(case)


@pytest.mark.slow
@pytest.mark.timeout(SLOW_TIMEOUT)
@SLOW
@given(interrupted_fits())
def test_interrupted_fits_fuzzed_at_length(case):
    _check_interrupted_fit(case)
