r"""Posteriors of a story's parameters: exact conjugate updates, NUTS, and draws put to use.

Two ways to the posterior ``p(θ | X, y)`` under the story's own prior (:meth:`Story.prior` plus
the Dirichlet on the class prior, see :func:`genprob.core.model`):

* **exact** (:func:`exact_posterior`): for the class prior and the Bernoulli, categorical,
  multinomial and Poisson families the prior is conjugate, so on fully labeled data the
  posterior is the prior with the sufficient statistics added to its concentrations — the same
  statistics (:func:`genprob.core.sufficient_statistics`) the closed-form fit uses. Draws are
  independent and instant.
* **NUTS** (:func:`genprob.fit_nuts`): any story, any mix of labeled and unlabeled rows (the
  class summed out of unlabeled rows).

Smoothing is a prior. With ``N_k`` rows in class k of which ``c_kj`` have feature j on, the
Bernoulli prior ``Beta(α + 1, α + 1)`` gives the posterior ``Beta(c_kj + α + 1, N_k - c_kj + α +
1)`` whose *mode* is the smoothed estimate ``(c_kj + α) / (N_k + 2α)``; the prior ``Beta(α, α)``
gives a posterior whose *mean* is that estimate. The same holds for Dirichlet (categorical,
multinomial, class prior) and Gamma (Poisson) priors. ``smoothing_as="mode"`` (the default) is
the story's prior, the one NUTS samples from; ``smoothing_as="mean"`` is the second reading, for
exact posteriors only.

Exact posteriors only: the conjugate update of each family is its
:meth:`~genprob.story.Story.conjugate_factors`; draws are evaluated by :mod:`genprob.draws` and
``estimator.posterior(...)`` lives with the estimators.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import jax
import numpy as np

from genprob import core
from genprob._limits import check_count, check_posterior_size
from genprob._validation import check_features
from genprob.conjugate import ConjugateFactor, _numpy_rng, dirichlet
from genprob.draws import flatten_draws, pointwise_log_likelihood, posterior_predict_proba
from genprob.em import encode_partial_labels
from genprob.masking import reads_nan_as_missing
from genprob.story import CLASS_PRIOR, Story

__all__ = [
    "ConjugateFactor",
    "ExactPosterior",
    "exact_posterior",
    "has_exact_posterior",
    "with_prior",
    "pointwise_log_likelihood",
    "posterior_predict_proba",
    "flatten_draws",
    "METHODS",
]

#: Accepted values of ``method`` in ``estimator.posterior``.
METHODS = ("nuts", "exact")
#: Readings of the smoothing α as a prior (see the module docstring).
SMOOTHING_READINGS = ("mode", "mean")


def _no_exact_posterior_error(story: Story) -> ValueError:
    """The error naming the story (``story`` or one it holds, a mixed table's block) without
    a conjugate update."""
    lacking = story
    while inner := [s for s in lacking.nested_stories() if not s.has_exact_posterior]:
        lacking = inner[0]
    held = "" if lacking is story else f" (it holds a {type(lacking).__name__})"
    return ValueError(
        f"{type(story).__name__} has no exact (conjugate) posterior{held}: "
        f"{type(lacking).__name__} does not provide a conjugate update (conjugate_factors). "
        f"Use method='nuts' (genprob.fit_nuts) instead."
    )


def _unlabeled_rows_error(count: int) -> ValueError:
    return ValueError(
        f"y has {count} unlabeled rows (-1): summing their class out makes the posterior a "
        f"mixture with no closed form, so there is no exact posterior. Use method='nuts' "
        f"(estimator.posterior(X, y, method='nuts') or genprob.fit_nuts)."
    )


def has_exact_posterior(story: Story) -> bool:
    """True when :func:`exact_posterior` supports the story (:attr:`Story.has_exact_posterior`)."""
    return bool(story.has_exact_posterior)


# -- the exact posterior -------------------------------------------------------------------------
@dataclass(frozen=True)
class ExactPosterior:
    """Closed-form posterior of every parameter (independent factors, class prior included).

    Attributes:
        story: the story (with the class concentration the posterior used).
        factors: parameter name -> :class:`ConjugateFactor`.
        num_classes: K.
        num_features: D.
        smoothing_as: ``"mode"`` (the story's prior) or ``"mean"``.
    """

    story: Story
    factors: dict
    num_classes: int
    num_features: int
    smoothing_as: str = "mode"
    names: tuple = field(init=False)

    def __post_init__(self):
        object.__setattr__(self, "names", tuple(self.factors))

    def distributions(self) -> dict:
        """Parameter name -> NumPyro distribution (event shape = the parameter's shape)."""
        return {name: factor.distribution() for name, factor in self.factors.items()}

    def parameters(self) -> dict:
        """Parameter name -> the posterior distribution's parameters (``concentration`` ...)."""
        return {name: factor.parameters() for name, factor in self.factors.items()}

    def mean(self) -> dict:
        """Posterior means (the smoothed closed-form fit when ``smoothing_as="mean"``)."""
        return {name: factor.mean() for name, factor in self.factors.items()}

    def mode(self) -> dict:
        """Posterior modes (the smoothed closed-form fit when ``smoothing_as="mode"``)."""
        return {name: factor.mode() for name, factor in self.factors.items()}

    def sd(self) -> dict:
        """Posterior standard deviations."""
        return {name: np.sqrt(factor.variance()) for name, factor in self.factors.items()}

    def sample(self, key, num_samples=1000) -> dict:
        """Independent posterior draws with the names and shapes of the closed-form parameters.

        Args:
            key: JAX PRNG key, int seed or ``numpy.random.Generator``.
            num_samples: number of draws, or a shape such as ``(chains, draws)``.

        Returns:
            Parameter name -> NumPy array of shape ``(num_samples,) + parameter shape`` (or
            ``num_samples + parameter shape`` for a tuple), in the statistics' precision.

        Raises:
            TypeError, ValueError: a count that is not an int >= 1.
            genprob._limits.SizeLimitError: draws beyond ``MAX_ARRAY_BYTES`` (or more than
                ``MAX_CHAINS`` leading rows of a tuple), refused before drawing.
        """
        shape = (num_samples,) if np.ndim(num_samples) == 0 else tuple(num_samples)
        shape = tuple(check_count(n, "num_samples") for n in shape)
        check_posterior_size(
            num_chains=math.prod(shape[:-1]),
            num_samples=shape[-1] if shape else 1,
            parameter_entries=sum(int(np.size(f.concentration)) for f in self.factors.values()),
            itemsize=max(np.asarray(f.concentration).dtype.itemsize for f in self.factors.values()),
            nuts=False,
        )
        rng = _numpy_rng(key)
        return {name: factor.sample(rng, shape) for name, factor in self.factors.items()}


def with_prior(story: Story, **overrides) -> Story:
    """A new story with prior hyperparameters replaced, e.g. ``class_concentration=2``.

    Every setting of the story may be overridden (``alpha``, ``beta``, ``mean_prior_scale``,
    ``covariance_prior_scale`` ...); ``class_concentration`` is the Dirichlet concentration of
    the class prior. Changing ``alpha`` changes the closed-form fit too, since smoothing *is* the
    prior. The story itself is unchanged (:meth:`Story.replace`).

    Raises:
        ValueError: for a name the story does not have, or a non-positive class concentration.
    """
    unknown = sorted(set(overrides) - set(story.fields()) - {"class_concentration"})
    if unknown:
        known = ", ".join(["class_concentration", *sorted(story.fields())])
        raise ValueError(
            f"{type(story).__name__} has no prior setting {unknown[0]!r}; known: {known}."
        )
    if "class_concentration" in overrides:
        value = float(overrides["class_concentration"])
        if not (np.isfinite(value) and value > 0):
            raise ValueError(f"class_concentration must be a number > 0, got {value!r}.")
        overrides = {**overrides, "class_concentration": value}
    return story.replace(**overrides)


def exact_posterior(
    story: Story,
    X,
    y,
    *,
    num_classes: int | None = None,
    class_concentration: float | None = None,
    smoothing_as: str = "mode",
) -> ExactPosterior:
    r"""Exact posterior of a conjugate story on fully labeled data.

    The class prior gets ``Dirichlet(N_k + a)`` (``a`` = the story's ``class_concentration``,
    1 by default), the emission parameters the conjugate update of the story's prior with the
    statistics of :func:`genprob.core.sufficient_statistics`: ``Beta(c + α + 1, N - c + α + 1)``
    (Bernoulli), ``Dirichlet(c + α + 1)`` (categorical, multinomial), ``Gamma(S + α + 1, N +
    β)`` (Poisson). Their modes are the smoothed closed-form fit.

    Args:
        story: a Bernoulli, categorical, multinomial or Poisson story, or a mixed story of them.
        X: features (n, D) (dense, or a BCOO matrix).
        y: class codes (n,) in 0..K-1; every row labeled.
        num_classes: K (default: inferred from ``y``).
        class_concentration: Dirichlet concentration of the class prior's prior (default: the
            story's ``class_concentration``).
        smoothing_as: ``"mode"`` — the story's prior (what NUTS samples), the smoothed fit is the
            posterior mode; ``"mean"`` — prior concentrations α (and ``a - 1`` for the class
            prior), the smoothed fit is the posterior mean.

    Returns:
        An :class:`ExactPosterior`; ``.sample(key, n)`` draws.

    Raises:
        ValueError: unlabeled rows (no conjugate posterior: use ``method="nuts"``), a story
            without conjugate prior (Gaussian), or a prior with a zero concentration where the
            data add nothing (``smoothing_as="mean"`` with α = 0).
    """
    if smoothing_as not in SMOOTHING_READINGS:
        raise ValueError(f"smoothing_as must be 'mode' or 'mean', got {smoothing_as!r}.")
    if class_concentration is not None:
        story = with_prior(story, class_concentration=class_concentration)
    if not has_exact_posterior(story):
        raise _no_exact_posterior_error(story)
    X = check_features(X, keep_sparse=True, to_device=True, allow_nan=reads_nan_as_missing(story))
    codes, num_classes = encode_partial_labels(np.asarray(y), num_classes=num_classes)
    if codes.shape[0] != X.shape[0]:
        raise ValueError(f"y has {codes.shape[0]} rows but X has {X.shape[0]}.")
    if np.any(codes < 0):
        raise _unlabeled_rows_error(int(np.sum(codes < 0)))
    story.validate(X)
    offset = 1.0 if smoothing_as == "mode" else 0.0
    R = core.one_hot_responsibilities(codes, num_classes, dtype=X.dtype)
    stats = jax.tree_util.tree_map(np.asarray, core.sufficient_statistics(story, X, R))
    # Dirichlet(a) prior on the class prior: mode reading a, mean reading a - 1 pseudo-counts
    class_pseudo_counts = float(story.class_concentration) - 1.0 + offset
    factors = {CLASS_PRIOR: dirichlet(stats["class_counts"] + class_pseudo_counts)}
    factors.update(story.conjugate_factors(stats["emission"], offset))
    for name, factor in factors.items():
        values = [factor.concentration] + ([] if factor.second is None else [factor.second])
        mask = factor._mask
        if not all(np.all(np.where(mask, v > 0, True)) for v in values):
            raise ValueError(
                f"the posterior of {name!r} has a zero concentration (a prior pseudo-count of 0 "
                f"where the data has none): it is improper. Use smoothing_as='mode' or a "
                f"positive alpha / class_concentration."
            )
    return ExactPosterior(story, factors, num_classes, int(X.shape[1]), smoothing_as)
