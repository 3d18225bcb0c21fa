"""NumPyro and JAX are imported on first use: ``import genprob`` and closed-form fits of NumPy
rows do without them, every moved NumPyro class stays reachable where it was defined before,
and a story is still a JAX pytree whenever it is handed to JAX."""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
import textwrap

import pytest

#: where each NumPyro class lives now -> the older paths that still serve it
MOVED = {
    "genprob.engine.class_conditional.ClassConditional": ["genprob", "genprob.story"],
    "genprob.engine.masked_emission.MaskedEmission": [
        "genprob.engine.masking",
        "genprob.engine.missing",
    ],
    "genprob.families.gaussian.normals.WhitenedNormal": [
        "genprob",
        "genprob.families.gaussian",
        "genprob.families.gaussian.distributions",
    ],
    "genprob.families.gaussian.normals.DiagonalNormal": [
        "genprob",
        "genprob.families.gaussian",
        "genprob.families.gaussian.distributions",
    ],
    "genprob.families.bernoulli_emission.BernoulliFeatures": ["genprob.families.bernoulli"],
    "genprob.families.multinomial_emission.MultinomialFeatures": ["genprob.families.multinomial"],
    "genprob.families.mixed_emission.MixedFeatures": ["genprob.families.mixed"],
    "genprob.families.categorical_emission.CategoricalFeatures": ["genprob.families.categorical"],
    "genprob.families.categorical_emission.PaddedDirichlet": ["genprob.families.categorical"],
    "genprob.families.categorical_emission.PaddedSimplex": ["genprob.families.categorical"],
    "genprob.families.categorical_emission.PaddedStickBreakingTransform": [
        "genprob.families.categorical"
    ],
}


def run_fresh(script: str) -> list[str]:
    """stdout words of ``script`` run in a fresh interpreter that cannot import NumPyro or JAX
    unless the script lets it (``ALLOW``), so an eager import fails loudly with its traceback."""
    guard = textwrap.dedent(
        """
        import sys
        ALLOW = []
        class NoNumPyro:
            def find_spec(self, name, path=None, target=None):
                if name.split(".")[0] in ("numpyro", "jax", "jaxlib") and not ALLOW:
                    raise ImportError(f"{name} imported eagerly")
        sys.meta_path.insert(0, NoNumPyro())
        """
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GENPROB_", "JAX_"))}
    done = subprocess.run(
        [sys.executable, "-c", guard + textwrap.dedent(script)],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout.split()


def test_import_genprob_does_not_import_numpyro_or_jax():
    words = run_fresh(
        """
        import genprob
        print("numpyro" in sys.modules, "jax" in sys.modules,
              sorted(m for m in sys.modules if "emission" in m))
        """
    )
    assert words == ["False", "False", "[]"]


def test_closed_form_fits_of_numpy_rows_do_not_import_numpyro_or_jax():
    """What a scikit-learn user runs (cross-validation, fit, every predict method, LDA's
    transform) never needs NumPyro or JAX; the first model built afterwards imports them."""
    words = run_fresh(
        """
        from sklearn.datasets import load_iris
        from sklearn.model_selection import cross_val_score
        import genprob
        X, y = load_iris(return_X_y=True)
        for estimator in (genprob.GaussianNB(), genprob.LinearDiscriminantAnalysis(),
                          genprob.LinearDiscriminantAnalysis(solver="lsqr"),
                          genprob.QuadraticDiscriminantAnalysis(reg_param=0.1),
                          genprob.MultinomialNB(), genprob.BernoulliNB(binarize=3.0)):
            cross_val_score(estimator, X, y, cv=3)
            fitted = estimator.fit(X, y)
            fitted.predict_proba(X), fitted.predict_log_proba(X), fitted.predict(X)
            fitted.score(X, y)
        fitted = genprob.LinearDiscriminantAnalysis().fit(X, y)
        fitted.transform(X), fitted.decision_function(X)
        print("numpyro" in sys.modules, "jax" in sys.modules)
        ALLOW.append(True)
        # the NumPyro model of the same story, after the fact: it imports NumPyro on its own
        import jax
        fitted = genprob.GaussianNB().fit(X, y)
        draws, labels = genprob.sample(fitted.story_, fitted.params_, 5, jax.random.PRNGKey(0))
        print("numpyro" in sys.modules, draws.shape)
        """
    )
    assert words == ["False", "False", "True", "(5,", "4)"]


def test_cold_fits_of_the_benchmark_do_not_import_jax():
    """The cold rows of benchmarks/bench_cold.py: import, fit, predict_proba on iris, wine and
    digits, a grid search's refits; the fit-time memory check included."""
    words = run_fresh(
        """
        from sklearn.datasets import load_digits, load_iris, load_wine
        from sklearn.model_selection import GridSearchCV
        import genprob
        for load in (load_iris, load_wine, load_digits):
            X, y = load(return_X_y=True)
            for estimator in (genprob.GaussianNB(), genprob.LinearDiscriminantAnalysis(),
                              genprob.QuadraticDiscriminantAnalysis(reg_param=0.5),
                              genprob.MultinomialNB(), genprob.BernoulliNB()):
                estimator.fit(X, y).predict_proba(X)
        X, y = load_iris(return_X_y=True)
        grid = {"reg_param": [0.0, 0.01, 0.1, 0.3, 0.6, 0.9]}
        GridSearchCV(genprob.QuadraticDiscriminantAnalysis(), grid, cv=3).fit(X, y)
        print("jax" in sys.modules, "numpyro" in sys.modules)
        """
    )
    assert words == ["False", "False"]


def test_a_story_is_a_pytree_for_a_user_who_imported_jax():
    """JAX imported first: stories built afterwards are pytrees (their numbers are the leaves)
    and go through ``jit``; a story class defined earlier is registered then too."""
    words = run_fresh(
        """
        ALLOW.append(True)
        import genprob
        from genprob.families.gaussian import GaussianStory
        import jax
        story = GaussianStory(reg_param=0.25)
        leaves = jax.tree_util.tree_leaves(story)
        print(len(leaves) > 1, 0.25 in leaves, story.fields()["reg_param"] in leaves)
        print(jax.jit(lambda s: s.reg_param * 2)(story))
        """
    )
    assert words == ["True", "True", "True", "0.5"]


def test_stories_built_before_jax_become_pytrees_when_genprob_sees_it():
    """Stories built without JAX; the user imports JAX: the first genprob call that uses JAX
    (here a functional fit, compiled) or builds a story registers every story class."""
    words = run_fresh(
        """
        import genprob
        from sklearn.datasets import load_iris
        story = genprob.GaussianStory(reg_param=0.25)
        X, y = load_iris(return_X_y=True)
        ALLOW.append(True)
        import jax
        import numpy as np
        params = genprob.fit_closed_form(story, jax.numpy.asarray(X), np.eye(3)[y])
        prior = np.asarray(params["class_prior"], float).round(3).tolist()
        print(0.25 in jax.tree_util.tree_leaves(story), prior)
        """
    )
    assert words == ["True", "[0.333,", "0.333,", "0.333]"]


def test_float64_reaches_jax_imported_inside_a_precision_block():
    """JAX's first import inside ``precision("float64")`` still runs the rest of the block in
    64 bits (the context waits for the import)."""
    words = run_fresh(
        """
        ALLOW.append(True)
        from genprob import _lazy
        from genprob.engine._dtype import precision
        with precision("float64"):
            jnp = _lazy.jax().numpy
            print(jnp.ones(2).dtype)
        print(jnp.ones(2).dtype)
        """
    )
    assert words == ["float64", "float32"]


@pytest.mark.parametrize("target", sorted(MOVED))
def test_moved_classes_stay_reachable_where_they_were(target):
    module_name, name = target.rsplit(".", 1)
    cls = getattr(importlib.import_module(module_name), name)
    for old in MOVED[target]:
        assert getattr(importlib.import_module(old), name) is cls, old


def test_unknown_attributes_still_raise_attribute_error():
    import genprob
    import genprob.families.bernoulli as bernoulli

    with pytest.raises(AttributeError, match="module 'genprob' has no attribute 'NoSuchThing'"):
        genprob.NoSuchThing  # noqa: B018
    with pytest.raises(AttributeError, match="genprob.families.bernoulli"):
        bernoulli.NoSuchThing  # noqa: B018
    assert {"ClassConditional", "DiagonalNormal", "WhitenedNormal", "GaussianNB"} <= set(
        dir(genprob)
    )


def test_names_served_on_first_use_are_declared_for_static_readers():
    """Every JAX-bound name ``genprob`` serves on first use is imported under
    ``typing.TYPE_CHECKING`` in its section (the API index, type checkers, editors), and the
    other way round."""
    import ast
    from pathlib import Path

    import genprob

    source = Path(genprob.__file__).read_text()
    declared = {}
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for imported in node.body:
                for alias in imported.names:
                    module = imported.module
                    full = f"{module}.{alias.name}"
                    declared[alias.name] = full if full in genprob._LAZY.values() else module
    numpyro_classes = {"ClassConditional", "DiagonalNormal", "WhitenedNormal"}
    served = {k: v for k, v in genprob._LAZY.items() if k not in numpyro_classes}
    assert declared == served
    for name in served:
        assert getattr(genprob, name) is not None
    assert callable(genprob.crosscheck) and callable(genprob.fit_em)
