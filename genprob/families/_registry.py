"""The one registry of built-in families: each family module declares a :class:`Family` record
(fields described in docs/reference/families.md, "The family registry")."""

from __future__ import annotations

import functools
import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

#: The modules (or packages) of the built-in families, each with a ``FAMILY`` record.
MODULES = (
    "genprob.families.gaussian",
    "genprob.families.bernoulli",
    "genprob.families.categorical",
    "genprob.families.multinomial",
    "genprob.families.poisson",
    "genprob.families.mixed",
)


def _no_context(X) -> dict:
    return {}


def _same_statistics(story, stats: dict, moves: list) -> dict:
    return stats


@dataclass(frozen=True)
class Block:
    """How a block of columns of one family is built inside a mixed table (``MixedNB``)."""

    build: Callable
    settings: tuple = ()
    encodes_values: bool = False
    context: Callable = _no_context
    grow_statistics: Callable = _same_statistics


@dataclass(frozen=True)
class Command:
    """A story of the ``genprob`` command line (``genprob check NAME``, ``fit``, ``compare``)."""

    name: str
    description: str
    datasets: tuple
    options: Mapping = field(default_factory=lambda: MappingProxyType({}))
    aliases: tuple = ()
    make_story: Callable | None = None
    table_estimator: Callable | None = None
    note: str = ""
    in_report: bool = False
    face: str = ""
    face_options: Mapping = field(default_factory=lambda: MappingProxyType({}))


@dataclass(frozen=True)
class Family:
    """A built-in family, declared once by its module as ``FAMILY``."""

    story: type
    estimators: tuple = ()
    commands: tuple = ()
    block: Block | None = None

    @property
    def name(self) -> str:
        return self.story.name


def load(reference: str):
    """The object a ``"module:Name"`` string names (imported on first use)."""
    module, _, name = reference.partition(":")
    return getattr(importlib.import_module(module), name)


@functools.cache
def families() -> Mapping:
    """The built-in families by name, in :data:`MODULES` order."""
    records = (importlib.import_module(module).FAMILY for module in MODULES)
    return MappingProxyType({family.name: family for family in records})


def family_named(name: str) -> Family:
    """The built-in family ``name``; ``ValueError`` listing the known ones otherwise."""
    found = families()
    if name not in found:
        raise ValueError(f"no built-in family {name!r}; known: {', '.join(sorted(found))}.")
    return found[name]


def commands() -> dict:
    """Every family's command-line stories by name, in :data:`MODULES` order."""
    return {c.name: c for family in families().values() for c in family.commands}


def block_families() -> tuple:
    """Names of the families a block of a mixed table may have (``MixedNB(families=...)``)."""
    return tuple(name for name, family in families().items() if family.block is not None)


def _block(family: str) -> Block:
    if family not in block_families():
        raise ValueError(
            f"unknown family {family!r}; expected one of {', '.join(block_families())}."
        )
    return families()[family].block


def block_context(family: str, X) -> dict:
    """Fit-time context of a block's columns ``X`` (n, d): its rows and the family's own
    (:attr:`Block.context`); contexts of chunks add key by key."""
    return {"rows": int(X.shape[0]), **_block(family).context(X)}


def naive_block(family: str, settings: Mapping, context=None):
    """The naive-Bayes story of one block of a mixed table (``family`` of
    :func:`block_families`), built from the settings it names and its summed ``context``."""
    block = _block(family)
    return block.build(context or {}, **{name: settings[name] for name in block.settings})
