"""The functional core: one scoring path and one closed-form fitting path for every story
(the route of a row is described in docs/reference/core.md)."""

from __future__ import annotations

from functools import partial

import numpy as np
import scipy.sparse

from genprob._lazy import LazyModule, is_jax_array, jitted
from genprob.engine import execution
from genprob.engine._labels import (
    UNLABELED,
    check_class_codes,
    check_responsibilities,
)
from genprob.engine._limits import check_count, check_traced_size, check_working_set, compact
from genprob.engine._validation import (
    all_concrete,
    check_class_prior,
    check_features,
    is_bcoo,
    is_concrete,
)
from genprob.engine.capabilities import capability, has_closed_form
from genprob.engine.execution import class_prior_from_counts, combine_statistics
from genprob.engine.masking import has_missing, marginalized, reads_nan_as_missing
from genprob.story import CLASS_PRIOR, Story, class_distribution

jax = LazyModule("jax")
jnp = LazyModule("jax.numpy")

numpyro = LazyModule("numpyro")
class_conditional = LazyModule("genprob.engine.class_conditional")

__all__ = [
    "joint_log_prob",
    "class_scores",
    "predict_log_proba",
    "predict_proba",
    "log_likelihood",
    "one_hot_responsibilities",
    "sufficient_statistics",
    "combine_statistics",
    "maximize",
    "fit_closed_form",
    "class_prior_from_counts",
    "model",
    "labeled_summary",
    "sample",
]


def joint_log_prob(story: Story, params: dict, X) -> jax.Array:
    """Log joint density ``log pi_k + log p(x_i | k)`` of every row and class, shape (n, K);
    ``X`` may be SciPy sparse for an ``accepts_scipy_sparse`` story.

    Raises:
        ValueError: ``X`` not 2-D, of another width than the parameters, non-finite (NaN unless
            the story reads it as missing) or outside the story's support."""
    _check_features(story, X)
    return jnp.asarray(execution.joint_log_prob(story, params, X))


def _check_features(story: Story, X, num_rows=None) -> None:
    """Refuse a mis-shaped, non-finite or out-of-support ``X`` on the host (traced: shapes only)."""
    hint = "impute or drop those entries"
    if capability(story, "supports_missing"):
        hint = (
            "genprob.engine.masking.marginalized(story) reads NaN as a missing value (summed out)"
        )
    check_features(
        X, as_given=True, num_rows=num_rows, allow_nan=reads_nan_as_missing(story), nan_hint=hint
    )
    if scipy.sparse.issparse(X) and not capability(story, "accepts_scipy_sparse"):
        raise TypeError(
            f"{type(story).__name__} does not take SciPy sparse input; pass X.toarray() or a "
            f"jax.experimental.sparse.BCOO matrix."
        )
    if is_concrete(X):
        # a host view: slices of a JAX array would be traced when called inside a transform
        story.validate(np.asarray(X) if is_jax_array(X) else X)


def class_scores(story: Story, params: dict, X) -> jax.Array:
    """``log pi_k + story.discriminant(params, X)`` (n, K): the joint log-probability up to a
    term of each row alone. Raises as :func:`joint_log_prob`."""
    _check_features(story, X)
    execution.check_host_width(story, params, X)
    return jnp.asarray(execution.class_scores(story, params, X))


def predict_log_proba(story: Story, params: dict, X) -> jax.Array:
    """Log class posteriors ``log p(y = k | x_i)`` (n, K). Raises as :func:`class_scores`, or
    for rows without a finite class score."""
    _check_features(story, X)
    execution.check_host_width(story, params, X)
    if not (is_concrete(X) and all_concrete(params)):
        return jax.nn.log_softmax(execution.class_scores(story, params, X), axis=-1)
    return jax.device_put(execution.class_posteriors(story, params, X, "log"))


def predict_proba(story: Story, params: dict, X) -> jax.Array:
    """Class posteriors ``p(y = k | x_i)`` (n, K). Raises as :func:`predict_log_proba`."""
    return jnp.exp(predict_log_proba(story, params, X))


def log_likelihood(
    story: Story, params: dict, X, y=None, *, pointwise: bool = False, unlabeled_label=-1
):
    """Log-likelihood of ``X`` with labels ``y`` (codes 0..K-1; ``unlabeled_label``, -1, marks
    an unlabeled row; None: every row labeled): ``log pi_y + log p(x | y)`` on labeled rows,
    ``log sum_k pi_k p(x | k)`` on the others (every row when ``y`` is None); the total, or the
    per-row values (n,) when ``pointwise``. Raises as :func:`joint_log_prob`, or for bad codes.
    """
    joint = joint_log_prob(story, params, X)
    if y is None:
        y = np.full(joint.shape[:1], UNLABELED, np.int32)
    else:
        check_class_codes(y, joint.shape[-1], unlabeled_label=unlabeled_label)
        y = jnp.asarray(y)
        if unlabeled_label not in (None, UNLABELED):
            y = jnp.where(y == unlabeled_label, UNLABELED, y)
        if jnp.shape(y) != joint.shape[:1]:
            raise ValueError(f"y has shape {jnp.shape(y)} but X has {joint.shape[0]} rows.")
    values = _rows_log_likelihood(joint, y)
    return values if pointwise else values.sum()


_rows_log_likelihood = jitted(execution.rows_log_likelihood)


def one_hot_responsibilities(y, num_classes: int, sample_weight=None, dtype=None) -> jax.Array:
    """Responsibilities R (n, K) of label codes ``y`` (-1: a row of zeros), rows scaled by
    ``sample_weight``; a code outside ``-1..K-1`` is refused."""
    check_class_codes(y, num_classes)
    dtype = dtype or jnp.result_type(float)
    if not (is_concrete(y) and is_concrete(sample_weight)):
        R = jax.nn.one_hot(jnp.asarray(y), num_classes, dtype=dtype)
        if sample_weight is not None:
            R = R * jnp.asarray(sample_weight, dtype=R.dtype)[:, None]
        return R
    R = execution.responsibilities(np.asarray(y), num_classes, sample_weight, dtype)
    return jax.device_put(R)


def sufficient_statistics(story: Story, X, R) -> dict:
    """Additive statistics of ``(X, R)``: class counts plus the story's own statistics."""
    if scipy.sparse.issparse(X) and not capability(story, "accepts_scipy_sparse"):
        _check_features(story, X)
    return execution.statistics(story, X, R)


def maximize(story: Story, stats: dict, class_prior=None, fit_prior: bool = True) -> dict:
    """Closed-form parameters from statistics produced by :func:`sufficient_statistics`."""
    return execution.parameters(story, stats, class_prior, fit_prior)


def fit_closed_form(story: Story, X, R, class_prior=None, fit_prior: bool = True) -> dict:
    """Fit a closed-form story to features ``X`` (n, D) with finite non-negative
    responsibilities ``R`` (n, K) (one-hot labels times weights, or class posteriors);
    ``class_prior`` (K,) fixed, else estimated (uniform unless ``fit_prior``).

    Raises:
        ValueError: a bad ``X``, ``R`` or ``class_prior``, or fitted parameters that define no
            distribution (:meth:`Story.check_parameters`)."""
    if not has_closed_form(story):
        raise NotImplementedError(
            f"{type(story).__name__} has no closed form; fit it with genprob.fit_optimizer."
        )
    check_responsibilities(R)
    _check_features(story, X, num_rows=jnp.shape(R)[0])
    num_classes = jnp.shape(R)[1]
    if is_concrete(class_prior):  # checked as the estimators check it; a traced one by shape
        class_prior = check_class_prior(class_prior, range(num_classes))
    elif jnp.shape(class_prior) != (num_classes,):
        raise ValueError(
            f"class_prior has shape {jnp.shape(class_prior)}; expected ({num_classes},), one "
            f"probability per class (column of R)."
        )
    params = maximize(story, sufficient_statistics(story, X, R), class_prior, fit_prior)
    if is_concrete(X):
        story.check_parameters(params)
    return params


def model(
    story: Story,
    X=None,
    y=None,
    summary=None,
    rows=None,
    *,
    num_classes: int,
    num_features=None,
    num_samples=None,
):
    """The story as a NumPyro model of the generative process (docs/reference/core.md).

    ``X``: features (n, D), or None to generate (``num_features`` needed); ``y``: label codes (n,),
    -1 unlabeled (label masked, class summed out), or None to generate (with ``X`` None,
    ``num_samples`` needed); ``summary``: :func:`labeled_summary` of ``X`` and ``y`` (two factors
    of the same value); ``rows``: boolean (n,), False on padding rows."""
    if X is not None:
        num_samples, num_features = X.shape[0], X.shape[-1]
        if has_missing(X):
            story = marginalized(story)  # NaN entries are missing: only observed entries score
    elif y is not None:
        num_samples = jnp.shape(y)[0]
    class_prior = numpyro.sample(
        CLASS_PRIOR,
        numpyro.distributions.Dirichlet(
            jnp.full(num_classes, jnp.asarray(story.class_concentration, jnp.result_type(float)))
        ),
    )
    params = story.prior(num_classes, num_features)
    emission = story.emission({**params, CLASS_PRIOR: class_prior})
    if summary is not None:
        stats = summary["statistics"]
        label_log_prob = class_distribution(class_prior).log_prob(jnp.arange(num_classes))
        numpyro.factor(
            "labeled", stats["counts"] @ label_log_prob + emission.labeled_log_prob(stats)
        )
        numpyro.factor(
            "unlabeled",
            class_conditional.unlabeled_log_likelihood(
                emission, jnp.log(class_prior), summary["blocks"], summary["num_unlabeled"]
            ),
        )
        return
    mask = True if rows is None else jnp.asarray(rows)
    with numpyro.plate("data", num_samples), numpyro.handlers.mask(mask=mask):
        if y is None:
            labels = numpyro.sample("y", class_distribution(class_prior))
            labeled = None
        else:
            y = jnp.asarray(y)
            labeled = y >= 0
            observed = jnp.where(labeled, y, 0)
            numpyro.sample("y", class_distribution(class_prior).mask(labeled), obs=observed)
            labels = observed
            if X is None:
                labeled = None  # generating features for given labels
        numpyro.sample(
            "x",
            class_conditional.ClassConditional(
                emission, labels.astype(jnp.int32), labeled, jnp.log(class_prior)
            ),
            obs=X,
        )


#: Blocks of the unlabeled rows in :func:`labeled_summary` (those past the last are skipped).
SUMMARY_BLOCKS = 8


def labeled_summary(story: Story, X, y, num_classes: int):
    """The data of :func:`model`'s cheaper density (docs/reference/core.md), or None where it
    does not apply; every leaf's shape is set by ``X``'s alone (``y``: codes, -1 unlabeled)."""
    if not (is_concrete(X) and is_concrete(y)) or scipy.sparse.issparse(X) or is_bcoo(X):
        return None
    if has_missing(X):
        return None
    dtype = jnp.result_type(X)
    X_host = np.asarray(X)
    codes = np.asarray(y)
    labeled = codes >= 0
    one_hot = (codes[labeled, None] == np.arange(num_classes)).astype(np.float64)
    found = []

    def probe():
        with numpyro.handlers.seed(rng_seed=0):
            params = story.prior(num_classes, X_host.shape[1])
        prior = jnp.full(num_classes, 1.0 / num_classes, dtype)
        emission = story.emission({**params, CLASS_PRIOR: prior})
        if _summarizes(type(emission)):  # NumPy on the data: concrete inside the trace
            found.append(emission.labeled_statistics(X_host[labeled].astype(np.float64), one_hot))
        return 0

    jax.eval_shape(probe)
    if not found:
        return None
    stats = {"counts": one_hot.sum(axis=0), **found[0]}
    order = np.argsort(labeled, kind="stable")  # unlabeled rows first
    # the blocks hold the rows' padded count: a new row count in its bucket compiles nothing
    (rows,) = execution.padded(X_host[order])
    num_rows = rows.shape[0]
    num_blocks = max(1, min(SUMMARY_BLOCKS, num_rows))
    size = -(-num_rows // num_blocks)
    rows = np.pad(rows, ((0, num_blocks * size - num_rows), (0, 0)), mode="edge")
    return {
        "statistics": {k: jnp.asarray(v, dtype) for k, v in stats.items()},
        "blocks": jnp.asarray(rows.reshape(num_blocks, size, -1), dtype),
        "num_unlabeled": jnp.asarray(np.sum(~labeled), jnp.int32),
    }


def _summarizes(emission_type) -> bool:
    """The emission's labeled statistics and density are defined with its ``log_prob``."""

    def owner(name):
        return next((c for c in emission_type.__mro__ if name in vars(c)), None)

    return (
        owner("labeled_log_prob") is not None
        and owner("labeled_log_prob") is owner("log_prob")
        and owner("labeled_statistics") is owner("log_prob")
    )


#: Rows beyond which a draw's traced shapes may overflow: refused by its int32 labels' size.
_UNTRACEABLE_ROWS = 2**48


def sample(story: Story, params: dict, num_samples: int, key):
    """Draw ``(X, y)`` (``num_samples`` rows, label codes) with fixed parameters; refuses a count
    that is not an int >= 1, or a draw too large to allocate (``SizeLimitError``)."""
    num_samples = check_count(num_samples, "num_samples")
    what = f"sampling {compact(num_samples)} rows"
    if num_samples > _UNTRACEABLE_ROWS:  # shapes JAX cannot trace: the labels alone decide
        check_working_set(
            4 * num_samples,
            1,
            what=what,
            sizes=f"the labels alone: {compact(num_samples)} x 4 bytes",
            advice="Draw fewer rows at a time.",
        )
    check_traced_size(partial(_draw, story, params, num_samples), key, what=what)
    return _draw(story, params, num_samples, key)


def _draw(story: Story, params: dict, num_samples: int, key):
    class_key, feature_key = jax.random.split(key)
    y = class_distribution(params[CLASS_PRIOR]).sample(class_key, (num_samples,)).astype(jnp.int32)
    X = class_conditional.ClassConditional(story.emission(params), y).sample(feature_key)
    return X, y
