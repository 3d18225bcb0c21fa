"""NUTS on partly labeled data: genprob's summed-out model against funsor enumeration.

Both samplers target the same posterior — the same priors (the story's :meth:`prior` and a
``Dirichlet(1)`` on the class prior), the same data, the same NUTS settings and seed:

* **genprob**: :func:`genprob.run_nuts` on :func:`genprob.core.model`, where the class of every
  unlabeled row is summed out by one log-sum-exp over ``joint_log_prob`` (no discrete site);
* **enumerated**: the textbook NumPyro program — labeled rows observe ``y``, unlabeled rows have a
  discrete ``y`` site marked ``infer={"enumerate": "parallel"}`` (``config_enumerate``), which
  NumPyro sums out with funsor when it builds the potential.

Reported per story: wall time of the whole run (compilation included), the fixed cost (a run
with 10 warm-up and 10 kept draws, after one such run has warmed the process's caches:
tracing, compilation, initialization), the sampling time (whole minus fixed), the minimum and
median bulk ESS over all scalar parameters, and ESS per second of sampling time. Ratios are
genprob / enumerated (> 1: genprob better).

Needs the ``bench`` extra (``pip install -e .[bench]``, which brings funsor).

Usage::

    python benchmarks/bench_enumerated.py                 # the published settings
    python benchmarks/bench_enumerated.py --quick         # small data and few draws, a smoke run
    python benchmarks/bench_enumerated.py --json benchmarks/results/bench_enumerated.json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import time

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
from numpyro.contrib.funsor import config_enumerate
from numpyro.diagnostics import effective_sample_size
from numpyro.infer import MCMC, NUTS

from genprob import core
from genprob.families.bernoulli import BernoulliStory
from genprob.families.gaussian import GaussianStory
from genprob.inference.mcmc import run_nuts


def gaussian_component(params, z):
    scale = jnp.sqrt(params["variances"][z])
    return dist.Normal(params["means"][z], scale).to_event(1)


def bernoulli_component(params, z):
    return dist.Bernoulli(probs=params["probs"][z]).to_event(1)


STORIES = {
    "gaussian-nb": (GaussianStory(covariance="diag", shared=False), gaussian_component),
    "bernoulli-nb": (BernoulliStory(alpha=1.0), bernoulli_component),
}


def enumerated_model(story, component, X_labeled, y_labeled, X_unlabeled, num_classes):
    """The same story with a discrete label site enumerated on the unlabeled rows."""
    class_prior = numpyro.sample(
        "class_prior", dist.Dirichlet(jnp.full(num_classes, story.class_concentration))
    )
    params = story.prior(num_classes, X_labeled.shape[1])
    with numpyro.plate("labeled", X_labeled.shape[0]):
        numpyro.sample("y_labeled", dist.Categorical(class_prior), obs=y_labeled)
        numpyro.sample("x_labeled", component(params, y_labeled), obs=X_labeled)
    with numpyro.plate("unlabeled", X_unlabeled.shape[0]):
        z = numpyro.sample(
            "y_unlabeled", dist.Categorical(class_prior), infer={"enumerate": "parallel"}
        )
        numpyro.sample("x_unlabeled", component(params, z), obs=X_unlabeled)


def make_data(name, story, n, num_classes, num_features, unlabeled_fraction, seed):
    """Data drawn from the story with fixed well-separated parameters; some labels hidden."""
    rng = np.random.default_rng(seed)
    if name.startswith("gaussian"):
        truth = {
            "means": rng.normal(0.0, 2.0, (num_classes, num_features)),
            "variances": rng.uniform(0.5, 1.5, (num_classes, num_features)),
        }
    else:
        truth = {"probs": rng.uniform(0.1, 0.9, (num_classes, num_features))}
    truth["class_prior"] = np.full(num_classes, 1.0 / num_classes)
    truth = {k: jnp.asarray(v) for k, v in truth.items()}
    X, y = core.sample(story, truth, n, jax.random.PRNGKey(seed))
    X, y = np.asarray(X), np.asarray(y)
    hidden = rng.random(n) < unlabeled_fraction
    # every class keeps a labeled row, so the class codes mean the same in both models
    hidden[[int(np.argmax(y == k)) for k in range(num_classes)]] = False
    return X, np.where(hidden, -1, y)


def ess_summary(samples: dict) -> tuple[float, float]:
    """Minimum and median bulk ESS over every scalar entry (one chain)."""
    values = []
    for draws in samples.values():
        draws = np.asarray(draws)
        ess = effective_sample_size(draws[None])  # (chain, draw, ...) with one chain
        values.append(np.ravel(ess))
    values = np.concatenate(values)
    values = values[np.isfinite(values)]
    return float(values.min()), float(np.median(values))


def run_genprob(story, X, y, num_classes, warmup, samples, seed):
    start = time.perf_counter()
    mcmc = run_nuts(
        story, X, y, num_classes=num_classes, num_warmup=warmup, num_samples=samples, seed=seed
    )
    samples = {k: np.asarray(v) for k, v in mcmc.get_samples().items()}
    return time.perf_counter() - start, samples


def run_enumerated(story, component, X, y, num_classes, warmup, samples, seed):
    labeled = y >= 0
    model = config_enumerate(enumerated_model)
    start = time.perf_counter()
    mcmc = MCMC(NUTS(model), num_warmup=warmup, num_samples=samples, progress_bar=False)
    mcmc.run(
        jax.random.PRNGKey(seed),
        story,
        component,
        jnp.asarray(X[labeled]),
        jnp.asarray(y[labeled]),
        jnp.asarray(X[~labeled]),
        num_classes,
    )
    samples = {k: np.asarray(v) for k, v in mcmc.get_samples().items()}
    return time.perf_counter() - start, samples


def measure(runners: dict, warmup: int, samples: int, repeats: int) -> dict:
    """Whole-run time, fixed cost (a 10 + 10 run), sampling time, ESS and ESS per second.

    A first short run of each program warms the per-process caches (NumPyro initializes op by
    op); the fixed cost is a later short run, which still compiles the sampling loop as every run
    does. The programs run in turn (A B A B ...), ``repeats`` times each, and the times are
    medians: on a machine shared with other jobs, the two programs then see about the same
    conditions. A seeded run is deterministic, so the draws (and ESS) are those of every repeat.
    """
    for runner in runners.values():
        runner(10, 10)
    fixed = {name: [] for name in runners}
    total = {name: [] for name in runners}
    draws = {}
    for _ in range(repeats):
        for name, runner in runners.items():
            fixed[name].append(runner(10, 10)[0])
            seconds, draws[name] = runner(warmup, samples)
            total[name].append(seconds)
    results = {}
    for name in runners:
        whole, fixed_cost = statistics.median(total[name]), statistics.median(fixed[name])
        sampling = max(whole - fixed_cost, 1e-9)
        ess_min, ess_median = ess_summary(draws[name])
        results[name] = {
            "total_s": whole,
            "fixed_s": fixed_cost,
            "sampling_s": sampling,
            "ess_min": ess_min,
            "ess_median": ess_median,
            "ess_min_per_s": ess_min / sampling,
            "ess_median_per_s": ess_median / sampling,
            "draws": draws[name],
        }
    return results


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="n = 200, 300 + 300 draws")
    parser.add_argument("--n", type=int, default=1000, help="rows (default 1000)")
    parser.add_argument("--features", type=int, default=5, help="features (default 5)")
    parser.add_argument("--classes", type=int, default=3, help="classes (default 3)")
    parser.add_argument("--unlabeled", type=float, default=0.8, help="fraction hidden (0.8)")
    parser.add_argument("--warmup", type=int, default=1000)
    parser.add_argument("--samples", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--repeats", type=int, default=3, help="runs of each program (median)")
    parser.add_argument("--stories", nargs="+", default=list(STORIES), choices=list(STORIES))
    parser.add_argument("--json", default=None, help="also write the rows, date and machine here")
    args = parser.parse_args(argv)
    if args.quick:
        args.n, args.warmup, args.samples, args.repeats = 200, 300, 300, 1

    print(
        f"n = {args.n}, D = {args.features}, K = {args.classes}, {args.unlabeled:.0%} unlabeled, "
        f"{args.warmup} warm-up + {args.samples} draws, 1 chain, float64, seed {args.seed}; "
        f"times are medians of {args.repeats} runs of each program, run in turn"
    )
    header = (
        f"{'story':<14}{'model':<12}{'total s':>9}{'fixed s':>9}{'sample s':>10}"
        f"{'ESS min':>9}{'ESS med':>9}{'min/s':>8}{'med/s':>8}"
    )
    print(header)
    load_before = os.getloadavg()
    rows = []
    with jax.enable_x64(True):
        for name in args.stories:
            story, component = STORIES[name]
            X, y = make_data(
                name, story, args.n, args.classes, args.features, args.unlabeled, args.seed
            )
            runners = {
                "genprob": lambda w, s, story=story, X=X, y=y: run_genprob(
                    story, X, y, args.classes, w, s, args.seed
                ),
                "enumerated": lambda w, s, story=story, component=component, X=X, y=y: (
                    run_enumerated(story, component, X, y, args.classes, w, s, args.seed)
                ),
            }
            results = measure(runners, args.warmup, args.samples, args.repeats)
            for model, r in results.items():
                print(
                    f"{name:<14}{model:<12}{r['total_s']:>9.1f}{r['fixed_s']:>9.1f}"
                    f"{r['sampling_s']:>10.1f}{r['ess_min']:>9.0f}{r['ess_median']:>9.0f}"
                    f"{r['ess_min_per_s']:>8.0f}{r['ess_median_per_s']:>8.0f}"
                )
            ours, theirs = results["genprob"], results["enumerated"]
            # the two chains sample one posterior: their means agree within Monte Carlo error
            gap = max(
                float(np.max(np.abs(ours["draws"][k].mean(0) - theirs["draws"][k].mean(0))))
                for k in ours["draws"]
            )
            print(
                f"{name:<14}ratio genprob/enumerated: ESS/s (min) "
                f"{ours['ess_min_per_s'] / theirs['ess_min_per_s']:.2f}x, ESS/s (median) "
                f"{ours['ess_median_per_s'] / theirs['ess_median_per_s']:.2f}x, whole run "
                f"{theirs['total_s'] / ours['total_s']:.2f}x faster; "
                f"max |mean difference| {gap:.3g}"
            )
            rows.append(
                {
                    "story": name,
                    "n": args.n,
                    "seed": args.seed,
                    "max_mean_difference": gap,
                    **{
                        model: {k: v for k, v in r.items() if k != "draws"}
                        for model, r in results.items()
                    },
                }
            )
    if args.json:
        write_json(args.json, args, rows, load_before)


def write_json(path, args, rows, load_before):
    """The rows with the run's settings, date, machine, versions and load (one file per run)."""
    from _run_info import machine, run_date

    record = {
        "date": run_date(),
        "machine": machine(),
        "versions": {
            "jax": jax.__version__,
            "numpyro": numpyro.__version__,
            "funsor": _version("funsor"),
            "python": platform.python_version(),
        },
        # other jobs slow both programs; they run in turn, so the ratios are paired, times are not
        "load_average_1min": {"start": load_before[0], "end": os.getloadavg()[0]},
        "quick": args.quick,
        "settings": {
            "n": args.n,
            "features": args.features,
            "classes": args.classes,
            "unlabeled": args.unlabeled,
            "warmup": args.warmup,
            "samples": args.samples,
            "repeats": args.repeats,
            "seed": args.seed,
            "chains": 1,
        },
        "rows": rows,
    }
    with open(path, "w") as f:
        json.dump(record, f, indent=1)
        f.write("\n")


def _version(name):
    from importlib.metadata import version

    return version(name)


if __name__ == "__main__":
    main()
