"""A new user's first calls, each in a fresh process, beside its peer or floor in the same run.

Every measurement is a fresh Python process that imports what it needs, then times one call
from inside (``time.perf_counter`` around the call, the script's own imports excluded) and
prints the seconds as JSON. ``import genprob`` does not import JAX: the first call that compiles
does, inside the timed call, so the floor times ``import jax`` as well. Each process runs twice
per repeat: as installed (every process compiles what it runs, "cold") and with JAX's own
persistent compilation cache switched on as the docs show (``JAX_COMPILATION_CACHE_DIR`` and its
two thresholds at 0), "warm" (a private directory filled by one earlier process of the same
code). Rows:

* ``sample``, ``EM fit``, ``log_likelihood``, ``crosscheck``: README snippet 1 on iris (LDA's
  ``sample``; GaussianNB on one label in four, whose fit runs EM; that fit's
  ``log_likelihood``; ``lda.crosscheck(X, y)``). Floor: ``import jax`` and the first call of
  one jitted function (what any compiled first call pays); peer of the cross-check:
  scikit-learn's LDA fit, of the EM fit: scikit-learn's ``SelfTrainingClassifier(GaussianNB())``.
* ``user story fit``: ``GenerativeClassifier`` with the README's Student-t story on iris, first
  fit and a refit on a bootstrap of the rows (same shape) in the same process; peer: SciPy's
  L-BFGS-B (``jac=True``) on the same log-likelihood written in JAX (class prior by softmax,
  log scales) as one jitted ``value_and_grad``, tolerances tightened until it reaches the same
  optimum (the run records whether the two objectives agree to 1e-9, relative), run with one
  BLAS thread (``threadpoolctl``; SciPy's L-BFGS-B is several times slower beside JAX's threads
  otherwise).
  Then a refit on 120 of those rows (a new row count inside the same bucket of rows: genprob
  compiles nothing, SciPy's objective is traced again at the new shape), both cold.
* ``user story 5-fold CV``: ``cross_val_score`` of that classifier on iris (5 folds, scored);
  peer: the SciPy fit above on the same 5 train folds.
* ``first semi-supervised fit``: after ``import genprob``, LDA on wine with every 4th label (EM,
  the first call of the process); peer: scikit-learn's ``SelfTrainingClassifier(LDA)``.
* ``genprob check STORY``: the whole command (interpreter start to exit), timed from outside,
  for one built-in story on its bundled data; floor: a process that imports jax and NumPyro and
  runs one jitted function. ``GENPROB_CLI_CACHE=0`` for the cold row (the command keeps its own
  cache otherwise), the default (its cache, filled by one earlier run) for the warm row.

The machine's load average is printed beside the numbers: on a shared machine wall times are
only comparable within one run, which is why the ratios are printed.

Usage::

    python benchmarks/bench_first_calls.py                      # every row, 3 repeats
    python benchmarks/bench_first_calls.py --repeats 1 --check lda
    python benchmarks/bench_first_calls.py --json benchmarks/results/bench_first_calls.json
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _run_info import machine, run_date  # noqa: E402

#: What every genprob snippet starts with (README snippet 1's data)
PREAMBLE = """
import json, time
import numpy as np
import genprob
from genprob.datasets import load_iris
X, y = load_iris()
y_partial = np.where(np.arange(len(y)) % 4 == 0, y, -1)
def timed(call):
    start = time.perf_counter(); call(); return time.perf_counter() - start
"""

STUDENT_T = """
import numpyro, numpyro.distributions as dist
from genprob import GenerativeClassifier, Story

class StudentTStory(Story):
    name = "student_t"
    def prior(self, num_classes, num_features):
        shape = [num_classes, num_features]
        return {"means": numpyro.sample("means", dist.Normal(0, 10).expand(shape).to_event(2)),
                "scales": numpyro.sample("scales", dist.LogNormal(0, 2).expand(shape).to_event(2))}
    def emission(self, params):
        return dist.StudentT(4.0, params["means"], params["scales"]).to_event(1)

rows = np.random.default_rng(1).integers(0, len(y), len(y))
"""

#: Timed first calls: name -> code printing {"seconds": ...} (and extras) as JSON
GENPROB_CALLS = {
    "sample": PREAMBLE
    + """
lda = genprob.LinearDiscriminantAnalysis().fit(X, y)
print(json.dumps({"seconds": timed(lambda: lda.sample(5, random_state=0))}))
""",
    "EM fit": PREAMBLE
    + """
print(json.dumps({"seconds": timed(lambda: genprob.GaussianNB().fit(X, y_partial))}))
""",
    "log_likelihood": PREAMBLE
    + """
semi = genprob.GaussianNB().fit(X, y_partial)
print(json.dumps({"seconds": timed(lambda: semi.log_likelihood(X, y_partial))}))
""",
    "crosscheck": PREAMBLE
    + """
lda = genprob.LinearDiscriminantAnalysis().fit(X, y)
start = time.perf_counter(); result = lda.crosscheck(X, y); seconds = time.perf_counter() - start
assert result.passed
print(json.dumps({"seconds": seconds, "iterations": result.optimizer.num_iterations}))
""",
    "user story fit": PREAMBLE
    + STUDENT_T
    + """
start = time.perf_counter()
first = GenerativeClassifier(StudentTStory(), random_state=0).fit(X, y)
seconds = time.perf_counter() - start
start = time.perf_counter()
again = GenerativeClassifier(StudentTStory(), random_state=0).fit(X[rows], y[rows])
refit = time.perf_counter() - start
start = time.perf_counter()
fewer = GenerativeClassifier(StudentTStory(), random_state=0).fit(X[rows[:120]], y[rows[:120]])
new_rows = time.perf_counter() - start
print(json.dumps({"seconds": seconds, "refit": refit, "new rows": new_rows,
                  "objective": again.optimizer_result_.objective,
                  "new rows objective": fewer.optimizer_result_.objective,
                  "iterations": again.optimizer_result_.num_iterations}))
""",
    "user story 5-fold CV": PREAMBLE
    + STUDENT_T
    + """
from sklearn.model_selection import KFold, cross_val_score
folds = KFold(5, shuffle=True, random_state=0)
start = time.perf_counter()
scores = cross_val_score(GenerativeClassifier(StudentTStory(), random_state=0), X, y, cv=folds)
print(json.dumps({"seconds": time.perf_counter() - start, "accuracy": float(scores.mean())}))
""",
    "first semi-supervised fit": """
import json, time
import numpy as np
from sklearn.datasets import load_wine
X, y = load_wine(return_X_y=True)
y_partial = np.where(np.arange(len(y)) % 4 == 0, y, -1)
import genprob, sys
start = time.perf_counter()
genprob.LinearDiscriminantAnalysis().fit(X, y_partial)
print(json.dumps({"seconds": time.perf_counter() - start, "jax imported": "jax" in sys.modules}))
""",
}

#: The floor of a compiled first call: import jax, then one jitted function's first call (both
#: timed: genprob's snippets import JAX inside the first call that needs it)
FLOOR = """
import json, time
import numpy as np
x = np.arange(600.0).reshape(150, 4)
start = time.perf_counter()
import jax, jax.numpy as jnp
jax.jit(lambda x: jnp.sum(jnp.log1p(x ** 2), axis=0))(x).block_until_ready()
print(json.dumps({"seconds": time.perf_counter() - start}))
"""

SKLEARN_LDA = """
import json, time
from sklearn.datasets import load_iris
from sklearn.discriminant_analysis import LinearDiscriminantAnalysis
X, y = load_iris(return_X_y=True)
start = time.perf_counter(); LinearDiscriminantAnalysis().fit(X, y)
print(json.dumps({"seconds": time.perf_counter() - start}))
"""

SKLEARN_SELF_TRAINING = """
import json, time
import numpy as np
from sklearn.datasets import load_iris
from sklearn.naive_bayes import GaussianNB
from sklearn.semi_supervised import SelfTrainingClassifier
X, y = load_iris(return_X_y=True)
y_partial = np.where(np.arange(len(y)) % 4 == 0, y, -1)
start = time.perf_counter(); SelfTrainingClassifier(GaussianNB()).fit(X, y_partial)
print(json.dumps({"seconds": time.perf_counter() - start}))
"""

#: SciPy's L-BFGS-B on the Student-t story's log-likelihood as one jitted value_and_grad
SCIPY_STUDENT_T = """
import json, time
import numpy as np
import jax, jax.numpy as jnp
import scipy.optimize
from threadpoolctl import threadpool_limits
from genprob.datasets import load_iris
X, y = load_iris()
rows = np.random.default_rng(1).integers(0, len(y), len(y))
K, D = 3, X.shape[1]

def loss(theta, X, y):
    logits = jnp.concatenate([jnp.zeros(1), theta[: K - 1]])
    log_prior = jax.nn.log_softmax(logits)
    means = theta[K - 1 : K - 1 + K * D].reshape(K, D)
    scales = jnp.exp(theta[K - 1 + K * D :].reshape(K, D))
    loglik = jax.scipy.stats.t.logpdf(X, 4.0, means[y], scales[y]).sum() + log_prior[y].sum()
    return -loglik / X.shape[0]

value_and_grad = jax.jit(jax.value_and_grad(loss))  # compiled once per data shape

def fit(X, y):
    with jax.enable_x64(True):
        Xj, yj = jnp.asarray(X), jnp.asarray(y)
        def fun(theta):
            value, grad = value_and_grad(jnp.asarray(theta), Xj, yj)
            return float(value), np.asarray(grad)
        theta0 = np.random.default_rng(0).standard_normal(K - 1 + 2 * K * D)
        result = scipy.optimize.minimize(fun, theta0, jac=True, method="L-BFGS-B",
                                         options={"maxiter": 10000, "ftol": 1e-15, "gtol": 1e-11})
        return -result.fun * X.shape[0], result.nit

# one BLAS thread: L-BFGS-B's small BLAS calls otherwise wait on threads that XLA's keep busy
with threadpool_limits(1, user_api="blas"):
    start = time.perf_counter(); fit(X, y); seconds = time.perf_counter() - start
    start = time.perf_counter(); objective, iterations = fit(X[rows], y[rows])
    refit = time.perf_counter() - start
    start = time.perf_counter(); new_objective, _ = fit(X[rows[:120]], y[rows[:120]])
    new_rows = time.perf_counter() - start
print(json.dumps({"seconds": seconds, "refit": refit, "new rows": new_rows,
                  "objective": objective, "new rows objective": new_objective,
                  "iterations": iterations}))
"""

#: SciPy's L-BFGS-B fitted on the train rows of the same 5 folds (scored by its class scores)
SCIPY_STUDENT_T_CV = (
    SCIPY_STUDENT_T.split("# one BLAS thread")[0]
    + """
from sklearn.model_selection import KFold
with threadpool_limits(1, user_api="blas"):
    start = time.perf_counter()
    for train, _ in KFold(5, shuffle=True, random_state=0).split(X):
        fit(X[train], y[train])
print(json.dumps({"seconds": time.perf_counter() - start}))
"""
)

SKLEARN_SELF_TRAINING_LDA = """
import json, time
import numpy as np
from sklearn.datasets import load_wine
X, y = load_wine(return_X_y=True)
y_partial = np.where(np.arange(len(y)) % 4 == 0, y, -1)
from sklearn.discriminant_analysis import LinearDiscriminantAnalysis
from sklearn.semi_supervised import SelfTrainingClassifier
start = time.perf_counter()
SelfTrainingClassifier(LinearDiscriminantAnalysis()).fit(X, y_partial)
print(json.dumps({"seconds": time.perf_counter() - start}))
"""

#: The floor of the command: a process importing jax and NumPyro that runs one jitted function
CHECK_FLOOR = """
import numpy as np
import jax, jax.numpy as jnp, numpyro
jax.jit(lambda x: jnp.sum(jnp.log1p(x ** 2), axis=0))(np.ones((150, 4))).block_until_ready()
"""

_JAX_CACHE = {
    "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "0",
    "JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES": "-1",
}


def inner(code: str, env: dict) -> dict:
    """Run ``code`` in a fresh interpreter; the JSON it prints last."""
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def outer(args: list, env: dict) -> float:
    """Wall time of a whole process, interpreter start to exit."""
    start = time.perf_counter()
    subprocess.run([sys.executable, *args], env=env, capture_output=True, check=True)
    return time.perf_counter() - start


def environments(genprob_path: str, cache_dir: str) -> dict:
    base = {k: v for k, v in os.environ.items() if not k.startswith("JAX_")}
    base["PYTHONPATH"] = genprob_path + os.pathsep + base.get("PYTHONPATH", "")
    return {
        "cold": {**base, "GENPROB_CLI_CACHE": "0"},
        "warm": {**base, **_JAX_CACHE, "JAX_COMPILATION_CACHE_DIR": cache_dir},
    }


def median(values):
    return statistics.median(values) if values else float("nan")


def first_call_rows(envs: dict, repeats: int) -> list:
    """Every compiled first call, cold and warm, with the floor and its peer (A B A B ...)."""
    peers = {
        "crosscheck": ("scikit-learn LDA fit", SKLEARN_LDA),
        "EM fit": ("scikit-learn SelfTrainingClassifier(GaussianNB) fit", SKLEARN_SELF_TRAINING),
        "user story fit": ("SciPy L-BFGS-B, same jitted objective", SCIPY_STUDENT_T),
        "user story 5-fold CV": ("SciPy L-BFGS-B on the 5 train folds", SCIPY_STUDENT_T_CV),
        "first semi-supervised fit": (
            "scikit-learn SelfTrainingClassifier(LDA)",
            SKLEARN_SELF_TRAINING_LDA,
        ),
    }
    rows = []
    for name, code in GENPROB_CALLS.items():
        peer_name, peer_code = peers.get(name, (None, None))
        for mode in ("cold", "warm"):
            inner(code, envs[mode])  # the warm directory is filled; the cold run is discarded
            if peer_code:
                inner(peer_code, envs[mode])
        runs = {"cold": [], "warm": [], "floor": [], "peer cold": [], "peer warm": []}
        for _ in range(repeats):
            runs["floor"].append(inner(FLOOR, envs["cold"]))
            for mode in ("cold", "warm"):
                runs[mode].append(inner(code, envs[mode]))
                if peer_code:
                    runs[f"peer {mode}"].append(inner(peer_code, envs[mode]))
        row = {"call": name, "peer": peer_name}
        for key, values in runs.items():
            if values:
                row[key] = median([v["seconds"] for v in values])
                for extra in ("refit", "new rows"):
                    if extra in values[0]:
                        row[f"{key} {extra}"] = median([v[extra] for v in values])
        for key in ("cold", "warm"):
            row[f"{key} / floor"] = row[key] / row["floor"]
            if peer_code:
                row[f"{key} / peer"] = row[key] / row[f"peer {key}"]
        if "iterations" in runs["cold"][0]:
            row["iterations"] = runs["cold"][0]["iterations"]
        if name == "user story fit":
            row["refit / peer refit"] = row["warm refit"] / row["peer warm refit"]
            row["new rows / peer new rows"] = row["cold new rows"] / row["peer cold new rows"]
            ours = runs["cold"][0]["new rows objective"]
            theirs = runs["peer cold"][0]["new rows objective"]
            row["same optimum at new rows"] = bool(abs(ours - theirs) <= 1e-6 * abs(theirs))
            ours, theirs = runs["cold"][0]["objective"], runs["peer cold"][0]["objective"]
            row["objective"], row["peer objective"] = ours, theirs
            row["peer iterations"] = runs["peer cold"][0]["iterations"]
            row["same optimum"] = bool(abs(ours - theirs) <= 1e-9 * abs(theirs))
            if not row["same optimum"]:  # the ratio compares unequal work: say so, keep the run
                print(f"the two fits disagree: objective {ours!r} against {theirs!r}")
        rows.append(row)
        print(format_row(row), flush=True)
    return rows


def check_rows(envs: dict, repeats: int, stories: list) -> list:
    """``genprob check STORY`` as a whole process, cold and with the command's own cache."""
    rows = []
    # the command's own cache, in a private cache home (filled by one earlier run)
    warm = {**envs["cold"], "XDG_CACHE_HOME": envs["warm"]["JAX_COMPILATION_CACHE_DIR"]}
    warm.pop("GENPROB_CLI_CACHE")
    for story in stories:
        command = ["-m", "genprob", "check", story]
        outer(command, warm)
        runs = {"cold": [], "warm": [], "floor": []}
        for _ in range(repeats):
            runs["floor"].append(outer(["-c", CHECK_FLOOR], envs["cold"]))
            runs["cold"].append(outer(command, envs["cold"]))
            runs["warm"].append(outer(command, warm))
        row = {"call": f"genprob check {story}", "peer": None}
        row.update({key: median(values) for key, values in runs.items()})
        for key in ("cold", "warm"):
            row[f"{key} / floor"] = row[key] / row["floor"]
        rows.append(row)
        print(format_row(row), flush=True)
    return rows


def format_row(row: dict) -> str:
    shown = [f"{row['call']:<22}"]
    for key in (
        *("cold", "warm", "floor", "peer cold", "peer warm", "warm refit", "peer warm refit"),
        *("cold new rows", "peer cold new rows"),
    ):
        if key in row:
            shown.append(f"{key} {row[key]:.2f} s")
    ratios = ("cold / floor", "warm / floor", "cold / peer", "warm / peer", "refit / peer refit")
    for key in (*ratios, "new rows / peer new rows"):
        if key in row:
            shown.append(f"{key} {row[key]:.1f}x")
    if "iterations" in row:
        shown.append(f"{row['iterations']} iterations")
    return "  ".join(shown)


#: The targets: (row, key, bound, what the bound is against)
TARGETS = (
    ("sample", "warm / floor", 3.0, "at most 3x the floor of a compiled first call, warm cache"),
    ("EM fit", "warm / floor", 3.0, "at most 3x the floor of a compiled first call, warm cache"),
    ("log_likelihood", "warm / floor", 3.0, "at most 3x the floor, warm cache"),
    ("crosscheck", "cold", 5.0, "a few seconds, cold (compilation included)"),
    ("user story fit", "refit / peer refit", 1.5, "refit at most 1.5x SciPy's L-BFGS-B"),
    ("user story fit", "new rows / peer new rows", 1.0, "refit at new rows faster than SciPy"),
    ("first semi-supervised fit", "cold", 0.5, "at most 0.5 s after import genprob"),
)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--check", nargs="*", default=["lda", "gaussian_nb", "mixed"])
    parser.add_argument("--genprob-path", default=str(Path(__file__).resolve().parents[1]))
    parser.add_argument("--json", help="write the rows to this JSON file")
    args = parser.parse_args(argv)
    load = os.getloadavg()[0]  # at the start, as the other scripts record it
    print(f"{run_date()}  {machine()}  load average {os.getloadavg()}", flush=True)
    with tempfile.TemporaryDirectory() as cache_dir:
        envs = environments(args.genprob_path, cache_dir)
        rows = first_call_rows(envs, args.repeats)
        rows += check_rows(envs, args.repeats, args.check)
    by_call = {row["call"]: row for row in rows}
    targets = [
        (f"genprob check {story}", "cold", 5.0, "a few seconds, cold") for story in args.check
    ]
    verdicts = []
    for call, key, bound, what in (*TARGETS, *targets):
        value = by_call[call][key]
        verdicts.append(
            {
                "call": call,
                "measure": key,
                "value": value,
                "bound": bound,
                "target": what,
                "met": bool(value <= bound),
            }  # fmt: skip
        )
        unit = "s" if key in ("cold", "warm") else "x"
        print(f"target {call}: {key} {value:.2f}{unit} <= {bound}{unit} ({what}): "
              f"{'met' if value <= bound else 'NOT met'}")  # fmt: skip
    if args.json:
        Path(args.json).write_text(
            json.dumps(
                {
                    "date": run_date(),
                    "machine": machine(),
                    "load_average_1min": load,
                    "repeats": args.repeats,
                    "rows": rows,
                    "targets": verdicts,
                },
                indent=2,
            )  # fmt: skip
            + "\n"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
