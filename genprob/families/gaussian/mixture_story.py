"""The mixtures within classes (:mod:`.mixture`) as a story: the estimator's predictions, and NUTS
with the components summed out (docs/howto/model_based.md, "Posterior of a mixture"). Class ``k``
is a mixture of the cells ``j`` with ``cell_class[j] = k``; covariance sites are prefixed
``group<g>_``.
"""

from __future__ import annotations

import functools
import math

import numpy as np

from genprob._lazy import LazyModule
from genprob.engine._warnings import warn_user
from genprob.families.gaussian import mclust, mclust_prior
from genprob.families.gaussian.distributions import (
    full_gaussian,
    observed_factors,
    observed_log_density,
)
from genprob.families.gaussian.distributions import observed_patterns as _patterns
from genprob.story import Story, align_components

jax = LazyModule("jax")
jnp = LazyModule("jax.numpy")
numpyro = LazyModule("numpyro")
dist = LazyModule("numpyro.distributions")
handlers = LazyModule("numpyro.handlers")
covariance_structures = LazyModule("genprob.families.gaussian.structures")

__all__ = ["ClassMixtureStory", "GaussianMixtureStory", "MIXTURE_PARAMETERS"]

#: The mixture's parameters besides the class prior, as ``params_`` names them.
MIXTURE_PARAMETERS = ("weights", "means", "covariances")

#: Within-chain sds between two chains' means (one aligned entry) beyond which modes differ.
CHAIN_GAP_SD = 3.0


class CollapsedComponentError(ValueError):
    """A component's covariance became singular (too few rows, or rows on a subspace); ``cls``
    is its class code, ``component`` its index within the class."""

    def __init__(self, message: str, cls: int, component: int):
        super().__init__(message)
        self.cls = cls
        self.component = component


def num_parameters(structures, groups, num_classes: int, num_features: int) -> int:
    """Free parameters, mclust >= 6.1.1's count (docs/concepts.md)."""
    cells = sum(len(g) for g in groups)
    proportions = (num_classes - 1) + (cells - num_classes)
    covariance = sum(
        mclust.num_covariance_parameters(s, len(g), num_features)
        for s, g in zip(structures, groups, strict=True)
    )
    return int(proportions + cells * num_features + covariance)


def _cell_index(cell_class):
    """Index of each cell within its class."""
    index = np.zeros(len(cell_class), dtype=int)
    for k in np.unique(cell_class):
        where = np.flatnonzero(cell_class == k)
        index[where] = np.arange(len(where))
    return index


def cell_log_density(X, means, covariances, cell_class=None, observed=None, patterns=None):
    """``log f_j(x_i)`` (n, J) of each cell at each row; with ``observed`` (n, D), of the
    observed coordinates (0 for a row with none); ``patterns``: :func:`_patterns` of it."""
    X = np.asarray(X, dtype=np.float64)
    observed = np.ones(X.shape, dtype=bool) if observed is None else observed
    patterns = _patterns(observed) if patterns is None else patterns
    factors = observed_factors(covariances, patterns[0])
    failed = np.argwhere(np.isnan(factors["log_normalizer"]))  # (pattern, cell) without Cholesky
    if failed.size:
        cell_class = np.zeros(len(covariances), int) if cell_class is None else cell_class
        why = "its covariance is singular (the component collapsed)."
        raise _collapsed(cell_class, int(failed[0, 1]), why)
    return observed_log_density(X, observed, means, factors, patterns)


def log_sum_exp(values):
    """``log sum exp`` of NumPy ``values`` over the last axis: ``np.logaddexp.reduce``'s bits,
    folded column by column (a reduce over a few columns a row is several times slower)."""
    total = values[..., 0]
    for j in range(1, values.shape[-1]):
        total = np.logaddexp(total, values[..., j])
    return total


def _collapsed(cell_class, j: int, why: str):
    """The error naming cell ``j`` by its class and its component within the class."""
    k, g = int(cell_class[j]), int(_cell_index(cell_class)[j])
    return CollapsedComponentError(f"class {k}, component {g}: {why}", k, g)


class GaussianMixtureStory(Story):
    """Gaussian mixtures within classes (cells ``j`` of class ``cell_class[j]``).

    Args:
        cell_class: class code of each cell (component), in cell order.
        structures: mclust's name of each group's covariance structure.
        groups: the cells of each group (the components of a class, or one cell per class).
        mean_prior_loc, mean_prior_scale: Normal prior of the means (a float or one per feature).
        covariance_prior_scale: scale of the covariances' prior (a float or one per feature).
        weight_concentration: Dirichlet concentration of each class's mixing proportions.
        component_labels: a name per cell (the ``component`` coordinate).
        em_prior: None (the closed-form M-step maximizes the likelihood), or one hyperparameter
            dict per group (:func:`.mclust_prior.default_prior`'s keys): the M-step is the
            posterior mode's (MAP EM, mclust's ``priorControl()``).
        em_prior_step: which of mclust's MAP M-steps (:data:`.mclust_prior.STEPS`).

    Parameters (``params`` keys, as the estimator's ``params_``): ``weights`` (J,), ``means``
    (J, D), ``covariances`` (J, D, D).
    """

    name = "class_mixtures"
    capabilities = {"supports_missing": True, "array_api": True}

    def __init__(
        self,
        cell_class,
        structures,
        groups,
        mean_prior_loc=0.0,
        mean_prior_scale=10.0,
        covariance_prior_scale=1.0,
        weight_concentration: float = 1.0,
        component_labels=None,
        em_prior=None,
        em_prior_step: str = "mstep",
    ):
        cell_class = tuple(int(k) for k in cell_class)
        groups = tuple(tuple(int(j) for j in group) for group in groups)
        structures = tuple(str(s) for s in structures)
        if len(structures) != len(groups) or sorted(j for g in groups for j in g) != list(
            range(len(cell_class))
        ):
            raise ValueError("groups must partition the cells, with one structure per group.")
        for s in structures:
            mclust.num_covariance_parameters(s, 1, 1)  # refuses an unknown name
        self.cell_class = cell_class
        self.structures = structures
        self.groups = groups
        self.mean_prior_loc = _setting(mean_prior_loc)
        self.mean_prior_scale = _setting(mean_prior_scale)
        self.covariance_prior_scale = _setting(covariance_prior_scale)
        self.weight_concentration = float(weight_concentration)
        if component_labels is None:
            index = _cell_index(np.asarray(cell_class))
            component_labels = [f"{k}:{g}" for k, g in zip(cell_class, index, strict=True)]
        self.component_labels = tuple(str(label) for label in component_labels)
        if em_prior is not None:
            em_prior = tuple(em_prior)
            if len(em_prior) != len(groups):
                raise ValueError(f"em_prior needs one dict per group ({len(groups)}).")
        self.em_prior = em_prior
        self.em_prior_step = str(em_prior_step)

    # -- layout ----------------------------------------------------------------------------------
    @property
    def num_classes(self) -> int:
        return max(self.cell_class) + 1

    def cells(self, k: int) -> np.ndarray:
        """The cells of class ``k``, in order."""
        return np.flatnonzero(np.asarray(self.cell_class) == k)

    def _mixed(self):
        """``(k, cells)`` of each class with several cells (free mixing proportions)."""
        return [(k, c) for k in range(self.num_classes) if len(c := self.cells(k)) > 1]

    def _padding(self):
        """``(index (K, G_max), present (K, G_max))``: each class's cells, padded by cell 0."""
        cells = [self.cells(k) for k in range(self.num_classes)]
        present = np.arange(max(map(len, cells))) < np.array([len(c) for c in cells])[:, None]
        index = np.zeros(present.shape, dtype=np.int32)
        index[present] = np.concatenate(cells)
        return index, present

    # -- the story -------------------------------------------------------------------------------
    def prior(self, num_classes, num_features):
        J, D = len(self.cell_class), int(num_features)
        means = numpyro.sample(
            "means",
            dist.Normal(self.mean_prior_loc, self.mean_prior_scale).expand([J, D]).to_event(2),
        )
        weights = jnp.ones(J, dtype=means.dtype)
        for k, cells in self._mixed():
            concentration = jnp.full(len(cells), self.weight_concentration, means.dtype)
            tau = numpyro.sample(f"weights_{k}", dist.Dirichlet(concentration))
            weights = weights.at[cells].set(tau)
        covariances = jnp.zeros((J, D, D), dtype=means.dtype)
        for g, (structure, group) in enumerate(zip(self.structures, self.groups, strict=True)):
            # every structure, EEE and VVV included, through its eigen parametrization
            with handlers.scope(prefix=f"group{g}", divider="_"):
                named = covariance_structures.named_structure(structure)
                sigma = named.prior(len(group), D, self.covariance_prior_scale)
            covariances = covariances.at[np.asarray(group)].set(sigma)
        return {"weights": weights, "means": means, "covariances": covariances}

    def emission(self, params):
        index, present = self._padding()
        weights = params["weights"][index]
        # the padding's weight is 0: the dtype's lowest logit (-inf fails NumPyro's validation)
        logits = jnp.where(present, jnp.log(weights), jnp.finfo(weights.dtype).min)
        # the family's whitened Gaussian (NumPyro's mixture needs a distribution object)
        components = full_gaussian(params["means"][index], params["covariances"][index], None)
        return dist.MixtureSameFamily(dist.Categorical(logits=logits), components)

    def _cell_joint(self, params, X, observed=None, patterns=None):
        """``log tau_j f_j(x)`` (n, J) of NumPy rows; ``observed`` (n, D): of the observed ones."""
        means, covariances = params["means"], params["covariances"]
        cell_class = np.asarray(self.cell_class)
        log_f = cell_log_density(X, means, covariances, cell_class, observed, patterns)
        with np.errstate(divide="ignore"):
            return log_f + np.log(params["weights"])

    def _within(self, params, X, observed=None):
        """:meth:`_cell_joint` and each class's log-sum-exp of it (n, K)."""
        joint = self._cell_joint(params, X, observed)
        index, present = self._padding()
        return joint, log_sum_exp(np.where(present, joint[:, index], -np.inf))

    def log_density(self, params, X, observed=None):
        """``log p(x | k)`` (n, K); of NumPy rows given ``observed``: of the observed cells."""
        if not isinstance(X, np.ndarray):
            return super().log_density(params, X)
        return self._within(params, X, observed)[1]

    # -- the closed form: statistics per cell, the structures' M-step per group -----------------
    @staticmethod
    @functools.cache
    def _cells():
        """The Gaussian story with the cells as its classes: its statistics are the cells'."""
        from genprob.families.gaussian.story import GaussianStory

        return GaussianStory(covariance="full", shared=False)

    def cell_responsibilities(self, params, X, R):
        """(n, J): each class's responsibilities ``R`` (n, K) shared by its cells' posterior."""
        cell_class = np.asarray(self.cell_class)
        if params is None:
            if len(cell_class) != self.num_classes:
                raise ValueError("the statistics of several components a class need parameters.")
            return np.asarray(R)[:, cell_class]
        joint, own = self._within(params, X)
        with np.errstate(invalid="ignore"):
            return np.asarray(R)[:, cell_class] * np.exp(joint - own[:, cell_class])

    def sufficient_statistics(self, X, R, params=None):
        return self._cells().sufficient_statistics(X, self.cell_responsibilities(params, X, R))

    def combine_statistics(self, stats_a, stats_b):
        return self._cells().combine_statistics(stats_a, stats_b)

    @classmethod
    def moments(cls, stats):
        """``(counts (J,), means (J, D), scatter (J, D, D))`` of the cells' statistics: the
        weighted scatter about each cell's mean, which the structures' M-step takes."""
        counts = np.asarray(stats["counts"], dtype=np.float64)
        sums = np.asarray(stats["sums"], dtype=np.float64)
        with np.errstate(all="ignore"):  # a cell without rows: its group's M-step names it
            centered = sums / counts[:, None]
        # the cells' scatter about their means (their story's, without its fit's extras)
        squares = np.asarray(stats["squares"], dtype=np.float64)
        scatter = cls._cells().covariance_structure.scatter(squares, sums, centered, counts)
        return counts, centered + np.asarray(stats["shift"], dtype=np.float64), scatter

    def maximize(self, stats, *, start=None, moments=None, solved=None, **settings):
        """Means and each group's :func:`.mclust.covariances` (``settings``: ``tol``,
        ``max_iter``; ``start``: (J, D, D) warm start) from the cells' statistics or from their
        ``moments`` (:meth:`moments`) already computed; ``solved``: the covariances of these
        moments and settings already computed in a batch of fits; a ``ValueError`` gets the
        failing cell as its attribute ``cell``."""
        counts, means, scatter = self.moments(stats) if moments is None else moments
        covariances = np.empty_like(scatter)
        priors = (None,) * len(self.groups) if self.em_prior is None else self.em_prior
        for structure, group, prior in zip(self.structures, self.groups, priors, strict=True):
            # consecutive cells (a class's components) as a slice: views, not fancy-index copies
            first, last = group[0], group[-1] + 1
            cells = slice(first, last) if group == tuple(range(first, last)) else list(group)
            try:
                if prior is None and solved is not None:
                    covariances[cells] = solved[cells]
                elif prior is None:
                    covariances[cells] = mclust.covariances(
                        structure,
                        scatter[cells],
                        counts[cells],
                        start=None if start is None else start[cells],
                        **settings,
                    )
                else:
                    means[cells], covariances[cells] = mclust_prior.map_step(
                        structure, counts[cells], means[cells], scatter[cells], prior,
                        step=self.em_prior_step, **settings,
                    )  # fmt: skip
                    mclust._check_result(structure, covariances[cells])
            except ValueError as error:  # mclust names the group's member: the cell
                named = isinstance(error, mclust.DegenerateGroupError)
                error.cell = group[error.group if named else 0]
                raise
        cell_class = np.asarray(self.cell_class)
        class_counts = np.bincount(cell_class, weights=counts, minlength=self.num_classes)
        return {
            "weights": counts / class_counts[cell_class],
            "means": means,
            "covariances": covariances,
        }

    def _sites_at(self, params) -> dict:
        """The prior's sites at parameters ``params`` (e.g. the MLE, where chains start)."""
        covariances = np.asarray(params["covariances"], dtype=np.float64)
        weights = np.asarray(params["weights"], dtype=np.float64)
        latent = {"means": np.asarray(params["means"], dtype=np.float64)}
        if "class_prior" in params:
            latent["class_prior"] = np.asarray(params["class_prior"], dtype=np.float64)
        for k, cells in self._mixed():
            latent[f"weights_{k}"] = weights[cells] / weights[cells].sum()
        for g, (structure, group) in enumerate(zip(self.structures, self.groups, strict=True)):
            named = covariance_structures.named_structure(structure)
            sites = named.latent_of(covariances[np.asarray(group)])
            latent.update({f"group{g}_{name}": value for name, value in sites.items()})
        return latent

    def scaled_to_data(self, X):
        """Prior on the data's scale, as :meth:`GaussianStory.scaled_to_data` sets it."""
        from genprob.families.gaussian.story import scaled_prior

        return scaled_prior(self, X)

    # -- missing cells ---------------------------------------------------------------------------
    def observed_log_prob(self, params, X, observed):
        """``log sum_g tau_kg N(x_o; mu_kg,o, Sigma_kg,oo)`` (n, K) of the observed coordinates."""
        cells = self._cells().observed_log_prob(
            {"means": params["means"], "covariance": params["covariances"]}, X, observed
        )
        index, present = self._padding()
        joint = jnp.where(present, cells[:, index] + jnp.log(params["weights"][index]), -jnp.inf)
        return jax.nn.logsumexp(joint, axis=-1)

    # -- summaries -------------------------------------------------------------------------------
    def parameter_dims(self, name, shape, num_classes, num_features):
        dims = {
            "weights": ("component",),
            "component_class": ("component",),
            "means": ("component", "feature"),
            "covariances": ("component", "feature", "feature2"),
        }
        if name in dims and len(dims[name]) == len(shape):
            return dims[name]
        return super().parameter_dims(name, shape, num_classes, num_features)

    def coords(self, feature_names):
        return {"component": list(self.component_labels)}

    def num_parameters(self, num_classes, num_features):
        return num_parameters(self.structures, self.groups, num_classes, num_features)

    def align_parameters(self, params, reference):
        """``params`` (any batch shape) with each class's components permuted to best match
        ``reference``'s; one set of parameters also gets the prior's sites (NUTS starts)."""
        ref = {n: np.asarray(reference[n], dtype=np.float64) for n in MIXTURE_PARAMETERS}
        batch = np.shape(params["means"])[:-2]
        size = math.prod(batch)
        flat = {
            n: np.asarray(params[n], dtype=np.float64).reshape((size, *ref[n].shape))
            for n in MIXTURE_PARAMETERS
        }
        spread = np.sqrt(np.mean(np.diagonal(ref["covariances"], axis1=-2, axis2=-1), axis=0))
        # a power of two: scaling and unscaling are exact, so aligned draws are the draws
        unit = 2.0 ** np.round(np.log2(np.where(spread > 0, spread, 1.0)))
        factor = {"weights": 1.0, "means": unit, "covariances": np.outer(unit, unit)}
        out = {n: flat[n].copy() for n in MIXTURE_PARAMETERS}
        for _, cells in self._mixed():
            part = {n: flat[n][:, cells] / factor[n] for n in MIXTURE_PARAMETERS}
            target = {
                n: np.broadcast_to(ref[n][cells] / factor[n], part[n].shape)
                for n in MIXTURE_PARAMETERS
            }
            aligned = align_components(part, target, MIXTURE_PARAMETERS, axis=1)
            for n in MIXTURE_PARAMETERS:
                out[n][:, cells] = aligned[n] * factor[n]
        result = dict(params)
        result.update({n: out[n].reshape((*batch, *ref[n].shape)) for n in MIXTURE_PARAMETERS})
        return result if batch else {**result, **self._sites_at(result)}

    def align_draws(
        self,
        draws: dict,
        reference: dict,
        potential_energy=None,
        *,
        labels: str = "every class",
        class_names=None,
        feature_names=None,
        started_at_fit: bool = True,
    ):
        """``(draws aligned to reference (the MLE), diagnostics)`` (docs/story_hooks.md). ``draws``:
        ``params_``'s entries and ``class_prior``, axes ``(chains, draws, ...)``; ``labels``,
        ``started_at_fit``: :func:`.mcmc.diagnose`'s; ``diagnostics``: its dict plus ``components``,
        one ``(parameter, class, component or None, max R-hat, chains apart)`` per flagged one."""

        from genprob.inference.mcmc import RHAT_MAX, Problem, SamplingWarning, diagnose
        from genprob.story import CLASS_PRIOR

        aligned = self.align_parameters(draws, reference)
        checked = {n: np.asarray(aligned[n]) for n in (CLASS_PRIOR, *MIXTURE_PARAMETERS)}
        diagnostics = diagnose(
            checked, potential_energy, warn=False, labels=labels, started_at_fit=started_at_fit
        )
        flagged = self._component_checks(checked, RHAT_MAX)
        problems = list(diagnostics["problems"])
        if flagged:
            classes = list(range(self.num_classes)) if class_names is None else list(class_names)

            def where(name, k, g, entry):  # e.g. "means of class 'a', component 1 (x0)"
                owner = f"class {classes[k]!r}" + ("" if g is None else f", component {g}")
                names = ", ".join(
                    f"x{i}" if feature_names is None else str(feature_names[i]) for i in entry[1:]
                )
                return f"{name} of {owner}" + (f" ({names})" if names else "")

            shown = "; ".join(
                f"{where(name, k, g, entry)}: R-hat {rhat:.3f}"
                + (", chains' means apart" if apart else "")
                for name, k, g, rhat, apart, entry in flagged
            )
            message = (
                f"after aligning each class's components to the MLE's, the chains disagree "
                f"on {shown} (R-hat > {RHAT_MAX} or chains' means more than "
                f"{CHAIN_GAP_SD:g} within-chain sds apart): the chains sit in modes they do "
                f"not share (a component placed differently), or have not mixed. Run more "
                f"warm-up and draws, or fit fewer components."
            )
            # the named check replaces diagnose's R-hat line, which names a parameter only
            problems = [Problem("components", message)] + [p for p in problems if p.kind != "rhat"]
        diagnostics["components"] = [row[:5] for row in flagged]
        diagnostics["problems"] = problems
        for problem in problems:
            warn_user(f"NUTS diagnostics: {problem}", SamplingWarning)
        return aligned, diagnostics

    def _component_checks(self, draws, rhat_max):
        """``(parameter, class, component, worst R-hat, chains apart, worst entry)`` failing."""
        from genprob.io import _arviz_compat as compat
        from genprob.story import CLASS_PRIOR

        if np.shape(draws[CLASS_PRIOR])[0] < 2:
            return []
        cell_class = np.asarray(self.cell_class)
        index = _cell_index(cell_class)
        variables, owners = {}, {}
        for name, value in draws.items():
            value = np.asarray(value, dtype=np.float64)
            flat = value.reshape(value.shape[:2] + (-1,))
            keep = np.ptp(flat, axis=(0, 1)) > 0  # constant entries have no R-hat
            if np.any(keep):
                variables[name] = flat[:, :, keep]
                owners[name] = np.argwhere(np.ones(value.shape[2:], dtype=bool))[keep]
        rhat = compat.rhat(compat.dataset(variables, {}, {}))
        flagged = {}
        for name, flat in variables.items():
            values = np.asarray(rhat[name])
            means = flat.mean(axis=1)
            within = np.sqrt(flat.var(axis=1, ddof=1).mean(axis=0))
            apart = np.ptp(means, axis=0) > CHAIN_GAP_SD * within
            for e in np.flatnonzero((values > rhat_max) | apart):
                position = tuple(int(i) for i in owners[name][e])
                j = position[0]
                owner = (j, None) if name == CLASS_PRIOR else (int(cell_class[j]), int(index[j]))
                key = (name, *owner)
                value = float(values[e]) if np.isfinite(values[e]) else float("nan")
                old = flagged.get(key, (value, False, position))
                top = (value, position) if value > old[0] else (old[0], old[2])
                flagged[key] = (top[0], old[1] or bool(apart[e]), top[1])
        return [(*key, value, apart, position) for key, (value, apart, position) in flagged.items()]


def _setting(value):
    array = np.asarray(value, dtype=np.float64)
    return float(array) if array.ndim == 0 else array


#: The name of releases before issue 56 (tests and user code import it).
ClassMixtureStory = GaussianMixtureStory
