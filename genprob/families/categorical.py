"""Categorical class-conditionals: feature j takes one of ``k_j`` values (a ``k_j``-faced die)."""

from __future__ import annotations

import math

import numpy as np
import scipy.sparse

from genprob._lazy import LazyModule, lazy_attribute
from genprob.engine import _limits
from genprob.engine._validation import FeatureValueError, check_alpha, is_bcoo
from genprob.families._discrete import floor_log
from genprob.families._registry import Block, Command, Family
from genprob.inference.conjugate import ConjugateFactor
from genprob.story import CLASS_PRIOR, Story

jax = LazyModule("jax")
jnp = LazyModule("jax.numpy")
special = LazyModule("jax.scipy.special")

numpyro = LazyModule("numpyro")
dist = LazyModule("numpyro.distributions")
_emission = LazyModule("genprob.families.categorical_emission")


__all__ = [
    "CategoricalStory",
    "FAMILY",
    "full_joint_num_parameters",
    "naive_num_parameters",
]

#: NumPyro classes, defined in their own module so that importing this one needs no NumPyro
__getattr__ = lazy_attribute(
    __name__,
    {
        "CategoricalFeatures": "genprob.families.categorical_emission",
        "PaddedDirichlet": "genprob.families.categorical_emission",
        "PaddedSimplex": "genprob.families.categorical_emission",
        "PaddedStickBreakingTransform": "genprob.families.categorical_emission",
    },
)


def check_table_size(n_categories, num_classes: int | None = None) -> None:
    """``SizeLimitError`` naming the feature of a count table past the limit (before int casts)."""
    sizes = np.asarray(n_categories, dtype=float).ravel()
    if sizes.size == 0 or not np.all(np.isfinite(sizes)):
        return  # left to the callers' own checks (empty, NaN or infinite codes)
    widest = int(np.argmax(sizes))
    cells = float(num_classes or 1) * sizes.size * sizes[widest]
    per_class = "one class: " if num_classes is None else f"{num_classes} classes x "
    if cells * 8 > _limits.MAX_ARRAY_BYTES:
        raise _limits.SizeLimitError(
            f"feature {widest} has category code {_limits.compact(sizes[widest] - 1)} (largest "
            f"code or min_categories - 1): its count table ({per_class}"
            f"{sizes.size} features x {_limits.compact(sizes[widest])} categories) would take "
            f"{_limits.compact(cells * 8)} bytes, over the limit of "
            f"{_limits.compact(_limits.MAX_ARRAY_BYTES)} (genprob.engine._limits.MAX_ARRAY_BYTES). "
            "Category codes must be 0..k-1 (e.g. from OrdinalEncoder)."
        )


def _check_n_categories(n_categories) -> tuple:
    check_table_size(n_categories)
    values = tuple(int(k) for k in np.ravel(n_categories))
    if not values or min(values) < 1:
        raise ValueError(f"n_categories must be a non-empty sequence of ints >= 1, got {values}.")
    return values


def category_mask(n_categories, dtype=bool) -> np.ndarray:
    """(D, M) indicator of the real (non-padding) cells of a padded table."""
    n_categories = np.asarray(n_categories)
    return (np.arange(n_categories.max())[None, :] < n_categories[:, None]).astype(dtype)


# -- parameter counts ----------------------------------------------------------------------------
def _category_list(num_features: int, num_categories) -> list[int]:
    if np.ndim(num_categories) == 0:
        return [int(num_categories)] * int(num_features)
    values = [int(k) for k in num_categories]
    if len(values) != num_features:
        raise ValueError(
            f"num_categories has {len(values)} entries; expected one per feature ({num_features})."
        )
    return values


def naive_num_parameters(num_classes: int, num_features: int, num_categories) -> int:
    """Free parameters of naive Bayes over discrete features: ``C sum_j (k_j - 1) + (C - 1)``
    for C classes, d features and ``num_categories`` k (every feature) or one ``k_j`` each."""
    ks = _category_list(num_features, num_categories)
    return num_classes * sum(k - 1 for k in ks) + (num_classes - 1)


def full_joint_num_parameters(num_classes: int, num_features: int, num_categories) -> int:
    """Free parameters of the full joint ``p(x, y)`` over discrete features, no naive assumption:
    ``C (prod_j k_j - 1) + (C - 1)``, an exact Python integer (arguments as
    :func:`naive_num_parameters`)."""
    ks = _category_list(num_features, num_categories)
    return num_classes * (math.prod(ks) - 1) + (num_classes - 1)


# -- the emission --------------------------------------------------------------------------------
class PaddedDirichletFactor(ConjugateFactor):
    """Conjugate Dirichlet factor of a padded probability table (rows of different lengths)."""

    def distribution(self) -> dist.Distribution:
        a = self.concentration
        return _emission.PaddedDirichlet(a, self.n_categories).to_event(a.ndim - 2)

    def _log_predictive(self, X):
        """Dirichlet-categorical: each code's probability is its posterior mean."""
        log_mean = np.log(np.where(self._mask, self.mean(), 1.0))  # (K, D, M)
        codes = np.asarray(_dense(X)).astype(np.int64)
        return log_mean[:, np.arange(codes.shape[1]), codes].sum(axis=-1).T


# -- the story -----------------------------------------------------------------------------------
#: entries of ``X`` checked at a time by :meth:`CategoricalStory.validate` (256 KiB of float64)
_BLOCK_ENTRIES = 2**15


def _dense(X):
    """``X`` as a dense array (sparse input densified: its implicit zeros are codes too)."""
    if is_bcoo(X):
        return X.todense()
    if scipy.sparse.issparse(X):
        return X.toarray()
    return X


class CategoricalStory(Story):
    """Categorical features, independent given the class (categorical naive Bayes).

    Args:
        n_categories: number of categories ``k_j`` of each feature (codes ``0 .. k_j - 1``).
        alpha: additive smoothing (>= 0), the same for every cell.

    Parameters (``params`` keys): ``probs``, the padded table (K, D, M).
    """

    name = "categorical"
    capabilities = {"supports_missing": True}

    def __init__(self, n_categories, alpha=1.0):
        self.n_categories = _check_n_categories(n_categories)
        alpha = check_alpha(alpha)
        if isinstance(alpha, tuple):
            raise ValueError("alpha of a categorical story must be a single number.")
        self.alpha = alpha

    @classmethod
    def from_data(cls, X, **options):
        """Categories of each column of integer codes: its largest code + 1."""
        X = np.asarray(X)
        if X.size and (np.any(X < 0) or np.any(X != np.round(X))):
            raise ValueError(
                "a categorical story needs non-negative integer category codes in every column."
            )
        return cls(n_categories=tuple(int(m) + 1 for m in X.max(axis=0)), **options)

    @property
    def max_categories(self) -> int:
        """M, the padded width of the tables."""
        return max(self.n_categories)

    def _check_num_features(self, num_features):
        if num_features != len(self.n_categories):
            raise ValueError(
                f"the story has {len(self.n_categories)} categorical features; got {num_features}."
            )

    def prior(self, num_classes, num_features):
        self._check_num_features(num_features)
        check_table_size(self.n_categories, num_classes)
        mask = category_mask(self.n_categories, float)
        concentration = jnp.asarray(mask * (self.alpha + 1.0))
        concentration = jnp.broadcast_to(concentration, (num_classes,) + concentration.shape)
        probs = numpyro.sample(
            "probs", _emission.PaddedDirichlet(concentration, self.n_categories).to_event(1)
        )
        return {"probs": probs}

    def emission(self, params):
        return _emission.CategoricalFeatures(params["probs"])

    def sufficient_statistics(self, X, R):
        return {"counts": R.sum(axis=0), "category_counts": self._category_counts(X, R)}

    def _category_counts(self, X, R, weights=None):
        """(K, D, M) weighted counts of each feature's codes (``weights`` (n, D): 0 if missing)."""
        check_table_size(self.n_categories, R.shape[-1])

        def count(args):
            column, weight = args
            weighted = R if weight is None else R * weight[:, None]
            return jax.ops.segment_sum(weighted, column, num_segments=self.max_categories)

        # one segment-sum per feature (a loop over features, not rows): memory n*K per step
        codes = X.astype(jnp.int32).T
        per_feature = jax.lax.map(count, (codes, None if weights is None else weights.T))
        return jnp.transpose(per_feature, (2, 0, 1))  # (D, M, K) -> (K, D, M)

    def observed_log_prob(self, params, X, observed):
        log_probs = floor_log(params["probs"])  # (K, D, M)
        codes = X.astype(jnp.int32)
        by_feature = jnp.moveaxis(log_probs, 0, -1)[jnp.arange(codes.shape[-1]), codes]
        return jnp.sum(jnp.where(observed[..., None], by_feature, 0.0), axis=-2)

    def observed_statistics(self, X, R, observed, params=None):
        weights = observed.astype(R.dtype)
        return {"counts": R.T @ weights, "category_counts": self._category_counts(X, R, weights)}

    def maximize(self, stats):
        counts = stats["category_counts"]
        mask = jnp.asarray(category_mask(self.n_categories, counts.dtype))
        smoothed = (counts + self.alpha) * mask
        return {"probs": smoothed / smoothed.sum(axis=-1, keepdims=True)}

    def log_penalty(self, params, stats):
        """``alpha sum log p`` over real cells: the Dirichlet(alpha + 1) log density."""
        probs = params["probs"]
        mask = jnp.asarray(category_mask(self.n_categories, probs.dtype))
        return jnp.sum(special.xlogy(self.alpha * mask, probs))

    def conjugate_factors(self, stats, offset):
        """``Dirichlet(c + alpha + offset)`` over the real cells of each padded row."""
        counts = stats["category_counts"]
        mask = category_mask(self.n_categories, counts.dtype)
        concentration = (counts + self.alpha + offset) * mask
        return {"probs": PaddedDirichletFactor("dirichlet", concentration, None, self.n_categories)}

    def parameter_dims(self, name, shape, num_classes, num_features):
        if name == "probs" and len(shape) == 3:
            return ("class", "feature", "category")
        return super().parameter_dims(name, shape, num_classes, num_features)

    def coords(self, feature_names):
        return {"category": list(range(self.max_categories))}

    def validate(self, X):
        """``FeatureValueError`` naming the first entry that is not a code ``0 .. k_j - 1``."""
        num_features = int(X.shape[-1])
        self._check_num_features(num_features)
        values = np.asarray(_dense(X)).reshape(-1, num_features)
        limits = np.asarray(self.n_categories)
        unsigned_limits = limits.astype(np.uint32)  # counts are far below 2^31 (check_table_size)
        rows = max(1, _BLOCK_ENTRIES // num_features)
        with np.errstate(invalid="ignore"):  # NaN, infinities and huge values cast to garbage
            for start in range(0, values.shape[0], rows):
                block = values[start : start + rows]
                codes = block.astype(np.int32)
                ok = codes == block  # integers within int32 only: not NaN, 2.5, 1e200
                ok &= codes.view(np.uint32) < unsigned_limits  # negative codes wrap to >= 2^31
                if not ok.all():
                    break
            else:
                return X
            not_code = ~np.isfinite(values) | (values < 0) | (values != np.trunc(values))
            bad = not_code | (values >= limits)
        row, col = (int(i) for i in np.argwhere(bad)[0])
        code, known = values[row, col].item(), int(self.n_categories[col])
        # integers compactly (7, 1e+200), others exactly (2.5)
        integral = math.isfinite(code) and float(code).is_integer()
        code = _limits.compact(code) if integral else repr(float(code))
        where = (
            f"feature {col} (row {row}) has category code {code}, but the story "
            f"knows codes 0..{known - 1} only (n_categories[{col}] = {known}); entries of X "
            f"that are not codes of their feature: {int(bad.sum())}."
        )
        if not_code[row, col]:
            advice = (
                " Expected non-negative integer category codes for a categorical story "
                "(encode categories as 0..k-1, e.g. with OrdinalEncoder)."
            )
        else:
            advice = (
                " Unseen categories have no probability: refit declaring more categories "
                "(CategoricalNB(min_categories=...), CategoricalStory(n_categories=...)) to "
                "reserve smoothed mass for them."
            )
        raise FeatureValueError(where + advice, feature=col)

    def num_parameters(self, num_classes, num_features):
        self._check_num_features(num_features)
        return naive_num_parameters(num_classes, num_features, self.n_categories)

    def one_hot(self, X):
        """Concatenated one-hot codes ``e(x)`` (n, D * M) in the padded layout (feature-major)."""
        codes = jnp.asarray(X).astype(jnp.int32)
        encoded = jax.nn.one_hot(codes, self.max_categories, dtype=jnp.result_type(float))
        return encoded.reshape(codes.shape[:-1] + (-1,))

    def linear_boundary(self, params, k: int, l: int):
        """``(w, b)``: the log-odds of ``k`` and ``l`` linear in :meth:`one_hot` codes."""
        log_probs = floor_log(params["probs"])
        mask = jnp.asarray(category_mask(self.n_categories))
        weights = jnp.where(mask, log_probs[k] - log_probs[l], 0.0).reshape(-1)
        log_prior = jnp.log(params[CLASS_PRIOR])
        return weights, log_prior[k] - log_prior[l]


def _grow_statistics(story, stats, moves):
    """Counts moved to ``story``'s categories (code c of column j to ``moves[j][c]``)."""
    counts = np.asarray(stats["category_counts"])
    grown = np.zeros(counts.shape[:2] + (story.max_categories,), dtype=counts.dtype)
    for j, move in enumerate(moves):
        move = np.arange(story.n_categories[j]) if move is None else np.asarray(move)
        grown[:, j, move] = counts[:, j, : len(move)]
    return {**stats, "category_counts": jnp.asarray(grown)}


FAMILY = Family(
    story=CategoricalStory,
    estimators=("genprob.estimators.discrete:CategoricalNB",),
    commands=(
        Command(
            "categorical",
            "categorical features (categorical NB), alpha=1",
            ("digits",),
            {"alpha": 1.0},
            aliases=("categorical_nb",),
            face="genprob.estimators.discrete:CategoricalNB",
            face_options={"alpha": 1.0},
        ),
    ),
    # a block encodes its raw values (any type) as category codes
    block=Block(
        lambda context, alpha, n_categories: CategoricalStory(n_categories, alpha),
        settings=("alpha", "n_categories"),
        encodes_values=True,
        grow_statistics=_grow_statistics,
    ),
)
