"""The execution seam: host and compiled passes give the same numbers, R is dense."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from genprob.engine import execution
from genprob.engine.capabilities import capability, chunk_refusal, has_exact_posterior
from genprob.families.bernoulli import BernoulliStory
from genprob.families.gaussian import GaussianStory
from genprob.families.multinomial import MultinomialStory
from genprob.story import Story


def _data(kind, num_rows=500, num_features=4, seed=0):
    rng = np.random.default_rng(seed)
    codes = rng.integers(-1, 3, size=num_rows)  # -1: rows that add nothing
    if kind == "gaussian":
        X = rng.normal(size=(num_rows, num_features)) + codes[:, None]
    elif kind == "bernoulli":
        X = (rng.random((num_rows, num_features)) < 0.3 + 0.1 * codes[:, None]).astype(float)
    else:
        X = rng.poisson(1.0 + codes[:, None].clip(0), (num_rows, num_features)).astype(float)
    return X, codes, rng.uniform(0.5, 2.0, size=num_rows)


STORIES = {
    "gaussian": GaussianStory(),
    "qda": GaussianStory(shared=False),
    "gaussian-nb": GaussianStory(covariance="diag", shared=False),
    "bernoulli": BernoulliStory(alpha=0.5),
    "multinomial": MultinomialStory(alpha=0.5),
}


@pytest.mark.parametrize("name", list(STORIES))
def test_host_and_compiled_passes_agree(name):
    """NumPy rows of an array_api story run eagerly on the host, JAX rows compiled: the same
    statistics, parameters and posteriors."""
    story = STORIES[name]
    X, codes, weights = _data(name if name in ("bernoulli", "multinomial") else "gaussian")
    assert capability(story, "array_api")
    with jax.enable_x64(True):
        R = execution.responsibilities(codes, 3, weights)
        host = execution.statistics(story, X, R)
        assert all(isinstance(v, np.ndarray) for v in jax.tree_util.tree_leaves(host))
        compiled = execution.statistics(story, jnp.asarray(X), jnp.asarray(R))
        host_params = execution.parameters(story, host)
        compiled_params = execution.parameters(story, compiled)
        for key, value in host_params.items():
            np.testing.assert_allclose(value, compiled_params[key], rtol=1e-9, atol=1e-12)
        params = {k: np.asarray(v) for k, v in host_params.items()}
        on_host = execution.class_posteriors(story, params, X, "proba")
        on_device = execution.class_posteriors(story, params, jnp.asarray(X), "proba")
    np.testing.assert_allclose(on_host, on_device, rtol=0, atol=1e-10)
    np.testing.assert_allclose(on_host.sum(axis=1), 1.0, rtol=1e-12)


@pytest.mark.parametrize("name", ["gaussian", "qda", "bernoulli"])
def test_host_blocks_add_up_to_one_pass(name, monkeypatch):
    """Host passes read blocks of rows and add their statistics with combine_statistics."""
    story = STORIES[name]
    X, codes, weights = _data("bernoulli" if name == "bernoulli" else "gaussian", 1000)
    R = execution.responsibilities(codes, 3, weights)
    whole = execution.parameters(story, execution.statistics(story, X, R))
    monkeypatch.setattr(execution, "BLOCK_BYTES", 97 * X.shape[1] * 8)  # ragged blocks
    blocked = execution.parameters(story, execution.statistics(story, X, R))
    for key, value in whole.items():
        np.testing.assert_allclose(blocked[key], value, rtol=1e-10, atol=1e-12)


def test_responsibilities_are_dense_one_hot_rows_times_weights():
    R = execution.responsibilities(np.array([0, 2, -1, 1]), 3, np.array([1.0, 2.0, 3.0, 0.5]))
    expected = [[1, 0, 0], [0, 0, 2], [0, 0, 0], [0, 0.5, 0]]
    np.testing.assert_array_equal(R, expected)
    with pytest.raises(ValueError, match="code 3 of row 1"):
        execution.responsibilities(np.array([0, 3]), 3)


def test_padding_rows_change_nothing():
    """Compiled statistics of a small input run on padded rows of zero responsibility."""
    story = BernoulliStory()
    X, codes, weights = _data("bernoulli", 37)
    assert execution.padded(X)[0].shape[0] > X.shape[0]
    with jax.enable_x64(True):
        R = execution.responsibilities(codes, 3, weights)
        padded = execution.statistics(story, jnp.asarray(X), R, pad=True)
        plain = execution.statistics(story, jnp.asarray(X), jnp.asarray(R))
    leaves = zip(jax.tree_util.tree_leaves(padded), jax.tree_util.tree_leaves(plain), strict=True)
    for a, b in leaves:
        np.testing.assert_allclose(a, b, rtol=1e-12)


def test_unscored_rows_are_refused_with_their_scale():
    story = GaussianStory(covariance="diag", shared=False)
    X, codes, _ = _data("gaussian")
    params = execution.parameters(story, execution.labeled_statistics(story, X, codes, 3))
    # a row at 1e200 has squares beyond float64: refused by row, with the scale to stay within
    rows = np.vstack([X[:2], [[1e200, 0.0, 0.0, 0.0]], X[2:4]])
    with pytest.raises(ValueError, match=r"row 2 has values too large .*about 1.3e\+154"):
        execution.class_posteriors(story, params, rows)
    proba = execution.class_posteriors(story, params, np.delete(rows, 2, axis=0), "proba")
    np.testing.assert_allclose(proba.sum(axis=1), 1.0, rtol=1e-12)


def test_capabilities_come_from_one_checked_declaration():
    """Execution decisions are read from ``Story.capabilities`` with defaults (adds_over_rows:
    the closed form's); a flag still written as its own attribute, or an unknown key, is
    refused by name when the class is defined instead of being silently ignored."""

    class Declared(Story):
        capabilities = {"supports_missing": True}

    assert capability(Declared(), "supports_missing") is True
    assert capability(Declared(), "array_api") is False
    assert capability(Declared(), "adds_over_rows") is False  # no closed form
    assert capability(GaussianStory(), "adds_over_rows") is True
    answer = capability(GaussianStory(covariance="full", shrinkage="auto"), "adds_over_rows")
    assert not answer and "Ledoit" in answer.reason
    assert chunk_refusal(GaussianStory()) is None
    assert chunk_refusal(GaussianStory(covariance="full", shrinkage="auto")) == answer.reason
    assert chunk_refusal(Declared()) == "Declared has no closed form (no sufficient statistics)"
    assert capability(GaussianStory(covariance="full"), "missing_needs_em")
    assert not capability(GaussianStory(covariance="diag"), "missing_needs_em")
    assert not has_exact_posterior(GaussianStory())
    assert has_exact_posterior(GaussianStory(conjugate_prior="fixed"))
    with pytest.raises(
        TypeError,
        match=r"Stale gives capabilities that genprob does not read, \['supports_missing'\]",
    ):  # refused once, when the class is defined

        class Stale(Story):
            supports_missing = True  # the spelling before issue 56

    with pytest.raises(
        TypeError,
        match=r"does not read, \['supports_mising'\]: a story declares them in one mapping",
    ):

        class Misspelled(Story):
            capabilities = {"supports_mising": True}

    class Computed(Story):  # a property's keys are known when it is read
        @property
        def capabilities(self):
            return {"array_apy": True}

    with pytest.raises(TypeError, match=r"Computed gives .* does not read, \['array_apy'\]"):
        capability(Computed(), "array_api")
