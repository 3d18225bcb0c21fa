"""Cross-validation of a fixed model (issue 58): R mclust's ``cvMclustDA``, the model chosen
once on all rows and refitted, not re-chosen, in each fold."""

from __future__ import annotations

import numbers

import numpy as np
from scipy.special import logsumexp
from sklearn.base import clone
from sklearn.exceptions import NotFittedError
from sklearn.model_selection import StratifiedKFold, check_cv
from sklearn.utils.validation import check_is_fitted

from genprob.estimators._criteria import _rows
from genprob.estimators._summary import brier_score

__all__ = ["cross_validate_model"]


def cross_validate_model(model, X, y, *, cv=10, random_state=0, class_prior="model"):
    """Error rate and Brier score of a fixed model by cross-validation (mclust's ``cvMclustDA``).

    The model is chosen once: ``model`` as fitted (or fitted here on ``X, y`` if it is not),
    then each fold refits ``clone(model).set_params(**model.pinned_params())`` (the chosen
    structure and components of each class, one candidate per class; a classifier without
    ``pinned_params`` is refitted as it is) on the training rows and scores the test rows.
    Unlabeled rows (``y = -1``) are never scored: every fold trains on all of them and on its
    labeled training rows, and ``cv`` splits the labeled rows only.

    Args:
        model: a genprob classifier, fitted on ``X, y`` or not fitted.
        X: features (n, D).
        y: labels; the estimator's ``unlabeled_label`` marks an unlabeled row.
        cv: the number of folds (scikit-learn's ``StratifiedKFold``, shuffled with
            ``random_state``: mclust's ``balancedFolds`` are stratified and random too), or any
            scikit-learn splitter (``LeaveOneOut()`` for mclust's ``nfold = n``) or iterable of
            (train, test) indices, which then index the labeled rows.
        random_state: the seed of the shuffled folds of an int ``cv``.
        class_prior: ``"model"`` (mclust's default ``prop = object$prop``): every fold's
            posteriors use the class proportions of the fit on all rows; ``"fold"``: each
            fold's own fitted proportions.

    Returns:
        A dict: ``error`` (misclassified share of the scored rows), ``error_se``, ``brier``
        (mclust's Brier score, ``sum((indicator - posterior)^2) / (2 n)``), ``brier_se``
        (both as mclust: means weighted by fold size, its standard errors), ``proba`` (n, K)
        the test folds' posteriors (NaN on unscored rows) and ``predicted`` (n,) their
        classes (the unlabeled label on unscored rows).
    """
    if class_prior not in ("model", "fold"):
        raise ValueError(f"class_prior must be 'model' or 'fold'; got {class_prior!r}.")
    y = np.asarray(y)
    try:
        check_is_fitted(model, "params_")
        fitted = model
    except NotFittedError:  # choose the model on all rows first, as MclustDA before cvMclustDA
        fitted = clone(model).fit(X, y)
    pin = getattr(fitted, "pinned_params", None)
    template = clone(model).set_params(**(pin() if pin is not None else {}))
    unlabeled_label = getattr(fitted, "unlabeled_label", None)
    unlabeled = np.zeros(len(y), bool) if unlabeled_label is None else y == unlabeled_label
    labeled, kept = np.flatnonzero(~unlabeled), np.flatnonzero(unlabeled)
    if isinstance(cv, numbers.Integral):
        splitter = StratifiedKFold(int(cv), shuffle=True, random_state=random_state)
    else:
        splitter = check_cv(cv, y[labeled], classifier=True)
    classes = fitted.classes_
    log_prior = np.log(np.asarray(fitted.params_["class_prior"], dtype=np.float64))
    proba = np.full((len(y), len(classes)), np.nan)
    metrics, sizes = [], []
    for train, test in splitter.split(np.zeros((len(labeled), 1)), y[labeled]):
        train, test = np.sort(np.concatenate([labeled[train], kept])), labeled[test]
        fold = clone(template).fit(_rows(X, train), y[train])
        if not np.array_equal(fold.classes_, classes):
            raise ValueError(
                f"cv: a training fold holds the classes {list(fold.classes_)!r}, not all of "
                f"{list(classes)!r}; use fewer folds."
            )
        joint = np.asarray(fold.predict_joint_log_proba(_rows(X, test)), dtype=np.float64)
        if class_prior == "model":  # the fold's class densities, the full fit's proportions
            joint = joint - np.log(np.asarray(fold.params_["class_prior"])) + log_prior
        z = np.exp(joint - logsumexp(joint, axis=1, keepdims=True))
        proba[test] = z
        indicator = (y[test][:, None] == classes[None, :]).astype(np.float64)
        error = np.mean(classes[np.argmax(z, axis=1)] != y[test])
        metrics.append((error, brier_score(z, indicator)))
        sizes.append(len(test))
    metrics, sizes = np.asarray(metrics), np.asarray(sizes, dtype=np.float64)
    num_folds, total = len(sizes), sizes.sum()
    mean = sizes @ metrics / total
    # mclust's standard error of a fold-size-weighted mean over the folds
    spread = sizes @ (metrics - mean) ** 2 / (total * (num_folds - 1) / num_folds)
    se = np.sqrt(spread / num_folds)
    predicted = classes[np.argmax(np.nan_to_num(proba), axis=1)]
    if unlabeled.any():
        predicted = np.where(unlabeled, unlabeled_label, predicted)
    return {
        "error": float(mean[0]),
        "error_se": float(se[0]),
        "brier": float(mean[1]),
        "brier_se": float(se[1]),
        "proba": proba,
        "predicted": predicted,
    }
