"""Model-based discriminant analysis: Gaussian mixtures within classes, chosen by BIC (issue 44).

:class:`MixtureDiscriminantAnalysis` is R mclust's ``MclustDA`` (a mixture of ``G_k`` Gaussians
of one structure per class, structure and ``G_k`` chosen by BIC per class), ``EDDA`` (one
Gaussian per class, the structure across the classes, chosen by a common BIC) and
``MclustSSC`` (unlabeled rows, ``y = -1``) in one scikit-learn classifier. The maths is
:mod:`genprob.families.gaussian.mixture`.
"""

from __future__ import annotations

import math
import numbers
import re
import warnings
from functools import partial

import numpy as np
from sklearn.base import _fit_context
from sklearn.utils.metaestimators import available_if
from sklearn.utils.validation import check_is_fitted

from genprob.engine._labels import (
    unlabeled_mask,
)
from genprob.engine._validation import (
    EM_PARAMETER_CONSTRAINTS,
    MISSING_PARAMETER_CONSTRAINTS,
    NumberInterval,
    check_sample_weight,
)
from genprob.engine.em_driver import warn_max_iter
from genprob.engine.execution import refuse_unscored
from genprob.engine.streaming import is_out_of_core
from genprob.estimators._base import GenerativeClassifierBase
from genprob.families.gaussian import mixture

__all__ = ["MixtureDiscriminantAnalysis"]

#: The header of the criterion tables (mclust's sign, unlike :meth:`bic`).
TABLE_SIGN = "2 log L - df log n (mclust's sign: larger is better)"


def _structures():
    from genprob.families.gaussian import mclust

    return tuple(mclust.STRUCTURES)


class MixtureDiscriminantAnalysis(GenerativeClassifierBase):
    """Gaussian mixtures within classes, structure and components chosen by BIC (mclust's
    MclustDA, EDDA and MclustSSC).

    Class ``k`` is a mixture of ``G_k`` Gaussian components whose covariances follow one of
    the 14 structures of Celeux & Govaert (1995) (``lambda D A D^T``, mclust's names).

    * ``n_components=1`` (EDDA): one Gaussian per class and the structure constrains the
      classes' covariances together (``"EEE"`` is LDA, ``"VVV"`` QDA); the structure is chosen
      by one BIC over all rows (mixture log-likelihood; with unlabeled rows MclustSSC's).
    * several values of ``n_components`` (MclustDA): the structure constrains the components of
      a class; each class gets its own structure and ``G_k``, chosen by BIC on its rows
      (mclust's ``Mclust`` per class). With unlabeled rows the classes are no longer
      separate: one structure and one ``G`` for every class are chosen by the BIC of the
      partly labeled log-likelihood.

    EM (components within a class, and classes for unlabeled rows) starts from seeded k-means
    of each class's labeled rows (mclust starts from model-based hierarchical clustering), the
    best of ``n_init`` starts kept. A candidate whose component collapses (singular
    covariance) is left out of the table with a warning naming the class and component.

    Args:
        structure: a structure name (``"VVV"``), a list of names (or ``"EEE,VVV"``), or
            ``"all"`` (the 14).
        n_components: components per class: an int, or an iterable of ints to choose from.
        criterion: ``"bic"`` or ``"icl"``: what chooses the model.
        missing: ``"error"`` refuses NaN cells; ``"marginalize"`` sums them out (the exact
            density of the observed coordinates, in EM and in prediction).
        unlabeled_weight: weight λ of unlabeled rows (``y = -1``) in EM.
        max_iter: EM's iterations (per candidate and start).
        em_tol: EM's relative tolerance on the log-likelihood.
        n_init: k-means starts per class with several components.
        random_state: seed of the k-means starts (an int; the fit is deterministic).
        unlabeled_label: the label of unlabeled rows (-1); None: every label is a class.

    Attributes:
        classes_: class labels.
        structure_: (K,) the structure chosen for each class (the same for all under EDDA).
        n_components_: (K,) the number of components chosen for each class.
        bic_table_: pandas DataFrame of BIC in mclust's sign (larger is better, as mclust
            prints it; ``attrs["sign"]`` says so): rows structures, columns numbers of
            components; a (class, structure) row index when each class chose its own model.
            A NaN cell is a candidate that collapsed.
        icl_table_: the same for ICL.
        criterion_table_: the table of ``criterion``.
        params_: ``class_prior`` (K,), ``weights`` (J,) within-class mixing proportions,
            ``means`` (J, D), ``covariances`` (J, D, D), ``component_class`` (J,) class code
            of each component (J = sum of ``n_components_``).
        log_likelihood_: the chosen fit's log-likelihood (the mixture one; with unlabeled rows
            the partly labeled one EM maximized).
        n_iter_: EM's iterations of the chosen fit (absent after a closed-form fit).
        converged_: whether that EM reached ``em_tol``.
        log_likelihood_trace_: EM's objective after each iteration (never decreasing).
        stats_: ``class_counts`` and the ``emission``'s per-class counts, sums and second
            moments (about its ``shift``) of a one-structure EDDA fit of labeled rows, which
            ``partial_fit`` adds to.

    ``partial_fit`` and ``fit`` on chunks, Parquet or Dask collections are every estimator's
    (:class:`GenerativeClassifierBase`) on the EDDA story of one structure (``n_components=1``,
    one name), labeled rows without NaN cells; the other settings are refused, naming why
    (docs/howto/model_based.md). Such fits keep no criterion table and no ``log_likelihood_``.
    """

    _parameter_constraints: dict = {
        "structure": [str, list, tuple],
        "n_components": [
            NumberInterval(numbers.Integral, 1, None, closed="left"),
            list,
            tuple,
            range,
        ],
        "criterion": [str],
        **MISSING_PARAMETER_CONSTRAINTS,
        "unlabeled_weight": [NumberInterval(numbers.Real, 0, 1, closed="both")],
        **{k: EM_PARAMETER_CONSTRAINTS[k] for k in ("max_iter", "em_tol", "n_init")},
        "random_state": [NumberInterval(numbers.Integral, 0, None, closed="left")],
        "unlabeled_label": EM_PARAMETER_CONSTRAINTS["unlabeled_label"],
    }

    #: files of releases before issue 56 hold no story: ``story_`` is derived
    #: (genprob.io.persistence)
    _has_story = False
    _validate_kwargs = {"dtype": np.float64}
    _prior_parameter = None

    def __init__(
        self,
        structure="all",
        n_components=1,
        *,
        criterion="bic",
        missing="error",
        unlabeled_weight=1.0,
        max_iter=200,
        em_tol=1e-8,
        n_init=1,
        random_state=0,
        unlabeled_label=-1,
    ):
        self.structure = structure
        self.n_components = n_components
        self.criterion = criterion
        self.missing = missing
        self.unlabeled_weight = unlabeled_weight
        self.max_iter = max_iter
        self.em_tol = em_tol
        self.n_init = n_init
        self.random_state = random_state
        self.unlabeled_label = unlabeled_label

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = self.missing == "marginalize"
        return tags

    # -- settings --------------------------------------------------------------------------------
    def _candidate_structures(self) -> tuple:
        known = _structures()
        value = self.structure
        if isinstance(value, str):
            # "EEE,VVV": the command line's --param structure=EEE,VVV
            value = known if value == "all" else tuple(v.strip() for v in value.split(","))
        value = tuple(value)
        unknown = [s for s in value if s not in known]
        if unknown or not value:
            raise ValueError(
                f"unknown structure {unknown or value!r}; expected names among "
                f"{', '.join(known)}, or 'all'."
            )
        return value

    def _candidate_components(self) -> tuple:
        value = self.n_components
        value = (value,) if isinstance(value, numbers.Integral) else tuple(value)
        # whole floats too: the command line reads "1,2,3" as numbers
        whole = all(isinstance(g, numbers.Real) and float(g).is_integer() for g in value)
        if not value or not whole or min(value) < 1:
            raise ValueError(f"n_components must be integers >= 1; got {self.n_components!r}.")
        return tuple(sorted({int(g) for g in value}))

    # -- fitting ---------------------------------------------------------------------------------
    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, sample_weight=None):
        """Fit every candidate model and keep the one the criterion prefers.

        Args:
            X: features (n, D); NaN cells with ``missing="marginalize"``.
            y: labels; ``-1`` marks an unlabeled row.
            sample_weight: row weights (a weight of 2 counts a row twice, in BIC's n too).
        """
        if self.criterion not in ("bic", "icl"):
            raise ValueError(f"criterion must be 'bic' or 'icl'; got {self.criterion!r}.")
        if is_out_of_core(X):  # chunks, Parquet, Dask: GenerativeClassifierBase's, EDDA only
            self._streamed_structure()
            return super().fit(X, y, sample_weight)
        X, y = self._rows(X, y, reset=True)
        structures = self._candidate_structures()
        components = self._candidate_components()
        n = X.shape[0]
        weight = check_sample_weight(sample_weight, n, allow_all_zero=False)
        weight = np.ones(n) if weight is None else weight
        unlabeled = unlabeled_mask(y, self._unlabeled_label)
        codes = self._encode_classes(y, unlabeled, None)
        row_weight = np.where(unlabeled, weight * self.unlabeled_weight, weight)
        if n < 2 or float(row_weight.sum()) <= 0:
            raise ValueError(f"n_samples={n}: a Gaussian fit needs at least 2 rows.")
        nan = np.isnan(X) if self.missing == "marginalize" else None
        observed = ~nan if nan is not None and nan.any() else None
        semi = bool(np.any(unlabeled & (row_weight > 0)))
        for name in ("n_iter_", "converged_", "log_likelihood_trace_", "stats_"):
            self.__dict__.pop(name, None)
        settings = dict(
            observed=observed,
            n_init=self.n_init,
            random_state=int(self.random_state),
            max_iter=self.max_iter,
            tol=self.em_tol,
        )
        if components == (1,) or semi:
            fit = self._fit_common(X, codes, row_weight, structures, components, semi, settings)
        else:
            fit = self._fit_per_class(X, codes, row_weight, structures, components, settings)
        self._set_fit(fit, X, codes, row_weight, observed, semi)
        if components == (1,) and len(structures) == 1 and not semi and observed is None:
            # partial_fit continues from these
            self.stats_ = self._labeled_statistics(self.story_, X, codes, row_weight)
        return self

    def _fit_common(self, X, codes, row_weight, structures, components, semi, settings):
        """One structure and G for every class, chosen by one criterion over all rows."""
        K = len(self.classes_)
        n = float(row_weight.sum())
        bic = np.full((len(structures), len(components)), np.nan)
        icl = np.full_like(bic, np.nan)
        fits, failures = {}, []
        for a, structure in enumerate(structures):
            one = None  # the structure's one-component fit: a range's fallback start
            for b, G in enumerate(components):  # increasing G (_candidate_components)
                across = G == 1 and components == (1,)
                fit_one = partial(
                    mixture.fit_mixture,
                    X,
                    codes,
                    (G,) * K,
                    structure if across else (structure,) * K,
                    across_classes=across,
                    row_weight=row_weight,
                    **settings,
                )
                try:
                    try:
                        fit = fit_one()
                    except mixture.CollapsedComponentError:
                        if across or not semi:
                            raise
                        # a range never fails where its one-component fit succeeds: start G
                        # components from that fit, split (mclust's hierarchical start)
                        if one is None:
                            one = mixture.fit_mixture(
                                X, codes, (1,) * K, structure, across_classes=True,
                                row_weight=row_weight, **settings,
                            )  # fmt: skip
                        fit = fit_one(start_from=self._split(X, one, G, row_weight, settings))
                except mixture.CollapsedComponentError as error:
                    failures.append((structure, G, error))
                    continue
                if G == 1 and one is None:
                    one = fit
                if semi:
                    log_lik = fit.log_likelihood
                else:
                    log_lik = mixture.mixture_log_likelihood(
                        fit, X, row_weight, settings["observed"]
                    )
                df = mixture.num_parameters(fit.structures, fit.groups, K, X.shape[1])
                bic[a, b] = 2.0 * log_lik - df * math.log(n)
                icl[a, b] = bic[a, b] + 2.0 * mixture.icl_penalty(fit.responsibilities, row_weight)
                fits[a, b] = fit
        self._warn_left_out(self._report(failures, len(structures) * len(components)))
        table = bic if self.criterion == "bic" else icl
        a, b = np.unravel_index(np.nanargmax(table), table.shape)
        rows = list(structures)
        self._tables = {
            name: _table(v, rows, components) for name, v in (("BIC", bic), ("ICL", icl))
        }
        return fits[a, b]

    @staticmethod
    def _split(X, one, G, row_weight, settings):
        """Responsibilities of every row for G components a class, from the one-component
        fit ``one`` split (:func:`mixture.split_start`)."""
        K = len(one.class_prior)
        classes = np.stack(
            [one.responsibilities[:, one.cell_class == k].sum(1) for k in range(K)], 1
        )
        return mixture.split_start(X, classes, (G,) * K, row_weight, settings["random_state"])

    def _fit_per_class(self, X, codes, row_weight, structures, components, settings):
        """MclustDA: each class's structure and G chosen by BIC on its own rows."""
        chosen, bic_frames, icl_frames, left_out = [], [], [], []
        for k in range(len(self.classes_)):
            rows = codes == k
            Xk, wk = X[rows], row_weight[rows]
            settings_k = dict(settings)
            if settings["observed"] is not None:
                settings_k["observed"] = settings["observed"][rows]
            n_k = float(wk.sum())
            bic = np.full((len(structures), len(components)), np.nan)
            icl = np.full_like(bic, np.nan)
            fits, failures = {}, []
            for a, structure in enumerate(structures):
                for b, G in enumerate(components):
                    try:
                        fit = mixture.fit_mixture(
                            Xk,
                            np.zeros(len(Xk), int),
                            (G,),
                            (structure,),
                            row_weight=wk,
                            **settings_k,
                        )
                    except mixture.CollapsedComponentError as error:
                        failures.append((structure, G, error))
                        continue
                    df = mixture.num_parameters(fit.structures, fit.groups, 1, X.shape[1])
                    bic[a, b] = 2.0 * fit.log_likelihood - df * math.log(n_k)
                    icl[a, b] = bic[a, b] + 2.0 * mixture.icl_penalty(fit.responsibilities, wk)
                    fits[a, b] = fit
            left_out += self._report(failures, len(structures) * len(components), self.classes_[k])
            table = bic if self.criterion == "bic" else icl
            a, b = np.unravel_index(np.nanargmax(table), table.shape)
            chosen.append(fits[a, b])
            bic_frames.append(bic)
            icl_frames.append(icl)
        self._warn_left_out(left_out)
        rows = [[_label(c), s] for c in self.classes_ for s in structures]
        self._tables = {
            name: _table(np.vstack(v), rows, components)
            for name, v in (("BIC", bic_frames), ("ICL", icl_frames))
        }
        counts = np.bincount(codes[codes >= 0], weights=row_weight[codes >= 0])
        return _combine(chosen, counts / counts.sum())

    def _report(self, failures, total, cls=None) -> list[str]:
        """Raise when no candidate could be fitted; else the left-out ones, a line each."""
        where = "" if cls is None else f"class {_label(cls)!r}: "
        if len(failures) == total:
            first = failures[0][2]
            raise ValueError(
                f"{where}no candidate model could be fitted; the first, {failures[0][0]} with "
                f"G={failures[0][1]}: {self._named_class(first, cls is not None)}"
            )
        return [
            f"{where}{structure} with G={G} ({self._named_class(error, cls is not None)})"
            for structure, G, error in failures
        ]

    @staticmethod
    def _warn_left_out(lines) -> None:
        """One warning per fit, as mclust records NA in its BIC table and says nothing."""
        if lines:
            shown = "; ".join(lines[:3]) + (
                f"; and {len(lines) - 3} more" if len(lines) > 3 else ""
            )
            warnings.warn(
                f"{len(lines)} candidate model(s) left out, their components collapsed (missing "
                f"in bic_table_ and icl_table_): {shown}",
                mixture.CollapsedComponentWarning,
                stacklevel=5,
            )

    def _named_class(self, error, per_class: bool = False) -> str:
        """The error's message with the class code replaced by its label; a per-class fit's
        message drops it (its code counts within the one class, the caller names the class)."""
        text = str(error)
        if getattr(error, "cls", -1) >= 0 and error.cls < len(self.classes_):
            label = "" if per_class else f"class {_label(self.classes_[error.cls])!r}, "
            text = text.replace(f"class {error.cls}, ", label, 1)
        return text

    def _set_fit(self, fit, X, codes, row_weight, observed, semi):
        self._set_params(fit)
        if semi:
            self.log_likelihood_ = fit.log_likelihood
        else:
            self.log_likelihood_ = mixture.mixture_log_likelihood(fit, X, row_weight, observed)
        if fit.n_iter:
            self.n_iter_ = fit.n_iter
            self.converged_ = fit.converged
            self.log_likelihood_trace_ = np.asarray(fit.trace)
            if not fit.converged and fit.n_iter >= self.max_iter:
                warn_max_iter(self.max_iter, self.em_tol, stacklevel=5, change="relative")

    def _set_params(self, fit):
        self.story_ = self._story(fit.cell_class, fit.structures, fit.groups)
        self.params_ = {
            "class_prior": fit.class_prior,
            "weights": fit.weights,
            "means": fit.means,
            "covariances": fit.covariances,
            "component_class": fit.cell_class,
        }
        self._set_fitted_attributes(None)

    def _set_fitted_attributes(self, stats):
        """``structure_`` and ``n_components_`` from ``story_``; a fit from statistics
        (``stats``: partial_fit, chunks, Dask) keeps no criterion table and no
        ``log_likelihood_``."""
        story, K = self.story_, len(self.classes_)
        self.n_components_ = np.bincount(story.cell_class, minlength=K)
        # one group of every class (EDDA): its structure is each class's
        across = K if len(story.groups) == 1 else 1
        self.structure_ = np.array(list(story.structures) * across, dtype=object)
        if stats is not None:
            self._tables = None
            self.__dict__.pop("log_likelihood_", None)

    # -- the fitted model ------------------------------------------------------------------------
    def _table(self, name):
        if getattr(self, "_tables", None) is None:
            raise AttributeError(
                f"no {name} table: partial_fit and Dask fits fit one structure from statistics "
                "that add over chunks, and a criterion needs the mixture log-likelihood of every "
                "row at the fitted parameters (score them with bic(X))."
            )
        return _frame(self._tables[name], name)

    @property
    def bic_table_(self):
        """BIC of every candidate (mclust's sign, larger is better), a pandas DataFrame."""
        return self._table("BIC")

    @property
    def icl_table_(self):
        """ICL of every candidate (mclust's sign, larger is better), a pandas DataFrame."""
        return self._table("ICL")

    @property
    def criterion_table_(self):
        """The table of the criterion that chose the model (``criterion``)."""
        return self.bic_table_ if self.criterion == "bic" else self.icl_table_

    @property
    def story_(self):
        """The fitted mixtures within classes as one story."""
        if "story_" in self.__dict__:
            return self.__dict__["story_"]
        if "_structures" not in self.__dict__:
            raise AttributeError("story_: the estimator is not fitted.")
        # files of releases before issue 56 hold no story: params_ and the structures give it
        cell_class = self.params_["component_class"]
        return self._story(cell_class, self._structures, self._groups)

    @story_.setter
    def story_(self, story):
        self.__dict__["story_"] = story

    def _story(self, cell_class, structures, groups):
        """The mixtures as a story, each component named by its class label ("setosa:0")."""
        from genprob.families.gaussian.mixture_story import GaussianMixtureStory, _cell_index

        cell_class = np.asarray(cell_class, dtype=int)
        index = _cell_index(cell_class)
        labels = [f"{self.classes_[k]}:{g}" for k, g in zip(cell_class, index, strict=True)]
        return GaussianMixtureStory(cell_class, structures, groups, component_labels=labels)

    def _joint_log_proba(self, X):
        # host NumPy: a first log_likelihood or bic(X) compiles nothing (2 s compiled)
        params = {k: np.asarray(v) for k, v in self.params_.items()}
        observed = ~np.isnan(X)
        with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
            joint = np.log(params["class_prior"]) + self.story_.log_density(
                params, np.nan_to_num(X), None if observed.all() else observed
            )
        refuse_unscored(joint, X)
        return joint

    def _fitted(self):
        check_is_fitted(self, "params_")
        p = {k: np.asarray(v) for k, v in self.params_.items()}
        cell_class = p.pop("component_class")
        story = self.story_
        return mixture.MixtureFit(
            **p, cell_class=cell_class, structures=story.structures, groups=story.groups
        )

    # -- fits over chunks: GenerativeClassifierBase's, on the EDDA story ---------------------------
    def _streamed_structure(self) -> str:
        """The one structure of an EDDA fit, whose statistics add over chunks; a ValueError
        naming the reason for any other setting."""
        action = "A fit over chunks (partial_fit, streaming) or on a Dask collection"
        if self._candidate_components() != (1,):
            raise ValueError(
                f"{action} fits one Gaussian per class (n_components=1) only, got "
                f"n_components={self.n_components!r}: EM over the components of a class needs "
                "every row at each iteration (the responsibilities, and so the statistics, "
                "depend on the current parameters and do not add over chunks). Call fit on all "
                "rows."
            )
        structures = self._candidate_structures()
        if len(structures) != 1:
            raise ValueError(
                f"{action} fits one structure only, got {len(structures)} candidates: choosing "
                "among them by BIC needs each candidate's mixture log-likelihood "
                "sum_i log sum_k pi_k p(x_i | k) at its own fitted parameters, which does not "
                "add over chunks seen before those parameters. Pass one name (structure='VEV'), "
                "or call fit on all rows."
            )
        return structures[0]

    def _make_story(self, X):
        """One Gaussian per class, the one structure across them (EDDA): the story whose
        statistics (per-class counts, sums and scatter) add over chunks."""
        classes = tuple(range(len(self.classes_)))
        return self._story(classes, (self._streamed_structure(),), (classes,))

    def _streams(self):
        # scikit-learn's checks (and hasattr) see partial_fit only where the statistics add
        try:
            self._streamed_structure()
        except ValueError as error:
            raise AttributeError(str(error)) from None
        return True

    partial_fit = available_if(_streams)(GenerativeClassifierBase.partial_fit)

    def parameters_from_statistics(self, stats) -> dict:
        """The base's parameters of ``stats`` with ``component_class``; a class without rows
        yet is named."""
        empty = np.flatnonzero(~(np.asarray(stats["class_counts"]) > 0))
        if empty.size:
            raise ValueError(f"class {_label(self.classes_[empty[0]])!r} has no rows yet")
        try:
            params = super().parameters_from_statistics(stats)
        except ValueError as error:
            # the M-step names a member of the one group, which is a class here
            text = re.sub(
                r"group (\d+)", lambda m: f"class {_label(self.classes_[int(m[1])])!r}", str(error)
            )
            raise ValueError(text) from None
        return {**params, "component_class": np.asarray(self.story_.cell_class)}

    def chunk_statistics(self, X, y, sample_weight=None, *, e_step=False):
        """:meth:`GenerativeClassifierBase.chunk_statistics` of labeled rows only: streaming and
        Dask fits of MDA stop before EM over chunks."""
        if e_step or self._unlabeled_rows(np.asarray(y)).any():
            raise ValueError(
                f"unlabeled rows ({self._unlabeled_label!r}) need EM over every row (MclustSSC): "
                "a fit over chunks or on a Dask collection adds labeled statistics only. Call "
                "fit on the rows in memory."
            )
        return super().chunk_statistics(X, y, sample_weight)


def align_draws(story, draws, reference, potential_energy=None, **options):
    """:meth:`GaussianMixtureStory.align_draws` (kept importable here, where it was written)."""
    return story.align_draws(draws, reference, potential_energy, **options)


def _label(value):
    """A class label as a plain Python value (for messages)."""
    return value.item() if hasattr(value, "item") else value


def _table(values, rows, components) -> dict:
    """A criterion table as plain values (saved without pickle)."""
    return {"values": np.asarray(values, dtype=np.float64), "rows": rows, "G": list(components)}


def _frame(table, name):
    import pandas as pd

    rows = table["rows"]
    if rows and isinstance(rows[0], list | tuple):
        index = pd.MultiIndex.from_tuples([tuple(r) for r in rows], names=["class", "structure"])
    else:
        index = pd.Index(list(rows), name="structure")
    columns = pd.Index([int(g) for g in table["G"]], name="G")
    frame = pd.DataFrame(np.asarray(table["values"]), index=index, columns=columns)
    frame.attrs.update(criterion=name, sign=TABLE_SIGN)
    return frame


def _combine(fits, class_prior):
    """Class-by-class fits (one class each) as one :class:`~mixture.MixtureFit`."""
    cell_class = np.concatenate([np.full(len(f.weights), k) for k, f in enumerate(fits)])
    groups, start = [], 0
    for f in fits:
        groups.append(tuple(range(start, start + len(f.weights))))
        start += len(f.weights)
    return mixture.MixtureFit(
        class_prior=np.asarray(class_prior, dtype=np.float64),
        weights=np.concatenate([f.weights for f in fits]),
        means=np.concatenate([f.means for f in fits]),
        covariances=np.concatenate([f.covariances for f in fits]),
        cell_class=cell_class,
        structures=tuple(f.structures[0] for f in fits),
        groups=tuple(groups),
        log_likelihood=float(sum(f.log_likelihood for f in fits)),
        n_iter=max(f.n_iter for f in fits),
        converged=all(f.converged for f in fits),
        trace=[],
    )
