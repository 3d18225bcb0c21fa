"""Honest optimizer fits: non-convergence and collapsed weights are reported; n_init and init."""

import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

import genprob
from genprob.datasets import load_iris, load_wine
from genprob.families.gaussian import GaussianStory
from genprob.inference.optimize import fit_optimizer
from genprob.story import align_components
from tests._optim_stories import ClassMixtureStory, LaplaceNoClosedForm


@pytest.fixture(scope="module")
def wine():
    X, y = load_wine()
    return (X - X.mean(0)) / X.std(0), y


def test_optimizer_warns_when_lbfgs_does_not_converge():
    X, y = load_iris()
    with pytest.warns(ConvergenceWarning, match=r"did not converge in max_iter=20 iterations"):
        result = fit_optimizer(LaplaceNoClosedForm(), X, y, max_iter=20)
    assert not result.converged and result.num_iterations == 20
    assert result.grad_norm > 1e-10
    # the estimator passes the warning on
    estimator = genprob.GenerativeClassifier(LaplaceNoClosedForm(), optimizer_max_iter=20)
    with pytest.warns(ConvergenceWarning, match="did not converge"):
        estimator.fit(X, y)
    assert not estimator.optimizer_result_.converged
    # warn=False leaves the report to the caller (crosscheck does so)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fit_optimizer(LaplaceNoClosedForm(), X, y, max_iter=20, warn=False)


def test_converged_fit_does_not_warn():
    X, y = load_iris()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        result = fit_optimizer(GaussianStory(covariance="diag", shared=False), X, y, seed=1)
    assert result.converged and result.collapsed == ()
    assert result.start_objectives.shape == (1,)
    assert result.start_objectives[0] == result.objective


@pytest.fixture(scope="module")
def mixture_fits(wine):
    """One start (seed 6) and the best of five starts (seeds 6..10), with their warnings."""
    X, y = wine
    story = ClassMixtureStory(num_components=2)
    with warnings.catch_warnings(record=True) as single_warnings:
        warnings.simplefilter("always")
        single = fit_optimizer(story, X, y, seed=6)
    with warnings.catch_warnings(record=True) as best_warnings:
        warnings.simplefilter("always")
        best = fit_optimizer(story, X, y, seed=6, n_init=5)
    return single, single_warnings, best, best_warnings


def _messages(caught):
    return [str(w.message) for w in caught if issubclass(w.category, ConvergenceWarning)]


# slow (out of CI) until fixed: with -n 2 on a busy machine a start of these collapsing fits
# (weights ~1e-18) ended elsewhere (not converged); alone they pass (docs/changelog.md)
@pytest.mark.slow
def test_n_init_finds_the_two_component_mixture_a_single_start_misses(mixture_fits):
    single, single_warnings, best, best_warnings = mixture_fits
    # seed 6 alone: every class collapses to one component (a weight ~1e-18), and it converges
    (message,) = _messages(single_warnings)
    assert "3 weight(s) collapsed below min_weight=1e-06" in message
    assert single.converged
    np.testing.assert_allclose(single.objective, -2578.337582162304, rtol=1e-9)
    assert [(name, index[0]) for name, index, _ in single.collapsed] == [
        ("weights", 0),
        ("weights", 1),
        ("weights", 2),
    ]
    assert all(weight < 1e-12 for _, _, weight in single.collapsed)

    (message,) = _messages(best_warnings)
    assert "2 weight(s) collapsed" in message and "n_init=5" in message
    assert best.start_objectives.shape == (5,)
    assert best.start_objectives[0] == single.objective  # start 0 is the single start
    assert best.objective == best.start_objectives.max()
    np.testing.assert_allclose(best.objective, -2502.0638730350074, rtol=1e-9)
    assert best.objective > single.objective + 70
    # class 0 uses two components; the other two classes are reported collapsed
    assert np.all(best.params["weights"][0] > 0.15)
    assert {index[0] for _, index, _ in best.collapsed} == {1, 2}
    np.testing.assert_allclose(best.params["weights"].sum(1), 1.0, rtol=1e-12)


@pytest.mark.slow  # see the test above
def test_estimator_n_init_and_init(wine, mixture_fits):
    X, y = wine
    story = ClassMixtureStory(num_components=2)
    reference = mixture_fits[2]
    # init: a dict of parameters is the first start; from the maximum, nothing moves
    # seeded: an unseeded second start drew from the global RNG, whose state depends on the
    # tests run before in the worker, and once found an uncollapsed maximum (no warning)
    estimator = genprob.GenerativeClassifier(story, n_init=2, init=reference.params, random_state=0)
    with pytest.warns(ConvergenceWarning, match="collapsed"):
        estimator.fit(X, y)
    result = estimator.optimizer_result_
    assert result.start_objectives.shape == (2,)
    np.testing.assert_allclose(result.start_objectives[0], reference.objective, rtol=1e-10)
    assert result.objective >= reference.objective - 1e-8 * abs(reference.objective)
    with pytest.raises(ValueError, match="init"):
        genprob.GenerativeClassifier(story, init="random").fit(X, y)
    with pytest.raises(ValueError, match="n_init"):
        fit_optimizer(story, X, y, n_init=0)
    with pytest.raises(ValueError, match="min_weight"):
        fit_optimizer(story, X, y, min_weight=1.5)


def test_align_components_undoes_a_per_class_permutation():
    rng = np.random.default_rng(0)
    reference = {
        "weights": rng.dirichlet(np.ones(4), size=3),
        "loc": rng.normal(size=(3, 4, 5)),
        "class_prior": np.array([0.2, 0.3, 0.5]),
    }
    orders = [rng.permutation(4) for _ in range(3)]
    shuffled = dict(reference)
    shuffled["weights"] = np.stack([reference["weights"][k, o] for k, o in enumerate(orders)])
    shuffled["loc"] = np.stack([reference["loc"][k, o] for k, o in enumerate(orders)])
    aligned = align_components(shuffled, reference, ["weights", "loc"])
    for name in reference:
        np.testing.assert_array_equal(aligned[name], reference[name])
    # the component axis can be another one: (class, feature, component)
    moved = {"loc": np.moveaxis(shuffled["loc"], 1, 2)}
    target = {"loc": np.moveaxis(reference["loc"], 1, 2)}
    np.testing.assert_array_equal(
        align_components(moved, target, ["loc"], axis=2)["loc"], target["loc"]
    )


class _UnalignedMixture(ClassMixtureStory):
    def align_parameters(self, params, reference):
        return params


def test_crosscheck_of_a_mixture_compares_components_up_to_their_order(wine):
    X, y = wine
    # five features, seed 3: two components of weight >= 0.1 in every class (on all 13, a
    # component collapses and its loc and scale are unidentified: no two runs need agree)
    X = X[:, :5]
    story = ClassMixtureStory(num_components=2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        best = fit_optimizer(story, X, y, seed=3)
        assert best.params["weights"].min() > 0.1
        swapped = {
            name: (value[:, ::-1] if name in ("weights", "loc", "scale") else value)
            for name, value in best.params.items()
        }
        # the checked fit is the seed-3 optimum with its components reversed; the restart
        # (seed 3 again) returns them in the original order: same objective, same model
        aligned = genprob.crosscheck(story, X, y, params=swapped, seed=3, starts=1)
        unaligned = genprob.crosscheck(
            _UnalignedMixture(num_components=2), X, y, params=swapped, seed=3, starts=1
        )
    assert aligned.passed, str(aligned)
    assert aligned.row("loc").rel_diff < 1e-6
    assert not unaligned.passed
    assert unaligned.row("loc").rel_diff > 0.1
