"""Model-based discriminant analysis (issue 44): R mclust's ``MclustDA``, ``EDDA`` and
``MclustSSC`` as one scikit-learn classifier; the maths is :mod:`genprob.families.gaussian.mixture`.
"""

from __future__ import annotations

import math
import numbers
from functools import partial

import numpy as np
from sklearn.utils._param_validation import StrOptions
from sklearn.utils.metaestimators import available_if
from sklearn.utils.validation import check_is_fitted

from genprob.engine._validation import (
    EM_PARAMETER_CONSTRAINTS,
    MISSING_PARAMETER_CONSTRAINTS,
    NumberInterval,
    check_sample_weight,
)
from genprob.engine._warnings import warn_user
from genprob.engine.em_driver import warn_max_iter
from genprob.engine.execution import refuse_unscored
from genprob.engine.streaming import is_out_of_core
from genprob.estimators._base import GenerativeClassifierBase, keep_parameters
from genprob.families.gaussian import mclust, mclust_prior, mixture

__all__ = ["MixtureDiscriminantAnalysis"]

#: The header of the criterion tables (mclust's sign, unlike :meth:`bic`).
TABLE_SIGN = "2 log L - df log n (mclust's sign: larger is better)"


class MixtureDiscriminantAnalysis(GenerativeClassifierBase):
    """Gaussian mixtures within classes, structure and components chosen by BIC (mclust's
    MclustDA, EDDA and MclustSSC; docs/howto/model_based.md).

    Class ``k`` is a mixture of ``G_k`` Gaussians whose covariances follow one of the 14
    structures of Celeux & Govaert (1995). ``n_components=1`` is EDDA (one structure across the
    classes, chosen by one BIC over all rows); several values are MclustDA (each class its own
    structure and ``G_k``, by BIC on its rows; with unlabeled rows one structure and ``G`` for
    every class, by the partly labeled BIC).

    Args:
        structure: a structure name (``"VVV"``), a list of names (or ``"EEE,VVV"``), or
            ``"all"`` (the 14); or a dict from each class label to one of those, the class's own
            candidates (mclust's ``MclustDA(modelNames = list(...))``).
        n_components: components per class: an int, or an iterable of ints to choose from;
            or a dict from each class label to one of those (mclust's ``G = list(...)``).
            A dict (either argument) is MclustDA, each class fitted on its own rows, even
            with one component a class; like mclust, it needs one entry for every class of
            ``y`` (a missing or unknown label is an error), and it cannot be used with
            unlabeled rows (one structure and G for every class there) or with a structure
            dict and ``n_components=1`` (EDDA: one structure across the classes).
            :meth:`pinned_params` gives the chosen model in this form.
        criterion: ``"bic"`` or ``"icl"``: what chooses the model.
        missing: ``"error"`` refuses NaN cells; ``"marginalize"`` sums them out (the exact
            density of the observed coordinates, in EM and in prediction).
        unlabeled_weight: weight λ of unlabeled rows (``y = -1``) in EM.
        max_iter: EM's iterations (per candidate and start).
        em_tol: EM's relative tolerance on the log-likelihood.
        init_params: how EM starts a class of several components: ``"hc"`` (default), mclust's
            model-based hierarchical agglomeration (hcVVV on the standardized SVD rotation of
            the class's labeled rows, as ``Mclust``; deterministic; classes of more than 2000
            labeled rows start from k-means), or ``"kmeans"``, seeded k-means (before issue 58).
        n_init: starts per class with several components, the best kept: the first from
            ``init_params``, the others from k-means seeded ``random_state + r``.
        random_state: seed of the k-means starts (an int; the fit is deterministic).
        unlabeled_label: the label of unlabeled rows (-1); None: every label is a class.
        prior: None (maximum likelihood EM), ``"default"`` (mclust's ``priorControl()``: its
            ``defaultPrior``, a conjugate normal and inverse-Wishart-type prior, MAP EM), or a
            dict of hyperparameters among ``shrinkage`` (>= 0), ``mean`` (D,), ``dof`` (> 0) and
            ``scale`` (a number, or a (D, D) matrix), the default prior's where left out.
            Each candidate's prior is built from its rows as mclust builds it (all rows with
            G = the total components under EDDA and with unlabeled rows, each class's rows with
            its G otherwise). Only 10 structures have one (not VEE, EVE, VVE, EVV): naming one
            of those is an error, and ``"all"`` leaves them out of the tables (NaN), as mclust.

    Attributes:
        structure_: (K,) the structure chosen for each class (the same for all under EDDA).
        n_components_: (K,) the number of components chosen for each class.
        params_: ``class_prior`` (K,), ``weights`` (J,) within-class mixing proportions,
            ``means`` (J, D), ``covariances`` (J, D, D), ``component_class`` (J,) class code
            of each component (J = sum of ``n_components_``).
        log_likelihood_: the chosen fit's log-likelihood (the mixture one; with unlabeled rows
            the partly labeled one EM maximized).
        n_iter_: EM's iterations of the chosen fit (absent after a closed-form fit).
        converged_: whether that EM reached ``em_tol``.
        log_likelihood_trace_: EM's objective after each iteration (never decreasing).
        stats_: the EDDA story's statistics of a one-structure fit of labeled rows, which
            ``partial_fit`` (and fits on chunks or Dask) add to; such fits keep no criterion
            table and no ``log_likelihood_``.
    """

    _parameter_constraints: dict = {
        "structure": [str, list, tuple, dict],
        "n_components": [
            NumberInterval(numbers.Integral, 1, None, closed="left"),
            list,
            tuple,
            range,
            dict,
        ],
        "criterion": [StrOptions({"bic", "icl"})],
        "init_params": [StrOptions({"hc", "kmeans"})],
        **MISSING_PARAMETER_CONSTRAINTS,
        "unlabeled_weight": [NumberInterval(numbers.Real, 0, 1, closed="both")],
        **{k: EM_PARAMETER_CONSTRAINTS[k] for k in ("max_iter", "em_tol", "n_init")},
        "random_state": [NumberInterval(numbers.Integral, 0, None, closed="left")],
        "unlabeled_label": EM_PARAMETER_CONSTRAINTS["unlabeled_label"],
        "prior": [None, StrOptions({"default"}), dict],
    }

    #: files of releases before issue 56 hold no story: ``story_`` is derived
    _has_story = False
    _validate_kwargs = {"dtype": np.float64}
    _prior_parameter = None

    def __init__(
        self,
        structure="all",
        n_components=1,
        *,
        criterion="bic",
        init_params="hc",
        missing="error",
        unlabeled_weight=1.0,
        max_iter=200,
        em_tol=1e-8,
        n_init=1,
        random_state=0,
        unlabeled_label=-1,
        prior=None,
    ):
        keep_parameters(self, locals())

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = self.missing == "marginalize"
        return tags

    # -- settings --------------------------------------------------------------------------------
    def _candidate_structures(self, value=None) -> tuple:
        known = tuple(mclust.STRUCTURES)
        value = self._not_per_class("structure") if value is None else value
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

    def _candidate_components(self, value=None) -> tuple:
        given = self._not_per_class("n_components") if value is None else value
        value = (given,) if isinstance(given, numbers.Integral) else tuple(given)
        # whole floats too: the command line reads "1,2,3" as numbers
        whole = all(isinstance(g, numbers.Real) and float(g).is_integer() for g in value)
        if not value or not whole or min(value) < 1:
            raise ValueError(f"n_components must be integers >= 1; got {given!r}.")
        return tuple(sorted({int(g) for g in value}))

    def _per_class(self) -> bool:
        """Whether ``structure`` or ``n_components`` is a dict: MclustDA, class by class."""
        return isinstance(self.structure, dict) or isinstance(self.n_components, dict)

    def _not_per_class(self, name):
        value = getattr(self, name)
        if isinstance(value, dict):
            raise ValueError(
                f"{name}: a dict per class label fits each class on its own rows (MclustDA); "
                "a fit over chunks (partial_fit, streaming, Dask) fits one structure with one "
                "Gaussian per class. Pass one value for all classes, or call fit on all rows."
            )
        return value

    def _class_candidates(self, semi: bool, num_features: int) -> list:
        """Each class's (structures, components), from dicts keyed by class label (mclust's
        ``MclustDA(G = list(...), modelNames = list(...))``: one entry per class)."""
        labels = [_label(c) for c in self.classes_]
        if semi:
            raise ValueError(
                "structure and n_components: a dict per class label fits each class on its own "
                f"rows (MclustDA), but y has unlabeled rows ({self._unlabeled_label!r}): then "
                "the classes share one structure and G, chosen by one BIC over all rows "
                "(MclustSSC). Pass one value for all classes."
            )
        values = {}
        for name in ("structure", "n_components"):
            value = getattr(self, name)
            if not isinstance(value, dict):
                values[name] = [value] * len(labels)
                continue
            unknown = [k for k in value if k not in set(labels)]
            missing = [c for c in labels if c not in value]
            if unknown or missing:
                problems = ([f"unknown labels {unknown!r}"] if unknown else []) + (
                    [f"no entry for {missing!r}"] if missing else []
                )
                raise ValueError(
                    f"{name}: a dict needs one entry per class label of y, {labels!r} (as "
                    f"mclust's MclustDA needs one per class); {' and '.join(problems)}."
                )
            values[name] = [value[c] for c in labels]
        if not isinstance(self.n_components, dict) and self._candidate_components() == (1,):
            raise ValueError(
                "structure: a dict per class with n_components=1 is ambiguous: n_components=1 "
                "is EDDA, one structure across the classes. For one component per class, each "
                "class on its own rows (MclustDA), pass n_components={label: 1, ...} as well."
            )
        candidates = []
        for s, g in zip(values["structure"], values["n_components"], strict=True):
            candidates.append((self._candidate_structures(s), self._candidate_components(g)))
            self._check_prior(candidates[-1][0], num_features, named=s != "all")
        return candidates

    # -- fitting ---------------------------------------------------------------------------------
    def fit(self, X, y, sample_weight=None):
        """Fit every candidate model and keep the one the criterion prefers.

        Args:
            X: features (n, D); NaN cells with ``missing="marginalize"``.
            y: labels; ``-1`` marks an unlabeled row.
            sample_weight: row weights (a weight of 2 counts a row twice, in BIC's n too).
        """
        self._check_parameters()
        if is_out_of_core(X):  # chunks, Parquet, Dask: GenerativeClassifierBase's, EDDA only
            self._streamed_structure()
            return super().fit(X, y, sample_weight)
        X, y = self._rows(X, y, reset=True)
        per_class = self._per_class()
        if not per_class:
            structures = self._candidate_structures()
            components = self._candidate_components()
            self._check_prior(structures, X.shape[1])
        n = X.shape[0]
        weight = check_sample_weight(sample_weight, n, allow_all_zero=False)
        weight = np.ones(n) if weight is None else weight
        unlabeled = self._unlabeled_rows(y)
        codes = self._encode_classes(y, unlabeled, None)
        row_weight = np.where(unlabeled, weight * self.unlabeled_weight, weight)
        if n < 2 or float(row_weight.sum()) <= 0:
            raise ValueError(f"n_samples={n}: a Gaussian fit needs at least 2 rows.")
        observed = ~np.isnan(X) if self._marginalizes and np.isnan(X).any() else None
        semi = bool(np.any(unlabeled & (row_weight > 0)))
        for name in ("n_iter_", "converged_", "log_likelihood_trace_", "stats_"):
            self.__dict__.pop(name, None)
        settings = dict(
            observed=observed,
            n_init=self.n_init,
            random_state=int(self.random_state),
            max_iter=self.max_iter,
            tol=self.em_tol,
            init=self.init_params,
        )
        if per_class:
            candidates = self._class_candidates(semi, X.shape[1])
            fit = self._fit_per_class(X, codes, row_weight, candidates, settings)
        elif components == (1,) or semi:
            fit = self._fit_common(X, codes, row_weight, structures, components, semi, settings)
        else:
            candidates = [(structures, components)] * len(self.classes_)
            fit = self._fit_per_class(X, codes, row_weight, candidates, settings)
        self._set_fit(fit, X, row_weight, observed, semi)
        # summary(): the rows the criteria counted (BIC's n), in total and per class
        counts = np.bincount(codes[codes >= 0], row_weight[codes >= 0], len(self.classes_))
        self._tables["rows"] = {"n": float(row_weight.sum()), "class_counts": counts, "semi": semi}
        alone = not per_class and components == (1,) and len(structures) == 1 and not semi
        if alone and observed is None and self.prior is None:
            # partial_fit continues from these (a fit under a prior has no partial_fit)
            self.stats_ = self._labeled_statistics(self.story_, X, codes, row_weight)
        return self

    def _check_prior(self, structures, num_features, named=None) -> None:
        """A bad ``prior`` or a named structure without one is refused before any fit."""
        if self.prior is None:
            return
        if isinstance(self.prior, dict):
            mclust_prior.check_prior(self.prior, num_features)
        missing = [s for s in structures if s not in mclust_prior.PRIOR_STRUCTURES]
        if missing and (self.structure != "all" if named is None else named):
            raise ValueError(
                f"structure: mclust has no prior for {', '.join(missing)} (prior={self.prior!r} "
                f"works with {', '.join(mclust_prior.PRIOR_STRUCTURES)}); leave them out, or "
                "pass structure='all', which leaves them out of the tables as mclust does."
            )

    def _priors(self, X, row_weight, structure, G, num_groups):
        """One hyperparameter dict per group, built from rows ``X`` with ``G`` components
        (mclust's defaultPrior, the user's values over it); None without a prior."""
        if self.prior is None:
            return None
        hyper = mclust_prior.default_prior(X, G, structure, row_weight)
        if isinstance(self.prior, dict):
            hyper.update(mclust_prior.check_prior(self.prior, X.shape[1]))
        return (hyper,) * num_groups

    def _fit_common(self, X, codes, row_weight, structures, components, semi, settings):
        """One structure and G for every class, chosen by one criterion over all rows."""
        K = len(self.classes_)
        ones = {}  # each structure's one-component fit: a range's fallback start

        def fit_one(structure, G):
            across = G == 1 and components == (1,)
            # mclust's EDDA and MclustSSC: one prior from all rows with G the total components
            prior = self._priors(X, row_weight, structure, G * K, 1 if across else K)
            fit = partial(
                mixture.fit_mixture,
                X,
                codes,
                (G,) * K,
                structure if across else (structure,) * K,
                across_classes=across,
                row_weight=row_weight,
                prior=prior,
                **settings,
            )
            try:
                result = fit()
            except mixture.CollapsedComponentError:
                if across or not semi:
                    raise
                # a range never fails where its one-component fit succeeds: split that fit
                if structure not in ones:
                    ones[structure] = mixture.fit_mixture(
                        X, codes, (1,) * K, structure, across_classes=True,
                        row_weight=row_weight, prior=self._priors(X, row_weight, structure, K, 1),
                        **settings,
                    )  # fmt: skip
                result = fit(start_from=self._split(X, ones[structure], G, row_weight, settings))
            if G == 1:
                ones.setdefault(structure, result)
            return result

        def log_lik(fit):  # without unlabeled rows, the mixture log-likelihood (mclust's)
            if semi:
                return fit.log_likelihood
            return mixture.mixture_log_likelihood(fit, X, row_weight, settings["observed"])

        # in order: a range's G = 1 fit comes first
        outcomes = [_attempt(fit_one, s, G) for s, G in self._grid(structures, components)]
        fit, tables, lines = self._choose(outcomes, structures, components, K, row_weight, log_lik)
        self._keep_tables(tables, list(structures), components, lines)
        return fit

    @staticmethod
    def _split(X, one, G, row_weight, settings):
        """Every row's responsibilities for G components a class: ``one`` split."""
        K = len(one.class_prior)
        classes = np.stack(
            [one.responsibilities[:, one.cell_class == k].sum(1) for k in range(K)], 1
        )
        return mixture.split_start(X, classes, (G,) * K, row_weight, settings["random_state"])

    def _fit_per_class(self, X, codes, row_weight, candidates, settings):
        """MclustDA: each class's structure and G chosen by BIC on its own rows, among its
        ``candidates[k]`` (structures, components)."""
        chosen, tables, lines, sets = [], [], [], []
        # the table's columns: every class's G (NaN where a class had no such candidate)
        columns = sorted({G for _, components in candidates for G in components})
        for k, (structures, components) in enumerate(candidates):
            rows = codes == k
            Xk, wk = X[rows], row_weight[rows]
            observed = None if settings["observed"] is None else settings["observed"][rows]
            # mclust's MclustDA: each class's prior from its own rows with its G
            fitted = [
                ((G,), (s,), self._priors(Xk, wk, s, G, 1))
                for s, G in self._grid(structures, components)
            ]
            sets.append((Xk, np.zeros(len(Xk), int), fitted, wk, observed))
        shared = {key: value for key, value in settings.items() if key != "observed"}
        # every class's candidates in one lockstep (alike ones share their M-steps' batches);
        # mclust's MclustDA fits a class by its EM (me*p, mvn*p), not its M-step alone
        outcomes = mixture.fit_mixture_sets(sets, prior_step="em", **shared)
        for k, (structures, components) in enumerate(candidates):
            fit, table, left_out = self._choose(
                outcomes[k], structures, components, 1, sets[k][3], cls=self.classes_[k]
            )
            chosen.append(fit)
            wide = np.full((2, len(structures), len(columns)), np.nan)
            wide[:, :, [columns.index(G) for G in components]] = table
            tables.append(wide)
            lines += left_out
        rows = [
            [_label(c), s]
            for c, (structures, _) in zip(self.classes_, candidates, strict=True)
            for s in structures
        ]
        self._keep_tables(np.concatenate(tables, axis=1), rows, columns, lines)
        counts = np.bincount(codes[codes >= 0], weights=row_weight[codes >= 0])
        return _combine(chosen, counts / counts.sum())

    def _grid(self, structures, components):
        """The ``(structure, G)`` pairs fitted: as mclust, a structure without a prior is missing
        from the tables (_check_prior refused a named one); G increasing."""
        allowed = [
            s for s in structures if self.prior is None or s in mclust_prior.PRIOR_STRUCTURES
        ]
        return [(s, G) for s in allowed for G in components]

    def _choose(
        self, outcomes, structures, components, num_classes, row_weight, log_lik=None, cls=None
    ):
        """Every (structure, G) fitted (``outcomes``: the fits or errors of :meth:`_grid`'s
        pairs, in its order): the fit the criterion prefers, the BIC and ICL tables (mclust's
        sign, NaN where components collapsed) and a line per left-out candidate."""
        n = float(row_weight.sum())
        tables = np.full((2, len(structures), len(components)), np.nan)  # BIC, ICL
        fits, failures = {}, []
        pairs = self._grid(structures, components)
        cells = [(structures.index(s), components.index(G)) for s, G in pairs]
        for (a, b), fit in zip(cells, outcomes, strict=True):
            structure, G = structures[a], components[b]
            if isinstance(fit, mixture.CollapsedComponentError):
                failures.append((structure, G, fit))
                continue
            num_features = fit.means.shape[1]
            df = mixture.num_parameters(fit.structures, fit.groups, num_classes, num_features)
            log_l = fit.log_likelihood if log_lik is None else log_lik(fit)
            tables[0, a, b] = 2.0 * log_l - df * math.log(n)
            penalty = mixture.icl_penalty(fit.responsibilities, row_weight)
            tables[1, a, b] = tables[0, a, b] + 2.0 * penalty
            fits[a, b] = fit
        where, per_class = ("", False) if cls is None else (f"class {_label(cls)!r}: ", True)
        if not fits:
            structure, G, error = failures[0]
            raise ValueError(
                f"{where}no candidate model could be fitted; the first, {structure} with "
                f"G={G}: {self._named_class(error, per_class)}"
            )
        table = tables[int(self.criterion == "icl")]
        lines = [
            f"{where}{structure} with G={G} ({self._named_class(error, per_class)})"
            for structure, G, error in failures
        ]
        return fits[np.unravel_index(np.nanargmax(table), table.shape)], tables, lines

    def _keep_tables(self, tables, rows, components, lines) -> None:
        """The BIC and ICL tables; one warning per fit for the left-out candidates, as mclust
        records NA in its BIC table and says nothing."""
        self._tables = {"BIC": _table(tables[0], rows, components)}
        self._tables["ICL"] = _table(tables[1], rows, components)
        if lines:
            shown = "; ".join(lines[:3]) + (
                f"; and {len(lines) - 3} more" if len(lines) > 3 else ""
            )
            warn_user(
                f"{len(lines)} candidate model(s) left out, their components collapsed (missing "
                f"in bic_table_ and icl_table_): {shown}",
                mixture.CollapsedComponentWarning,
            )

    def _named_class(self, error, per_class: bool = False) -> str:
        """The error's message naming the class by its label (dropped in a per-class fit's)."""
        text = str(error)
        if getattr(error, "cls", -1) >= 0 and error.cls < len(self.classes_):
            label = "" if per_class else f"class {_label(self.classes_[error.cls])!r}, "
            text = text.replace(f"class {error.cls}, ", label, 1)
        return text

    def _set_fit(self, fit, X, row_weight, observed, semi):
        self.story_ = self._story(fit.cell_class, fit.structures, fit.groups)
        params = {
            "class_prior": fit.class_prior,
            "weights": fit.weights,
            "means": fit.means,
            "covariances": fit.covariances,
            "component_class": fit.cell_class,
        }
        self.fit_statistics(None, params=params)
        if semi:
            self.log_likelihood_ = fit.log_likelihood
        else:
            self.log_likelihood_ = mixture.mixture_log_likelihood(fit, X, row_weight, observed)
        if fit.n_iter:
            self.n_iter_ = fit.n_iter
            self.converged_ = fit.converged
            self.log_likelihood_trace_ = np.asarray(fit.trace)
            if not fit.converged and fit.n_iter >= self.max_iter:
                warn_max_iter(self.max_iter, self.em_tol, change="relative")

    def _set_fitted_attributes(self, stats):
        """``structure_`` and ``n_components_``; a fit from statistics keeps no criterion table."""
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
        """BIC of every candidate (mclust's sign, larger is better), a pandas DataFrame: rows
        structures (or (class, structure)), columns G, NaN where a candidate collapsed."""
        return self._table("BIC")

    @property
    def icl_table_(self):
        """ICL of every candidate (mclust's sign, larger is better), a pandas DataFrame."""
        return self._table("ICL")

    @property
    def criterion_table_(self):
        """The table of the criterion that chose the model (``criterion``)."""
        return self.bic_table_ if self.criterion == "bic" else self.icl_table_

    def summary(self, X=None, y=None):
        """mclust's ``summary(MclustDA)``: the chosen models, log-likelihood, n, df, BIC and the
        top of the criterion table; with ``X, y`` also the confusion matrix, classification
        error and Brier score of those rows (unlabeled ones left out).

        The BIC is mclust's, ``2 log L - df log n`` (larger is better), minus :meth:`bic`.

        Returns:
            A ``MixtureSummary``: ``str()`` is the printed
            text; ``models`` (per class), ``top``, ``confusion`` are pandas DataFrames.
        """
        from genprob.estimators._summary import summarize

        check_is_fitted(self, "params_")
        story, D = self.story_, self.n_features_in_
        # each class's own Mclust (MclustDA: a group per class): G - 1 proportions, no class one
        class_df = [
            mixture.num_parameters((s,), (g,), 1, D)
            for s, g in zip(story.structures, story.groups, strict=True)
        ]
        return summarize(self, X, y, class_df)

    def pinned_params(self) -> dict:
        """The chosen model as ``structure`` and ``n_components`` that admit it alone.

        ``clone(model).set_params(**model.pinned_params()).fit(X, y)`` fits one candidate per
        class and, on the same rows, reproduces the chosen fit (mclust's ``MclustDA(X, class,
        G = list(...), modelNames = list(...))`` with the chosen models), as
        :func:`genprob.cross_validate_model` does in each fold. A class-by-class fit (MclustDA)
        gives dicts keyed by class label; EDDA and a fit with unlabeled rows give one value.
        """
        check_is_fitted(self, "params_")
        structures = [str(s) for s in self.structure_]
        components = [int(g) for g in self.n_components_]
        tables = getattr(self, "_tables", None)
        rows = tables["BIC"]["rows"] if tables is not None else []
        if rows and isinstance(rows[0], list | tuple):  # (class, structure) rows: per class
            labels = [_label(c) for c in self.classes_]
            return {
                "structure": dict(zip(labels, structures, strict=True)),
                "n_components": dict(zip(labels, components, strict=True)),
            }
        if max(components) == 1 and len(self.story_.groups) > 1:
            # one component in each class's own group (G = 1 of a range with unlabeled rows):
            # the EDDA structure with the same covariances (mclust's XII, XXI, XXX)
            name = structures[0]
            return {"structure": mclust.one_component(name), "n_components": 1}
        return {"structure": structures[0], "n_components": components[0]}

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
        # host NumPy: a first log_likelihood or bic(X) compiles nothing
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
        """The one structure of an EDDA fit (statistics that add over chunks), else why not."""
        action = "A fit over chunks (partial_fit, streaming) or on a Dask collection"
        if self.prior is not None:
            raise ValueError(
                f"{action} adds maximum-likelihood statistics; prior={self.prior!r} needs the "
                "rows' default prior and MAP M-steps of fit. Call fit on all rows."
            )
        if self._candidate_components() != (1,):
            raise ValueError(
                f"{action} fits one Gaussian per class (n_components=1) only, got "
                f"n_components={self.n_components!r}: EM over the components of a class needs "
                "every row at each iteration. Call fit on all rows."
            )
        structures = self._candidate_structures()
        if len(structures) != 1:
            raise ValueError(
                f"{action} fits one structure only, got {len(structures)} candidates: BIC needs "
                "each one's log-likelihood at its own parameters, which does not add over chunks. "
                "Pass one name (structure='VEV'), or call fit on all rows."
            )
        return structures[0]

    def _make_story(self, X):
        """EDDA's story (one Gaussian per class, one structure): its statistics add over chunks."""
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
        except mclust.DegenerateGroupError as error:
            # the M-step names a member of the one group, which is a class here
            owner = f"class {_label(self.classes_[error.group])!r}"
            raise ValueError(error.naming(owner)) from None
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


def _attempt(fit_one, structure, G):
    """``fit_one(structure, G)``, or the error of its collapsed components."""
    try:
        return fit_one(structure, G)
    except mixture.CollapsedComponentError as error:
        return error


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
