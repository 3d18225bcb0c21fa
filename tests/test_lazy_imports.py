"""NumPyro is imported on first use: ``import genprob`` and closed-form fits of NumPy rows do
without it, and every moved NumPyro class stays reachable where it was defined before."""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
import textwrap

import pytest

#: where each NumPyro class lives now -> the older paths that still serve it
MOVED = {
    "genprob.class_conditional.ClassConditional": ["genprob", "genprob.story"],
    "genprob.masked_emission.MaskedEmission": ["genprob.masking", "genprob.missing"],
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
    """stdout words of ``script`` run in a fresh interpreter that cannot import NumPyro unless
    the script lets it (``ALLOW``), so an eager import fails loudly with its traceback."""
    guard = textwrap.dedent(
        """
        import sys
        ALLOW = []
        class NoNumPyro:
            def find_spec(self, name, path=None, target=None):
                if name.split(".")[0] == "numpyro" and not ALLOW:
                    raise ImportError(f"numpyro imported eagerly ({name})")
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


def test_import_genprob_does_not_import_numpyro():
    words = run_fresh(
        """
        import genprob
        print("numpyro" in sys.modules, sorted(m for m in sys.modules if "emission" in m))
        """
    )
    assert words == ["False", "[]"]


def test_closed_form_fits_of_numpy_rows_do_not_import_numpyro():
    """What a scikit-learn user runs (cross-validation, fit, every predict method, LDA's
    transform) never needs NumPyro; the first model built afterwards imports it."""
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
        print("numpyro" in sys.modules)
        ALLOW.append(True)
        # the NumPyro model of the same story, after the fact: it imports NumPyro on its own
        import jax
        fitted = genprob.GaussianNB().fit(X, y)
        draws, labels = genprob.sample(fitted.story_, fitted.params_, 5, jax.random.PRNGKey(0))
        print("numpyro" in sys.modules, draws.shape)
        """
    )
    assert words == ["False", "True", "(5,", "4)"]


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
