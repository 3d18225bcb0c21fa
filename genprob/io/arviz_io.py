"""ArviZ conversion, the MLE-vs-posterior table and plots. Every ArviZ call of genprob is here."""

from __future__ import annotations

import jax
import numpy as np

from genprob.engine._validation import check_features
from genprob.engine.em import encode_partial_labels
from genprob.engine.execution import padded_rows
from genprob.engine.masking import reads_nan_as_missing
from genprob.inference import _posterior_figures as figures
from genprob.inference.draws import pointwise_log_likelihood, posterior_predict_proba
from genprob.io import _arviz_compat as compat
from genprob.story import CLASS_PRIOR, Story

__all__ = [
    "to_arviz",
    "mle_vs_posterior_table",
    "plot_posterior_vs_mle",
    "plot_forest",
    "plot_predictive_vs_plugin",
    "predictive_vs_plugin",
    "LOG_LIKELIHOOD_NAME",
    "PREDICTIVE_DRAWS",
    "PREDICTIVE_MAX_VALUES",
]

#: Name of the pointwise log-likelihood variable (group ``log_likelihood``).
LOG_LIKELIHOOD_NAME = "obs"
#: Posterior draws (all chains together) replicated for ``posterior_predictive``, and draws of
#: the ``prior`` group: enough for ``az.plot_ppc`` and prior checks at a small cost beside NUTS.
PREDICTIVE_DRAWS = 500
#: Most values (draws x rows x (features + 1)) replicated for ``posterior_predictive``: a wide
#: or long data set keeps fewer draws (at least one per chain).
PREDICTIVE_MAX_VALUES = 5_000_000
#: Probability mass of the highest-density intervals in tables and plots (ArviZ's default).
HDI_PROB = 0.94
#: NumPyro's extra-field names -> ArviZ's ``sample_stats`` names (where they differ).
_SAMPLE_STATS_NAMES = {
    "accept_prob": "acceptance_rate",
    "num_steps": "n_steps",
    "adapt_state.step_size": "step_size",
    "potential_energy": "lp",  # negated
}


def _as_draws(posterior, story: Story, num_features: int):
    """``(draws with a (chain, draw) batch, sample_stats or None)`` of an MCMC object or dict."""
    from genprob.inference.mcmc import params_from_samples

    sample_stats = None
    if hasattr(posterior, "get_samples") and hasattr(posterior, "get_extra_fields"):
        samples = posterior.get_samples(group_by_chain=True)
        draws = params_from_samples(story, samples, num_features)
        sample_stats = posterior.get_extra_fields(group_by_chain=True)
    elif isinstance(posterior, dict):
        if CLASS_PRIOR not in posterior:
            raise ValueError(
                f"posterior draws must include {CLASS_PRIOR!r}; got {sorted(posterior)}."
            )
        draws = dict(posterior)
    else:
        raise ValueError(
            f"posterior must be a NumPyro MCMC object or a dict of draws, got "
            f"{type(posterior).__name__}."
        )
    draws = {k: np.asarray(v) for k, v in draws.items()}
    batch_ndim = draws[CLASS_PRIOR].ndim - 1
    if batch_ndim == 1:  # a dict of draws without a chain axis (an MCMC object has one)
        draws = {k: v[None] for k, v in draws.items()}
    elif batch_ndim != 2:
        raise ValueError(
            f"draws of {CLASS_PRIOR!r} must have shape (draws, K) or (chains, draws, K); got "
            f"{draws[CLASS_PRIOR].shape}."
        )
    batch = draws[CLASS_PRIOR].shape[:2]
    for name, value in draws.items():
        if value.shape[:2] != batch:
            raise ValueError(
                f"draws of {name!r} have leading shape {value.shape[:2]}, but those of "
                f"{CLASS_PRIOR!r} have {batch}: every parameter needs the same chains and draws."
            )
    return draws, sample_stats


def _sample_stats(extra: dict) -> dict:
    names = {name: _SAMPLE_STATS_NAMES.get(name, name.replace(".", "_")) for name in extra}
    stats = {names[name]: np.asarray(value) for name, value in extra.items()}
    if "potential_energy" in extra:
        stats["lp"] = -stats["lp"]
    return stats


def to_arviz(
    posterior,
    story: Story,
    X,
    y=None,
    *,
    mle: dict | None = None,
    classes=None,
    feature_names=None,
    sample_stats: dict | None = None,
    method: str | None = None,
    predictive_draws: int | None = None,
    predictive_seed: int | None = None,
):
    """Posterior draws of a story's parameters as an ArviZ result (docs/reference/arviz_io.md).

    Args:
        posterior: a NumPyro ``MCMC`` object run on :func:`genprob.core.model`, or a dict of
            parameter draws with leading shape ``(chains, draws)`` or ``(draws,)``.
        story: the story the draws belong to.
        X: the data the posterior was conditioned on (n, D).
        y: class codes (n,), -1 for unlabeled rows; None when every row is unlabeled.
        mle: point estimate to carry along (e.g. ``estimator.params_``): group ``mle``.
        classes: class names (coordinates of dim ``class``); default ``0..K-1``.
        feature_names: feature names (coordinates of dim ``feature``); default ``x0..``.
        sample_stats: NumPyro extra fields (``(chains, draws)`` arrays); default: the MCMC's.
        method: ``"nuts"`` or ``"exact"``, recorded as ``attrs["inference_method"]``.
        predictive_draws: draws of the ``posterior_predictive`` (thinned over the chains, at
            most :data:`PREDICTIVE_MAX_VALUES` values) and ``prior`` groups; None:
            :data:`PREDICTIVE_DRAWS`; 0 leaves both groups out.
        predictive_seed: seed of the predictive and prior draws (default: fixed by the data).

    Returns:
        ``arviz.InferenceData`` (ArviZ 0.x) or ``xarray.DataTree`` (ArviZ 1.x).
    """
    X = check_features(X, keep_sparse=True, to_device=True, allow_nan=reads_nan_as_missing(story))
    num_features = int(X.shape[1])
    # run_nuts records the story with the prior it sampled under (data-scaled by default)
    story = getattr(posterior, "genprob_story", story)
    draws, mcmc_stats = _as_draws(posterior, story, num_features)
    if sample_stats is None:
        sample_stats = mcmc_stats
    if method is None:
        method = "nuts" if sample_stats is not None else "unknown"
    num_classes = draws[CLASS_PRIOR].shape[-1]
    n = int(X.shape[0])
    codes = np.full(n, -1, np.int32) if y is None else np.asarray(y)
    codes, _ = encode_partial_labels(codes, num_classes=num_classes) if n else (codes, None)
    if codes.shape[0] != n:
        raise ValueError(f"y has {codes.shape[0]} rows but X has {n}.")
    classes = list(range(num_classes)) if classes is None else list(np.asarray(classes).tolist())
    if len(classes) != num_classes:
        raise ValueError(f"{len(classes)} class names for {num_classes} classes.")
    if feature_names is None:
        feature_names = [f"x{j}" for j in range(num_features)]
    feature_names = [str(f) for f in feature_names]
    if len(feature_names) != num_features:
        raise ValueError(f"{len(feature_names)} feature names for {num_features} features.")

    # an axis the story does not name (None) is named by compat.dataset: <name>_dim_<i>
    dims = {
        name: list(story.parameter_dims(name, value.shape[2:], num_classes, num_features))
        for name, value in draws.items()
    }
    rows = {"y": ["row"], "X": ["row", "feature"], LOG_LIKELIHOOD_NAME: ["row"]}
    dims.update({CLASS_PRIOR: ["class"], **rows})
    # feature2: the second axis of a (feature x feature) matrix
    coords = {"class": classes, "feature": feature_names, "feature2": feature_names}
    coords.update(story.coords(list(feature_names)))
    log_lik = np.asarray(pointwise_log_likelihood(story, draws, X, codes))
    observed = {"y": _class_names(classes, codes)}
    dense = isinstance(X, jax.Array)  # a sparse (BCOO) matrix is not copied in densely
    if dense:
        observed["X"] = np.asarray(X)
    seed = 0 if predictive_seed is None else int(predictive_seed)
    predictive = prior_draws = None
    predictive_draws = PREDICTIVE_DRAWS if predictive_draws is None else int(predictive_draws)
    if predictive_draws:
        chains, num_draws = draws[CLASS_PRIOR].shape[:2]
        per_chain = predictive_per_chain(chains, num_draws, n, num_features, predictive_draws)
        predictive = _posterior_predictive(story, draws, (n, num_features), per_chain, seed, dense)
        predictive["y"] = _class_names(classes, predictive["y"])
        prior_draws = _prior_draws(story, num_classes, num_features, predictive_draws, seed)
    prior = [f"class_concentration={float(story.class_concentration):g}", *_numeric_settings(story)]
    attrs = {
        "inference_method": method,
        "inference_library": "genprob",
        "story": repr(story),
        "prior": f"{type(story).__name__} prior: " + "; ".join(prior),
    }
    # groups in ArviZ 0.x's schema order, which InferenceData imposes and DataTree keeps
    groups = {"posterior": compat.dataset(draws, dims, coords, attrs)}
    if predictive is not None:
        groups["posterior_predictive"] = compat.dataset(
            predictive,
            dims,
            coords,
            {"description": "replicated data sets (y, X) from the story at thinned draws"},
        )
    groups["log_likelihood"] = compat.dataset(
        {LOG_LIKELIHOOD_NAME: log_lik},
        dims,
        coords,
        {
            "description": "log p(x_i, y_i | θ) on labeled rows, log Σ_k p(x_i, k | θ) on "
            "unlabeled rows (y = -1)"
        },
    )
    if sample_stats is not None:
        groups["sample_stats"] = compat.dataset(_sample_stats(sample_stats), {}, {})
    if prior_draws is not None:
        groups["prior"] = compat.dataset(prior_draws, dims, coords, attrs)
    groups["observed_data"] = compat.dataset(observed, dims, coords, sample_dims=())
    if mle is not None:
        missing = sorted(set(draws) - set(mle))
        if missing:
            raise ValueError(f"mle lacks parameters {missing} that the draws have.")
        data_vars = {name: np.asarray(mle[name]) for name in draws}
        for name, value in data_vars.items():
            if value.shape != draws[name].shape[2:]:
                raise ValueError(
                    f"mle[{name!r}] has shape {value.shape}; the draws have "
                    f"{draws[name].shape[2:]}."
                )
        groups["mle"] = compat.dataset(data_vars, dims, coords, {"estimate": "mle"}, sample_dims=())
    return compat.build(groups)


def _class_names(classes, codes) -> np.ndarray:
    """Class names of codes; unlabeled rows (-1) get -1 (numeric names) or ``""`` (text)."""
    names = np.asarray(classes)
    codes = np.asarray(codes)
    values = names[np.where(codes >= 0, codes, 0)]
    missing = -1 if names.dtype.kind in "iuf" else ""
    return np.where(codes >= 0, values, np.asarray(missing, dtype=names.dtype))


def _numeric_settings(story: Story, prefix: str = "") -> list:
    """``name=value`` of the story's floating-point settings, nested stories' prefixed."""
    parts = []
    for name, value in story.fields().items():
        if name.startswith("_"):
            continue
        if isinstance(value, Story):
            parts += _numeric_settings(value, f"{prefix}{name}.")
        elif isinstance(value, list | tuple):
            for item in value:  # blocks such as (name, story, columns)
                label = item[0] if isinstance(item, tuple) and isinstance(item[0], str) else name
                for child in item if isinstance(item, tuple) else (item,):
                    if isinstance(child, Story):
                        parts += _numeric_settings(child, f"{prefix}{label}.")
        elif isinstance(value, float) and not isinstance(value, bool):
            parts.append(f"{prefix}{name}={value:.6g}")
        elif isinstance(value, np.ndarray) and value.dtype.kind == "f":
            shown = np.array2string(value, precision=4, separator=", ", max_line_width=10_000)
            parts.append(f"{prefix}{name}={shown}")
    return parts


def predictive_per_chain(num_chains: int, num_draws: int, n: int, num_features: int, total: int):
    """Draws per chain of ``posterior_predictive``: ``total`` over the chains, capped, >= 1."""
    per_chain = max(total // max(num_chains, 1), 1)
    values = max(num_chains * n * (num_features + 1), 1)  # X and y of one draw per chain
    return max(min(per_chain, PREDICTIVE_MAX_VALUES // values, num_draws), 1)


def _replicate_rows(story, flat, keys, n):
    """``(X, y)`` of ``n`` rows from the story at every draw of ``flat``."""
    from genprob import core

    return jax.vmap(lambda p, key: core.sample(story, p, n, key))(flat, keys)


def _prior_sites(story, key, num_classes, num_features, num_draws):
    """``num_draws`` draws of the prior's sites (compiled once per story structure)."""
    from numpyro.infer import Predictive

    from genprob import core
    from genprob.inference.optimize import model_sites

    X = jax.ShapeDtypeStruct((1, num_features), jax.numpy.result_type(float))
    y = jax.ShapeDtypeStruct((1,), np.int32)
    sites = [site.name for site in model_sites((story, X, y), num_classes)]
    predictive = Predictive(core.model, num_samples=num_draws, return_sites=sites)
    return predictive(key, story, num_classes=num_classes, num_features=num_features, num_samples=1)


_replicate = jax.jit(_replicate_rows, static_argnums=3)
_draw_prior = jax.jit(_prior_sites, static_argnums=(2, 3, 4))


def _compiled_or_eager(compiled, plain, *args):
    try:
        return compiled(*args)
    except jax.errors.ConcretizationTypeError:  # a sampler that needs a setting's value
        return plain(*args)


def _posterior_predictive(story: Story, draws: dict, shape, per_chain: int, seed, features):
    """Replicated ``(y, X)`` of ``shape = (n, D)`` rows at thinned draws, by NumPy or JAX."""
    from genprob.inference._host_draws import host_replicate

    n = shape[0]
    total = draws[CLASS_PRIOR].shape[1]  # per_chain draws of each chain, evenly spaced
    index = np.unique(np.linspace(0, total - 1, min(per_chain, total)).round().astype(int))
    thinned = {k: v[:, index] for k, v in draws.items()}
    batch = thinned[CLASS_PRIOR].shape[:2]
    flat = {k: v.reshape((-1,) + v.shape[2:]) for k, v in thinned.items()}
    replicated = host_replicate(story, flat, n, np.random.default_rng(int(seed)))
    if replicated is None:
        flat = {k: jax.numpy.asarray(v) for k, v in flat.items()}
        keys = jax.random.split(jax.random.PRNGKey(int(seed)), int(np.prod(batch)))
        size = padded_rows(*shape)  # a bucket's row counts share one program; the extra rows go
        replicated = _compiled_or_eager(_replicate, _replicate_rows, story, flat, keys, size)
        replicated = tuple(np.asarray(v)[:, :n] for v in replicated)
    X_rep, y_rep = replicated
    out = {"y": np.asarray(y_rep).reshape(batch + (n,))}
    if features:
        out["X"] = np.asarray(X_rep).reshape(batch + X_rep.shape[1:])
    return out


def _prior_draws(story: Story, num_classes: int, num_features: int, num_draws: int, seed):
    """Draws of the story's parameters from its prior, one chain, by NumPy or JAX."""
    from genprob.inference._host_draws import host_prior_sites
    from genprob.inference.mcmc import params_from_samples

    rng = np.random.default_rng(int(seed) + 1)
    samples = host_prior_sites(story, num_classes, num_features, int(num_draws), rng)
    if samples is None:
        key = jax.random.PRNGKey(int(seed) + 1)
        args = (story, key, num_classes, num_features, int(num_draws))
        samples = _compiled_or_eager(_draw_prior, _prior_sites, *args)
    params = params_from_samples(story, samples, num_features)
    return {k: np.asarray(v)[None] for k, v in params.items()}


# -- the comparison table ------------------------------------------------------------------------
def _selection(idata, var_names, coords, labels, *, need_mle: bool):
    """``(names, posterior, mle or None)`` with ``coords`` selected and ``labels`` assigned."""
    posterior = compat.get_group(idata, "posterior")
    known = list(posterior.data_vars)
    names = known if var_names is None else [str(v) for v in np.atleast_1d(var_names)]
    unknown = [v for v in names if v not in known]
    if unknown:
        raise ValueError(f"unknown parameters {unknown}; the posterior has {known}.")
    if need_mle and not compat.has_group(idata, "mle"):
        raise ValueError(
            "the ArviZ result has no 'mle' group: build it with estimator.posterior(...) or "
            "genprob.to_arviz(..., mle=params)."
        )
    mle = compat.get_group(idata, "mle") if compat.has_group(idata, "mle") else None
    dims = {d for name in names for d in posterior[name].dims} - {"chain", "draw"}
    for option, given in (("coords", coords), ("labels", labels)):
        unknown = sorted(set(given or {}) - dims)
        if unknown:
            raise ValueError(
                f"{option} name dims {unknown} that {', '.join(names)} do not have; their dims: "
                f"{sorted(dims)}."
            )
    if coords:
        selection = {d: list(np.atleast_1d(v)) for d, v in coords.items()}
        try:
            posterior = posterior.sel(selection)
            mle = None if mle is None else mle.sel(selection)
        except KeyError as error:
            known = {d: list(posterior.coords[d].values) for d in selection}
            raise ValueError(
                f"coords {coords} select unknown labels ({error}); known: {known}."
            ) from None
    for dim, names_of_dim in (labels or {}).items():
        names_of_dim = [str(v) for v in names_of_dim]
        if len(names_of_dim) != posterior.sizes[dim]:
            raise ValueError(
                f"labels[{dim!r}] has {len(names_of_dim)} names for {posterior.sizes[dim]} "
                f"coordinates ({list(posterior.coords[dim].values)})."
            )
        posterior = posterior.assign_coords({dim: names_of_dim})
        if mle is not None and dim in mle.dims:
            mle = mle.assign_coords({dim: names_of_dim})
    return names, posterior, mle


def mle_vs_posterior_table(
    idata, var_names=None, hdi_prob: float = HDI_PROB, coords=None, labels=None
):
    """One row per distinct scalar parameter entry (a symmetric matrix's upper triangle): the
    MLE next to the posterior's summary.

    Args:
        idata: ArviZ result from :func:`to_arviz` / ``estimator.posterior`` (with ``mle``).
        var_names: parameters to include (default: all).
        hdi_prob: mass of the highest-density interval (0.94: columns ``hdi_3%``, ``hdi_97%``).
        coords: selection by dim, e.g. ``{"class": ["setosa"], "feature": ["petal_width"]}``.
        labels: display names of a dim's coordinates, e.g. ``{"category": ["Biscoe", ...]}``.

    Returns:
        ``pandas.DataFrame`` with columns ``parameter`` (e.g. ``"probs[spam, x3]"``), ``mle``,
        ``mean``, ``sd`` (ddof = 1), the two HDI bounds, ``mle_in_hdi``, ``r_hat`` (NaN with a
        single chain) and ``ess_bulk``.
    """
    import pandas as pd

    names, posterior, mle = _selection(idata, var_names, coords, labels, need_mle=True)
    posterior = posterior[names]
    lower_name, upper_name = compat.hdi_columns(hdi_prob)
    # constant entries (padding of categorical tables) have no r_hat/ESS: NaN is the honest value
    hdi = compat.hdi(posterior, hdi_prob)
    ess = compat.ess(posterior, method="bulk")
    rhat = compat.rhat(posterior) if posterior.sizes["chain"] > 1 else None
    columns = ["parameter", "mle", "mean", "sd", lower_name, upper_name, "mle_in_hdi", "r_hat"]
    rows = []
    for name, dims, index, label, value in figures.distinct_entries(posterior, mle, names):
        draws = posterior[name].transpose("chain", "draw", *dims).values[(slice(None),) * 2 + index]
        lower = float(hdi[name].sel({compat.HDI_DIM: "lower"}).transpose(*dims).values[index])
        upper = float(hdi[name].sel({compat.HDI_DIM: "upper"}).transpose(*dims).values[index])
        r_hat = np.nan if rhat is None else float(rhat[name].transpose(*dims).values[index])
        mean, sd = float(draws.mean()), float(draws.std(ddof=1))
        ess_bulk = float(ess[name].transpose(*dims).values[index])
        row = (label, value, mean, sd, lower, upper, bool(lower <= value <= upper), r_hat, ess_bulk)
        rows.append(row)
    return pd.DataFrame(rows, columns=[*columns, "ess_bulk"])


# -- plots ---------------------------------------------------------------------------------------
_METHODS = {"nuts": "NUTS posterior", "exact": "exact conjugate posterior"}


def _figure_title(idata, title, posterior):
    """``title`` as given (``""``: none), or one naming the story, the rows and the method."""
    if title is not None:
        return title or None
    attrs = compat.get_group(idata, "posterior").attrs
    story = str(attrs.get("story", "a story")).split("(")[0]
    method = attrs.get("inference_method", "posterior")
    method = _METHODS.get(method, f"{method} posterior")
    rows = ""
    if compat.has_group(idata, "observed_data"):
        rows = f" on {compat.get_group(idata, 'observed_data')['y'].size} rows"
    draws = f"{posterior.sizes['chain']} chain(s) x {posterior.sizes['draw']} draws"
    return f"{story}{rows}: {method} ({draws}) against the MLE"


def plot_posterior_vs_mle(
    idata,
    var_names=None,
    hdi_prob: float = HDI_PROB,
    coords=None,
    labels=None,
    max_panels: int = figures.MAX_PANELS,
    title: str | None = None,
    **kwargs,
):
    """Posterior densities with their HDI and the MLE as reference line, one panel per entry.

    Args:
        idata: ArviZ result with an ``mle`` group.
        var_names: parameters to plot (default: all).
        hdi_prob: HDI mass.
        coords: selection by dim, e.g. ``{"class": ["setosa"]}``.
        labels: display names of a dim's coordinates, e.g. ``{"category": ["Biscoe", ...]}``.
        max_panels: most panels of the figure (12): select with ``var_names`` / ``coords``.
        title: the figure's title (default: the story, rows and method; ``""``: none).
        **kwargs: ``figsize``, ``textsize`` (font size of titles and labels) and ``columns``.

    Returns:
        The ``matplotlib.figure.Figure``.

    Raises:
        ValueError: more than ``max_panels`` entries selected (the message says how to select).
    """
    names, posterior, mle = _selection(idata, var_names, coords, labels, need_mle=True)
    title = _figure_title(idata, title, posterior)
    return figures.posterior_vs_mle(
        posterior, mle, names, hdi_prob, max_panels=int(max_panels), title=title, **kwargs
    )


def plot_forest(
    idata,
    var_names=None,
    hdi_prob: float = HDI_PROB,
    coords=None,
    labels=None,
    title: str | None = None,
    **kwargs,
):
    """Forest plot of posterior HDIs and means with the MLE as a second marker per entry.

    Args:
        idata: ArviZ result (without an ``mle`` group the posterior alone is drawn).
        var_names, hdi_prob, coords, labels, title: as for :func:`plot_posterior_vs_mle`.
        **kwargs: ``figsize`` and ``textsize``.

    Returns:
        The ``matplotlib.figure.Figure``.
    """
    names, posterior, mle = _selection(idata, var_names, coords, labels, need_mle=False)
    title = _figure_title(idata, title, posterior)
    return figures.forest(posterior, mle, names, hdi_prob, title=title, **kwargs)


def predictive_vs_plugin(estimator, idata, X_points, hdi_prob: float = HDI_PROB):
    """Plug-in (MLE) against posterior-predictive class probabilities at some points.

    Args:
        estimator: the fitted genprob estimator the posterior belongs to.
        idata: its posterior (``estimator.posterior(...)``).
        X_points: points (m, D), in the estimator's input format.
        hdi_prob: mass of the HDI of the per-draw probabilities.

    Returns:
        ``pandas.DataFrame`` with one row per point and class: ``point``, ``class``, ``plugin``,
        ``posterior_mean`` and the HDI bounds of the per-draw probabilities.
    """
    import pandas as pd
    import xarray as xr

    from genprob.engine._dtype import precision

    plugin = estimator.predict_proba(X_points)
    X = estimator._check_X(X_points)
    if hasattr(X, "toarray"):
        X = X.toarray()
    posterior = compat.get_group(idata, "posterior")
    draws = {k: v.transpose("chain", "draw", ...).values for k, v in posterior.data_vars.items()}
    if draws[CLASS_PRIOR].shape[-1] != len(estimator.classes_):
        raise ValueError(
            f"the posterior has {draws[CLASS_PRIOR].shape[-1]} classes, the estimator "
            f"{len(estimator.classes_)}: they do not belong together."
        )
    with precision(estimator._dtype):
        draws_j = {k: jax.numpy.asarray(v) for k, v in draws.items()}
        per_draw = np.asarray(
            posterior_predict_proba(estimator.story_, draws_j, estimator._as_array(X))
        )
    lower_name, upper_name = compat.hdi_columns(hdi_prob)
    dims = ["chain", "draw", "point", "class"]
    interval = compat.hdi(xr.Dataset({"p": (dims, per_draw)}), hdi_prob)["p"]
    interval = interval.transpose("point", "class", compat.HDI_DIM).values  # (m, K, 2)
    m, K = plugin.shape
    floats = {
        "plugin": plugin,
        "posterior_mean": per_draw.mean(axis=(0, 1)),
        lower_name: interval[..., 0],
        upper_name: interval[..., 1],
    }
    table = {"point": np.repeat(np.arange(m), K), "class": np.tile(estimator.classes_, m)}
    return pd.DataFrame({**table, **{k: np.ravel(v).astype(float) for k, v in floats.items()}})


def plot_predictive_vs_plugin(
    estimator, idata, X_points, hdi_prob: float = HDI_PROB, title: str | None = None
):
    """Plot :func:`predictive_vs_plugin`: one panel per class, plug-in (circle) and posterior
    mean (diamond) with its HDI (bar) at each point; ``title`` as for :func:`plot_posterior_vs_mle`.

    Returns:
        The ``matplotlib.figure.Figure`` (created without pyplot: no GUI needed).
    """
    from matplotlib.figure import Figure

    table = predictive_vs_plugin(estimator, idata, X_points, hdi_prob=hdi_prob)
    lower_name, upper_name = compat.hdi_columns(hdi_prob)
    classes = list(estimator.classes_)
    columns = min(len(classes), 4)
    rows = -(-len(classes) // columns)
    figure = Figure(figsize=(3.2 * columns, 2.6 * rows), layout="constrained")
    axes = np.atleast_1d(figure.subplots(rows, columns, sharey=True, squeeze=False)).ravel()
    for ax, label in zip(axes, classes, strict=False):
        part = table[table["class"] == label]
        points = part["point"].to_numpy()
        mean = part["posterior_mean"].to_numpy()
        error = np.vstack([mean - part[lower_name], part[upper_name] - mean])
        ax.errorbar(
            points + 0.1,
            mean,
            yerr=np.maximum(error, 0),
            fmt="D",
            color="C1",
            label=f"posterior predictive ({int(hdi_prob * 100)}% HDI)",
        )
        ax.plot(points - 0.1, part["plugin"], "o", color="C0", label="plug-in (MLE)")
        ax.set_title(f"P(y = {label} | x)")
        ax.set_xlabel("point")
        ax.set_ylim(-0.02, 1.02)
        ax.set_xticks(points)
    for ax in axes[len(classes) :]:
        ax.set_visible(False)
    axes[0].set_ylabel("probability")
    axes[0].legend(loc="best", fontsize="small")
    title = _figure_title(idata, title, compat.get_group(idata, "posterior"))
    if title:
        figure.suptitle(title)
    return figure
