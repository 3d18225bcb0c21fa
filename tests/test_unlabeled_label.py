"""``unlabeled_label``: which label value marks unlabeled rows (default -1; None: every label is
a class). Checked against scikit-learn 1.9.1 on the classes {-1, 0, 1}, against the default on
renamed markers, and through fit, partial_fit, score, EM, streaming, Dask, the core and the CLI.
"""

import numpy as np
import pandas as pd
import pytest
import sklearn.discriminant_analysis as skda
import sklearn.naive_bayes as sknb

import genprob
from genprob import core
from genprob.app import cli
from genprob.engine._dtype import precision
from genprob.engine.streaming import Chunks

PROBA_ATOL = 1e-8
RNG = np.random.default_rng(11)
SENTIMENT = np.repeat([-1, 0, 1], 30)  # a common sentiment coding: -1 is a class
SHIFT = np.array([1.0, -0.5, 0.3, 0.0])
X_REAL = RNG.normal(size=(90, 4)) + SENTIMENT[:, None] * SHIFT
X_COUNTS = RNG.poisson(lam=2.0 + (SENTIMENT[:, None] + 1) * np.array([1.0, 0.0, 2.0, 0.5]))
X_BINARY = (X_COUNTS > 2).astype(float)
X_CODES = np.minimum(X_COUNTS, 4).astype(float)
#: (genprob estimator, scikit-learn estimator, features)
PAIRS = {
    "GaussianNB": (genprob.GaussianNB, sknb.GaussianNB, X_REAL),
    "LinearDiscriminantAnalysis": (
        genprob.LinearDiscriminantAnalysis,
        skda.LinearDiscriminantAnalysis,
        X_REAL,
    ),
    "QuadraticDiscriminantAnalysis": (
        genprob.QuadraticDiscriminantAnalysis,
        skda.QuadraticDiscriminantAnalysis,
        X_REAL,
    ),
    "BernoulliNB": (genprob.BernoulliNB, sknb.BernoulliNB, X_BINARY),
    "MultinomialNB": (genprob.MultinomialNB, sknb.MultinomialNB, X_COUNTS),
    "CategoricalNB": (genprob.CategoricalNB, sknb.CategoricalNB, X_CODES),
}
#: every 3rd row unlabeled (each class keeps labeled rows)
HIDDEN = np.arange(90) % 3 == 1


@pytest.mark.parametrize("name", list(PAIRS))
def test_none_makes_minus_one_a_class_as_in_sklearn(name):
    ours, theirs, X = PAIRS[name]
    fitted = ours(unlabeled_label=None).fit(X, SENTIMENT)
    reference = theirs().fit(X, SENTIMENT)
    np.testing.assert_array_equal(fitted.classes_, [-1, 0, 1])
    assert not hasattr(fitted, "n_iter_")  # a supervised fit, no EM
    np.testing.assert_array_equal(fitted.predict(X), reference.predict(X))
    np.testing.assert_allclose(
        fitted.predict_proba(X), reference.predict_proba(X), rtol=0, atol=PROBA_ATOL
    )
    assert fitted.score(X, SENTIMENT) == reference.score(X, SENTIMENT)
    # partial_fit with classes containing -1, in two chunks, gives the same model
    chunked = ours(unlabeled_label=None)
    chunked.partial_fit(X[::2], SENTIMENT[::2], classes=[-1, 0, 1])
    chunked.partial_fit(X[1::2], SENTIMENT[1::2])
    np.testing.assert_allclose(
        chunked.predict_proba(X), reference.predict_proba(X), rtol=0, atol=PROBA_ATOL
    )


@pytest.mark.parametrize("name", ["GaussianNB", "MultinomialNB"])
def test_default_is_unchanged_minus_one_marks_unlabeled_rows(name):
    ours, _, X = PAIRS[name]
    default = ours().fit(X, SENTIMENT)
    np.testing.assert_array_equal(default.classes_, [0, 1])  # -1 rows were unlabeled (EM)
    assert default.n_iter_ >= 1
    explicit = ours(unlabeled_label=-1).fit(X, SENTIMENT)
    np.testing.assert_array_equal(explicit.predict_proba(X), default.predict_proba(X))
    # the same EM with the marker renamed: 99 or the string "?" among string labels
    renamed = ours(unlabeled_label=99).fit(X, np.where(SENTIMENT == -1, 99, SENTIMENT))
    np.testing.assert_array_equal(renamed.predict_proba(X), default.predict_proba(X))
    np.testing.assert_array_equal(renamed.log_likelihood_trace_, default.log_likelihood_trace_)
    words = np.array(["?", "neutral", "positive"])[SENTIMENT + 1]
    text = ours(unlabeled_label="?").fit(X, words)
    np.testing.assert_array_equal(text.classes_, ["neutral", "positive"])
    np.testing.assert_array_equal(text.predict_proba(X), default.predict_proba(X))
    np.testing.assert_array_equal(
        text.transduction_, np.where(default.transduction_ == 0, "neutral", "positive")
    )
    assert text.log_likelihood(X, words) == default.log_likelihood(X, SENTIMENT)


def test_string_labels_partly_marked_with_a_string():
    X = X_REAL
    names = np.array(["neg", "neu", "pos"])[SENTIMENT + 1].astype(object)
    marked = names.copy()
    marked[HIDDEN] = "?"
    by_question_mark = genprob.LinearDiscriminantAnalysis(unlabeled_label="?").fit(X, marked)
    by_default = genprob.LinearDiscriminantAnalysis().fit(X, np.where(HIDDEN, -1, names))
    np.testing.assert_array_equal(by_question_mark.classes_, ["neg", "neu", "pos"])
    np.testing.assert_array_equal(by_question_mark.predict_proba(X), by_default.predict_proba(X))
    assert by_question_mark.n_iter_ == by_default.n_iter_
    # "?" rows are refused by partial_fit (it adds labeled statistics only), named by the marker
    estimator = genprob.GaussianNB(unlabeled_label="?")
    with pytest.raises(ValueError, match=r"unlabeled rows \('\?'\)"):
        estimator.partial_fit(X, marked, classes=["neg", "neu", "pos"])


def test_none_with_a_partly_labeled_looking_y_is_supervised():
    """With None, -1 rows are a class even when another class could look like the marker."""
    y = np.where(HIDDEN, -1, SENTIMENT)
    fitted = genprob.GaussianNB(unlabeled_label=None).fit(X_REAL, y)
    reference = sknb.GaussianNB().fit(X_REAL, y)
    np.testing.assert_allclose(
        fitted.predict_proba(X_REAL), reference.predict_proba(X_REAL), rtol=0, atol=PROBA_ATOL
    )
    # log_likelihood scores every row as labeled: sum of log p(x_i, y_i)
    joint = fitted.predict_joint_log_proba(X_REAL)
    expected = joint[np.arange(len(y)), np.searchsorted(fitted.classes_, y)].sum()
    assert fitted.log_likelihood(X_REAL, y) == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize(
    ("value", "y", "message"),
    [
        ("?", SENTIMENT, r"unlabeled_label='\?' is a string, but y holds numbers"),
        (7, np.array(["a", "b", "c"])[SENTIMENT + 1], "unlabeled_label=7 is a number, but y"),
        (True, SENTIMENT, "'unlabeled_label' parameter of GaussianNB must be None"),
        ([-1], SENTIMENT, "'unlabeled_label' parameter of GaussianNB must be None"),
        (float("nan"), SENTIMENT, "'unlabeled_label' parameter of GaussianNB must be None"),
        (float("inf"), SENTIMENT, "a finite number or a string"),
    ],
    ids=["string-on-numbers", "number-on-strings", "bool", "list", "nan", "inf"],
)
def test_bad_markers_are_refused_by_name(value, y, message):
    with pytest.raises(ValueError, match=message):
        genprob.GaussianNB(unlabeled_label=value).fit(X_REAL, y)


def test_classes_may_not_contain_the_marker_unless_none():
    y = np.where(HIDDEN, 5, SENTIMENT + 1)
    with pytest.raises(ValueError, match="without 5 .the unlabeled marker"):
        genprob.GaussianNB(unlabeled_label=5).fit(X_REAL, y, classes=[0, 1, 2, 5])
    with pytest.raises(ValueError, match="without -1"):
        genprob.GaussianNB().partial_fit(X_REAL, SENTIMENT, classes=[-1, 0, 1])
    genprob.GaussianNB(unlabeled_label=None).fit(X_REAL, SENTIMENT, classes=[-1, 0, 1])


def test_two_classes_message_names_the_marker_and_none():
    y = np.where(SENTIMENT == 1, 1, -1)  # two classes, -1 and 1: by default only one is labeled
    with pytest.raises(ValueError, match="pass unlabeled_label=None"):
        genprob.GaussianNB().fit(X_REAL, y)
    fitted = genprob.GaussianNB(unlabeled_label=None).fit(X_REAL, y)
    np.testing.assert_array_equal(fitted.classes_, [-1, 1])


def test_fit_em_and_log_likelihood_take_the_marker():
    codes = SENTIMENT + 1
    partial = np.where(HIDDEN, -1, codes)
    story = genprob.GaussianStory(covariance="diag", shared=False)
    with precision("float64"):
        default = genprob.fit_em(story, X_REAL, partial)
        renamed = genprob.fit_em(story, X_REAL, np.where(HIDDEN, 9, codes), unlabeled_label=9)
        words = np.array(["neg", "neu", "pos"], dtype=object)
        text = genprob.fit_em(
            story,
            X_REAL,
            np.where(HIDDEN, "?", words[codes]),
            classes=words,
            unlabeled_label="?",
        )
        for result in (renamed, text):
            np.testing.assert_array_equal(result.responsibilities, default.responsibilities)
        params = default.params
        total = genprob.log_likelihood(story, params, X_REAL, partial)
        assert float(
            genprob.log_likelihood(
                story, params, X_REAL, np.where(HIDDEN, 9, codes), unlabeled_label=9
            )
        ) == float(total)
        # None: every row is labeled, so a -1 is an out-of-range code
        with pytest.raises(ValueError, match="unlabeled_label=None"):
            genprob.log_likelihood(story, params, X_REAL, partial, unlabeled_label=None)
        supervised = genprob.log_likelihood(story, params, X_REAL, codes, unlabeled_label=None)
        joint = np.asarray(core.joint_log_prob(story, params, X_REAL))
        assert float(supervised) == pytest.approx(joint[np.arange(90), codes].sum(), rel=1e-12)
        with pytest.raises(ValueError, match="unlabeled_label=1 cannot mark"):
            genprob.log_likelihood(story, params, X_REAL, codes, unlabeled_label=1)
        with pytest.raises(ValueError, match="-1 .*unlabeled_label=None"):
            genprob.fit_em(story, X_REAL, partial, unlabeled_label=None)


def test_streamed_fit_respects_the_marker():
    chunks = [(X_REAL[i : i + 25], SENTIMENT[i : i + 25]) for i in range(0, 90, 25)]
    streamed = genprob.GaussianNB(unlabeled_label=None).fit(Chunks(chunks))
    reference = sknb.GaussianNB().fit(X_REAL, SENTIMENT)
    np.testing.assert_array_equal(streamed.classes_, [-1, 0, 1])
    np.testing.assert_allclose(
        streamed.predict_proba(X_REAL), reference.predict_proba(X_REAL), rtol=0, atol=PROBA_ATOL
    )
    words = np.array(["?", "neu", "pos"])[SENTIMENT + 1]
    text_chunks = [(X_REAL[i : i + 25], words[i : i + 25]) for i in range(0, 90, 25)]
    streamed = genprob.GaussianNB(unlabeled_label="?").fit(Chunks(text_chunks))
    in_memory = genprob.GaussianNB().fit(X_REAL, SENTIMENT)
    np.testing.assert_array_equal(streamed.classes_, ["neu", "pos"])
    np.testing.assert_allclose(
        streamed.predict_proba(X_REAL), in_memory.predict_proba(X_REAL), rtol=0, atol=1e-10
    )


def test_dask_fit_respects_the_marker():
    da = pytest.importorskip("dask.array")
    import dask

    with dask.config.set(scheduler="synchronous"):
        X = da.from_array(X_REAL, chunks=(40, 4))
        y = da.from_array(SENTIMENT, chunks=40)
        fitted = genprob.GaussianNB(unlabeled_label=None).fit(X, y)
    reference = sknb.GaussianNB().fit(X_REAL, SENTIMENT)
    np.testing.assert_array_equal(fitted.classes_, [-1, 0, 1])
    np.testing.assert_allclose(
        fitted.predict_proba(X_REAL), reference.predict_proba(X_REAL), rtol=0, atol=PROBA_ATOL
    )


def test_save_load_keeps_the_marker(tmp_path):
    fitted = genprob.CategoricalNB(unlabeled_label=None).fit(X_CODES, SENTIMENT)
    loaded = genprob.load(fitted.save(tmp_path / "model"))
    assert loaded.unlabeled_label is None
    np.testing.assert_array_equal(loaded.predict_proba(X_CODES), fitted.predict_proba(X_CODES))
    text = genprob.GaussianNB(unlabeled_label="?").fit(
        X_REAL, np.array(["?", "a", "b"])[SENTIMENT + 1]
    )
    assert genprob.load(text.save(tmp_path / "text")).unlabeled_label == "?"


def test_cli_unlabeled_label_none_and_value(tmp_path, capsys):
    frame = pd.DataFrame(X_REAL, columns=["a", "b", "c", "d"]).assign(label=SENTIMENT)
    data = tmp_path / "sentiment.csv"
    frame.to_csv(data, index=False)
    model = tmp_path / "model.npz"
    argv = ["fit", "gaussian_nb", str(data), "--target", "label", "--out", str(model)]
    assert cli.main(argv) == 2  # -1 is ambiguous without being told
    assert "--unlabeled-label none" in capsys.readouterr().err
    assert cli.main([*argv, "--unlabeled-label", "none"]) == 0
    assert "classes:        -1, 0, 1" in capsys.readouterr().out
    fitted = genprob.load(model)
    assert fitted.unlabeled_label is None
    reference = sknb.GaussianNB().fit(frame[["a", "b", "c", "d"]], SENTIMENT)
    np.testing.assert_allclose(
        fitted.predict_proba(frame[["a", "b", "c", "d"]]),
        reference.predict_proba(frame[["a", "b", "c", "d"]]),
        rtol=0,
        atol=PROBA_ATOL,
    )
    assert cli.main([*argv, "--unlabeled-label", "-1"]) == 0
    assert "60 labeled, 30 unlabeled" in capsys.readouterr().out
    frame.loc[3, "label"] = None
    frame.to_csv(data, index=False)
    assert cli.main([*argv, "--unlabeled-label", "none"]) == 2
    assert "1 empty cells" in capsys.readouterr().err
