"""Decision boundaries and discriminant directions against the one scoring path."""

import itertools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from sklearn import discriminant_analysis as skda

import genprob
from genprob import core, datasets
from genprob.boundaries import linear_boundary, quadratic_boundary
from genprob.families.gaussian import GaussianStory, lda_projection, lda_transform
from genprob.story import Story


def log_odds_from_joint(est, X, k, l):  # noqa: E741
    """log p(y=k | x) - log p(y=l | x) computed through core.joint_log_prob."""
    joint = est.predict_joint_log_proba(X)
    return joint[:, k] - joint[:, l]


def probe_points(X, seed=0):
    """Training rows plus points spread well beyond the data (boundaries hold everywhere)."""
    rng = np.random.default_rng(seed)
    spread = X.std(axis=0)
    return np.vstack([X, X.mean(axis=0) + 3 * spread * rng.normal(size=(50, X.shape[1]))])


def assert_log_odds_close(ours, expected):
    scale = np.abs(expected).max() + 1.0
    assert np.max(np.abs(ours - expected)) < 1e-10 * scale


@pytest.mark.parametrize(
    "name, make",
    [
        ("iris", lambda: genprob.LinearDiscriminantAnalysis()),
        ("wine", lambda: genprob.LinearDiscriminantAnalysis(solver="lsqr", shrinkage="auto")),
        # digits: rank-deficient pooled covariance, linear on the retained subspace
        ("digits", lambda: genprob.LinearDiscriminantAnalysis()),
    ],
)
def test_linear_boundary_reproduces_lda_log_odds(name, make):
    X, y = datasets.load(name)
    est = make().fit(X, y)
    points = probe_points(X)
    pairs = list(itertools.permutations(range(len(est.classes_)), 2))
    for k, l in pairs[:12]:  # noqa: E741
        w, b = linear_boundary(est.story_, est.params_, k, l)
        assert_log_odds_close(points @ w + b, log_odds_from_joint(est, points, k, l))


@pytest.mark.parametrize(
    "name, make",
    [
        ("iris", lambda: genprob.QuadraticDiscriminantAnalysis()),
        ("wine", lambda: genprob.QuadraticDiscriminantAnalysis(reg_param=0.1)),
        ("wine", lambda: genprob.GaussianNB()),
        ("iris", lambda: genprob.LinearDiscriminantAnalysis()),  # Q = 0
    ],
)
def test_quadratic_boundary_reproduces_log_odds(name, make):
    X, y = datasets.load(name)
    est = make().fit(X, y)
    points = probe_points(X)
    for k, l in itertools.permutations(range(len(est.classes_)), 2):  # noqa: E741
        Q, L, C = quadratic_boundary(est.story_, est.params_, k, l)
        quadratic = np.einsum("nd,de,ne->n", points, Q, points) + points @ L + C
        assert_log_odds_close(quadratic, log_odds_from_joint(est, points, k, l))
        if est.story_.shared:
            assert np.all(Q == 0)


def test_lda_boundary_formula_on_a_hand_worked_example():
    # Two classes of four points in 2-D with the same within-class deviations
    #   d = (-2,-1), (2,1), (-1,1), (1,-1)      (sum 0)
    # sum dx^2 = 4+4+1+1 = 10, sum dy^2 = 4, sum dx dy = 2+2-1-1 = 2, so each class (and the
    # pooled MLE) has Sigma = [[10/4, 2/4], [2/4, 4/4]] = [[2.5, 0.5], [0.5, 1]],
    # det Sigma = 2.5 - 0.25 = 2.25 and Sigma^-1 = [[1, -0.5], [-0.5, 2.5]] / 2.25
    #                                            = [[4/9, -2/9], [-2/9, 10/9]].
    deviations = np.array([[-2, -1], [2, 1], [-1, 1], [1, -1]], dtype=float)
    m0, m1 = np.array([1.0, 1.0]), np.array([4.0, 2.0])
    X = np.vstack([m0 + deviations, m1 + deviations])
    y = np.repeat([0, 1], 4)
    # With priors (0.25, 0.75), the boundary of class 1 against class 0 is w.x + b with
    #   w = Sigma^-1 (m1 - m0) = Sigma^-1 (3, 1) = (12/9 - 2/9, -6/9 + 10/9) = (10/9, 4/9)
    #   Sigma^-1 m1 = (16/9 - 4/9, -8/9 + 20/9) = (12/9, 12/9),  m1' Sigma^-1 m1 = 48/9 + 24/9 = 8
    #   Sigma^-1 m0 = (4/9 - 2/9, -2/9 + 10/9) = (2/9, 8/9),    m0' Sigma^-1 m0 = 2/9 + 8/9 = 10/9
    #   b = log(0.75 / 0.25) - (8 - 10/9) / 2 = log 3 - 31/9
    lda = genprob.LinearDiscriminantAnalysis(solver="lsqr", priors=[0.25, 0.75]).fit(X, y)
    np.testing.assert_allclose(lda.covariance_, [[2.5, 0.5], [0.5, 1.0]], rtol=1e-14)
    w, b = linear_boundary(lda.story_, lda.params_, 1, 0)
    np.testing.assert_allclose(w, [10 / 9, 4 / 9], rtol=1e-13)
    assert b == pytest.approx(np.log(3) - 31 / 9, rel=1e-13)
    # the binary coef_/intercept_ are that same boundary, and scikit-learn agrees
    np.testing.assert_allclose(lda.coef_[0], w, rtol=1e-13)
    ref = skda.LinearDiscriminantAnalysis(solver="lsqr", priors=[0.25, 0.75]).fit(X, y)
    np.testing.assert_allclose(ref.coef_[0], w, rtol=1e-12)
    assert ref.intercept_[0] == pytest.approx(np.log(3) - 31 / 9, rel=1e-12)
    # with equal priors the boundary passes through the midpoint (2.5, 1.5):
    # 10/9 * 2.5 + 4/9 * 1.5 - 31/9 = (25 + 6 - 31) / 9 = 0
    even = genprob.LinearDiscriminantAnalysis().fit(X, y)
    w, b = linear_boundary(even.story_, even.params_, 1, 0)
    assert w @ [2.5, 1.5] + b == pytest.approx(0.0, abs=1e-13)
    np.testing.assert_allclose(even.predict_proba([[2.5, 1.5]]), [[0.5, 0.5]], rtol=1e-13)


def test_qda_boundary_formula_on_a_hand_worked_example():
    # Class 0: N((0, 0), I); class 1: N((2, 0), diag(4, 1)), equal priors. Then
    #   P0 = I, P1 = diag(1/4, 1)  ->  Q = -(P0 - P1)/2 = diag(-3/8, 0)
    #   L = P0 m0 - P1 m1 = (0, 0) - (1/2, 0) = (-1/2, 0)
    #   C = -(m0'P0 m0 - m1'P1 m1)/2 - log(|S0|/|S1|)/2 = -(0 - 1)/2 - log(1/4)/2 = 1/2 + log 2
    story = GaussianStory(shared=False)
    params = {
        "means": np.array([[0.0, 0.0], [2.0, 0.0]]),
        "covariance": np.array([np.eye(2), np.diag([4.0, 1.0])]),
        "class_prior": np.array([0.5, 0.5]),
    }
    Q, L, C = quadratic_boundary(story, params, 0, 1)
    np.testing.assert_allclose(Q, [[-3 / 8, 0], [0, 0]], atol=1e-15)
    np.testing.assert_allclose(L, [-0.5, 0.0], atol=1e-15)
    assert C == pytest.approx(0.5 + np.log(2), rel=1e-14)


def test_stories_without_a_linear_boundary_say_so():
    X, y = datasets.load_iris()
    qda = genprob.QuadraticDiscriminantAnalysis().fit(X, y)
    with pytest.raises(ValueError, match="quadratic log-odds.*quadratic_boundary"):
        linear_boundary(qda.story_, qda.params_, 0, 1)

    class Plain(Story):
        pass

    with pytest.raises(ValueError, match="Plain has no linear boundary"):
        linear_boundary(Plain(), qda.params_, 0, 1)
    with pytest.raises(ValueError, match="class index l=3"):
        quadratic_boundary(qda.story_, qda.params_, 0, 3)


def test_shared_diagonal_story_has_a_linear_boundary():
    X, y = datasets.load_wine()
    story = GaussianStory(covariance="diag", shared=True)
    with jax.enable_x64(True):
        params = core.fit_closed_form(story, jnp.asarray(X), core.one_hot_responsibilities(y, 3))
        joint = np.asarray(core.joint_log_prob(story, params, jnp.asarray(X)))
    w, b = linear_boundary(story, params, 2, 0)
    assert_log_odds_close(X @ w + b, joint[:, 2] - joint[:, 0])


def test_lda_projection_matches_transform_and_fisher_criterion():
    X, y = datasets.load_wine()
    lda = genprob.LinearDiscriminantAnalysis().fit(X, y)
    scalings, ratio = lda_projection(lda.story_, lda.params_)
    assert scalings.shape == (13, 2)
    np.testing.assert_allclose(lda_transform(lda.story_, lda.params_, X), lda.transform(X))
    np.testing.assert_allclose(ratio.sum(), 1.0)
    # the directions are whitened (unit within-class variance) and uncorrelated
    np.testing.assert_allclose(
        scalings.T @ lda.params_["covariance"] @ scalings, np.eye(2), atol=1e-12
    )
    # on the projection, between-class variance per direction is proportional to the ratio
    centered = (lda.means_ - lda.priors_ @ lda.means_) @ scalings
    between = np.einsum("k,kd->d", lda.priors_, centered**2)
    # ratios cover all min(K, D) = 3 principal axes; the centers span only K - 1 = 2
    np.testing.assert_allclose(between / between.sum(), ratio[:2], rtol=1e-10)
    assert ratio[0] > ratio[1] and ratio[2] < 1e-20
    with pytest.raises(ValueError, match="n_components must lie in"):
        lda_transform(lda.story_, lda.params_, X, n_components=3)
    qda = genprob.QuadraticDiscriminantAnalysis().fit(X, y)
    with pytest.raises(ValueError, match="shared covariance"):
        lda_projection(qda.story_, qda.params_)
