r"""Kernel-density (Parzen) naive Bayes: a story whose "parameters" are the training points.

The story of a wine: pick the cultivar ``y ~ Categorical(pi)``; then, independently for every
chemical measurement ``j``, pick one of the training wines of that cultivar at random and jitter
its value with Gaussian noise of width ``h`` (the *bandwidth*):

    p(x_j | y = k) = sum_{i: y_i = k} w_ik N(x_j; x_ij, h^2),    w_ik = 1 / n_k.

Each class-conditional is a per-feature mixture of Gaussians centred on the class's training
values — a Parzen window estimate — and the features multiply (naive Bayes). As a genprob story:

* ``sufficient_statistics(X, R)`` keeps the data themselves with their responsibility matrix R
  (n, K); ``maximize`` turns R into the mixture weights ``w_ik = R_ik / sum_i R_ik``. That makes
  the "fit" a closed form (it only stores the points), so ``GenerativeClassifier`` fits it
  without an optimizer, and soft responsibilities (EM, sample weights) work unchanged;
* ``emission(params)`` is a NumPyro ``MixtureSameFamily``: mixing weights (K, D, n) over the n
  training points, Normal kernels (K, D, n), made one event over the D features with
  ``to_event(1)`` — batch shape (K,), event shape (D,). Scoring goes through
  ``genprob.core.joint_log_prob`` like every other story;
* there is no ``prior``: a Parzen estimate has no parameters to infer, only the bandwidth, a
  constructor setting. The closed-form path never calls ``prior``; what needs it (the optimizer,
  NUTS, ``num_parameters``) is meaningless here.

The bandwidth sets the complexity: a tiny ``h`` puts a spike on every training value (the
density of a new wine is decided by its nearest training values, feature by feature:
over-fitting), a huge ``h`` smears every class into one broad bump, and the class prior alone
decides (under-fitting). A sweep over ``h`` on standardized features gives the U-shaped held-out
error between the two.

Run: ``python models/kde_naive_bayes.py``.
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
import numpyro.distributions as dist
from sklearn.model_selection import StratifiedShuffleSplit
from sklearn.preprocessing import StandardScaler

import genprob


class ParzenNaiveBayesStory(genprob.Story):
    """Per-feature Gaussian kernel density estimate of each class (Parzen naive Bayes).

    Args:
        bandwidth: standard deviation ``h`` of the Gaussian kernel, in the units of the features.
    """

    name = "parzen_naive_bayes"

    def __init__(self, bandwidth: float = 0.5):
        if not bandwidth > 0:
            raise ValueError(f"bandwidth must be positive, got {bandwidth!r}.")
        self.bandwidth = float(bandwidth)

    def sufficient_statistics(self, X, R):
        # The estimate is the data: keep the points and how much each belongs to each class.
        return {"points": X, "responsibilities": R}

    def combine_statistics(self, stats_a, stats_b):
        # Two chunks of data: all their points (the default would add them, which is wrong here).
        return {name: jnp.concatenate([stats_a[name], stats_b[name]]) for name in stats_a}

    def maximize(self, stats):
        R = stats["responsibilities"]
        return {"points": stats["points"], "weights": (R / R.sum(axis=0)).T}  # (n, D), (K, n)

    def emission(self, params):
        points, weights = params["points"], params["weights"]
        num_classes, num_points = weights.shape
        shape = (num_classes, points.shape[1], num_points)  # class, feature, training point
        mixing = dist.Categorical(probs=jnp.broadcast_to(weights[:, None, :], shape))
        kernels = dist.Normal(jnp.broadcast_to(points.T, shape), self.bandwidth)
        return dist.MixtureSameFamily(mixing, kernels).to_event(1)


def main(*, bandwidths=None, n_splits: int = 5, test_size: float = 0.3, seed: int = 0) -> dict:
    """Sweep the bandwidth of Parzen naive Bayes on the standardized wine data.

    Args:
        bandwidths: kernel widths to try (in standard deviations of each feature); default
            nine values from 10^-2.5 to 10^1.5.
        n_splits: number of random stratified train/test splits the errors are averaged over.
        test_size: fraction of the wines held out in each split.
        seed: seed of the splits.

    Returns:
        Dict with ``bandwidths``, ``error`` (mean held-out error per bandwidth),
        ``log_likelihood`` (mean held-out ``log p(x, y)`` per wine, per bandwidth),
        ``best_bandwidth`` and ``best_error`` (smallest mean error), ``best_density_bandwidth``
        (largest held-out log-likelihood) and ``gaussian_nb_error`` (the parametric
        counterpart, Gaussian NB, on the same splits).
    """
    if bandwidths is None:
        bandwidths = np.logspace(-2.5, 1.5, 9)
    bandwidths = np.asarray(bandwidths, dtype=float)
    X, y = genprob.datasets.load_wine()
    print(f"wine: {len(y)} wines, {X.shape[1]} measurements (standardized), 3 cultivars")

    errors = np.zeros((n_splits, len(bandwidths)))
    log_likelihoods = np.zeros((n_splits, len(bandwidths)))
    gaussian_errors = np.zeros(n_splits)
    splitter = StratifiedShuffleSplit(n_splits=n_splits, test_size=test_size, random_state=seed)
    for s, (train, test) in enumerate(splitter.split(X, y)):
        scaler = StandardScaler().fit(X[train])  # learned on the training wines only
        X_train, X_test = scaler.transform(X[train]), scaler.transform(X[test])
        for b, bandwidth in enumerate(bandwidths):
            model = genprob.GenerativeClassifier(ParzenNaiveBayesStory(bandwidth))
            model.fit(X_train, y[train])
            errors[s, b] = 1.0 - model.score(X_test, y[test])
            log_likelihoods[s, b] = model.log_likelihood(X_test, y[test]) / len(test)
        gaussian_errors[s] = 1.0 - genprob.GaussianNB().fit(X_train, y[train]).score(
            X_test, y[test]
        )

    error = errors.mean(axis=0)
    log_likelihood = log_likelihoods.mean(axis=0)
    best = int(np.argmin(error))
    print(f"held-out error over {n_splits} splits (test fraction {test_size}):")
    print(f"  {'bandwidth':>10} {'error':>8} {'log p(x,y) per wine':>21}")
    for b, bandwidth in enumerate(bandwidths):
        marker = "  <- best" if b == best else ""
        print(f"  {bandwidth:>10.4f} {error[b]:>8.3f} {log_likelihood[b]:>21.2f}{marker}")
    print(f"  Gaussian NB (parametric) error: {gaussian_errors.mean():.3f}")
    return {
        "bandwidths": bandwidths.tolist(),
        "error": error.tolist(),
        "log_likelihood": log_likelihood.tolist(),
        "best_bandwidth": float(bandwidths[best]),
        "best_error": float(error[best]),
        "best_density_bandwidth": float(bandwidths[int(np.argmax(log_likelihood))]),
        "gaussian_nb_error": float(gaussian_errors.mean()),
    }


if __name__ == "__main__":
    main()
