"""MixtureDiscriminantAnalysis.posterior (issue 44, item 5): NUTS with the components summed out,
draws aligned to the MLE's components before R-hat, and a warning naming any component on which
the chains still disagree."""

import warnings

import arviz as az
import numpy as np
import pytest
from scipy.stats import multivariate_normal

import genprob
from genprob.families.gaussian.mclust import STRUCTURES
from genprob.families.gaussian.mixture_story import ClassMixtureStory
from genprob.inference.mcmc import RHAT_MAX, SamplingWarning, diagnose


def _blobs(seed=0, n=160, fraction=0.15):
    """Two classes, each two well separated blobs (2-D), 15% of the rows of each blob labeled."""
    rng = np.random.default_rng(seed)
    centers = [[-4.0, 0.0], [4.0, 0.0], [0.0, 4.0], [0.0, -4.0]]
    X = np.vstack([rng.normal(c, 0.8, size=(n // 4, 2)) for c in centers])
    truth = np.repeat([0, 0, 1, 1], n // 4)
    blob = np.repeat(np.arange(4), n // 4)
    labeled = np.zeros(n, dtype=bool)
    for b in range(4):
        rows = np.flatnonzero(blob == b)
        labeled[rng.choice(rows, int(round(fraction * len(rows))), replace=False)] = True
    return X, np.where(labeled, truth, -1)


@pytest.fixture(scope="module")
def posterior():
    """One NUTS run with the default settings (fewer draws), its warnings and the model."""
    X, y = _blobs()
    model = genprob.MixtureDiscriminantAnalysis(structure="VVV", n_components=(1, 2)).fit(X, y)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        idata = model.posterior(X, y, num_samples=300, num_warmup=300, random_state=0)
    messages = [str(w.message) for w in caught if issubclass(w.category, SamplingWarning)]
    return model, idata, messages


def _named(model, name, j):
    """How the warning names parameter ``name`` of cell ``j`` (a class for ``class_prior``)."""
    if name == "class_prior":
        return f"class_prior of class {model.classes_[j].item()!r}"
    cell_class = model.params_["component_class"]
    k = int(cell_class[j])
    g = int(np.sum(cell_class[:j] == k))
    return f"{name} of class {model.classes_[k].item()!r}, component {g}"


def test_no_silent_component_switching(posterior):
    """The issue's test: a class of two components, 15% labels, defaults: aligned R-hat <= 1.01,
    or a SamplingWarning naming the parameter (class and component)."""
    model, idata, messages = posterior
    assert list(model.n_components_) == [2, 2]
    rhat = az.rhat(idata.posterior)
    for name in ("class_prior", "weights", "means", "covariances"):
        values = np.asarray(rhat[name])
        for j in range(values.shape[0]):
            worst = np.nanmax(values[j]) if np.any(np.isfinite(values[j])) else 1.0
            if worst > RHAT_MAX:
                assert any(_named(model, name, j) in m for m in messages), (name, j, messages)
    # and the other way round: a component named has a failing check
    named = [m for m in messages if "after aligning" in m]
    if not named:
        assert float(max(np.nanmax(np.asarray(rhat[v])) for v in rhat.data_vars)) <= RHAT_MAX
    # every chain sits at the MLE's labeling of the components, none at a swapped one
    means = idata.posterior["means"].mean("draw").values  # (chain, J, D)
    mle = model.params_["means"]
    for chain in means:
        nearest = np.argmin(((chain[:, None, :] - mle[None]) ** 2).sum(-1), axis=1)
        np.testing.assert_array_equal(nearest, np.arange(len(mle)))


def test_posterior_means_near_the_mle(posterior):
    """A well identified case: every posterior mean within 4 posterior sds of the MLE."""
    model, idata, _ = posterior
    for name in ("class_prior", "weights", "means", "covariances"):
        draws = idata.posterior[name]
        mean = draws.mean(("chain", "draw")).values
        sd = draws.std(("chain", "draw")).values
        mle = np.asarray(model.params_[name])
        np.testing.assert_array_equal(np.asarray(idata.mle[name]), mle)
        varies = sd > 0
        assert np.all(np.abs(mean - mle)[varies] <= 4 * sd[varies]), name
        np.testing.assert_allclose(mean[~varies], mle[~varies])  # a class's single weight of 1
    assert list(idata.posterior["means"].dims) == ["chain", "draw", "component", "feature"]
    assert list(idata.posterior.coords["component"].values) == ["0:0", "0:1", "1:0", "1:1"]


def _swapped_draws(rng, shift=0.0):
    """Two chains about one MLE (one class of two components), the second chain's components
    in the other order; ``shift`` moves its component 1's mean away (a mode not shared)."""
    reference = {
        "class_prior": np.array([1.0]),
        "weights": np.array([0.4, 0.6]),
        "means": np.array([[-3.0, 0.0], [3.0, 1.0]]),
        "covariances": np.array([np.eye(2), 2.0 * np.eye(2)]),
    }
    draws = {name: [] for name in reference}
    for chain in range(2):
        num = 400
        weights = np.clip(reference["weights"] + 0.02 * rng.standard_normal((num, 2)), 0.01, None)
        means = reference["means"] + 0.1 * rng.standard_normal((num, 2, 2))
        scale = np.exp(0.05 * rng.standard_normal((num, 2)))[..., None, None]
        covariances = reference["covariances"] * scale
        if chain == 1:
            means[:, 1] += shift
            weights, means, covariances = weights[:, ::-1], means[:, ::-1], covariances[:, ::-1]
        draws["class_prior"].append(np.ones((num, 1)))
        draws["weights"].append(weights)
        draws["means"].append(means)
        draws["covariances"].append(covariances)
    return {k: np.stack(v) for k, v in draws.items()}, reference


def test_rhat_is_computed_on_aligned_draws():
    """Chains holding the same components in swapped order: R-hat of the raw draws fails, that
    of the aligned draws passes, and nothing is warned."""
    rng = np.random.default_rng(1)
    draws, reference = _swapped_draws(rng)
    story = ClassMixtureStory([0, 0], ["VVV"], [(0, 1)])
    raw = diagnose(draws)
    assert raw["max_rhat"] > 1.5
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        aligned, checks = story.align_draws(draws, reference, labels="all")
    assert checks["max_rhat"] <= RHAT_MAX
    assert checks["components"] == [] and checks["problems"] == []
    # the second chain's draws are its own draws, components put back in the MLE's order
    np.testing.assert_array_equal(aligned["means"][1], draws["means"][1][:, ::-1])
    np.testing.assert_array_equal(aligned["covariances"][1], draws["covariances"][1][:, ::-1])
    np.testing.assert_array_equal(aligned["means"][0], draws["means"][0])


def test_a_mode_the_chains_do_not_share_is_named():
    """After alignment the second chain's component 1 still sits elsewhere: the warning names
    the means of class 0, component 1 (and no parameter of component 0)."""
    rng = np.random.default_rng(2)
    draws, reference = _swapped_draws(rng, shift=1.5)
    story = ClassMixtureStory([0, 0], ["VVV"], [(0, 1)])
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        _, checks = story.align_draws(draws, reference, labels="all")
    named = [w for w in record if issubclass(w.category, SamplingWarning)]
    text = " ".join(str(w.message) for w in named if "after aligning" in str(w.message))
    assert "means of class 0, component 1 (x0)" in text
    assert "means of class 0, component 0" not in text
    assert ("means", 0, 1) in {row[:3] for row in checks["components"]}
    # the named line replaces the sampler's generic one (filtered by its kind in mda.py)
    assert not [w for w in named if "max R-hat" in str(w.message)]
    kinds = [p.kind for p in checks["problems"]]
    assert kinds[0] == "components" and "rhat" not in kinds


@pytest.mark.parametrize("n_components", [1, 2])
@pytest.mark.parametrize("structure", STRUCTURES)
def test_chains_start_at_the_mle(structure, n_components):
    """The prior's sites at the MLE (``align_parameters`` of the fit against itself) give back
    the MLE's covariances, for every structure, within classes (MclustDA) or across them (EDDA),
    so that ``init="mle"`` starts the chains at the fit."""
    from genprob.engine._dtype import precision
    from genprob.engine.em import params_from_latent

    X, y = _blobs(seed=3)
    y = np.where(y >= 0, y, np.repeat([0, 0, 1, 1], 40))  # fully labeled: a quick fit
    model = genprob.MixtureDiscriminantAnalysis(structure=structure, n_components=n_components)
    model.fit(X, y)
    fit = model._fitted()
    assert len(fit.groups) == (1 if n_components == 1 else 2)
    story = ClassMixtureStory(fit.cell_class, fit.structures, fit.groups)
    latent = story.align_parameters(model.params_, model.params_)
    with precision("float64"):
        params = params_from_latent(story, latent, 2, 2)
    for name in ("weights", "means", "covariances"):
        np.testing.assert_allclose(params[name], model.params_[name], rtol=1e-9, atol=1e-12)


def test_missing_cells_score_the_observed_marginal():
    """NaN cells (missing="marginalize"): each row scores the mixture of its observed
    coordinates' marginals, written out here with SciPy."""
    import jax.numpy as jnp

    from genprob.engine._dtype import precision
    from genprob.engine.masking import marginalized

    story = ClassMixtureStory([0, 0, 1], ["VVV", "VVV"], [(0, 1), (2,)])
    params = {
        "weights": np.array([0.3, 0.7, 1.0]),
        "means": np.array([[0.0, 1.0, 2.0], [1.0, -1.0, 0.5], [2.0, 2.0, 2.0]]),
        "covariances": np.array(
            [
                [[1.0, 0.3, 0.1], [0.3, 2.0, 0.2], [0.1, 0.2, 1.5]],
                [[0.5, 0.0, 0.1], [0.0, 1.0, -0.3], [0.1, -0.3, 2.0]],
                np.eye(3),
            ]
        ),
    }
    X = np.array([[0.5, np.nan, 1.0], [np.nan, np.nan, 0.0], [1.0, 2.0, 3.0]])
    with precision("float64"):
        emission = marginalized(story).emission(params)
        scores = np.asarray(emission.log_prob(jnp.asarray(X)[:, None, :]))
    expected = np.empty((3, 2))
    for i, row in enumerate(X):
        seen = ~np.isnan(row)
        for k, cells in enumerate(([0, 1], [2])):
            density = sum(
                params["weights"][j]
                * multivariate_normal(
                    params["means"][j][seen], params["covariances"][j][np.ix_(seen, seen)]
                ).pdf(row[seen])
                for j in cells
            )
            expected[i, k] = np.log(density)
    np.testing.assert_allclose(scores, expected, rtol=1e-10)


@pytest.mark.slow
def test_posterior_with_missing_cells():
    """NaN cells (missing="marginalize") through NUTS: the posterior sits at the MLE and every
    row has a finite log-likelihood."""
    X, y = _blobs()
    X = X.copy()
    X[np.random.default_rng(5).random(X.shape) < 0.05] = np.nan
    model = genprob.MixtureDiscriminantAnalysis(
        structure="VVV", n_components=2, missing="marginalize"
    )
    model.fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SamplingWarning)
        idata = model.posterior(X, y, num_samples=300, num_warmup=300, random_state=0)
    assert np.all(np.isfinite(idata.log_likelihood["obs"].values))
    draws = idata.posterior["means"]
    gap = np.abs(draws.mean(("chain", "draw")).values - model.params_["means"])
    assert np.all(gap <= 4 * draws.std(("chain", "draw")).values)


def test_exact_method_is_refused():
    X, y = _blobs()
    model = genprob.MixtureDiscriminantAnalysis(structure="VVV", n_components=2).fit(X, y)
    with pytest.raises(ValueError, match="method must be 'nuts'"):
        model.posterior(X, y, method="exact")
    # the other estimators' options, checked by the same rules
    with pytest.raises(ValueError, match="sampler must be one of"):
        model.posterior(X, y, sampler="stan")
    with pytest.raises(ValueError, match="predictive_draws"):
        model.posterior(X, y, predictive_draws=-1)
    with pytest.raises(TypeError, match="unknown NUTS setting 'dense'"):
        model.posterior(X, y, dense=True)
