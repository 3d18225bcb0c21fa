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


# -- weights that underflow -----------------------------------------------------------------------
W = np.random.default_rng(7).uniform(0.2, 3.0, size=60)
X_BINARY = (X_REAL > 1.0).astype(float)
X_MIXED = np.column_stack([X_REAL[:, :2], X_COUNTS[:, 0]])
MIXED_FAMILIES = {0: "gaussian", 1: "gaussian", 2: "poisson"}


def _scale_free_cases():
    """Fits that depend on the weights' ratios only: their fit equals the fit at any scale."""
    return [
        (genprob.GaussianNB, {}, X_REAL),
        (genprob.LinearDiscriminantAnalysis, {}, X_REAL),
        (genprob.QuadraticDiscriminantAnalysis, {"reg_param": 0.1}, X_REAL),
    ]


def _smoothed_cases(c):
    """(cls, options at weight scale 1, the same options at weight scale c, X): pseudo-counts
    are in the units of the weights, so ``fit(c w, c alpha) = fit(w, alpha)``."""
    return [
        (genprob.MultinomialNB, {"alpha": 0.5}, {"alpha": 0.5 * c}, X_COUNTS),
        (genprob.BernoulliNB, {"alpha": 0.5}, {"alpha": 0.5 * c}, X_BINARY),
        (genprob.CategoricalNB, {"alpha": 0.5}, {"alpha": 0.5 * c}, X_COUNTS),
        (
            genprob.PoissonNB,
            {"alpha": 0.5, "beta": 2.0},
            {"alpha": 0.5 * c, "beta": 2.0 * c},
            X_COUNTS,
        ),
        (
            genprob.MixedNB,
            {"families": MIXED_FAMILIES, "alpha": 0.5, "beta": 2.0},
            {"families": MIXED_FAMILIES, "alpha": 0.5 * c, "beta": 2.0 * c},
            X_MIXED,
        ),
    ]


# powers of two: w * c is exact, so any difference is the fit's, not the input's
@pytest.mark.parametrize(
    "c", [2.0**-480, 2.0**-40, 2.0**40, 2.0**480], ids=["tiny", "small", "large", "huge"]
)
def test_fit_with_weights_times_a_constant_is_the_same_fit(c):
    def same_probabilities(cls, scaled, reference, X):
        np.testing.assert_allclose(
            scaled.predict_proba(X),
            reference.predict_proba(X),
            rtol=0,
            atol=1e-12,
            err_msg=cls.__name__,
        )

    for cls, options, X in _scale_free_cases():
        reference = cls(**options).fit(X, Y, sample_weight=W)
        scaled = cls(**options).fit(X, Y, sample_weight=W * c)
        same_probabilities(cls, scaled, reference, X)
        for name in ("theta_", "means_", "var_", "class_prior_", "priors_"):
            if hasattr(reference, name):
                np.testing.assert_allclose(
                    getattr(scaled, name), getattr(reference, name), rtol=1e-12, err_msg=name
                )
    for cls, options, scaled_options, X in _smoothed_cases(c):
        reference = cls(**options).fit(X, Y, sample_weight=W)
        scaled = cls(**scaled_options).fit(X, Y, sample_weight=W * c)
        same_probabilities(cls, scaled, reference, X)


def _every_estimator():
    return (
        [(cls, options, X) for cls, options, X in _scale_free_cases()]
        + [(cls, options, X) for cls, options, _, X in _smoothed_cases(1.0)]
        + [(genprob.MixtureDiscriminantAnalysis, {}, X_REAL)]
    )


@pytest.mark.parametrize("scale", [5e-324, 1e-300, 1e300], ids=["subnormal", "tiny", "huge"])
def test_weights_that_leave_the_normal_doubles_are_refused(scale):
    """Issue 60: weights of 5e-324 gave GaussianNB means off by 0.07 and probabilities off by
    0.35, silently; every estimator, fit and partial_fit, now refuses them and says how to
    rescale."""
    weights = np.where(np.arange(60) % 3 == 0, scale, 0.0)  # the case: the rest weigh 0
    for cls, options, X in _every_estimator():
        with pytest.raises(
            ValueError,
            match=r"sample_weight's largest value is .*divide them by their\s+largest value",
        ):
            cls(**options).fit(X, Y, sample_weight=weights)
        if hasattr(cls(**options), "partial_fit"):
            with pytest.raises(ValueError, match="sample_weight's largest value"):
                cls(**options).partial_fit(X, Y, classes=[0, 1, 2], sample_weight=weights)
    with pytest.raises(ValueError, match="sample_weight's largest value"):  # chunked input
        genprob.GaussianNB().fit(iter([(X_REAL, Y, weights)]), classes=[0, 1, 2])
    # rescaled, the weights fit the weighted means exactly (the check)
    model = genprob.GaussianNB().fit(X_REAL, Y, sample_weight=weights / weights.max())
    kept = weights > 0
    expected = [X_REAL[kept & (Y == k)].mean(axis=0) for k in range(3)]
    np.testing.assert_allclose(model.theta_, expected, rtol=1e-12)


# -- unlabeled_weight="auto" ----------------------------------------------------------------------
def _few_labels(seed=0, num_classes=4, num_features=8, num_rows=400, labels=3):
    """Gaussian classes with a shared covariance, ``labels`` rows a class labeled: a fold of the
    cross-validation keeps 2 a class, whose pooled covariance has rank 4 of 8."""
    rng = np.random.default_rng(seed)
    means = rng.normal(0.0, 1.6, size=(num_classes, num_features))
    y = np.arange(num_rows) % num_classes
    X = means[y] + rng.normal(size=(num_rows, num_features))
    partly = np.full(num_rows, -1)
    for k in range(num_classes):
        partly[np.flatnonzero(y == k)[:labels]] = k
    return X, y, partly


def test_em_goes_past_a_start_of_lower_rank():
    """The labeled rows' fit (rank 4 of 8) is a density on a subspace: its objective exceeds the
    full-rank fit's, which stopped EM at its first E-step with the labeled-only parameters."""
    import warnings

    X, y, partly = _few_labels()
    labeled = np.flatnonzero(partly >= 0)
    keep = np.ones(len(y), dtype=bool)
    keep[labeled[::3]] = False  # 2 labeled rows a class, as in a fold
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no "EM stopped at iteration 2"
        model = genprob.LinearDiscriminantAnalysis(unlabeled_weight=0.1, max_iter=300)
        model.fit(X[keep], partly[keep])
    assert model.n_iter_ > 2
    labeled_only = genprob.LinearDiscriminantAnalysis(unlabeled_weight=0).fit(X[keep], partly[keep])
    assert model.score(X, y) > labeled_only.score(X, y) + 0.3  # 0.98 against 0.52 at seed 0


def test_auto_keeps_unlabeled_rows_that_help_on_a_few_label_split():
    """Issue 60: every λ scored alike (each fold's EM stopped at its start) and the tie went
    to λ = 0; on this split λ = 0 scores 0.52 on the true labels, λ = 0.1 0.98."""
    X, y, partly = _few_labels()
    model = genprob.LinearDiscriminantAnalysis(unlabeled_weight="auto", random_state=0)
    model.fit(X, partly)
    table = model.unlabeled_weight_scores_
    assert table.attrs["compared"]
    assert model.unlabeled_weight_ > 0
    assert table["log_lik"][model.unlabeled_weight_] > table["log_lik"][0.0] + 1.0
    assert model.score(X, y) > 0.95


def test_a_table_of_equal_rows_is_reported_as_a_failed_comparison():
    """Unlabeled rows of weight 0 change no fold's fit: the table's rows are equal, which is
    no evidence for λ = 0; the fit says so and fits plain EM (λ = 1)."""
    from genprob.estimators import UnlabeledWeightTieWarning

    X, y, partly = _few_labels(labels=5)
    weights = np.where(partly >= 0, 1.0, 0.0)
    model = genprob.LinearDiscriminantAnalysis(unlabeled_weight="auto", random_state=0)
    with pytest.warns(UnlabeledWeightTieWarning, match="could not compare the weights") as found:
        model.fit(X, partly, sample_weight=weights)
    assert found[0].filename == __file__  # points at the caller's fit
    table = model.unlabeled_weight_scores_
    assert not table.attrs["compared"]
    assert table["log_lik"].nunique() == 1 and len(table) == 4
    assert model.unlabeled_weight_ == 1.0


def test_negative_codes_at_predict_are_refused_in_scikit_learns_words():
    """scikit-learn's test_categoricalnb matches this text at predict as at fit."""
    model = genprob.CategoricalNB().fit(X_COUNTS, Y)
    X = X_COUNTS[:2].copy()
    X[1, 2] = -1
    with pytest.raises(
        ValueError,
        match=r"Negative values in data passed to CategoricalNB \(input X\)\. .*feature 2 \(row 1",
    ):
        model.predict(X)


def test_partial_fit_with_other_classes_is_refused_in_scikit_learns_words():
    model = genprob.MultinomialNB().partial_fit(X_COUNTS, Y, classes=[0, 1, 2])
    # duplicates too: scikit-learn's message first, then what is wrong with the list
    with pytest.raises(
        ValueError, match=r"is not the same as on last call to partial_fit.*duplicates"
    ):
        model.partial_fit(X_COUNTS, Y, classes=[0, 1, 1])


def test_the_weight_range_follows_the_fits_precision():
    """float32 fits: weights of 1e-40 are subnormal there (probabilities were off by 3.6e-6)."""
    with pytest.raises(ValueError, match=r"largest value is 1e-40.*\(float32\)"):
        genprob.GaussianNB(dtype="float32").fit(X_REAL, Y, sample_weight=np.full(60, 1e-40))
    with pytest.raises(ValueError, match=r"largest value is 1e\+30.*\(float32\)"):
        genprob.LinearDiscriminantAnalysis(dtype="float32").partial_fit(
            X_REAL, Y, classes=[0, 1, 2], sample_weight=np.full(60, 1e30)
        )
    reference = genprob.GaussianNB(dtype="float32").fit(X_REAL, Y, sample_weight=W)
    scaled = genprob.GaussianNB(dtype="float32").fit(X_REAL, Y, sample_weight=W * 2.0**-40)
    np.testing.assert_allclose(
        scaled.predict_proba(X_REAL), reference.predict_proba(X_REAL), atol=1e-6
    )
