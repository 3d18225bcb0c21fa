"""What a user waits for: cold processes, refits, grid searches and the CLI, against scikit-learn.

Every cold measurement is a fresh Python process timed from outside (interpreter start to exit),
genprob and scikit-learn run in turn (A B A B ...). genprob runs twice per measurement: as
installed (every process compiles what it runs) and with JAX's own persistent compilation cache
switched on as the docs show (``JAX_COMPILATION_CACHE_DIR`` and its two thresholds at 0), warm
(a private directory filled by one earlier process).

* ``cold``: ``import`` + ``fit`` + ``predict_proba`` on iris, wine and digits, per estimator,
  beside its floor: scikit-learn's same process plus ``import jax`` (what any library built on
  JAX pays before its first line runs; genprob imports NumPyro only when a model is built,
  which a closed-form fit of NumPy rows does not do);
* ``refit``: in one process after a first fit, a fit on another row count and a fit with another
  hyperparameter value (milliseconds, median of 5);
* ``grid``: ``GridSearchCV`` over 6 values x 3 folds (digits for the discrete naive Bayes, iris
  for GaussianNB and QDA), in a fresh process after import, then the same grid again in it;
* ``semi-supervised QDA``: first fit on iris with every 5th label, after import;
* ``cli``: ``genprob fit`` / ``genprob predict`` on a 1,000-row CSV, beside scikit-learn's same
  jobs as scripts (pandas reads the CSV, pickle keeps the model) and their floor (the same plus
  ``import jax, numpyro``), and ``genprob demo --quick``.

The machine's load average is printed beside the numbers: on a shared machine, wall times are
only comparable within one run, which is why the ratios are printed.

Usage::

    python benchmarks/bench_cold.py                      # everything (the demo takes minutes)
    python benchmarks/bench_cold.py --skip-demo --repeats 3
    python benchmarks/bench_cold.py --genprob-path /path/to/other/checkout   # "before" numbers
    python benchmarks/bench_cold.py --json benchmarks/results/bench_cold.json
"""

from __future__ import annotations

import argparse
import functools
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

ESTIMATORS = {
    "GaussianNB": ("sklearn.naive_bayes", "GaussianNB", "genprob", "GaussianNB"),
    "LDA": (
        "sklearn.discriminant_analysis",
        "LinearDiscriminantAnalysis",
        "genprob",
        "LinearDiscriminantAnalysis",
    ),
    "QDA": (
        "sklearn.discriminant_analysis",
        "QuadraticDiscriminantAnalysis",
        "genprob",
        "QuadraticDiscriminantAnalysis",
    ),
    "MultinomialNB": ("sklearn.naive_bayes", "MultinomialNB", "genprob", "MultinomialNB"),
    "BernoulliNB": ("sklearn.naive_bayes", "BernoulliNB", "genprob", "BernoulliNB"),
}

COLD_FIT = """{preamble}
from sklearn.datasets import load_{data}
from {module} import {name} as Estimator
X, y = load_{data}(return_X_y=True)
Estimator({options}).fit(X, y).predict_proba(X)
"""
#: Data sets of the cold rows; QDA on digits needs reg_param (constant pixels in every class:
#: both libraries refuse the singular covariances otherwise)
COLD_DATA = ("iris", "wine", "digits")
COLD_OPTIONS = {("QDA", "digits"): "reg_param=0.1"}

#: The cold rows' floor: scikit-learn's process that also imports what genprob's closed-form
#: fits of NumPy rows need (JAX; NumPyro is imported when a model is built)
FLOOR = "floor (sklearn + import jax)"
FLOOR_IMPORTS = "\nimport jax"
#: The CLI rows' floor: ``genprob fit`` prints the exact log-likelihood, scored by the NumPyro
#: model's compiled program, so it imports both
CLI_FLOOR = "floor (sklearn + import jax, numpyro)"
CLI_FLOOR_IMPORTS = "\nimport jax, numpyro"
FLOORS = (FLOOR, CLI_FLOOR)

CLI_FIT = """{preamble}
import pickle
import pandas as pd
from sklearn.naive_bayes import GaussianNB
data = pd.read_csv({csv!r})
model = GaussianNB().fit(data.drop(columns="label").to_numpy(), data["label"].to_numpy())
with open({model!r}, "wb") as out:
    pickle.dump(model, out)
"""

CLI_PREDICT = """{preamble}
import pickle
import pandas as pd
with open({model!r}, "rb") as handle:
    model = pickle.load(handle)
data = pd.read_csv({csv!r})
proba = model.predict_proba(data.drop(columns="label").to_numpy())
pd.DataFrame(proba, columns=[f"proba_{{c}}" for c in model.classes_]).to_csv({out!r}, index=False)
"""

REFIT = """
import time, statistics, json
from sklearn.datasets import load_iris
from {module} import {name} as Estimator
X, y = load_iris(return_X_y=True)
order = [(7 * i) % 150 for i in range(150)]  # classes mixed: every prefix holds all three
X, y = X[order], y[order]
Estimator().fit(X, y).predict_proba(X)
rows, values = [], []
for n in (101, 117, 123, 131, 139):
    t = time.perf_counter(); Estimator().fit(X[:n], y[:n]).predict_proba(X[:n])
    rows.append(time.perf_counter() - t)
for v in {values}:
    t = time.perf_counter(); Estimator(**{{{param!r}: v}}).fit(X, y).predict_proba(X)
    values.append(time.perf_counter() - t)
print(json.dumps([statistics.median(rows), statistics.median(values)]))
"""

GRID = """
import time, json
from sklearn.datasets import {loader}
from sklearn.model_selection import GridSearchCV
from {module} import {name} as Estimator
X, y = {loader}(return_X_y=True)
times = []
for _ in range(2):  # the first grid of a process, then the same grid again
    t = time.perf_counter()
    GridSearchCV(Estimator(), {{{param!r}: {values}}}, cv=3).fit(X, y)
    times.append(time.perf_counter() - t)
print(json.dumps(times))
"""

SEMI = """
import time, json
import numpy as np
from sklearn.datasets import load_iris
import genprob
X, y = load_iris(return_X_y=True)
y = np.where(np.arange(len(y)) % 5 == 0, y, -1)
t = time.perf_counter()
genprob.QuadraticDiscriminantAnalysis(reg_param=0.1).fit(X, y).predict_proba(X)
print(json.dumps(time.perf_counter() - t))
"""

GRIDS = {
    "MultinomialNB": ("load_digits", "alpha", [0.01, 0.03, 0.1, 0.3, 1.0, 3.0]),
    "BernoulliNB": ("load_digits", "alpha", [0.01, 0.03, 0.1, 0.3, 1.0, 3.0]),
    "GaussianNB": ("load_iris", "var_smoothing", [1e-9, 1e-8, 1e-7, 1e-6, 1e-5, 1e-4]),
    "QDA": ("load_iris", "reg_param", [0.0, 0.05, 0.1, 0.2, 0.5, 0.9]),
}
REFIT_PARAMS = {
    "GaussianNB": ("var_smoothing", [1e-8, 1e-7, 1e-6, 1e-5, 1e-4]),
    "LDA": ("tol", [1e-5, 1e-4, 1e-3, 1e-2, 1e-1]),
    "QDA": ("reg_param", [0.05, 0.1, 0.2, 0.5, 0.9]),
    "MultinomialNB": ("alpha", [0.1, 0.3, 0.5, 2.0, 3.0]),
    "BernoulliNB": ("alpha", [0.1, 0.3, 0.5, 2.0, 3.0]),
}


def run(code_or_args, env, capture=False):
    """Wall time of one fresh process (and its stdout when ``capture``)."""
    args = code_or_args if isinstance(code_or_args, list) else [sys.executable, "-c", code_or_args]
    start = time.perf_counter()
    done = subprocess.run(args, env=env, capture_output=True, text=True, check=False)
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        raise RuntimeError(f"{args[:3]} failed:\n{done.stderr[-2000:]}")
    return (elapsed, done.stdout) if capture else elapsed


#: JAX's persistent compilation cache as the docs switch it on (the directory set per run)
_JAX_CACHE = {
    "JAX_COMPILATION_CACHE_DIR": "",
    "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "0",
    "JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES": "-1",
}


def environments(genprob_path, cache_dir):
    """Process environments: scikit-learn, genprob without cache, genprob with a warm cache."""
    base = dict(os.environ)
    for name in _JAX_CACHE:
        base.pop(name, None)
    # users import from bytecode (pip writes it for installed packages, Python for the rest)
    base.pop("PYTHONDONTWRITEBYTECODE", None)
    if genprob_path:
        base["PYTHONPATH"] = os.pathsep.join(filter(None, [genprob_path, base.get("PYTHONPATH")]))
    return {
        "sklearn": base,
        # the command line keeps its own cache unless told not to
        "genprob, no cache": {**base, "GENPROB_CLI_CACHE": "0"},
        "genprob, warm cache": {**base, **_JAX_CACHE, "JAX_COMPILATION_CACHE_DIR": cache_dir},
    }


def median_runs(code, env, repeats, parse=False):
    values = []
    for _ in range(repeats):
        elapsed, out = run(code, env, capture=True)
        values.append(json.loads(out.strip().splitlines()[-1]) if parse else elapsed)
    if parse and isinstance(values[0], list):
        return [statistics.median(column) for column in zip(*values, strict=True)]
    return statistics.median(values)


def load() -> str:
    return "/".join(f"{x:.1f}" for x in os.getloadavg())


def cold_rows(envs, repeats, names):
    rows = []
    for label in names:
        sk_module, sk_name, gp_module, gp_name = ESTIMATORS[label]
        for data in COLD_DATA:
            fields = {"data": data, "options": COLD_OPTIONS.get((label, data), "")}
            sk_code = COLD_FIT.format(preamble="", module=sk_module, name=sk_name, **fields)
            # the floor of any JAX library: scikit-learn's job plus importing JAX
            floor_code = COLD_FIT.format(
                preamble=FLOOR_IMPORTS, module=sk_module, name=sk_name, **fields
            )
            gp_code = COLD_FIT.format(preamble="", module=gp_module, name=gp_name, **fields)
            run(gp_code, envs["genprob, warm cache"])  # fills the cache
            times = {"sklearn": [], FLOOR: [], "genprob, no cache": [], "genprob, warm cache": []}
            for _ in range(repeats):
                times["sklearn"].append(run(sk_code, envs["sklearn"]))
                times[FLOOR].append(run(floor_code, envs["sklearn"]))
                times["genprob, no cache"].append(run(gp_code, envs["genprob, no cache"]))
                times["genprob, warm cache"].append(run(gp_code, envs["genprob, warm cache"]))
            rows.append(summary(f"cold import+fit+predict_proba, {data}, {label}", times))
    return rows


def summary(work, times, unit="s"):
    row = {"work": work, "unit": unit, "load": load()}
    for key, values in times.items():
        row[key] = statistics.median(values) if isinstance(values, list) else values
    reference = row.get("sklearn")
    for key in ("genprob, no cache", "genprob, warm cache"):
        if reference and row.get(key) is not None:
            row[f"ratio {key}"] = row[key] / reference
    floor = next((row[key] for key in FLOORS if row.get(key)), None)
    if floor:
        row["warm cache / floor"] = row["genprob, warm cache"] / floor
    print(format_row(row), flush=True)
    return row


def format_row(row):
    parts = [f"{row['work']:<58}"]
    for key in ("sklearn", *FLOORS, "genprob, no cache", "genprob, warm cache"):
        if row.get(key) is not None:
            scale = 1000.0 if row["unit"] == "ms" else 1.0
            parts.append(f"{key} {row[key] * scale:8.3f} {row['unit']}")
    for key in ("ratio genprob, no cache", "ratio genprob, warm cache", "warm cache / floor"):
        if key in row:
            parts.append(f"{key.split(', ')[-1]} x{row[key]:.2f}")
    parts.append(f"load {row['load']}")
    return " | ".join(parts)


def refit_rows(envs, repeats, names):
    rows = []
    for label in names:
        sk_module, sk_name, gp_module, gp_name = ESTIMATORS[label]
        param, values = REFIT_PARAMS[label]
        result = {}
        for key, module, name in (
            ("sklearn", sk_module, sk_name),
            ("genprob, warm cache", gp_module, gp_name),
        ):
            code = REFIT.format(module=module, name=name, param=param, values=values)
            result[key] = median_runs(code, envs[key], repeats, parse=True)
        rows.append(
            summary(
                f"refit, new row count, {label}",
                {k: v[0] for k, v in result.items()},
                unit="ms",
            )
        )
        rows.append(
            summary(
                f"refit, new {param}, {label}",
                {k: v[1] for k, v in result.items()},
                unit="ms",
            )
        )
    return rows


def grid_rows(envs, repeats, names):
    rows = []
    for label, (loader, param, values) in GRIDS.items():
        if label not in names:
            continue
        sk_module, sk_name, gp_module, gp_name = ESTIMATORS[label]
        times = {}
        for key in envs:
            module, name = (sk_module, sk_name) if key == "sklearn" else (gp_module, gp_name)
            code = GRID.format(loader=loader, module=module, name=name, param=param, values=values)
            if key == "genprob, warm cache":
                run(code, envs[key])
            times[key] = median_runs(code, envs[key], repeats, parse=True)
        work = f"GridSearchCV 6 {param} x 3 folds, {loader[5:]}, {label}"
        rows.append(summary(work, {k: v[0] for k, v in times.items()}))
        again = {k: v[1] for k, v in times.items() if k != "genprob, no cache"}
        rows.append(summary(f"{work}, again in the process", again))
    return rows


def semi_rows(envs, repeats):
    times = {}
    for key in ("genprob, no cache", "genprob, warm cache"):
        if key == "genprob, warm cache":
            run(SEMI, envs[key])
        times[key] = median_runs(SEMI, envs[key], repeats, parse=True)
    return [summary("semi-supervised QDA, iris, every 5th label (after import)", times)]


def cli_rows(envs, repeats, demo):
    import numpy as np

    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        rng = np.random.default_rng(0)
        labels = rng.integers(0, 3, 1000)
        features = rng.normal(size=(1000, 4)) + labels[:, None]
        csv = Path(tmp) / "data.csv"
        lines = ["a,b,c,d,label"] + [
            ",".join(f"{v:.6f}" for v in row) + f",c{k}"
            for row, k in zip(features, labels, strict=True)
        ]
        csv.write_text("\n".join(lines) + "\n")
        genprob = str(Path(sys.executable).with_name("genprob"))
        model = str(Path(tmp) / "model.npz")
        fit = [genprob, "fit", "gaussian_nb", str(csv), "--target", "label", "--out", model]
        predict = [genprob, "predict", model, str(csv), "--proba", "--out", str(Path(tmp) / "p")]
        # scikit-learn's same jobs as scripts (read the CSV, fit and save / load and predict)
        sk_model = str(Path(tmp) / "model.pkl")
        sk_fit = functools.partial(CLI_FIT.format, csv=str(csv), model=sk_model)
        sk_predict = functools.partial(
            CLI_PREDICT.format, csv=str(csv), model=sk_model, out=str(Path(tmp) / "q")
        )
        for work, args, sk_code in (
            ("genprob fit, 1,000-row CSV", fit, sk_fit),
            ("genprob predict", predict, sk_predict),
        ):
            times = {
                "sklearn": median_runs(sk_code(preamble=""), envs["sklearn"], repeats),
                CLI_FLOOR: median_runs(
                    sk_code(preamble=CLI_FLOOR_IMPORTS), envs["sklearn"], repeats
                ),
            }
            for key in ("genprob, no cache", "genprob, warm cache"):
                if key == "genprob, warm cache":
                    run(args, envs[key])
                times[key] = median_runs(args, envs[key], repeats)
            rows.append(summary(f"{work} (cold process)", times))
        if demo:
            args = [genprob, "demo", "--quick", "--out", str(Path(tmp) / "demo")]
            times = {}
            for key in ("genprob, no cache", "genprob, warm cache"):
                if key == "genprob, warm cache":
                    run(args, envs[key])
                times[key] = run(args, envs[key])
            rows.append(summary("genprob demo --quick", times))
    return rows


def versions(env):
    code = (
        "import json, sklearn, jax, numpyro, genprob; print(json.dumps({'genprob': "
        "genprob.__version__, 'genprob path': genprob.__file__, 'scikit-learn': "
        "sklearn.__version__, 'jax': jax.__version__, 'numpyro': numpyro.__version__}))"
    )
    return json.loads(run(code, env, capture=True)[1])


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--skip-demo", action="store_true")
    parser.add_argument("--only", choices=["cold", "refit", "grid", "semi", "cli"], nargs="*")
    parser.add_argument("--estimators", nargs="*", default=list(ESTIMATORS))
    parser.add_argument("--genprob-path", help="import genprob from this checkout instead")
    parser.add_argument("--label", default="after", help="name of this run in the JSON file")
    parser.add_argument("--json", help="add this run's results to this JSON file")
    args = parser.parse_args(argv)
    only = set(args.only or ["cold", "refit", "grid", "semi", "cli"])
    with tempfile.TemporaryDirectory() as cache_dir:
        envs = environments(args.genprob_path, cache_dir)
        info = {
            "label": args.label,
            "date": run_date(),
            "machine": machine(),
            "versions": versions(envs["sklearn"]),
            "repeats": args.repeats,
            "load at start": load(),
        }
        print(json.dumps(info), flush=True)
        info["rows"] = []
        sections = {
            "cold": lambda: cold_rows(envs, args.repeats, args.estimators),
            "refit": lambda: refit_rows(envs, args.repeats, args.estimators),
            "grid": lambda: grid_rows(envs, args.repeats, args.estimators),
            "semi": lambda: semi_rows(envs, args.repeats),
            "cli": lambda: cli_rows(envs, args.repeats, demo=not args.skip_demo),
        }
        for name, section in sections.items():
            if name in only:
                info["rows"] += section()
                info["load at end"] = load()
                if args.json:
                    save(Path(args.json), info)


def save(path, info):
    """Add this run to the JSON file of runs; a run of the same label keeps the rows this one
    did not measure (``--only``), the others are replaced."""
    runs = json.loads(path.read_text())["runs"] if path.exists() else []
    for old in (r for r in runs if r["label"] == info["label"]):
        new = {row["work"]: row for row in info["rows"]}
        rows = [new.pop(row["work"], row) for row in old["rows"]]  # in place, in order
        info = {**info, "rows": rows + list(new.values())}
    runs = [r for r in runs if r["label"] != info["label"]] + [info]
    path.write_text(json.dumps({"runs": runs}, indent=1) + "\n")


if __name__ == "__main__":
    main()
