"""LDA's discriminant (Fisher's) directions of a shared-covariance story and its parameters
(``est.story_``, ``est.params_``), and the projection on them, as NumPy arrays."""

from __future__ import annotations

import numpy as np

from genprob.boundaries import parameters_dtype
from genprob.engine._dtype import precision
from genprob.families.gaussian.moments import covariance_of
from genprob.story import CLASS_PRIOR

__all__ = ["lda_projection", "lda_transform"]


def lda_projection(story, params, *, total_covariance=None, tol: float = 1e-4):
    """Discriminant directions of a shared-covariance Gaussian story: scikit-learn's ``svd``
    solver, or with ``total_covariance`` its ``eigen`` solver (docs/gaussian.md).

    Returns:
        ``(scalings (D, m), explained_variance_ratio)``, the ratios of all ``min(K, D)`` axes
        (``svd``) or D eigenvalues (``eigen``), largest first, as scikit-learn's before truncation.
    """
    with precision(parameters_dtype(params)):
        whitening = np.asarray(story.shared_whitening(params))
    means = np.asarray(params["means"])
    prior = np.asarray(params[CLASS_PRIOR])
    if total_covariance is None:
        centers = np.sqrt(prior)[:, None] * (means - prior @ means) @ whitening
        _, singular, right = np.linalg.svd(centers, full_matrices=False)
        power = singular**2
        ratio = power / power.sum() if power.sum() > 0 else power
        rank = int(np.sum(singular > tol * singular[0])) if singular.size else 0
        return whitening @ right[:rank].T, ratio
    between = np.asarray(total_covariance) - np.asarray(covariance_of(params))
    eigenvalues, eigenvectors = np.linalg.eigh(whitening.T @ between @ whitening)
    order = np.argsort(eigenvalues)[::-1]
    eigenvalues = eigenvalues[order]
    return whitening @ eigenvectors[:, order], eigenvalues / eigenvalues.sum()


def lda_transform(story, params, X, n_components=None):
    """Project ``X`` on the first ``n_components`` (default ``K - 1``) discriminant directions.

    Returns:
        ``(X - xbar) @ scalings`` (n, m), ``xbar`` the prior-weighted mean of the class means.
    """
    scalings, _ = lda_projection(story, params)
    num_classes, num_features = np.shape(params["means"])
    largest = min(num_classes - 1, num_features)
    if n_components is None:
        n_components = largest
    if not 1 <= int(n_components) <= largest:
        raise ValueError(
            f"n_components must lie in [1, min(n_classes - 1, n_features)] = [1, {largest}], got "
            f"{n_components!r}."
        )
    prior, means = np.asarray(params[CLASS_PRIOR]), np.asarray(params["means"])
    return (np.asarray(X) - prior @ means) @ scalings[:, : int(n_components)]
