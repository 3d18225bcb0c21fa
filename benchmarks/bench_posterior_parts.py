"""Where the time of ``estimator.posterior(...)`` goes: sampling against everything else.

Issue 46 asks that the posterior predictive, the prior draws, the pointwise log-likelihood and
the ArviZ container together cost no more than a tenth of the sampling, and that the exact
(conjugate) posterior returns its whole container in about a second. This script times the parts
of a user's call from the outside: it wraps the library functions that ``posterior`` calls with
``time.perf_counter`` (no timing code in the library) and reports, per case,

* ``sampling``: ``run_nuts`` (NUTS) or ``exact_posterior`` + ``ExactPosterior.sample`` (exact);
* ``predictive``: the ``posterior_predictive`` group (replicated ``y`` and ``X``);
* ``prior``: the ``prior`` group's draws;
* ``log_likelihood``: the pointwise log-likelihood at every draw;
* ``container``: the xarray datasets and the ArviZ container built from them;
* ``checks``: the prior-dominance check after sampling (``prior_dominance``);
* ``other``: the rest of the call (input checks, label encoding, draws' layout);

with each part's share of the sampling time. Cases: Gaussian naive Bayes on wine (NUTS with the
defaults, 2 chains x (1000 warm-up + 1000 draws)), Bernoulli naive Bayes on the bundled SMS spam
data's 50 most frequent words (NUTS) and the exact posterior of both discrete and Gaussian-free
conjugate stories on wine counts (Poisson naive Bayes) and SMS (Bernoulli). Each case runs twice
in one process (first call: compilation included; repeat: a new seed, which compiles nothing);
the exact path also runs in a fresh process of its own for its first call.

``--cli`` also times ``genprob demo --quick`` and ``genprob compare gaussian_nb`` on wine with
its defaults, each a fresh process from interpreter start to exit, against the targets of issue
46 (60 s and 30 s on a quiet 2-core machine); the demo's own progress lines give its steps. Each
command runs twice: "cold" with the command line's compilation cache off
(``GENPROB_CLI_CACHE=0``: every program compiled, as on a first run) and "warm" with the cache as
installed (filled by the cold run's programs, as on every later run).

Usage::

    python benchmarks/bench_posterior_parts.py                    # every case, issue defaults
    python benchmarks/bench_posterior_parts.py --quick            # 200 + 200 draws (smoke run)
    python benchmarks/bench_posterior_parts.py --cli \
        --json benchmarks/results/bench_posterior_parts.json
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _run_info import machine, run_date  # noqa: E402

PARTS = ("sampling", "predictive", "prior", "log_likelihood", "container", "checks")
#: The parts issue 46 holds to a tenth of the sampling together.
NON_SAMPLING = ("predictive", "prior", "log_likelihood", "container")
TARGETS = {"demo --quick": 60.0, "compare gaussian_nb wine": 30.0}


@contextmanager
def timed_parts():
    """Wrap the functions ``posterior`` calls; yield the dict their seconds accumulate in."""
    import genprob.estimators._posterior as glue
    import genprob.inference.posterior as exact
    import genprob.io._arviz_compat as compat
    import genprob.io.arviz_io as arviz_io

    seconds = dict.fromkeys(PARTS, 0.0)
    patched = []

    def wrap(owner, name, part):
        original = getattr(owner, name)

        def timed(*args, **kwargs):
            start = time.perf_counter()
            try:
                return original(*args, **kwargs)
            finally:
                seconds[part] += time.perf_counter() - start

        setattr(owner, name, timed)
        patched.append((owner, name, original))

    wrap(glue, "run_nuts", "sampling")
    wrap(glue, "exact_posterior", "sampling")
    wrap(exact.ExactPosterior, "sample", "sampling")
    wrap(glue, "prior_dominance", "checks")
    wrap(arviz_io, "_posterior_predictive", "predictive")
    wrap(arviz_io, "_prior_draws", "prior")
    wrap(arviz_io, "pointwise_log_likelihood", "log_likelihood")
    wrap(compat, "dataset", "container")
    wrap(compat, "build", "container")
    try:
        yield seconds
    finally:
        for owner, name, original in reversed(patched):
            setattr(owner, name, original)


def load_case(name: str):
    """``(estimator, X, y)`` of a case."""
    import numpy as np

    import genprob
    from genprob.datasets import load_sms_spam, load_wine

    if name.startswith("sms"):
        from sklearn.feature_extraction.text import CountVectorizer

        texts, labels = load_sms_spam()
        X = CountVectorizer(max_features=50, binary=True).fit_transform(texts).toarray()
        return genprob.BernoulliNB(), X.astype(float), np.asarray(labels)
    X, y = load_wine()
    if name.startswith("wine counts"):
        return genprob.PoissonNB(), np.round(np.asarray(X) * 10.0), y
    return genprob.GaussianNB(), X, y


def run_case(name: str, method: str, warmup: int, samples: int) -> dict:
    """First and repeat call of one case in this process, parts and total."""
    import warnings

    from genprob.io import _arviz_compat as compat

    estimator, X, y = load_case(name)
    estimator.fit(X, y)
    calls = {}
    for label, seed in (("first", 1), ("repeat", 2)):
        with timed_parts() as seconds, warnings.catch_warnings():
            warnings.simplefilter("ignore")
            start = time.perf_counter()
            idata = estimator.posterior(
                X, y, method=method, num_warmup=warmup, num_samples=samples, random_state=seed
            )
            total = time.perf_counter() - start
        row = {"total": total, **seconds}
        row["other"] = total - sum(seconds.values())
        row["groups"] = compat.group_names(idata)
        calls[label] = row
    return calls


def fresh_exact(name: str, samples: int) -> float:
    """Seconds of the first exact-posterior call in a fresh process (imports excluded)."""
    code = (
        "import sys, time, json\n"
        "import bench_posterior_parts as b\n"
        "e, X, y = b.load_case(sys.argv[1]); e.fit(X, y)\n"
        "t = time.perf_counter()\n"
        "e.posterior(X, y, method='exact', num_samples=int(sys.argv[2]), random_state=0)\n"
        "print(json.dumps(time.perf_counter() - t))\n"
    )
    here = str(Path(__file__).resolve().parent)
    # run in this directory: the genprob the parent imported (PYTHONPATH or installed), not one
    # in the caller's working directory
    done = subprocess.run(
        [sys.executable, "-c", code, name, str(samples)],
        capture_output=True,
        text=True,
        check=True,
        cwd=here,
    )
    return float(done.stdout.strip().splitlines()[-1])


def show(name: str, method: str, calls: dict) -> None:
    for label, row in calls.items():
        sampling = max(row["sampling"], 1e-9)
        shares = ", ".join(
            f"{part} {row[part]:.2f} s ({row[part] / sampling:.2f}x)"
            for part in (*PARTS[1:], "other")
        )
        rest = sum(row[part] for part in NON_SAMPLING) / sampling
        print(
            f"{name} [{method}] {label}: total {row['total']:.2f} s, sampling "
            f"{row['sampling']:.2f} s; {shares}; predictive+prior+log_lik+container = "
            f"{rest:.3f}x sampling",
            flush=True,
        )


def time_cli(quick: bool) -> dict:
    """Wall times of ``genprob demo --quick`` and ``genprob compare gaussian_nb`` on wine, with
    the command line's compilation cache off ("cold") and on ("warm")."""
    times = {}
    for cache in ("cold", "warm"):
        env = {**os.environ, "GENPROB_CLI_CACHE": "0" if cache == "cold" else "1"}
        times[cache] = _time_commands(quick, env, cache)
    return times


def _time_commands(quick: bool, env: dict, cache: str) -> dict:
    from sklearn.datasets import load_wine

    times = {}
    with tempfile.TemporaryDirectory() as tmp:
        wine = os.path.join(tmp, "wine.csv")
        load_wine(as_frame=True).frame.to_csv(wine, index=False)
        commands = {
            "demo --quick": ["demo", "--quick", "--out", os.path.join(tmp, "report")],
            "compare gaussian_nb wine": [
                *("compare", "gaussian_nb", wine, "--target", "target"),
                *("--out", os.path.join(tmp, "compare"), "--accept-diagnostics"),
            ],
        }
        if quick:
            commands["compare gaussian_nb wine"] += ["--num-warmup", "50", "--num-samples", "50"]
        for label, argv in commands.items():
            start = time.perf_counter()
            done = subprocess.run(  # in tmp: `-m` puts the working directory on sys.path
                [sys.executable, "-m", "genprob", *argv],
                capture_output=True,
                text=True,
                env=env,
                cwd=tmp,
            )
            seconds = time.perf_counter() - start
            # the demo's progress lines: "[i/n] step (elapsed s)"
            steps = re.findall(r"\[(\d+)/\d+\] (.*?) \((\d+) s\)", done.stderr)
            sampled = re.findall(r"sampled in ([\d.]+) s", done.stderr)
            times[label] = {
                "seconds": seconds,
                "target": TARGETS[label],
                "exit": done.returncode,
                "steps": [{"step": s, "elapsed": float(e)} for _, s, e in steps],
                "sampled": float(sampled[0]) if sampled else None,
            }
            verdict = "within" if seconds <= TARGETS[label] else "OVER"
            print(
                f"genprob {label} ({cache}): {seconds:.1f} s ({verdict} the "
                f"{TARGETS[label]:.0f} s target"
                f"{'' if not quick else ', quick settings'}; exit {done.returncode})"
                + (f"; posterior call {sampled[0]} s" if sampled else ""),
                flush=True,
            )
            if done.returncode not in (0, 1):
                print(done.stderr[-2000:], file=sys.stderr)
    return times


CASES = (
    ("wine gaussian", "nuts"),
    ("sms bernoulli", "nuts"),
    ("wine counts poisson", "exact"),
    ("sms bernoulli", "exact"),
)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="200 + 200 draws per chain")
    parser.add_argument("--warmup", type=int, default=1000)
    parser.add_argument("--samples", type=int, default=1000)
    parser.add_argument("--cli", action="store_true", help="also time demo --quick and compare")
    parser.add_argument("--only-cli", action="store_true", help="time the two commands only")
    parser.add_argument("--json", help="write the results to this JSON file")
    args = parser.parse_args(argv)
    warmup, samples = (200, 200) if args.quick else (args.warmup, args.samples)
    load = os.getloadavg()
    print(f"{run_date()}; {machine()}; load average {load[0]:.1f}", flush=True)
    results = []
    if not args.only_cli:
        for name, method in CASES:
            calls = run_case(name, method, warmup, samples)
            show(name, method, calls)
            row = {"case": name, "method": method, "warmup": warmup, "samples": samples}
            row.update(calls)
            if method == "exact":
                row["fresh_first"] = fresh_exact(name, samples)
                print(f"{name} [exact] first call in a fresh process: {row['fresh_first']:.2f} s")
            results.append(row)
    cli = time_cli(args.quick) if args.cli or args.only_cli else None
    if args.json:
        payload = {
            "date": run_date(),
            "machine": machine(),
            "load_before": load[0],
            "load_after": os.getloadavg()[0],
            "quick": args.quick,
            "cases": results,
            "cli": cli,
        }
        Path(args.json).write_text(json.dumps(payload, indent=1) + "\n")
        print(f"wrote {args.json}")


if __name__ == "__main__":
    main()
