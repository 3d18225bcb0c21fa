"""User stories written with the public API for the optimizer and cross-check tests.

* :class:`LaplaceStory`: naive Laplace class-conditionals with a closed form (per class and
  feature, the weighted median and the mean absolute deviation about it). Its likelihood is not
  differentiable at the data points, and any point between the two middle values of an even
  sample maximizes it: the optimizer's location may differ from the closed form's while the
  objectives agree.
* :class:`LaplaceNoClosedForm`: the same model with only ``prior`` and ``emission``.
* :class:`ClassMixtureStory`: every class a mixture of ``num_components`` diagonal Gaussians (no
  closed form); a component can collapse (its weight driven to 0).
"""

import jax.numpy as jnp
import numpyro
import numpyro.distributions as dist

from genprob.story import Story, align_components


def _loc_scale_prior(num_classes, num_features):
    """Wide priors over per-class, per-feature locations and scales."""
    shape = [num_classes, num_features]
    loc = numpyro.sample("loc", dist.Normal(0.0, 10.0).expand(shape).to_event(2))
    scale = numpyro.sample("scale", dist.HalfNormal(10.0).expand(shape).to_event(2))
    return {"loc": loc, "scale": scale}


class LaplaceNoClosedForm(Story):
    """Naive Laplace class-conditionals fitted by the optimizer (no closed form)."""

    name = "laplace_no_closed_form"

    capabilities = {"smooth_likelihood": False}  # |x - loc| has a kink at every data point

    def prior(self, num_classes, num_features):
        return _loc_scale_prior(num_classes, num_features)

    def emission(self, params):
        return dist.Laplace(params["loc"], params["scale"]).to_event(1)


def _weighted_median(X, weights):
    """Lower weighted median of every column of ``X`` (n, D) with row weights (n,)."""
    order = jnp.argsort(X, axis=0)
    sorted_x = jnp.take_along_axis(X, order, axis=0)
    cumulative = jnp.cumsum(weights[order], axis=0)
    first = jnp.argmax(cumulative >= 0.5 * weights.sum(), axis=0)
    return jnp.take_along_axis(sorted_x, first[None, :], axis=0)[0]


class LaplaceStory(LaplaceNoClosedForm):
    """Naive Laplace class-conditionals with the weighted-median closed form."""

    name = "laplace"

    def sufficient_statistics(self, X, R):
        # a median is no sum over rows: the statistics are the weighted data themselves
        return {"X": X, "R": R}

    def maximize(self, stats):
        X, R = stats["X"], stats["R"]
        loc = jnp.stack([_weighted_median(X, R[:, k]) for k in range(R.shape[1])])
        deviation = jnp.abs(X[:, None, :] - loc[None])  # (n, K, D)
        scale = jnp.einsum("nk,nkd->kd", R, deviation) / R.sum(0)[:, None]
        return {"loc": loc, "scale": scale}


class ClassMixtureStory(Story):
    """Every class a mixture of ``num_components`` diagonal Gaussians (weights per class)."""

    name = "class_mixture"

    def __init__(self, num_components=2):
        self.num_components = num_components

    def prior(self, num_classes, num_features):
        m = self.num_components
        weights = numpyro.sample("weights", dist.Dirichlet(jnp.ones((num_classes, m))).to_event(1))
        shape = [num_classes, m, num_features]
        loc = numpyro.sample("loc", dist.Normal(0.0, 10.0).expand(shape).to_event(3))
        scale = numpyro.sample("scale", dist.HalfNormal(10.0).expand(shape).to_event(3))
        return {"weights": weights, "loc": loc, "scale": scale}

    def emission(self, params):
        # MixtureGeneral: NumPyro 0.21 (the floor) refuses vector components in MixtureSameFamily
        components = [
            dist.Normal(params["loc"][:, j], params["scale"][:, j]).to_event(1)
            for j in range(self.num_components)
        ]
        return dist.MixtureGeneral(dist.Categorical(params["weights"]), components)

    def align_parameters(self, params, reference):
        return align_components(params, reference, ["weights", "loc", "scale"], axis=1)


class LaplaceMeanInstead(LaplaceStory):
    """A wrong closed form: the weighted mean where the maximizer is a weighted median."""

    def maximize(self, stats):
        X, R = stats["X"], stats["R"]
        loc = (R.T @ X) / R.sum(0)[:, None]
        scale = jnp.einsum("nk,nkd->kd", R, jnp.abs(X[:, None, :] - loc[None])) / R.sum(0)[:, None]
        return {"loc": loc, "scale": scale}


class GaussianNoClosedForm(Story):
    """Naive Gaussian class-conditionals with only a prior and an emission (smooth)."""

    name = "gaussian_no_closed_form"

    def prior(self, num_classes, num_features):
        return _loc_scale_prior(num_classes, num_features)

    def emission(self, params):
        return dist.Normal(params["loc"], params["scale"]).to_event(1)
