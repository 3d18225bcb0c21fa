"""Streaming fits (chunks, Parquet) equal in-memory fits; non-additive stories refuse."""

import sys

import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
import pytest
from _scaling_cases import CASES, as_frame, assert_same_fit, make_data, make_estimator

from genprob.engine import streaming
from genprob.engine.capabilities import capability
from genprob.engine.streaming import Chunks, parquet
from genprob.estimators import GaussianNB, GenerativeClassifier
from genprob.families.gaussian import GaussianStory


def _chunks(X, y, w=None, sizes=(1, 37, 0, 50, 1, 64)):
    """Uneven chunks: single rows, an empty chunk, and boundaries inside every class."""
    out, start, k = [], 0, 0
    while start < len(y):
        size = sizes[k % len(sizes)]
        stop = start + size
        item = (X[start:stop], y[start:stop]) + (() if w is None else (w[start:stop],))
        out.append(item)
        start, k = stop, k + 1
    return out


def test_import_does_not_import_dask():
    code = "import genprob, sys; assert not any(m.split('.')[0] == 'dask' for m in sys.modules)"
    import subprocess

    subprocess.run([sys.executable, "-c", code], check=True)


@pytest.mark.parametrize("name", CASES)
def test_chunked_fit_equals_in_memory(name):
    X, y, w = make_data(name)
    reference = make_estimator(name).fit(X, y)
    # a one-shot iterator with classes given, and a re-readable source without
    streamed = make_estimator(name).fit(iter(_chunks(X, y)), classes=[0, 1, 2])
    assert_same_fit(reference, streamed)
    assert_same_fit(reference, make_estimator(name).fit(Chunks(_chunks(X, y))))
    np.testing.assert_array_equal(streamed.predict(X), reference.predict(X))
    # weighted
    reference = make_estimator(name).fit(X, y, sample_weight=w)
    assert_same_fit(reference, make_estimator(name).fit(Chunks(_chunks(X, y, w))))


@pytest.mark.parametrize("name", CASES)
def test_chunked_em_equals_in_memory(name):
    X, y, w = make_data(name, seed=1, unlabeled_fraction=0.5)
    y[100:140] = -1  # a chunk without any labeled row
    reference = make_estimator(name).fit(X, y, sample_weight=w)
    chunks = _chunks(X, y, w, sizes=(1, 90, 0, 60))
    streamed = make_estimator(name).fit(Chunks(lambda: iter(chunks)))
    assert reference.n_iter_ > 2
    assert_same_fit(reference, streamed)
    assert streamed.converged_ == reference.converged_
    for attribute in ("class_count_",):
        if hasattr(reference, attribute):
            np.testing.assert_allclose(
                getattr(streamed, attribute), getattr(reference, attribute), rtol=1e-10
            )


@pytest.mark.parametrize("name", CASES)
def test_parquet_fit_equals_in_memory(name, tmp_path):
    X, y, _ = make_data(name, seed=2, unlabeled_fraction=0.3)
    frame = as_frame(X)
    if name == "mixed":
        estimator = lambda: make_estimator(name).set_params(  # noqa: E731
            families={"f0": "gaussian", "f1": "categorical", "f2": "poisson"}
        )
    else:
        estimator = lambda: make_estimator(name)  # noqa: E731
    reference = estimator().fit(frame, y)
    data = frame.assign(label=y)
    # a directory of three files, read in batches of 29 rows
    for k, part in enumerate(np.array_split(np.arange(len(y)), 3)):
        data.iloc[part].to_parquet(tmp_path / f"part-{k}.parquet")
    streamed = estimator().fit(parquet(tmp_path, target="label", batch_size=29))
    assert_same_fit(reference, streamed)
    np.testing.assert_array_equal(streamed.feature_names_in_, frame.columns)


def test_parquet_reads_only_needed_columns_and_missing_labels_are_unlabeled(tmp_path):
    X, y, _ = make_data("gaussian_nb", seed=3)
    missing = (y == 1) & (np.arange(len(y)) % 2 == 0)
    frame = as_frame(X).assign(label=np.where(missing, None, y.astype(object)), extra="x")
    frame["label"] = frame["label"].astype("Int64")
    frame.to_parquet(tmp_path / "data.parquet")
    source = parquet(tmp_path / "data.parquet", target="label", features=["f0", "f1", "f2"])
    assert source.num_rows == len(y)
    labels = np.concatenate(list(source.labels()))
    np.testing.assert_array_equal(labels, np.where(missing, -1, y))
    reference = GaussianNB().fit(as_frame(X), labels, classes=[0, 1, 2])
    streamed = GaussianNB().fit(source, classes=[0, 1, 2])
    assert_same_fit(reference, streamed)


def test_unseen_label_and_unknown_classes_are_clear_errors():
    X, y, _ = make_data("gaussian_nb")
    chunks = _chunks(X, y)
    with pytest.raises(ValueError, match=r"not in classes \[0, 1\]"):
        GaussianNB().fit(iter(chunks), classes=[0, 1])
    with pytest.raises(ValueError, match="needs classes="):
        GaussianNB().fit(iter(chunks))
    unlabeled = [(X[:10], np.full(10, -1))]
    with pytest.raises(ValueError, match="no labeled row"):
        GaussianNB().fit(Chunks(unlabeled))
    y_em = y.copy()
    y_em[5] = -1
    with pytest.raises(ValueError, match="one-shot iterator"):
        GaussianNB().fit(iter(_chunks(X, y_em)), classes=[0, 1, 2])
    with pytest.raises(ValueError, match=r"a chunk must be a tuple"):
        GaussianNB().fit(Chunks([X[:10]]))
    with pytest.raises(ValueError, match="labels and weights travel in the chunks"):
        GaussianNB().fit(iter(chunks), y)
    with pytest.raises(ValueError, match="every chunk is empty"):
        GaussianNB().fit(iter([(X[:0], y[:0])]), classes=[0, 1])


def test_refit_starts_afresh():
    X, y, _ = make_data("gaussian_nb")
    estimator = GaussianNB().fit(Chunks(_chunks(X, y)))
    estimator.fit(Chunks(_chunks(X[:120], y[:120])))
    assert_same_fit(GaussianNB().fit(X[:120], y[:120]), estimator)


class NotAdditive(GaussianStory):
    """A closed form whose statistics (say, a weighted median) do not add over rows."""

    @property
    def capabilities(self):
        return {**super().capabilities, "adds_over_rows": False}


class CombineRaises(GaussianStory):
    def combine_statistics(self, stats_a, stats_b):
        raise ValueError("a weighted median does not combine over chunks")


class NoClosedForm(GaussianStory):
    """Only a prior and an emission (the sufficient statistics are switched off)."""

    sufficient_statistics = GaussianStory.__mro__[-2].sufficient_statistics
    maximize = GaussianStory.__mro__[-2].maximize


class OnlyPrior(GaussianStory.__mro__[-2]):
    def prior(self, num_classes, num_features):
        return {"loc": numpyro.sample("loc", dist.Normal(0, 1).expand([num_classes, num_features]))}

    def emission(self, params):
        return dist.Normal(params["loc"], 1.0).to_event(1)


@pytest.mark.parametrize(
    ("story", "message"),
    [
        (NotAdditive(covariance="diag", shared=False), "do not add over rows"),
        (OnlyPrior(), "OnlyPrior has no closed form"),
        (CombineRaises(covariance="diag", shared=False), "weighted median does not combine"),
    ],
)
def test_non_additive_story_refuses_streaming(story, message):
    X, y, _ = make_data("gaussian_nb")
    with pytest.raises(ValueError, match=message):
        GenerativeClassifier(story=story).fit(Chunks(_chunks(X, y)))
    assert not capability(story, "adds_over_rows") or message.startswith("weighted")


def test_ledoit_wolf_shrinkage_refuses_streaming():
    from genprob.estimators import LinearDiscriminantAnalysis

    X, y, _ = make_data("lda")
    with pytest.raises(ValueError, match="do not add up over chunks"):
        LinearDiscriminantAnalysis(solver="lsqr", shrinkage="auto").fit(Chunks(_chunks(X, y)))


def test_progress_bar_reports_rows_rate_and_eta():
    import io

    stream = io.StringIO()
    bar = streaming.ProgressBar(total=200, stream=stream, enabled=True)
    bar.update(50)
    bar.update(50)
    bar.close()
    text = stream.getvalue()
    assert "100 rows" in text and "rows/s" in text and "50%" in text and "ETA" in text
    silent = io.StringIO()
    streaming.ProgressBar(total=10, stream=silent).update(5)  # not a terminal: nothing
    assert silent.getvalue() == ""


def test_constant_memory_statistics_do_not_grow_with_rows():
    """The state kept between chunks is the statistics: its size does not depend on the rows."""
    X, y, _ = make_data("qda", num_rows=2000)
    small = make_estimator("qda").fit(Chunks(_chunks(X[::10], y[::10], sizes=(50,))))
    large = make_estimator("qda").fit(Chunks(_chunks(X, y, sizes=(50,))))
    size = lambda e: sum(np.asarray(v).nbytes for v in _leaves(e.stats_))  # noqa: E731
    assert size(small) == size(large)
    assert jnp.asarray(large.stats_["class_counts"]).sum() == 2000


def _leaves(tree):
    if isinstance(tree, dict):
        for value in tree.values():
            yield from _leaves(value)
    elif tree is not None:
        yield tree


def test_cli_streams_a_parquet_directory_like_a_whole_table(tmp_path, capsys):
    import pandas as pd

    from genprob import load
    from genprob.app import cli

    X, y, _ = make_data("qda", seed=7, unlabeled_fraction=0.3)
    frame = as_frame(X).assign(label=pd.array(np.where(y < 0, None, y), dtype="Int64"))
    (tmp_path / "data").mkdir()
    frame.iloc[:100].to_parquet(tmp_path / "data" / "a.parquet")
    frame.iloc[100:].to_parquet(tmp_path / "data" / "b.parquet")
    frame.to_parquet(tmp_path / "whole.parquet")
    whole, streamed = tmp_path / "whole.npz", tmp_path / "streamed.npz"
    assert (
        cli.main(
            [
                "fit",
                "qda",
                str(tmp_path / "whole.parquet"),
                "--target",
                "label",
                "--out",
                str(whole),
            ]
        )
        == 0
    )
    assert (
        cli.main(
            ["fit", "qda", str(tmp_path / "data"), "--target", "label", "--out", str(streamed)]
        )
        == 0
    )
    captured = capsys.readouterr()
    assert "streamed" in captured.out and "rows/s" in captured.out
    assert "ETA" not in captured.err  # no progress bar when stderr is not a terminal
    assert_same_fit(load(whole), load(streamed))


def test_qda_chunk_of_a_multiple_of_4096_rows():
    """Chunks over 4096 rows are padded to multiples of 4096: the blocked QDA sum takes them."""
    from sklearn.discriminant_analysis import QuadraticDiscriminantAnalysis

    X, y, _ = make_data("qda", seed=8, num_rows=8192)
    streamed = make_estimator("qda").set_params(reg_param=0.0).fit(Chunks([(X, y)]))
    reference = QuadraticDiscriminantAnalysis(store_covariance=True).fit(X, y)
    np.testing.assert_allclose(streamed.means_, reference.means_, rtol=1e-10)
    np.testing.assert_allclose(streamed.predict_proba(X), reference.predict_proba(X), atol=1e-10)


def test_parquet_reading_holds_a_bounded_number_of_batches(tmp_path):
    """A consumer slower than the disk does not make Arrow's reader pile up decoded batches."""
    import gc
    import time

    import pandas as pd
    import pyarrow as pa

    rng = np.random.default_rng(0)
    rows, files = 50_000, 32
    for k in range(files):
        frame = pd.DataFrame(rng.standard_normal((rows, 20)).astype(np.float32))
        frame.columns = [f"x{j}" for j in range(20)]
        frame["label"] = rng.integers(0, 3, rows)
        frame.to_parquet(tmp_path / f"part-{k:03d}.parquet")
    batch_bytes = rows * (20 * 4 + 8)  # one decoded batch: float32 features, int64 label
    source = parquet(tmp_path, target="label", batch_size=rows)
    held = []
    gc.collect()
    baseline = pa.total_allocated_bytes()  # Arrow memory other tests of this process still hold
    for _ in source.chunks():
        time.sleep(0.02)  # the fit of a chunk takes longer than reading it
        held.append(pa.total_allocated_bytes() - baseline)
    assert len(held) == files
    # Arrow's threaded scan held ~26 batches here; reading in the consumer's thread holds ~5 and
    # peaks at 8 to 15 (when Arrow's pool returns freed batches varies with its version and the
    # process: 12.6 and 14.6 were seen in full suite runs), so the typical and the peak are bounded
    in_batches = np.asarray(held) / batch_bytes
    assert np.median(in_batches) < 10, in_batches
    assert in_batches.max() < 20, in_batches


@pytest.mark.parametrize("name", ["gaussian_nb", "qda", "multinomial", "poisson"])
def test_the_public_chunk_interface_fits_as_in_memory(name):
    """A first partial_fit fixes the story; chunk_statistics of every chunk, combined, and
    fit_statistics give the in-memory fit (the recipe of docs/scaling.md)."""
    import functools

    X, y, w = make_data(name)
    model = make_estimator(name).partial_fit(X[::6], y[::6], classes=[0, 1, 2])
    before = dict(vars(model))
    parts = [model.chunk_statistics(*chunk) for chunk in _chunks(X, y, w)]
    assert all(vars(model)[key] is value for key, value in before.items())  # not changed
    total = functools.reduce(streaming.combine, parts)
    assert (total.rows, total.unlabeled_rows) == (len(y), 0)
    model.fit_statistics(total.stats, context=total.context)
    assert_same_fit(make_estimator(name).fit(X, y, sample_weight=w), model)


def test_the_public_chunk_interface_runs_em_steps_and_refuses_a_grown_story():
    X, y, _ = make_data("gaussian_nb", seed=1, unlabeled_fraction=0.5)
    model = GaussianNB().partial_fit(X[y >= 0], y[y >= 0], classes=[0, 1, 2])
    step = model.chunk_statistics(X, y, e_step=True)  # one E-step over every row
    assert step.unlabeled_rows == int(np.sum(y < 0)) and np.isfinite(step.log_likelihood)
    params = model.parameters_from_statistics(step.stats)
    assert set(params) == set(model.params_)
    assert not all(np.array_equal(params[k], model.params_[k]) for k in params)

    Xc, yc, _ = make_data("categorical")
    model = make_estimator("categorical").partial_fit(Xc[:-1], yc[:-1], classes=[0, 1, 2])
    assert model.chunk_statistics(Xc[:-1], yc[:-1]) is not None
    assert model.chunk_statistics(Xc[-1:], yc[-1:]) is None  # category 5: partial_fit grows
