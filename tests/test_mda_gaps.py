"""MixtureDiscriminantAnalysis (issue 44), the remaining gaps: warm-started iterative M-steps
inside EM, partial_fit and Dask for EDDA, and NaN cells marginalized with the named structures
in GaussianStory."""

import re

import numpy as np
import pytest
from _mclust_data import load

import genprob
from genprob.families.gaussian import mclust, mixture


def _class_scatter(X, y):
    scatter = np.stack([np.cov(X[y == k].T, bias=True) * np.sum(y == k) for k in np.unique(y)])
    return scatter, np.bincount(y).astype(float)


# -- (d) warm starts -----------------------------------------------------------------------------
@pytest.mark.parametrize("structure", mclust.ITERATIVE)
def test_warm_start_reaches_the_cold_maximum(structure):
    X, y = load("iris")
    W, n = _class_scatter(X, y)
    tight = dict(tol=1e-13)  # the same maximum, to well within the default rule
    cold = mclust.covariances(structure, W, n, **tight)
    # from the answer itself: nothing moves
    start = mclust.covariances(structure, W, n, start=cold, **tight)
    np.testing.assert_allclose(start, cold, rtol=1e-10)
    # from the previous EM iteration's answer (slightly other scatter): Q never below start's,
    # and the same maximum as from scratch
    other = mclust.covariances(structure, W * np.array([1.02, 0.99, 1.01])[:, None, None], n)
    warm = mclust.covariances(structure, W, n, start=other, **tight)
    np.testing.assert_allclose(warm, cold, rtol=1e-8, atol=1e-12)
    # at the default rule, within it
    default = mclust.covariances(structure, W, n, start=other)
    np.testing.assert_allclose(default, cold, rtol=0, atol=10 * mclust.TOL * np.abs(cold).max())
    few = mclust.covariances(structure, W, n, start=other, max_iter=2)
    assert mclust.m_step_objective(W, n, few) >= mclust.m_step_objective(W, n, other)
    with pytest.raises(ValueError, match="start must have"):
        mclust.covariances(structure, W, n, start=cold[:2])


@pytest.mark.parametrize("structure", ["EVE", "VEI"])
def test_capped_warm_m_steps_give_the_full_fit(structure, monkeypatch):
    X, y = load("iris")
    rows = y == 2
    fits = []
    for cap in (mixture.WARM_MAX_ITER, mclust.MAX_ITER):
        monkeypatch.setattr(mixture, "WARM_MAX_ITER", cap)
        fits.append(mixture.fit_mixture(X[rows], np.zeros(rows.sum(), int), (2,), (structure,)))
    capped, full = fits
    assert capped.converged and full.converged
    assert capped.log_likelihood == pytest.approx(full.log_likelihood, rel=1e-7)
    np.testing.assert_allclose(capped.means, full.means, atol=1e-3)
    assert np.all(np.diff(capped.trace) >= -1e-9 * abs(capped.trace[-1]))


# -- (b) partial_fit and Dask: one structure, one Gaussian per class -----------------------------
def _shuffled_iris():
    X, y = load("iris")
    order = np.random.default_rng(0).permutation(len(y))
    # far from the origin: the statistics' reference point matters
    return X[order] + np.array([100.0, -50.0, 3.0, 1000.0]), y[order]


def _within_rule(structure):
    """How close two paths to the same M-step agree: an iterative structure stops within its
    rule (mclust's sqrt(eps) on the parameters' change), a closed form to rounding."""
    return 10 * mclust.TOL if structure in mclust.ITERATIVE else 1e-10


def _assert_same_params(a, b, rtol=1e-10):
    for name in ("class_prior", "means", "covariances"):
        expected = np.asarray(b.params_[name])
        np.testing.assert_allclose(
            a.params_[name], expected, rtol=0, atol=rtol * np.abs(expected).max()
        )


@pytest.mark.parametrize("structure", ["EEE", "VVV", "VEV", "EVE"])
def test_partial_fit_over_chunks_equals_fit(structure):
    X, y = _shuffled_iris()
    weight = np.where(np.arange(len(y)) % 4 == 0, 2.0, 1.0)
    full = genprob.MixtureDiscriminantAnalysis(structure=structure).fit(X, y, weight)
    model = genprob.MixtureDiscriminantAnalysis(structure=structure)
    for rows in np.array_split(np.arange(len(y)), 3):
        model.partial_fit(X[rows], y[rows], classes=[0, 1, 2], sample_weight=weight[rows])
    _assert_same_params(model, full, _within_rule(structure))
    np.testing.assert_allclose(model.predict_proba(X), full.predict_proba(X), atol=1e-10)
    assert model.structure_.tolist() == [structure] * 3
    # the criterion is flat at the maximum: within the rule's square, up to MM's slow tail
    rel = 1e-9 if structure in mclust.ITERATIVE else 1e-12
    assert model.bic(X) == pytest.approx(full.bic(X), rel=rel)
    # partial_fit after fit continues from fit's rows
    first = genprob.MixtureDiscriminantAnalysis(structure=structure).fit(
        X[:60], y[:60], weight[:60]
    )
    first.partial_fit(X[60:], y[60:], sample_weight=weight[60:])
    _assert_same_params(first, full, _within_rule(structure))
    with pytest.raises(AttributeError, match="no BIC table: partial_fit"):
        model.bic_table_  # noqa: B018


def test_partial_fit_statistics_are_saved_and_continued(tmp_path):
    X, y = _shuffled_iris()
    model = genprob.MixtureDiscriminantAnalysis(structure="VEE").partial_fit(
        X[:70], y[:70], classes=[0, 1, 2]
    )
    loaded = genprob.load(model.save(tmp_path / "mda"))
    np.testing.assert_array_equal(loaded.predict_proba(X), model.predict_proba(X))
    loaded.partial_fit(X[70:], y[70:])
    _assert_same_params(loaded, genprob.MixtureDiscriminantAnalysis(structure="VEE").fit(X, y))


def test_partial_fit_refuses_what_needs_every_row():
    X, y = _shuffled_iris()
    # no partial_fit attribute where the statistics do not add: the reason is its cause
    with pytest.raises(AttributeError) as info:
        genprob.MixtureDiscriminantAnalysis(structure=["EEE", "VVV"]).partial_fit(
            X, y, classes=[0, 1, 2]
        )
    assert "one structure only, got 2 candidates" in str(info.value.__cause__)
    with pytest.raises(AttributeError) as info:
        genprob.MixtureDiscriminantAnalysis(structure="VVV", n_components=range(1, 3)).partial_fit(
            X, y, classes=[0, 1, 2]
        )
    assert re.search(r"n_components=1\) only.*EM over the components", str(info.value.__cause__))
    partly = np.where(np.arange(len(y)) % 5 == 0, -1, y)
    with pytest.raises(ValueError, match="30 unlabeled rows"):
        genprob.MixtureDiscriminantAnalysis(structure="VVV").partial_fit(
            X, partly, classes=[0, 1, 2]
        )
    holed = X.copy()
    holed[3, 1] = np.nan
    with pytest.raises(ValueError, match="partial_fit does not take missing entries"):
        genprob.MixtureDiscriminantAnalysis(structure="VVV", missing="marginalize").partial_fit(
            holed, y, classes=[0, 1, 2]
        )
    with pytest.raises(ValueError, match="classes must be passed"):
        genprob.MixtureDiscriminantAnalysis(structure="VVV").partial_fit(X, y)
    # a class without rows yet: the chunk is kept, the parameters wait for it
    model = genprob.MixtureDiscriminantAnalysis(structure="VEV")
    with pytest.warns(UserWarning, match="class 2 has no rows yet"):
        model.partial_fit(X[y < 2], y[y < 2], classes=[0, 1, 2])
    assert not hasattr(model, "params_")
    model.partial_fit(X[y == 2], y[y == 2])
    _assert_same_params(model, genprob.MixtureDiscriminantAnalysis(structure="VEV").fit(X, y))


def test_chunks_fit_equals_fit_and_refuse_what_needs_every_row():
    from genprob.streaming import Chunks

    X, y = _shuffled_iris()
    weight = np.where(np.arange(len(y)) % 4 == 0, 2.0, 1.0)
    rows = np.array_split(np.arange(len(y)), 4)
    chunks = Chunks([(X[r], y[r], weight[r]) for r in rows])
    full = genprob.MixtureDiscriminantAnalysis(structure="EVE").fit(X, y, weight)
    streamed = genprob.MixtureDiscriminantAnalysis(structure="EVE").fit(chunks, None)
    _assert_same_params(streamed, full, _within_rule("EVE"))
    assert (
        streamed.structure_.tolist() == ["EVE"] * 3 and streamed.n_components_.tolist() == [1] * 3
    )
    assert streamed.story_.component_labels == ("0:0", "1:0", "2:0")
    assert not hasattr(streamed, "log_likelihood_")
    partly = np.where(np.arange(len(y)) % 5 == 0, -1, y)
    with pytest.raises(ValueError, match=r"unlabeled rows \(-1\) need EM over every row"):
        genprob.MixtureDiscriminantAnalysis(structure="EVE").fit(
            Chunks([(X[r], partly[r]) for r in rows]), None
        )
    with pytest.raises(ValueError, match="one structure only, got 2 candidates"):
        genprob.MixtureDiscriminantAnalysis(structure="EEE,EVE").fit(chunks, None)


def test_a_model_without_a_stored_story_derives_it(tmp_path):
    # files of releases before issue 56 hold no story_, but the structures and groups
    X, y = _shuffled_iris()
    model = genprob.MixtureDiscriminantAnalysis(structure="VEV").fit(X, y)
    old = genprob.MixtureDiscriminantAnalysis(structure="VEV").fit(X, y)
    del old.__dict__["story_"]
    old._structures, old._groups = model.story_.structures, model.story_.groups
    assert old.story_.component_labels == model.story_.component_labels
    assert old.story_.groups == model.story_.groups
    loaded = genprob.load(old.save(tmp_path / "old"))
    np.testing.assert_array_equal(loaded.predict_proba(X), model.predict_proba(X))


def test_dask_fit_equals_fit_on_a_local_cluster(client):
    da = pytest.importorskip("dask.array")
    dd = pytest.importorskip("dask.dataframe")
    import pandas as pd

    X, y = _shuffled_iris()
    weight = np.where(np.arange(len(y)) % 4 == 0, 2.0, 1.0)
    sizes = (1, 60, 0, 89)  # a single row, an empty block, boundaries inside classes
    Xd = da.from_array(X, chunks=(sizes, X.shape[1]))
    yd = da.from_array(y, chunks=(sizes,))
    wd = da.from_array(weight, chunks=(sizes,))
    for structure in ("VVV", "VEV"):
        full = genprob.MixtureDiscriminantAnalysis(structure=structure).fit(X, y, weight)
        fitted = genprob.MixtureDiscriminantAnalysis(structure=structure).fit(
            Xd, yd, sample_weight=wd
        )
        _assert_same_params(fitted, full)
        np.testing.assert_array_equal(fitted.predict(X), full.predict(X))
    frame = pd.DataFrame(X, columns=["a", "b", "c", "d"]).assign(label=y)
    ddf = dd.from_pandas(frame, npartitions=3)
    fitted = genprob.MixtureDiscriminantAnalysis(structure="EVE").fit(
        ddf[["a", "b", "c", "d"]], ddf["label"]
    )
    _assert_same_params(fitted, genprob.MixtureDiscriminantAnalysis(structure="EVE").fit(X, y))
    assert fitted.feature_names_in_.tolist() == ["a", "b", "c", "d"]
    partly = np.where(np.arange(len(y)) % 5 == 0, -1, y)
    with pytest.raises(ValueError, match="unlabeled rows"):
        genprob.MixtureDiscriminantAnalysis(structure="VVV").fit(
            Xd, da.from_array(partly, chunks=(sizes,))
        )
    with pytest.raises(ValueError, match="Dask collection fits one structure only"):
        genprob.MixtureDiscriminantAnalysis(structure="all").fit(Xd, yd)
    holed = X.copy()
    holed[120, 1] = np.nan  # past the rows the driver reads: a worker refuses it
    with pytest.raises(ValueError, match="does not take missing entries"):
        genprob.MixtureDiscriminantAnalysis(structure="VVV", missing="marginalize").fit(
            da.from_array(holed, chunks=(sizes, X.shape[1])), yd
        )


# -- (c) NaN cells marginalized with the named structures in GaussianStory ----------------------
def _holed_data():
    rng = np.random.default_rng(5)
    X = np.vstack([rng.normal([0, 0, 0], 1, (30, 3)), rng.normal([2, 1, -1], [1, 0.5, 2], (30, 3))])
    X[:, 1] += 0.6 * X[:, 0]
    X[[1, 5, 9, 40], 1] = np.nan
    X[[3, 42], 0] = np.nan
    X[[7, 50], 2] = np.nan
    X[44, :2] = np.nan
    return X, np.repeat([0, 1], 30)


def _hand_log_likelihood(X, y, prior, means, covariances):
    """sum_i log pi_y + log N(x_obs; mu_y,obs, Sigma_y,obs,obs): each row's observed
    coordinates under the marginal of its class's Gaussian."""
    total = 0.0
    for x, k in zip(X, y, strict=True):
        o = ~np.isnan(x)
        S = covariances[k][np.ix_(o, o)]
        r = x[o] - means[k][o]
        quadratic = r @ np.linalg.solve(S, r)
        total += np.log(prior[k]) - 0.5 * (o.sum() * np.log(2 * np.pi) + np.linalg.slogdet(S)[1])
        total -= 0.5 * quadratic
    return total


@pytest.mark.parametrize("structure", ["EEV", "VEI", "EVE"])
def test_named_structures_marginalize_nan_cells(structure):
    from scipy.optimize import minimize

    from genprob.families.gaussian import GaussianStory

    X, y = _holed_data()
    model = genprob.GenerativeClassifier(
        GaussianStory(structure=structure), missing="marginalize", em_tol=1e-14, max_iter=1000
    ).fit(X, y)
    p = model.params_
    fitted = _hand_log_likelihood(X, y, p["class_prior"], p["means"], p["covariance"])
    assert model.log_likelihood(X, y) == pytest.approx(fitted, rel=1e-12)
    # the observed-data likelihood written by hand, maximized over the structure's free
    # parameters (lambda D A D^T, mclust.compose) from the fit: no higher value
    shapes = mclust.latent_shapes(structure, 2, 3)
    latent = mclust.decompose(structure, p["covariance"])

    def negative(theta):
        free, start = {}, 6
        for name, shape in shapes.items():
            size = int(np.prod(shape))
            free[name] = theta[start : start + size].reshape(shape)
            start += size
        covariances = mclust.compose(structure, free, 2, 3)
        return -_hand_log_likelihood(
            X, y, np.bincount(y) / len(y), theta[:6].reshape(2, 3), covariances
        )

    theta = np.concatenate([p["means"].ravel()] + [np.ravel(latent[name]) for name in shapes])
    best = minimize(negative, theta, method="BFGS", options={"gtol": 1e-9})
    assert -best.fun <= fitted + 1e-9 * abs(fitted)
    # the same fit as MixtureDiscriminantAnalysis's EM (conditional means and covariances)
    mda = genprob.MixtureDiscriminantAnalysis(
        structure=structure, missing="marginalize", em_tol=1e-14, max_iter=5000
    ).fit(X, y)
    np.testing.assert_allclose(mda.params_["covariances"], p["covariance"], atol=1e-6)
    assert mda.log_likelihood(X, y) == pytest.approx(fitted, rel=1e-10)
    # predictions: no NaN; a row with nothing observed gets the class prior
    proba = model.predict_proba(np.vstack([X, np.full(3, np.nan)]))
    assert np.all(np.isfinite(proba))
    np.testing.assert_allclose(proba[-1], p["class_prior"], rtol=1e-12)
