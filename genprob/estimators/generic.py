"""GenerativeClassifier: the scikit-learn face of any story, built-in or user-written."""

from __future__ import annotations

from numbers import Integral

import numpy as np
from sklearn.utils._param_validation import StrOptions

from genprob.engine._dtype import numpy_dtype, precision
from genprob.engine._validation import NumberInterval
from genprob.engine.capabilities import has_closed_form
from genprob.estimators._base import GenerativeClassifierBase, keep_parameters
from genprob.story import CLASS_PRIOR, Story

__all__ = ["GenerativeClassifier"]


class GenerativeClassifier(GenerativeClassifierBase):
    """Estimator for any :class:`~genprob.story.Story`.

    A story with a closed form (``sufficient_statistics`` and ``maximize``) is fitted exactly;
    one with only a ``prior`` and an ``emission`` by L-BFGS on its NumPyro model's
    log-likelihood (:func:`genprob.fit_optimizer`). The story is a constructor parameter like
    any other (``clone``, ``set_params(story=...)``).

    Shared parameters (``unlabeled_weight``, ``max_iter``, ``em_tol``, ``n_init``,
    ``random_state``, ``dtype``, ``missing``, ...) and attributes: docs/reference/estimators.md.

    Args:
        story: the generative story.
        priors: fixed class prior (K,), or None to estimate it.
        optimizer_max_iter: L-BFGS iteration budget for stories without a closed form.
        n_init: number of EM initializations, or of optimizer starts for a story without a
            closed form (the one with the highest objective is kept).
        random_state: seed for EM initializations, the optimizer's starts and :meth:`sample`.
        init: first start of the optimizer for a story without a closed form: ``None`` or
            ``"poor"`` (seeded standard-normal unconstrained values), ``"prior"`` (a draw from
            the story's prior) or a dict of named parameters (see :func:`genprob.fit_optimizer`).

    Attributes:
        optimizer_result_: convergence information when fitted by the optimizer
            (``converged``, ``start_objectives``, ``collapsed``...).
    """

    _parameter_constraints = {
        **GenerativeClassifierBase._parameter_constraints,
        # checked when the story is made, with a message naming the type that was given
        "story": "no_validation",
        "priors": ["array-like", None],
        "optimizer_max_iter": [NumberInterval(Integral, 1, None, closed="left")],
        "init": [StrOptions({"poor", "prior"}), dict, None],
    }

    def __init__(
        self,
        story=None,
        *,
        priors=None,
        optimizer_max_iter=10000,
        unlabeled_weight=1.0,
        max_iter=100,
        em_tol=1e-12,
        n_init=1,
        random_state=None,
        dtype="float64",
        init=None,
        missing="error",
        unlabeled_label=-1,
    ):
        keep_parameters(self, locals())

    def _make_story(self, X) -> Story:
        if not isinstance(self.story, Story):
            raise ValueError(
                f"GenerativeClassifier needs a genprob Story instance as `story`, got "
                f"{type(self.story).__name__}."
            )
        return self.story

    def _fit_labeled(self, story, X, codes, sample_weight):
        """Closed form when the story has one, else L-BFGS (:func:`genprob.fit_optimizer`)."""
        if has_closed_form(story):
            return super()._fit_labeled(story, X, codes, sample_weight)
        from genprob.inference.optimize import fit_optimizer

        class_prior, _ = self._class_prior_argument()
        with precision(self._dtype):
            result = fit_optimizer(
                story,
                np.asarray(X, dtype=numpy_dtype(self._dtype)),
                codes,
                num_classes=len(self.classes_),
                seed=int(np.random.RandomState(self.random_state).randint(2**31 - 1)),
                max_iter=self.optimizer_max_iter,
                n_init=self.n_init,
                init="poor" if self.init is None else self.init,
                sample_weight=sample_weight,
                fixed=None if class_prior is None else {CLASS_PRIOR: class_prior},
                dtype=self._dtype,
            )
        self.story_ = story
        self.params_ = {k: np.asarray(v) for k, v in result.params.items()}
        self.optimizer_result_ = result
        return self
