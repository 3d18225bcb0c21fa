"""Sparse bag of words on the host: SciPy statistics and scores, posteriors by discriminant."""

import jax
import numpy as np
import pytest
import scipy.sparse
import sklearn.naive_bayes as sknb
from scipy.special import gammaln
from sklearn.feature_extraction.text import CountVectorizer

import genprob
from genprob import core
from genprob.datasets import load_sms_spam
from genprob.engine._dtype import precision
from genprob.families.bernoulli import BernoulliStory
from genprob.families.multinomial import MultinomialStory
from genprob.families.poisson import PoissonStory

PROBA_ATOL = 1e-8  # the parity tolerance on class posteriors (float64)
NAMES = ["MultinomialNB", "BernoulliNB"]


@pytest.fixture(scope="module")
def sms():
    texts, labels = load_sms_spam()
    return CountVectorizer().fit_transform(texts).tocsr(), labels


def synthetic(n=3000, d=800, k=3, seed=0):
    """Zipf-like counts, three classes with different word profiles (~20 non-zeros a row)."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, k, size=n)
    profiles = rng.gamma(0.3, size=(k, d)) / np.arange(1, d + 1)
    profiles /= profiles.sum(axis=1, keepdims=True)
    counts = np.stack([rng.multinomial(25, profiles[label]) for label in y])
    return scipy.sparse.csr_matrix(counts.astype(float)), y


def _cases(sms):
    X, y = synthetic()
    return {"sms": sms, "synthetic": (X, y)}


@pytest.mark.parametrize("case", ["sms", "synthetic"])
@pytest.mark.parametrize("name", NAMES)
def test_sparse_posteriors_equal_dense_and_sklearn(sms, case, name):
    X, y = _cases(sms)[case]
    weights = np.random.default_rng(1).uniform(0.5, 2.0, size=X.shape[0])
    ours = getattr(genprob, name)().fit(X, y, sample_weight=weights)
    dense = getattr(genprob, name)().fit(X.toarray(), y, sample_weight=weights)
    theirs = getattr(sknb, name)().fit(X, y, sample_weight=weights)
    # fit statistics: the same numbers from SciPy's product, JAX's dense one and scikit-learn
    for attribute in ("class_count_", "feature_count_", "feature_log_prob_", "class_log_prior_"):
        np.testing.assert_allclose(
            getattr(ours, attribute), getattr(theirs, attribute), rtol=1e-12, atol=1e-12
        )
        np.testing.assert_allclose(
            getattr(ours, attribute), getattr(dense, attribute), rtol=1e-12, atol=1e-12
        )
    proba = ours.predict_proba(X)
    assert proba.min() < 0.01 and proba.max() > 0.99  # the classes really are told apart
    np.testing.assert_allclose(proba, theirs.predict_proba(X), rtol=0, atol=PROBA_ATOL)
    np.testing.assert_allclose(proba, dense.predict_proba(X.toarray()), rtol=0, atol=PROBA_ATOL)
    np.testing.assert_allclose(
        ours.predict_log_proba(X), theirs.predict_log_proba(X), rtol=1e-9, atol=1e-9
    )
    np.testing.assert_array_equal(ours.predict(X), theirs.predict(X))


@pytest.mark.parametrize("name", NAMES)
def test_joint_log_prob_stays_exact_on_sparse_input(sms, name):
    X, y = sms
    X = X[:400]
    ours = getattr(genprob, name)().fit(X, y[:400])
    theirs = getattr(sknb, name)().fit(X, y[:400])
    difference = ours.predict_joint_log_proba(X) - theirs.predict_joint_log_proba(X)
    if name == "MultinomialNB":  # the multinomial coefficient, which scikit-learn leaves out
        dense = X.toarray()
        coefficient = gammaln(dense.sum(axis=1) + 1) - gammaln(dense + 1).sum(axis=1)
        assert coefficient.max() > 10
    else:
        coefficient = np.zeros(X.shape[0])
    np.testing.assert_allclose(difference, np.repeat(coefficient[:, None], 2, 1), atol=1e-9)
    np.testing.assert_allclose(
        ours.predict_joint_log_proba(X), ours.predict_joint_log_proba(X.toarray()), rtol=1e-12
    )


@pytest.mark.parametrize("story", [MultinomialStory(alpha=0.5), BernoulliStory(alpha=0.5)])
def test_discriminant_differs_from_the_log_density_by_a_row_term_only(story):
    X, y = synthetic(n=300, d=50)
    if isinstance(story, BernoulliStory):
        X.data[:] = 1.0
    with precision("float64"):
        R = core.one_hot_responsibilities(y, 3)
        params = core.maximize(story, core.sufficient_statistics(story, X, R))
        exact = np.asarray(story.emission(params).log_prob(X))
        for features in (X, X.toarray()):
            scores = np.asarray(story.discriminant(params, features))
            shift = exact - scores
            np.testing.assert_allclose(shift, shift[:, :1] + 0 * shift, rtol=1e-12, atol=1e-9)
            np.testing.assert_array_equal(scores[:, 0], 0.0)  # K - 1 products: class 0 is 0
            joint = core.joint_log_prob(story, params, features)
            np.testing.assert_allclose(
                np.asarray(core.predict_log_proba(story, params, features)),
                np.asarray(jax.nn.log_softmax(joint, axis=-1)),
                atol=1e-12,
            )
        # the multinomial coefficient is a real part of the shift
        if isinstance(story, MultinomialStory):
            assert np.ptp(shift[:, 0]) > 1.0


def _stored_twice(X):
    """CSR ``X`` with each stored value split into two halves stored at the same place (the
    (data, (row, col)) constructor would sum them)."""
    lengths = np.diff(X.indptr)
    indptr = np.concatenate([[0], np.cumsum(2 * lengths)])
    indices = np.concatenate(
        [np.tile(X.indices[a:b], 2) for a, b in zip(X.indptr[:-1], X.indptr[1:], strict=True)]
    )
    data = np.concatenate(
        [np.tile(X.data[a:b] / 2, 2) for a, b in zip(X.indptr[:-1], X.indptr[1:], strict=True)]
    )
    twice = scipy.sparse.csr_matrix((data, indices.astype(X.indices.dtype), indptr), shape=X.shape)
    assert twice.nnz == 2 * X.nnz and not twice.has_canonical_format
    return twice


def test_duplicate_entries_score_like_their_sum():
    """A CSR matrix storing a word twice in a row means the summed count (log x! of the total)."""
    X, y = synthetic(n=200, d=40)
    halves = _stored_twice(X)
    ours = genprob.MultinomialNB().fit(X, y)
    np.testing.assert_allclose(
        ours.predict_joint_log_proba(halves), ours.predict_joint_log_proba(X), rtol=1e-12
    )
    refit = genprob.MultinomialNB().fit(halves, y)
    np.testing.assert_allclose(refit.feature_count_, ours.feature_count_, rtol=1e-12)


def test_binarized_duplicate_entries_are_summed_first():
    """BernoulliNB binarizes a word's total count in a row, not each stored copy of it: 0.3 +
    0.3 stored twice is 0.6, above a threshold of 0.5, as the summed matrix says."""
    rng = np.random.default_rng(3)
    dense = rng.choice([0.0, 0.6, 2.0], size=(60, 8), p=[0.6, 0.3, 0.1])
    y = np.arange(60) % 2
    summed = scipy.sparse.csr_matrix(dense)
    halves = _stored_twice(summed)
    ours = genprob.BernoulliNB(binarize=0.5).fit(halves, y)
    reference = genprob.BernoulliNB(binarize=0.5).fit(summed, y)
    np.testing.assert_allclose(ours.feature_count_, reference.feature_count_, rtol=1e-12)
    np.testing.assert_allclose(
        ours.predict_proba(halves), reference.predict_proba(summed), rtol=1e-12
    )
    assert not halves.has_canonical_format  # the caller's matrix is left as it was


@pytest.mark.parametrize("name", NAMES)
def test_integer_counts_with_unsorted_indices_keep_them(sms, name):
    """CountVectorizer's integer CSR has unsorted row indices; converted to floating point
    without SciPy's sorting astype, it gives the posteriors of the sorted float matrix and is
    left unchanged."""
    X, y = sms
    assert X.dtype.kind == "i" and not X.has_sorted_indices
    indices, data = X.indices.copy(), X.data.copy()
    canonical = X.astype(np.float64)
    canonical.sort_indices()
    ours = getattr(genprob, name)().fit(X, y)
    reference = getattr(genprob, name)().fit(canonical, y)
    np.testing.assert_allclose(
        ours.predict_proba(X), reference.predict_proba(canonical), rtol=1e-10, atol=1e-14
    )
    np.testing.assert_array_equal(ours.predict(X), reference.predict(canonical))
    np.testing.assert_array_equal(X.indices, indices)
    np.testing.assert_array_equal(X.data, data)
    reference_sk = getattr(sknb, name)().fit(X, y)
    np.testing.assert_allclose(ours.predict_proba(X), reference_sk.predict_proba(X), atol=1e-8)


@pytest.mark.parametrize("name", NAMES)
def test_a_huge_sparse_matrix_is_never_densified(monkeypatch, name):
    """2e4 x 5e6 with 2e5 non-zeros: dense it would be 800 GB, so any densifying fails."""
    rng = np.random.default_rng(0)
    n, d, nnz = 20_000, 5_000_000, 200_000
    X = scipy.sparse.csr_matrix(
        (np.ones(nnz), (rng.integers(0, n, nnz), rng.integers(0, d, nnz))), shape=(n, d)
    )
    y = rng.integers(0, 2, n)

    def refuse(*args, **kwargs):
        raise AssertionError("a sparse matrix was densified")

    for cls in (scipy.sparse.csr_matrix, scipy.sparse.csc_matrix, scipy.sparse.coo_matrix):
        monkeypatch.setattr(cls, "toarray", refuse)
        monkeypatch.setattr(cls, "todense", refuse)

    def on_device(*args, **kwargs):
        raise AssertionError("a labeled fit or a prediction copied the matrix to the device")

    # labeled fits and predictions run SciPy's products on the host (statistics: X^T R)
    monkeypatch.setattr(genprob.estimators.discrete, "to_bcoo", on_device)
    estimator = getattr(genprob, name)().fit(X, y)
    proba = estimator.predict_proba(X[:1000])
    assert proba.shape == (1000, 2)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0, atol=1e-12)
    counts = np.bincount(y, minlength=2)
    np.testing.assert_array_equal(estimator.class_count_, counts)
    assert estimator.feature_count_.sum() == pytest.approx(
        X.sum() if name == "MultinomialNB" else (X > 0).sum()
    )


def test_a_story_without_host_sparse_support_refuses_scipy_input():
    X = scipy.sparse.csr_matrix(np.eye(4))
    story = PoissonStory()
    params = {"rates": np.ones((2, 4)), "class_prior": np.full(2, 0.5)}
    with pytest.raises(TypeError, match="PoissonStory does not take SciPy sparse input"):
        core.joint_log_prob(story, params, X)
    with pytest.raises(TypeError, match="PoissonStory does not take SciPy sparse input"):
        core.sufficient_statistics(story, X, np.eye(4)[:, :2])


def test_sparse_features_of_the_wrong_width_are_refused(sms):
    X, y = sms
    story = MultinomialStory()
    with precision("float64"):
        params = core.maximize(
            story,
            core.sufficient_statistics(
                story, X, core.one_hot_responsibilities((y == "spam").astype(int), 2)
            ),
        )
        with pytest.raises(ValueError, match="features, but the parameters are for"):
            core.predict_log_proba(story, params, X[:, :-1])
        with pytest.raises(ValueError, match="features, but the parameters are for"):
            core.joint_log_prob(story, params, X[:, :-1])
