"""``estimator.posterior(...)``: NUTS or the exact posterior of a fitted estimator, as ArviZ data
(estimator glue, so that :mod:`genprob.inference.posterior` holds exact posteriors only)."""

from __future__ import annotations

import numpy as np
import scipy.sparse
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_is_fitted

from genprob.engine._dtype import precision
from genprob.engine._limits import check_count, check_posterior_size
from genprob.engine.capabilities import has_exact_posterior
from genprob.engine.masking import has_missing, marginalized
from genprob.inference.mcmc import (
    _kernel_settings,
    check_options,
    label_coverage,
    likelihood_curvature,
    params_from_samples,
    prior_dominance,
    run_nuts,
)
from genprob.inference.posterior import (
    METHODS,
    _no_exact_posterior_error,
    _unlabeled_rows_error,
    conjugate_story,
    exact_posterior,
    posterior_from_statistics,
    with_prior,
)
from genprob.io.arviz_io import to_arviz
from genprob.story import as_sample_sites

__all__ = ["estimator_posterior", "predictive_log_joint"]

#: Rules of ``predict_proba(X, method=...)``: the plug-in rule at the fit (default), the
#: posterior predictive under the conjugate prior, and MASS's debiased LDA rule.
PREDICT_METHODS = ("plugin", "predictive", "debiased")


def predictive_log_joint(estimator, X, method, prior=None) -> np.ndarray:
    """``log p(y = k, x | data)`` (n, K) under ``method`` ``"predictive"`` or ``"debiased"``
    (class scores up to a term of the row, for ``"debiased"``)."""
    if not isinstance(method, str) or method not in PREDICT_METHODS:
        raise ValueError(f"method must be 'plugin', 'predictive' or 'debiased', got {method!r}.")
    check_is_fitted(estimator, "params_")
    X = estimator._check_X(X)
    if has_missing(X):
        raise ValueError(f"method={method!r} needs complete rows: X has missing (NaN) entries.")
    if method == "debiased":
        rule = getattr(estimator, "_debiased_log_joint", None)
        if rule is None or prior is not None:
            raise ValueError(
                f"method='debiased' is MASS's rule for linear discriminant analysis (with no "
                f"prior settings); {type(estimator).__name__} has method='predictive'."
            )
        return rule(X)
    # the exact posterior under the conjugate prior from the fit's labeled statistics
    if getattr(estimator, "_missing_fit", False) or hasattr(estimator, "label_distributions_"):
        raise ValueError(
            "the predictive rule needs a fit on fully labeled, complete rows: this fit has "
            "unlabeled rows or missing entries, whose posterior has no closed form. Use "
            "posterior(X, y, method='nuts') instead."
        )
    if prior is not None and not isinstance(prior, dict):
        raise ValueError(f"prior must be a dict of story settings, got {prior!r}.")
    story = conjugate_story(with_prior(estimator.story_, **(prior or {})))
    stats = getattr(estimator, "stats_", None)
    if stats is None:  # no labeled statistics; posterior_from_statistics checks the story
        raise _no_exact_posterior_error(story)
    exact = posterior_from_statistics(story, stats, int(estimator.n_features_in_))
    return exact.predictive_log_joint(X)


def estimator_posterior(
    estimator,
    X,
    y,
    *,
    method: str = "nuts",
    num_samples: int = 1000,
    num_warmup: int = 1000,
    num_chains: int = 2,
    random_state=None,
    progress_bar: bool = False,
    prior: dict | None = None,
    init="mle",
    priors: str = "data",
    sampler: str = "numpyro",
    predictive_draws: int | None = None,
    **nuts_settings,
):
    """Implementation of :meth:`GenerativeClassifierBase.posterior` (see there)."""
    if not isinstance(method, str) or method not in METHODS:
        raise ValueError(f"method must be 'nuts' or 'exact', got {method!r}.")
    _kernel_settings(nuts_settings, sampler)  # an unknown NUTS setting: TypeError, before work
    if method == "exact" and nuts_settings:
        raise ValueError(
            f"NUTS settings ({', '.join(sorted(nuts_settings))}) apply to method='nuts' only."
        )
    num_samples = check_count(num_samples, "num_samples")
    num_chains = check_count(num_chains, "num_chains")
    num_warmup = check_count(num_warmup, "num_warmup", minimum=0)
    if predictive_draws is not None:
        predictive_draws = check_count(predictive_draws, "predictive_draws", minimum=0)
    # the exact path ignores them, but a typo there must not pass unnoticed
    check_options(priors=priors, init=init, sampler=sampler)
    if prior is not None and not isinstance(prior, dict):
        raise ValueError(f"prior must be a dict of story settings, got {prior!r}.")
    y = np.asarray(y)
    sizes = dict(num_chains=num_chains, num_samples=num_samples, num_warmup=num_warmup)
    sizes.update(num_rows=int(y.shape[0]) if y.ndim else 0, nuts=method == "nuts")
    check_posterior_size(parameter_entries=0, **sizes)  # before a fit: chains, iterations, rows
    unlabeled = estimator._unlabeled_rows(y)
    if not hasattr(estimator, "params_"):
        if method == "exact" and np.any(unlabeled):
            raise _unlabeled_rows_error(int(np.sum(unlabeled)))  # before a fit it cannot use
        estimator.fit(X, y)
    X = estimator._check_X(X)
    if y.shape != (X.shape[0],):
        raise ValueError(f"y has shape {y.shape}; expected ({X.shape[0]},) to match X.")
    codes = estimator._label_codes(y)
    fitted = as_sample_sites(estimator.params_)  # the fit as the draws hold it
    check_posterior_size(
        parameter_entries=sum(int(np.size(value)) for value in fitted.values()),
        num_classes=len(estimator.classes_),
        itemsize=np.dtype(estimator._dtype).itemsize,
        **sizes,
    )
    story = with_prior(estimator.story_, **(prior or {}))
    # a story hook: exchangeable components, aligned to the fit before any check
    align_draws = getattr(story, "align_draws", None)
    if priors == "conjugate":
        story = conjugate_story(story)
    if estimator._marginalizes and has_missing(X):
        if priors == "data" and method == "nuts":
            # the wrapper keeps its story's prior (run_nuts's scaling passes it by): scale it
            # here, on the observed cells, so that NaN in every row still gets the data's scale
            story = story.scaled_to_data(X)
        story = marginalized(story)  # NaN entries are missing for the model and log-likelihoods
    if method == "exact" and not has_exact_posterior(story):  # exact_posterior refuses unlabeled
        raise ValueError(f"method must be 'nuts' here: {_no_exact_posterior_error(story)}")
    num_classes = len(estimator.classes_)
    seed = int(check_random_state(random_state).randint(0, 2**31 - 1))
    feature_names = getattr(estimator, "feature_names_in_", None)
    if feature_names is not None and len(feature_names) != X.shape[1]:
        feature_names = None
    curvature = {}
    with precision(estimator._dtype):
        if method == "nuts" and scipy.sparse.issparse(X):
            X = X.toarray()  # the NumPyro model scores dense rows
        Xj = estimator._as_array(X)
        if method == "exact":
            exact = exact_posterior(story, Xj, codes, num_classes=num_classes)
            draws = posterior = exact.sample(seed, (num_chains, num_samples))
        else:
            started_at_fit = isinstance(init, str) and init == "mle"

            def while_compiling():  # needs the fit only: runs while the chain compiles
                curvature.update(likelihood_curvature(story, fitted, Xj, codes))

            posterior = run_nuts(
                story,
                Xj,
                codes,
                num_classes=num_classes,
                num_warmup=num_warmup,
                num_samples=num_samples,
                num_chains=num_chains,
                seed=seed,
                progress_bar=progress_bar,
                init=init,
                priors=priors,
                sampler=sampler,
                check=align_draws is None,  # else diagnosed below, on aligned draws
                fit=fitted if started_at_fit else None,  # the fit made: no second EM
                while_compiling=while_compiling,
                **nuts_settings,
            )
            samples = posterior.get_samples(group_by_chain=True)
            draws = params_from_samples(story, samples, Xj.shape[1])
        names = (
            estimator.classes_.tolist(),  # plain values: messages show 1, not np.int64(1)
            [f"x{j}" for j in range(Xj.shape[1])] if feature_names is None else list(feature_names),
        )
        sample_stats = None
        if method == "nuts" and align_draws is not None:
            sample_stats = {
                k: np.asarray(v) for k, v in posterior.get_extra_fields(group_by_chain=True).items()
            }
            draws, _ = align_draws(
                {k: np.asarray(v) for k, v in draws.items()},
                fitted,
                sample_stats["potential_energy"],
                labels=label_coverage(codes, num_classes),
                class_names=names[0],
                feature_names=names[1],
                started_at_fit=started_at_fit,
            )
            story, posterior = posterior.genprob_story, draws  # the prior the chains ran under
        with np.errstate(divide="ignore"):  # a parameter fixed by the model has no curvature
            prior_dominance(
                story, fitted, draws, Xj, codes, names=names, curvature=curvature or None
            )
        return to_arviz(
            posterior,
            story,
            Xj,
            codes,
            mle=fitted,
            sample_stats=sample_stats,
            classes=estimator.classes_,
            feature_names=feature_names,
            method=method,
            predictive_draws=predictive_draws,
        )
