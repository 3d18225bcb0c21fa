"""Issue 45: information criteria, log p(x), class-prior adjustment, unlabeled_weight="auto"."""

import math
import warnings

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from scipy.special import logsumexp
from sklearn.base import clone

import genprob
from genprob.datasets import load_iris, load_wine
from genprob.estimators import UnlabeledRowsHurtWarning
from genprob.estimators import __all__ as ESTIMATOR_NAMES
from genprob.families.gaussian.story import GaussianStory

K = 3


def _iris():
    X, y = load_iris()
    return np.asarray(X, dtype=float), np.asarray(y)


def _counts(seed=0, n=90, d=5):
    rng = np.random.default_rng(seed)
    y = np.repeat(np.arange(K), n // K)
    rates = rng.uniform(0.5, 4.0, size=(K, d))
    return rng.poisson(rates[y]).astype(float), y


def _categorical(seed=0, n=120, cards=(2, 3, 5)):
    rng = np.random.default_rng(seed)
    y = np.repeat(np.arange(K), n // K)
    X = np.column_stack([rng.integers(0, c, size=n) for c in cards])
    for j, c in enumerate(cards):  # every category seen
        X[:c, j] = np.arange(c)
    return X.astype(float), y


def _mixed(seed=0, n=120):
    rng = np.random.default_rng(seed)
    y = np.repeat(np.arange(K), n // K)
    frame = pd.DataFrame(
        {
            "g1": rng.normal(y, 1.0),
            "g2": rng.normal(-y, 2.0),
            "cat": np.array(["a", "b", "c", "d"])[rng.integers(0, 4, size=n)],
            "bit": rng.integers(0, 2, size=n),
            "events": rng.poisson(1.0 + y),
        }
    )
    families = {
        "g1": "gaussian",
        "g2": "gaussian",
        "cat": "categorical",
        "bit": "bernoulli",
        "events": "poisson",
    }
    # gaussian 2 features: 2 K D; categorical 4 categories: K (4 - 1); bernoulli K; poisson K
    df = (K - 1) + 2 * K * 2 + K * 3 + K + K
    return genprob.MixedNB(families), frame, y, df


def _cases():
    """(name, estimator, X, y, df counted by hand) for every built-in story."""
    X, y = _iris()
    D = X.shape[1]
    counts, yc = _counts()
    Dc = counts.shape[1]
    cards = (2, 3, 5)
    cat, ycat = _categorical(cards=cards)
    binary = (X > np.median(X, axis=0)).astype(float)
    mixed, frame, ymixed, df_mixed = _mixed()
    return [
        ("GaussianNB", genprob.GaussianNB(), X, y, K - 1 + 2 * K * D),
        (
            "LinearDiscriminantAnalysis",
            genprob.LinearDiscriminantAnalysis(),
            X,
            y,
            K - 1 + K * D + D * (D + 1) // 2,
        ),
        (
            "QuadraticDiscriminantAnalysis",
            genprob.QuadraticDiscriminantAnalysis(),
            X,
            y,
            K - 1 + K * D + K * D * (D + 1) // 2,
        ),
        ("BernoulliNB", genprob.BernoulliNB(), binary, y, K - 1 + K * D),
        ("MultinomialNB", genprob.MultinomialNB(), counts, yc, K - 1 + K * (Dc - 1)),
        (
            "CategoricalNB",
            genprob.CategoricalNB(),
            cat,
            ycat,
            K - 1 + K * sum(c - 1 for c in cards),
        ),
        ("PoissonNB", genprob.PoissonNB(), counts, yc, K - 1 + K * Dc),
        ("MixedNB", mixed, frame, ymixed, df_mixed),
        (
            "MixtureDiscriminantAnalysis",
            genprob.MixtureDiscriminantAnalysis(structure="VVI", n_components=2, random_state=0),
            X,
            y,
            # per class: G - 1 weights, G means and G diagonal covariances of D entries
            K - 1 + K * ((2 - 1) + 2 * D + 2 * D),
        ),
        (
            "GenerativeClassifier",
            genprob.GenerativeClassifier(GaussianStory(covariance="diag", shared=True)),
            X,
            y,
            K - 1 + K * D + D,
        ),
    ]


def test_every_estimator_is_covered():
    errors = {"UnsupportedOptionError", "UnlabeledRowsHurtWarning", "UnlabeledWeightTieWarning"}
    estimators = {n for n in ESTIMATOR_NAMES if n not in errors}
    assert estimators == {case[0] for case in _cases()}


@pytest.mark.parametrize("case", _cases(), ids=lambda case: case[0])
def test_bic_aic_by_hand(case):
    _, estimator, X, y, df = case
    model = clone(estimator).fit(X, y)
    assert model.num_parameters() == df
    n = X.shape[0]
    joint = np.asarray(model.predict_joint_log_proba(X))
    mixture = float(logsumexp(joint, axis=1).sum())
    codes = np.searchsorted(model.classes_, y)
    labeled = float(joint[np.arange(n), codes].sum())
    assert model.bic(X) == pytest.approx(-2 * mixture + df * math.log(n), rel=1e-10)
    assert model.aic(X) == pytest.approx(-2 * mixture + 2 * df, rel=1e-10)
    assert model.bic(X, y) == pytest.approx(-2 * labeled + df * math.log(n), rel=1e-10)
    assert model.aic(X, y) == pytest.approx(-2 * labeled + 2 * df, rel=1e-10)
    # partly labeled: labeled rows log pi_y + log p(x | y), unlabeled rows the mixture term
    partly = y.copy()
    partly[::3] = -1
    unlabeled = np.zeros(n, dtype=bool)
    unlabeled[::3] = True
    expected = (
        joint[np.arange(n), codes][~unlabeled].sum() + logsumexp(joint, axis=1)[unlabeled].sum()
    )
    assert model.bic(X, partly) == pytest.approx(-2 * expected + df * math.log(n), rel=1e-10)
    assert model.score_samples(X) == pytest.approx(logsumexp(joint, axis=1), rel=1e-12)


def test_score_samples_marginalizes_nan_cells_qda():
    X, y = _iris()
    model = genprob.QuadraticDiscriminantAnalysis(missing="marginalize").fit(X, y)
    rows = X[[0, 60, 120]].copy()
    rows[0, 1] = np.nan
    rows[1, [0, 3]] = np.nan
    rows[2, 2] = np.nan
    prior = model.params_["class_prior"]
    means = model.params_["means"]
    covariances = np.asarray(model.params_["covariance"])
    expected = []
    for row in rows:
        seen = ~np.isnan(row)
        densities = [
            prior[k]
            * stats.multivariate_normal(means[k][seen], covariances[k][np.ix_(seen, seen)]).pdf(
                row[seen]
            )
            for k in range(K)
        ]
        expected.append(math.log(sum(densities)))
    assert model.score_samples(rows) == pytest.approx(expected, rel=1e-9)
    joint = model.predict_joint_log_proba(rows)
    assert model.score_samples(rows) == pytest.approx(logsumexp(joint, axis=1), rel=1e-12)


def test_score_samples_marginalizes_nan_cells_gaussian_nb():
    X, y = _iris()
    model = genprob.GaussianNB(missing="marginalize").fit(X, y)
    rows = np.array([[5.0, np.nan, 1.4, 0.2], [np.nan, np.nan, 4.5, np.nan]])
    means, variances = model.params_["means"], model.params_["variances"]
    prior = model.params_["class_prior"]
    expected = []
    for row in rows:
        seen = ~np.isnan(row)
        terms = [
            math.log(prior[k])
            + stats.norm(means[k][seen], np.sqrt(variances[k][seen])).logpdf(row[seen]).sum()
            for k in range(K)
        ]
        expected.append(logsumexp(terms))
    assert model.score_samples(rows) == pytest.approx(expected, rel=1e-10)


def _shifted(X, y, frequencies, size, seed):
    """Rows drawn with replacement from ``(X, y)``, classes at ``frequencies``."""
    rng = np.random.default_rng(seed)
    labels = rng.choice(len(frequencies), size=size, p=frequencies)
    index = np.array([rng.choice(np.flatnonzero(y == k)) for k in labels])
    return X[index], y[index]


@pytest.mark.parametrize(
    "make", [genprob.LinearDiscriminantAnalysis, genprob.GaussianNB], ids=["lda", "gnb"]
)
def test_adjust_class_prior_recovers_shifted_prior(make):
    X, y = load_wine()
    X, y = np.asarray(X, dtype=float), np.asarray(y)
    rng = np.random.default_rng(0)
    train = rng.permutation(len(y))
    fit_rows, pool = train[:100], train[100:]
    model = make().fit(X[fit_rows], y[fit_rows])
    before = model.params_["class_prior"].copy()
    truth = np.array([0.7, 0.2, 0.1])
    size = 600
    X_new, y_new = _shifted(X[pool], y[pool], truth, size, seed=1)
    adjusted = model.adjust_class_prior(X_new)
    # the original untouched
    assert np.array_equal(model.params_["class_prior"], before)
    assert adjusted is not model
    prior = adjusted.params_["class_prior"]
    assert prior.sum() == pytest.approx(1.0)
    realized = np.bincount(y_new, minlength=K) / size
    # within sampling error: 3 binomial standard errors of the true frequencies
    assert np.all(np.abs(prior - truth) < 3 * np.sqrt(truth * (1 - truth) / size) + 0.01)
    if make is genprob.LinearDiscriminantAnalysis:  # naive Bayes' posteriors are overconfident
        assert np.all(np.abs(prior - realized) < 0.03)
    assert adjusted.score(X_new, y_new) >= model.score(X_new, y_new)
    trace = adjusted.prior_log_likelihood_trace_
    assert np.all(np.diff(trace) >= -1e-9 * np.abs(trace[:-1]))
    assert adjusted.prior_log_likelihood_ == pytest.approx(trace[-1])
    assert adjusted.prior_log_likelihood_ == pytest.approx(adjusted.log_likelihood(X_new))
    assert adjusted.prior_converged_ and 1 <= adjusted.prior_n_iter_ < 1000
    # predictions use the new prior, and the attributes derived from it agree
    joint = adjusted.predict_joint_log_proba(X_new)
    shift = joint - model.predict_joint_log_proba(X_new)
    assert shift == pytest.approx(np.broadcast_to(np.log(prior / before), shift.shape), abs=1e-8)
    if hasattr(adjusted, "decision_function"):
        assert np.array_equal(
            adjusted.classes_[adjusted.decision_function(X_new).argmax(axis=1)],
            adjusted.predict(X_new),
        )


def test_adjust_class_prior_log_likelihood_never_decreases_from_poor_start():
    X, y = _iris()
    model = genprob.GaussianNB(priors=[0.98, 0.01, 0.01]).fit(X, y)
    adjusted = model.adjust_class_prior(X[y != 0], tol=0.0, max_iter=50)
    trace = adjusted.prior_log_likelihood_trace_
    assert len(trace) == adjusted.prior_n_iter_ + 1 and adjusted.prior_n_iter_ > 3
    assert np.all(np.diff(trace) >= -1e-9 * np.abs(trace[:-1]))
    assert trace[-1] > trace[0] + 100
    assert adjusted.params_["class_prior"][0] < 1e-3
    assert adjusted.class_prior_ is adjusted.params_["class_prior"]


def _tilted_clouds(n_labeled, n_unlabeled, seed, offset=0.6):
    """Two long parallel clouds along the diagonal, the classes a narrow distance apart across
    it: diagonal Gaussians (naive Bayes) cannot describe them, and the mixture that best
    explains the rows splits them along their length, not between the classes."""
    rng = np.random.default_rng(seed)
    n = n_labeled + n_unlabeled
    y = rng.integers(0, 2, size=n)
    along, across = rng.normal(0, 3.0, n), rng.normal(offset * (2.0 * y - 1.0), 0.3)
    X = np.column_stack([along + across, along - across]) / np.sqrt(2)
    partly = y.copy()
    partly[n_labeled:] = -1
    return X, y, partly


def test_auto_weight_warns_when_unlabeled_rows_hurt():
    X, y, partly = _tilted_clouds(100, 600, seed=0)
    model = genprob.GaussianNB(unlabeled_weight="auto")
    with pytest.warns(UnlabeledRowsHurtWarning, match="worse") as found:
        model.fit(X, partly)
    assert found[0].filename == __file__  # points at the caller's fit
    table = model.unlabeled_weight_scores_
    assert model.unlabeled_weight_ == 0.0
    assert table["log_lik"][0.0] == table["log_lik"].max()
    assert table["log_lik"][0.0] > table["log_lik"][1.0] + 0.5
    # the fit is the labeled-only one, and EM at lambda = 1 labels the rows worse
    labeled_only = genprob.GaussianNB().fit(X[:100], y[:100])
    assert model.params_["means"] == pytest.approx(labeled_only.params_["means"], rel=1e-9)
    assert model.get_params()["unlabeled_weight"] == "auto"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        em = genprob.GaussianNB(unlabeled_weight=1.0).fit(X, partly)
    assert model.score(X, y) > em.score(X, y) + 0.05
    # a later fit with a number has no chosen weight
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.set_params(unlabeled_weight=0.5).fit(X, partly)
    assert not hasattr(model, "unlabeled_weight_")
    assert not hasattr(model, "unlabeled_weight_scores_")


def test_auto_weight_when_unlabeled_rows_help():
    rng = np.random.default_rng(3)
    n = 800
    y = rng.integers(0, 2, size=n)
    X = rng.normal(np.where(y[:, None] == 1, 1.2, -1.2), 1.0, size=(n, 4))
    partly = y.copy()
    partly[12:] = -1
    model = genprob.GaussianNB(unlabeled_weight="auto")
    with warnings.catch_warnings():
        warnings.simplefilter("error", UnlabeledRowsHurtWarning)
        model.fit(X, partly)
    table = model.unlabeled_weight_scores_
    assert list(table.index) == [0.0, 0.1, 0.3, 1.0]
    # never worse than labeled-only on its own cross-validation
    assert table["log_lik"][model.unlabeled_weight_] >= table["log_lik"][0.0]
    assert model.unlabeled_weight_ > 0
    same = genprob.GaussianNB(unlabeled_weight=model.unlabeled_weight_).fit(X, partly)
    assert model.params_["means"] == pytest.approx(same.params_["means"], rel=1e-9)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_auto_weight_never_worse_than_labeled_only_on_its_cv(seed):
    X, y = _iris()
    rng = np.random.default_rng(seed)
    partly = y.copy()
    partly[rng.random(len(y)) < 0.8] = -1
    model = genprob.LinearDiscriminantAnalysis(unlabeled_weight="auto")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UnlabeledRowsHurtWarning)
        model.fit(X, partly)
    table = model.unlabeled_weight_scores_
    assert table["log_lik"][model.unlabeled_weight_] >= table["log_lik"][0.0]
    assert table["log_lik"][model.unlabeled_weight_] == table["log_lik"].max()


def test_auto_weight_survives_save_and_load(tmp_path):
    X, y = _iris()
    partly = y.copy()
    partly[np.random.default_rng(0).random(len(y)) < 0.7] = -1
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UnlabeledRowsHurtWarning)
        model = genprob.GaussianNB(unlabeled_weight="auto").fit(X, partly)
    loaded = genprob.load(model.save(tmp_path / "auto"))
    assert loaded.unlabeled_weight_ == model.unlabeled_weight_
    pd.testing.assert_frame_equal(loaded.unlabeled_weight_scores_, model.unlabeled_weight_scores_)
    np.testing.assert_allclose(loaded.predict_proba(X), model.predict_proba(X))
    adjusted = model.adjust_class_prior(X[:60])
    again = genprob.load(adjusted.save(tmp_path / "adjusted"))
    np.testing.assert_array_equal(again.params_["class_prior"], adjusted.params_["class_prior"])
    np.testing.assert_allclose(again.predict_proba(X), adjusted.predict_proba(X))


def test_auto_weight_validation_and_fully_labeled():
    X, y = _iris()
    with pytest.raises(ValueError, match="auto"):
        genprob.GaussianNB(unlabeled_weight="sometimes").fit(X, y)
    model = genprob.GaussianNB(unlabeled_weight="auto").fit(X, y)
    assert model.unlabeled_weight_scores_.empty
    plain = genprob.GaussianNB().fit(X, y)
    assert model.params_["means"] == pytest.approx(plain.params_["means"])
    partly = np.full_like(y, -1)
    partly[[0, 1, 50, 100]] = y[[0, 1, 50, 100]]
    with pytest.raises(ValueError, match="at least 2 labeled rows"):
        genprob.GaussianNB(unlabeled_weight="auto").fit(X, partly)
