"""genprob: generative classifiers as probabilistic programs (JAX + NumPyro + ArviZ).

Three faces over one functional core:

* stories (:mod:`genprob.story`, :mod:`genprob.families`): NumPyro priors + class-conditional
  emissions + optional closed-form statistics;
* the functional core (:mod:`genprob.core`): ``joint_log_prob``, closed-form fits, sampling;
* scikit-learn estimators (:mod:`genprob.estimators`).
"""

import typing as _typing

from genprob._lazy import load_stand_ins as _load_stand_ins

_load_stand_ins()  # before any import below: ArviZ 1.x, imported first, leaves lazy jax/numpyro

from genprob import datasets
from genprob.engine._mappings import CompiledProgramsDropped
from genprob.core import (
    fit_closed_form,
    joint_log_prob,
    log_likelihood,
    model,
    predict_log_proba,
    predict_proba,
    sample,
)
from genprob.story import Story

# -- Gaussian family (issue: foundation) --
from genprob import boundaries
from genprob.boundaries import linear_boundary, quadratic_boundary
from genprob.estimators.gaussian import (
    DiscriminantDirections,
    GaussianNB,
    LinearDiscriminantAnalysis,
    QuadraticDiscriminantAnalysis,
)
from genprob.families.gaussian import GaussianStory, lda_projection, lda_transform

# -- end Gaussian family --
# -- model-based discriminant analysis (issue 44) --
from genprob.estimators.mda import MixtureDiscriminantAnalysis
from genprob.estimators.fixed_cv import cross_validate_model

# -- end model-based discriminant analysis --
# -- discrete and mixed families --
from genprob.estimators.discrete import BernoulliNB, CategoricalNB, MultinomialNB, PoissonNB
from genprob.estimators.mixed import MixedNB
from genprob.families.bernoulli import BernoulliStory
from genprob.families.categorical import (
    CategoricalStory,
    full_joint_num_parameters,
    naive_num_parameters,
)
from genprob.families.mixed import MixedStory
from genprob.families.multinomial import MultinomialStory
from genprob.families.poisson import PoissonStory

# -- end discrete and mixed families --
# -- optimizer and cross-check --
from genprob.inference.crosscheck import CheckRow, CrosscheckResult, crosscheck

if _typing.TYPE_CHECKING:  # served on first use (_LAZY): it compiles at import
    from genprob.inference.optimize import (
        ObjectiveValue,
        OptimizerResult,
        evaluate_objective,
        fit_optimizer,
    )

# -- end optimizer and cross-check --
# -- missing labels (EM) --
if _typing.TYPE_CHECKING:  # served on first use (_LAZY): they need JAX
    from genprob.engine import em
    from genprob.inference import mcmc
    from genprob.engine.em import EMResult, fit_em, weighted_log_likelihood
    from genprob.inference.mcmc import fit_nuts, params_from_samples, run_nuts, sample_labels

# -- end missing labels (EM) --

# -- persistence and any-story estimator --
from genprob.estimators.generic import GenerativeClassifier
from genprob.io.persistence import ModelFileError, load

# -- end persistence and any-story estimator --

# -- posteriors and ArviZ --
if _typing.TYPE_CHECKING:  # served on first use (_LAZY): they need JAX
    from genprob.io import arviz_io
    from genprob.inference import posterior
    from genprob.io.arviz_io import (
        mle_vs_posterior_table,
        plot_forest,
        plot_posterior_vs_mle,
        plot_predictive_vs_plugin,
        predictive_vs_plugin,
        to_arviz,
    )
    from genprob.inference.draws import pointwise_log_likelihood, posterior_predict_proba
    from genprob.inference.posterior import (
        ExactPosterior,
        exact_posterior,
        log_evidence,
        with_prior,
    )

# -- end posteriors and ArviZ --

import genprob._version as _version  # noqa: E402
from genprob._lazy import lazy_attribute  # noqa: E402

#: Names served on first use, so that ``import genprob`` imports neither NumPyro nor JAX
_LAZY = {
    "ClassConditional": "genprob.engine.class_conditional",
    "DiagonalNormal": "genprob.families.gaussian.normals",
    "WhitenedNormal": "genprob.families.gaussian.normals",
    # optimizer
    **dict.fromkeys(
        ["ObjectiveValue", "OptimizerResult", "evaluate_objective", "fit_optimizer"],
        "genprob.inference.optimize",
    ),
    # missing labels (EM)
    "em": "genprob.engine.em",
    "mcmc": "genprob.inference.mcmc",
    **dict.fromkeys(["EMResult", "fit_em", "weighted_log_likelihood"], "genprob.engine.em"),
    **dict.fromkeys(
        ["fit_nuts", "params_from_samples", "run_nuts", "sample_labels"], "genprob.inference.mcmc"
    ),
    # posteriors and ArviZ
    "arviz_io": "genprob.io.arviz_io",
    "posterior": "genprob.inference.posterior",
    **dict.fromkeys(
        [
            "mle_vs_posterior_table",
            "plot_forest",
            "plot_posterior_vs_mle",
            "plot_predictive_vs_plugin",
            "predictive_vs_plugin",
            "to_arviz",
        ],
        "genprob.io.arviz_io",
    ),
    **dict.fromkeys(
        ["pointwise_log_likelihood", "posterior_predict_proba"], "genprob.inference.draws"
    ),
    **dict.fromkeys(
        ["ExactPosterior", "exact_posterior", "log_evidence", "with_prior"],
        "genprob.inference.posterior",
    ),
}
__getattr__ = lazy_attribute(__name__, _LAZY)


def __dir__():
    return sorted(set(globals()) | set(_LAZY))


__version__ = _version.__version__
