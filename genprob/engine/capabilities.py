"""What the engine may do with a story, decided here and nowhere else: a closed form and an
exact posterior derived from the hooks it overrides, the rest read by :func:`capability` from
its one declaration, :attr:`genprob.story.Story.capabilities` (docs/story_hooks.md)."""

from __future__ import annotations

from collections.abc import Mapping

from genprob.story import (
    CAPABILITY_DEFAULTS,
    Story,
    check_capabilities,
    nested_stories,
    why_not,
)

__all__ = ["DEFAULTS", "capability", "has_closed_form", "has_exact_posterior", "chunk_refusal"]

#: Each capability with its default (declared next to :attr:`Story.capabilities`).
DEFAULTS = CAPABILITY_DEFAULTS


def capability(story: Story, name: str):
    """The story's answer for capability ``name``: its declaration, else the default."""
    declared = story.capabilities
    if not isinstance(type(story).capabilities, Mapping):
        check_capabilities(type(story), declared)
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
    """Why ``story``'s statistics cannot be added over chunks, or None when they can."""
    name = type(story).__name__
    if not has_closed_form(story):
        return f"{name} has no closed form (no sufficient statistics)"
    adds = capability(story, "adds_over_rows")
    return None if adds else why_not(adds, f"{name}'s statistics do not add over rows")


def has_exact_posterior(story: Story) -> bool:
    """True when ``conjugate_factors`` give the exact posterior, nested stories included."""
    return bool(
        type(story).conjugate_factors is not Story.conjugate_factors
        and capability(story, "exact_conjugate")
        and all(map(has_exact_posterior, nested_stories(story)))
    )
