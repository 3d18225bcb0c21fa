"""NaN entries of X read as missing values: the story wrapper through which every generic path
reads NaN as "not observed" (fitting: :mod:`genprob.engine.missing`; docs/howto/missing.md)."""

from __future__ import annotations

import numpy as np
import scipy.sparse

from genprob._lazy import LazyModule, is_jax_array, lazy_attribute
from genprob.engine._validation import is_concrete
from genprob.engine.capabilities import capability, has_closed_form
from genprob.story import Story, why_not

jax = LazyModule("jax")
jnp = LazyModule("jax.numpy")

_emission = LazyModule("genprob.engine.masked_emission")


__all__ = ["Marginalized", "marginalized", "reads_nan_as_missing", "has_missing", "fill_missing"]

#: NumPyro classes, defined in their own module so that importing this one needs no NumPyro
__getattr__ = lazy_attribute(__name__, {"MaskedEmission": "genprob.engine.masked_emission"})


def has_missing(X) -> bool:
    """True when the concrete array ``X`` holds a NaN (False for tracers and sparse input)."""
    if not is_concrete(X) or not hasattr(X, "dtype"):
        return False
    if scipy.sparse.issparse(X):
        X = X.data
    if np.dtype(X.dtype).kind != "f":
        return False
    return bool(np.isnan(np.asarray(X)).any())


def fill_missing(X, value=0.0):
    """``(filled, observed)``: NaN replaced by ``value`` (in the support) and the observed mask."""
    observed = ~jnp.isnan(X)
    return jnp.where(observed, X, jnp.asarray(value, X.dtype)), observed


class Marginalized(Story):
    """``story`` (with the capability ``supports_missing``) with NaN entries of X read as missing
    and summed out of its density; same parameters. Build it with :func:`marginalized`; a story
    that cannot leave entries out raises ``ValueError`` with its reason."""

    name = "marginalized"

    def __init__(self, story: Story):
        if isinstance(story, Marginalized):
            story = story.story
        supported = capability(story, "supports_missing")
        if not supported:
            default = (
                f"{type(story).__name__} does not declare how to leave out missing entries "
                f"(supports_missing)"
            )
            raise ValueError(
                f"X has missing values (NaN), but they cannot be marginalized: "
                f"{why_not(supported, default)}."
            )
        self.story = story
        self.class_concentration = story.class_concentration

    # the story --------------------------------------------------------------------------------
    def prior(self, num_classes, num_features):
        return self.story.prior(num_classes, num_features)

    def emission(self, params):
        return _emission.MaskedEmission(self.story, params)

    def log_penalty(self, params, stats):
        return self.story.log_penalty(params, stats)

    @property
    def capabilities(self):
        return {
            "supports_missing": True,
            "adds_over_rows": has_closed_form(self) and capability(self.story, "adds_over_rows"),
        }

    # hooks -----------------------------------------------------------------------------------
    def check_parameters(self, params, class_names=None, feature_names=None):
        self.story.check_parameters(params, class_names, feature_names)

    def align_parameters(self, params, reference):
        return self.story.align_parameters(params, reference)

    def validate(self, X):
        """The story's check of the observed entries (NaN entries are missing, not values)."""
        if not is_concrete(X):
            return X
        if isinstance(X, np.ndarray) or is_jax_array(X):
            # on the host: an eager JAX fill would compile a program per shape
            values = np.asarray(X)
            missing = np.isnan(values) if values.dtype.kind == "f" else None
            if missing is not None and missing.any():
                values = np.where(missing, np.zeros((), values.dtype), values)
            self.story.validate(values)
            return X
        filled, _ = fill_missing(jnp.asarray(X))
        self.story.validate(filled)
        return X

    def observed_log_prob(self, params, X, observed):
        return self.story.observed_log_prob(params, X, observed)

    def observed_statistics(self, X, R, observed, params=None):
        return self.story.observed_statistics(X, R, observed, params)

    def num_parameters(self, num_classes, num_features):
        return self.story.num_parameters(num_classes, num_features)

    def parameter_dims(self, name, shape, num_classes, num_features):
        return self.story.parameter_dims(name, shape, num_classes, num_features)

    def coords(self, feature_names):
        return self.story.coords(feature_names)


class ObservedClosedForm(Marginalized):
    """:class:`Marginalized` of a story whose closed form counts observed entries only
    (:meth:`Story.observed_statistics`, not depending on the current parameters)."""

    def sufficient_statistics(self, X, R):
        filled, observed = fill_missing(X)
        return self.story.observed_statistics(filled, R, observed)

    def maximize(self, stats):
        return self.story.maximize(stats)

    def combine_statistics(self, stats_a, stats_b):
        return self.story.combine_statistics(stats_a, stats_b)

    def conjugate_factors(self, stats, offset):
        return self.story.conjugate_factors(stats, offset)


def marginalized(story: Story) -> Marginalized:
    """``story`` reading NaN entries as missing (see :class:`Marginalized`)."""
    if isinstance(story, Marginalized):
        return story
    if (
        has_closed_form(story)
        and not capability(story, "missing_needs_em")
        and type(story).observed_statistics is not Story.observed_statistics
    ):
        return ObservedClosedForm(story)
    return Marginalized(story)


def reads_nan_as_missing(story: Story) -> bool:
    """True when the story's own scoring reads NaN entries as missing (:class:`Marginalized`)."""
    return isinstance(story, Marginalized)
