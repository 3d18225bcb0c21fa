"""The one registry of built-in families: each family module declares a :class:`Family` record.

A record names the family's story class, its estimator faces, its entries of the ``genprob``
command line (names, aliases, data sets) and how a block of columns of the family is built in a
mixed table (:class:`Block`). :func:`genprob.families.story_named`, the mixed table's
:func:`naive_block`, the command line's registry and its aliases all read these records, so a
new family is one module with one record plus a line in :data:`MODULES`.

Estimators are named by ``"module:Class"`` strings (estimator modules import the families, so a
family module cannot import them back).
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

__all__ = [
    "Block",
    "Command",
    "Family",
    "MODULES",
    "block_context",
    "block_families",
    "commands",
    "families",
    "family_named",
    "load",
    "naive_block",
]

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
    """How a block of columns of one family is built inside a mixed table (``MixedNB``).

    Attributes:
        build: ``build(context, **settings) -> Story``: the block's story from its fit-time
            context (:attr:`context`, summed over chunks, with the block's ``rows``) and the
            mixed estimator's settings named in :attr:`settings` (only those).
        settings: the names of the settings ``build`` takes (``"alpha"``, ``"beta"``,
            ``"var_smoothing"``, and ``"n_categories"`` for a family that encodes values).
        encodes_values: the block reads its columns' raw values (strings, any type) as
            categories; the estimator encodes them as codes 0..k-1 of the sorted training
            values and passes the counts as ``n_categories``.
        context: ``context(X) -> dict`` of a block's columns ``X`` (n, d): numbers that add over
            chunks (``partial_fit`` sums them).
        grow_statistics: ``grow_statistics(story, stats, moves) -> stats``: the statistics of an
            earlier, smaller story of the family moved to ``story``'s layout when new chunks
            grew it (new categories: ``moves[j]`` maps column j's old codes to new ones, None for
            an unchanged column).
    """

    build: Callable
    settings: tuple = ()
    encodes_values: bool = False
    context: Callable = _no_context
    grow_statistics: Callable = _same_statistics


@dataclass(frozen=True)
class Command:
    """A story of the ``genprob`` command line (``genprob check NAME``, ``fit``, ``compare``).

    Attributes:
        name: the command line's name of the story.
        description: one line.
        datasets: natural bundled data sets, the default first.
        options: the story's keyword arguments (for ``Story.from_data(X, **options)``).
        aliases: other accepted names (scikit-learn's estimator names).
        make_story: ``make_story(X) -> Story`` when ``from_data`` with :attr:`options` is not it.
        table_estimator: ``table_estimator(features, **options) -> estimator`` for a family that
            fits a table of mixed column types itself (text columns allowed); None: the command
            line wraps the story in ``GenerativeClassifier``.
        note: what the command line's help says of the story beyond its name.
        in_report: the full ``genprob report`` cross-checks the story on its default data set.
        face: the estimator face (``"module:Class"``) the command line fits the story with,
            built with :attr:`face_options` (its ``--param`` options are that class's); empty:
            ``GenerativeClassifier`` of the story.
        face_options: the face's keyword arguments that make it this story.
    """

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
    """A built-in family, declared once by its module as ``FAMILY``.

    Attributes:
        story: the story class (its :attr:`~genprob.story.Story.name` names the family).
        estimators: its estimator faces as ``"module:Class"`` strings.
        commands: its stories on the command line.
        block: how a block of its columns is built in a mixed table; None when it cannot be one.
    """

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
    """The naive-Bayes story of one block of a mixed table, by family name.

    Args:
        family: a name of :func:`block_families`.
        settings: the mixed estimator's settings (``alpha``, ``beta``, ``var_smoothing``,
            ``n_categories``...); the block's builder gets only those it names.
        context: the block's fit-time context (:func:`block_context`), summed over chunks.
    """
    block = _block(family)
    return block.build(context or {}, **{name: settings[name] for name in block.settings})
