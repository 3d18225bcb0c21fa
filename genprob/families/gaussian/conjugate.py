"""The Gaussian story's conjugate prior: normal-inverse-Wishart (full) or -gamma (diagonal)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.linalg
import scipy.special
import scipy.stats

from genprob.families.gaussian.moments import feature_moments, symmetrize

__all__ = ["NormalInverseWishart", "conjugate_posterior", "debiased_log_scores"]


@dataclass(frozen=True)
class NormalInverseWishart:
    """Joint posterior of ``means`` and the spread (one factor of :class:`ExactPosterior`).

    Attributes:
        loc: m_k (K, D). rows: kappa_k (K,). dof: nu_g (G,). scale: Psi_g, (G, D, D) full or
        (G, D) diagonal. shared: one group for all classes. spread_name: ``covariance`` or
        ``variances``.
    """

    loc: np.ndarray
    rows: np.ndarray
    dof: np.ndarray
    scale: np.ndarray
    shared: bool
    spread_name: str

    @property
    def _full(self) -> bool:
        return self.scale.ndim == 3

    @property
    def _d(self) -> int:
        return self.loc.shape[1] if self._full else 1

    def _group(self, values):
        """A per-group array seen per class."""
        return values[np.zeros(len(self.rows), int)] if self.shared else values

    def _params(self, means, spread) -> dict:
        return {"means": means, self.spread_name: spread[0] if self.shared else spread}

    def check(self) -> None:
        """Refuse an improper posterior (too few rows for an improper prior)."""
        d = self._d
        bad = ""
        if np.any(self.rows <= 0):
            bad = "a class has kappa = mean_prior_rows + rows <= 0"
        elif np.any(self.dof <= d - 1):
            bad = f"the spread's degrees of freedom nu0 + rows <= {d - 1}"
        elif self._full and np.any(np.linalg.eigvalsh(self.scale)[..., 0] <= 0):
            bad = "the scale matrix Psi0 + scatter is singular (fewer rows than features?)"
        elif not self._full and np.any(self.scale <= 0):
            bad = "a variance's scale psi0 + scatter is 0 (a constant feature?)"
        if bad:
            raise ValueError(
                f"the conjugate posterior is improper: {bad}. Use a proper prior "
                f"(mean_prior_rows > 0, covariance_prior_scale > 0) or more rows per class."
            )

    def parameters(self) -> dict:
        return {"loc": self.loc, "rows": self.rows, "dof": self.dof, "scale": self.scale}

    def distribution(self):
        raise NotImplementedError("the normal-inverse-Wishart factor is joint: use sample()")

    def _spread_over(self, denominator):
        return self.scale / denominator.reshape((-1,) + (1,) * (self.scale.ndim - 1))

    def mean(self) -> dict:
        return self._params(self.loc, self._spread_over(self.dof - self._d - 1))

    def mode(self) -> dict:
        per_group = len(self.rows) if self.shared else 1
        return self._params(self.loc, self._spread_over(self.dof + self._d + 1 + per_group))

    def variance(self) -> dict:
        nu, p = self.dof, self._d
        diag = np.diagonal(self.scale, axis1=-2, axis2=-1) if self._full else self.scale
        means = self._group(diag) / (self.rows * (self._group(nu) - p - 1))[:, None]
        product = diag[..., :, None] * diag[..., None, :] if self._full else diag**2
        shape = (-1,) + (1,) * (self.scale.ndim - 1)
        a, b = (nu - p + 1).reshape(shape), (nu - p - 1).reshape(shape)
        spread = (a * self.scale**2 + b * product) / ((nu - p).reshape(shape) * b**2)
        return self._params(means, spread / (nu - p - 3).reshape(shape))

    def sample(self, rng, sample_shape=()) -> dict:
        """Joint draws: the spread from its inverse-Wishart (-gamma), then the means."""
        shape = tuple(sample_shape)
        n = int(np.prod(shape))
        K, D = self.loc.shape
        spreads = []
        for nu, psi in zip(self.dof, self.scale, strict=True):
            if self._full:
                draws = scipy.stats.invwishart(df=nu, scale=psi).rvs(size=n, random_state=rng)
                spreads.append(np.reshape(draws, (n, D, D)))
            else:
                spreads.append(0.5 * psi / rng.standard_gamma(0.5 * nu, size=(n, D)))
        spread = np.stack(spreads, axis=1)  # (n, G, ...)
        per_class = spread[:, np.zeros(K, int)] if self.shared else spread
        noise = rng.standard_normal((n, K, D)) / np.sqrt(self.rows)[:, None]
        if self._full:
            noise = np.einsum("nkde,nke->nkd", np.linalg.cholesky(per_class), noise)
        else:
            noise = noise * np.sqrt(per_class)
        dtype = self.loc.dtype
        means = (self.loc + noise).reshape(shape + (K, D)).astype(dtype)
        spread = spread.reshape(shape + spread.shape[1:]).astype(dtype)
        if self.shared:
            spread = np.take(spread, 0, axis=len(shape))
        return {"means": means, self.spread_name: spread}

    def log_prob(self, params) -> float:
        """Posterior log density at ``params`` (means and spread)."""
        spread = np.asarray(params[self.spread_name], np.float64)
        spread = spread[None] if self.shared else spread
        means = np.asarray(params["means"], np.float64)
        total = 0.0
        for g, (nu, psi) in enumerate(zip(self.dof, self.scale, strict=True)):
            if self._full:
                total += scipy.stats.invwishart.logpdf(spread[g], df=nu, scale=psi)
            else:
                total += scipy.stats.invgamma.logpdf(spread[g], 0.5 * nu, scale=0.5 * psi).sum()
        for k, sigma in enumerate(self._group(spread)):
            if self._full:
                total += scipy.stats.multivariate_normal.logpdf(
                    means[k], self.loc[k], sigma / self.rows[k]
                )
            else:
                total += scipy.stats.norm.logpdf(
                    means[k], self.loc[k], np.sqrt(sigma / self.rows[k])
                ).sum()
        return float(total)

    def log_predictive(self, X) -> np.ndarray:
        """``log p(x | y = k, data)`` (n, K): the Student-t posterior predictive of each class."""
        X = np.asarray(X, np.float64)
        K, D = self.loc.shape
        d = self._d
        df = self._group(self.dof) - d + 1.0
        factor = (self.rows + 1.0) / (self.rows * df)
        out = np.empty((X.shape[0], K))
        for k, psi in enumerate(self._group(self.scale)):
            deviation = X - self.loc[k]
            if self._full:  # by Cholesky: SciPy's multivariate_t refuses near-singular scales
                chol = np.linalg.cholesky(psi * factor[k])
                z = scipy.linalg.solve_triangular(chol, deviation.T, lower=True)
                out[:, k] = (
                    scipy.special.gammaln(0.5 * (df[k] + D))
                    - scipy.special.gammaln(0.5 * df[k])
                    - 0.5 * D * np.log(df[k] * np.pi)
                    - np.log(np.diagonal(chol)).sum()
                    - 0.5 * (df[k] + D) * np.log1p((z * z).sum(axis=0) / df[k])
                )
            else:
                scale = np.sqrt(psi * factor[k])
                out[:, k] = scipy.stats.t.logpdf(deviation, df[k], scale=scale).sum(axis=1)
        return out


def conjugate_posterior(story, stats) -> NormalInverseWishart:
    """The normal-inverse-Wishart posterior from the story's prior settings and statistics."""
    stats = {k: np.asarray(v, np.float64) for k, v in stats.items()}
    structure = story.covariance_structure
    counts, sums, shift = stats["counts"], stats["sums"], stats["shift"]
    if counts.ndim != 1:
        raise ValueError("the conjugate Gaussian posterior needs complete rows (no missing cells)")
    K, D = sums.shape
    full = structure.full
    safe = np.where(counts > 0, counts, 1.0)
    centered = sums / safe[:, None]  # class means about the shift (0 for a class without rows)
    scatter = structure.scatter(stats["squares"], sums, centered, counts)
    if story.conjugate_prior == "data":
        loc, scale = data_scales(structure, stats)
        scale = story.covariance_prior_scale * scale
    else:
        loc = np.broadcast_to(np.asarray(story.mean_prior_loc, np.float64), (D,))
        scale = np.broadcast_to(np.asarray(story.covariance_prior_scale, np.float64), (D,))
    kappa0 = float(story.mean_prior_rows)
    nu0 = story.conjugate_dof(D)
    psi0 = np.diag(scale**2) if full else 2.0 * scale**2
    rows = kappa0 + counts
    deviation = centered - (loc - shift)
    loc_n = (kappa0 * (loc - shift) + sums) / np.where(rows > 0, rows, 1.0)[:, None] + shift
    weight = kappa0 * counts / np.where(rows > 0, rows, 1.0)
    if full:
        extra = weight[:, None, None] * deviation[:, :, None] * deviation[:, None, :]
    else:
        extra = weight[:, None] * deviation**2
    if story.shared:
        scale_n = (psi0 + scatter + extra.sum(axis=0))[None]
        dof = np.array([nu0 + counts.sum()])
    else:
        scale_n, dof = psi0 + scatter + extra, nu0 + counts
    posterior = NormalInverseWishart(loc_n, rows, dof, scale_n, story.shared, story.spread_name)
    posterior.check()
    return posterior


def data_scales(structure, stats):
    """Each feature's mean and sd (1 where constant) over all rows, from the statistics."""
    mean, variance = feature_moments(stats, structure.diagonal(stats["squares"]))
    sd = np.sqrt(np.maximum(variance, 0.0))
    return stats["shift"] + mean, np.where(np.isfinite(sd) & (sd > 0), sd, 1.0)


def debiased_log_scores(stats, class_prior, X) -> np.ndarray:
    """MASS's ``"debiased"`` LDA scores (n, K) (Moran and Murphy 1979, docs/reference/families)."""
    stats = {k: np.asarray(v, np.float64) for k, v in stats.items()}
    counts, sums = stats["counts"], stats["sums"]
    K, D = sums.shape
    N = counts.sum()
    centered = sums / counts[:, None]
    within = symmetrize(stats["squares"]) - (centered * counts[:, None]).T @ centered
    chol = np.linalg.cholesky(within / (N - K))
    deviation = (np.asarray(X, np.float64) - stats["shift"])[:, None, :] - centered
    z = scipy.linalg.solve_triangular(chol, deviation.reshape(-1, D).T, lower=True)
    d2 = (z * z).sum(axis=0).reshape(-1, K)
    return -0.5 * (N - K - D - 1) / (N - K) * d2 + np.log(class_prior) - D / counts
