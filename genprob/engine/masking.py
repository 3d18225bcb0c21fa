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

    def emission(self, params):
        return _emission.MaskedEmission(self.story, params)

    @property
    def capabilities(self):
        return {
            "supports_missing": True,
            "adds_over_rows": has_closed_form(self) and capability(self.story, "adds_over_rows"),
        }

    def validate(self, X):
        """The story's check of the observed entries (NaN entries are missing, not values)."""
        if not is_concrete(X):
            return X
        # on the host (an eager JAX fill would compile a program per shape); sparse rows refused
        values = np.asarray(X if isinstance(X, np.ndarray) or is_jax_array(X) else jnp.asarray(X))
        missing = np.isnan(values) if values.dtype.kind == "f" else None
        if missing is not None and missing.any():
            values = np.where(missing, np.zeros((), values.dtype), values)
        self.story.validate(values)
        return X


def _forwarded(name: str):
    def hook(self, *args, **kwargs):
        return getattr(self.story, name)(*args, **kwargs)

    hook.__name__ = hook.__qualname__ = name
    return hook


# the wrapped story's own hooks: same parameters, only the density of a row differs
for _name in (
    "prior log_penalty check_parameters align_parameters observed_log_prob observed_statistics "
    "num_parameters parameter_dims coords"
).split():
    setattr(Marginalized, _name, _forwarded(_name))


class ObservedClosedForm(Marginalized):
    """:class:`Marginalized` of a story whose closed form counts observed entries only
    (:meth:`Story.observed_statistics`, not depending on the current parameters)."""

    def sufficient_statistics(self, X, R):
        filled, observed = fill_missing(X)
        return self.story.observed_statistics(filled, R, observed)


for _name in ("maximize", "combine_statistics", "conjugate_factors"):
    setattr(ObservedClosedForm, _name, _forwarded(_name))


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
