"""Posteriors of a story's parameters: exact conjugate updates, NUTS, and draws put to use."""

from __future__ import annotations

import inspect
import math
from dataclasses import dataclass

import jax
import numpy as np

from genprob import core
from genprob._lazy import LazyModule
from genprob.engine._limits import check_count, check_posterior_size
from genprob.engine._validation import check_features
from genprob.engine.capabilities import has_exact_posterior
from genprob.engine.em import encode_partial_labels
from genprob.engine.masking import reads_nan_as_missing
from genprob.inference.conjugate import ConjugateFactor, _numpy_rng, dirichlet
from genprob.inference.draws import flatten_draws, pointwise_log_likelihood, posterior_predict_proba
from genprob.story import CLASS_PRIOR, Story, nested_stories

dist = LazyModule("numpyro.distributions")

__all__ = [
    "ConjugateFactor",
    "ExactPosterior",
    "exact_posterior",
    "posterior_from_statistics",
    "log_evidence",
    "has_exact_posterior",
    "with_prior",
    "conjugate_story",
    "pointwise_log_likelihood",
    "posterior_predict_proba",
    "flatten_draws",
    "METHODS",
]

#: Accepted values of ``method`` in ``estimator.posterior``.
METHODS = ("nuts", "exact")
#: Readings of the smoothing α as a prior (docs/reference/posterior.md).
SMOOTHING_READINGS = ("mode", "mean")


def _no_exact_posterior_error(story: Story) -> ValueError:
    """The error naming the story (or the block it holds) without a conjugate update."""
    lacking = story
    while inner := [s for s in nested_stories(lacking) if not has_exact_posterior(s)]:
        lacking = inner[0]
    held = "" if lacking is story else f" (it holds a {type(lacking).__name__})"
    return ValueError(
        f"{type(story).__name__} has no exact (conjugate) posterior{held}: "
        f"{type(lacking).__name__} does not provide a conjugate update (conjugate_factors)"
        + (
            " under its default prior; priors='conjugate' chooses its conjugate prior"
            if hasattr(lacking, "conjugate_prior")
            else ""
        )
        + ". Use method='nuts' (genprob.fit_nuts) instead."
    )


def _unlabeled_rows_error(count: int) -> ValueError:
    return ValueError(
        f"y has {count} unlabeled rows (-1): summing their class out makes the posterior a "
        f"mixture with no closed form, so there is no exact posterior. Use method='nuts' "
        f"(estimator.posterior(X, y, method='nuts') or genprob.fit_nuts)."
    )


def checked_rows(X, y, num_classes, allow_nan: bool = False):
    """Checked features (on the device) and the codes of their labels (``y`` None: unlabeled)."""
    X = check_features(X, keep_sparse=True, to_device=True, allow_nan=allow_nan)
    y = np.full(X.shape[0], -1) if y is None else y
    codes, num_classes = encode_partial_labels(y, num_classes=num_classes)
    if codes.shape[0] != X.shape[0]:
        raise ValueError(f"y has {codes.shape[0]} rows but X has {X.shape[0]}.")
    return X, codes, num_classes


# -- the exact posterior -------------------------------------------------------------------------
@dataclass(frozen=True)
class ExactPosterior:
    """Closed-form posterior of every parameter (independent factors, class prior included).

    Attributes:
        story: the story (with the class concentration the posterior used).
        factors: parameter name -> :class:`ConjugateFactor`.
        smoothing_as: ``"mode"`` (the story's prior) or ``"mean"``.
    """

    story: Story
    factors: dict
    num_classes: int
    num_features: int
    smoothing_as: str = "mode"

    def _each(self, method) -> dict:
        """``method(factor)`` of every factor by parameter name (a joint factor gives a dict)."""
        out = {}
        for key, factor in self.factors.items():
            value = method(factor)
            out.update(value if isinstance(key, tuple) else {key: value})
        return out

    def distributions(self) -> dict:
        """Parameter name -> NumPyro distribution (event shape = the parameter's shape)."""
        return self._each(lambda factor: factor.distribution())

    def parameters(self) -> dict:
        """Factor name -> the posterior distribution's parameters (``concentration`` ...)."""
        return {key: factor.parameters() for key, factor in self.factors.items()}

    def mean(self) -> dict:
        """Posterior means (the smoothed closed-form fit when ``smoothing_as="mean"``)."""
        return self._each(lambda factor: factor.mean())

    def mode(self) -> dict:
        """Posterior modes (the smoothed closed-form fit when ``smoothing_as="mode"``)."""
        return self._each(lambda factor: factor.mode())

    def sd(self) -> dict:
        """Posterior standard deviations."""
        return {k: np.sqrt(v) for k, v in self._each(lambda factor: factor.variance()).items()}

    def log_density(self, params: dict) -> float:
        """Posterior log density at ``params`` (class prior included)."""
        total = 0.0
        for key, factor in self.factors.items():
            value = {n: params[n] for n in key} if isinstance(key, tuple) else params[key]
            total += factor.log_prob(value)
        return total

    def predictive_log_joint(self, X) -> np.ndarray:
        """``log p(y = k, x | data)`` (n, K) of new rows under the closed-form posterior
        predictive (docs/reference/posterior.md)."""
        class_prior = self.factors[CLASS_PRIOR].mean()
        joint = np.log(class_prior)[None, :]
        for key, factor in self.factors.items():
            if key != CLASS_PRIOR:
                joint = joint + factor.log_predictive(X)
        return joint

    def sample(self, key, num_samples=1000) -> dict:
        """Independent posterior draws, parameter name -> NumPy array ``(num_samples,) +
        parameter shape`` (``num_samples`` may be a shape such as ``(chains, draws)``); ``key``
        is a JAX PRNG key, an int seed or a ``numpy.random.Generator``. A bad count or draws
        beyond the size limits are refused before drawing."""
        shape = (num_samples,) if np.ndim(num_samples) == 0 else tuple(num_samples)
        shape = tuple(check_count(n, "num_samples") for n in shape)
        means = self.mean()
        check_posterior_size(
            num_chains=math.prod(shape[:-1]),
            num_samples=shape[-1] if shape else 1,
            parameter_entries=sum(int(np.size(v)) for v in means.values()),
            itemsize=max(np.asarray(v).dtype.itemsize for v in means.values()),
            nuts=False,
        )
        rng = _numpy_rng(key)
        return self._each(lambda factor: factor.sample(rng, shape))


def conjugate_story(story: Story) -> Story:
    """The story under its conjugate prior (``priors="conjugate"``), scaled to the data where
    the family has a ``conjugate_prior`` setting; else the story itself."""
    if has_exact_posterior(story) or not hasattr(story, "conjugate_prior"):
        return story
    return story.replace(conjugate_prior="data")


def with_prior(story: Story, **overrides) -> Story:
    """A new story with prior settings replaced (any setting of the story, or
    ``class_concentration``, the class prior's Dirichlet concentration), e.g.
    ``class_concentration=2``; ValueError for an unknown name or a concentration <= 0."""
    settable = set(story.fields()) | set(inspect.signature(type(story).__init__).parameters)
    settable.discard("self")
    unknown = sorted(set(overrides) - settable - {"class_concentration"})
    if unknown:
        known = ", ".join(["class_concentration", *sorted(settable)])
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
    r"""Exact posterior of a conjugate story on fully labeled data (docs/reference/posterior.md).

    Args:
        story: a Bernoulli, categorical, multinomial or Poisson story, or a mixed story of them.
        X: features (n, D) (dense, or a BCOO matrix); y: class codes (n,), every row labeled.
        num_classes: K (default: inferred from ``y``).
        class_concentration: the class prior's Dirichlet concentration (default: the story's).
        smoothing_as: ``"mode"`` (the story's prior) or ``"mean"``.

    Returns:
        An :class:`ExactPosterior`; ``.sample(key, n)`` draws.

    Raises:
        ValueError: unlabeled rows, a story without a conjugate prior, or a zero concentration
            where the data add nothing.
    """
    if smoothing_as not in SMOOTHING_READINGS:
        raise ValueError(f"smoothing_as must be 'mode' or 'mean', got {smoothing_as!r}.")
    if class_concentration is not None:
        story = with_prior(story, class_concentration=class_concentration)
    return _labeled_posterior(story, X, y, num_classes, smoothing_as)[2]


def _labeled_posterior(story, X, y, num_classes, smoothing_as="mode"):
    """Checked features, label codes (every row labeled) and their exact posterior."""
    if not has_exact_posterior(story):
        raise _no_exact_posterior_error(story)
    X, codes, num_classes = checked_rows(X, y, num_classes, reads_nan_as_missing(story))
    if np.any(codes < 0):
        raise _unlabeled_rows_error(int(np.sum(codes < 0)))
    story.validate(X)
    R = core.one_hot_responsibilities(codes, num_classes, dtype=X.dtype)
    stats = core.sufficient_statistics(story, X, R)
    return X, codes, posterior_from_statistics(story, stats, int(X.shape[1]), smoothing_as)


def posterior_from_statistics(
    story: Story, stats: dict, num_features: int, smoothing_as: str = "mode"
) -> ExactPosterior:
    """The exact posterior from labeled statistics ``{"class_counts", "emission"}`` (as
    :func:`genprob.core.sufficient_statistics` and a fitted estimator's ``stats_`` hold them)."""
    if not has_exact_posterior(story):
        raise _no_exact_posterior_error(story)
    offset = 1.0 if smoothing_as == "mode" else 0.0
    stats = jax.tree_util.tree_map(np.asarray, stats)
    num_classes = int(np.shape(stats["class_counts"])[0])
    # Dirichlet(a) prior on the class prior: mode reading a, mean reading a - 1 pseudo-counts
    class_pseudo_counts = float(story.class_concentration) - 1.0 + offset
    factors = {CLASS_PRIOR: dirichlet(stats["class_counts"] + class_pseudo_counts)}
    factors.update(story.conjugate_factors(stats["emission"], offset))
    for name, factor in factors.items():
        if not isinstance(factor, ConjugateFactor):
            continue  # a joint factor checks itself
        values = [factor.concentration] + ([] if factor.second is None else [factor.second])
        mask = factor._mask
        if not all(np.all(np.where(mask, v > 0, True)) for v in values):
            raise ValueError(
                f"the posterior of {name!r} has a zero concentration (a prior pseudo-count of 0 "
                f"where the data has none): it is improper. Use smoothing_as='mode' or a "
                f"positive alpha / class_concentration."
            )
    return ExactPosterior(story, factors, num_classes, num_features, smoothing_as)


def log_evidence(story: Story, X, y, *, num_classes: int | None = None) -> float:
    r"""Exact log marginal likelihood ``log p(X, y)`` of labeled rows under the story's prior
    (docs/reference/posterior.md); ValueError as :func:`exact_posterior`."""
    from numpyro.infer.util import log_density

    X, codes, exact = _labeled_posterior(story, X, y, num_classes)
    theta = {k: np.asarray(v, np.float64) for k, v in exact.mean().items()}
    dtype = np.float64 if jax.config.jax_enable_x64 else np.float32
    likelihood = core.log_likelihood(
        story, {k: v.astype(dtype) for k, v in theta.items()}, X, codes
    )
    class_prior = theta.pop(CLASS_PRIOR)
    concentration = np.full(exact.num_classes, float(story.class_concentration))
    log_prior = float(dist.Dirichlet(concentration).log_prob(class_prior))
    log_prior += float(log_density(story.prior, (exact.num_classes, X.shape[1]), {}, theta)[0])
    return float(likelihood) + log_prior - exact.log_density({**theta, CLASS_PRIOR: class_prior})
