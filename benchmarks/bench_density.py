"""The sampler's log density: row by row against labeled rows through their statistics.

Issue 46 item 3. NUTS spends its time in gradients of the log density. Row by row
(:func:`genprob.core.model` without a summary), every row's features are scored against every
class; with :func:`genprob.core.labeled_summary`, labeled rows enter through per-class statistics
computed once (O(K D) or O(K D^2) per gradient) and only the unlabeled rows are scored, with one
log-sum-exp over classes each.

The timing is of gradients inside one compiled program (a scan over perturbed points, as NUTS
evaluates them inside its compiled chain), so Python dispatch is not counted. Pairs alternate
the two densities; the ratio is the median row-by-row time over the median summary time.

Usage::

    python benchmarks/bench_density.py                 # the issue's case, n = 5,000
    python benchmarks/bench_density.py --n 1000 --pairs 3
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

EVALUATIONS = 200


def gradient_seconds(story, X, y, num_classes, summary, pairs):
    """Median seconds per gradient of the potential, row by row and with the summary."""
    import jax
    import jax.numpy as jnp
    from numpyro import handlers
    from numpyro.infer.util import potential_energy, unconstrain_fn

    from genprob import core

    kwargs = {"num_classes": num_classes}
    trace = handlers.trace(handlers.seed(core.model, 1)).get_trace(story, X, y, **kwargs)
    values = {
        name: site["value"]
        for name, site in trace.items()
        if site["type"] == "sample" and not site["is_observed"]
    }
    free = unconstrain_fn(core.model, (story, X, y), kwargs, values)

    @jax.jit
    def many(free, args, key):
        gradient = jax.grad(lambda z: potential_energy(core.model, args, kwargs, z))

        def step(total, noise):
            moved = jax.tree_util.tree_map(lambda v, e: v + 0.01 * e, free, noise)
            grads = gradient(moved)
            return total + sum(jnp.sum(g) for g in jax.tree_util.tree_leaves(grads)), None

        noise = jax.tree_util.tree_map(
            lambda v: jax.random.normal(key, (EVALUATIONS,) + jnp.shape(v), v.dtype), free
        )
        return jax.lax.scan(step, jnp.zeros((), X.dtype), noise)[0]

    cases = {"row by row": (story, X, y), "statistics": (story, X, y, summary)}
    key = jax.random.PRNGKey(0)
    for args in cases.values():
        jax.block_until_ready(many(free, args, key))
    times = {name: [] for name in cases}
    for _ in range(pairs):
        for name, args in cases.items():
            start = time.perf_counter()
            jax.block_until_ready(many(free, args, key))
            times[name].append((time.perf_counter() - start) / EVALUATIONS)
    return {name: float(np.median(values)) for name, values in times.items()}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=5000)
    parser.add_argument("--pairs", type=int, default=7)
    parser.add_argument("--unlabeled", type=float, nargs="+", default=[0.8, 0.2])
    args = parser.parse_args(argv)

    import jax
    import jax.numpy as jnp
    from bench_nuts import K, make_data

    from genprob import core
    from genprob.families.gaussian.story import GaussianStory

    jax.config.update("jax_enable_x64", True)  # the estimators' default precision
    stories = {
        "GaussianNB": GaussianStory(covariance="diag", shared=False),
        "LDA": GaussianStory(),
        "QDA": GaussianStory(shared=False),
    }
    print(f"n = {args.n}, K = {K}, per gradient (us): row by row, statistics, ratio")
    for fraction in args.unlabeled:
        X, y = make_data(args.n, 0, unlabeled=fraction)
        X, y = jnp.asarray(X), jnp.asarray(y)
        for name, story in stories.items():
            summary = core.labeled_summary(story, X, y, K)
            seconds = gradient_seconds(story, X, y, K, summary, args.pairs)
            before, after = seconds["row by row"], seconds["statistics"]
            print(
                f"{name:10s} unlabeled {fraction:.0%}: {before * 1e6:8.1f} {after * 1e6:8.1f} "
                f"{before / after:6.2f}x"
            )


if __name__ == "__main__":
    main()
