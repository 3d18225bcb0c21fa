"""What a statistician asks of a fitted generative classifier (issue 45; docs/criteria.md):
information criteria, log p(x), the class prior under a shift, and ``unlabeled_weight="auto"``
(docs/semi_supervised.md), all through the estimators' public methods and ``params_``.
"""

from __future__ import annotations

import copy
import math
import warnings

import numpy as np
from scipy.special import logsumexp, softmax
from sklearn.utils import check_random_state

from genprob.engine._warnings import warn_user

__all__ = [
    "AUTO_WEIGHT_GRID",
    "CriteriaMixin",
    "UnlabeledRowsHurtWarning",
    "UnlabeledWeightTieWarning",
    "fit_with_chosen_weight",
]

#: The λ values ``unlabeled_weight="auto"`` chooses from (0: the labeled-only fit).
AUTO_WEIGHT_GRID = (0.0, 0.1, 0.3, 1.0)
#: Folds of the cross-validation over the labeled rows (fewer when a class has fewer rows).
AUTO_WEIGHT_FOLDS = 5
#: Held-out folds at least with few labeled rows (one held-out row a class ranks by chance)
FEW_LABEL_EVALUATIONS = 9
#: Floor of a held-out row's log p(y | x): log of float64's epsilon (scikit-learn's log_loss).
LOG_EPS = math.log(np.finfo(np.float64).eps)
#: Standard errors of the fold-wise difference by which λ = 0 beats every λ > 0 when rows hurt
HURT_MARGIN = 2.0


class UnlabeledRowsHurtWarning(UserWarning):
    """The unlabeled rows make the held-out labeled rows worse than ignoring them."""


class UnlabeledWeightTieWarning(UserWarning):
    """``unlabeled_weight="auto"`` could not compare the weights: every λ gave every fold the
    same held-out scores."""


class CriteriaMixin:
    """Criteria, log p(x) and class-prior adjustment for a fitted generative classifier."""

    # -- information criteria --------------------------------------------------------------------
    def _criterion_log_likelihood(self, X, y):
        """log L of ``X`` (mixture) or of ``X`` with partly known labels ``y``, and n."""
        return float(self.log_likelihood(X, y)), (X.shape[0] if hasattr(X, "shape") else len(X))

    def bic(self, X, y=None) -> float:
        """Bayesian information criterion ``-2 log L + df log n`` (scikit-learn's sign: smaller
        is better): ``log L`` is :meth:`log_likelihood` of ``X`` and ``y`` (the mixture one when
        ``y`` is None), ``df`` :meth:`num_parameters` (docs/criteria.md)."""
        log_lik, n = self._criterion_log_likelihood(X, y)
        return -2.0 * log_lik + self.num_parameters() * math.log(n)

    def log_evidence(self, X, y, prior=None) -> float:
        """Exact log marginal likelihood ``log p(X, y)`` of labeled rows under the story's
        conjugate prior (larger is better; a difference is a log Bayes factor).

        The prior is :meth:`posterior`'s with ``priors="conjugate"``, whose settings ``prior``
        overrides; an unfitted estimator is fitted first (docs/criteria.md).

        Raises:
            ValueError: a story without a conjugate prior, unlabeled rows or missing entries.
        """
        from genprob.engine._dtype import precision
        from genprob.inference.posterior import conjugate_story, log_evidence, with_prior

        if not hasattr(self, "params_"):
            self.fit(X, y)
        X = self._check_X(X)
        codes = self._row_codes(y, X.shape[0])
        if prior is not None and not isinstance(prior, dict):
            raise ValueError(f"prior must be a dict of story settings, got {prior!r}.")
        story = conjugate_story(with_prior(self.story_, **(prior or {})))
        with precision(self._dtype):
            return log_evidence(story, self._as_features(X), codes, num_classes=len(self.classes_))

    def aic(self, X, y=None) -> float:
        """Akaike information criterion ``-2 log L + 2 df`` (smaller is better); ``X`` and
        ``y`` as in :meth:`bic`."""
        log_lik, _ = self._criterion_log_likelihood(X, y)
        return -2.0 * log_lik + 2.0 * self.num_parameters()

    def score_samples(self, X):
        """Log marginal density ``log p(x) = log sum_k pi_k p(x | k)`` of each row, (n,)."""
        return logsumexp(np.asarray(self.predict_joint_log_proba(X)), axis=1)

    def _chosen_weight_state(self, name: str):
        """State of the last ``unlabeled_weight="auto"`` fit; none after a fit with a number."""
        state = self.__dict__.get("_chosen_unlabeled_weight")
        if state is None or getattr(self, "unlabeled_weight", None) != "auto":
            raise AttributeError(
                f"{type(self).__name__} has no {name}: it is set by a fit with "
                f'unlabeled_weight="auto".'
            )
        return state

    @property
    def unlabeled_weight_(self) -> float:
        """The λ an ``unlabeled_weight="auto"`` fit chose and used."""
        return float(self._chosen_weight_state("unlabeled_weight_")["weight"])

    @property
    def unlabeled_weight_scores_(self):
        """The cross-validation table of ``unlabeled_weight="auto"`` (a DataFrame indexed by λ;
        :func:`weight_scores`), empty when ``y`` had no unlabeled rows."""
        table = self._chosen_weight_state("unlabeled_weight_scores_")["table"]
        import pandas as pd

        frame = pd.DataFrame({k: np.asarray(v, dtype=float) for k, v in table.items()})
        frame = frame.set_index("unlabeled_weight")
        frame.attrs["compared"] = not _all_equal(frame)  # False: the weights tied everywhere
        return frame

    # -- class prior under a shift ---------------------------------------------------------------
    def adjust_class_prior(self, X_new, max_iter: int = 1000, tol: float = 1e-10):
        """Re-estimate the class prior on new unlabeled rows, the class-conditionals fixed:
        the EM of Saerens, Latinne & Decaestecker (2002) (docs/criteria.md).

        Args:
            X_new: unlabeled rows of the new population (n, D).
            max_iter: most EM steps.
            tol: stop when the mean per-row log-likelihood gains less than this.

        Returns:
            A fitted copy (this one is untouched) with the new prior, and ``prior_n_iter_``,
            ``prior_converged_``, ``prior_log_likelihood_`` and ``prior_log_likelihood_trace_``.
        """
        if not (isinstance(max_iter, int | np.integer) and max_iter >= 1):
            raise ValueError(f"max_iter must be an integer >= 1, got {max_iter!r}.")
        if not (tol >= 0):
            raise ValueError(f"tol must be >= 0, got {tol!r}.")
        num_classes = len(self.classes_)
        # log p(x | k): the joint under a uniform prior, so a class of prior 0 keeps its density
        probe = copy.copy(self)
        probe.params_ = dict(self.params_)
        dtype = np.asarray(self.params_["class_prior"]).dtype
        probe.params_["class_prior"] = np.full(num_classes, 1.0 / num_classes, dtype=dtype)
        conditional = np.asarray(probe.predict_joint_log_proba(X_new), dtype=np.float64)
        conditional = conditional + math.log(num_classes)
        num_rows = conditional.shape[0]
        if num_rows == 0:
            raise ValueError("X_new has no rows: the prior of no rows cannot be estimated.")
        prior = np.asarray(self.params_["class_prior"], dtype=np.float64)
        with np.errstate(divide="ignore"):
            log_prior = np.log(prior)
        trace = [float(logsumexp(conditional + log_prior, axis=1).sum())]
        converged = False
        n_iter = 0
        for n_iter in range(1, max_iter + 1):  # noqa: B007 (the count is an attribute)
            prior = softmax(conditional + log_prior, axis=1).mean(axis=0)
            with np.errstate(divide="ignore"):
                log_prior = np.log(prior)
            trace.append(float(logsumexp(conditional + log_prior, axis=1).sum()))
            if (trace[-1] - trace[-2]) / num_rows < tol:
                converged = True
                break
        adjusted = copy.deepcopy(self)
        _set_class_prior(adjusted, prior.astype(dtype))
        adjusted.prior_n_iter_ = n_iter
        adjusted.prior_converged_ = converged
        adjusted.prior_log_likelihood_ = trace[-1]
        adjusted.prior_log_likelihood_trace_ = np.asarray(trace)
        return adjusted


def _set_class_prior(estimator, prior) -> None:
    """``prior`` in ``params_`` and the attributes derived from it (LDA's intercepts too)."""
    old = np.asarray(estimator.params_["class_prior"], dtype=np.float64)
    estimator.params_ = {**estimator.params_, "class_prior": prior}
    for name in ("class_prior_", "priors_"):
        if name in vars(estimator):
            setattr(estimator, name, prior)
    if "class_log_prior_" in vars(estimator):
        with np.errstate(divide="ignore"):
            estimator.class_log_prior_ = np.log(prior)
    if "intercept_" in vars(estimator) and "coef_" in vars(estimator):
        with np.errstate(divide="ignore", invalid="ignore"):
            shift = np.log(np.asarray(prior, dtype=np.float64)) - np.log(old)
        intercept = np.asarray(estimator.intercept_, dtype=np.float64)
        if len(prior) == 2 and intercept.shape == (1,):
            intercept = intercept + (shift[1] - shift[0])
        else:
            intercept = intercept + shift
        estimator.intercept_ = intercept.astype(np.asarray(estimator.intercept_).dtype)


# -- unlabeled_weight="auto" ----------------------------------------------------------------------
def _rows(X, index):
    """Rows ``index`` of a NumPy array, SciPy matrix, pandas frame or nested list."""
    if hasattr(X, "iloc"):
        return X.iloc[index]
    return X[index] if hasattr(X, "shape") else np.asarray(X)[index]


def _folds(labels, num_folds: int, seed: int):
    """Stratified folds of the labeled rows, repeated when few (:data:`FEW_LABEL_EVALUATIONS`)."""
    from sklearn.model_selection import RepeatedStratifiedKFold, StratifiedKFold

    if num_folds >= AUTO_WEIGHT_FOLDS:
        splitter = StratifiedKFold(n_splits=num_folds, shuffle=True, random_state=seed)
    else:
        repeats = -(-FEW_LABEL_EVALUATIONS // num_folds)
        splitter = RepeatedStratifiedKFold(n_splits=num_folds, n_repeats=repeats, random_state=seed)
    return list(splitter.split(np.zeros(len(labels)), labels))


def weight_scores(estimator, X, y, sample_weight=None, classes=None, grid=AUTO_WEIGHT_GRID):
    """Cross-validated scores of each λ in ``grid``: a pandas DataFrame indexed by λ.

    A fold's score is its held-out labeled rows' mean ``log p(y | x)``, floored at float64's
    epsilon as ``log_loss`` does (docs/semi_supervised.md). Columns: ``log_lik`` (mean over
    folds), ``log_lik_se``, ``joint_log_lik`` (mean held-out ``log p(x, y)``), ``accuracy``,
    and ``fold_i``.
    """
    import pandas as pd
    from sklearn.base import clone

    y = np.asarray(y)
    unlabeled = estimator._unlabeled_rows(y)
    labeled_at = np.flatnonzero(~unlabeled)
    labels = y[labeled_at]
    _, counts = np.unique(labels, return_counts=True)
    num_folds = min(AUTO_WEIGHT_FOLDS, int(counts.min()))
    if num_folds < 2:
        raise ValueError(
            'unlabeled_weight="auto" cross-validates over the labeled rows and needs at least '
            f"2 labeled rows of every class; the smallest class has {int(counts.min())}. Pass a "
            "number for unlabeled_weight."
        )
    if classes is None:
        classes = np.unique(labels)
    random_state = getattr(estimator, "random_state", None)
    seed = 0 if random_state is None else check_random_state(random_state).randint(2**31 - 1)
    folds = _folds(labels, num_folds, seed)
    weights = None if sample_weight is None else np.asarray(sample_weight)
    rows = {}
    for weight in grid:
        fold_scores, joint, correct = [], [], []
        for _, test in folds:
            keep = np.ones(len(y), dtype=bool)
            keep[labeled_at[test]] = False
            model = clone(estimator).set_params(unlabeled_weight=float(weight))
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # a fold's EM warnings are not the user's fit's
                model.fit(
                    _rows(X, keep),
                    y[keep],
                    sample_weight=None if weights is None else weights[keep],
                    classes=classes,
                )
            X_test, y_test = _rows(X, labeled_at[test]), labels[test]
            log_proba = np.asarray(model.predict_log_proba(X_test))
            codes = np.searchsorted(model.classes_, y_test)
            held_out = np.maximum(log_proba[np.arange(len(codes)), codes], LOG_EPS)
            fold_scores.append(float(held_out.mean()))
            joint.append(model.log_likelihood(X_test, y_test) / len(codes))
            correct.append(float(np.mean(model.classes_[log_proba.argmax(axis=1)] == y_test)))
        scores = np.asarray(fold_scores)
        rows[float(weight)] = {
            "log_lik": scores.mean(),
            "log_lik_se": scores.std(ddof=1) / math.sqrt(len(scores)),
            "joint_log_lik": float(np.mean(joint)),
            "accuracy": float(np.mean(correct)),
            **{f"fold_{i}": s for i, s in enumerate(scores)},
        }
    table = pd.DataFrame.from_dict(rows, orient="index")
    table.index.name = "unlabeled_weight"
    return table


def _all_equal(table) -> bool:
    """Every λ (two or more) scored every fold alike: the comparison failed."""
    folds = table[[c for c in table.columns if c.startswith("fold_")]].to_numpy()
    return len(folds) > 1 and bool(np.all(np.abs(folds - folds[0]) <= 1e-12 * np.abs(folds[0])))


def choose_weight(table) -> tuple[float, bool]:
    """The λ of the best mean score (the smallest among ties), and whether the unlabeled rows
    hurt (λ = 0 beats every λ > 0 by :data:`HURT_MARGIN` standard errors)."""
    best = float(table["log_lik"].idxmax())
    folds = table[[c for c in table.columns if c.startswith("fold_")]].to_numpy()
    weights = table.index.to_numpy(dtype=float)
    if best != 0.0 or not (weights == 0).any() or len(weights) < 2:
        return best, False
    diffs = folds[weights == 0][0] - folds[weights > 0]
    se = diffs.std(axis=1, ddof=1) / math.sqrt(diffs.shape[1])
    return best, bool(np.all(diffs.mean(axis=1) > HURT_MARGIN * se))


def fit_with_chosen_weight(estimator, X, y, sample_weight=None, classes=None):
    """:meth:`fit` with ``unlabeled_weight="auto"``: λ chosen by :func:`weight_scores`, then
    the fit on every row with it (``unlabeled_weight_``, ``unlabeled_weight_scores_``)."""
    import pandas as pd
    from sklearn.base import clone

    from genprob.engine.streaming import is_dask_collection, is_out_of_core

    if is_dask_collection(X) or is_out_of_core(X) or y is None:
        raise ValueError(
            'unlabeled_weight="auto" cross-validates over labeled rows held in memory: pass X '
            "and y as arrays (or a DataFrame), or a number for unlabeled_weight."
        )
    y_array = np.asarray(y)
    tied = False
    if estimator._unlabeled_rows(y_array).any():
        table = weight_scores(estimator, X, y_array, sample_weight, classes)
        weight, hurts = choose_weight(table)
        if _all_equal(table):  # no evidence for any λ: plain EM, as without "auto"
            weight, hurts, tied = 1.0, False, True
    else:
        table = pd.DataFrame(columns=["log_lik", "log_lik_se", "joint_log_lik", "accuracy"])
        weight, hurts = 1.0, False
    fitted = clone(estimator).set_params(unlabeled_weight=weight)
    fitted.fit(X, y, sample_weight=sample_weight, classes=classes)
    params = estimator.get_params(deep=False)
    for name in [n for n in vars(estimator) if n not in params]:
        delattr(estimator, name)  # state of an earlier fit
    for name, value in vars(fitted).items():
        if name not in params:
            setattr(estimator, name, value)
    # plain numbers and arrays (a model file stores no DataFrame), read by the properties
    estimator._chosen_unlabeled_weight = {
        "weight": weight,
        "table": {
            "unlabeled_weight": table.index.to_numpy(dtype=float),
            **{name: table[name].to_numpy(dtype=float) for name in table.columns},
        },
    }
    if tied:
        warn_user(
            f'unlabeled_weight="auto" could not compare the weights: every λ in '
            f"{tuple(float(w) for w in table.index)} gave every fold the same held-out scores "
            f"(mean log p(y | x) {table['log_lik'].iloc[0]:.4g}), so the unlabeled rows changed "
            f"no fold's fit (see each fold's EM: a fit that stopped at its start, or unlabeled "
            f"rows of weight 0). Fitted with unlabeled_weight=1 (plain EM); pass a number to "
            f"choose. unlabeled_weight_scores_.attrs['compared'] is False.",
            UnlabeledWeightTieWarning,
        )
    if hurts:
        best_other = table["log_lik"][table.index > 0].max()
        warn_user(
            f"the unlabeled rows make the held-out labeled rows worse: mean log p(y | x) "
            f"{table['log_lik'][0.0]:.4g} ignoring them (unlabeled_weight=0) against at best "
            f"{best_other:.4g} with them; the story probably does not describe the data (EM "
            f"fits the mixture, not the classes). Fitted with unlabeled_weight=0; see "
            f"unlabeled_weight_scores_.",
            UnlabeledRowsHurtWarning,
        )
    return estimator
