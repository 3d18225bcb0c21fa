"""Issue 60 (nothing silently wrong): array parameters copied, weights that underflow, the
unlabeled-weight choice, wide LDA."""

import numpy as np
import pytest

import genprob

RNG = np.random.default_rng(60)
X_REAL = RNG.normal(size=(60, 3)) + np.repeat([[0.0], [1.5], [3.0]], 20, axis=0)
X_COUNTS = RNG.poisson(2.0, size=(60, 3)).astype(float)
Y = np.repeat([0, 1, 2], 20)


def _array_parameter_cases():
    """(estimator, name of an array parameter, its value, X): every estimator with one."""
    prior = [0.2, 0.3, 0.5]
    per_feature = [0.5, 1.0, 2.0]
    return [
        (genprob.GaussianNB, "priors", prior, X_REAL),
        (genprob.LinearDiscriminantAnalysis, "priors", prior, X_REAL),
        (genprob.QuadraticDiscriminantAnalysis, "priors", prior, X_REAL),
        (genprob.MultinomialNB, "class_prior", prior, X_COUNTS),
        (genprob.MultinomialNB, "alpha", per_feature, X_COUNTS),
        (genprob.BernoulliNB, "class_prior", prior, X_COUNTS),
        (genprob.BernoulliNB, "alpha", per_feature, X_COUNTS),
        (genprob.CategoricalNB, "class_prior", prior, X_COUNTS),
        (genprob.CategoricalNB, "min_categories", [9, 9, 9], X_COUNTS),
        (genprob.PoissonNB, "class_prior", prior, X_COUNTS),
    ]


@pytest.mark.parametrize(
    ("cls", "name", "value", "X"),
    _array_parameter_cases(),
    ids=[f"{c.__name__}-{n}" for c, n, _, _ in _array_parameter_cases()],
)
def test_a_fit_keeps_no_reference_to_an_array_parameter(cls, name, value, X):
    """scikit-learn's test_qda_prior_copy, for every array parameter: changing the array after
    the fit changes no fitted attribute and no prediction."""
    dtype = np.int64 if name == "min_categories" else np.float64
    array = np.array(value, dtype=dtype)
    estimator = cls(**{name: array}).fit(X, Y)
    before = {k: np.array(v, copy=True) for k, v in _fitted_arrays(estimator).items()}
    proba = estimator.predict_proba(X)
    array[:] = array[::-1] * 2 if name != "min_categories" else 20
    after = _fitted_arrays(estimator)
    assert before.keys() == after.keys()
    for key, value_before in before.items():
        np.testing.assert_array_equal(after[key], value_before, err_msg=key)
    np.testing.assert_array_equal(estimator.predict_proba(X), proba)
    if name in ("priors", "class_prior") and hasattr(estimator, "priors_"):
        assert estimator.priors_[0] != getattr(estimator, name)[0]  # scikit-learn's assertion


def _fitted_arrays(estimator):
    return {k: v for k, v in vars(estimator).items() if k.endswith("_") and type(v) is np.ndarray}


@pytest.mark.parametrize(
    ("cls", "pattern"),
    [
        # scikit-learn 1.9's own test patterns (test_lda_covariance_estimator,
        # test_qda_covariance_estimator)
        (genprob.LinearDiscriminantAnalysis, "covariance estimator is not supported with svd"),
        (
            genprob.QuadraticDiscriminantAnalysis,
            "covariance_estimator is not supported with solver='svd'",
        ),
    ],
)
def test_covariance_estimator_with_svd_is_refused_in_scikit_learns_words(cls, pattern):
    from sklearn.covariance import LedoitWolf

    with pytest.raises(ValueError, match=pattern):
        cls(covariance_estimator=LedoitWolf()).fit(X_REAL, Y)


def test_qda_singular_class_covariance_raises_linalgerror_as_scikit_learn_does():
    from sklearn.discriminant_analysis import QuadraticDiscriminantAnalysis as SkQDA

    X = X_REAL.copy()
    X[Y == 1, 2] = 2.0 * X[Y == 1, 0]  # class 1: collinear features
    pattern = (
        r"The covariance matrix of class 1 is not full rank. Increase the value of `reg_param`"
    )
    for cls in (SkQDA, genprob.QuadraticDiscriminantAnalysis):
        with pytest.raises(np.linalg.LinAlgError, match=pattern):
            cls().fit(X, Y)
    # regularized, genprob fits it (a documented difference for classes with fewer rows than
    # features; here scikit-learn fits it too) and both agree
    ours = genprob.QuadraticDiscriminantAnalysis(reg_param=0.1).fit(X, Y).predict_proba(X)
    np.testing.assert_allclose(ours, SkQDA(reg_param=0.1).fit(X, Y).predict_proba(X), atol=1e-10)
