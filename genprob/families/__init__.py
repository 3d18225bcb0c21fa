"""The built-in families: one module (or package) per family of class-conditional distributions.

Each family module declares one :class:`~genprob.families._registry.Family` record (``FAMILY``):
its story, its estimator faces, its names on the command line and how a block of its columns is
built in a mixed table. Everything that looks a family up by name reads those records.
"""

from __future__ import annotations

from genprob.families._registry import Block, Command, Family, commands, families, family_named

__all__ = ["Block", "Command", "Family", "commands", "families", "family_named", "story_named"]


def story_named(name: str) -> type:
    """The built-in story class whose :attr:`~genprob.story.Story.name` is ``name``.

    Raises:
        ValueError: when no built-in family has that name.
    """
    return family_named(name).story
