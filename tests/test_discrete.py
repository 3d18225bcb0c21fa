"""Discrete families: Bernoulli, categorical, multinomial and Poisson stories and estimators."""

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
import pytest
import scipy.sparse
import sklearn.naive_bayes as sknb
from jax.experimental import sparse as jsparse
from numpyro.distributions.transforms import biject_to
from scipy.special import gammaln
from sklearn.feature_extraction.text import CountVectorizer
from sklearn.model_selection import train_test_split

import genprob
from genprob import core
from genprob.datasets import load_digits, load_sms_spam
from genprob.engine._dtype import precision
from genprob.engine.masking import marginalized
from genprob.families.bernoulli import BernoulliStory
from genprob.families.categorical import (
    CategoricalStory,
    PaddedDirichlet,
    PaddedSimplex,
    full_joint_num_parameters,
    naive_num_parameters,
)
from genprob.families.multinomial import MultinomialStory
from genprob.families.poisson import PoissonStory
from genprob.story import Story

PROBA_ATOL = 1e-8  # the parity tolerance on class posteriors (float64)


@pytest.fixture(scope="module")
def digits():
    return load_digits()


@pytest.fixture(scope="module")
def sms_counts():
    texts, labels = load_sms_spam()
    return CountVectorizer().fit_transform(texts), labels


def _assert_same_attributes(ours, theirs, names):
    for name in names:
        np.testing.assert_allclose(
            getattr(ours, name), getattr(theirs, name), rtol=1e-12, atol=1e-12, err_msg=name
        )


# -- parity with scikit-learn ----------------------------------------------------------------------
def test_multinomial_nb_matches_sklearn_on_digits(digits):
    X, y = digits
    ours, theirs = genprob.MultinomialNB().fit(X, y), sknb.MultinomialNB().fit(X, y)
    np.testing.assert_allclose(ours.predict_proba(X), theirs.predict_proba(X), atol=PROBA_ATOL)
    _assert_same_attributes(
        ours, theirs, ["class_count_", "class_log_prior_", "feature_count_", "feature_log_prob_"]
    )
    np.testing.assert_array_equal(ours.predict(X), theirs.predict(X))


@pytest.mark.parametrize("binarize", [0.0, 7.5])
def test_bernoulli_nb_with_binarize_matches_sklearn_on_digits(digits, binarize):
    X, y = digits
    ours = genprob.BernoulliNB(binarize=binarize).fit(X, y)
    theirs = sknb.BernoulliNB(binarize=binarize).fit(X, y)
    np.testing.assert_allclose(ours.predict_proba(X), theirs.predict_proba(X), atol=PROBA_ATOL)
    # joint log-probabilities too: the Bernoulli density has no class-free constant to drop
    np.testing.assert_allclose(
        ours.predict_joint_log_proba(X), theirs.predict_joint_log_proba(X), rtol=1e-10
    )
    _assert_same_attributes(
        ours, theirs, ["class_count_", "class_log_prior_", "feature_count_", "feature_log_prob_"]
    )


def test_categorical_nb_matches_sklearn_on_digit_pixels(digits):
    X, y = digits  # pixel intensities 0..16 as categories; some pixels are always 0 (k_j = 1)
    ours, theirs = genprob.CategoricalNB().fit(X, y), sknb.CategoricalNB().fit(X, y)
    np.testing.assert_allclose(ours.predict_proba(X), theirs.predict_proba(X), atol=PROBA_ATOL)
    np.testing.assert_allclose(
        ours.predict_joint_log_proba(X), theirs.predict_joint_log_proba(X), rtol=1e-10
    )
    np.testing.assert_array_equal(ours.n_categories_, theirs.n_categories_)
    assert ours.n_categories_.dtype == np.int64
    _assert_same_attributes(ours, theirs, ["class_count_", "class_log_prior_"])
    for j in range(X.shape[1]):
        np.testing.assert_allclose(ours.category_count_[j], theirs.category_count_[j], rtol=1e-12)
        np.testing.assert_allclose(
            ours.feature_log_prob_[j], theirs.feature_log_prob_[j], rtol=1e-12
        )
    assert ours.params_["probs"].shape == (10, 64, 17)


@pytest.mark.parametrize("name", ["MultinomialNB", "BernoulliNB"])
def test_sparse_sms_counts_match_sklearn(sms_counts, name):
    X, labels = sms_counts
    assert scipy.sparse.issparse(X)
    ours = getattr(genprob, name)().fit(X, labels)
    theirs = getattr(sknb, name)().fit(X, labels)
    np.testing.assert_allclose(ours.predict_proba(X), theirs.predict_proba(X), atol=PROBA_ATOL)
    _assert_same_attributes(
        ours, theirs, ["class_count_", "class_log_prior_", "feature_count_", "feature_log_prob_"]
    )
    # the sparse path hands JAX a BCOO matrix: the bag of words is never densified
    with jax.enable_x64(True):
        assert isinstance(ours._as_array(X), jsparse.BCOO)
    # and it scores exactly like the dense path
    dense = X[:200].toarray()
    np.testing.assert_allclose(
        ours.predict_joint_log_proba(X[:200]), ours.predict_joint_log_proba(dense), rtol=1e-12
    )


def test_multinomial_joint_log_proba_keeps_the_multinomial_coefficient(sms_counts):
    X, labels = sms_counts
    X = X[:300]
    ours = genprob.MultinomialNB().fit(X, labels[:300])
    theirs = sknb.MultinomialNB().fit(X, labels[:300])
    dense = X.toarray()
    coefficient = gammaln(dense.sum(axis=1) + 1) - gammaln(dense + 1).sum(axis=1)
    difference = ours.predict_joint_log_proba(X) - theirs.predict_joint_log_proba(X)
    np.testing.assert_allclose(difference, np.repeat(coefficient[:, None], 2, axis=1), atol=1e-9)


def test_spam_filter_on_sms_holdout_accuracy():
    texts, labels = load_sms_spam()
    train_texts, test_texts, y_train, y_test = train_test_split(
        texts, labels, test_size=0.3, stratify=labels, random_state=0
    )
    vectorizer = CountVectorizer()
    X_train = vectorizer.fit_transform(train_texts)
    X_test = vectorizer.transform(test_texts)
    model = genprob.MultinomialNB().fit(X_train, y_train)
    accuracy = model.score(X_test, y_test)
    assert accuracy >= 0.97, accuracy
    assert accuracy == pytest.approx(
        sknb.MultinomialNB().fit(X_train, y_train).score(X_test, y_test)
    )


# -- hand-computed checks --------------------------------------------------------------------------
def test_laplace_smoothing_on_a_small_binary_table():
    # class 0 (3 rows): [1,0], [1,1], [0,0] -> feature counts (2, 1), N_0 = 3
    # class 1 (2 rows): [0,1], [0,1]        -> feature counts (0, 2), N_1 = 2
    X = np.array([[1, 0], [1, 1], [0, 0], [0, 1], [0, 1]], dtype=float)
    y = np.array([0, 0, 0, 1, 1])
    model = genprob.BernoulliNB(alpha=1.0, binarize=None).fit(X, y)
    # Laplace: (count + 1) / (N_k + 2)
    #   class 0: (2+1)/(3+2) = 3/5, (1+1)/(3+2) = 2/5
    #   class 1: (0+1)/(2+2) = 1/4, (2+1)/(2+2) = 3/4
    np.testing.assert_allclose(model.params_["probs"], [[0.6, 0.4], [0.25, 0.75]], rtol=1e-14)
    np.testing.assert_allclose(model.params_["class_prior"], [0.6, 0.4], rtol=1e-14)
    # x = [1, 1]: p(x, 0) = 0.6 * 0.6 * 0.4 = 0.144, p(x, 1) = 0.4 * 0.25 * 0.75 = 0.075
    # p(0 | x) = 0.144 / 0.219 = 48/73
    np.testing.assert_allclose(model.predict_proba([[1.0, 1.0]]), [[48 / 73, 25 / 73]], rtol=1e-13)
    # alpha = 0 is the MLE: 2/3, 1/3 and 0/2, 2/2
    mle = genprob.BernoulliNB(alpha=0.0, binarize=None).fit(X, y)
    np.testing.assert_allclose(mle.params_["probs"], [[2 / 3, 1 / 3], [0.0, 1.0]], atol=1e-15)


def test_laplace_smoothing_on_small_count_and_category_tables():
    # multinomial: class 0 rows [2,1,0], [1,0,0] -> counts (3,1,0), total 4
    #   (3+1, 1+1, 0+1) / (4+3) = (4/7, 2/7, 1/7); class 1 row [0,1,3] -> (1/7, 2/7, 4/7)
    counts = np.array([[2, 1, 0], [1, 0, 0], [0, 1, 3]], dtype=float)
    model = genprob.MultinomialNB().fit(counts, [0, 0, 1])
    np.testing.assert_allclose(
        model.params_["probs"], np.array([[4, 2, 1], [1, 2, 4]]) / 7, rtol=1e-14
    )
    # categorical: feature 0 has 3 categories, feature 1 has 2 (padded to 3)
    #   class 0 codes f0 = (0, 0, 2) -> counts (2, 0, 1): (3, 1, 2) / 6
    #           codes f1 = (1, 0, 1) -> counts (1, 2):    (2, 3) / 5
    #   class 1 codes f0 = (1, 1)    -> counts (0, 2, 0): (1, 3, 1) / 5
    #           codes f1 = (0, 0)    -> counts (2, 0):    (3, 1) / 4
    codes = np.array([[0, 1], [0, 0], [2, 1], [1, 0], [1, 0]], dtype=float)
    model = genprob.CategoricalNB().fit(codes, [0, 0, 0, 1, 1])
    expected = np.array(
        [
            [[1 / 2, 1 / 6, 1 / 3], [2 / 5, 3 / 5, 0.0]],
            [[1 / 5, 3 / 5, 1 / 5], [3 / 4, 1 / 4, 0.0]],
        ]
    )
    np.testing.assert_allclose(model.params_["probs"], expected, rtol=1e-14, atol=0)
    np.testing.assert_array_equal(model.n_categories_, [3, 2])


def test_bernoulli_boundary_is_the_log_odds_of_joint_log_prob(digits):
    X, y = digits
    Xb = (X > 4).astype(float)
    story = BernoulliStory(alpha=1.0)
    with jax.enable_x64(True):
        Xj = jnp.asarray(Xb)
        params = core.fit_closed_form(story, Xj, core.one_hot_responsibilities(y, 10))
        joint = np.asarray(core.joint_log_prob(story, params, Xj))
        w, b = story.linear_boundary(params, 3, 8)
        # by hand from the parameters: w_j = logit p_3j - logit p_8j, b = log odds of x = 0
        p, prior = np.asarray(params["probs"]), np.asarray(params["class_prior"])
        logit = np.log(p) - np.log1p(-p)
        np.testing.assert_allclose(w, logit[3] - logit[8], rtol=1e-12)
        b_hand = np.log(prior[3] / prior[8]) + np.sum(np.log1p(-p[3]) - np.log1p(-p[8]))
        np.testing.assert_allclose(b, b_hand, rtol=1e-12)
    np.testing.assert_allclose(Xb @ np.asarray(w) + float(b), joint[:, 3] - joint[:, 8], atol=1e-9)


def test_multinomial_and_categorical_boundaries_are_log_odds(digits):
    X, y = digits
    with jax.enable_x64(True):
        Xj = jnp.asarray(X)
        R = core.one_hot_responsibilities(y, 10)
        story = MultinomialStory(alpha=1.0)
        params = core.fit_closed_form(story, Xj, R)
        joint = np.asarray(core.joint_log_prob(story, params, Xj))
        w, b = story.linear_boundary(params, 0, 1)
        np.testing.assert_allclose(
            X @ np.asarray(w) + float(b), joint[:, 0] - joint[:, 1], atol=1e-9
        )

        story = CategoricalStory(n_categories=tuple(X.max(axis=0).astype(int) + 1), alpha=1.0)
        params = core.fit_closed_form(story, Xj, R)
        joint = np.asarray(core.joint_log_prob(story, params, Xj))
        w, b = story.linear_boundary(params, 2, 7)
        one_hot = np.asarray(story.one_hot(Xj))
        assert one_hot.shape == (X.shape[0], 64 * 17)
        np.testing.assert_array_equal(one_hot.sum(axis=1), 64)  # one active cell per feature
        np.testing.assert_allclose(
            one_hot @ np.asarray(w) + float(b), joint[:, 2] - joint[:, 7], atol=1e-9
        )


def test_parameter_counts():
    # two classes, d binary features: full joint 2 (2^d - 1) + 1 against naive 2 d + 1
    for d in (1, 3, 10, 30):
        assert full_joint_num_parameters(2, d, 2) == 2 * (2**d - 1) + 1
        assert naive_num_parameters(2, d, 2) == 2 * d + 1
    assert full_joint_num_parameters(2, 30, 2) == 2_147_483_647  # exact integers
    # C = 3 classes, d = 4 features, k = 5 values: 3 (5^4 - 1) + 2 = 1874; 3 * 4 * 4 + 2 = 50
    assert full_joint_num_parameters(3, 4, 5) == 1874
    assert naive_num_parameters(3, 4, 5) == 50
    # features with different numbers of categories: k = (2, 3, 4), C = 2
    assert full_joint_num_parameters(2, 3, (2, 3, 4)) == 2 * (24 - 1) + 1
    assert naive_num_parameters(2, 3, (2, 3, 4)) == 2 * (1 + 2 + 3) + 1
    # each story's count, against the generic count of its prior's unconstrained dimensions
    cases = [
        (BernoulliStory(), 3, 5, 2 + 3 * 5),
        (MultinomialStory(), 3, 5, 2 + 3 * 4),
        (PoissonStory(), 3, 5, 2 + 3 * 5),
        (PoissonStory(alpha=0.0, beta=0.0), 3, 5, 2 + 3 * 5),
        (CategoricalStory(n_categories=(2, 3, 4)), 2, 3, 1 + 2 * 6),
        (CategoricalStory(n_categories=(1, 5)), 4, 2, 3 + 4 * 4),
    ]
    for story, K, D, expected in cases:
        assert story.num_parameters(K, D) == expected, story
    # the generic count (unconstrained dimensions of the prior's sites) agrees, padding included
    for story, K, D, expected in cases[-1:]:
        assert Story.num_parameters(story, K, D) == expected, story
    model = genprob.CategoricalNB().fit([[0, 1], [2, 0], [1, 1]], [0, 1, 1])
    assert model.num_parameters() == 1 + 2 * (2 + 1)


# -- the closed forms are the penalized maximum ----------------------------------------------------
def _penalized_gradient(story, params, X, y, num_classes, penalized=True):
    """Largest gradient of (log-likelihood + log_penalty) / n w.r.t. unconstrained parameters."""
    # substitute the fitted values: the trace then needs no sampling, only the sites' supports
    with numpyro.handlers.trace() as trace, numpyro.handlers.substitute(data=params):
        story.prior(num_classes, X.shape[1])
    transforms = {"class_prior": biject_to(dist.constraints.simplex)}
    for name in params:
        if name != "class_prior":
            transforms[name] = biject_to(trace[name]["fn"].support)
    unconstrained = {name: transforms[name].inv(params[name]) for name in params}
    stats = core.sufficient_statistics(story, X, core.one_hot_responsibilities(y, num_classes))

    def objective(free):
        constrained = {name: transforms[name](value) for name, value in free.items()}
        penalty = story.log_penalty(constrained, stats["emission"]) if penalized else 0.0
        return core.log_likelihood(story, constrained, X, y) + penalty

    gradient = jax.jit(jax.grad(objective))(unconstrained)
    return max(float(jnp.max(jnp.abs(g))) for g in jax.tree_util.tree_leaves(gradient)) / len(y)


def _small_count_data(seed=0, n=120, D=4, K=3, high=6):
    rng = np.random.default_rng(seed)
    return rng.integers(0, high, size=(n, D)).astype(float), rng.integers(0, K, size=n)


@pytest.mark.parametrize(
    "story, kind",
    [
        (BernoulliStory(alpha=(0.5, 1.0, 2.0, 3.0)), "binary"),
        (MultinomialStory(alpha=1.0), "counts"),
        (CategoricalStory(n_categories=(2, 6, 4, 6), alpha=0.3), "codes"),
        (PoissonStory(alpha=2.0, beta=0.5), "counts"),
    ],
    ids=lambda v: v if isinstance(v, str) else type(v).__name__,
)
def test_gradient_of_penalized_likelihood_vanishes_at_closed_form(story, kind):
    X, y = _small_count_data()
    if kind == "binary":
        X = (X > 2).astype(float)
    elif kind == "codes":
        X = np.minimum(X, np.array([1, 5, 3, 5]))
    with jax.enable_x64(True):
        Xj = jnp.asarray(X)
        params = core.fit_closed_form(story, Xj, core.one_hot_responsibilities(y, 3))
        yj = jnp.asarray(y)
        assert _penalized_gradient(story, params, Xj, yj, 3) < 1e-10
        # the penalty is what makes it vanish: the plain log-likelihood is not at its maximum
        assert _penalized_gradient(story, params, Xj, yj, 3, penalized=False) > 1e-3


# -- the padded Dirichlet prior --------------------------------------------------------------------
def test_padded_dirichlet_is_a_product_of_dirichlets_with_an_exact_bijection():
    n_categories = (2, 4, 1, 4, 3)
    with jax.enable_x64(True):
        concentration = jnp.asarray(
            np.random.default_rng(1).uniform(0.5, 3.0, size=(len(n_categories), 4))
        )
        prior = PaddedDirichlet(concentration, n_categories)
        transform = biject_to(prior.support)
        stick = biject_to(dist.constraints.simplex)

        @jax.jit
        def check(key):
            table = prior.sample(key)
            free = transform.inv(table)
            expected = sum(
                dist.Dirichlet(concentration[j, :k]).log_prob(table[j, :k])
                for j, k in enumerate(n_categories)
                if k > 1
            )
            # log|det J| against the per-feature stick-breaking Jacobians
            expected_jacobian = sum(
                stick.log_abs_det_jacobian(stick.inv(table[j, :k]), table[j, :k])
                for j, k in enumerate(n_categories)
                if k > 1
            )
            return (
                table,
                PaddedSimplex(n_categories)(table),
                prior.log_prob(table),
                expected,
                free,
                transform(free),
                transform.log_abs_det_jacobian(free, table),
                expected_jacobian,
            )

        table, valid, log_prob, expected, free, roundtrip, jacobian, expected_jacobian = check(
            jax.random.PRNGKey(0)
        )
        assert bool(valid)
        np.testing.assert_allclose(log_prob, expected, rtol=1e-12)
        assert free.shape == (sum(k - 1 for k in n_categories),)
        np.testing.assert_allclose(roundtrip, table, atol=1e-12)
        np.testing.assert_allclose(jacobian, expected_jacobian, rtol=1e-12)
        # the NumPyro model's log density = log-likelihood + log priors (padded Dirichlet included)
        story = CategoricalStory(n_categories=(3, 2), alpha=1.0)
        X = jnp.asarray([[0.0, 1.0], [2.0, 0.0], [1.0, 1.0]])
        y = jnp.asarray([0, 1, 1])
        params = core.fit_closed_form(story, X, core.one_hot_responsibilities(y, 2))

        @jax.jit
        def densities(params):
            model_density, _ = numpyro.infer.util.log_density(
                core.model, (story, X, y), {"num_classes": 2}, params
            )
            concentration = 2.0 * jnp.asarray([[[1, 1, 1], [1, 1, 0]]] * 2, dtype=float)
            log_prior = PaddedDirichlet(concentration, (3, 2)).to_event(1).log_prob(
                params["probs"]
            ) + dist.Dirichlet(jnp.ones(2)).log_prob(params["class_prior"])
            return model_density, core.log_likelihood(story, params, X, y) + log_prior

        model_density, expected = densities(params)
        np.testing.assert_allclose(model_density, expected, rtol=1e-12)


# -- sampling and refitting ------------------------------------------------------------------------
def test_sampling_and_refit_recovers_poisson_rates_and_categorical_tables():
    num_samples = 20_000
    sample = jax.jit(core.sample, static_argnums=(0, 2))
    with jax.enable_x64(True):
        class_prior = jnp.asarray([0.4, 0.6])
        rates = jnp.asarray([[0.5, 3.0, 10.0], [2.0, 1.0, 0.2]])
        story = PoissonStory(alpha=0.0, beta=0.0)
        params = {"rates": rates, "class_prior": class_prior}
        X, y = sample(story, params, num_samples, jax.random.PRNGKey(0))
        assert np.all(np.asarray(X) == np.round(np.asarray(X)))
        fitted = core.fit_closed_form(story, X, core.one_hot_responsibilities(y, 2))
        counts = np.bincount(np.asarray(y), minlength=2)[:, None]
        standard_error = np.sqrt(np.asarray(rates) / counts)
        assert np.all(np.abs(np.asarray(fitted["rates"]) - np.asarray(rates)) < 4 * standard_error)

        probs = jnp.asarray(
            [
                [[0.2, 0.5, 0.3], [0.9, 0.1, 0.0]],
                [[0.6, 0.1, 0.3], [0.35, 0.65, 0.0]],
            ]
        )
        story = CategoricalStory(n_categories=(3, 2), alpha=0.0)
        params = {"probs": probs, "class_prior": class_prior}
        X, y = sample(story, params, num_samples, jax.random.PRNGKey(1))
        story.validate(X)  # codes stay within each feature's categories
        fitted = core.fit_closed_form(story, X, core.one_hot_responsibilities(y, 2))
        counts = np.bincount(np.asarray(y), minlength=2)[:, None, None]
        p = np.asarray(probs)
        standard_error = np.sqrt(p * (1 - p) / counts)
        assert np.all(np.abs(np.asarray(fitted["probs"]) - p) <= 4 * standard_error + 1e-15)
        assert np.all(np.asarray(fitted["probs"])[:, 1, 2] == 0.0)  # padding stays empty

        probs = jnp.asarray([[0.1, 0.5, 0.95], [0.7, 0.5, 0.02]])
        story = BernoulliStory(alpha=0.0)
        params = {"probs": probs, "class_prior": class_prior}
        X, y = sample(story, params, num_samples, jax.random.PRNGKey(2))
        assert set(np.unique(np.asarray(X))) == {0.0, 1.0}
        fitted = core.fit_closed_form(story, X, core.one_hot_responsibilities(y, 2))
        counts = np.bincount(np.asarray(y), minlength=2)[:, None]
        p = np.asarray(probs)
        assert np.all(np.abs(np.asarray(fitted["probs"]) - p) < 4 * np.sqrt(p * (1 - p) / counts))


def test_estimators_sample_from_the_fitted_story(digits):
    X, y = digits
    model = genprob.MultinomialNB().fit(X, y)
    Xs, ys = model.sample(50, random_state=0)
    assert Xs.shape == (50, 64) and set(ys) <= set(model.classes_)
    # documents get the mean training length
    np.testing.assert_array_equal(Xs.sum(axis=1), round(X.sum(axis=1).mean()))


def test_poisson_nb_fits_rates_and_predicts():
    rng = np.random.default_rng(0)
    rates = np.array([[1.0, 5.0], [4.0, 1.0]])
    y = rng.integers(0, 2, 400)
    X = rng.poisson(rates[y]).astype(float)
    model = genprob.PoissonNB(alpha=1.0, beta=1.0).fit(X, y)
    totals = np.array([X[y == k].sum(axis=0) for k in (0, 1)])
    counts = np.bincount(y)[:, None]
    np.testing.assert_allclose(model.rates_, (totals + 1.0) / (counts + 1.0), rtol=1e-12)
    np.testing.assert_allclose(model.feature_count_, totals, rtol=1e-12)
    # posteriors from the hand-written Poisson density
    log_joint = np.log(model.params_["class_prior"]) + np.sum(
        X[:, None, :] * np.log(model.rates_) - model.rates_ - gammaln(X[:, None, :] + 1), axis=-1
    )
    np.testing.assert_allclose(model.predict_joint_log_proba(X), log_joint, rtol=1e-12)
    assert model.score(X, y) > 0.85
    assert model.num_parameters() == 1 + 4


def test_float32_and_fixed_class_prior(digits):
    X, y = digits
    model = genprob.MultinomialNB(dtype="float32", fit_prior=False).fit(X, y)
    assert model.predict_proba(X).dtype == np.float32
    np.testing.assert_allclose(model.class_log_prior_, np.full(10, -np.log(10)), rtol=1e-6)
    reference = sknb.MultinomialNB(fit_prior=False).fit(X, y).predict_proba(X)
    np.testing.assert_allclose(model.predict_proba(X), reference, atol=1e-4)
    prior = np.full(10, 0.1)
    prior[0], prior[1] = 0.05, 0.15
    ours = genprob.BernoulliNB(class_prior=prior).fit(X, y)
    theirs = sknb.BernoulliNB(class_prior=prior).fit(X, y)
    np.testing.assert_allclose(ours.predict_proba(X), theirs.predict_proba(X), atol=PROBA_ATOL)


def test_alpha_options_match_sklearn(digits):
    X, y = digits
    alpha = np.linspace(0.1, 2.0, 64)
    ours = genprob.MultinomialNB(alpha=alpha).fit(X, y)
    theirs = sknb.MultinomialNB(alpha=alpha).fit(X, y)
    np.testing.assert_allclose(ours.predict_proba(X), theirs.predict_proba(X), atol=PROBA_ATOL)
    # scikit-learn 1.9.1's BernoulliNB cannot broadcast a per-feature alpha against its class
    # counts; the per-feature rule (c_kj + alpha_j) / (N_k + 2 alpha_j) is checked by hand.
    ours = genprob.BernoulliNB(alpha=alpha).fit(X, y)
    Xb = (X > 0).astype(float)
    counts = np.array([Xb[y == k].sum(axis=0) for k in range(10)])
    N = np.bincount(y)[:, None]
    np.testing.assert_allclose(
        ours.params_["probs"], (counts + alpha) / (N + 2 * alpha), rtol=1e-13
    )
    with pytest.warns(UserWarning, match="alpha"):
        ours = genprob.MultinomialNB(alpha=0.0, force_alpha=False).fit(X, y)
    with pytest.warns(UserWarning):
        theirs = sknb.MultinomialNB(alpha=0.0, force_alpha=False).fit(X, y)
    np.testing.assert_allclose(ours.feature_log_prob_, theirs.feature_log_prob_, rtol=1e-12)


# -- bad input -------------------------------------------------------------------------------------
def test_negative_counts_are_rejected():
    X = np.array([[1.0, 2.0], [0.0, -1.0], [3.0, 0.0]])
    y = [0, 1, 1]
    with pytest.raises(ValueError, match=r"non-negative counts.*-1.0 at row 1, column 1"):
        genprob.MultinomialNB().fit(X, y)
    with pytest.raises(ValueError, match=r"non-negative counts.*row 1, column 1"):
        genprob.MultinomialNB().fit(scipy.sparse.csr_matrix(X), y)
    with pytest.raises(ValueError, match=r"non-negative integer counts.*row 1, column 1"):
        genprob.PoissonNB().fit(X, y)
    with pytest.raises(ValueError, match=r"non-negative integer counts.*2.5 at row 0"):
        genprob.PoissonNB().fit([[2.5, 1.0], [1.0, 1.0]], [0, 1])
    fitted = genprob.MultinomialNB().fit(np.abs(X), y)
    with pytest.raises(ValueError, match="non-negative counts"):
        fitted.predict(X)


def test_bernoulli_without_binarize_needs_binary_values():
    X = np.array([[0.0, 1.0], [2.0, 0.0]])
    with pytest.raises(ValueError, match=r"binary features \(0 or 1\).*2.0 at row 1, column 0"):
        genprob.BernoulliNB(binarize=None).fit(X, [0, 1])
    with pytest.raises(ValueError, match="binary features"):
        genprob.BernoulliNB(binarize=None).fit(scipy.sparse.csr_matrix(X), [0, 1])
    model = genprob.BernoulliNB(binarize=None).fit([[0.0, 1.0], [1.0, 0.0]], [0, 1])
    with pytest.raises(ValueError, match="binary features"):
        model.predict_proba(X)
    with pytest.raises(ValueError, match="binary features"):
        BernoulliStory().validate(jnp.asarray(X))
    with pytest.raises(ValueError, match="binarize"):
        genprob.BernoulliNB(binarize=-1.0).fit(X, [0, 1])


def test_categorical_codes_must_be_nonnegative_integers_and_seen():
    y = [0, 1, 1]
    with pytest.raises(ValueError, match=r"integer category codes.*1.5 at row 1, column 0"):
        genprob.CategoricalNB().fit([[0.0, 1.0], [1.5, 0.0], [1.0, 1.0]], y)
    with pytest.raises(ValueError, match=r"integer category codes.*-1.0 at row 2, column 1"):
        genprob.CategoricalNB().fit([[0.0, 1.0], [1.0, 0.0], [1.0, -1.0]], y)
    model = genprob.CategoricalNB().fit([[0, 1], [2, 0], [1, 1]], y)
    with pytest.raises(
        ValueError, match=r"feature 0 \(row 1\) has category code 3.*min_categories"
    ):
        model.predict([[0, 1], [3, 0]])
    with pytest.raises(ValueError, match="integer category codes"):
        model.predict([[0.5, 1.0]])


# -- every path on a categorical story refuses codes it does not know (at predict) ---------------
CATEGORICAL_X = np.array(
    [[0, 1, 2], [1, 0, 1], [2, 1, 0], [0, 1, 1], [1, 1, 2], [2, 0, 0]] * 4, dtype=float
)
CATEGORICAL_Y = np.array([0, 1, 1, 0, 1, 0] * 4)
#: (code, fragments of the message): a code is an integer 0..k-1 of its feature
BAD_CODES = [
    (7, ["category code 7", "codes 0..2 only", "n_categories[2] = 3", "min_categories"]),
    (1e200, ["category code 1e+200", "codes 0..2 only", "n_categories[2] = 3"]),
    (-1, ["category code -1", "n_categories[2] = 3", "non-negative integer category codes"]),
    (2.5, ["category code 2.5", "n_categories[2] = 3", "non-negative integer category codes"]),
]


def _with_code(code):
    X = CATEGORICAL_X[:4].copy()
    X[3, 2] = code
    return X


def _categorical_estimators():
    story = CategoricalStory(n_categories=(3, 2, 3))
    return {
        "CategoricalNB": genprob.CategoricalNB().fit(CATEGORICAL_X, CATEGORICAL_Y),
        "GenerativeClassifier": genprob.GenerativeClassifier(story).fit(
            CATEGORICAL_X, CATEGORICAL_Y
        ),
    }


@pytest.mark.parametrize(("code", "fragments"), BAD_CODES)
def test_every_estimator_on_a_categorical_story_refuses_unknown_codes(code, fragments):
    for name, model in _categorical_estimators().items():
        for method in ("predict", "predict_proba", "predict_log_proba", "log_likelihood"):
            with pytest.raises(ValueError) as info:
                getattr(model, method)(_with_code(code))
            message = str(info.value)
            for fragment in ["feature 2 (row 3)", *fragments]:
                assert fragment in message, (name, method, message)


@pytest.mark.parametrize(("code", "fragments"), BAD_CODES)
def test_core_refuses_unknown_codes_through_the_story(code, fragments):
    model = _categorical_estimators()["GenerativeClassifier"]
    with precision("float64"):
        params = {k: jnp.asarray(v) for k, v in model.params_.items()}
        X = _with_code(code)
        for function in (core.joint_log_prob, core.predict_proba, core.class_scores):
            for features in (X, jnp.asarray(X)):
                with pytest.raises(ValueError) as info:
                    function(model.story_, params, features)
                for fragment in ["feature 2 (row 3)", *fragments]:
                    assert fragment in str(info.value), str(info.value)
        with pytest.raises(ValueError, match=r"feature 2 \(row 3\)"):
            core.log_likelihood(model.story_, params, X)
        # inside a transform only shapes are checked (the values are not known there)
        jax.jit(lambda Z: core.joint_log_prob(model.story_, params, Z))(jnp.asarray(X))


def test_unknown_codes_are_refused_by_name_and_in_mixed_stories():
    import pandas as pd

    columns = ["colour", "size", "shape"]
    frame = pd.DataFrame(CATEGORICAL_X, columns=columns)
    story = CategoricalStory(n_categories=(3, 2, 3))
    model = genprob.GenerativeClassifier(story).fit(frame, CATEGORICAL_Y)
    with pytest.raises(
        ValueError, match=r"column 'shape': feature 2 \(row 3\) has category code 7"
    ):
        model.predict(pd.DataFrame(_with_code(7), columns=columns))
    # a categorical block of a mixed story, through the generic estimator and the core
    gaussian = np.linspace(-1.0, 1.0, len(CATEGORICAL_Y))[:, None]
    X = np.hstack([gaussian, CATEGORICAL_X])
    mixed = genprob.MixedNB(
        families={0: "gaussian", 1: "categorical", 2: "categorical", 3: "categorical"}
    ).fit(X, CATEGORICAL_Y)
    generic = genprob.GenerativeClassifier(mixed.story_).fit(X, CATEGORICAL_Y)
    params = generic.params_  # NumPy float64: the core's validation comes before any cast
    for code, fragments in BAD_CODES:
        bad = np.hstack([gaussian[:4], _with_code(code)])
        # MixedNB reads its categorical columns as values: one it never saw is refused by name
        with pytest.raises(ValueError) as info:
            mixed.predict_proba(bad)
        message = str(info.value)
        for fragment in ["categorical column 3", "values not seen in fit", "first at row 3"]:
            assert fragment in message, message
        assert "known categories (3 seen in fit): [0.0, 1.0, 2.0]" in message, message
        for score in (
            generic.predict_proba,
            lambda Z: core.predict_proba(generic.story_, params, Z),
        ):
            with pytest.raises(ValueError) as info:
                score(bad)
            message = str(info.value)
            for fragment in ["block 'categorical'", "feature 2 (row 3)", *fragments]:
                assert fragment in message, message


def test_codes_in_range_score_as_categorical_nb():
    models = _categorical_estimators()
    story = models["GenerativeClassifier"].story_
    X = np.array([[0, 1, 2], [2, 0, 0], [1, 1, 1]], dtype=float)
    expected = models["CategoricalNB"].predict_proba(X)
    np.testing.assert_allclose(
        models["GenerativeClassifier"].predict_proba(X), expected, atol=1e-12
    )
    with precision("float64"):
        params = {k: jnp.asarray(v) for k, v in models["GenerativeClassifier"].params_.items()}
        np.testing.assert_allclose(core.predict_proba(story, params, X), expected, atol=1e-12)
    # NaN read as missing passes: summed out, as CategoricalNB(missing="marginalize") does
    X_missing = np.array([[0, np.nan, 2], [np.nan, 0, 0]])
    nb = genprob.CategoricalNB(missing="marginalize").fit(CATEGORICAL_X, CATEGORICAL_Y)
    generic = genprob.GenerativeClassifier(
        CategoricalStory(n_categories=(3, 2, 3)), missing="marginalize"
    ).fit(CATEGORICAL_X, CATEGORICAL_Y)
    expected = nb.predict_proba(X_missing)
    assert np.all(np.isfinite(expected))
    np.testing.assert_allclose(generic.predict_proba(X_missing), expected, atol=1e-12)
    X_bad = np.array([[0, np.nan, 2], [np.nan, 0, 7]])
    with pytest.raises(ValueError, match=r"feature 2 \(row 1\) has category code 7"):
        generic.predict_proba(X_bad)
    marginal = marginalized(story)
    with precision("float64"):
        proba = core.predict_proba(marginal, params, X_missing)
        np.testing.assert_allclose(proba, expected, atol=1e-12)
        with pytest.raises(ValueError, match=r"feature 2 \(row 1\) has category code 7"):
            core.predict_proba(marginal, params, X_bad)


def test_min_categories_gives_unseen_codes_smoothed_mass():
    X = np.array([[0, 1], [2, 0], [1, 1], [0, 0]], dtype=float)
    y = np.array([0, 1, 1, 0])
    model = genprob.CategoricalNB(min_categories=4).fit(X, y)
    theirs = sknb.CategoricalNB(min_categories=4).fit(X, y)
    np.testing.assert_array_equal(model.n_categories_, [4, 4])
    # code 3 of feature 0 never occurs: alpha / (N_k + alpha * 4) = 1 / (2 + 4) in both classes
    np.testing.assert_allclose(np.exp(model.feature_log_prob_[0][:, 3]), [1 / 6, 1 / 6], rtol=1e-14)
    X_new = np.array([[3, 1], [3, 3]], dtype=float)
    np.testing.assert_allclose(model.predict_proba(X_new), theirs.predict_proba(X_new), atol=1e-12)
    with pytest.raises(ValueError, match="min_categories"):
        genprob.CategoricalNB(min_categories=1.5).fit(X, y)
    with pytest.raises(ValueError, match="min_categories"):
        genprob.CategoricalNB(min_categories=[2, 2, 2]).fit(X, y)


def test_hyperparameter_errors():
    X, y = np.array([[1.0, 0.0], [0.0, 1.0]]), [0, 1]
    with pytest.raises(ValueError, match="class_prior has 3 entries"):
        genprob.MultinomialNB(class_prior=[0.2, 0.3, 0.5]).fit(X, y)
    with pytest.raises(ValueError, match="alpha must be >= 0"):
        genprob.BernoulliNB(alpha=-1.0).fit(X, y)
    with pytest.raises(ValueError, match="one value per feature"):
        genprob.MultinomialNB(alpha=[1.0, 1.0, 1.0]).fit(X, y)
    with pytest.raises(ValueError, match="single number"):
        genprob.CategoricalNB(alpha=[1.0, 1.0]).fit(X, y)
    with pytest.raises(ValueError, match="alpha"):
        PoissonStory(alpha=-1.0)
    with pytest.raises(ValueError, match="n_categories"):
        CategoricalStory(n_categories=(2, 0))
    with pytest.raises(ValueError, match="3 categorical features; got 2"):
        CategoricalStory(n_categories=(2, 2, 2)).validate(jnp.zeros((1, 2)))
    with pytest.raises(ValueError, match="total_count"):
        core.sample(
            MultinomialStory(),
            {"probs": jnp.full((2, 3), 1 / 3), "class_prior": jnp.asarray([0.5, 0.5])},
            2,
            jax.random.PRNGKey(0),
        )


def test_parameters_go_to_the_device_once_per_fit_and_a_new_params_dict_is_seen():
    rng = np.random.default_rng(5)
    X = rng.poisson(2.0, size=(60, 7)).astype(float)
    y = rng.integers(0, 3, 60)
    model = genprob.MultinomialNB().fit(X, y)
    first = model._params_jax()
    assert model._params_jax() is first  # predictions reuse the device copies
    proba = model.predict_proba(X)
    # a new params_ dict (what loading or editing a model does) is moved again and used
    prior = np.array([0.98, 0.01, 0.01])
    model.params_ = {**model.params_, "class_prior": prior}
    assert model._params_jax() is not first
    np.testing.assert_allclose(np.asarray(model._params_jax()["class_prior"]), prior)
    assert model.predict_proba(X)[:, 0].mean() > proba[:, 0].mean()
    model.fit(X[:40], y[:40])  # a refit too
    assert model._params_jax()["probs"] is not first["probs"]


@pytest.mark.parametrize("sparse", [False, True])
def test_count_and_binary_checks_pass_over_x_once(monkeypatch, sparse):
    """MultinomialNB checks its counts once, in scikit-learn's words (the story's check is the
    same pass); BernoulliNB's binarized rows skip the story's binary check. A user's
    GenerativeClassifier on those stories keeps the story's check."""
    from genprob.estimators import discrete
    from genprob.families import multinomial

    rng = np.random.default_rng(0)
    dense, y = rng.poisson(1.0, size=(60, 7)).astype(float), np.arange(60) % 3
    X = scipy.sparse.csr_matrix(dense) if sparse else dense
    calls = []
    original = discrete.check_non_negative_values

    def counted(*args, **kwargs):
        calls.append(1)
        return original(*args, **kwargs)

    monkeypatch.setattr(discrete, "check_non_negative_values", counted)
    monkeypatch.setattr(multinomial, "check_non_negative_values", counted)
    reference = sknb.MultinomialNB().fit(X, y)
    ours = genprob.MultinomialNB().fit(X, y)
    assert len(calls) == 1
    np.testing.assert_allclose(ours.predict_proba(X), reference.predict_proba(X), rtol=1e-10)
    calls.clear()
    genprob.GenerativeClassifier(MultinomialStory()).fit(dense, y)
    assert len(calls) == 1  # the story's own check, the only one
    with pytest.raises(ValueError, match="Negative values in data passed to MultinomialNB"):
        genprob.MultinomialNB().fit(-X, y)

    def refuse(self, X):
        raise AssertionError("binary check ran")

    monkeypatch.setattr(BernoulliStory, "validate", refuse)
    ours = genprob.BernoulliNB().fit(X, y)
    np.testing.assert_allclose(
        ours.predict_proba(X), sknb.BernoulliNB().fit(X, y).predict_proba(X), rtol=1e-10
    )
    with pytest.raises(AssertionError, match="binary check ran"):
        genprob.GenerativeClassifier(BernoulliStory()).fit((dense != 0).astype(float), y)


def test_poisson_rows_are_checked_once_by_the_story_naming_the_column(monkeypatch):
    """PoissonNB's counts are checked by ``PoissonStory.validate`` alone, once per fit and per
    prediction (issue 56: the estimator's copy is gone), in scikit-learn's words first, and a
    fit on named columns names the column."""
    import pandas as pd

    from genprob.families.poisson import PoissonStory

    frame = pd.DataFrame({"clicks": [1.0, 2.0, 0.0, 3.0], "views": [1.0, -2.0, 0.0, 4.0]})
    expected = (
        r"^Negative values in data passed to PoissonNB \(input X\)\. column 'views': expected "
        r"non-negative integer counts for a Poisson story; found -2\.0 at row 1, column 1 "
    )
    with pytest.raises(ValueError, match=expected):
        genprob.PoissonNB().fit(frame, [0, 1, 0, 1])
    with pytest.raises(ValueError, match=r"^expected non-negative integer counts.*2\.5 at row 0"):
        genprob.PoissonNB().fit(np.array([[2.5, 1.0], [1.0, 1.0]]), [0, 1])
    calls = []
    original = PoissonStory.validate

    def counted(self, X):
        calls.append(1)
        return original(self, X)

    monkeypatch.setattr(PoissonStory, "validate", counted)
    model = genprob.PoissonNB().fit(frame.abs(), [0, 1, 0, 1])
    assert len(calls) == 1
    model.predict_proba(frame.abs())
    assert len(calls) == 2
    with pytest.raises(ValueError, match=r"column 'views': .*-2\.0 at row 1"):
        model.predict(frame)


def test_checks_before_the_story_name_the_column_too():
    """MultinomialNB's counts and CategoricalNB's codes are checked before their stories are
    made from them; a fit on named columns names the column there too."""
    import pandas as pd

    frame = pd.DataFrame({"a": [1.0, 2.0, 0.0, 3.0], "b": [1.0, -2.0, 0.0, 4.0]})
    for make in (genprob.MultinomialNB, genprob.CategoricalNB):
        name = make.__name__
        with pytest.raises(
            ValueError,
            match=rf"^Negative values in data passed to {name} \(input X\)\. column 'b': "
            r"expected non-negative .*-2\.0 at row 1, column 1 ",
        ):
            make().fit(frame, [0, 1, 0, 1])
    with pytest.raises(ValueError, match=r"^column 'a': expected non-negative integer category"):
        genprob.CategoricalNB().fit(frame.abs().assign(a=[0.5, 2.0, 0.0, 3.0]), [0, 1, 0, 1])
