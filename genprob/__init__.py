"""genprob: generative classifiers as probabilistic programs (JAX + NumPyro + ArviZ).

Three faces over one functional core:

* stories (:mod:`genprob.story`, :mod:`genprob.families`): NumPyro priors + class-conditional
  emissions + optional closed-form statistics;
* the functional core (:mod:`genprob.core`): ``joint_log_prob``, closed-form fits, sampling;
* scikit-learn estimators (:mod:`genprob.estimators`).
"""

from genprob.core import (
    fit_closed_form,
    joint_log_prob,
    log_likelihood,
    model,
    predict_log_proba,
    predict_proba,
    sample,
)
from genprob.estimators import GaussianNB
from genprob.families.gaussian import GaussianStory
from genprob.story import ClassConditional, Story

__version__ = "0.1.0"

__all__ = [
    "Story",
    "ClassConditional",
    "GaussianStory",
    "GaussianNB",
    "joint_log_prob",
    "predict_proba",
    "predict_log_proba",
    "log_likelihood",
    "fit_closed_form",
    "model",
    "sample",
]
