"""LDA on wide data (hardening issue, item 9): the covariance is factorized once per fit and
reused by every prediction; model files hold one D x D matrix, not several."""

import jax
import numpy as np
import pytest
from sklearn.discriminant_analysis import LinearDiscriminantAnalysis as SkLDA

import genprob
from genprob import core
from genprob._dtype import precision
from genprob.families.gaussian import FACTORS, GaussianStory


def _wide(num_rows, num_features, seed=9):
    rng = np.random.default_rng(seed)
    y = np.arange(num_rows) % 3
    return rng.normal(size=(num_rows, num_features)) + 0.1 * y[:, None], y


@pytest.fixture
def factorizations(monkeypatch):
    """Counts calls of GaussianStory.factorize (the O(D^3) step)."""
    calls = []
    original = GaussianStory.factorize

    def counted(self, params, **kwargs):
        calls.append(type(self).__name__)
        return original(self, params, **kwargs)

    monkeypatch.setattr(GaussianStory, "factorize", counted)
    return calls


@pytest.mark.parametrize("solver", ["svd", "lsqr", "eigen"])
def test_predictions_reuse_the_factorization_of_the_fit(solver, factorizations):
    X, y = _wide(120, 150)
    shrinkage = None if solver == "svd" else 0.1
    estimator = genprob.LinearDiscriminantAnalysis(solver=solver, shrinkage=shrinkage).fit(X, y)
    assert len(factorizations) == 1  # coef_, scalings_ and the check share it
    for _ in range(3):
        estimator.predict_proba(X[:10])
    estimator.predict(X)
    estimator.predict_log_proba(X[:3])
    estimator.predict_joint_log_proba(X[:3])
    estimator.log_likelihood(X, y)
    estimator.score(X, y)
    assert len(factorizations) == 1
    estimator.fit(X[:90], y[:90])  # a new fit factorizes its own covariance once
    estimator.predict_proba(X[:10])
    assert len(factorizations) == 2


def test_the_scoring_program_holds_no_factorization():
    """With the cached factors, scoring is matrix products only (no eigh, Cholesky, solve)."""
    X, y = _wide(120, 150)
    estimator = genprob.LinearDiscriminantAnalysis().fit(X, y)
    with precision("float64"):
        params = estimator._params_jax()
        assert FACTORS in params
        cached = str(jax.make_jaxpr(core.class_scores)(estimator.story_, params, X[:5]))
        fresh = {k: v for k, v in params.items() if k != FACTORS}
        uncached = str(jax.make_jaxpr(core.class_scores)(estimator.story_, fresh, X[:5]))
    assert "eigh" in uncached  # the check can fail: without the factors it factorizes
    for primitive in ("eigh", "cholesky", "triangular_solve"):
        assert primitive not in cached


@pytest.mark.parametrize(
    "options",
    [{}, {"solver": "lsqr", "shrinkage": 0.2}, {"store_covariance": True}],
    ids=["svd", "lsqr-shrinkage", "store_covariance"],
)
def test_model_file_holds_one_d_by_d_matrix_and_round_trips_bitwise(options, tmp_path):
    num_features = 300
    X, y = _wide(200, num_features)
    estimator = genprob.LinearDiscriminantAnalysis(**options).fit(X, y)
    path = estimator.save(tmp_path / "wide")
    matrix_bytes = num_features**2 * 8
    assert path.stat().st_size < 1.2 * matrix_bytes, path.stat().st_size / matrix_bytes
    loaded = genprob.load(path)
    np.testing.assert_array_equal(loaded.predict_proba(X), estimator.predict_proba(X))
    np.testing.assert_array_equal(loaded.params_["covariance"], estimator.params_["covariance"])
    if hasattr(estimator, "covariance_"):
        assert loaded.covariance_ is loaded.params_["covariance"]
        np.testing.assert_array_equal(loaded.covariance_, estimator.covariance_)
    # the statistics came back too: incremental fitting continues identically
    loaded.partial_fit(X[:30], y[:30])
    estimator.partial_fit(X[:30], y[:30])
    np.testing.assert_array_equal(loaded.predict_proba(X), estimator.predict_proba(X))


def test_a_parameter_the_statistics_do_not_give_is_stored(tmp_path):
    """A covariance set by hand is not the closed form's: the file keeps it as it is."""
    num_features = 300
    X, y = _wide(200, num_features)
    estimator = genprob.LinearDiscriminantAnalysis().fit(X, y)
    covariance = estimator.params_["covariance"] + 0.5 * np.eye(num_features)
    estimator.params_ = {**estimator.params_, "covariance": covariance}
    path = estimator.save(tmp_path / "edited")
    loaded = genprob.load(path)
    np.testing.assert_array_equal(loaded.params_["covariance"], covariance)
    np.testing.assert_array_equal(loaded.predict_proba(X), estimator.predict_proba(X))


@pytest.mark.slow
def test_lda_with_2000_features_matches_scikit_learn(tmp_path, factorizations):
    num_features = 2000
    X, y = _wide(300, num_features)
    reference = SkLDA().fit(X, y)
    estimator = genprob.LinearDiscriminantAnalysis().fit(X, y)
    rows = np.vstack([X[:40], _wide(40, num_features, seed=3)[0]])
    np.testing.assert_array_equal(estimator.predict(rows), reference.predict(rows))
    np.testing.assert_allclose(
        estimator.predict_proba(rows), reference.predict_proba(rows), rtol=0, atol=1e-8
    )
    estimator.predict_proba(rows[:5])
    assert len(factorizations) == 1
    path = estimator.save(tmp_path / "wide")
    assert path.stat().st_size < 1.2 * num_features**2 * 8
    np.testing.assert_array_equal(
        genprob.load(path).predict_proba(rows), estimator.predict_proba(rows)
    )
