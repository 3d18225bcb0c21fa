"""scikit-learn compatible estimators over genprob stories."""

# -- Gaussian family (issue: foundation) --
from genprob.estimators.gaussian import GaussianNB

# -- end Gaussian family --
# -- discrete and mixed families --
# -- end discrete and mixed families --

__all__ = [name for name in dir() if not name.startswith("_") and name[0].isupper()]
