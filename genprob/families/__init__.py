"""The built-in families: one module (or package) per family of class-conditional distributions."""

from __future__ import annotations

__all__ = ["story_named"]


def story_named(name: str) -> type:
    """The built-in story class whose :attr:`~genprob.story.Story.name` is ``name``.

    Raises:
        ValueError: when no built-in family has that name.
    """
    from genprob.story import _STORY_CLASSES

    found = {
        cls.name: cls
        for cls in _STORY_CLASSES.values()
        if cls.__module__.startswith(__name__ + ".")
    }
    if name not in found:
        raise ValueError(f"no built-in family {name!r}; known: {', '.join(sorted(found))}.")
    return found[name]
