"""Posteriors in seconds: genprob's NUTS (NumPyro's and BlackJAX's) against nutpie, same run.

The case (issue 46): semi-supervised Gaussian naive Bayes, K = 3 classes, D = 5 features, 80% of
the labels hidden, n = 1,000 and 5,000 rows, 2 chains x (1000 warm-up + 1000 draws). Every side
sums the unlabeled rows' classes out and uses the same prior: genprob's data-scaled
``GaussianStory(covariance="diag")`` prior (``Normal(m_j, 10 s_j)`` means, ``InverseGamma(2,
(s_j)^2)`` variances, ``Dirichlet(1)`` class prior), written out in PyMC.

* **genprob** (``numpyro``): a user's call, ``GaussianNB().fit(X, y).posterior(X, y,
  num_chains=2, ...)`` (the whole ArviZ container: draws, predictive, prior draws, pointwise
  log-likelihood), NumPyro's NUTS (the default ``sampler``).
* **blackjax**: the same call with ``sampler="blackjax"`` (BlackJAX's window adaptation and
  NUTS on the same log density, starts and chain keys).
* **nutpie**: PyMC + nutpie, ``nutpie.compile_pymc_model(model, backend=...)`` then
  ``nutpie.sample`` (ArviZ data), as a user calls it.
* **nutpie-density**: nutpie's sampler on genprob's own log density (NumPyro's unconstrained
  coordinates, jitted value and gradient handed over by ``nutpie.compiled_pyfunc.from_pyfunc``),
  started at genprob's fit: the fit and the draws only (no predictive, prior or
  log-likelihood groups), so its ratio bounds what swapping the sampler could gain.

A side whose package is not importable here is skipped, with a line saying so: the test
environment has genprob's two samplers; an environment with pymc and nutpie (``pip install -e
.[peers,blackjax]``) runs every side.

Every side runs in a fresh Python process of its own: "first" is its first call (its library
imported before the timer, as a user's script does; whatever the call imports on first use,
tracing and compilation included), "repeat" the same call again in that process with a new
seed and new data values of the same shapes (a second data set drawn the same way). ESS per
second is the smallest bulk ESS (ArviZ) over every scalar parameter divided by the call's wall
time; every ratio is the other side's ESS/s over genprob's NumPyro row (> 1: the other side
ahead; the existing ``ess_per_s_ratio`` keeps genprob / nutpie). The posterior means are
compared entry by entry in units of their combined Monte Carlo error.

Also (``--cli``): the wall time of ``genprob demo --quick`` and of ``genprob compare gaussian_nb``
on wine with its defaults, each in a fresh process.

Usage::

    python benchmarks/bench_nuts.py --quick            # small data and few draws, a smoke run
    python benchmarks/bench_nuts.py --cli --json benchmarks/results/bench_nuts.json
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
import warnings

import numpy as np

K, D = 3, 5
NAMES = ("class_prior", "means", "variances")


def importable(*modules) -> bool:
    return all(importlib.util.find_spec(module) is not None for module in modules)


def make_data(n, seed, unlabeled=0.8):
    """Rows from a fixed three-class diagonal Gaussian; ``unlabeled`` of the labels hidden (every
    class keeps a labeled row)."""
    rng = np.random.default_rng(1000 + 0)  # the same truth for every data set
    means = rng.normal(0.0, 2.0, (K, D))
    scales = np.sqrt(rng.uniform(0.5, 1.5, (K, D)))
    rng = np.random.default_rng(seed)
    y = rng.integers(0, K, n)
    X = means[y] + scales[y] * rng.standard_normal((n, D))
    hidden = rng.random(n) < unlabeled
    hidden[[int(np.argmax(y == k)) for k in range(K)]] = False
    return X, np.where(hidden, -1, y)


def min_bulk_ess(idata, names=("class_prior", "means", "variances")) -> float:
    import arviz as az

    ess = az.ess(idata, var_names=list(names), method="bulk")
    return float(min(np.nanmin(ess[name].values) for name in names))


def summaries(idata, names=("class_prior", "means", "variances")) -> dict:
    """Posterior mean and Monte Carlo standard error of every entry."""
    import arviz as az

    mcse = az.mcse(idata, var_names=list(names))
    return {
        name: (
            idata.posterior[name].mean(("chain", "draw")).values,
            mcse[name].values,
        )
        for name in names
    }


def run_genprob(X, y, warmup, samples, seed, sampler="numpyro"):
    import genprob

    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = genprob.GaussianNB().fit(X, y)
        idata = model.posterior(
            X,
            y,
            num_warmup=warmup,
            num_samples=samples,
            num_chains=2,
            random_state=seed,
            sampler=sampler,
        )
    return time.perf_counter() - start, idata


def run_nutpie_density(X, y, warmup, samples, seed):
    """nutpie on genprob's log density (unconstrained coordinates, Jacobian included), jitted
    once and called from nutpie's threads; chains start at genprob's fit plus the same jitter."""
    import jax
    import jax.numpy as jnp
    import nutpie
    from jax.flatten_util import ravel_pytree
    from numpyro.infer.util import constrain_fn, potential_energy
    from nutpie.compiled_pyfunc import from_pyfunc

    import genprob
    from genprob import core
    from genprob.inference.mcmc import JITTER
    from genprob.inference.optimize import unconstrain

    start = time.perf_counter()
    with warnings.catch_warnings(), jax.enable_x64(True):
        warnings.simplefilter("ignore")
        model = genprob.GaussianNB().fit(X, y)
        Xj, codes = jnp.asarray(X, jnp.float64), jnp.asarray(y, jnp.int32)
        story = model.story_.scaled_to_data(Xj)
        args, kwargs = (story, Xj, codes), {"num_classes": K}
        fit = {k: jnp.asarray(v, jnp.float64) for k, v in model.params_.items()}
        free = unconstrain(args, {k: fit[k] for k in NAMES}, K)
        flat_start, unravel = ravel_pytree(free)
        value_and_grad = jax.jit(
            jax.value_and_grad(lambda x: -potential_energy(core.model, args, kwargs, unravel(x)))
        )
        expand_one = jax.jit(lambda x: constrain_fn(core.model, args, kwargs, unravel(x)))
        shapes = {k: tuple(v.shape) for k, v in fit.items() if k in NAMES}

    def make_logp_fn():
        def logp(x):
            with jax.enable_x64(True):  # nutpie calls from threads of its own
                value, grad = value_and_grad(x)
            return float(value), np.asarray(grad, dtype="float64", order="C")

        return logp

    def make_expand_fn(seed1, seed2, chain):
        def expand(x):
            with jax.enable_x64(True):
                values = expand_one(x)
            return {k: np.asarray(values[k], dtype="float64", order="C") for k in NAMES}

        return expand

    def initial_point(point_seed):
        rng = np.random.default_rng(point_seed)
        return np.asarray(flat_start) + JITTER * rng.standard_normal(flat_start.shape)

    compiled = from_pyfunc(
        ndim=int(flat_start.size),
        make_logp_fn=make_logp_fn,
        make_expand_fn=make_expand_fn,
        expanded_dtypes=[np.dtype("float64")] * len(NAMES),
        expanded_shapes=[shapes[k] for k in NAMES],
        expanded_names=list(NAMES),
        make_initial_point_fn=initial_point,
    )
    idata = nutpie.sample(
        compiled, draws=samples, tune=warmup, chains=2, seed=seed, progress_bar=False
    )
    return time.perf_counter() - start, idata


def prior_constants(X) -> dict:
    """genprob's data-scaled prior for the diagonal Gaussian story, as NumPy constants."""
    from genprob.families.gaussian import GaussianStory

    story = GaussianStory(covariance="diag", shared=False).scaled_to_data(X)
    return {
        "loc": np.asarray(story.mean_prior_loc, float),
        "mean_scale": np.asarray(story.mean_prior_scale, float),
        "var_scale": np.asarray(story.covariance_prior_scale, float),
    }


def pymc_model(X, y, prior):
    """The same posterior in PyMC: the unlabeled rows' classes summed out by a logsumexp."""
    import pymc as pm
    import pytensor.tensor as pt

    labeled = y >= 0
    XL, yL, XU = X[labeled], y[labeled], X[~labeled]
    with pm.Model() as model:
        class_prior = pm.Dirichlet("class_prior", a=np.ones(K))
        means = pm.Normal("means", mu=prior["loc"], sigma=prior["mean_scale"], shape=(K, D))
        variances = pm.InverseGamma(
            "variances", alpha=2.0, beta=prior["var_scale"] ** 2, shape=(K, D)
        )
        sd = pt.sqrt(variances)
        log_prior = pt.log(class_prior)
        labeled_part = pm.logp(pm.Normal.dist(means[yL], sd[yL]), XL).sum() + log_prior[yL].sum()
        joint = pm.logp(pm.Normal.dist(means[None], sd[None]), XU[:, None, :]).sum(-1)
        unlabeled_part = pm.math.logsumexp(joint + log_prior[None], axis=1).sum()
        pm.Potential("likelihood", labeled_part + unlabeled_part)
    return model


def run_nutpie(X, y, warmup, samples, seed, backend):
    import nutpie
    import pymc  # noqa: F401  (a user's own import, before the call)

    prior = prior_constants(X)  # the same prior's numbers: not the peer's work
    start = time.perf_counter()
    compiled = nutpie.compile_pymc_model(
        pymc_model(X, y, prior),
        backend=backend,
        **({"gradient_backend": "jax"} if backend == "jax" else {}),
    )
    idata = nutpie.sample(
        compiled, draws=samples, tune=warmup, chains=2, seed=seed, progress_bar=False
    )
    return time.perf_counter() - start, idata


def compare_means(a, b) -> float:
    """Largest |difference of posterior means| in units of the combined Monte Carlo error."""
    worst = 0.0
    for name in a:
        (mean_a, se_a), (mean_b, se_b) = a[name], b[name]
        worst = max(worst, float(np.max(np.abs(mean_a - mean_b) / np.hypot(se_a, se_b))))
    return worst


def side_runners(warmup, samples, backend) -> dict:
    """Name -> ``run(X, y, seed) -> (seconds, idata)`` for every side importable here."""
    sides = {"genprob": lambda X, y, seed: run_genprob(X, y, warmup, samples, seed)}
    if importable("blackjax"):
        sides["blackjax"] = lambda X, y, seed: run_genprob(
            X, y, warmup, samples, seed, sampler="blackjax"
        )
    if importable("nutpie", "pymc"):
        sides["nutpie"] = lambda X, y, seed: run_nutpie(X, y, warmup, samples, seed, backend)
    if importable("nutpie"):
        sides["nutpie_density"] = lambda X, y, seed: run_nutpie_density(X, y, warmup, samples, seed)
    return sides


def run_side(name, n, warmup, samples, backend) -> dict:
    """One side's first call, then its repeat call, in this process: seconds, ESS, summaries."""
    run = side_runners(warmup, samples, backend)[name]
    out = {}
    for call, seed in (("first", 0), ("repeat", 1)):
        X, y = make_data(n, seed)
        seconds, idata = run(X, y, seed)
        out[call] = {
            "seconds": seconds,
            "ess": min_bulk_ess(idata),
            "summaries": {k: [m.tolist(), e.tolist()] for k, (m, e) in summaries(idata).items()},
        }
    return out


def run_side_fresh(name, n, warmup, samples, backend) -> dict:
    """:func:`run_side` in a fresh interpreter: every side's first call pays its own imports,
    tracing and compilation, whatever ran before it."""
    argv = [sys.executable, __file__, "--side", name, "--ns", str(n), "--warmup", str(warmup)]
    argv += ["--samples", str(samples), "--backend", backend]
    done = subprocess.run(argv, capture_output=True, text=True, check=True)
    result = json.loads(done.stdout.strip().splitlines()[-1])
    for call in result.values():
        call["summaries"] = {
            k: (np.asarray(m), np.asarray(e)) for k, (m, e) in call["summaries"].items()
        }
    return result


def bench_case(n, warmup, samples, backend) -> dict:
    """Every available side on the same data, each in its own fresh process (its first call,
    then its repeat); ratios against genprob's NumPyro row."""
    sides = list(side_runners(warmup, samples, backend))
    results = {name: run_side_fresh(name, n, warmup, samples, backend) for name in sides}
    row = {"n": n}
    for call in ("first", "repeat"):
        r = row[call] = {}
        for name in sides:
            seconds, ess = results[name][call]["seconds"], results[name][call]["ess"]
            r[f"{name}_s"], r[f"{name}_min_bulk_ess"] = seconds, ess
            r[f"{name}_ess_per_s"] = ess / seconds
        base = r["genprob_ess_per_s"]
        parts = [_side("genprob", r["genprob_s"], r["genprob_min_bulk_ess"])]
        for name in sides[1:]:
            r[f"{name}_vs_genprob_ess_per_s"] = r[f"{name}_ess_per_s"] / base
            apart = compare_means(
                results["genprob"][call]["summaries"], results[name][call]["summaries"]
            )
            r[f"{name}_means_apart_in_mcse"] = apart
            parts.append(
                f"{_side(name, r[f'{name}_s'], r[f'{name}_min_bulk_ess'])} ESS/s "
                f"x{r[f'{name}_vs_genprob_ess_per_s']:.2f} (means apart {apart:.1f} MCSE)"
            )
        if "nutpie" in sides:  # the rows of earlier runs: genprob / nutpie
            r["ess_per_s_ratio"] = base / r["nutpie_ess_per_s"]
            r["time_ratio"] = r["nutpie_s"] / r["genprob_s"]
            r["means_apart_in_mcse"] = r["nutpie_means_apart_in_mcse"]
        print(f"n={n:5d} {call:6s}  " + "  |  ".join(parts), flush=True)
    return row


def _side(name, seconds, ess) -> str:
    return f"{name} {seconds:6.1f} s (ESS {ess:5.0f}, {ess / seconds:6.1f}/s)"


def time_cli(quick: bool) -> dict:
    """Wall time of ``genprob demo --quick`` and ``genprob compare gaussian_nb`` on wine."""
    from sklearn.datasets import load_wine

    times = {}
    with tempfile.TemporaryDirectory() as tmp:
        frame = load_wine(as_frame=True).frame
        wine = os.path.join(tmp, "wine.csv")
        frame.to_csv(wine, index=False)
        commands = {
            "demo --quick": ["demo", "--quick", "--out", os.path.join(tmp, "report")],
            "compare gaussian_nb wine": [
                "compare",
                "gaussian_nb",
                wine,
                "--target",
                "target",
                "--out",
                os.path.join(tmp, "compare"),
                "--accept-diagnostics",
            ],
        }
        if quick:
            commands["compare gaussian_nb wine"] += ["--num-warmup", "50", "--num-samples", "50"]
        for label, argv in commands.items():
            start = time.perf_counter()
            done = subprocess.run(
                [sys.executable, "-m", "genprob", *argv], capture_output=True, text=True
            )
            times[label] = {"seconds": time.perf_counter() - start, "exit": done.returncode}
            print(f"genprob {label}: {times[label]['seconds']:.1f} s (exit {done.returncode})")
    return times


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="n = 300, 200 + 200 draws")
    parser.add_argument("--ns", type=int, nargs="+", default=[1000, 5000])
    parser.add_argument("--warmup", type=int, default=1000)
    parser.add_argument("--samples", type=int, default=1000)
    parser.add_argument("--backend", choices=("jax", "numba"), default="jax")
    parser.add_argument("--cli", action="store_true", help="also time demo --quick and compare")
    parser.add_argument("--json", default=None, help="also write the rows, date and machine here")
    parser.add_argument("--side", default=None, help=argparse.SUPPRESS)  # one side, as JSON
    args = parser.parse_args(argv)
    if args.side:
        result = run_side(args.side, args.ns[0], args.warmup, args.samples, args.backend)
        print(json.dumps(result))
        return
    if args.quick:
        args.ns, args.warmup, args.samples = [300], 200, 200
    load_before = os.getloadavg()
    for side, modules in (
        ("blackjax", ("blackjax",)),
        ("nutpie (PyMC)", ("nutpie", "pymc")),
        ("nutpie-density", ("nutpie",)),
    ):
        if not importable(*modules):
            print(f"skipped {side}: {' or '.join(modules)} not importable here", flush=True)
    rows = [bench_case(n, args.warmup, args.samples, args.backend) for n in args.ns]
    cli = time_cli(args.quick) if args.cli else None
    if args.json:
        write_json(args.json, args, rows, cli, load_before)


def write_json(path, args, rows, cli, load_before):
    """The rows with the run's settings, date, machine, versions and load (one file per run)."""
    from importlib.metadata import version

    from _run_info import machine, run_date

    record = {
        "date": run_date(),
        "machine": machine(),
        "versions": {
            name: version(name) if importable(name) else None
            for name in ("genprob", "jax", "numpyro", "blackjax", "pymc", "nutpie", "arviz")
        }
        | {"python": platform.python_version()},
        # other jobs slow both programs; they run in turn, so the ratios are paired, times are not
        "load_average_1min": {"start": load_before[0], "end": os.getloadavg()[0]},
        "quick": args.quick,
        "settings": {
            "classes": K,
            "features": D,
            "unlabeled": 0.8,
            "warmup": args.warmup,
            "samples": args.samples,
            "chains": 2,
            "nutpie_backend": args.backend,
        },
        "rows": rows,
        "cli": cli,
    }
    with open(path, "w") as f:
        json.dump(record, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
