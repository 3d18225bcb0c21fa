"""scikit-learn compatible estimators over genprob stories."""

from genprob.estimators._criteria import UnlabeledRowsHurtWarning, UnlabeledWeightTieWarning
from genprob.estimators.discrete import BernoulliNB, CategoricalNB, MultinomialNB, PoissonNB
from genprob.estimators.gaussian import (
    GaussianNB,
    LinearDiscriminantAnalysis,
    QuadraticDiscriminantAnalysis,
    UnsupportedOptionError,
)
from genprob.estimators.generic import GenerativeClassifier
from genprob.estimators.mda import MixtureDiscriminantAnalysis
from genprob.estimators.mixed import MixedNB

__all__ = [name for name in dir() if not name.startswith("_") and name[0].isupper()]
