"""What the engine may do with a story: the execution decisions, made here and nowhere else.

Two are derived from the hooks a story overrides, so there is nothing to declare:

* :func:`has_closed_form` — ``sufficient_statistics`` and ``maximize`` overridden (by every
  story nested in its attributes too): fits add statistics and maximize them, no optimizer;
* :func:`has_exact_posterior` — ``conjugate_factors`` overridden (nested stories too), and the
  capability ``exact_conjugate`` not False.

The rest are read by :func:`capability` from the story's one declaration,
:attr:`genprob.story.Story.capabilities` (a mapping; a property where the answers depend on
the story's settings), each key missing from it taking its default in :data:`DEFAULTS`. A "no"
may say why with :class:`genprob.story.Unsupported`.
"""

from __future__ import annotations

from genprob.story import Story, nested_stories, why_not

__all__ = ["DEFAULTS", "capability", "has_closed_form", "has_exact_posterior", "chunk_refusal"]

#: Each capability a story may declare, with its default; docs/story_hooks.md says what each
#: means and when to declare it.
DEFAULTS = {
    "array_api": False,  # its closed form and discriminant run on NumPy rows in NumPy
    "accepts_scipy_sparse": False,  # its statistics and scores take SciPy sparse rows
    "adds_over_rows": None,  # statistics of chunks combine; None: when it has a closed form
    "supports_missing": False,  # rows are scored and fitted with their NaN entries left out
    "missing_needs_em": False,  # observed_statistics depend on the parameters: the fit iterates
    "smooth_likelihood": True,  # the cross-check also judges parameters and gradients
    "exact_conjugate": True,  # conjugate_factors are exact for this instance's prior
}


def capability(story: Story, name: str):
    """The story's answer for capability ``name`` (a key of :data:`DEFAULTS`): its declaration
    in ``story.capabilities``, else the default.

    Raises:
        TypeError: the declaration holds an unknown key, or the story's class still defines a
            capability as its own attribute (as releases before issue 56 read them).
    """
    declared = story.capabilities
    unread = sorted(set(declared) - DEFAULTS.keys()) + [k for k in DEFAULTS if hasattr(story, k)]
    if unread:
        raise TypeError(
            f"{type(story).__name__} gives capabilities that genprob does not read, {unread}: a "
            f"story declares them in one mapping, capabilities = {{name: value}}, with names "
            f"of {sorted(DEFAULTS)}."
        )
    if name in declared:
        return declared[name]
    return has_closed_form(story) if name == "adds_over_rows" else DEFAULTS[name]


def has_closed_form(story: Story) -> bool:
    """True when ``story`` and every story nested in its attributes (a mixed table's blocks)
    override both ``sufficient_statistics`` and ``maximize``."""
    cls = type(story)
    return (
        cls.sufficient_statistics is not Story.sufficient_statistics
        and cls.maximize is not Story.maximize
        and all(map(has_closed_form, nested_stories(story)))
    )


def chunk_refusal(story: Story) -> str | None:
    """Why ``story``'s statistics cannot be added over chunks (``partial_fit``, streaming,
    Dask), or None when they can."""
    name = type(story).__name__
    if not has_closed_form(story):
        return f"{name} has no closed form (no sufficient statistics)"
    adds = capability(story, "adds_over_rows")
    return None if adds else why_not(adds, f"{name}'s statistics do not add over rows")


def has_exact_posterior(story: Story) -> bool:
    """True when ``conjugate_factors`` give the exact posterior (a conjugate prior), for
    ``story`` and every story nested in its attributes."""
    return bool(
        type(story).conjugate_factors is not Story.conjugate_factors
        and capability(story, "exact_conjugate")
        and all(map(has_exact_posterior, nested_stories(story)))
    )
