"""scikit-learn compatible estimators over genprob stories."""

from genprob.estimators.gaussian import GaussianNB

__all__ = ["GaussianNB"]
