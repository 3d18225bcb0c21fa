"""Traced programs kept on disk (genprob._programs): loaded, keyed safely, same results."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from sklearn.datasets import load_iris

import genprob
from genprob import _compile_cache, _programs, core
from genprob._dtype import precision
from genprob.families.gaussian import GaussianStory
from genprob.families.multinomial import MultinomialStory

_SCRIPT = textwrap.dedent(
    """
    import json, logging
    import jax
    import numpy as np
    from sklearn.datasets import load_iris
    import genprob

    traced, exported = [], []
    export = jax.export.export
    jax.export.export = lambda fn, **kw: exported.append(fn.__name__) or export(fn, **kw)

    class Traces(logging.Handler):
        def emit(self, record):
            message = record.getMessage()
            if message.startswith("Finished tracing"):
                traced.append(message.split()[2])

    logger = logging.getLogger("jax")
    logger.addHandler(Traces())
    logger.setLevel(logging.DEBUG)
    X, y = load_iris(return_X_y=True)
    out = {}
    with jax.log_compiles(True):
        for name in ("GaussianNB", "LinearDiscriminantAnalysis", "QuadraticDiscriminantAnalysis",
                     "MultinomialNB"):
            proba = getattr(genprob, name)().fit(X, y).predict_proba(X)
            out[name] = [float(v).hex() for v in np.ravel(proba)]
        # more than 3 classes, past the size up to which per-class variances score on the
        # host: a device program
        big = np.tile(X, (300, 1))
        proba = genprob.GaussianNB().fit(X, np.arange(len(y)) % 5).predict_proba(big)[:150]
        out["device"] = [float(v).hex() for v in np.ravel(proba)]
        # a family whose statistics and M-step are compiled programs
        codes = X.astype(int)
        proba = genprob.CategoricalNB().fit(codes, y).predict_proba(codes)
        out["categorical"] = [float(v).hex() for v in np.ravel(proba)]
        partial = np.where(np.arange(len(y)) % 5 == 0, y, -1)
        semi = genprob.QuadraticDiscriminantAnalysis().fit(X, partial)
        out["semi"] = [float(v).hex() for v in np.ravel(semi.predict_proba(X))]
    out["traced"], out["exported"] = traced, exported
    print(json.dumps(out))
    """
)

#: genprob's programs a fit, a prediction and EM trace when nothing is on disk.
_OWN = {"_sufficient_statistics", "_emission_maximize", "_predict_log_proba", "_em_runs"}


def _run(cache):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GENPROB_", "JAX_"))}
    env["JAX_PLATFORMS"] = "cpu"
    env["GENPROB_COMPILATION_CACHE"] = str(cache)
    done = subprocess.run(
        [sys.executable, "-c", _SCRIPT], env=env, capture_output=True, text=True, check=True
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_a_later_process_loads_the_programs_and_gets_the_same_bits(tmp_path):
    off = _run("0")
    cold = _run(tmp_path / "cache")
    written = sorted((tmp_path / "cache" / _compile_cache.TRACES).iterdir())
    assert {p.name.split("-")[0] for p in written} >= _OWN
    warm = _run(tmp_path / "cache")
    assert sorted((tmp_path / "cache" / _compile_cache.TRACES).iterdir()) == written
    assert _OWN <= set(off["traced"]) and not off["exported"]  # off: traced as usual
    assert _OWN <= set(cold["exported"])
    assert not warm["exported"] and not _OWN & set(warm["traced"])  # loaded, not traced again
    for name in ("GaussianNB", "LinearDiscriminantAnalysis", "QuadraticDiscriminantAnalysis"):
        assert off[name] == cold[name] == warm[name]  # bitwise
    assert off["MultinomialNB"] == cold["MultinomialNB"] == warm["MultinomialNB"]
    assert off["semi"] == cold["semi"] == warm["semi"]
    assert off["categorical"] == cold["categorical"] == warm["categorical"]


class _UserStory(GaussianStory):
    """Defined outside genprob: its code could change between runs with the key unchanged."""


def test_the_key_describes_genprob_stories_by_value_and_refuses_the_rest():
    describe = _programs._describe

    def key(story):
        return repr(describe(jax.tree_util.tree_structure((story, {"X": 1.0}))))

    full = GaussianStory(covariance="full", shared=True, reg_param=0.1)
    # the same configuration built twice, another traced value: the same key, and no addresses
    assert key(full) == key(GaussianStory(covariance="full", shared=True, reg_param=0.7))
    assert "0x" not in key(full)
    assert key(full) != key(GaussianStory(covariance="full", shared=False))
    assert key(full) != key(GaussianStory(covariance="diag", shared=True))
    assert key(MultinomialStory(alpha=1.0)) != key(MultinomialStory(alpha=1.0, total_count=10))
    with pytest.raises(_programs._NotCacheable):
        key(_UserStory(covariance="full"))
    with pytest.raises(_programs._NotCacheable):
        _programs._plain(("full", object()))  # a static value that is not plain data
    with pytest.raises(_programs._NotCacheable):
        describe(jax.tree_util.tree_structure(jax.experimental.sparse.BCOO.fromdense(jnp.eye(2))))


@pytest.fixture
def own_cache(tmp_path):
    genprob.set_compilation_cache(tmp_path)
    _programs.forget()
    try:
        yield tmp_path / _compile_cache.TRACES
    finally:
        genprob.set_compilation_cache(None)
        _programs.forget()


def _iris_fit():
    X, y = load_iris(return_X_y=True)
    X = X[:97] * 1.5
    # unlabeled rows: an EM fit, a compiled program (closed-form fits of NumPy rows run none)
    y = np.where(np.arange(97) % 3 == 0, y[:97], -1)
    fitted = genprob.QuadraticDiscriminantAnalysis(reg_param=0.1).fit(X, y)
    return np.asarray(fitted.predict_proba(X))


def test_an_unreadable_trace_is_traced_again_and_replaced(own_cache):
    expected = _iris_fit()
    written = sorted(own_cache.iterdir())
    assert written
    for path in written:
        path.write_bytes(b"not an exported program")
    _programs.forget()
    np.testing.assert_array_equal(_iris_fit(), expected)
    for path in written:
        assert _programs._read(path) is not None  # rewritten whole


def test_a_user_story_is_traced_every_time(own_cache):
    X, y = load_iris(return_X_y=True)
    estimator = genprob.GenerativeClassifier(_UserStory(covariance="diag"))
    estimator.fit(X, y).predict_proba(X)
    taking_stories = ("_sufficient_statistics", "_emission_maximize", "_predict_log_proba")
    written = [p.name for p in own_cache.iterdir()] if own_cache.exists() else []
    assert not [name for name in written if name.startswith(taking_stories)]


def test_programs_inside_transformations_and_without_jit(own_cache):
    X, y = load_iris(return_X_y=True)
    fitted = genprob.GaussianNB().fit(X, y)
    story = fitted.story_
    with precision():
        params = {k: jnp.asarray(v, dtype=jnp.float64) for k, v in fitted.params_.items()}
        direct = core.joint_log_prob(story, params, X)
        jitted = jax.jit(lambda rows: core.joint_log_prob(story, params, rows))(X)
        mapped = jax.vmap(lambda row: core.joint_log_prob(story, params, row[None])[0])(X)
        with jax.disable_jit():
            eager = core.joint_log_prob(story, params, X)
        with pytest.raises(ValueError, match="features"):
            core.joint_log_prob(story, params, X[:, :3])
    np.testing.assert_allclose(jitted, direct, rtol=1e-12)
    np.testing.assert_allclose(mapped, direct, rtol=1e-12)
    np.testing.assert_allclose(eager, direct, rtol=1e-10)
