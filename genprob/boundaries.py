r"""Decision boundaries and discriminant directions of fitted stories.

For classes k and l the Bayes decision boundary is where the log-odds vanish,

    log p(y=k | x) - log p(y=l | x) = log(pi_k / pi_l) + log p(x | k) - log p(x | l) = 0.

* A story whose log-odds are linear in x (Gaussian with a shared covariance, the discrete naive
  Bayes families) provides ``story.linear_boundary(params, k, l) -> (w, b)`` with
  ``w . x + b`` equal to the log-odds. For LDA (shared Sigma, precision P = Sigma^-1)::

      w = P (m_k - m_l),    b = log(pi_k / pi_l) - 1/2 m_k^T P m_k + 1/2 m_l^T P m_l.

* A Gaussian story provides ``story.quadratic_boundary(params, k, l) -> (Q, L, C)`` with
  ``x^T Q x + L . x + C`` equal to the log-odds. For QDA::

      Q = -1/2 (P_k - P_l),   L = P_k m_k - P_l m_l,
      C = log(pi_k / pi_l) - 1/2 log(|Sigma_k| / |Sigma_l|) - 1/2 m_k^T P_k m_k + 1/2 m_l^T P_l m_l.

* :func:`lda_projection` gives LDA's at most K - 1 discriminant directions: the principal axes
  of the class means after whitening by the shared covariance (Fisher's directions).

All functions take a story and its named parameters (``est.story_``, ``est.params_``) and return
NumPy arrays computed in the precision of ``params``.
"""

from __future__ import annotations

import numpy as np

from genprob._dtype import precision
from genprob.story import CLASS_PRIOR

__all__ = ["linear_boundary", "quadratic_boundary", "lda_projection", "lda_transform"]


def _dtype_of(params) -> str:
    """Precision of the parameters: float64 when any floating parameter is float64."""
    dtypes = {np.asarray(v).dtype for v in params.values() if hasattr(v, "dtype")}
    return "float64" if np.dtype(np.float64) in dtypes else "float32"


def _check_pair(params, k, l):  # noqa: E741
    num_classes = np.shape(params[CLASS_PRIOR])[-1]
    for name, index in (("k", k), ("l", l)):
        if not (isinstance(index, (int, np.integer)) and 0 <= index < num_classes):
            raise ValueError(
                f"class index {name}={index!r} must be an integer code in [0, {num_classes}) "
                f"(the position of the class in classes_)."
            )


def _call(story, method: str, params, *args):
    function = getattr(story, method, None)
    if function is None:
        raise ValueError(
            f"{type(story).__name__} has no {method.replace('_', ' ')}: its stories' log-odds are "
            f"not of that form (it defines no {method}(params, k, l) method)."
        )
    with precision(_dtype_of(params)):
        return tuple(np.asarray(part) for part in function(params, *args))


def linear_boundary(story, params, k: int, l: int):  # noqa: E741
    """Linear log-odds between classes ``k`` and ``l`` (codes, positions in ``classes_``).

    Returns:
        ``(w, b)`` with ``w @ x + b == log p(y=k | x) - log p(y=l | x)``.

    Raises:
        ValueError: when the story's log-odds are not linear (per-class covariances, QDA).
    """
    _check_pair(params, k, l)
    return _call(story, "linear_boundary", params, int(k), int(l))


def quadratic_boundary(story, params, k: int, l: int):  # noqa: E741
    """Quadratic log-odds between classes ``k`` and ``l``.

    Returns:
        ``(Q, L, C)`` with ``x @ Q @ x + L @ x + C == log p(y=k | x) - log p(y=l | x)``.
    """
    _check_pair(params, k, l)
    return _call(story, "quadratic_boundary", params, int(k), int(l))


def lda_projection(story, params, *, total_covariance=None, tol: float = 1e-4):
    r"""Discriminant directions of a shared-covariance Gaussian story.

    With ``W`` the whitening of the shared covariance (``W^T Sigma W = I``), the whitened class
    centers ``c_k = sqrt(pi_k) W^T (m_k - xbar)``, ``xbar = sum_k pi_k m_k``, span at most K - 1
    directions; their principal axes ``V`` give the scalings ``W V``, ordered by the share of
    between-class variance they carry (scikit-learn's ``svd`` solver; directions with singular
    value ``<= tol * largest`` are dropped).

    With ``total_covariance`` (scikit-learn's ``eigen`` solver) the directions are instead the
    generalized eigenvectors of ``(S_t - Sigma, Sigma)`` with ``S_t`` the total covariance,
    computed as the eigenvectors of ``W^T (S_t - Sigma) W`` mapped back by ``W``; all D of them
    are returned.

    Returns:
        ``(scalings (D, m), explained_variance_ratio)``; project with ``(X - xbar) @ scalings``
        (see :func:`lda_transform`). The ratios cover all ``min(K, D)`` principal axes of the
        centers (``svd``) or all D eigenvalues (``eigen``), largest first, as scikit-learn's
        before truncation: the first m belong to the returned directions.
    """
    with precision(_dtype_of(params)):
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
    between = np.asarray(total_covariance) - np.asarray(params["covariance"])
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
