"""The story contract: a generative classifier as a NumPyro program.

A *story* tells how one labelled data point is generated:

1. pick a class ``y ~ Categorical(class_prior)`` (a Bernoulli draw when K = 2);
2. generate the features ``x | y ~ emission[y]``.

A :class:`Story` subclass provides

* :meth:`Story.prior` — a NumPyro function sampling the emission's named parameters
  (with their constraints, which is what optimizers and NUTS use);
* :meth:`Story.emission` — a distribution with batch shape ``(K,)`` and event shape ``(D,)``;

and, optionally, a closed form:

* :meth:`Story.sufficient_statistics` of a responsibility matrix ``R`` (n, K) — one-hot rows for
  labels, soft rows for EM, rows scaled by sample weights — returning a pytree that *adds up* over
  data chunks;
* :meth:`Story.maximize` — the closed-form M-step from those statistics.

Everything else (scoring, prediction, sampling, the NumPyro model, parameter counts) is generic
and lives in :mod:`genprob.core`; a user-written story that only gives a prior and an emission
still gets all of it.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
from numpyro.distributions import constraints
from numpyro.distributions.transforms import biject_to

__all__ = ["Story", "ClassConditional", "class_distribution", "CLASS_PRIOR"]

#: Name of the class-prior parameter (a probability vector over the K classes).
CLASS_PRIOR = "class_prior"


class Story:
    """Base class of a generative story: class prior, then class-conditional features.

    Subclasses set :attr:`name` and implement :meth:`prior` and :meth:`emission`; closed-form
    stories also implement :meth:`sufficient_statistics` and :meth:`maximize`.

    Attributes:
        name: short identifier used by the CLI and in reports.
        class_concentration: Dirichlet concentration of the class prior's prior (1 = uniform).
    """

    name = "story"
    class_concentration = 1.0
    #: True when :meth:`sufficient_statistics` is cheaper on rows grouped by class (hard labels).
    #: Statistics are sums over rows, so estimators may reorder the rows by class first.
    groups_rows_by_class = False

    # -- required ------------------------------------------------------------------------------
    def prior(self, num_classes: int, num_features: int) -> dict:
        """Sample the emission's named parameters with ``numpyro.sample``; return them as a dict."""
        raise NotImplementedError

    def emission(self, params: dict) -> dist.Distribution:
        """Class-conditional distribution with batch shape ``(K,)`` and event shape ``(D,)``."""
        raise NotImplementedError

    # -- optional closed form --------------------------------------------------------------------
    def sufficient_statistics(self, X, R) -> dict:
        """Additive statistics of data ``X`` (n, D) weighted by responsibilities ``R`` (n, K)."""
        raise NotImplementedError

    def maximize(self, stats: dict) -> dict:
        """Closed-form M-step: emission parameters maximizing the (penalized) likelihood."""
        raise NotImplementedError

    def combine_statistics(self, stats_a: dict, stats_b: dict) -> dict:
        """Statistics of the union of two data chunks from the statistics of each chunk.

        The default adds them leaf by leaf, which is right for sums over rows. Stories whose
        statistics are taken about a chunk-dependent reference point override it (see
        ``GaussianStory``); stories whose statistics do not combine raise ``ValueError``.
        """
        return jax.tree_util.tree_map(jnp.add, stats_a, stats_b)

    def log_penalty(self, params: dict, stats: dict):
        """Log density (up to a constant) of the prior that the closed form's regularization is.

        A smoothed or regularized closed form is the maximizer of ``log_likelihood + log_penalty``
        (a MAP estimate); plain MLE has penalty 0. ``stats`` are the emission statistics of the
        fitted data, since some regularizers scale with the class counts. The optimizer
        cross-check maximizes the same penalized objective.
        """
        return 0.0

    @property
    def has_closed_form(self) -> bool:
        """True when the story overrides both :meth:`sufficient_statistics` and :meth:`maximize`."""
        cls = type(self)
        return (
            cls.sufficient_statistics is not Story.sufficient_statistics
            and cls.maximize is not Story.maximize
        )

    # -- optional hooks --------------------------------------------------------------------------
    def check_parameters(self, params: dict, class_names=None, feature_names=None) -> None:
        """Raise ``ValueError`` naming the problem when fitted parameters define no distribution.

        Called on every closed-form and EM fit. The default requires every floating-point
        parameter to be finite; stories with constrained parameters that a closed form can put on
        the boundary (a zero variance, say) override it and say which class and feature.
        """
        for name, value in params.items():
            value = np.asarray(value)
            if value.dtype.kind == "f" and not np.all(np.isfinite(value)):
                raise ValueError(
                    f"the fitted parameter {name!r} has non-finite entries: the data do not "
                    f"determine it (a class without rows, or a degenerate feature?)."
                )

    def validate(self, X):
        """Check that ``X`` lies in the emission's support; raise ``ValueError`` naming the problem.

        The default accepts any finite real matrix (checked by the caller).
        """
        return X

    def num_parameters(self, num_classes: int, num_features: int) -> int:
        """Number of free parameters, class prior included (K − 1 of them).

        The default counts the unconstrained dimensions of every site sampled by :meth:`prior`,
        so a user story gets a correct count as long as its constraints are honest.
        """
        with numpyro.handlers.seed(rng_seed=0), numpyro.handlers.trace() as tr:
            self.prior(num_classes, num_features)
        count = num_classes - 1
        for site in tr.values():
            if site["type"] == "sample" and not site["is_observed"]:
                shape = biject_to(site["fn"].support).inverse_shape(jnp.shape(site["value"]))
                count += math.prod(shape)
        return int(count)

    # Stories are static arguments of jitted functions: equal configurations share compiled code.
    def _identity(self):
        return (type(self), tuple(sorted((k, _freeze(v)) for k, v in vars(self).items())))

    def __eq__(self, other):
        return type(self) is type(other) and self._identity() == other._identity()

    def __hash__(self):
        return hash(self._identity())

    def __repr__(self) -> str:
        fields = ", ".join(f"{k}={v!r}" for k, v in vars(self).items() if not k.startswith("_"))
        return f"{type(self).__name__}({fields})"


def _freeze(value):
    """Hashable view of a story attribute (lists, dicts and arrays become tuples)."""
    if isinstance(value, dict):
        return tuple(sorted((k, _freeze(v)) for k, v in value.items()))
    if isinstance(value, (list, tuple)):
        return tuple(_freeze(v) for v in value)
    if hasattr(value, "tolist") and hasattr(value, "shape"):
        return ("array", _freeze(value.tolist()) if value.shape else value.item())
    return value


def class_distribution(class_prior) -> dist.Distribution:
    """Distribution of the class label: Bernoulli for two classes, categorical otherwise."""
    if class_prior.shape[-1] == 2:
        return dist.Bernoulli(probs=class_prior[..., 1])
    return dist.Categorical(probs=class_prior)


class ClassConditional(dist.Distribution):
    """Features of each row given its class, with the class summed out where it is unknown.

    For row i with label ``labels[i] = k >= 0`` the density is ``p(x_i | k)``; for an unlabeled row
    (``labeled[i]`` false) it is the mixture ``sum_k pi_k p(x_i | k)``. Combined with the label site
    (which contributes ``log pi_k`` on labeled rows only) the model's log density is the marginal
    log-likelihood of a partly labeled data set.

    Args:
        emission: distribution with batch shape ``(K,)`` and event shape ``(D,)``.
        labels: integer array (n,), any value on unlabeled rows.
        labeled: boolean array (n,) or None (all labeled).
        class_log_prior: log class probabilities (K,), needed only when some rows are unlabeled.
    """

    arg_constraints = {}
    pytree_data_fields = ("emission", "labels", "labeled", "class_log_prior")

    def __init__(self, emission, labels, labeled=None, class_log_prior=None, *, validate_args=None):
        self.emission = emission
        self.labels = labels
        self.labeled = labeled
        self.class_log_prior = class_log_prior
        super().__init__(
            batch_shape=jnp.shape(labels),
            event_shape=emission.event_shape,
            validate_args=validate_args,
        )

    @constraints.dependent_property(is_discrete=False, event_dim=1)
    def support(self):
        return self.emission.support

    def log_prob(self, value):
        by_class = self.emission.log_prob(jnp.expand_dims(value, -1 - len(self.event_shape)))
        chosen = jnp.take_along_axis(by_class, self.labels[..., None], axis=-1)[..., 0]
        if self.labeled is None:
            return chosen
        marginal = jax.nn.logsumexp(by_class + self.class_log_prior, axis=-1)
        return jnp.where(self.labeled, chosen, marginal)

    def sample(self, key, sample_shape=()):
        # Draw every class's features and keep the row's own class: K-fold work, but sampling is
        # not a hot path and it needs nothing from the emission beyond ``sample``.
        shape = tuple(sample_shape) + self.batch_shape
        draws = self.emission.sample(key, shape)  # shape + (K,) + event
        index = jnp.broadcast_to(self.labels, shape)
        index = index.reshape(shape + (1,) * (1 + len(self.event_shape)))
        return jnp.take_along_axis(draws, index, axis=len(shape))[..., 0, :]
