"""Dimension reduction for fitted Gaussian classifiers: mclust's ``MclustDR`` (Scrucca 2010,
2014), from a fitted model's components and the data's marginal moments, as NumPy arrays
(docs/howto/model_based.md, "Directions that separate the classes")."""

from __future__ import annotations

import numpy as np

from genprob.families.gaussian.moments import covariance_of
from genprob.families.gaussian.story import GaussianStory
from genprob.story import CLASS_PRIOR

__all__ = ["discriminant_directions", "gaussian_components"]

#: mclust's tolerance (``sqrt(.Machine$double.eps)``): the marginal covariance's relative rank
#: cut-off, and the eigenvalue above which a direction counts (its ``numdir``)
TOL = float(np.sqrt(np.finfo(np.float64).eps))


def gaussian_components(story, params):
    """``(weights (J,), means (J, D), covariances (J, D, D))``: every Gaussian of a fitted
    classifier with its overall weight (class prior times within-class proportion).

    A mixture within classes (``MixtureDiscriminantAnalysis``'s ``params_``, with
    ``component_class``) gives its components; a Gaussian story (LDA, QDA, Gaussian naive Bayes,
    any ``GaussianStory``) one component per class, a shared or diagonal spread broadcast.
    """
    mixture = "component_class" in params
    if not (mixture or isinstance(story, GaussianStory)):
        raise TypeError(
            f"model: the directions need Gaussian classes (a GaussianStory or a mixture of "
            f"Gaussians within classes); the model's story is {type(story).__name__}."
        )
    prior = np.asarray(params[CLASS_PRIOR], dtype=np.float64)
    means = np.asarray(params["means"], dtype=np.float64)
    num_components, num_features = means.shape
    if mixture:
        cells = np.asarray(params["component_class"], dtype=int)
        weights = prior[cells] * np.asarray(params["weights"], dtype=np.float64)
        return weights, means, np.asarray(params["covariances"], dtype=np.float64)
    if story.covariance_structure.full:
        spread = np.asarray(covariance_of(params), dtype=np.float64)
    else:  # diagonal: variances as matrices
        variances = np.asarray(params["variances"], dtype=np.float64)
        spread = variances[..., :, None] * np.eye(num_features)
    shape = (num_components, num_features, num_features)
    return prior, means, np.broadcast_to(spread, shape)


def discriminant_directions(weights, means, covariances, covariance, mean_weight=1.0, tol=TOL):
    """mclust's ``MclustDR``: the generalized eigen-decomposition of its kernel matrix.

    The kernel adds the between-component variation of the means, ``M_I = sum_j w_j (mu_j -
    mu)(mu_j - mu)^T``, and of the covariances, ``M_II = sum_j w_j (S_j - S) Sigma^-1 (S_j - S)``
    (``S = sum_j w_j S_j``), as ``M = 2 lambda M_I Sigma^-1 M_I + 2 (1 - lambda) M_II``; the
    directions ``v`` solve ``M v = l Sigma v``, largest ``l`` first.

    Args:
        weights: (J,) the components' overall weights; ``means`` (J, D); ``covariances``
            (J, D, D).
        covariance: (D, D) the data's marginal covariance ``Sigma`` (divided by n, as mclust).
        mean_weight: ``lambda`` in [0, 1] (mclust's default 1: the means only).
        tol: ``Sigma``'s eigenvalues below ``tol`` times its largest are left out (its inverse
            on the rest), and directions count whose eigenvalue exceeds ``tol``.

    Returns:
        ``(eigenvalues (D,), directions (D, D), numdir)``: the eigenvalues, largest first and
        at least 0; the directions as unit-length columns in that order, each signed so that
        its largest entry (in absolute value) is positive; ``numdir`` the number of eigenvalues
        above ``tol`` (mclust's).
    """
    weights = np.asarray(weights, dtype=np.float64)
    means = np.asarray(means, dtype=np.float64)
    covariances = np.asarray(covariances, dtype=np.float64)
    spread, basis = np.linalg.eigh(np.asarray(covariance, dtype=np.float64))
    keep = spread > max(tol * spread.max(), 0.0)
    inverse_root = (basis[:, keep] / np.sqrt(spread[keep])) @ basis[:, keep].T
    # mclust's centre is the data's mean, equal to this one for ML fits; MAP fits keep their own
    centered = means - weights @ means / weights.sum()
    between = (weights[:, None] * centered).T @ centered
    kernel = 2.0 * mean_weight * between @ inverse_root @ inverse_root @ between
    if mean_weight < 1.0:
        pooled = np.einsum("j,jde->de", weights, covariances)
        spread_terms = inverse_root @ (covariances - pooled)
        variation = np.einsum("j,jdf,jde->fe", weights, spread_terms, spread_terms)
        kernel = kernel + 2.0 * (1.0 - mean_weight) * variation
    whitened = inverse_root @ kernel @ inverse_root
    eigenvalues, vectors = np.linalg.eigh(0.5 * (whitened + whitened.T))
    order = np.argsort(eigenvalues)[::-1]
    eigenvalues = np.maximum(eigenvalues[order], 0.0)
    directions = inverse_root @ vectors[:, order]
    norms = np.linalg.norm(directions, axis=0)
    directions = directions / np.where(norms > 0, norms, 1.0)
    largest = directions[np.argmax(np.abs(directions), axis=0), np.arange(directions.shape[1])]
    directions = directions * np.where(largest < 0, -1.0, 1.0)
    numdir = int(min(directions.shape[0], np.sum(eigenvalues > tol)))
    return eigenvalues, directions, numdir
