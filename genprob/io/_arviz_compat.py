"""The one place that knows which ArviZ major is installed (docs/reference/arviz_io.md)."""

from __future__ import annotations

import contextlib
import functools
import importlib
import warnings

import numpy as np

#: The interval dimension (coordinates lower, upper) that :func:`hdi` returns on both majors.
HDI_DIM = "hdi"
_SAMPLE_DIMS = ("chain", "draw")


@functools.cache
def arviz():
    """The ``arviz`` module, imported on first use without its import-time notices."""
    with warnings.catch_warnings():
        # 0.x announces its refactor at import time; that notice is not for genprob's users
        warnings.filterwarnings("ignore", message="ArviZ is undergoing", category=FutureWarning)
        # two processes importing 0.23 at once race on its "daily_warning" stamp: retry once
        for _ in range(2):
            try:
                return importlib.import_module("arviz")
            except OSError as error:
                if not any("daily_warning" in str(f) for f in (error.filename, error.filename2)):
                    raise
                failure = error
    raise ImportError(
        f"ArviZ could not be imported: at import it writes the date of its daily notice to "
        f"{failure.filename2 or failure.filename!r}, which failed ({failure.strerror}). Point "
        "XDG_CACHE_HOME at a writable directory."
    ) from failure


@functools.cache
def major() -> int:
    """Major version of the installed ArviZ (0 or 1)."""
    return int(str(arviz().__version__).split(".", 1)[0])


# -- the groups -----------------------------------------------------------------------------
def dataset(variables: dict, dims: dict, coords: dict, attrs=None, sample_dims=_SAMPLE_DIMS):
    """One group as an ``xarray.Dataset``; unnamed axes are ``{name}_dim_{i}``, coords 0, 1, ..."""
    import xarray as xr

    data_vars, used = {}, {}
    for name, value in variables.items():
        value = np.asarray(value)
        event_ndim = value.ndim - len(sample_dims)
        event = dims.get(name) or [None] * event_ndim
        event = [d or f"{name.replace('.', '_')}_dim_{i}" for i, d in enumerate(event)]
        var_dims = list(sample_dims) + list(event)
        if len(var_dims) != value.ndim:
            raise ValueError(f"{name!r} has shape {value.shape} but dims {var_dims}.")
        data_vars[name] = (var_dims, value)
        for dim, size in zip(var_dims, value.shape, strict=True):
            used[dim] = coords[dim] if dim in coords else np.arange(size)
    return xr.Dataset(data_vars, coords=used, attrs=dict(attrs or {}))


# -- the container ---------------------------------------------------------------------------
def build(groups: dict):
    """``arviz.InferenceData`` (0.x) or ``xarray.DataTree`` (1.x) of ``groups``, in order."""
    if major() >= 1:
        import xarray as xr

        return xr.DataTree.from_dict({f"/{name}": ds for name, ds in groups.items()})
    with warnings.catch_warnings():
        # groups outside ArviZ's schema (e.g. ``mle``) are allowed; 0.x only warns about them
        warnings.simplefilter("ignore", UserWarning)
        return arviz().InferenceData(**groups)


def group_names(data) -> list[str]:
    """Names of the groups of an ArviZ result (either major), in storage order."""
    if hasattr(data, "children"):
        return list(data.children)
    return list(data.groups())


def has_group(data, name: str) -> bool:
    """Whether the result has group ``name``."""
    return name in group_names(data)


def get_group(data, name: str):
    """Group ``name`` as an ``xarray.Dataset`` (a DataTree node is converted, not viewed)."""
    if not has_group(data, name):
        raise ValueError(f"the result has no {name!r} group; it has {group_names(data)}.")
    node = data[name]
    return node.to_dataset() if hasattr(node, "to_dataset") and hasattr(node, "children") else node


# -- statistics whose names moved ------------------------------------------------------------
@contextlib.contextmanager
def _quiet():
    """Hide the NaN warnings of constant entries (their R-hat/ESS is undefined, NaN is honest)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        warnings.simplefilter("ignore", UserWarning)
        yield


def hdi(dataset, prob: float):
    """Highest-density intervals over ``chain``/``draw``: a trailing dim ``hdi`` (lower, upper)."""
    az = arviz()
    with _quiet():
        if major() >= 1:
            out = az.hdi(dataset, prob=prob, dim=list(_SAMPLE_DIMS)).rename({"ci_bound": HDI_DIM})
        else:
            out = az.hdi(dataset, hdi_prob=prob)  # its dim is named HDI_DIM already
    return out.assign_coords({HDI_DIM: ["lower", "upper"]})


def ess(dataset, method: str = "bulk"):
    """Effective sample size of every variable of a posterior Dataset (same name on both)."""
    with _quiet():
        return arviz().ess(dataset, method=method)


def rhat(dataset):
    """Rank-normalized split R-hat of every variable of a posterior Dataset."""
    with _quiet():
        return arviz().rhat(dataset)


def hdi_columns(prob: float) -> tuple[str, str]:
    """ArviZ 0.x's names of the HDI bounds of mass ``prob`` (``hdi_3%``, ``hdi_97%``)."""
    tail = 100 * (1 - prob) / 2
    return f"hdi_{tail:g}%", f"hdi_{100 - tail:g}%"


def summary(data, hdi_prob: float = 0.94, **kwargs):
    """``az.summary``, unrounded, its HDI columns named as on ArviZ 0.x (``hdi_3%``)."""
    az = arviz()
    with _quiet():
        if major() >= 1:
            table = az.summary(data, ci_prob=hdi_prob, ci_kind="hdi", round_to="none", **kwargs)
        else:
            return az.summary(data, hdi_prob=hdi_prob, round_to="none", **kwargs)
    prefix = f"hdi{100 * hdi_prob:g}"
    lower, upper = hdi_columns(hdi_prob)
    return table.rename(columns={f"{prefix}_lb": lower, f"{prefix}_ub": upper})


def loo(data, pointwise: bool = True):
    """PSIS leave-one-out cross-validation (``az.loo``) on the ``log_likelihood`` group."""
    with _quiet():
        return arviz().loo(data, pointwise=pointwise)


def loo_numbers(result) -> dict:
    """``elpd``, ``se``, ``p`` (and pointwise ``elpd_i``, ``pareto_k``) of an ``az.loo`` result."""
    ours = ("elpd", "se", "p", "elpd_i", "pareto_k")
    if major() >= 1:
        theirs, get = ("elpd", "se", "p", "elpd_i"), lambda name: getattr(result, name, None)
    else:
        theirs, get = ("elpd_loo", "se", "p_loo", "loo_i"), result.get
    values = dict(zip(ours, [get(name) for name in (*theirs, "pareto_k")], strict=True))
    out = {name: float(values.pop(name)) for name in ours[:3]}
    return out | {name: np.asarray(value) for name, value in values.items() if value is not None}


def compare(results: dict):
    """``az.compare`` of named results, unrounded, its ``elpd`` column so named on both."""
    with _quiet():
        if major() >= 1:
            return arviz().compare(results, round_to="none")
        return arviz().compare(results).rename(columns={"elpd_loo": "elpd"})


def plot_ppc(data, var_names=None, num_samples: int = 50):
    """``az.plot_ppc`` (0.x: matplotlib axes) or ``az.plot_ppc_dist`` (1.x: a PlotCollection)."""
    az = arviz()
    with _quiet():
        if major() >= 1:
            return az.plot_ppc_dist(data, var_names=var_names, num_samples=num_samples)
        return az.plot_ppc(data, var_names=var_names, num_pp_samples=num_samples)
