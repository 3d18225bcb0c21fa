"""genprob: generative classifiers as probabilistic programs (JAX + NumPyro + ArviZ).

Three faces over one functional core:

* stories (:mod:`genprob.story`, :mod:`genprob.families`): NumPyro priors + class-conditional
  emissions + optional closed-form statistics;
* the functional core (:mod:`genprob.core`): ``joint_log_prob``, closed-form fits, sampling;
* scikit-learn estimators (:mod:`genprob.estimators`).
"""

from genprob import datasets
from genprob.core import (
    fit_closed_form,
    joint_log_prob,
    log_likelihood,
    model,
    predict_log_proba,
    predict_proba,
    sample,
)
from genprob.story import ClassConditional, Story

# -- Gaussian family (issue: foundation) --
from genprob.estimators.gaussian import GaussianNB
from genprob.families.gaussian import GaussianStory

# -- end Gaussian family --
# -- discrete and mixed families --
# -- end discrete and mixed families --
# -- optimizer and cross-check --
# -- end optimizer and cross-check --
# -- missing labels (EM) --
# -- end missing labels (EM) --

__version__ = "0.1.0"
