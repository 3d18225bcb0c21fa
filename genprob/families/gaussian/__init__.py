"""Gaussian class-conditionals: distributions, moments and shrinkage, covariance structures, the
story. Public names are re-exported here."""

from genprob.families.gaussian.distributions import DiagonalNormal, WhitenedNormal
from genprob.families.gaussian.moments import ledoit_wolf_shrinkage
from genprob.families.gaussian.story import FACTORS, GaussianStory
from genprob.families.gaussian.structures import CovarianceStructure

__all__ = [
    "FACTORS",
    "DiagonalNormal",
    "GaussianStory",
    "WhitenedNormal",
    "ledoit_wolf_shrinkage",
    "CovarianceStructure",
]
