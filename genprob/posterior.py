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

Draws (exact or NUTS) are dicts of arrays with the parameter names of the closed-form fit and a
leading batch shape (draws, or chains x draws). :func:`pointwise_log_likelihood` and
:func:`posterior_predict_proba` evaluate them through :func:`genprob.core.joint_log_prob`,
mapped over the draws (no Python loop). :func:`estimator_posterior` is what
``estimator.posterior(...)`` runs.
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass, field
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
import numpyro.distributions as dist
import scipy.sparse
import scipy.special
from sklearn.utils import check_random_state

from genprob import core
from genprob._dtype import precision
from genprob.em import as_features, encode_partial_labels, unlabeled_mask
from genprob.families.bernoulli import BernoulliStory
from genprob.families.categorical import CategoricalStory, PaddedDirichlet, category_mask
from genprob.families.gaussian import GaussianStory
from genprob.families.mixed import MixedStory
from genprob.families.multinomial import MultinomialStory
from genprob.families.poisson import VAGUE_RATE, PoissonStory
from genprob.mcmc import run_nuts
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
    "estimator_posterior",
    "METHODS",
]

#: Accepted values of ``method`` in ``estimator.posterior``.
METHODS = ("nuts", "exact")
#: Readings of the smoothing α as a prior (see the module docstring).
SMOOTHING_READINGS = ("mode", "mean")
#: Draws evaluated together when mapping over posterior draws (bounds memory at batch * n * K).
DRAW_BATCH = 256


# -- conjugate factors ---------------------------------------------------------------------------
@dataclass(frozen=True)
class ConjugateFactor:
    """The posterior of one named parameter: a product of independent Beta, Gamma or Dirichlet
    distributions whose batch and event shapes together are the parameter's shape.

    Parameters are held as NumPy arrays (in the precision of the statistics they came from), so
    moments do not depend on the JAX precision in force when they are asked for.

    Attributes:
        kind: ``"beta"`` (``concentration1``, ``concentration0``), ``"gamma"`` (shape
            ``concentration``, ``rate``) or ``"dirichlet"`` (``concentration`` over the last
            axis; a padded categorical table has ``n_categories`` and zero padding).
        concentration: first shape parameter (array shaped like the parameter).
        second: ``concentration0`` (beta) or ``rate`` (gamma); None for a Dirichlet.
        n_categories: category count of each row of a padded table, else None.
    """

    kind: str
    concentration: np.ndarray
    second: np.ndarray | None = None
    n_categories: tuple | None = None

    def __post_init__(self):
        concentration = np.asarray(self.concentration)
        object.__setattr__(self, "concentration", concentration)
        if self.second is not None:
            second = np.broadcast_to(
                np.asarray(self.second, concentration.dtype), concentration.shape
            )
            object.__setattr__(self, "second", second)

    @property
    def _mask(self) -> np.ndarray:
        if self.n_categories is None:
            return np.ones(self.concentration.shape[-1:], bool)
        return category_mask(self.n_categories)

    def parameters(self) -> dict:
        """The distribution's parameters by their NumPyro names."""
        if self.kind == "beta":
            return {"concentration1": self.concentration, "concentration0": self.second}
        if self.kind == "gamma":
            return {"concentration": self.concentration, "rate": self.second}
        return {"concentration": self.concentration}

    def distribution(self) -> dist.Distribution:
        """The factor as a NumPyro distribution with event shape = the parameter's shape."""
        a = self.concentration
        if self.kind == "beta":
            return dist.Beta(a, self.second).to_event(a.ndim)
        if self.kind == "gamma":
            return dist.Gamma(a, self.second).to_event(a.ndim)
        if self.n_categories is not None:
            return PaddedDirichlet(a, self.n_categories).to_event(a.ndim - 2)
        return dist.Dirichlet(a).to_event(a.ndim - 1)

    def mean(self) -> np.ndarray:
        """Posterior mean."""
        a = self.concentration
        if self.kind == "beta":
            return a / (a + self.second)
        if self.kind == "gamma":
            return a / self.second
        a = np.where(self._mask, a, 0.0).astype(a.dtype)
        return a / a.sum(axis=-1, keepdims=True)

    def variance(self) -> np.ndarray:
        """Posterior variance (entrywise)."""
        a = self.concentration
        if self.kind == "beta":
            total = a + self.second
            return a * self.second / (total**2 * (total + 1.0))
        if self.kind == "gamma":
            return a / self.second**2
        mean = self.mean()
        total = np.where(self._mask, a, 0.0).astype(a.dtype).sum(axis=-1, keepdims=True)
        return mean * (1.0 - mean) / (total + 1.0)

    def mode(self) -> np.ndarray:
        """Posterior mode; NaN where it is not unique or lies where the density is unbounded
        (a concentration below 1, or a flat Beta(1, 1))."""
        a = self.concentration
        with np.errstate(divide="ignore", invalid="ignore"):
            if self.kind == "beta":
                b = self.second
                ok = (a >= 1) & (b >= 1) & (a + b > 2)
                return np.where(ok, (a - 1.0) / (a + b - 2.0), np.nan).astype(a.dtype)
            if self.kind == "gamma":
                return np.where(a >= 1, (a - 1.0) / self.second, np.nan).astype(a.dtype)
            mask = self._mask
            excess = np.where(mask, a - 1.0, 0.0)
            total = excess.sum(axis=-1, keepdims=True)
            ok = np.all(np.where(mask, a >= 1, True), axis=-1, keepdims=True) & (total > 0)
            mode = np.where(ok, excess / total, np.nan)
            # a row with a single category is the constant 1 whatever the counts
            single = mask.sum(axis=-1, keepdims=True) == 1
            return np.where(single, mask, mode).astype(a.dtype)

    def sample(self, rng: np.random.Generator, sample_shape=()) -> np.ndarray:
        """Independent draws, shape ``sample_shape + parameter shape``, as a NumPy array.

        Drawn on the host with NumPy: JAX's Gamma sampler takes seconds to compile for every
        new shape, NumPy's costs nothing, and these draws need no gradients. Beta and Dirichlet
        draws are normalized log-Gamma variates, so tiny concentrations do not underflow.
        """
        sample_shape = tuple(sample_shape)
        a = np.asarray(self.concentration, dtype=np.float64)
        dtype = self.concentration.dtype
        if self.kind == "gamma":
            shape = sample_shape + a.shape
            rate = self.second.astype(np.float64)
            return (rng.standard_gamma(np.broadcast_to(a, shape)) / rate).astype(dtype)
        if self.kind == "beta":
            pair = np.stack([a, np.asarray(self.second, dtype=np.float64)], axis=-1)
            log_gamma = _log_gamma_variates(rng, np.broadcast_to(pair, sample_shape + pair.shape))
            difference = log_gamma[..., 0] - log_gamma[..., 1]
            return scipy.special.expit(difference).astype(dtype)
        mask = self._mask
        alpha = np.broadcast_to(np.where(mask, a, 1.0), sample_shape + a.shape)
        log_gamma = np.where(mask, _log_gamma_variates(rng, alpha), -np.inf)
        log_gamma = log_gamma - log_gamma.max(axis=-1, keepdims=True)
        weights = np.exp(log_gamma)
        return (weights / weights.sum(axis=-1, keepdims=True)).astype(dtype)


def _log_gamma_variates(rng: np.random.Generator, shape_parameter) -> np.ndarray:
    """``log G`` with ``G ~ Gamma(a, 1)``, accurate for tiny ``a``.

    For ``a < 1``, ``G = G' U^(1/a)`` with ``G' ~ Gamma(a + 1)`` and ``U`` uniform, so
    ``log G = log G' + log(U) / a`` never underflows.
    """
    a = np.asarray(shape_parameter, dtype=np.float64)
    small = a < 1.0
    log_g = np.log(rng.standard_gamma(np.where(small, a + 1.0, a)))
    boost = np.log(rng.uniform(size=a.shape)) / np.where(small, a, 1.0)
    return log_g + np.where(small, boost, 0.0)


def _numpy_rng(key) -> np.random.Generator:
    """A NumPy generator from a JAX PRNG key, an int seed or a Generator."""
    if isinstance(key, np.random.Generator):
        return key
    if isinstance(key, (int, np.integer)):
        return np.random.default_rng(int(key))
    data = jax.random.key_data(key) if jnp.issubdtype(key.dtype, jax.dtypes.prng_key) else key
    return np.random.default_rng(np.asarray(data, dtype=np.uint32).ravel().tolist())


def _dirichlet(concentration, n_categories=None) -> ConjugateFactor:
    return ConjugateFactor("dirichlet", concentration, None, n_categories)


def _emission_factors(story: Story, stats: dict, offset: float) -> dict:
    """Posterior factors of the emission parameters from the story's sufficient statistics
    (NumPy arrays).

    ``offset`` is 1 for the story's prior (concentrations α + 1: the smoothed fit is the mode)
    and 0 for the prior whose mean the smoothed fit is (concentrations α).
    """
    if isinstance(story, BernoulliStory):
        on = stats["feature_counts"]
        counts = stats["counts"][:, None]
        alpha = np.asarray(story.alpha, on.dtype) + offset
        return {"probs": ConjugateFactor("beta", on + alpha, counts - on + alpha)}
    if isinstance(story, PoissonStory):
        sums, counts = stats["feature_sums"], stats["counts"][:, None]
        if offset:
            # the NumPyro prior of PoissonStory: Gamma(alpha + 1, beta), vague rate when beta = 0
            shape, rate = story.alpha + 1.0, story.beta if story.beta > 0 else VAGUE_RATE
        else:
            shape, rate = story.alpha, story.beta
        return {"rates": ConjugateFactor("gamma", sums + shape, counts + rate)}
    if isinstance(story, MultinomialStory):
        counts = stats["feature_counts"]
        alpha = np.asarray(story.alpha, counts.dtype) + offset
        return {"probs": _dirichlet(counts + alpha)}
    if isinstance(story, CategoricalStory):
        counts = stats["category_counts"]
        mask = category_mask(story.n_categories, counts.dtype)
        return {"probs": _dirichlet((counts + story.alpha + offset) * mask, story.n_categories)}
    if isinstance(story, MixedStory):
        factors = {}
        for name, block, _ in story.blocks:
            inner = _emission_factors(block, stats[name], offset)
            factors.update({f"{name}.{key}": value for key, value in inner.items()})
        return factors
    raise _no_exact_posterior_error(story)


def _no_exact_posterior_error(story: Story, where: str = "") -> ValueError:
    """The error explaining why ``story`` (or its first non-conjugate block) has no exact
    posterior."""
    if isinstance(story, MixedStory):
        for name, block, _ in story.blocks:
            if not has_exact_posterior(block):
                return _no_exact_posterior_error(
                    block, where=f"block {name!r} of the mixed story: "
                )
    if isinstance(story, GaussianStory):
        reason = (
            "its prior (independent Normal means and inverse-Wishart/inverse-Gamma spreads) is "
            "only conditionally conjugate"
        )
    else:
        reason = (
            "exact posteriors are available for the class prior and the Bernoulli, categorical, "
            "multinomial and Poisson families (and mixed stories made of them)"
        )
    return ValueError(
        f"{where}{type(story).__name__} has no exact (conjugate) posterior: {reason}. Use "
        f"method='nuts' (genprob.fit_nuts) instead."
    )


def _unlabeled_rows_error(count: int) -> ValueError:
    return ValueError(
        f"y has {count} unlabeled rows (-1): summing their class out makes the posterior a "
        f"mixture with no closed form, so there is no exact posterior. Use method='nuts' "
        f"(estimator.posterior(X, y, method='nuts') or genprob.fit_nuts)."
    )


def has_exact_posterior(story: Story) -> bool:
    """True when :func:`exact_posterior` supports the story (every block conjugate)."""
    if isinstance(story, MixedStory):
        return all(has_exact_posterior(block) for _, block, _ in story.blocks)
    return isinstance(story, (BernoulliStory, PoissonStory, MultinomialStory, CategoricalStory))


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
        """
        shape = (int(num_samples),) if np.ndim(num_samples) == 0 else tuple(num_samples)
        rng = _numpy_rng(key)
        return {name: factor.sample(rng, shape) for name, factor in self.factors.items()}


def with_prior(story: Story, **overrides) -> Story:
    """A copy of ``story`` with prior hyperparameters replaced, e.g. ``class_concentration=2``.

    Every attribute of the story may be overridden (``alpha``, ``beta``, ``mean_prior_scale``,
    ``covariance_prior_scale`` ...); ``class_concentration`` is the Dirichlet concentration of
    the class prior. Changing ``alpha`` changes the closed-form fit too, since smoothing *is* the
    prior.

    Raises:
        ValueError: for a name the story does not have, or a non-positive class concentration.
    """
    if not overrides:
        return story
    changed = copy.copy(story)
    for name, value in overrides.items():
        if name != "class_concentration" and name not in vars(story):
            known = ", ".join(["class_concentration", *sorted(vars(story))])
            raise ValueError(
                f"{type(story).__name__} has no prior setting {name!r}; known: {known}."
            )
        if name == "class_concentration":
            value = float(value)
            if not (np.isfinite(value) and value > 0):
                raise ValueError(f"class_concentration must be a number > 0, got {value!r}.")
        setattr(changed, name, value)
    return changed


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
    X = as_features(X)
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
    factors = {CLASS_PRIOR: _dirichlet(stats["class_counts"] + class_pseudo_counts)}
    factors.update(_emission_factors(story, stats["emission"], offset))
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


# -- evaluating draws ----------------------------------------------------------------------------
def flatten_draws(draws: dict):
    """Draws with any leading batch shape as ``(flat draws, batch_shape)`` (one draw axis)."""
    class_prior = jnp.asarray(draws[CLASS_PRIOR])
    batch_shape = class_prior.shape[:-1]
    ndim = len(batch_shape)
    size = math.prod(batch_shape)
    flat = {k: jnp.reshape(jnp.asarray(v), (size,) + jnp.shape(v)[ndim:]) for k, v in draws.items()}
    return flat, batch_shape


@partial(jax.jit, static_argnums=(0, 4))
def _map_log_likelihood(story, flat, X, codes, batch_size):
    def one(params):
        return core.log_likelihood(story, params, X, codes, pointwise=True)

    return jax.lax.map(one, flat, batch_size=batch_size)


@partial(jax.jit, static_argnums=(0, 3))
def _map_predict_proba(story, flat, X, batch_size):
    return jax.lax.map(
        lambda params: core.predict_proba(story, params, X), flat, batch_size=batch_size
    )


def pointwise_log_likelihood(story: Story, draws: dict, X, y=None) -> jax.Array:
    """Per-row log-likelihood at every draw: ``log p(x_i, y_i | θ_s)`` on labeled rows and the
    marginal ``log Σ_k p(x_i, k | θ_s)`` on unlabeled ones (y = -1, or every row when y is None).

    Computed by :func:`genprob.core.log_likelihood` mapped over the draws (batches of
    ``DRAW_BATCH``), never a Python loop.

    Args:
        story: the story.
        draws: parameter draws with a leading batch shape (draws, or chains x draws).
        X: features (n, D).
        y: class codes (n,) with -1 for unlabeled rows, or None.

    Returns:
        Array of shape ``batch_shape + (n,)``.
    """
    X = as_features(X)
    codes = jnp.full(X.shape[0], -1, jnp.int32) if y is None else jnp.asarray(y, jnp.int32)
    flat, batch_shape = flatten_draws(draws)
    size = math.prod(batch_shape)
    values = _map_log_likelihood(story, flat, X, codes, min(DRAW_BATCH, max(size, 1)))
    return values.reshape(batch_shape + (X.shape[0],))


def posterior_predict_proba(story: Story, draws: dict, X) -> jax.Array:
    """Class probabilities ``p(y = k | x_i, θ_s)`` at every draw, shape ``batch + (n, K)``.

    Their mean over draws is the posterior predictive ``p(y = k | x_i, X, y)``; the plug-in
    probabilities use one θ (the MLE) instead.
    """
    X = as_features(X)
    flat, batch_shape = flatten_draws(draws)
    size = math.prod(batch_shape)
    values = _map_predict_proba(story, flat, X, min(DRAW_BATCH, max(size, 1)))
    return values.reshape(batch_shape + values.shape[1:])


# -- the estimator method ------------------------------------------------------------------------
def _check_count(name, value, minimum):
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}.")
    return int(value)


def estimator_posterior(
    estimator,
    X,
    y,
    *,
    method: str = "nuts",
    num_samples: int = 1000,
    num_warmup: int = 1000,
    num_chains: int = 2,
    random_state=None,
    progress_bar: bool = False,
    prior: dict | None = None,
    **nuts_kwargs,
):
    """Implementation of :meth:`GenerativeClassifierBase.posterior` (see there)."""
    from genprob.arviz_io import to_arviz  # arviz_io imports this module's helpers

    if method not in METHODS:
        raise ValueError(f"method must be 'nuts' or 'exact', got {method!r}.")
    num_samples = _check_count("num_samples", num_samples, 1)
    num_chains = _check_count("num_chains", num_chains, 1)
    num_warmup = _check_count("num_warmup", num_warmup, 0)
    if prior is not None and not isinstance(prior, dict):
        raise ValueError(f"prior must be a dict of story settings, got {prior!r}.")
    y = np.asarray(y)
    if method == "exact" and np.any(unlabeled_mask(y)):
        raise _unlabeled_rows_error(int(np.sum(unlabeled_mask(y))))
    if not hasattr(estimator, "params_"):
        estimator.fit(X, y)
    X = estimator._check_X(X)
    if y.shape != (X.shape[0],):
        raise ValueError(f"y has shape {y.shape}; expected ({X.shape[0]},) to match X.")
    codes = estimator._label_codes(y, unlabeled_mask(y))
    story = with_prior(estimator.story_, **(prior or {}))
    if method == "exact" and not has_exact_posterior(story):
        raise _no_exact_posterior_error(story)
    num_classes = len(estimator.classes_)
    seed = int(check_random_state(random_state).randint(0, 2**31 - 1))
    feature_names = getattr(estimator, "feature_names_in_", None)
    if feature_names is not None and len(feature_names) != X.shape[1]:
        feature_names = None
    with precision(estimator._dtype):
        if method == "nuts" and scipy.sparse.issparse(X):
            X = X.toarray()  # the NumPyro model scores dense rows
        Xj = estimator._as_array(X)
        if method == "exact":
            exact = exact_posterior(story, Xj, codes, num_classes=num_classes)
            posterior = exact.sample(seed, (num_chains, num_samples))
        else:
            # Vectorized chains initialize inside one compiled function; sequential ones run
            # NumPyro's initialization eagerly, op by op, which costs more than it samples on
            # small and medium data.
            nuts_kwargs.setdefault("chain_method", "vectorized" if num_chains > 1 else "sequential")
            nuts_kwargs.setdefault(
                "extra_fields",
                ("diverging", "accept_prob", "num_steps", "energy", "potential_energy"),
            )
            posterior = run_nuts(
                story,
                Xj,
                codes,
                num_classes=num_classes,
                num_warmup=num_warmup,
                num_samples=num_samples,
                num_chains=num_chains,
                seed=seed,
                progress_bar=progress_bar,
                **nuts_kwargs,
            )
        return to_arviz(
            posterior,
            story,
            Xj,
            codes,
            mle=estimator.params_,
            classes=estimator.classes_,
            feature_names=feature_names,
            method=method,
        )
