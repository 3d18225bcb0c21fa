"""LDA on wide data (hardening issue, item 9): the covariance is factorized once per fit and
reused by every prediction; model files hold one D x D matrix, not several."""

import jax
import numpy as np
import pytest
from sklearn.discriminant_analysis import LinearDiscriminantAnalysis as SkLDA

import genprob
from genprob import core
from genprob.engine._dtype import precision
from genprob.families.gaussian import COVARIANCE_ROWS, FACTORS, GaussianStory, covariance_of
from tests._host_scoring import host_and_device_log_proba


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


# -- eigen solver with shrinkage on wide data ------------------------------------------------------
EIGEN_SHRINKAGES = pytest.mark.parametrize("shrinkage", ["auto", 0.2])


@EIGEN_SHRINKAGES
def test_eigen_with_shrinkage_matches_scikit_learn_on_wide_data(shrinkage):
    num_features = 600
    X, y = _wide(100, num_features)
    reference = SkLDA(solver="eigen", shrinkage=shrinkage).fit(X, y)
    estimator = genprob.LinearDiscriminantAnalysis(solver="eigen", shrinkage=shrinkage).fit(X, y)
    factors = estimator._params_jax()[FACTORS]
    assert factors["whitening"].shape == (num_features, num_features)
    assert int(factors["rank"]) == num_features
    rows = np.vstack([X[:30], _wide(30, num_features, seed=4)[0]])
    np.testing.assert_array_equal(estimator.predict(rows), reference.predict(rows))
    np.testing.assert_allclose(
        estimator.predict_proba(rows), reference.predict_proba(rows), rtol=0, atol=1e-8
    )
    scale = np.abs(reference.covariance_).max()
    np.testing.assert_allclose(estimator.covariance_, reference.covariance_, atol=1e-12 * scale)
    np.testing.assert_allclose(
        estimator.explained_variance_ratio_, reference.explained_variance_ratio_, atol=1e-10
    )
    # the discriminant directions (K - 1 = 2 of them), up to their signs
    ours, theirs = estimator.transform(rows), reference.transform(rows)
    signs = np.sign(np.sum(ours * theirs, axis=0))
    np.testing.assert_allclose(ours * signs, theirs, rtol=1e-8, atol=1e-8 * np.abs(theirs).max())
    assert estimator.scalings_.shape == reference.scalings_.shape


@EIGEN_SHRINKAGES
def test_eigen_model_file_derives_scalings_instead_of_storing_them(shrinkage, tmp_path):
    import pickle
    import zipfile

    num_features = 600
    X, y = _wide(100, num_features)
    estimator = genprob.LinearDiscriminantAnalysis(solver="eigen", shrinkage=shrinkage).fit(X, y)
    assert estimator.scalings_.shape == (num_features, num_features)
    path = estimator.save(tmp_path / "eigen")
    with zipfile.ZipFile(path) as archive:
        square = [
            info.filename for info in archive.infolist() if info.file_size >= num_features**2 * 8
        ]
    assert not any("scalings_" in name for name in square)
    if shrinkage == "auto":  # Ledoit-Wolf keeps the K per-class scatters and their sum
        assert sorted(square) == [
            "config.attr.stats_.emission.class_squares.npy",
            "config.attr.stats_.emission.squares.npy",
        ]
    else:  # at most one D x D float matrix: the statistics' scatter
        assert square == ["config.attr.stats_.emission.squares.npy"]
        assert path.stat().st_size < 1.2 * num_features**2 * 8
    loaded = genprob.load(path)
    assert "scalings_" not in vars(loaded)  # recomputed on first use, not while loading
    np.testing.assert_array_equal(loaded.predict_proba(X), estimator.predict_proba(X))
    np.testing.assert_array_equal(loaded.scalings_, estimator.scalings_)
    np.testing.assert_array_equal(loaded.transform(X), estimator.transform(X))
    np.testing.assert_array_equal(
        loaded.explained_variance_ratio_, estimator.explained_variance_ratio_
    )
    # a loaded model saved again, and a pickled one, still derive them
    again = pickle.loads(pickle.dumps(genprob.load(loaded.save(tmp_path / "again"))))
    assert "scalings_" not in vars(again)
    np.testing.assert_array_equal(again.scalings_, estimator.scalings_)


def test_scalings_that_are_not_the_fits_are_stored(tmp_path):
    num_features = 600
    X, y = _wide(100, num_features)
    weights = np.linspace(0.5, 1.5, len(y))
    estimators = {
        # set by hand: stored as they are
        "edited": genprob.LinearDiscriminantAnalysis(solver="eigen", shrinkage=0.2).fit(X, y),
        # Ledoit-Wolf's total covariance over the rows is not the weighted statistics'
        "weighted": genprob.LinearDiscriminantAnalysis(solver="eigen", shrinkage="auto").fit(
            X, y, sample_weight=weights
        ),
    }
    estimators["edited"].scalings_ = estimators["edited"].scalings_[:, ::-1].copy()
    for name, estimator in estimators.items():
        loaded = genprob.load(estimator.save(tmp_path / name))
        assert "scalings_" in vars(loaded), name
        np.testing.assert_array_equal(loaded.scalings_, estimator.scalings_)
        np.testing.assert_array_equal(loaded.transform(X), estimator.transform(X))


def _saved_with(estimator, path, **fields):
    """``estimator`` saved to ``path`` with metadata ``fields`` set by hand (digest recomputed)."""
    import json

    from genprob.io import persistence

    path = estimator.save(path)
    with np.load(path, allow_pickle=False) as archive:
        contents = {key: archive[key] for key in archive.files}
    metadata = json.loads(str(contents.pop("metadata")))
    metadata.pop("sha256")
    metadata.update(fields)
    metadata["sha256"] = persistence._digest(metadata, contents)
    np.savez(path, metadata=np.array(json.dumps(metadata)), **contents)
    return path


def test_derived_attributes_the_estimator_cannot_recompute_are_refused(tmp_path):
    from genprob.io import persistence

    X, y = _wide(60, 20)

    eigen = genprob.LinearDiscriminantAnalysis(solver="eigen", shrinkage=0.2).fit(X, y)
    svd = genprob.LinearDiscriminantAnalysis().fit(X, y)
    naive = genprob.GaussianNB().fit(X, y)
    for estimator, name, derived, message in (
        (eigen, "coef", ["coef_"], "cannot recompute"),
        (svd, "svd", ["scalings_"], "cannot recompute"),
        (naive, "nb", ["theta_"], "cannot recompute"),
        (eigen, "malformed", "scalings_", "must list names"),
    ):
        path = _saved_with(estimator, tmp_path / name, derived_attributes=derived)
        with pytest.raises(persistence.ModelFileError, match=message):
            genprob.load(path)


@pytest.mark.parametrize(
    "options",
    [{"solver": "lsqr", "shrinkage": "auto"}, {"solver": "lsqr", "priors": [0.2, 0.3, 0.5]}],
    ids=["auto", "priors"],
)
def test_per_class_scatter_round_trips_bitwise(options, tmp_path):
    """Ledoit-Wolf and prior-weighted covariances keep K class scatters and their sum, the
    pooled scatter (every statistic is stored), and nothing else of size D x D."""
    num_features, num_classes = 300, 3
    X, y = _wide(200, num_features)
    estimator = genprob.LinearDiscriminantAnalysis(**options).fit(X, y)
    path = estimator.save(tmp_path / "wide")
    matrix_bytes = num_features**2 * 8
    assert path.stat().st_size < (num_classes + 1.2) * matrix_bytes
    loaded = genprob.load(path)
    for name, value in estimator.stats_["emission"].items():
        np.testing.assert_array_equal(loaded.stats_["emission"][name], value, err_msg=name)
    np.testing.assert_array_equal(loaded.params_["covariance"], estimator.params_["covariance"])
    np.testing.assert_array_equal(loaded.predict_proba(X), estimator.predict_proba(X))
    if "priors" in options:  # these statistics add over chunks: fitting goes on identically
        loaded.partial_fit(X[:30], y[:30])
        estimator.partial_fit(X[:30], y[:30])
        np.testing.assert_array_equal(loaded.predict_proba(X), estimator.predict_proba(X))


def test_files_that_leave_out_statistics_are_refused(tmp_path):
    """Every statistic is stored: a file listing statistics to recompute (an older genprob's)
    is refused with the way out, whatever it lists."""
    from genprob.io import persistence

    X, y = _wide(60, 20)
    estimator = genprob.LinearDiscriminantAnalysis(solver="lsqr", shrinkage="auto").fit(X, y)
    naive = genprob.GaussianNB().fit(X, y)

    for model, name, derived in (
        (estimator, "unknown", ["squares", "sums"]),
        (naive, "naive", ["squares"]),
        (estimator, "extra", ["cubes"]),
        (estimator, "malformed", "squares"),
    ):
        path = _saved_with(model, tmp_path / name, derived_statistics=derived)
        with pytest.raises(persistence.ModelFileError, match="no longer recomputes.*refit"):
            genprob.load(path)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_host_scores_of_a_shared_covariance_match_the_device_program(dtype):
    """Predictions of a shared full covariance are one (n, D) x (D, K) product on the host; they
    equal the compiled scores on the same rows, ordinary or huge (|x| up to 1e300 in float64:
    linear scores stay finite)."""
    X, y = _wide(300, 400)
    estimator = genprob.LinearDiscriminantAnalysis(solver="lsqr", shrinkage=0.2, dtype=dtype)
    estimator.fit(X, y)
    huge = 1e300 if dtype == "float64" else 1e30
    rows = np.concatenate([X[:50], X[:50] * huge, X[:50] * 1e-30, -X[:50] * huge]).astype(dtype)
    on_host, _ = host_and_device_log_proba(estimator, rows, dtype)
    np.testing.assert_allclose(
        np.exp(on_host[:50]),
        SkLDA(solver="lsqr", shrinkage=0.2).fit(X, y).predict_proba(X[:50]),
        atol=1e-8 if dtype == "float64" else 1e-3,
    )


@pytest.mark.parametrize("offset", [0.0, 1e7])
def test_lda_scores_far_from_the_origin_match_the_device_program(offset):
    """LDA's scores are the rows less the center of the class means times the discriminant
    directions: far from the origin (1e7 here) too, NumPy's equal the compiled program's."""
    rng = np.random.default_rng(3)
    X = rng.normal(size=(20_000, 6)) + offset
    y = np.arange(len(X)) % 3
    X[y == 1, 0] += 1.5
    X[y == 2, 1] -= 2.0
    estimator = genprob.LinearDiscriminantAnalysis().fit(X, y)
    host_and_device_log_proba(estimator, X[:500], "float64")


# -- fewer rows than features: the covariance kept as rows (issue 60) ------------------------------
TOLERANCE = {"float64": 1e-9, "float32": 1e-3}


def _dense_twin(estimator):
    """A copy of ``estimator`` whose statistics and parameters are the D x D ones of the same
    rows (what the fit computed before issue 60, and what earlier model files hold)."""
    import copy

    from genprob.story import gram_form

    twin = copy.deepcopy(estimator)
    twin.stats_ = {**twin.stats_, "emission": gram_form(twin.stats_["emission"], force=True)}
    twin.params_ = twin.parameters_from_statistics(twin.stats_)
    assert "covariance" in twin.params_ and COVARIANCE_ROWS not in twin.params_
    return twin


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_fewer_rows_than_features_keep_rows_and_score_as_the_d_by_d_path(dtype):
    """D = 300, n = 20: statistics (20, D) and covariance rows, a (D, r) whitening; the same
    covariance, probabilities and projections as the D x D path and scikit-learn's svd solver."""
    num_features = 300
    X, y = _wide(20, num_features)
    rows = np.vstack([X, _wide(40, num_features, seed=5)[0]])
    estimator = genprob.LinearDiscriminantAnalysis(dtype=dtype).fit(X, y)
    emission = estimator.stats_["emission"]
    assert "squares" not in emission and emission["rows"].shape == (20, num_features)
    assert "covariance" not in estimator.params_
    assert estimator.params_[COVARIANCE_ROWS].shape == (20, num_features)
    factors = estimator._params_jax()[FACTORS]
    assert factors["whitening"].shape == (num_features, 20)
    assert int(factors["rank"]) == 20 - 3  # n - K within-class directions

    tolerance = TOLERANCE[dtype]
    covariance = covariance_of(estimator.params_)
    dense = _dense_twin(estimator)
    scale = np.abs(dense.params_["covariance"]).max()
    np.testing.assert_allclose(covariance, dense.params_["covariance"], atol=tolerance * scale)
    if dtype == "float64":  # in float32 the D x D path keeps rounding noise: rank 159, not 17
        assert dense._params_jax()[FACTORS]["whitening"].shape == (num_features, num_features)
        assert int(dense._params_jax()[FACTORS]["rank"]) == 20 - 3
        np.testing.assert_allclose(
            estimator.predict_proba(rows), dense.predict_proba(rows), rtol=0, atol=tolerance
        )
    reference = SkLDA(store_covariance=True).fit(X, y)
    np.testing.assert_array_equal(estimator.predict(rows), reference.predict(rows))
    np.testing.assert_allclose(
        estimator.predict_proba(rows), reference.predict_proba(rows), rtol=0, atol=tolerance
    )
    np.testing.assert_allclose(covariance, reference.covariance_, atol=tolerance * scale)
    ours, theirs = estimator.transform(rows), reference.transform(rows)
    signs = np.sign(np.sum(ours * theirs, axis=0))
    np.testing.assert_allclose(ours * signs, theirs, atol=tolerance * np.abs(theirs).max())
    scores = estimator.decision_function(rows)
    np.testing.assert_allclose(
        scores, reference.decision_function(rows), atol=tolerance * np.abs(scores).max()
    )


def test_covariance_is_formed_only_when_asked_for():
    num_features = 300
    X, y = _wide(20, num_features)
    svd = genprob.LinearDiscriminantAnalysis().fit(X, y)
    assert not hasattr(svd, "covariance_")  # as scikit-learn's svd solver
    stored = genprob.LinearDiscriminantAnalysis(store_covariance=True).fit(X, y)
    with pytest.warns(UserWarning, match="singular"):
        lsqr = genprob.LinearDiscriminantAnalysis(solver="lsqr").fit(X, y)
    assert "covariance_" not in vars(lsqr)  # formed on access
    reference = SkLDA(store_covariance=True).fit(X, y).covariance_
    scale = np.abs(reference).max()
    for estimator in (stored, lsqr):
        assert estimator.covariance_.shape == (num_features, num_features)
        np.testing.assert_allclose(estimator.covariance_, reference, atol=1e-12 * scale)


def test_rows_stack_until_there_are_half_as_many_as_features():
    """Chunks add by stacking their rows, the Gram matrix once they pass D / 2; every stage
    gives the fit on the rows so far."""
    num_features = 100
    X, y = _wide(90, num_features, seed=11)
    estimator = genprob.LinearDiscriminantAnalysis()
    stages = ((0, 30, "rows"), (30, 50, "rows"), (50, 70, "squares"), (70, 90, "squares"))
    for start, end, kept in stages:
        estimator.partial_fit(X[start:end], y[start:end], classes=[0, 1, 2])
        assert kept in estimator.stats_["emission"], end
        whole = genprob.LinearDiscriminantAnalysis().fit(X[:end], y[:end])
        np.testing.assert_allclose(
            estimator.predict_proba(X), whole.predict_proba(X), rtol=0, atol=1e-9
        )


def test_rows_round_trip_through_a_model_file_and_earlier_files_load(tmp_path):
    num_features = 1000
    X, y = _wide(30, num_features)
    estimator = genprob.LinearDiscriminantAnalysis().fit(X, y)
    path = estimator.save(tmp_path / "rows")
    # the rows (statistics) and nothing of size D x D: parameters recomputed from them
    assert path.stat().st_size < 3 * 30 * num_features * 8
    loaded = genprob.load(path)
    np.testing.assert_array_equal(
        loaded.params_[COVARIANCE_ROWS], estimator.params_[COVARIANCE_ROWS]
    )
    np.testing.assert_array_equal(loaded.predict_proba(X), estimator.predict_proba(X))
    np.testing.assert_array_equal(loaded.transform(X), estimator.transform(X))
    # a file of the D x D statistics and covariance (written before issue 60) loads as it was
    earlier = _dense_twin(estimator)
    old = genprob.load(earlier.save(tmp_path / "dense"))
    assert "squares" in old.stats_["emission"] and "covariance" in old.params_
    np.testing.assert_array_equal(old.predict_proba(X), earlier.predict_proba(X))
    np.testing.assert_allclose(old.predict_proba(X), estimator.predict_proba(X), atol=1e-9)


def test_twenty_thousand_features_fit():
    """D = 20,000, n = 10: refused before issue 60 by the size of D x D statistics."""
    num_features = 20_000
    X, y = _wide(10, num_features)
    estimator = genprob.LinearDiscriminantAnalysis().fit(X, y)
    reference = SkLDA().fit(X, y)
    rows = np.vstack([X, _wide(10, num_features, seed=6)[0]])
    np.testing.assert_array_equal(estimator.predict(rows), reference.predict(rows))
    np.testing.assert_allclose(
        estimator.predict_proba(rows), reference.predict_proba(rows), rtol=0, atol=1e-9
    )


# run alone: scikit-learn's process imports neither genprob nor JAX (rows as in _wide). The peak
# is the process's own high-water mark (Linux's VmHWM; ru_maxrss, where there is none, also
# counts the parent's memory at the fork)
_MEASURE = """
import resource, sys
import numpy as np

def peak():
    try:
        with open("/proc/self/status") as status:
            return next(int(l.split()[1]) for l in status if l.startswith("VmHWM:")) * 1024
    except (OSError, StopIteration):
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024

rng = np.random.default_rng(9)
y = np.arange(10) % 3
X = rng.normal(size=(10, 8000)) + 0.1 * y[:, None]
if sys.argv[1] == "sklearn":
    from sklearn.discriminant_analysis import LinearDiscriminantAnalysis
else:
    import jax  # imported by the fit's size check: a cost of the process, not of the fit
    from genprob import LinearDiscriminantAnalysis
    LinearDiscriminantAnalysis().fit(X[:, :50], y)  # the rest of the imports
before = peak()
LinearDiscriminantAnalysis().fit(X, y).predict_proba(X)
print(peak(), peak() - before)
"""


def test_eight_thousand_features_ten_rows_hold_what_scikit_learn_holds():
    """D = 8000, n = 10 (issue 60: 6.7 GB before): peak memory within 5x scikit-learn's (each in
    its own process), and the fit grows the peak by far less than one D x D matrix. Its time
    against scikit-learn is a row of benchmarks/bench_wide.py (docs/benchmarks.md)."""
    import pathlib
    import subprocess
    import sys

    root = str(pathlib.Path(__file__).resolve().parents[1])
    measured = {}
    for name in ("sklearn", "genprob"):
        output = subprocess.run(
            [sys.executable, "-c", _MEASURE, name], capture_output=True, text=True, check=True,
            cwd=root,
        ).stdout.split()  # fmt: skip
        measured[name] = [float(value) for value in output[-2:]]
    (sk_peak, _), (peak, grown) = measured["sklearn"], measured["genprob"]
    assert peak <= 5 * sk_peak, (peak, sk_peak)
    assert grown < 8000**2 * 8 / 8, grown  # one D x D float64 matrix is 512 MB


def test_rules_that_read_the_statistics_take_rows():
    """The predictive rule reads the fit's statistics: kept as rows, it gives what their D x D
    form gives."""
    X, y = _wide(20, 100, seed=12)
    estimator = genprob.LinearDiscriminantAnalysis().fit(X, y)
    assert "rows" in estimator.stats_["emission"]
    dense = _dense_twin(estimator)
    rows = _wide(10, 100, seed=13)[0]
    np.testing.assert_allclose(
        estimator.predict_log_proba(rows, method="predictive"),
        dense.predict_log_proba(rows, method="predictive"),
        rtol=1e-9,
        atol=1e-9,
    )


def test_nuts_starts_at_a_fit_kept_as_rows():
    """NUTS samples the D x D covariance: a fit kept as rows gives its start and its mle."""
    X, y = _wide(8, 20, seed=14)
    estimator = genprob.LinearDiscriminantAnalysis().fit(X, y)
    assert COVARIANCE_ROWS in estimator.params_
    idata = estimator.posterior(X, y, num_samples=20, num_warmup=20, num_chains=1, random_state=0)
    draws = np.asarray(idata.posterior["covariance"])
    assert draws.shape == (1, 20, 20, 20) and np.all(np.isfinite(draws))
