"""Model-based classification against R's mclust in the same run (issue 58's speed targets).

Three cases, on the exact matrices of ``tests/references/mclust/`` (scikit-learn's iris and wine,
written by ``export_data.py``; digits PCA-10 by ``export_digits.py``):

* ``iris``: ``MixtureDiscriminantAnalysis(n_components=range(1, 4))`` (14 structures x G 1-3
  per class), against ``MclustDA(X, y, G = 1:3)``; target at most 3x mclust;
* ``wine``: EDDA (``n_components=1``) for each of the 14 structures, one fit each, against
  ``MclustDA(X, y, modelType = "EDDA", modelNames = s)`` for each; target at most 3x;
* ``digits``: as iris on digits PCA-10 (1797 rows, 10 classes); target at most 1x.

What is compared is what a user waits for: each repeat starts a fresh Python process that
imports genprob (not timed), times its **first fit** (anything compiled or cached on first use
included) and then a **refit** in the same process; R's time is ``system.time``'s elapsed
seconds of the same call in a fresh ``Rscript`` (library loaded, not timed). The two libraries
run in turn, their order alternating from repeat to repeat, so both see the same machine: read
the ratios (genprob / mclust, of medians), and the load average recorded beside them.

R is ``Rscript`` on the PATH with ``R_LIBS`` honoured (the references' mclust 6.1.3 lives in a
private library: ``R_LIBS=DIR python benchmarks/bench_mclust.py``); without R or mclust the R
columns are skipped with a message and genprob's times are still measured.

Usage::

    python benchmarks/bench_mclust.py --json benchmarks/results/bench_mclust.json
    python benchmarks/bench_mclust.py --cases iris,wine --repeats 1
    python benchmarks/bench_mclust.py --source ../genprob-before    # another checkout's genprob
    python benchmarks/bench_mclust.py --em-tol 1e-5 --json benchmarks/results/bench_mclust_tol.json

``--em-tol 1e-5`` fits genprob at mclust's EM tolerance (``emControl()``'s ``tol``) instead of
its default 1e-8: like for like, the same convergence rule on both sides.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _run_info import machine, run_date  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "references" / "mclust"
CASES = {
    "iris": {"file": "iris.csv", "target": 3.0},
    "wine": {"file": "wine.csv", "target": 3.0},
    "digits": {"file": "digits_pca10.csv", "target": 1.0},
}

# one fit of a case in R; prints the elapsed seconds of system.time
R_SCRIPT = r"""
suppressMessages(library(mclust))
args <- commandArgs(trailingOnly = TRUE)
data <- read.csv(args[2])
X <- as.matrix(data[, -ncol(data)]); y <- data[, ncol(data)]
run <- switch(args[1],
  wine = function() for (s in mclust.options("emModelNames"))
    MclustDA(X, y, modelType = "EDDA", modelNames = s, verbose = FALSE),
  function() MclustDA(X, y, G = 1:3, verbose = FALSE))
cat(system.time(run())[["elapsed"]], as.character(packageVersion("mclust")), "\n")
"""

# first fit and refit of a case in a fresh Python process; prints JSON
PY_SCRIPT = r"""
import json, sys, time, warnings
import numpy as np
import genprob
from genprob.families.gaussian.mclust import STRUCTURES
case, path = sys.argv[1], sys.argv[2]
settings = {"em_tol": float(sys.argv[3])} if sys.argv[3] else {}
data = np.loadtxt(path, delimiter=",", skiprows=1)
X, y = data[:, :-1], data[:, -1].astype(int)
def run():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if case == "wine":
            for s in STRUCTURES:
                genprob.MixtureDiscriminantAnalysis(s, n_components=1, **settings).fit(X, y)
        else:
            genprob.MixtureDiscriminantAnalysis(n_components=range(1, 4), **settings).fit(X, y)
times = []
for _ in range(2):
    start = time.perf_counter()
    run()
    times.append(time.perf_counter() - start)
version = getattr(genprob, "__version__", "?")
print(json.dumps({"first": times[0], "refit": times[1], "version": version}))
"""


def _load() -> float | None:
    try:
        with open("/proc/loadavg") as f:
            return float(f.read().split()[0])
    except OSError:
        return None


def r_available() -> str | None:
    """None when Rscript and mclust are usable, else why not."""
    if shutil.which("Rscript") is None:
        return "Rscript is not on the PATH"
    probe = subprocess.run(
        ["Rscript", "-e", "suppressMessages(library(mclust))"], capture_output=True, text=True
    )
    return None if probe.returncode == 0 else "R has no mclust (set R_LIBS to its library)"


def time_r(case: str) -> tuple[float, str]:
    out = subprocess.run(
        ["Rscript", "-e", R_SCRIPT, case, str(DATA / CASES[case]["file"])],
        capture_output=True, text=True, check=True, env=os.environ,
    )  # fmt: skip
    seconds, version = out.stdout.split()[-2:]
    return float(seconds), version


def time_genprob(case: str, source: Path = ROOT, em_tol: float | None = None) -> dict:
    paths = [str(source), *filter(None, [os.environ.get("PYTHONPATH")])]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(paths))
    # cwd: ``python -c`` puts it on sys.path before PYTHONPATH
    out = subprocess.run(
        [sys.executable, "-c", PY_SCRIPT, case, str(DATA / CASES[case]["file"])]
        + ["" if em_tol is None else repr(em_tol)],
        capture_output=True, text=True, check=True, env=env, cwd=source,
    )  # fmt: skip
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", default=",".join(CASES))
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--json", default=None, help="write the results here")
    parser.add_argument(
        "--source", type=Path, default=ROOT, help="the genprob checkout to time (e.g. a worktree"
        " of an earlier commit, for a before/after in the same run)",
    )  # fmt: skip
    parser.add_argument(
        "--em-tol", type=float, default=None, help="genprob's em_tol (default: its own, 1e-8;"
        " mclust's is 1e-5)",
    )  # fmt: skip
    args = parser.parse_args(argv)
    missing = r_available()
    if missing:
        print(f"R skipped: {missing}; genprob's times only.")
    record = {"date": run_date(), "machine": machine(), "load_average_1min": {"start": _load()}}
    rows = []
    for case in args.cases.split(","):
        first, refit, r_times, loads = [], [], [], []
        for repeat in range(args.repeats):
            order = ["genprob", "R"] if repeat % 2 == 0 else ["R", "genprob"]
            loads.append(_load())
            for who in order:
                if who == "R" and not missing:
                    seconds, record["mclust"] = time_r(case)
                    r_times.append(seconds)
                elif who == "genprob":
                    got = time_genprob(case, args.source, args.em_tol)
                    record["genprob"] = got["version"]
                    first.append(got["first"])
                    refit.append(got["refit"])
        row = {
            "case": case,
            "target": CASES[case]["target"],
            "first_s": statistics.median(first),
            "refit_s": statistics.median(refit),
            "first_runs": first,
            "refit_runs": refit,
            "mclust_s": statistics.median(r_times) if r_times else None,
            "mclust_runs": r_times,
            "load_average_1min": loads,
        }
        if r_times:
            row["first_ratio"] = row["first_s"] / row["mclust_s"]
            row["refit_ratio"] = row["refit_s"] / row["mclust_s"]
        rows.append(row)
        ratios = (
            f"  first/mclust {row['first_ratio']:.2f}x  refit/mclust {row['refit_ratio']:.2f}x"
            if r_times
            else ""
        )
        mclust = f"{row['mclust_s']:.3f}" if r_times else "-"
        print(
            f"{case:7s} genprob first {row['first_s']:.3f} s refit {row['refit_s']:.3f} s  "
            f"mclust {mclust} s{ratios}  (target {row['target']:g}x; load {loads})",
            flush=True,
        )
    record["load_average_1min"]["end"] = _load()
    record["repeats"] = args.repeats
    record["em_tol"] = args.em_tol  # None: genprob's default
    if args.source != ROOT:
        record["source"] = str(args.source)
    record["rows"] = rows
    if args.json:
        Path(args.json).write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
