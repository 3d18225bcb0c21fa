"""Gaussian estimators: GaussianNB, LinearDiscriminantAnalysis, QuadraticDiscriminantAnalysis."""

from __future__ import annotations

import numpy as np

from genprob.estimators._base import GenerativeClassifierBase
from genprob.families.gaussian import GaussianStory

__all__ = ["GaussianNB"]


class GaussianNB(GenerativeClassifierBase):
    """Gaussian naive Bayes: per-class diagonal Gaussians (scikit-learn compatible).

    Args:
        priors: fixed class prior (K,), or None to estimate class proportions.
        var_smoothing: fraction of the largest feature variance added to every variance.
        dtype: ``"float64"`` (default) or ``"float32"``.

    Attributes:
        theta_: class means (K, D).
        var_: class variances (K, D), smoothing included.
        class_prior_: class prior (K,).
        class_count_: (weighted) number of training rows per class (K,).
        epsilon_: the absolute variance added.
        params_: the story's named parameters.
    """

    def __init__(self, *, priors=None, var_smoothing=1e-9, dtype="float64"):
        self.priors = priors
        self.var_smoothing = var_smoothing
        self.dtype = dtype

    def _make_story(self, X):
        return GaussianStory(covariance="diag", shared=False, var_smoothing=self.var_smoothing)

    def _set_fitted_attributes(self, stats):
        self.theta_ = self.params_["means"]
        self.var_ = self.params_["variances"]
        self.class_prior_ = self.params_["class_prior"]
        self.class_count_ = stats["class_counts"]
        self.epsilon_ = float(self.var_smoothing * np.max(stats["emission"]["total_variance"]))
