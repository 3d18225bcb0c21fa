"""Gaussian class-conditionals: distributions, moments and shrinkage, covariance structures, the
story. Public names are re-exported here."""

from genprob._lazy import lazy_attribute
from genprob.families.gaussian.moments import ledoit_wolf_shrinkage
from genprob.families.gaussian.projection import lda_projection, lda_transform
from genprob.families.gaussian.story import FACTORS, GaussianStory
from genprob.families.gaussian.structures import CovarianceStructure

__all__ = [
    "FACTORS",
    "GaussianStory",
    "ledoit_wolf_shrinkage",
    "lda_projection",
    "lda_transform",
    "CovarianceStructure",
]

#: NumPyro distributions, imported on first use
__getattr__ = lazy_attribute(
    __name__,
    {
        "DiagonalNormal": "genprob.families.gaussian.normals",
        "WhitenedNormal": "genprob.families.gaussian.normals",
    },
)
