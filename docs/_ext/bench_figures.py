"""Tables, charts and verdicts of the benchmarks page, read from ``benchmarks/results/*.json``.

Every number on ``docs/benchmarks.md`` comes from the committed results files while the site
builds: re-running a benchmark with ``--json`` rewrites its file and the next build shows it.
Files are read defensively (a field a file lacks shows as "-"), and rows of machinery that no
longer exists (GaussianNB's native kernel, its "SciPy path" twin) are left out.
"""

from __future__ import annotations

import functools
import html
import json
import re
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
from site_figures import COLORS, html_table, img, q

RESULTS = Path(__file__).resolve().parents[2] / "benchmarks" / "results"


@functools.cache
def results(name: str) -> dict:
    """``benchmarks/results/<name>.json``, or ``{}`` when the file is missing."""
    path = RESULTS / f"{name}.json"
    return json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}


def _kept(name: str) -> bool:
    """False for rows of the removed native kernel and of its "SciPy path" twin."""
    lower = name.lower()
    return "scipy path" not in lower and "native" not in lower


def _number(value):
    return value if isinstance(value, (int, float)) and np.isfinite(value) else None


def _x(value, digits=2) -> str:
    value = _number(value)
    return "-" if value is None else f"{value:.{digits}f}x"


def _ms(seconds) -> str:
    seconds = _number(seconds)
    return "-" if seconds is None else f"{seconds * 1e3:.1f}"


def _s(seconds, digits=2) -> str:
    seconds = _number(seconds)
    return "-" if seconds is None else f"{seconds:.{digits}f}"


def _count(value) -> str:
    """20000000 -> '2 x 10^7'."""
    value = _number(value)
    if not value:
        return "?"
    exponent = int(np.floor(np.log10(value)))
    mantissa = value / 10**exponent
    return f"10^{exponent}" if mantissa == 1 else f"{mantissa:g} x 10^{exponent}"


def _ratio(numerator, denominator):
    numerator, denominator = _number(numerator), _number(denominator)
    return None if numerator is None or not denominator else numerator / denominator


def _load_text(load) -> str:
    if isinstance(load, dict):
        load = load.get("start")
    if isinstance(load, (int, float)):
        return f"; load average {load:.1f} at the start"
    return f"; load average {html.escape(str(load))} at the start" if load else ""


def _versions(record) -> str:
    versions = record.get("versions") or {}
    names = ("genprob", "scikit-learn", "jax", "numpyro", "funsor", "python")
    found = [f"{name} {versions[name]}" for name in names if versions.get(name)]
    return f"; {', '.join(found)}" if found else ""


def _run_note(record, command: str) -> str:
    """Date, machine, versions and load of a run, and the command that wrote the file."""
    if not record:
        return f"<p>No results committed yet: run <code>{html.escape(command)}</code>.</p>"
    date = html.escape(str(record.get("date", "an undated run")))
    machine = html.escape(str(record.get("machine", "an unnamed machine")))
    load = record.get("load_average_1min", record.get("load at start"))
    return (
        f"<p>Run of {date} on {machine}{html.escape(_versions(record))}{_load_text(load)}. "
        f"Written by <code>{html.escape(command)}</code>.</p>"
    )


def _table(header, body) -> str:
    """``html_table`` without the columns no row measured (every cell "-")."""
    kept = [j for j in range(len(header)) if any(row[j] != "-" for row in body)]
    return html_table([header[j] for j in kept], [[row[j] for j in kept] for row in body])


# -- targets ---------------------------------------------------------------------------------


def _verdict(rows, ok, label) -> str:
    """'met by 4 of 4 rows' or 'met by 3 of 4 rows; not met by X'."""
    if not rows:
        return "no rows in the results file"
    missed = [label(r) for r in rows if not ok(r)]
    text = f"met by {len(rows) - len(missed)} of {len(rows)} rows"
    return text + (f"; not met by {', '.join(missed)}" if missed else "")


# -- closed-form fits, predictions and sparse text (bench_fit.py) -----------------------------

FIT_COMMAND = "python benchmarks/bench_fit.py --json benchmarks/results/bench_fit.json"


def fit_rows() -> list[dict]:
    return [r for r in results("bench_fit").get("rows", []) if _kept(r.get("estimator", ""))]


def _sparse(row) -> bool:
    return "sparse" in row.get("shape", "")


def _short_shape(shape: str) -> str:
    """'Gaussian family, n=1e+06, d=20, K=3' -> '10^6 x 20'; sparse corpora by name."""
    if "SMS" in shape:
        return "SMS spam"
    if "sparse" in shape:
        return "bag of words"
    found = re.search(r"n=([0-9.]+)e\+0*(\d+), d=(\d+)", shape)
    if not found:
        return shape
    mantissa, exponent, features = found.groups()
    lead = "" if float(mantissa) == 1 else f"{mantissa} x "
    return f"{lead}10^{exponent} x {features}"


def _large_closed_form(row) -> bool:
    """The rows of the 10^6 x 20 target: GaussianNB, LDA and QDA on dense rows."""
    shape = row.get("shape", "")
    return not _sparse(row) and "n=1e+06" in shape and "d=20" in shape


def fit_run() -> str:
    record = results("bench_fit")
    note = _run_note(record, FIT_COMMAND)
    if record.get("repeats"):
        note = note.replace(
            "</p>",
            f" Medians of {record['repeats']} runs per library, the two libraries in turn.</p>",
        )
    return note


def _fit_table(rows, floor: bool) -> str:
    by_shape = {}
    for row in rows:
        by_shape.setdefault(row.get("shape", "?"), []).append(row)
    parts = []
    for shape, group in by_shape.items():
        body = []
        for r in group:
            cells = [
                r.get("estimator", "?"),
                _ms(r.get("sklearn_fit_s")),
                _ms(r.get("genprob_fit_s")),
                _x(r.get("fit_speedup"), 1),
            ]
            if floor:
                cells += [
                    _ms(r.get("floor_s")),
                    _x(_ratio(r.get("genprob_fit_s"), r.get("floor_s")), 1),
                ]
            body.append(cells)
        header = ["estimator", "scikit-learn fit (ms)", "genprob fit (ms)", "speed-up"]
        if floor:
            header += ["floor (ms)", "fit / floor"]
        parts.append(f"<p><strong>{html.escape(shape)}</strong></p>")
        parts.append(_table(header, body))
    return "\n".join(parts) or "<p>No rows in the results file.</p>"


def closed_form_tables() -> str:
    """Dense fits of both libraries per data shape, with genprob's own floor."""
    return _fit_table([r for r in fit_rows() if not _sparse(r)], floor=True)


def prediction_table() -> str:
    body = [
        [
            r.get("estimator", "?"),
            _short_shape(r.get("shape", "")),
            _ms(r.get("sklearn_predict_s")),
            _ms(r.get("genprob_predict_s")),
            _x(r.get("predict_speedup"), 1),
        ]
        for r in fit_rows()
        if not _sparse(r)
    ]
    header = ["estimator", "data", "scikit-learn (ms)", "genprob (ms)", "speed-up"]
    return html_table(header, body) if body else "<p>No rows in the results file.</p>"


def sparse_table() -> str:
    body = [
        [
            r.get("estimator", "?"),
            _short_shape(r.get("shape", "")),
            _ms(r.get("sklearn_fit_s")),
            _ms(r.get("genprob_fit_s")),
            _x(r.get("fit_speedup"), 1),
            _ms(r.get("sklearn_predict_s")),
            _ms(r.get("genprob_predict_s")),
            _x(r.get("predict_speedup"), 1),
        ]
        for r in fit_rows()
        if _sparse(r)
    ]
    header = [
        "estimator",
        "data",
        "scikit-learn fit (ms)",
        "genprob fit (ms)",
        "fit speed-up",
        "scikit-learn predict (ms)",
        "genprob predict (ms)",
        "predict speed-up",
    ]
    shapes = dict.fromkeys(r.get("shape", "") for r in fit_rows() if _sparse(r))
    note = "".join(
        f"<p><em>{html.escape(_short_shape(s))}</em>: {html.escape(s)}</p>" for s in shapes
    )
    return note + html_table(header, body) if body else "<p>No rows in the results file.</p>"


def fit_chart() -> str:
    """Fit and predict_proba speed-ups per row, on a log scale, with the targets drawn."""
    rows = [r for r in fit_rows() if _number(r.get("fit_speedup"))]
    if not rows:
        return ""
    labels = [
        re.sub(
            r"10\^(\d+)",
            r"10$^{\1}$",
            f"{r.get('estimator', '?')}, {_short_shape(r.get('shape', ''))}",
        )
        for r in rows
    ]
    fig, ax = plt.subplots(figsize=(10, 3.8))
    x = np.arange(len(rows))
    ax.bar(x - 0.2, [r["fit_speedup"] for r in rows], 0.4, color=COLORS[0], label="fit")
    predict = [_number(r.get("predict_speedup")) or 0 for r in rows]
    ax.bar(x + 0.2, predict, 0.4, color=COLORS[1], label="predict_proba")
    ax.axhline(1, color="k", lw=0.8, label="as fast as scikit-learn")
    large = [i for i, r in enumerate(rows) if _large_closed_form(r)]
    if large:
        ax.hlines(3, min(large) - 0.45, max(large) + 0.45, colors="k", linestyles="--", lw=0.8)
        ax.text(
            min(large) - 0.45,
            3.15,
            "fit target at 10$^6$ x 20 (3x)",
            va="bottom",
            fontsize=7,
            bbox={"fc": "white", "ec": "none", "pad": 1},
        )
    ax.set(yscale="log", ylabel="speed-up over scikit-learn\n(above 1: genprob faster)")
    ax.set_xticks(x)
    ax.set_xticklabels(labels, fontsize=7, rotation=30, ha="right")
    ax.legend(fontsize=7, loc="upper right")
    return img(fig, "Speed-up of genprob over scikit-learn per estimator and data set")


# -- cold processes, refits, grid searches, EM, CLI (bench_cold.py) ---------------------------

COLD_COMMAND = "python benchmarks/bench_cold.py --json benchmarks/results/bench_cold.json"
WARM, OFF = "genprob, warm cache", "genprob, no cache"
#: what each section of the page shows: rows whose "work" starts with the prefix
COLD_SECTIONS = {
    "cold": ("cold import+fit+predict_proba",),
    "refit": ("refit",),
    "grid": ("GridSearchCV",),
    "em": ("semi-supervised",),
    "cli": ("genprob ",),
}


def cold_run() -> dict:
    """The latest run of the current code (label "after"), else the last run of the file."""
    runs = results("bench_cold").get("runs", [])
    current = [r for r in runs if r.get("label") == "after"]
    return (current or runs or [{}])[-1]


def cold_rows(section: str) -> list[dict]:
    prefixes = COLD_SECTIONS[section]
    return [
        r
        for r in cold_run().get("rows", [])
        if r.get("work", "").startswith(prefixes) and _kept(r["work"])
    ]


def _cold_ratio(row, key):
    return _number(row.get(f"ratio {key}")) or _ratio(row.get(key), row.get("sklearn"))


def _cold_value(row, key) -> str:
    value = _number(row.get(key))
    if value is None:
        return "-"
    return f"{value * 1e3:.1f} ms" if row.get("unit") == "ms" or value < 1 else f"{value:.2f} s"


def cold_run_note() -> str:
    run = cold_run()
    note = _run_note(run, COLD_COMMAND)
    if run.get("repeats"):
        note = note.replace(
            "</p>", f" Medians of {run['repeats']} fresh processes or repeats per cell.</p>"
        )
    return note


def cold_table(section: str) -> str:
    """One section's rows: scikit-learn, genprob with its cache warm and off, and the floor."""
    rows = cold_rows(section)
    if not rows:
        return "<p>No rows in the results file.</p>"
    floors = [k for r in rows for k in r if k.startswith("floor")]
    prefix = COLD_SECTIONS[section][0]
    body = []
    for r in rows:
        work = r["work"][len(prefix) :].lstrip(" ,") if section == "cold" else r["work"]
        floor = next((k for k in r if k.startswith("floor")), None)
        ratio = _number(r.get("warm cache / floor")) or _ratio(r.get(WARM), r.get(floor))
        body.append(
            [
                work,
                _cold_value(r, "sklearn"),
                _cold_value(r, WARM),
                _x(_cold_ratio(r, WARM)),
                _cold_value(r, OFF),
                _x(_cold_ratio(r, OFF)),
                "-" if floor is None else _cold_value(r, floor),
                "-" if floor is None else _x(ratio),
            ]
        )
    floor_name = floors[0].replace("floor (", "").rstrip(")") if floors else ""
    header = [
        "work" if section != "cold" else "data, estimator",
        "scikit-learn",
        "genprob, cache warm",
        "warm / scikit-learn",
        "genprob, cache off",
        "off / scikit-learn",
        f"floor: {floor_name}",
        "warm / floor",
    ]
    # scikit-learn has no semi-supervised fit, a refit has no cache setting, ...
    return _table(header, body)


def cold_chart() -> str:
    """genprob's time over scikit-learn's for the cold, refit and grid rows, targets marked."""
    groups = [
        ("cold start", _cold_target_rows("cold"), 1.5),
        ("refit", _cold_target_rows("refit"), 2.0),
        ("grid search", _cold_target_rows("grid"), 1.5),
    ]
    bars = [(name, r, limit) for name, rows, limit in groups for r in rows]
    if not bars:
        return ""
    fig, ax = plt.subplots(figsize=(10, 0.28 * len(bars) + 0.9))
    y = np.arange(len(bars))[::-1]
    for i, (name, row, limit) in enumerate(bars):
        color = COLORS[[g[0] for g in groups].index(name)]
        ax.barh(y[i], _cold_worst(row), 0.7, color=color)
        ax.vlines(limit, y[i] - 0.45, y[i] + 0.45, colors="k", lw=1.2)
    ax.axvline(1, color="k", lw=0.6, ls=":")
    ax.set_yticks(y)
    ax.set_yticklabels([r["work"] for _, r, _ in bars], fontsize=7)
    ax.set_xlabel("genprob's time / scikit-learn's (below 1: genprob faster; black ticks: targets)")
    for name, color in zip([g[0] for g in groups], COLORS, strict=False):
        ax.barh(0, 0, color=color, label=name)
    ax.legend(fontsize=7, loc="lower right")
    return img(fig, "genprob's time relative to scikit-learn's for cold starts, refits and grids")


def _cold_worst(row) -> float:
    """The slower of genprob's two cache settings, against scikit-learn."""
    ratios = [_cold_ratio(row, key) for key in (WARM, OFF)]
    return max((r for r in ratios if r is not None), default=np.nan)


def _cold_target_rows(section: str) -> list[dict]:
    """The rows a target speaks of: refits with a new hyperparameter, grids in a fresh process."""
    rows = [r for r in cold_rows(section) if r.get("sklearn")]
    if section == "refit":
        rows = [r for r in rows if "row count" not in r["work"]]
    if section == "grid":
        rows = [r for r in rows if "again" not in r["work"]]
    return rows


# -- the targets at a glance ----------------------------------------------------------------


def _targets():
    """(target, peer and data, rows, ok, measured cell) per target of the issue."""

    def cold(section, limit):
        rows = _cold_target_rows(section)
        worst = max((_cold_worst(r) for r in rows), default=None)
        return rows, (lambda r: _cold_worst(r) <= limit), _x(worst), (lambda r: r["work"])

    def name(r):
        return f"{r.get('estimator', '?')} ({_short_shape(r.get('shape', ''))})"

    dense = [r for r in fit_rows() if not _sparse(r)]
    large = [r for r in dense if _large_closed_form(r)]
    sparse = [r for r in fit_rows() if _sparse(r)]

    def speedups(rows, keys, limit):
        values = [_number(r.get(k)) for r in rows for k in keys]
        values = [v for v in values if v is not None]
        ok = lambda r: all((_number(r.get(k)) or 0) >= limit for k in keys)  # noqa: E731
        return rows, ok, _x(min(values, default=None), 1), name

    return [
        (
            "cold import + fit + predict_proba, fresh process",
            "at most 1.5x scikit-learn's time",
            cold("cold", 1.5),
        ),
        (
            "refit with a new hyperparameter value",
            "at most 2x scikit-learn's time",
            cold("refit", 2.0),
        ),
        ("GridSearchCV in a fresh process", "at most 1.5x scikit-learn's time", cold("grid", 1.5)),
        (
            "closed-form fits at 10^6 x 20 (GaussianNB, LDA, QDA)",
            "at least 3x faster than scikit-learn",
            speedups(large, ["fit_speedup"], 3),
        ),
        (
            "predict_proba, dense rows",
            "at least as fast as scikit-learn",
            speedups(dense, ["predict_speedup"], 1),
        ),
        (
            "sparse text: fit and predict_proba",
            "at least as fast as scikit-learn",
            speedups(sparse, ["fit_speedup", "predict_speedup"], 1),
        ),
        (
            "first calls in a fresh process (sample, EM, crosscheck, a story's fit, check)",
            "each against its floor or peer (section below)",
            (
                results("bench_first_calls").get("targets", []),
                lambda t: t["met"],
                "-",
                lambda t: t["call"],
            ),
        ),
    ]


def targets_table() -> str:
    """Each target, the worst row against it, and how many rows meet it."""
    body = []
    for what, target, (rows, ok, worst, label) in _targets():
        body.append([what, target, worst, _verdict(rows, ok, label)])
    header = ["what (both libraries in the same run)", "target", "worst row", "verdict"]
    note = (
        "<p>Times (first three rows) are genprob's over scikit-learn's, the slower of genprob's "
        "two cache settings; speed-ups (next three) are scikit-learn's time over genprob's; the "
        "last row counts the first-call targets of its section.</p>"
    )
    return html_table(header, body) + note


def target_verdict(index: int) -> str:
    """The verdict of one target, for the section that shows its rows."""
    what, target, (rows, ok, worst, label) = _targets()[index]
    return (
        f"<p><strong>Target: {html.escape(target)}</strong> ({html.escape(what)}): "
        f"{html.escape(_verdict(rows, ok, label))}"
        + ("." if worst == "-" else f"; worst row {q(worst)}.")
        + "</p>"
    )


# -- NUTS on partly labeled data (bench_enumerated.py) --------------------------------------

NUTS_COMMAND = (
    "python benchmarks/bench_enumerated.py --json benchmarks/results/bench_enumerated.json"
)
NUTS_STORIES = {"gaussian-nb": "Gaussian NB (diag, per class)", "bernoulli-nb": "Bernoulli NB"}


def nuts_run() -> str:
    b = results("bench_enumerated")
    note = _run_note(b, NUTS_COMMAND)
    s = b.get("settings") or {}
    if s:
        detail = (
            f" Data: n = {s.get('n')}, D = {s.get('features')}, K = {s.get('classes')}, "
            f"{s.get('unlabeled', 0):.0%} of the labels hidden; {s.get('warmup')} warm-up + "
            f"{s.get('samples')} draws, {s.get('chains')} chain, seed {s.get('seed')}; medians "
            f"of {s.get('repeats')} runs of each program"
            + (" (a --quick smoke run, not the default settings)" if b.get("quick") else "")
            + ".</p>"
        )
        note = note.replace("</p>", detail)
    return note


def nuts_table() -> str:
    body = []
    for r in results("bench_enumerated").get("rows", []):
        ours, theirs = r.get("genprob") or {}, r.get("enumerated") or {}
        body.append(
            [
                NUTS_STORIES.get(r.get("story"), r.get("story", "?")),
                _x(_ratio(ours.get("ess_min_per_s"), theirs.get("ess_min_per_s"))),
                _x(_ratio(ours.get("ess_median_per_s"), theirs.get("ess_median_per_s"))),
                f"{_s(ours.get('sampling_s'), 1)} s / {_s(theirs.get('sampling_s'), 1)} s",
                f"{_s(ours.get('total_s'), 1)} s / {_s(theirs.get('total_s'), 1)} s",
                f"{_s(r.get('max_mean_difference'), 4)}",
            ]
        )
    header = [
        "story",
        "min bulk ESS/s, genprob / enumerated",
        "median bulk ESS/s, genprob / enumerated",
        "sampling time, genprob / enumerated",
        "whole run, genprob / enumerated",
        "largest difference of posterior means",
    ]
    if not body:
        return "<p>No rows in the results file.</p>"
    ratios = [row[1] for row in body if row[1] != "-"]
    text = ""
    if ratios:
        low, high = (
            min(ratios, key=lambda c: float(c[:-1])),
            max(ratios, key=lambda c: float(c[:-1])),
        )
        text = (
            f"<p>genprob's model gives {q(low)} to {q(high)} the minimum bulk ESS per second of "
            "sampling of the enumerated program (target: 2x).</p>"
        )
    return html_table(header, body) + text


# -- wide LDA (bench_wide.py) ---------------------------------------------------------------

WIDE_COMMAND = (
    "python benchmarks/bench_wide.py --features 2000 5000 --solvers svd lsqr-0.2 lsqr-auto "
    "--json benchmarks/results/bench_wide.json"
)


def wide_run() -> str:
    return _run_note(results("bench_wide"), WIDE_COMMAND)


def wide_table() -> str:
    body = []
    for r in results("bench_wide").get("rows", []):
        body.append(
            [
                r.get("features", "?"),
                r.get("solver", "?"),
                _s(r.get("fit_s")),
                _s(r.get("refit_s")),
                _s(r.get("sklearn_fit_s")),
                _x(_ratio(r.get("refit_s"), r.get("sklearn_fit_s")), 1),
                _x(_ratio(r.get("refit_s"), r.get("gram_s")), 1),
                _ms(r.get("predict_s")),
                _ms(r.get("sklearn_predict_s")),
                _s(r.get("file_mb"), 1),
            ]
        )
    header = [
        "D",
        "solver",
        "first fit (s)",
        "refit (s)",
        "scikit-learn fit (s)",
        "refit / scikit-learn",
        "refit / floor",
        "predict_proba, 10 rows (ms)",
        "scikit-learn (ms)",
        "model file (MB)",
    ]
    return html_table(header, body) if body else "<p>No rows in the results file.</p>"


# -- scaling out (bench_scaling.py) ---------------------------------------------------------

SCALING_COMMAND = "python benchmarks/bench_scaling.py --json benchmarks/results/bench_scaling.json"


def scaling_run() -> str:
    return _run_note(results("bench_scaling"), SCALING_COMMAND)


def scaling_tables() -> str:
    record = results("bench_scaling")
    parts = []
    stream = record.get("stream") or {}
    if stream.get("rows"):
        parts.append(
            f"<p><strong>Streaming fit over Parquet</strong>: {_count(stream.get('rows_total'))} "
            f"x {stream.get('features', '?')} float32 rows, batches of "
            f"{stream.get('batch_rows', 0):,} rows; run of "
            f"{html.escape(str(stream.get('date', '?')))}"
            f"{_load_text(stream.get('load_average_1min'))}"
            ".</p>"
        )
        body = [
            [
                r.get("fit", "?"),
                _s(r.get("time_s"), 1),
                f"{_number(r.get('rows_per_s')) or 0:,.0f}",
                _s(r.get("peak_rss_gib")),
                _s(r.get("rss_before_gib")),
            ]
            for r in stream["rows"]
        ]
        parts.append(
            html_table(["fit", "time (s)", "rows/s", "peak RSS (GiB)", "RSS before (GiB)"], body)
        )
    dask = record.get("dask") or {}
    if dask.get("rows"):
        parts.append(
            f"<p><strong>Dask LocalCluster</strong>: {_count(dask.get('rows_total'))} x "
            f"{dask.get('features', '?')} float32 rows in blocks of "
            f"{dask.get('chunk_rows', 0):,}, one thread per worker process; run of "
            f"{html.escape(str(dask.get('date', '?')))}"
            f"{_load_text(dask.get('load_average_1min'))}.</p>"
        )
        body = [
            [
                r.get("fit", "?"),
                _s(r.get("one_worker_s")),
                _s(r.get("two_workers_s")),
                _x(_ratio(r.get("one_worker_s"), r.get("two_workers_s"))),
                f"{_number(_ratio(dask.get('rows_total'), r.get('two_workers_s'))) or 0:,.0f}",
            ]
            for r in dask["rows"]
        ]
        parts.append(
            html_table(["fit", "1 worker (s)", "2 workers (s)", "speed-up", "rows/s (2)"], body)
        )
    return "\n".join(parts) or "<p>No results committed yet.</p>"


# -- Posteriors against PyMC + nutpie (bench_nuts.py) ------------------------------------------

POSTERIOR_COMMAND = (
    "python benchmarks/bench_nuts.py --cli --json benchmarks/results/bench_nuts.json"
)


def posterior_run() -> str:
    return _run_note(results("bench_nuts"), POSTERIOR_COMMAND)


def posterior_table() -> str:
    b = results("bench_nuts")
    body = []
    for r in b.get("rows", []):
        for call in ("first", "repeat"):
            c = r.get(call) or {}
            body.append(
                [
                    f"{r.get('n')}",
                    call,
                    f"{_s(c.get('genprob_s'), 1)} s / {_s(c.get('nutpie_s'), 1)} s",
                    f"{_s(c.get('genprob_ess_per_s'), 1)} / {_s(c.get('nutpie_ess_per_s'), 1)}",
                    _x(c.get("ess_per_s_ratio")),
                    f"{_s(c.get('means_apart_in_mcse'), 1)}",
                    f"{_x(c.get('blackjax_vs_genprob_ess_per_s'))} / "
                    f"{_x(c.get('nutpie_density_vs_genprob_ess_per_s'))}",
                ]
            )
    if not body:
        return "<p>No rows in the results file.</p>"
    header = [
        "n",
        "call",
        "wall time, genprob / nutpie",
        "min bulk ESS per s, genprob / nutpie",
        "ESS/s ratio",
        "largest gap of posterior means (MCSE)",
        "ESS/s of BlackJAX / nutpie on genprob's density, over genprob's NumPyro",
    ]
    table = _table(header, body)
    cli = b.get("cli") or {}
    lines = "".join(
        f"<li><code>genprob {html.escape(k)}</code>: {_s(v.get('seconds'), 1)} s</li>"
        for k, v in cli.items()
    )
    return table + (f"<ul>{lines}</ul>" if lines else "")


# -- first calls in a fresh process (bench_first_calls.py) ----------------------------------


FIRST_COMMAND = (
    "python benchmarks/bench_first_calls.py --json benchmarks/results/bench_first_calls.json"
)


def first_calls_table() -> str:
    """Each first call, cold and warm, beside its floor and peer, then each target's verdict."""
    record = results("bench_first_calls")
    note = _run_note(record, FIRST_COMMAND)
    if record.get("note"):
        note += f"<p>{html.escape(record['note'])}</p>"
    rows = record.get("rows", [])
    if not rows:
        return note
    header = [
        "first call (fresh process)",
        "cold",
        "warm cache",
        "floor",
        "peer",
        "peer cold",
        "peer warm",
        "refit",
        "peer refit",
        "refit, new rows",
        "peer, new rows",
    ]
    body = []
    for row in rows:
        body.append(
            [
                row["call"],
                _s(row.get("cold")),
                _s(row.get("warm")),
                _s(row.get("floor")),
                row.get("peer") or "-",
                _s(row.get("peer cold")) if row.get("peer") else "-",
                _s(row.get("peer warm")) if row.get("peer") else "-",
                _s(row["warm refit"]) if "warm refit" in row else "-",
                _s(row["peer warm refit"]) if "peer warm refit" in row else "-",
                _s(row["cold new rows"]) if "cold new rows" in row else "-",
                _s(row["peer cold new rows"]) if "peer cold new rows" in row else "-",
            ]
        )
    verdicts = [
        [
            t["call"],
            t["target"],
            f"{t['measure']} = {t['value']:.2f}",
            "met" if t["met"] else "not met",
        ]
        for t in record.get("targets", [])
    ]
    return (
        note
        + _table(header, body)
        + html_table(["call", "target", "measured", "verdict"], verdicts)
    )


# -- fits beside a busy core (bench_fit.py --only busy) --------------------------------------


BUSY_COMMAND = (
    "python benchmarks/bench_fit.py --only busy --json benchmarks/results/bench_fit_busy.json"
)


def busy_table() -> str:
    """Closed-form fits on digits beside a busy core, each beside scikit-learn's."""
    record = results("bench_fit_busy")
    body = [
        [
            row["estimator"],
            _ms(row["sklearn fit"]),
            _ms(row["genprob fit"]),
            _x(row["genprob / sklearn"]),
        ]
        for row in record.get("busy", [])
    ]
    header = ["fit on digits, other core busy", "scikit-learn (ms)", "genprob (ms)", "ratio"]
    return _run_note(record, BUSY_COMMAND) + (_table(header, body) if body else "")


# -- model-based classification against R's mclust (bench_mclust.py) ------------------------

MCLUST_COMMANDS = {
    "bench_mclust": "R_LIBS=DIR python benchmarks/bench_mclust.py --json "
    "benchmarks/results/bench_mclust.json",
    "bench_mclust_tol": "R_LIBS=DIR python benchmarks/bench_mclust.py --em-tol 1e-5 "
    "--cases iris,digits --json benchmarks/results/bench_mclust_tol.json",
}
MCLUST_CASES = {
    "iris": "iris MclustDA, 14 structures x G 1-3",
    "wine": "wine EDDA, the 14 structures one by one",
    "digits": "digits PCA-10 MclustDA, 14 structures x G 1-3",
}


def mclust_run(name: str = "bench_mclust") -> str:
    record = results(name)
    note = _run_note(record, MCLUST_COMMANDS[name])
    if record.get("mclust"):
        note += f"<p>mclust {html.escape(str(record['mclust']))}, {record.get('repeats')} runs.</p>"
    return note


def mclust_table(name: str = "bench_mclust") -> str:
    body = []
    for r in results(name).get("rows", []):
        first = _ratio(r.get("first_s"), r.get("mclust_s"))
        refit = _ratio(r.get("refit_s"), r.get("mclust_s"))
        target = _number(r.get("target"))
        met = "-" if first is None or target is None else ("yes" if first <= target else "no")
        body.append(
            [
                MCLUST_CASES.get(r.get("case"), r.get("case", "?")),
                _s(r.get("first_s")),
                _s(r.get("refit_s")),
                _s(r.get("mclust_s"), 3),
                _x(first, 1),
                _x(refit, 1),
                _x(target, 0),
                met,
            ]
        )
    header = [
        "case",
        "genprob first fit (s)",
        "refit (s)",
        "mclust (s)",
        "first / mclust",
        "refit / mclust",
        "target",
        "met",
    ]
    return _table(header, body) if body else "<p>No rows in the results file.</p>"
