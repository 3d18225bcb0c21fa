"""The scikit-learn face shared by every genprob estimator.

An estimator is a thin wrapper: it validates input, encodes labels as codes 0..K-1, builds the
story from its hyperparameters, and calls the functional core (:mod:`genprob.core`) inside a
precision context. Every prediction method derives from :meth:`predict_joint_log_proba`, which is
``genprob.core.joint_log_prob``.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils import check_random_state
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data

from genprob import core
from genprob._dtype import numpy_dtype, precision, resolve_dtype
from genprob.story import Story

__all__ = ["GenerativeClassifierBase", "jax_key"]


def jax_key(random_state) -> jax.Array:
    """A JAX PRNG key from anything ``sklearn.utils.check_random_state`` accepts."""
    seed = check_random_state(random_state).randint(0, 2**31 - 1)
    return jax.random.PRNGKey(seed)


class GenerativeClassifierBase(ClassifierMixin, BaseEstimator):
    """Base class: fit by closed form from one-hot responsibilities, predict by Bayes' rule.

    Subclasses implement :meth:`_make_story` (the story for the current hyperparameters and data)
    and may override :meth:`_validate_X` (extra checks or conversions of the features),
    :meth:`_class_prior_argument` (a fixed class prior) and :meth:`_set_fitted_attributes`
    (scikit-learn's attribute names derived from ``params_``).

    Fitted attributes common to all estimators: ``classes_``, ``n_features_in_``,
    ``feature_names_in_`` (when fit on a DataFrame), ``story_`` and ``params_`` (the story's named
    parameters as NumPy arrays, ``class_prior`` included).
    """

    #: Keyword arguments for ``validate_data``; subclasses may allow sparse input, etc.
    _validate_kwargs: dict = {}

    # -- hooks -----------------------------------------------------------------------------------
    def _make_story(self, X) -> Story:
        raise NotImplementedError

    def _validate_X(self, X, *, fitting: bool):
        return X

    def _class_prior_argument(self):
        """(class_prior, fit_prior) passed to the closed-form fit."""
        return getattr(self, "priors", None), True

    def _set_fitted_attributes(self, stats):
        """Set scikit-learn-named attributes from ``self.params_`` and the fit's statistics."""

    # -- helpers ---------------------------------------------------------------------------------
    @property
    def _dtype(self) -> str:
        return resolve_dtype(getattr(self, "dtype", None))

    def _as_array(self, X):
        return jnp.asarray(X, dtype=numpy_dtype(self._dtype))

    def _params_jax(self):
        return {k: self._as_array(v) for k, v in self.params_.items()}

    def _check_X(self, X):
        check_is_fitted(self, "params_")
        X = validate_data(
            self, X, reset=False, dtype=[np.float64, np.float32], **self._validate_kwargs
        )
        return self._validate_X(X, fitting=False)

    # -- fitting ---------------------------------------------------------------------------------
    def fit(self, X, y, sample_weight=None):
        """Fit the story's parameters by maximum likelihood (closed form).

        Args:
            X: features (n_samples, n_features).
            y: labels, any hashable values.
            sample_weight: optional non-negative weights (n_samples,).

        Returns:
            self
        """
        X, y = validate_data(self, X, y, dtype=[np.float64, np.float32], **self._validate_kwargs)
        check_classification_targets(y)
        self.classes_, codes = np.unique(y, return_inverse=True)
        if len(self.classes_) < 2:
            raise ValueError(
                f"need samples of at least 2 classes to fit a classifier; got only class "
                f"{self.classes_[0]!r}."
            )
        if sample_weight is not None:
            sample_weight = np.asarray(sample_weight, dtype=np.float64)
            if sample_weight.shape != (X.shape[0],):
                raise ValueError(
                    f"sample_weight has shape {sample_weight.shape}; expected ({X.shape[0]},)."
                )
            if np.any(sample_weight < 0) or not np.all(np.isfinite(sample_weight)):
                raise ValueError("sample_weight must be finite and non-negative.")
        X = self._validate_X(X, fitting=True)
        story = self._make_story(X)
        class_prior, fit_prior = self._class_prior_argument()
        with precision(self._dtype):
            Xj = self._as_array(X)
            story.validate(Xj)
            R = core.one_hot_responsibilities(
                codes, len(self.classes_), sample_weight, dtype=numpy_dtype(self._dtype)
            )
            stats = core.sufficient_statistics(story, Xj, R)
            params = core.maximize(story, stats, class_prior, fit_prior)
            self.story_ = story
            self.params_ = {k: np.asarray(v) for k, v in params.items()}
            stats = jax.tree_util.tree_map(np.asarray, stats)
        self._set_fitted_attributes(stats)
        return self

    # -- prediction (all from the joint log-probability) -----------------------------------------
    def predict_joint_log_proba(self, X):
        """Joint log-probabilities ``log p(x, y = k) = log pi_k + log p(x | k)``, (n, K)."""
        X = self._check_X(X)
        with precision(self._dtype):
            joint = core.joint_log_prob(self.story_, self._params_jax(), self._as_array(X))
            return np.asarray(joint)

    def predict_log_proba(self, X):
        """Log class posteriors ``log p(y = k | x)`` (n, K), computed with a log-sum-exp."""
        joint = self.predict_joint_log_proba(X)
        with precision(self._dtype):
            return np.asarray(jax.nn.log_softmax(jnp.asarray(joint), axis=-1))

    def predict_proba(self, X):
        """Class posteriors ``p(y = k | x)`` (n, K); rows sum to one."""
        return np.exp(self.predict_log_proba(X))

    def predict(self, X):
        """Most probable class of each row (Bayes' rule)."""
        return self.classes_[np.argmax(self.predict_joint_log_proba(X), axis=1)]

    # -- the generative direction ----------------------------------------------------------------
    def sample(self, n_samples: int = 1, random_state=None):
        """Draw ``(X, y)`` from the fitted two-step generative process.

        Args:
            n_samples: number of draws.
            random_state: seed, ``numpy.random.RandomState`` or None.

        Returns:
            ``X`` (n_samples, n_features) and labels ``y`` (n_samples,) in ``classes_``.
        """
        check_is_fitted(self, "params_")
        if int(n_samples) < 1:
            raise ValueError(f"n_samples must be >= 1, got {n_samples!r}.")
        with precision(self._dtype):
            X, codes = core.sample(
                self.story_, self._params_jax(), int(n_samples), jax_key(random_state)
            )
            return np.asarray(X), self.classes_[np.asarray(codes)]

    def num_parameters(self) -> int:
        """Number of free parameters of the fitted story (class prior included)."""
        check_is_fitted(self, "params_")
        return self.story_.num_parameters(len(self.classes_), self.n_features_in_)
