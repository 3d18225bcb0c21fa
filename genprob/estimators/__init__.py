"""scikit-learn compatible estimators over genprob stories."""

# -- Gaussian family (issue: foundation) --
from genprob.estimators.gaussian import (
    GaussianNB,
    LinearDiscriminantAnalysis,
    QuadraticDiscriminantAnalysis,
    UnsupportedOptionError,
)

# -- end Gaussian family --
# -- model-based discriminant analysis (issue 44) --
from genprob.estimators.mda import MixtureDiscriminantAnalysis

# -- end model-based discriminant analysis --
# -- discrete and mixed families --
from genprob.estimators.discrete import BernoulliNB, CategoricalNB, MultinomialNB, PoissonNB
from genprob.estimators.mixed import MixedNB

# -- end discrete and mixed families --

# -- any-story estimator --
from genprob.estimators.generic import GenerativeClassifier

# -- end any-story estimator --
# -- criteria (issue 45) --
from genprob.estimators._criteria import UnlabeledRowsHurtWarning, UnlabeledWeightTieWarning

# -- end criteria --

__all__ = [name for name in dir() if not name.startswith("_") and name[0].isupper()]
