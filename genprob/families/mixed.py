"""Mixed per-feature stories: each block of columns has its own family, naive across blocks."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from genprob._lazy import LazyModule, lazy_attribute
from genprob.engine._validation import FeatureValueError
from genprob.engine.capabilities import capability
from genprob.families._registry import Command, Family, families, load
from genprob.families.categorical import CategoricalStory
from genprob.families.gaussian import GaussianStory
from genprob.story import Story, Unsupported, why_not

jnp = LazyModule("jax.numpy")

numpyro = LazyModule("numpyro")
_emission = LazyModule("genprob.families.mixed_emission")

__all__ = [
    "DEFAULT_NAIVE_FAMILY",
    "FAMILY",
    "MAX_CODES",
    "MixedStory",
    "categorical_columns",
    "grow_statistics",
    "table_families",
]

#: NumPyro classes, defined in their own module so that importing this one needs no NumPyro
__getattr__ = lazy_attribute(__name__, {"MixedFeatures": "genprob.families.mixed_emission"})

#: The family of a column that names none (``MixedNB(families=None)``).
DEFAULT_NAIVE_FAMILY = GaussianStory.name
#: Most distinct non-negative integer codes of a column read as categorical.
MAX_CODES = 20


class MixedStory(Story):
    """A story composed column-wise of other stories, naive across blocks.

    Args:
        blocks: sequence of ``(name, story, columns)``: a block name (no dots), a story with a
            closed form (e.g. ``GaussianStory(covariance="diag", shared=False)``,
            ``CategoricalStory(...)``), and the column indices it owns. The columns of all
            blocks must partition ``0 .. D - 1``.

    Parameters (``params`` keys): ``"<block>.<name>"`` for every parameter of every block.
    """

    name = "mixed"

    def __init__(self, blocks):
        normalized = []
        seen_names, seen_columns = set(), set()
        for block in blocks:
            try:
                name, story, columns = block
            except (TypeError, ValueError):
                raise ValueError(
                    f"each block must be (name, story, columns); got {block!r}."
                ) from None
            name = str(name)
            if not name or "." in name:
                raise ValueError(f"block name {name!r} must be non-empty and contain no dots.")
            if name in seen_names:
                raise ValueError(f"block name {name!r} is used twice.")
            if not isinstance(story, Story):
                raise ValueError(f"block {name!r}: {story!r} is not a genprob Story.")
            if isinstance(story, MixedStory):
                raise ValueError(f"block {name!r}: mixed stories do not nest.")
            columns = tuple(int(c) for c in columns)
            if not columns:
                raise ValueError(f"block {name!r} owns no columns.")
            overlap = seen_columns.intersection(columns)
            if overlap or len(set(columns)) != len(columns):
                raise ValueError(
                    f"block {name!r}: columns {sorted(overlap) or columns} belong to two blocks."
                )
            seen_names.add(name)
            seen_columns.update(columns)
            normalized.append((name, story, columns))
        if not normalized:
            raise ValueError("a mixed story needs at least one block.")
        if sorted(seen_columns) != list(range(len(seen_columns))):
            raise ValueError(
                f"block columns must cover 0..D-1 exactly; got {sorted(seen_columns)}."
            )
        self.blocks = tuple(normalized)

    @classmethod
    def from_data(cls, X, **options):
        """Gaussian naive Bayes on measurements, categorical on :func:`categorical_columns`."""
        X = np.asarray(X)
        codes = categorical_columns(X)
        numeric = [j for j in range(X.shape[1]) if j not in codes]
        blocks = []
        if numeric:
            gaussian = GaussianStory(covariance="diag", shared=False, var_smoothing=1e-9)
            blocks.append(("numeric", gaussian, tuple(numeric)))
        if codes:
            story = CategoricalStory.from_data(X[:, codes], alpha=1.0)
            blocks.append(("categories", story, tuple(codes)))
        return cls(blocks, **options)

    @property
    def num_features(self) -> int:
        return sum(len(columns) for _, _, columns in self.blocks)

    def scaled_to_data(self, X):
        """Every block's prior scaled to its own columns (:meth:`Story.scaled_to_data`)."""
        blocks = [
            (name, story.scaled_to_data(X[:, jnp.asarray(columns)]), columns)
            for name, story, columns in self.blocks
        ]
        if all(new is old for (_, new, _), (_, old, _) in zip(blocks, self.blocks, strict=True)):
            return self
        return self.replace(blocks=blocks)

    def block_params(self, params: dict, name: str) -> dict:
        """The parameters of block ``name``, without the block prefix."""
        prefix = name + "."
        return {k[len(prefix) :]: v for k, v in params.items() if k.startswith(prefix)}

    def _check_num_features(self, num_features):
        if num_features != self.num_features:
            raise ValueError(
                f"the mixed story's blocks own {self.num_features} columns; got {num_features}."
            )

    def prior(self, num_classes, num_features):
        self._check_num_features(num_features)
        params = {}
        for name, story, columns in self.blocks:
            with numpyro.handlers.scope(prefix=name, divider="."):
                block = story.prior(num_classes, len(columns))
            params.update({f"{name}.{key}": value for key, value in block.items()})
        return params

    def emission(self, params):
        emissions = [
            story.emission(self.block_params(params, name)) for name, story, _ in self.blocks
        ]
        return _emission.MixedFeatures(emissions, [columns for _, _, columns in self.blocks])

    def discriminant(self, params, X):
        """Sum of the blocks' discriminants (each drops its own term of the row)."""
        return sum(
            story.discriminant(self.block_params(params, name), X[:, jnp.asarray(columns)])
            for name, story, columns in self.blocks
        )

    def sufficient_statistics(self, X, R):
        return {
            name: story.sufficient_statistics(X[:, jnp.asarray(columns)], R)
            for name, story, columns in self.blocks
        }

    @property
    def capabilities(self):
        """Missing entries and chunks as every block allows; EM when a block's needs it."""
        return {
            "supports_missing": _every_block(self, "supports_missing", "leave out missing entries"),
            "missing_needs_em": any(
                capability(story, "missing_needs_em") for _, story, _ in self.blocks
            ),
            "adds_over_rows": _every_block(
                self, "adds_over_rows", "add up its statistics over chunks"
            ),
        }

    def observed_log_prob(self, params, X, observed):
        total = 0.0
        for name, story, columns in self.blocks:
            cols = jnp.asarray(columns)
            block = self.block_params(params, name)
            total = total + story.observed_log_prob(block, X[:, cols], observed[:, cols])
        return total

    def observed_statistics(self, X, R, observed, params=None):
        stats = {}
        for name, story, columns in self.blocks:
            cols = jnp.asarray(columns)
            block = None if params is None else self.block_params(params, name)
            stats[name] = story.observed_statistics(X[:, cols], R, observed[:, cols], block)
        return stats

    def combine_statistics(self, stats_a, stats_b):
        """Each block combines its own statistics (Gaussian blocks re-center their moments)."""
        return {
            name: story.combine_statistics(stats_a[name], stats_b[name])
            for name, story, _ in self.blocks
        }

    def maximize(self, stats):
        params = {}
        for name, story, _ in self.blocks:
            params.update({f"{name}.{k}": v for k, v in story.maximize(stats[name]).items()})
        return params

    def check_parameters(self, params, class_names=None, feature_names=None):
        """Each block checks its own parameters, with the names of its own columns."""
        for name, story, columns in self.blocks:
            names = columns if feature_names is None else [list(feature_names)[c] for c in columns]
            story.check_parameters(self.block_params(params, name), class_names, names)
        super().check_parameters(params, class_names, feature_names)

    def log_penalty(self, params, stats):
        return sum(
            story.log_penalty(self.block_params(params, name), stats[name])
            for name, story, _ in self.blocks
        )

    def conjugate_factors(self, stats, offset):
        factors = {}
        for name, story, columns in self.blocks:
            inner = story.conjugate_factors(stats[name], offset)  # a block's features by column
            columns = tuple(int(c) for c in columns)
            factors.update({f"{name}.{k}": replace(v, columns=columns) for k, v in inner.items()})
        return factors

    def parameter_dims(self, name, shape, num_classes, num_features):
        """A block's own dims, each but ``class`` renamed ``<block>_<dim>``."""
        block_name, _, inner = name.partition(".")
        for block, story, columns in self.blocks:
            if block == block_name and inner:
                dims = story.parameter_dims(inner, shape, num_classes, len(columns))
                return tuple(d if d in ("class", None) else f"{block}_{d}" for d in dims)
        return super().parameter_dims(name, shape, num_classes, num_features)

    def coords(self, feature_names):
        coords = {}
        for block, story, columns in self.blocks:
            names = [feature_names[c] for c in columns]
            coords[f"{block}_feature"] = names
            coords[f"{block}_feature2"] = names
            for dim, values in story.coords(names).items():
                coords.setdefault(f"{block}_{dim}", values)
        return coords

    def validate(self, X):
        self._check_num_features(int(X.shape[-1]))
        for name, story, columns in self.blocks:
            try:
                story.validate(X[:, list(columns)])
            except ValueError as error:
                message = (
                    f"block {name!r} (columns {list(columns)}; positions below count within "
                    f"the block): {error}"
                )
                if isinstance(error, FeatureValueError) and error.feature is not None:
                    # the column's position in the whole table, for an estimator to name it
                    raise FeatureValueError(message, columns[error.feature]) from None
                raise ValueError(message) from None
        return X

    def num_parameters(self, num_classes, num_features):
        self._check_num_features(num_features)
        return (num_classes - 1) + sum(
            story.num_parameters(num_classes, len(columns)) - (num_classes - 1)
            for _, story, columns in self.blocks
        )

    def __repr__(self):
        inner = ", ".join(f"({n!r}, {s!r}, {c})" for n, s, c in self.blocks)
        return f"MixedStory([{inner}])"


def grow_statistics(story: MixedStory, stats: dict, moves: list) -> dict:
    """Each block's statistics moved to its family's grown layout (``Block.grow_statistics``)."""
    grown = {}
    for name, block, columns in story.blocks:
        family = families().get(block.name)
        if family is None or family.block is None:  # a story of its own: its layout is fixed
            grown[name] = stats[name]
        else:
            grown[name] = family.block.grow_statistics(
                block, stats[name], [moves[c] for c in columns]
            )
    return grown


def categorical_columns(X) -> list:
    """Columns of non-negative integer codes with at most :data:`MAX_CODES` distinct values."""
    X = np.asarray(X, dtype=float)
    chosen = []
    for j in range(X.shape[1]):
        column = X[:, j]
        if np.all(column >= 0) and np.all(column == np.round(column)):
            if len(np.unique(column)) <= MAX_CODES:
                chosen.append(j)
    return chosen


def table_families(features) -> dict:
    """Column -> family of a DataFrame: text and :func:`categorical_columns` are categorical."""
    import pandas as pd

    numeric = [c for c in features.columns if pd.api.types.is_numeric_dtype(features[c])]
    codes = set()
    if numeric:
        positions = categorical_columns(features[numeric].to_numpy(dtype=np.float64))
        codes = {numeric[j] for j in positions}
    return {
        c: CategoricalStory.name if (c not in numeric or c in codes) else GaussianStory.name
        for c in features.columns
    }


def _table_estimator(features, **options):
    """``MixedNB`` with the families of :func:`table_families` (text columns allowed)."""
    return load("genprob.estimators.mixed:MixedNB")(families=table_families(features), **options)


FAMILY = Family(
    story=MixedStory,
    estimators=("genprob.estimators.mixed:MixedNB",),
    commands=(
        Command(
            "mixed",
            "Gaussian NB on measurements + categorical NB on code columns",
            ("penguins",),
            aliases=("mixed_nb",),
            make_story=MixedStory.from_data,
            table_estimator=_table_estimator,
            note=(
                "'mixed' takes text columns (categorical) with numeric ones (Gaussian, or "
                f"categorical when they hold at most {MAX_CODES} distinct integer codes)."
            ),
        ),
    ),
)


def _every_block(story, name: str, what: str):
    """True when every block has capability ``name``, else the first block's "no"."""
    for block_name, block, _ in story.blocks:
        answer = capability(block, name)
        if not answer:
            default = f"{type(block).__name__} does not {what}"
            return Unsupported(f"in block {block_name!r}, {why_not(answer, default)}")
    return True
