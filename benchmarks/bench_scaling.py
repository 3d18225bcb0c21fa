"""Scaling out: a streaming fit over Parquet in constant memory, and fits on a Dask LocalCluster.

Part 1 writes a float32 Parquet data set chunk by chunk (default 1e8 rows x 20 features, about
8 GB; deleted afterwards), fits GaussianNB and LDA on it batch by batch, and reports rows/s and
the peak resident memory of the fit (target < 2 GiB).

Part 2 starts a LocalCluster with 1 and then 2 worker processes (one thread each) on a Dask
array (default 2e7 x 20, persisted in the workers' memory before the clock starts) and times the
fit of GaussianNB, LDA, QDA and semi-supervised EM; GaussianNB runs beside dask-ml's GaussianNB
on the same array when dask-ml is installed (``pip install 'genprob[bench]'``).

Usage: python benchmarks/bench_scaling.py [--stream-rows 1e8] [--dask-rows 2e7] [--skip-stream]
[--json benchmarks/results/bench_scaling.json] (the docs read the JSON file; a part skipped keeps
the results it had there)
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

FEATURES = 20
CLASSES = 3


def _peak_rss_reset():
    """Reset the kernel's peak-RSS counter (Linux); False when it cannot be reset."""
    try:
        with open("/proc/self/clear_refs", "w") as handle:
            handle.write("5")
        return True
    except OSError:
        return False


def _rss_bytes() -> int:
    try:
        with open("/proc/self/status") as handle:
            for line in handle:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def _peak_rss_bytes() -> int:
    try:
        with open("/proc/self/status") as handle:
            for line in handle:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def _chunk(rng, rows, unlabeled=0.0):
    y = rng.integers(0, CLASSES, size=rows)
    X = rng.standard_normal((rows, FEATURES), dtype=np.float32)
    X += (y[:, None] * np.linspace(0.2, 1.0, FEATURES, dtype=np.float32)).astype(np.float32)
    labels = y.astype(np.int64)
    if unlabeled:
        labels[rng.random(rows) < unlabeled] = -1
    return X, labels


def write_parquet(directory, rows, chunk_rows, seed=0, unlabeled=0.5):
    """A float32 Parquet data set written chunk by chunk (one file per chunk)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(seed)
    names = [f"x{j}" for j in range(FEATURES)]
    done, index = 0, 0
    while done < rows:
        n = min(chunk_rows, rows - done)
        X, labels = _chunk(rng, n, unlabeled)
        table = pa.table({**{name: X[:, j] for j, name in enumerate(names)}, "label": labels})
        pq.write_table(table, os.path.join(directory, f"part-{index:05d}.parquet"))
        done, index = done + n, index + 1


def bench_stream(rows, chunk_rows):
    from genprob import GaussianNB, LinearDiscriminantAnalysis
    from genprob.engine import streaming

    directory = tempfile.mkdtemp(prefix="genprob-bench-scaling-")
    try:
        start = time.perf_counter()
        write_parquet(directory, rows, chunk_rows, unlabeled=0.0)
        written = time.perf_counter() - start
        size = sum(os.path.getsize(os.path.join(directory, f)) for f in os.listdir(directory))
        print(
            f"wrote {rows:.3g} x {FEATURES} float32 rows ({size / 2**30:.2f} GiB) "
            f"in {written:.0f} s"
        )
        results = []
        first = os.path.join(directory, sorted(os.listdir(directory))[0])
        for label, make in (
            ("GaussianNB", GaussianNB),
            ("LDA", LinearDiscriminantAnalysis),
        ):
            # warm-up on the first file: JAX compiles the chunk shapes once, outside the clock
            make().fit(
                streaming.parquet(first, target="label", batch_size=chunk_rows), classes=[0, 1, 2]
            )
            source = streaming.parquet(directory, target="label", batch_size=chunk_rows)
            exact = _peak_rss_reset()
            baseline = _rss_bytes()
            start = time.perf_counter()
            make().fit(source, classes=list(range(CLASSES)))
            elapsed = time.perf_counter() - start
            results.append((label, elapsed, _peak_rss_bytes(), exact, baseline))
        print(f"\nStreaming fit over Parquet ({rows:.3g} rows, batches of {chunk_rows:,} rows)")
        print(f"{'fit':12s} {'time':>9s} {'rows/s':>12s} {'peak RSS':>10s} {'RSS before':>11s}")
        for label, elapsed, peak, exact, baseline in results:
            note = "" if exact else " (process peak)"
            print(
                f"{label:12s} {elapsed:8.1f}s {rows / elapsed:12,.0f} {peak / 2**30:6.2f} GiB "
                f"{baseline / 2**30:7.2f} GiB{note}"
            )
            if peak >= 2 * 2**30:
                print("  ^ peak RSS above the 2 GiB target")
    finally:
        shutil.rmtree(directory, ignore_errors=True)
    return {
        "rows_total": rows,
        "features": FEATURES,
        "batch_rows": chunk_rows,
        "load_average_1min": os.getloadavg()[0],
        "rows": [
            {
                "fit": label,
                "time_s": elapsed,
                "rows_per_s": rows / elapsed,
                "peak_rss_gib": peak / 2**30,
                "rss_before_gib": baseline / 2**30,
            }
            for label, elapsed, peak, _, baseline in results
        ],
    }


def _time(function, repeat=2):
    """Best of ``repeat`` wall-clock timings (the first call also warms the workers' JIT)."""
    best = np.inf
    for _ in range(repeat):
        start = time.perf_counter()
        function()
        best = min(best, time.perf_counter() - start)
    return best


def _dask_cases(X, y, unlabeled):
    """Fits timed on the cluster: genprob's, and dask-ml's GaussianNB when it is installed."""
    from genprob import GaussianNB, LinearDiscriminantAnalysis, QuadraticDiscriminantAnalysis

    classes = list(range(CLASSES))
    cases = {
        "genprob GaussianNB": lambda: GaussianNB().fit(X, y, classes=classes),
        "genprob LDA": lambda: LinearDiscriminantAnalysis().fit(X, y, classes=classes),
        "genprob QDA": lambda: QuadraticDiscriminantAnalysis().fit(X, y, classes=classes),
        "genprob GaussianNB EM (3 it.)": lambda: GaussianNB(max_iter=3).fit(
            X, unlabeled, classes=classes
        ),
    }
    try:
        from dask_ml.naive_bayes import GaussianNB as DaskMLGaussianNB
    except ImportError:
        print("dask-ml is not installed (pip install 'genprob[bench]'): no peer timing.")
    else:

        def dask_ml_fit():
            import dask

            model = DaskMLGaussianNB(classes=classes).fit(X, y)
            # dask-ml's fit only builds the task graph: compute what genprob's fit returns
            dask.compute(model.theta_, model.sigma_, model.class_count_)

        cases["dask-ml GaussianNB"] = dask_ml_fit
    return cases


def bench_dask(rows, chunk_rows):
    import dask.array as da
    from distributed import Client, LocalCluster

    timings = {}
    for workers in (1, 2):
        with (
            LocalCluster(
                n_workers=workers,
                threads_per_worker=1,
                processes=True,
                dashboard_address=None,
                host="127.0.0.1",
            ) as cluster,
            Client(cluster) as client,
        ):
            rng = da.random.default_rng(0)
            y = rng.integers(0, CLASSES, size=rows, chunks=chunk_rows)
            X = rng.standard_normal((rows, FEATURES), chunks=(chunk_rows, FEATURES))
            X = (X + y[:, None] * 0.5).astype(np.float32)
            unlabeled = da.where(rng.random(rows, chunks=chunk_rows) < 0.5, -1, y)
            X, y, unlabeled = client.persist([X, y, unlabeled])
            client.wait_for_workers(workers)
            from distributed import wait

            wait([X, y, unlabeled])
            cases = _dask_cases(X, y, unlabeled)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                for name, function in cases.items():
                    timings[name, workers] = _time(function)
    print(f"\nDask LocalCluster, {rows:.3g} x {FEATURES} float32 rows, blocks of {chunk_rows:,}")
    print(f"{'fit':32s} {'1 worker':>10s} {'2 workers':>10s} {'speed-up':>9s} {'rows/s (2)':>12s}")
    for name in dict.fromkeys(n for n, _ in timings):
        one, two = timings[name, 1], timings[name, 2]
        print(f"{name:32s} {one:9.2f}s {two:9.2f}s {one / two:8.2f}x {rows / two:12,.0f}")
    print(
        f"\nThis machine has {os.cpu_count()} cores, shared with other jobs (load average "
        f"{os.getloadavg()[0]:.1f}): two worker processes plus the scheduler and this driver "
        f"compete for them, so the 2-worker speed-up is bounded by the cores actually free."
    )
    return {
        "rows_total": rows,
        "features": FEATURES,
        "chunk_rows": chunk_rows,
        "load_average_1min": os.getloadavg()[0],
        "rows": [
            {"fit": name, "one_worker_s": timings[name, 1], "two_workers_s": timings[name, 2]}
            for name in dict.fromkeys(n for n, _ in timings)
        ],
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stream-rows", type=float, default=1e8)
    parser.add_argument("--stream-chunk", type=int, default=250_000)
    parser.add_argument("--dask-rows", type=float, default=2e7)
    parser.add_argument("--dask-chunk", type=int, default=1_000_000)
    parser.add_argument("--skip-stream", action="store_true")
    parser.add_argument("--skip-dask", action="store_true")
    parser.add_argument("--json", help="also write the results here (the docs read it)")
    args = parser.parse_args()
    from _run_info import machine, run_date

    record = {"date": run_date(), "machine": machine()}
    if not args.skip_stream:
        record["stream"] = {"date": record["date"]}
        record["stream"].update(bench_stream(int(args.stream_rows), args.stream_chunk))
    if not args.skip_dask:
        record["dask"] = {"date": record["date"]}
        record["dask"].update(bench_dask(int(args.dask_rows), args.dask_chunk))
    if args.json:
        path = Path(args.json)
        previous = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
        path.write_text(json.dumps({**previous, **record}, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
