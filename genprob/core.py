"""The functional core: one scoring path and one closed-form fitting path for every story.

Scoring. ``joint_log_prob(story, params, X)`` returns the (n, K) matrix

    J[i, k] = log pi_k + log p(x_i | y = k)

and everything else derives from it: the marginal log-likelihood (a log-sum-exp of J), EM
responsibilities and ArviZ pointwise log-likelihoods. Class posteriors are a log-softmax of the
same matrix up to a term of each row (``class_scores``, from :meth:`Story.discriminant`), which
a family may drop where it would overflow.

Stories are pytree arguments of the jitted functions: their numeric hyperparameters are traced,
so a new ``alpha`` or ``reg_param`` reuses the compiled code.

Fitting. Labels (one-hot), soft responsibilities and sample weights all enter through one
responsibility matrix R (n, K); the story turns ``(X, R)`` into additive sufficient statistics and
the statistics into parameters.
"""

from __future__ import annotations

from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
import scipy.sparse
import scipy.special

from genprob._arrays import OneHotRows, column_sums, namespace
from genprob._lazy import LazyModule
from genprob._limits import check_count, check_traced_size
from genprob._validation import (
    UNLABELED,
    all_concrete,
    check_class_codes,
    check_class_prior,
    check_feature_width,
    check_features,
    check_responsibilities,
    core_label_codes,
    is_concrete,
    refuse_unscored_rows,
    unscored_rows,
)
from genprob.masking import has_missing, marginalized
from genprob.story import CLASS_PRIOR, Story, class_distribution

numpyro = LazyModule("numpyro")
class_conditional = LazyModule("genprob.class_conditional")

__all__ = [
    "joint_log_prob",
    "class_scores",
    "predict_log_proba",
    "predict_proba",
    "log_likelihood",
    "one_hot_responsibilities",
    "OneHotRows",
    "sufficient_statistics",
    "combine_statistics",
    "fit_closed_form",
    "class_prior_from_counts",
    "model",
    "sample",
]


def joint_log_prob(story: Story, params: dict, X) -> jax.Array:
    """Log joint density ``log pi_k + log p(x_i | k)`` of every row and class, shape (n, K).

    ``X`` may be a SciPy sparse matrix when the story takes one (``accepts_scipy_sparse``): it is
    then scored on the host by the emission's own sparse products, never densified.

    Raises:
        ValueError: ``X`` not 2-D, with another feature count than the parameters, holding
            NaN or infinity (NaN is read as missing by a story that does so,
            :func:`genprob.masking.marginalized`), or values outside the story's support
            (:meth:`Story.validate`, e.g. a category code the story does not know).
    """
    _check_features(story, X)
    return _joint_log_prob_of_checked(story, params, X)


def _joint_log_prob_of_checked(story: Story, params: dict, X) -> jax.Array:
    """:func:`joint_log_prob` of features already checked on the host (finite, and in the
    story's support: :meth:`Story.validate`), as the estimators check them before scoring; the
    feature count is still checked."""
    if scipy.sparse.issparse(X):
        emission = _scipy_sparse_emission(story, params, X)
        return jnp.log(params[CLASS_PRIOR]) + jnp.asarray(emission.log_prob(X))
    return _joint_log_prob(story.without_sampling_settings(), params, X)


@jax.jit
def _joint_log_prob(story: Story, params: dict, X) -> jax.Array:
    emission = story.emission(params)
    _check_feature_count(emission, X)  # shapes only: runs once per compilation, not per call
    by_class = emission.log_prob(X[:, None, :])
    return jnp.log(params[CLASS_PRIOR]) + by_class


def _check_features(story: Story, X, num_rows=None) -> None:
    """Refuse NaN and infinite features, then values outside the story's support
    (:meth:`Story.validate`: a categorical code the story does not know, say), at a public
    entry, on the host, before any compiled program runs (inside ``jit``/``vmap`` only shapes
    are checked); NaN passes when the story reads it as missing
    (:attr:`Story.reads_nan_as_missing`)."""
    hint = "impute or drop those entries"
    if story.supports_missing:
        hint = "genprob.masking.marginalized(story) reads NaN as a missing value (summed out)"
    check_features(
        X, as_given=True, num_rows=num_rows, allow_nan=story.reads_nan_as_missing, nan_hint=hint
    )
    if is_concrete(X):
        # a host view: slices of a JAX array would be traced when called inside a transform
        story.validate(np.asarray(X) if isinstance(X, jax.Array) else X)


def _check_scipy_sparse(story: Story) -> None:
    if not story.accepts_scipy_sparse:
        raise TypeError(
            f"{type(story).__name__} does not take SciPy sparse input; pass X.toarray() or a "
            f"jax.experimental.sparse.BCOO matrix."
        )


def _scipy_sparse_emission(story: Story, params: dict, X):
    """The emission, after checking that the story takes SciPy sparse ``X`` of the right width."""
    _check_scipy_sparse(story)
    emission = story.emission(params)
    _check_feature_count(emission, X)
    return emission


def _check_feature_count(emission, X) -> None:
    if jnp.ndim(X) != 2:
        raise ValueError(f"X must be 2-D (n, D), got shape {jnp.shape(X)}.")
    if emission.event_shape:
        check_feature_width(X, emission.event_shape[-1])


def class_scores(story: Story, params: dict, X) -> jax.Array:
    """``log pi_k + story.discriminant(params, X)`` (n, K): the joint log-probability up to a
    term of each row alone, which prediction normalizes away (finite where the row term would
    overflow, for families that override :meth:`Story.discriminant`).

    Raises:
        ValueError: ``X`` not 2-D, with another feature count than the parameters, holding
            NaN (unless the story reads it as missing) or infinity, or values outside the
            story's support (:meth:`Story.validate`).
    """
    _check_features(story, X)
    return _class_scores(story.without_sampling_settings(), params, X)


@jax.jit
def _class_scores(story: Story, params: dict, X) -> jax.Array:
    _check_feature_count(story.emission(params), X)  # shapes only; the emission is not computed
    return jnp.log(params[CLASS_PRIOR]) + story.discriminant(params, X)


def predict_log_proba(story: Story, params: dict, X) -> jax.Array:
    """Log class posteriors ``log p(y = k | x_i)`` (n, K), normalized with a log-sum-exp.

    They come from ``log pi_k`` + :meth:`Story.discriminant`, which may leave out per-row terms.

    Raises:
        ValueError: as :func:`class_scores`.
    """
    _check_features(story, X)
    return _predict_log_proba_of_checked(story, params, X)


def _predict_log_proba_of_checked(story: Story, params: dict, X) -> jax.Array:
    """:func:`predict_log_proba` of features already checked on the host (see
    :func:`_joint_log_prob_of_checked`)."""
    log_proba = _host_posteriors(story, params, X, "log")
    if log_proba is not None:
        return jax.device_put(log_proba)
    return _predict_log_proba(story.without_sampling_settings(), params, X)


def _host_posteriors(story: Story, params: dict, X, kind: str) -> np.ndarray | None:
    """Class scores ``log pi_k`` + :meth:`Story.discriminant` (``kind="scores"``), log
    posteriors (``"log"``) or posteriors (``"proba"``) (n, K) in NumPy, for SciPy sparse rows or
    host rows of a story that scores on the host (:meth:`Story.scores_on_host`); None otherwise.

    Each block of :meth:`Story.discriminant_blocks` is checked (:func:`check_scored_rows`) and
    normalized while in cache: no (n, K) pass but the write, no copy or compilation per row
    count. One serial pass; BLAS threads its own products.
    """
    sparse = scipy.sparse.issparse(X)
    if not (sparse or (isinstance(X, np.ndarray) and story.scores_on_host(params, X))):
        return None
    if sparse:
        _check_scipy_sparse(story)
    with np.errstate(divide="ignore"):  # a class of prior 0 scores -inf
        log_prior = np.log(np.asarray(params[CLASS_PRIOR]))
    num_rows = X.shape[0]
    output = _SharedOutput(num_rows)

    bad = _score_span(story, params, X, 0, kind, log_prior, output)
    refuse_unscored_rows(bad)
    return output.out


class _SharedOutput:
    """The (n, K) result of :func:`_host_posteriors`, allocated by the first span to score a
    block (its dtype is the scores')."""

    def __init__(self, num_rows: int):
        self.num_rows = num_rows
        self.out = None

    def rows(self, start: int, scores: np.ndarray) -> np.ndarray:
        """The rows of the result under the block ``scores`` (K, m) starting at ``start``."""
        if self.out is None:
            dtype = np.result_type(scores, np.float32)
            self.out = np.empty((self.num_rows, len(scores)), dtype)
        return self.out[start : start + scores.shape[1]]


def _score_span(story, params, X, offset, kind, log_prior, output) -> np.ndarray:
    """:func:`_host_posteriors` of the rows ``X`` starting at row ``offset``: their rows of
    ``output`` written, the indices of unscored rows returned."""
    normalize = None
    bad = [np.zeros(0, np.intp)]
    for start, scores in story.discriminant_blocks(params, X):
        target = output.rows(offset + start, scores)
        if normalize is None:
            normalize = _Normalizer(len(scores), target.dtype, scores.shape[1])
        scores += log_prior[:, None]
        if kind == "scores":
            bad.append(offset + start + unscored_rows(scores.T))
            target[...] = scores.T
        elif not normalize(scores, target, log=kind == "log"):
            # a row without a finite largest score (NaN, -inf everywhere, or +inf)
            bad.append(offset + start + np.flatnonzero(~np.isfinite(scores.max(axis=0))))
    return np.concatenate(bad)


#: ``exp`` below this is under 1e-304 in float64 (1.8e-35 in float32), and NumPy's exp leaves
#: its vector loop for the last few units before the subnormals (10-100x slower): such terms
#: are taken as 0.
_EXP_FLOOR = {8: -700.0, 4: -80.0}


def _exp_floor(dtype) -> float:
    return _EXP_FLOOR.get(np.dtype(dtype).itemsize, -700.0)


#: Rows normalized at a time: their (K, m) buffers stay in cache.
_NORMALIZE_ROWS = 8192


def host_normalized(scores: np.ndarray, *, log: bool) -> np.ndarray:
    """Rows of class scores (n, K) normalized in NumPy: log posteriors (``log=True``, a
    log-sum-exp) or posteriors (a softmax), without a pass through the log domain.

    Rows must have a finite score (:func:`~genprob._validation.check_scored_rows`). Terms
    below ``exp(-700)`` of a row's largest (``exp(-80)`` in float32) are taken as 0: they leave
    its sum of at least 1 unchanged, so log posteriors are exact, and a posterior below 1e-304
    (1.8e-35) is returned as 0, as XLA, which flushes subnormals, does on the device. Blocks
    of rows are worked on as (K, m) so that each class is a contiguous vector: NumPy's ufuncs
    over the short rows of (n, K) run 2-3x slower (scipy.special.softmax costs several times
    more on small K).
    """
    scores = np.asarray(scores)
    out = np.empty(scores.shape, np.result_type(scores, np.float32))
    if not _Normalizer(scores.shape[1], out.dtype, len(scores))(scores.T, out, log=log):
        refuse_unscored_rows(np.flatnonzero(~np.isfinite(scores.max(axis=1))))
    return out


class _Normalizer:
    """:func:`host_normalized` of class-major scores (K, m) into ``out`` (m, K), any m, with
    (K, m) buffers of at most ``_NORMALIZE_ROWS`` columns allocated once."""

    def __init__(self, num_classes, dtype, num_rows):
        step = min(_NORMALIZE_ROWS, max(num_rows, 1))
        self.shifted = np.empty((num_classes, step), dtype)
        self.terms = np.empty_like(self.shifted)
        self.kept = np.empty_like(self.shifted)
        self.total = np.empty(step, dtype)
        self.floor = _exp_floor(dtype)

    def __call__(self, scores, out, *, log) -> bool:
        """False, leaving ``out`` unfinished, when a row's largest score is not finite."""
        num_classes, step = self.shifted.shape
        for start in range(0, scores.shape[1], step):
            block = scores[:, start : start + step]
            size = block.shape[1]
            z, e, t = self.shifted[:, :size], self.terms[:, :size], self.total[:size]
            np.copyto(t, block[0])
            for k in range(1, num_classes):
                np.maximum(t, block[k], out=t)  # NaN propagates
            if not np.isfinite(t).all():
                return False
            np.subtract(block, t, out=z)
            self._exp(z, e, self.kept[:, :size])
            np.copyto(t, e[0])
            for k in range(1, num_classes):
                np.add(t, e[k], out=t)
            target = out[start : start + size].T
            if log:
                np.log(t, out=t)
                np.subtract(z, t, out=target)
            else:
                np.reciprocal(t, out=t)
                np.multiply(e, t, out=target)
        return True

    def _exp(self, z, e, kept):
        """``e = exp(z)`` of ``z <= 0``, 0 below the floor, in NumPy's vector loop: without a
        term below the floor a plain ``exp``; else arguments below it are zeroed first (a
        product with the kept mask, cheaper than a clip) and their terms after; -inf terms take
        the clip."""
        lowest = z.min(initial=0.0)
        if lowest >= self.floor:
            np.exp(z, out=e)
        elif lowest > -np.inf:
            np.greater_equal(z, self.floor, out=kept)
            np.multiply(z, kept, out=e)
            np.exp(e, out=e)
            np.multiply(e, kept, out=e)
        else:
            _exp_above(z, self.floor, e, np.empty(z.shape, bool))


def exp_flushed(log_values):
    """``exp`` of log posteriors in NumPy, 0 below ``exp(-700)`` (``exp(-80)`` in float32; see
    :func:`host_normalized`): exact elsewhere, without NumPy's slow loop near the subnormals."""
    log_values = np.asarray(log_values)
    values = np.empty_like(log_values)
    _exp_above(log_values, _exp_floor(log_values.dtype), values, np.empty(values.shape, bool))
    return values


def _exp_above(values, floor, out, below):
    """``out = exp(values)``, 0 where ``values < floor``, run in NumPy's vector loop (the
    arguments are clipped to ``floor`` first); ``below`` is a boolean buffer."""
    np.maximum(values, floor, out=out)
    np.exp(out, out=out)
    np.less(values, floor, out=below)
    np.putmask(out, below, 0.0)


@jax.jit
def _predict_log_proba(story: Story, params: dict, X) -> jax.Array:
    return jax.nn.log_softmax(_class_scores(story, params, X), axis=-1)


def predict_proba(story: Story, params: dict, X) -> jax.Array:
    """Class posteriors ``p(y = k | x_i)`` (n, K); each row sums to one.

    Raises:
        ValueError: as :func:`class_scores`.
    """
    return jnp.exp(predict_log_proba(story, params, X))


def log_likelihood(
    story: Story, params: dict, X, y=None, *, pointwise: bool = False, unlabeled_label=-1
):
    """Log-likelihood of ``X`` with labels ``y`` (codes 0..K-1; -1 marks an unlabeled row).

    Labeled rows contribute ``log pi_y + log p(x | y)``, unlabeled rows (and every row when ``y``
    is None) ``log sum_k pi_k p(x | k)``. ``unlabeled_label`` names another integer code for
    unlabeled rows, or None when every row is labeled (then a -1 is refused).

    Returns:
        The total, or the per-row values (n,) when ``pointwise`` is true.

    Raises:
        ValueError: as :func:`joint_log_prob`, or label codes outside ``0..K-1`` and the
            unlabeled marker.
    """
    joint = joint_log_prob(story, params, X)
    if y is None:
        y = np.full(joint.shape[:1], UNLABELED, np.int32)
    else:
        y = core_label_codes(y, joint.shape[-1], unlabeled_label)
        if jnp.shape(y) != joint.shape[:1]:
            raise ValueError(f"y has shape {jnp.shape(y)} but X has {joint.shape[0]} rows.")
    values = _rows_log_likelihood(joint, y)
    return values if pointwise else values.sum()


@jax.jit
def _rows_log_likelihood(joint, codes):
    # one program: eagerly, these few operations compiled one program each (~20 in a new process)
    labeled = codes >= 0
    chosen = jnp.take_along_axis(joint, jnp.where(labeled, codes, 0)[:, None], axis=-1)[:, 0]
    return jnp.where(labeled, chosen, jax.nn.logsumexp(joint, axis=-1))


def one_hot_responsibilities(y, num_classes: int, sample_weight=None, dtype=None) -> jax.Array:
    """Responsibility matrix R (n, K) of label codes ``y``, rows scaled by sample weights.

    A code of -1 (an unlabeled row) gives a row of zeros; a code outside ``-1..K-1`` is refused.
    """
    check_class_codes(y, num_classes)
    dtype = dtype or jnp.result_type(float)
    if not (is_concrete(y) and is_concrete(sample_weight)):
        R = jax.nn.one_hot(jnp.asarray(y), num_classes, dtype=dtype)
        if sample_weight is not None:
            R = R * jnp.asarray(sample_weight, dtype=R.dtype)[:, None]
        return R
    # on the host: an eager one_hot compiles a program per row count
    return jax.device_put(one_hot_rows(np.asarray(y), num_classes, sample_weight, dtype))


def one_hot_rows(codes: np.ndarray, num_classes: int, sample_weight=None, dtype=None):
    """:func:`one_hot_responsibilities` of checked host codes, as a NumPy array."""
    # rows of the identity gathered by code (OneHotRows): 3x faster than zeros and a scattered
    # assignment
    return OneHotRows(codes, num_classes, sample_weight, dtype).dense()


def sufficient_statistics(story: Story, X, R) -> dict:
    """Additive statistics of ``(X, R)``: class counts plus the story's own statistics.

    A SciPy sparse ``X`` (stories with ``accepts_scipy_sparse``) stays on the host: the story's
    sparse products run there and only the dense statistics come back; so do dense NumPy rows
    of a story that asks for it (:meth:`Story.statistics_on_host`), whose statistics are NumPy.
    ``R`` may be a :class:`OneHotRows` (hard labels as codes): the story reads it as it is when
    it says so (:attr:`Story.accepts_one_hot_rows`), else gets the dense array.

    Raises:
        ValueError: a :class:`OneHotRows` code outside -1..K-1 (:meth:`OneHotRows.check_codes`).
    """
    if isinstance(R, OneHotRows):
        R.check_codes()
    if scipy.sparse.issparse(X):
        _check_scipy_sparse(story)
        R = np.asarray(R)
        stats = _with_class_counts(story, R, story.sufficient_statistics(X, R))
        if story.maximizes_on_host(stats["emission"]):
            return stats  # NumPy all the way: no device
        return jax.tree_util.tree_map(jnp.asarray, stats)
    if isinstance(X, np.ndarray) and story.statistics_on_host(X):
        if not (isinstance(R, OneHotRows) and story.accepts_one_hot_rows):
            R = np.asarray(R)
        # an overflow (or a NaN in X) gives inf or NaN as on the device, silently: the fit
        # refuses it by name (Story.check_overflow, or the estimator's finite check)
        with np.errstate(over="ignore", invalid="ignore"):
            emission = story.sufficient_statistics(X, R)
        return _with_class_counts(story, R, emission)
    if isinstance(R, OneHotRows):
        R = R.dense()
    return _sufficient_statistics(story.without_sampling_settings(), X, R)


def _with_class_counts(story: Story, R: np.ndarray, emission: dict) -> dict:
    """Host statistics: the class counts the story's statistics hold, else the sums of R."""
    counts = story.class_counts(emission)
    return {"class_counts": column_sums(R) if counts is None else counts, "emission": emission}


@jax.jit
def _sufficient_statistics(story: Story, X, R) -> dict:
    return {"class_counts": R.sum(axis=0), "emission": story.sufficient_statistics(X, R)}


@jax.jit
def combine_statistics(story: Story, stats_a: dict, stats_b: dict) -> dict:
    """Statistics of two data chunks together (:meth:`Story.combine_statistics`).

    ``maximize(story, combine_statistics(story, s_a, s_b))`` is the fit on both chunks, which is
    what incremental (``partial_fit``) and distributed fits rest on.
    """
    return {
        "class_counts": stats_a["class_counts"] + stats_b["class_counts"],
        "emission": story.combine_statistics(stats_a["emission"], stats_b["emission"]),
    }


def class_prior_from_counts(class_counts, class_prior=None, fit_prior: bool = True):
    """Class prior: MLE ``N_k / N``, a fixed user prior, or uniform when ``fit_prior`` is false."""
    num_classes = class_counts.shape[-1]
    xp = namespace(class_counts)
    if class_prior is not None:
        return xp.asarray(class_prior, dtype=class_counts.dtype)
    if not fit_prior:
        return xp.full(num_classes, 1.0 / num_classes, dtype=class_counts.dtype)
    return class_counts / class_counts.sum()


def maximize(story: Story, stats: dict, class_prior=None, fit_prior: bool = True) -> dict:
    """Closed-form parameters from statistics produced by :func:`sufficient_statistics`."""
    params = dict(story.maximize(stats["emission"]))
    params[CLASS_PRIOR] = class_prior_from_counts(stats["class_counts"], class_prior, fit_prior)
    return params


@jax.jit
def _emission_maximize(story: Story, emission_stats):
    return story.maximize(emission_stats)


def compiled_emission_maximize(story: Story, emission_stats) -> dict:
    """The story's M-step as one compiled program, the same one wherever parameters are derived
    from statistics (fit, partial_fit, a model file's derived parameters), so they agree bit for
    bit; a story whose M-step needs concrete values, or runs on the host
    (:meth:`Story.maximizes_on_host`), runs it eagerly."""
    if all_concrete(emission_stats) and story.maximizes_on_host(emission_stats):
        return dict(story.maximize(emission_stats))
    try:
        return dict(_emission_maximize(story.without_sampling_settings(), emission_stats))
    except (jax.errors.ConcretizationTypeError, jax.errors.TracerArrayConversionError):
        return dict(story.maximize(emission_stats))


def compiled_maximize(story: Story, stats: dict, class_prior=None, fit_prior: bool = True) -> dict:
    """:func:`maximize` with the M-step of :func:`compiled_emission_maximize`."""
    params = compiled_emission_maximize(story, stats["emission"])
    counts = stats["class_counts"]
    if is_concrete(counts) and is_concrete(class_prior):
        # on the host: eager sum and division would compile two programs per class count
        prior = class_prior_from_counts(np.asarray(counts), class_prior, fit_prior)
        on_host = all(isinstance(leaf, np.ndarray) for leaf in jax.tree_util.tree_leaves(params))
        # beside parameters of an M-step on the host, NumPy too: no device is needed
        params[CLASS_PRIOR] = prior if on_host else jax.device_put(prior)
    else:
        params[CLASS_PRIOR] = class_prior_from_counts(counts, class_prior, fit_prior)
    return params


def fit_closed_form(story: Story, X, R, class_prior=None, fit_prior: bool = True) -> dict:
    """Fit a closed-form story to data ``X`` with responsibilities ``R`` (n, K).

    Args:
        story: a story with a closed form.
        X: features (n, D); NaN only for a story that reads it as missing.
        R: responsibilities (n, K), finite and non-negative (one-hot labels times sample
            weights, or class posteriors).
        class_prior: fixed class prior (K,), non-negative and summing to 1; None: estimated.
        fit_prior: estimate the class prior (True) or use a uniform one (False).

    Raises:
        ValueError: non-finite or mis-shaped ``X``, NaN, infinite, negative or mis-shaped ``R``,
            a class prior of the wrong length, negative or not summing to 1, ``X`` outside the
            story's support, or fitted parameters that define no distribution
            (:meth:`Story.check_parameters`).
    """
    if not story.has_closed_form:
        raise NotImplementedError(
            f"{type(story).__name__} has no closed form; fit it with genprob.fit_optimizer."
        )
    check_responsibilities(R)
    _check_features(story, X, num_rows=jnp.shape(R)[0])
    if class_prior is not None:
        class_prior = _core_class_prior(class_prior, jnp.shape(R)[1])
    params = maximize(story, sufficient_statistics(story, X, R), class_prior, fit_prior)
    if is_concrete(X):
        story.check_parameters(params)
    return params


def _core_class_prior(class_prior, num_classes: int):
    """A fixed class prior checked as the estimators and :func:`genprob.fit_em` check it
    (:func:`genprob._validation.check_class_prior`); a traced one by its shape only."""
    if is_concrete(class_prior):
        return check_class_prior(class_prior, range(num_classes))
    if jnp.shape(class_prior) != (num_classes,):
        raise ValueError(
            f"class_prior has shape {jnp.shape(class_prior)}; expected ({num_classes},), one "
            f"probability per class (column of R)."
        )
    return class_prior


def model(story: Story, X=None, y=None, *, num_classes: int, num_features=None, num_samples=None):
    """The story as a NumPyro model.

    It reads as the generative process: draw the parameters from their prior, then for each row
    draw a class from the class prior and the features given that class. Labels equal to -1 are
    unknown: the label site is masked out there and the feature site sums the class out, so the
    same model serves supervised, semi-supervised and unsupervised data.

    Args:
        story: the story.
        X: observed features (n, D), or None to generate.
        y: label codes (n,) in 0..K-1, -1 for unlabeled rows; None to generate them.
        num_classes: K.
        num_features: D, needed only when ``X`` is None.
        num_samples: n, needed only when both ``X`` and ``y`` are None.
    """
    num_features = X.shape[-1] if X is not None else num_features
    if X is not None and has_missing(X):
        story = marginalized(story)  # NaN entries are missing: only observed entries score
    if X is not None:
        num_samples = X.shape[0]
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
    with numpyro.plate("data", num_samples):
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


def sample(story: Story, params: dict, num_samples: int, key):
    """Draw ``(X, y)`` from the two-step generative process with fixed parameters.

    Returns:
        ``X`` (num_samples, D) and label codes ``y`` (num_samples,).

    Raises:
        TypeError, ValueError: ``num_samples`` is not an int >= 1.
        genprob._limits.SizeLimitError: the draw would allocate too large an array (checked by
            tracing before anything is allocated).
    """
    num_samples = check_count(num_samples, "num_samples")
    check_traced_size(
        partial(_draw, story, params, num_samples), key, what=f"sampling {num_samples} rows"
    )
    return _draw(story, params, num_samples, key)


def _draw(story: Story, params: dict, num_samples: int, key):
    class_key, feature_key = jax.random.split(key)
    y = class_distribution(params[CLASS_PRIOR]).sample(class_key, (num_samples,)).astype(jnp.int32)
    X = class_conditional.ClassConditional(story.emission(params), y).sample(feature_key)
    return X, y
