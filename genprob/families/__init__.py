"""The built-in families: one module (or package) per family, each with one ``FAMILY`` record
(:mod:`genprob.families._registry`), which every look-up by name reads."""

from __future__ import annotations

from genprob.families._registry import Block, Command, Family, commands, families, family_named

__all__ = ["Block", "Command", "Family", "commands", "families", "family_named", "story_named"]


def story_named(name: str) -> type:
    """The built-in story class named ``name`` (``ValueError`` when there is none)."""
    return family_named(name).story
