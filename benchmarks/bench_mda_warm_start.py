"""Iterative structures inside mixture EM: capped warm-started M-steps against M-steps run to
their tolerance at every EM iteration (issue 44).

``MixtureDiscriminantAnalysis(structure=S, n_components=range(1, 4))`` on iris for each
iterative structure S (VEI, VEE, EVE, VVE, VEV), fitted twice per repeat in alternating order:

* **warm**: the library's setting, ``mixture.WARM_MAX_ITER`` updates of the structure's M-step
  per EM iteration, each from the previous iteration's covariances, until EM converges, then
  M-steps to their tolerance until it converges again;
* **full**: ``WARM_MAX_ITER = MAX_ITER``, every M-step to its tolerance (still warm-started).

Reported per structure: the median wall time of each and their paired ratio (full / warm, > 1:
the capped steps are faster), the M-step updates of each (counted), and the largest difference
of the fitted log-likelihoods (relative). Timings on a shared machine are noisy: the paired
ratio is the number to read.

Usage::

    python benchmarks/bench_mda_warm_start.py             # 3 repeats
    python benchmarks/bench_mda_warm_start.py --repeats 1 --structures EVE
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
import warnings

import numpy as np

import genprob
from genprob.datasets import load_iris
from genprob.families.gaussian import mclust, mixture

STRUCTURES = mclust.ITERATIVE


def _fit(structure, X, y, cap):
    """Wall time, M-step updates and log-likelihood of one fit with ``WARM_MAX_ITER = cap``."""
    saved_cap, saved_iterate = mixture.WARM_MAX_ITER, mclust._Context.iterate
    updates = [0]

    def counted(context, update, state):
        def step(value):
            updates[0] += 1
            return update(value)

        return saved_iterate(context, step, state)

    mixture.WARM_MAX_ITER, mclust._Context.iterate = cap, counted
    try:
        start = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model = genprob.MixtureDiscriminantAnalysis(
                structure=structure, n_components=range(1, 4)
            ).fit(X, y)
        seconds = time.perf_counter() - start
    finally:
        mixture.WARM_MAX_ITER, mclust._Context.iterate = saved_cap, saved_iterate
    return seconds, updates[0], model.log_likelihood_


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--structures", default=",".join(STRUCTURES))
    parser.add_argument("--json", default=None, help="write the results here")
    args = parser.parse_args(argv)
    X, y = load_iris()
    settings = {"warm": mixture.WARM_MAX_ITER, "full": mclust.MAX_ITER}
    rows = []
    for structure in args.structures.split(","):
        times = {name: [] for name in settings}
        ratios, updates, logliks = [], {}, {name: [] for name in settings}
        for repeat in range(args.repeats):
            order = list(settings) if repeat % 2 == 0 else list(settings)[::-1]
            pair = {}
            for name in order:
                pair[name], updates[name], loglik = _fit(structure, X, y, settings[name])
                times[name].append(pair[name])
                logliks[name].append(loglik)
            ratios.append(pair["full"] / pair["warm"])
        gap = max(
            abs(a - b) / abs(b) for a, b in zip(logliks["warm"], logliks["full"], strict=True)
        )
        row = {
            "structure": structure,
            "warm_s": statistics.median(times["warm"]),
            "full_s": statistics.median(times["full"]),
            "ratio_full_over_warm": statistics.median(ratios),
            "updates_warm": updates["warm"],
            "updates_full": updates["full"],
            "loglik_relative_gap": gap,
        }
        rows.append(row)
        print(
            f"{structure}: warm {row['warm_s']:.2f} s ({row['updates_warm']} updates), "
            f"full {row['full_s']:.2f} s ({row['updates_full']} updates), paired ratio "
            f"{row['ratio_full_over_warm']:.2f}, log-likelihood gap {gap:.1e}",
            flush=True,
        )
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"rows": rows, "repeats": args.repeats}, f, indent=2)
    return rows


if __name__ == "__main__":
    np.seterr(all="ignore")
    main()
