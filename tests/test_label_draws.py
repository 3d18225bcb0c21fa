"""``sample_labels`` draws each unlabeled row's class from the exact class posterior of every
parameter draw (what NumPyro's ``infer_discrete`` would sample for an enumerated class site;
docs/bayes.md says why genprob does not go through it). Checked by a chi-square test of the draw
counts against the exact posteriors, with fixed parameters so that no NUTS run is needed.
"""

import jax
import jax.numpy as jnp
import numpy as np
from scipy import stats

import genprob
from genprob import core
from genprob.inference.mcmc import sample_labels

STORY = genprob.GaussianStory(covariance="diag", shared=False)
#: two parameter draws, alternated: the label frequencies follow the mean of their posteriors
PARAMS = [
    {
        "class_prior": np.array([0.5, 0.3, 0.2]),
        "means": np.array([[0.0, 0.0], [1.0, 0.5], [0.5, 1.5]]),
        "variances": np.array([[1.0, 1.0], [0.8, 1.2], [1.5, 0.7]]),
    },
    {
        "class_prior": np.array([0.3, 0.4, 0.3]),
        "means": np.array([[0.2, -0.1], [0.9, 0.8], [0.3, 1.2]]),
        "variances": np.array([[1.2, 0.9], [1.0, 1.0], [1.1, 0.9]]),
    },
]
X = np.array([[0.4, 0.5], [1.0, 1.0], [-1.0, 0.2], [0.6, 1.6], [2.0, 0.0], [0.5, 0.5]])
Y = np.array([-1, -1, 2, -1, -1, 0])  # rows 2 and 5 labeled: they keep their labels
NUM_DRAWS = 20_000  # per parameter draw


def test_label_draw_frequencies_match_the_exact_class_posteriors():
    with jax.enable_x64(True):
        samples = {
            name: jnp.asarray(np.stack([PARAMS[s % 2][name] for s in range(2 * NUM_DRAWS)]))
            for name in PARAMS[0]
        }
        draws = np.asarray(sample_labels(STORY, samples, X, Y, jax.random.PRNGKey(18)))
        exact = np.mean(
            [np.asarray(core.predict_proba(STORY, p, jnp.asarray(X))) for p in PARAMS], axis=0
        )
    assert draws.shape == (2 * NUM_DRAWS, len(X))
    labeled = Y >= 0
    assert np.all(draws[:, labeled] == Y[labeled])
    # the posteriors are far from one-hot, so the test can tell a wrong distribution apart
    assert np.all(exact[~labeled].max(axis=1) < 0.8)
    p_values = []
    for row in np.flatnonzero(~labeled):
        counts = np.bincount(draws[:, row], minlength=3)
        p_values.append(stats.chisquare(counts, exact[row] * counts.sum()).pvalue)
        # and each class frequency within 5 binomial standard deviations
        n = counts.sum()
        sd = np.sqrt(n * exact[row] * (1 - exact[row]))
        assert np.all(np.abs(counts - n * exact[row]) <= 5 * sd), (row, counts, exact[row])
    # four rows, 2 degrees of freedom each: every p-value above 1e-3 / 4 (Bonferroni)
    assert min(p_values) > 1e-3 / len(p_values), p_values
    # a draw per parameter set follows that set's own posterior, not the mean: the first
    # set's draws give its own class-0 frequency on row 0
    with jax.enable_x64(True):
        own = np.asarray(core.predict_proba(STORY, PARAMS[0], jnp.asarray(X)))[0]
    first = np.bincount(draws[::2, 0], minlength=3) / NUM_DRAWS
    sd = np.sqrt(own * (1 - own) / NUM_DRAWS)
    assert np.all(np.abs(first - own) <= 5 * sd), (first, own)
