"""Mixed per-feature stories and MixedNB: one family per column, naive across blocks."""

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
import pandas as pd
import pytest
import sklearn.naive_bayes as sknb
from numpyro.distributions.transforms import biject_to
from sklearn.exceptions import NotFittedError
from sklearn.preprocessing import OrdinalEncoder

import genprob
from genprob import core
from genprob.datasets import PENGUIN_FAMILIES, load_penguins
from genprob.families.bernoulli import BernoulliStory
from genprob.families.categorical import CategoricalStory
from genprob.families.gaussian import GaussianStory
from genprob.families.mixed import MixedStory
from genprob.families.multinomial import MultinomialStory
from genprob.families.poisson import PoissonStory

NUMERIC = ["bill_length_mm", "bill_depth_mm", "flipper_length_mm", "body_mass_g"]
CATEGORICAL = ["island", "sex", "year"]


@pytest.fixture(scope="module")
def penguins():
    return load_penguins(as_frame=True)


@pytest.fixture(scope="module")
def penguin_model(penguins):
    X, y = penguins
    return genprob.MixedNB(PENGUIN_FAMILIES).fit(X, y)


def test_mixed_nb_on_penguins_is_the_product_of_its_blocks(penguins, penguin_model):
    X, y = penguins
    model = penguin_model
    assert model.blocks_ == {"categorical": CATEGORICAL, "gaussian": NUMERIC}
    assert model.categories_["island"].tolist() == ["Biscoe", "Dream", "Torgersen"]
    assert sorted(model.params_) == [
        "categorical.probs",
        "class_prior",
        "gaussian.means",
        "gaussian.variances",
    ]
    # the blocks fitted separately: genprob's own estimators ...
    codes = OrdinalEncoder().fit_transform(X[CATEGORICAL].astype(object))  # sorted categories
    gaussian = genprob.GaussianNB().fit(X[NUMERIC].to_numpy(), y)
    categorical = genprob.CategoricalNB().fit(codes, y)
    np.testing.assert_allclose(model.params_["gaussian.means"], gaussian.theta_, rtol=1e-13)
    np.testing.assert_allclose(model.params_["gaussian.variances"], gaussian.var_, rtol=1e-13)
    np.testing.assert_allclose(
        model.params_["categorical.probs"], categorical.params_["probs"], rtol=1e-13
    )
    np.testing.assert_allclose(model.params_["class_prior"], gaussian.class_prior_, rtol=1e-14)
    log_prior = np.log(model.params_["class_prior"])
    joint = model.predict_joint_log_proba(X)
    np.testing.assert_allclose(
        joint,
        gaussian.predict_joint_log_proba(X[NUMERIC].to_numpy())
        + categorical.predict_joint_log_proba(codes)
        - log_prior,
        rtol=1e-12,
    )
    # ... and scikit-learn's, an independent reference for both blocks
    sk_gaussian = sknb.GaussianNB().fit(X[NUMERIC].to_numpy(), y)
    sk_categorical = sknb.CategoricalNB().fit(codes.astype(int), y)
    np.testing.assert_allclose(
        joint,
        sk_gaussian.predict_joint_log_proba(X[NUMERIC].to_numpy())
        + sk_categorical.predict_joint_log_proba(codes.astype(int))
        - log_prior,
        rtol=1e-10,
    )
    assert model.score(X, y) > 0.95
    # K - 1 + Gaussian 3 * 4 * 2 + categorical 3 * ((3 - 1) + (2 - 1) + (3 - 1))
    assert model.num_parameters() == 2 + 24 + 15


def test_mixed_nb_takes_arrays_with_column_positions(penguins, penguin_model):
    X_array, y = load_penguins()  # object array: strings and numbers
    columns = list(penguins[0].columns)
    families = {columns.index(name): family for name, family in PENGUIN_FAMILIES.items()}
    model = genprob.MixedNB(families).fit(X_array, y)
    np.testing.assert_allclose(
        model.predict_proba(X_array), penguin_model.predict_proba(penguins[0]), rtol=1e-13
    )
    assert model.blocks_["categorical"] == [0, 5, 6]
    # a DataFrame with its columns in another order is aligned by name
    shuffled = penguins[0][columns[::-1]]
    np.testing.assert_allclose(
        penguin_model.predict_proba(shuffled), penguin_model.predict_proba(penguins[0]), rtol=0
    )


def test_mixed_nb_encode_gives_the_codes_the_story_sees(penguins, penguin_model):
    X, _ = penguins
    encoded = penguin_model.encode(X)
    assert list(encoded.columns) == list(X.columns)
    codes = OrdinalEncoder().fit_transform(X[CATEGORICAL].astype(object))  # sorted categories
    np.testing.assert_array_equal(encoded[CATEGORICAL].to_numpy(), codes)
    np.testing.assert_array_equal(encoded[NUMERIC].to_numpy(), X[NUMERIC].to_numpy(float))
    unseen = X.head(3).assign(island="Atlantis")
    with pytest.raises(ValueError, match="categorical column 'island'.*Atlantis"):
        penguin_model.encode(unseen)
    with pytest.raises(NotFittedError):
        genprob.MixedNB(PENGUIN_FAMILIES).encode(X)


def test_mixed_nb_sample_decodes_categories(penguin_model):
    X, y = penguin_model.sample(200, random_state=0)
    assert isinstance(X, pd.DataFrame) and list(X.columns) == list(PENGUIN_FAMILIES)
    for column in CATEGORICAL:
        assert set(X[column]) <= set(penguin_model.categories_[column])
    assert X["body_mass_g"].dtype == np.float64
    assert set(y) <= set(penguin_model.classes_)
    # the draws are scored by the same model without complaint
    assert np.all(np.isfinite(penguin_model.predict_joint_log_proba(X)))


def _penalized_gradient(story, params, X, y, num_classes):
    with numpyro.handlers.trace() as trace, numpyro.handlers.substitute(data=params):
        story.prior(num_classes, X.shape[1])
    transforms = {"class_prior": biject_to(dist.constraints.simplex)}
    transforms.update(
        {name: biject_to(trace[name]["fn"].support) for name in params if name in trace}
    )
    assert set(transforms) == set(params)  # every flat name is a site of the prior
    free = {name: transforms[name].inv(value) for name, value in params.items()}
    stats = core.sufficient_statistics(story, X, core.one_hot_responsibilities(y, num_classes))

    def objective(free):
        constrained = {name: transforms[name](value) for name, value in free.items()}
        return core.log_likelihood(story, constrained, X, y) + story.log_penalty(
            constrained, stats["emission"]
        )

    gradient = jax.jit(jax.grad(objective))(free)
    return max(float(jnp.max(jnp.abs(g))) for g in jax.tree_util.tree_leaves(gradient)) / len(y)


def test_mixed_story_of_every_family_adds_up_and_is_a_penalized_maximum():
    rng = np.random.default_rng(0)
    n, K = 300, 3
    y = rng.integers(0, K, n)
    X = np.column_stack(
        [
            rng.normal(y, 1.0),  # gaussian
            rng.poisson(1.0 + y),  # poisson
            rng.integers(0, 2, n),  # bernoulli
            rng.integers(0, 3, n),  # categorical, 3 codes
            rng.integers(0, 5, n),  # multinomial counts: 2 columns
            rng.integers(0, 5, n),
            rng.integers(0, 2, n),  # categorical, 2 codes
        ]
    ).astype(float)
    blocks = [
        ("gaussian", GaussianStory(covariance="diag", shared=False), (0,)),
        ("poisson", PoissonStory(alpha=1.0, beta=1.0), (1,)),
        ("bernoulli", BernoulliStory(alpha=1.0), (2,)),
        ("categorical", CategoricalStory(n_categories=(3, 2), alpha=1.0), (3, 6)),
        ("multinomial", MultinomialStory(alpha=1.0, total_count=4), (4, 5)),
    ]
    story = MixedStory(blocks)
    assert story.num_parameters(K, 7) == (K - 1) + K * (2 + 1 + 1 + (2 + 1) + 1)
    with jax.enable_x64(True):
        Xj, R = jnp.asarray(X), core.one_hot_responsibilities(y, K)
        params = core.fit_closed_form(story, Xj, R)
        joint = np.asarray(core.joint_log_prob(story, params, Xj))
        log_prior = np.log(np.asarray(params["class_prior"]))
        expected = log_prior
        for name, block, columns in blocks:
            block_params = core.fit_closed_form(block, Xj[:, list(columns)], R)
            for key, value in block_params.items():
                if key != "class_prior":
                    np.testing.assert_allclose(params[f"{name}.{key}"], value, rtol=1e-13)
            block_joint = core.joint_log_prob(block, block_params, Xj[:, list(columns)])
            expected = expected + np.asarray(block_joint) - log_prior
        np.testing.assert_allclose(joint, expected, rtol=1e-12)
        # the Gaussian block is plain MLE (penalty 0); the others are smoothed MAPs
        assert _penalized_gradient(story, params, Xj, jnp.asarray(y), K) < 1e-10
        draws, labels = jax.jit(core.sample, static_argnums=(0, 2))(
            story, params, 50, jax.random.PRNGKey(0)
        )
        story.validate(draws)  # every block's draws lie in its support
        np.testing.assert_array_equal(np.asarray(draws)[:, 4:6].sum(axis=1), 4)


# -- bad input -------------------------------------------------------------------------------------
def test_families_naming_unknown_columns_or_families(penguins):
    X, y = penguins
    with pytest.raises(ValueError, match=r"not in X: \['beak'\]"):
        genprob.MixedNB({**PENGUIN_FAMILIES, "beak": "gaussian"}).fit(X, y)
    with pytest.raises(ValueError, match=r"columns \['year'\] of X have no family"):
        genprob.MixedNB({k: v for k, v in PENGUIN_FAMILIES.items() if k != "year"}).fit(X, y)
    with pytest.raises(ValueError, match=r"unknown family 'gausian' for column 'body_mass_g'"):
        genprob.MixedNB({**PENGUIN_FAMILIES, "body_mass_g": "gausian"}).fit(X, y)
    X_array = X.to_numpy()
    with pytest.raises(ValueError, match=r"array with 7 columns: use positions 0..6"):
        genprob.MixedNB(PENGUIN_FAMILIES).fit(X_array, y)
    with pytest.raises(ValueError, match="non-empty mapping"):
        genprob.MixedNB(["gaussian"]).fit(X, y)


def test_unseen_and_missing_categories_and_bad_values(penguins, penguin_model):
    X, y = penguins
    new = X.iloc[:3].copy()
    new.loc[new.index[1], "island"] = "Anvers"
    with pytest.raises(ValueError, match=r"column 'island' has values not seen in fit.*Anvers"):
        penguin_model.predict(new)
    X_missing, y_missing = load_penguins(as_frame=True, dropna=False)
    with pytest.raises(ValueError, match=r"categorical column 'sex' has 11 missing values"):
        genprob.MixedNB(PENGUIN_FAMILIES).fit(X_missing, y_missing)
    with pytest.raises(ValueError, match="NaN"):
        genprob.MixedNB({**PENGUIN_FAMILIES, "sex": "gaussian"}).fit(
            X_missing.drop(columns="sex").assign(sex=0.0), y_missing
        )
    with pytest.raises(ValueError, match=r"column 'island' \(gaussian\) must be numeric"):
        genprob.MixedNB({**PENGUIN_FAMILIES, "island": "gaussian"}).fit(X, y)
    counts = pd.DataFrame({"clicks": [1, 2, -1, 0], "size": [1.0, 2.0, 3.0, 4.0]})
    with pytest.raises(ValueError, match=r"column 'clicks': block 'poisson'.*-1.0 at row 2"):
        genprob.MixedNB({"clicks": "poisson", "size": "gaussian"}).fit(counts, [0, 1, 0, 1])
    with pytest.raises(ValueError, match=r"X lacks the columns \['sex'\]"):
        penguin_model.predict(X.drop(columns="sex"))


def test_mixed_story_checks_its_blocks():
    gaussian = GaussianStory(covariance="diag", shared=False)
    with pytest.raises(ValueError, match="belong to two blocks"):
        MixedStory([("a", gaussian, (0, 1)), ("b", BernoulliStory(), (1, 2))])
    with pytest.raises(ValueError, match="contain no dots"):
        MixedStory([("a.b", gaussian, (0,))])
    with pytest.raises(ValueError, match="cover 0..D-1"):
        MixedStory([("a", gaussian, (0, 2))])
    with pytest.raises(ValueError, match="not a genprob Story"):
        MixedStory([("a", "gaussian", (0,))])
    with pytest.raises(ValueError, match="used twice"):
        MixedStory([("a", gaussian, (0,)), ("a", BernoulliStory(), (1,))])
    story = MixedStory([("a", gaussian, (0,)), ("b", BernoulliStory(), (1,))])
    with pytest.raises(ValueError, match=r"block 'b' \(columns \[1\].*binary features"):
        story.validate(jnp.asarray([[0.3, 2.0]]))
    with pytest.raises(ValueError, match="own 2 columns; got 3"):
        story.validate(jnp.zeros((1, 3)))
