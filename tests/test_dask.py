"""Fits and predictions on Dask collections, on a real two-process LocalCluster."""

import os
import time
import warnings

import numpy as np
import pytest
from _scaling_cases import CASES, as_frame, assert_same_fit, make_data, make_estimator

da = pytest.importorskip("dask.array")
dd = pytest.importorskip("dask.dataframe")
distributed = pytest.importorskip("distributed")

from sklearn.exceptions import ConvergenceWarning  # noqa: E402

from genprob.estimators import GaussianNB, GenerativeClassifier  # noqa: E402


def _dask_arrays(X, y, w=None, chunks=(1, 60, 0, 79, 100)):
    """Row blocks of uneven sizes: a single row, an empty block, boundaries inside classes."""
    sizes = list(chunks[:-1]) + [len(y) - sum(chunks[:-1])]
    Xd = da.from_array(X, chunks=(tuple(sizes), X.shape[1]))
    yd = da.from_array(y, chunks=(tuple(sizes),))
    wd = None if w is None else da.from_array(w, chunks=(tuple(sizes),))
    return Xd, yd, wd


@pytest.mark.parametrize("name", CASES)
def test_dask_fit_and_predictions_equal_in_memory(client, name):
    X, y, w = make_data(name, seed=4, unlabeled_fraction=0.4)
    y[60:140] = -1  # a block with no labeled row
    Xd, yd, wd = _dask_arrays(X, y, w)
    # a few EM iterations keep the test quick (each one is a round trip to the cluster)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        reference = make_estimator(name).set_params(max_iter=3).fit(X, y, sample_weight=w)
        fitted = make_estimator(name).set_params(max_iter=3).fit(Xd, yd, sample_weight=wd)
    assert reference.n_iter_ == 3
    assert_same_fit(reference, fitted)

    labeled = make_estimator(name).fit(X[y >= 0], y[y >= 0])
    Xl, yl, _ = _dask_arrays(X[y >= 0], y[y >= 0], chunks=(1, 30, 0, 50))
    assert_same_fit(labeled, make_estimator(name).fit(Xl, yl))

    proba = fitted.predict_proba(Xd)
    assert isinstance(proba, da.Array)
    np.testing.assert_allclose(proba.compute(), reference.predict_proba(X), rtol=1e-9, atol=1e-12)
    np.testing.assert_array_equal(fitted.predict(Xd).compute(), reference.predict(X))
    total = fitted.log_likelihood(Xd, yd)
    assert isinstance(total, da.Array)
    assert float(total.compute()) == pytest.approx(reference.log_likelihood(X, y), rel=1e-10)


@pytest.mark.parametrize("name", ["qda", "categorical", "mixed"])
def test_dask_dataframe_fit_and_predict(client, name):
    X, y, _ = make_data(name, seed=5, unlabeled_fraction=0.3)
    frame = as_frame(X).assign(label=y)
    data = dd.from_pandas(frame, npartitions=4)
    if name == "mixed":
        estimator = lambda: make_estimator(name).set_params(  # noqa: E731
            families={"f0": "gaussian", "f1": "categorical", "f2": "poisson"}
        )
    else:
        estimator = lambda: make_estimator(name)  # noqa: E731
    reference = estimator().fit(as_frame(X), y)
    fitted = estimator().fit(data.drop(columns="label"), data["label"])
    assert_same_fit(reference, fitted)
    proba = fitted.predict_proba(data.drop(columns="label"))
    assert isinstance(proba, dd.DataFrame)
    np.testing.assert_allclose(
        proba.compute().to_numpy(), reference.predict_proba(as_frame(X)), rtol=1e-9
    )
    predicted = fitted.predict(data.drop(columns="label")).compute()
    np.testing.assert_array_equal(predicted.to_numpy(), reference.predict(as_frame(X)))


@pytest.fixture
def driver_rows(monkeypatch):
    """Rows the driver itself reads in labeled passes, per pass (the head is set to 50 rows)."""
    from genprob.engine import distributed as gd
    from genprob.engine import streaming

    monkeypatch.setattr(gd, "HEAD_ROWS", 50)
    passes = []
    original = streaming.labeled_pass

    def spy(estimator, chunks, classes, progress=None):
        chunks = list(chunks)
        passes.append(sum(np.shape(X)[0] for X, _, _ in chunks))
        return original(estimator, chunks, classes, progress)

    monkeypatch.setattr(streaming, "labeled_pass", spy)
    return passes


def test_the_driver_reads_the_head_unless_the_story_grows(client, driver_rows):
    rng = np.random.default_rng(3)
    y = rng.integers(0, 2, size=600)
    X = rng.integers(0, 3, size=(600, 2)).astype(float) + y[:, None]
    Xd, yd, _ = _dask_arrays(X, y, chunks=(200, 200, 200))

    assert_same_fit(GaussianNB().fit(X, y), GaussianNB().fit(Xd, yd))
    assert driver_rows == [50]  # the workers computed every partition's statistics

    driver_rows.clear()
    X[120, 0] = 6  # a category seen in the first partition after the head
    Xd, yd, _ = _dask_arrays(X, y, chunks=(200, 200, 200))
    assert_same_fit(
        make_estimator("categorical").fit(X, y), make_estimator("categorical").fit(Xd, yd)
    )
    assert driver_rows == [50, 200]  # the head's story grew; the first partition's held

    driver_rows.clear()
    X[-1, 1] = 7  # and one first seen in the last partition: the driver reads everything
    Xd, yd, _ = _dask_arrays(X, y, chunks=(200, 200, 200))
    assert_same_fit(
        make_estimator("categorical").fit(X, y), make_estimator("categorical").fit(Xd, yd)
    )
    assert driver_rows == [50, 200, 600]


def test_document_lengths_do_not_send_partitions_through_the_driver(client, driver_rows):
    """MultinomialNB's story records the mean document length (for sampling), which every
    partition changes; the statistics do not read it, so the workers compute them all and the
    length comes from their summed contexts."""
    from genprob.estimators import MixedNB, MultinomialNB

    rng = np.random.default_rng(5)
    y = rng.integers(0, 2, size=600)
    X = rng.poisson(1.0 + 2.0 * y[:, None] + np.arange(600)[:, None] / 60.0, (600, 4)).astype(float)
    Xd, yd, _ = _dask_arrays(X, y, chunks=(200, 200, 200))
    reference, fitted = MultinomialNB().fit(X, y), MultinomialNB().fit(Xd, yd)
    assert_same_fit(reference, fitted)
    assert fitted.story_ == reference.story_ and reference.story_.total_count == 28
    assert MultinomialNB().fit(X[:50], y[:50]).story_.total_count == 9  # the head's alone
    assert driver_rows == [50]

    driver_rows.clear()
    families = {0: "gaussian", 1: "multinomial", 2: "multinomial", 3: "multinomial"}
    mixed = lambda: MixedNB(families=families)  # noqa: E731
    X[:, 0] = rng.normal(size=600) + y
    Xd, yd, _ = _dask_arrays(X, y, chunks=(200, 200, 200))
    reference, fitted = mixed().fit(X, y), mixed().fit(Xd, yd)
    assert_same_fit(reference, fitted)
    assert fitted.story_ == reference.story_
    assert driver_rows == [50]


def test_dask_prediction_is_lazy(client):
    X, y, _ = make_data("gaussian_nb")
    fitted = GaussianNB().fit(X, y)
    Xd, _, _ = _dask_arrays(X, y)
    result = fitted.predict(Xd)
    assert isinstance(result, da.Array) and result.shape == (len(y),)
    assert result.numblocks == Xd.numblocks[:1]
    np.testing.assert_allclose(
        fitted.predict_log_proba(Xd).compute(), fitted.predict_log_proba(X), rtol=1e-12
    )
    predictive = fitted.predict_proba(Xd, method="predictive")  # the rule reaches each block
    np.testing.assert_allclose(
        predictive.compute(), fitted.predict_proba(X, method="predictive"), rtol=1e-12
    )
    assert not np.allclose(predictive.compute(), fitted.predict_proba(X), rtol=1e-6)
    pointwise = fitted.log_likelihood(Xd, pointwise=True)
    assert isinstance(pointwise, da.Array)
    np.testing.assert_allclose(
        pointwise.compute(), fitted.log_likelihood(X, pointwise=True), rtol=1e-12
    )


def test_dask_refuses_non_additive_story(client):
    from test_streaming import NotAdditive

    X, y, _ = make_data("gaussian_nb")
    Xd, yd, _ = _dask_arrays(X, y)
    with pytest.raises(ValueError, match="do not add over rows"):
        GenerativeClassifier(story=NotAdditive(covariance="diag", shared=False)).fit(Xd, yd)


def _slow_identity(block, delay):
    time.sleep(delay)
    return block


def test_killed_worker_is_recomputed_and_no_partition_is_lost(client):
    """A worker dies mid-fit: Dask recomputes its tasks; the class counts still cover every row."""
    X, y, _ = make_data("gaussian_nb", seed=6, num_rows=1200)
    reference = GaussianNB().fit(X, y)
    Xd = da.from_array(X, chunks=(100, 3)).map_blocks(_slow_identity, 0.4, dtype=X.dtype)
    yd = da.from_array(y, chunks=100)
    victim = list(client.scheduler_info()["workers"])[0]
    killed = []

    def kill_soon():
        time.sleep(1.0)
        try:
            client.run(os._exit, 1, workers=[victim], nanny=False)
        except Exception:  # the worker dies before it can answer
            pass
        killed.append(victim)

    import threading

    killer = threading.Thread(target=kill_soon)
    killer.start()
    try:
        fitted = GaussianNB().fit(Xd, yd)
    finally:
        killer.join()
    client.wait_for_workers(2, timeout=60)
    assert killed and victim not in client.scheduler_info()["workers"]  # a new process replaced it
    assert fitted.class_count_.sum() == len(y)
    np.testing.assert_array_equal(fitted.class_count_, reference.class_count_)
    assert_same_fit(reference, fitted)


def test_lost_partition_statistics_are_an_error_not_a_silent_answer():
    from genprob.engine import distributed as dist

    with pytest.raises(RuntimeError, match="reduced 90 rows but the input has 100"):
        dist._check_rows(90, 100, "labeled pass")
