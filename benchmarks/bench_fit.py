"""Closed-form fit and predict speed of genprob against scikit-learn, in the same run.

For each shape it times (median of ``--repeats`` runs, after one warm-up run that also pays JAX's
compilation):

* ``sklearn fit`` / ``genprob fit``: the estimators' ``fit`` end to end (input validation, label
  encoding and the closed form);
* ``core fit``: ``genprob.core.fit_closed_form`` on the arrays as the estimator hands them
  over (NumPy rows and the labels' dense one-hot responsibilities: these sizes' statistics are
  computed on the host), the part the closed form itself costs;
* ``floor``: the least the fit must do, its own floor: one ``X.T @ X`` for LDA and QDA (the
  faster of NumPy's and a jitted one), one NumPy pass over X (its column sums) for Gaussian
  naive Bayes, one SciPy product ``X.T @ R`` for the sparse naive Bayes fits;
* predict_proba for both libraries.
* ``--only busy``: GaussianNB, QDA and MultinomialNB fits on digits while a second process keeps
  the other core busy (``yes``), paired with scikit-learn's (``busy`` in the JSON file).

Ratios printed: ``speedup = sklearn / genprob`` (fit and predict; scikit-learn and genprob run in
turn and the speed-up is the median of the pairwise ratios, which keeps it meaningful on a busy
machine), ``core/floor`` and ``fit/floor`` (end-to-end fit against the floor).

Sparse text: the SMS Spam Collection shipped with genprob (``CountVectorizer`` counts) and a
synthetic 1e5 x 5e4 bag of words with ~4e6 non-zeros. The SMS models are fitted on
``fit_transform``'s matrix and predict on ``transform``'s, as a fitted vectorizer serves new
texts (the same counts; ``fit_transform`` leaves each row's columns unsorted, and an unsorted
matrix costs genprob a duplicate check, a conversion to CSC, about a third of a warm call).

Usage::

    python benchmarks/bench_fit.py            # the published shapes (1e6 x 20, 1e5 x 50)
    python benchmarks/bench_fit.py --quick    # small shapes, for a smoke run
    python benchmarks/bench_fit.py --only busy --json benchmarks/results/bench_fit_busy.json
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import jax
import jax.numpy as jnp
import numpy as np
import scipy.sparse as sp
import sklearn
import sklearn.discriminant_analysis as skda
import sklearn.naive_bayes as sknb

import genprob
from genprob import core
from genprob.engine import execution


def timed(function, repeats: int) -> float:
    """Median wall time of ``function()`` over ``repeats`` runs, after one warm-up run."""
    function()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        function()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


#: Seconds between the runs of a pair: OpenBLAS's threads keep spinning for a while after a
#: call, and on 2 cores the next run would share them with the previous one's threads
#: (genprob's LDA fit at 1e6 x 20 right after scikit-learn's svd fit: 107 ms; 0.3 s later: 58).
SETTLE = 0.3
#: Seconds under which a warm-up pair counts as short (more pairs, see :func:`timed_pair`)
SHORT_CALL = 0.02


def settle(seconds: float = SETTLE) -> None:
    """Wait ``seconds`` with this thread busy, as a program between two calls is.

    Not ``time.sleep``: with both vCPUs of this machine idle for 0.3 s, a pass on two threads
    that follows runs erratically slower (GaussianNB's 1e6 x 20 moments: 20 to 21 ms back to
    back or after Python work, 23 to 41 ms after an idle sleep), as if the two came back on
    shared hardware. The helper threads of the previous call's BLAS sleep either way.
    """
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


def timed_pair(reference, candidate, repeats: int):
    """Medians of two functions run in turn (A B A B ...) and the median of the pairwise ratios.

    Pairing keeps ``reference / candidate`` meaningful when the machine's speed drifts (other
    jobs on the same cores): both runs of a pair see about the same conditions. Each run starts
    ``SETTLE`` seconds after the previous one, when the other's BLAS threads sleep. Calls of a
    few milliseconds, whose single runs scatter most, get five times as many pairs.
    """
    start = time.perf_counter()
    reference()
    candidate()
    if time.perf_counter() - start < SHORT_CALL:
        repeats *= 5
    first, second, ratios = [], [], []
    for _ in range(repeats):
        settle()
        start = time.perf_counter()
        reference()
        middle = time.perf_counter()
        settle()
        resumed = time.perf_counter()
        candidate()
        end = time.perf_counter()
        first.append(middle - start)
        second.append(end - resumed)
        ratios.append((middle - start) / (end - resumed))
    return statistics.median(first), statistics.median(second), statistics.median(ratios)


def gaussian_data(n, d, k, seed=0):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, k, size=n)
    centers = rng.normal(scale=2.0, size=(k, d))
    mixing = rng.normal(size=(d, d)) / np.sqrt(d) + np.eye(d)
    X = centers[y] + rng.normal(size=(n, d)) @ mixing
    return X, y


def bag_of_words(n_docs, vocabulary, words_per_doc, seed=0):
    """Synthetic sparse counts: two classes with different Zipf-like word distributions."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, size=n_docs)
    ranks = np.arange(1, vocabulary + 1)
    base = 1.0 / ranks
    profiles = np.stack([base, base * rng.gamma(2.0, 0.5, size=vocabulary)])
    profiles /= profiles.sum(axis=1, keepdims=True)
    words = np.empty((n_docs, words_per_doc), dtype=np.int64)
    for label, profile in enumerate(profiles):
        members = y == label
        words[members] = rng.choice(vocabulary, size=(members.sum(), words_per_doc), p=profile)
    rows = np.repeat(np.arange(n_docs), words_per_doc)
    cols = words.ravel()
    X = sp.csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(n_docs, vocabulary))
    X.sum_duplicates()
    return X, y


#: Every printed row, for ``--json`` (the documentation's benchmark tables and chart read it).
RESULTS = []


def row(name, fit, core_fit, floor, predict, floor_kind="X^T X"):
    """One table line; ``fit`` and ``predict`` are ``timed_pair(sklearn, genprob)`` results."""
    (sk_fit, gp_fit, fit_speedup), (sk_pred, gp_pred, pred_speedup) = fit, predict
    RESULTS.append(
        {
            "shape": SHAPE[0],
            "estimator": name,
            "sklearn_fit_s": sk_fit,
            "genprob_fit_s": gp_fit,
            "fit_speedup": fit_speedup,
            "core_s": core_fit,
            "floor_s": floor,
            "floor_kind": floor_kind,
            "fit_over_floor": gp_fit / floor,
            "sklearn_predict_s": sk_pred,
            "genprob_predict_s": gp_pred,
            "predict_speedup": pred_speedup,
        }
    )
    core_cell = f"{core_fit * 1e3:9.1f}" if core_fit is not None else f"{'-':>9}"
    ratio_cell = f"{core_fit / floor:9.1f}" if core_fit is not None else f"{'-':>9}"
    print(
        f"{name:<26}{sk_fit * 1e3:10.1f}{gp_fit * 1e3:10.1f}{fit_speedup:9.1f}x"
        f"{core_cell}{floor * 1e3:9.1f}{ratio_cell}{gp_fit / floor:9.1f}"
        f"{sk_pred * 1e3:11.1f}{gp_pred * 1e3:10.1f}{pred_speedup:9.1f}x  ({floor_kind})"
    )


SHAPE = [""]
#: Load average (1 min) when the run started.
LOAD = [None]
#: Fits beside a busy core (:func:`bench_busy`), kept apart from the timed shapes' rows
BUSY = []


def header(title):
    SHAPE[0] = title
    print(f"\n{title}")
    print(
        f"{'estimator':<26}{'sk fit':>10}{'gp fit':>10}{'speedup':>10}{'core':>9}{'floor':>9}"
        f"{'core/flr':>9}{'fit/flr':>9}{'sk pred':>11}{'gp pred':>10}{'speedup':>10}  (floor)"
    )
    print(
        f"{'':<26}{'ms':>10}{'ms':>10}{'':>10}{'ms':>9}{'ms':>9}{'':>9}{'':>9}{'ms':>11}{'ms':>10}"
    )


def bench_gaussian(n, d, k, repeats):
    X, y = gaussian_data(n, d, k)
    header(f"Gaussian family, n={n:.0e}, d={d}, K={k}")
    with jax.enable_x64(True):
        Xj = jax.device_put(jnp.asarray(X))
        gram = jax.jit(lambda A: A.T @ A)
        jitted = timed(lambda: gram(Xj).block_until_ready(), repeats)
        floor = min(jitted, timed(lambda: X.T @ X, repeats))
    R = execution.responsibilities(y, k)
    # naive Bayes needs per-class sums and sums of squares: at least one pass over X
    one_pass = timed(lambda: X.sum(axis=0), repeats)
    pairs = [
        ("GaussianNB", sknb.GaussianNB(), genprob.GaussianNB()),
        (
            "LDA lsqr",
            skda.LinearDiscriminantAnalysis(solver="lsqr"),
            genprob.LinearDiscriminantAnalysis(solver="lsqr"),
        ),
        (
            "LDA svd",
            skda.LinearDiscriminantAnalysis(),
            genprob.LinearDiscriminantAnalysis(),
        ),
        (
            "QDA",
            skda.QuadraticDiscriminantAnalysis(),
            genprob.QuadraticDiscriminantAnalysis(),
        ),
    ]

    def fits(sk_est, gp_est):
        """Both libraries' fits (paired) and genprob's closed form alone."""
        fit = timed_pair(
            lambda est=sk_est: est.fit(X, y), lambda est=gp_est: est.fit(X, y), repeats
        )
        story = gp_est.story_
        with jax.enable_x64(True):

            def closed_form():
                jax.block_until_ready(core.fit_closed_form(story, X, R))

            return fit, timed(closed_form, repeats)

    for name, sk_est, gp_est in pairs:
        fit, core_fit = fits(sk_est, gp_est)
        predict = timed_pair(
            lambda est=sk_est: est.predict_proba(X),
            lambda est=gp_est: est.predict_proba(X),
            repeats,
        )
        if name == "GaussianNB":
            row(name, fit, core_fit, one_pass, predict, "one NumPy pass")
        else:
            row(name, fit, core_fit, floor, predict)


def sms_counts():
    """The SMS Spam Collection shipped with genprob as word counts (CountVectorizer)."""
    from sklearn.feature_extraction.text import CountVectorizer

    from genprob.datasets import load_sms_spam

    texts, labels = load_sms_spam()
    vectorizer = CountVectorizer()
    return vectorizer.fit_transform(texts).tocsr(), labels, vectorizer.transform(texts).tocsr()


def bench_multinomial(n_docs, vocabulary, words_per_doc, repeats, sms=False):
    if sms:
        X, y, X_new = sms_counts()
        n_docs = X.shape[0]
        header(
            f"SMS spam corpus, sparse bag of words: {X.shape[0]} messages x {X.shape[1]} words, "
            f"{X.nnz / n_docs:.0f} non-zeros per row"
        )
    else:
        X, y = bag_of_words(n_docs, vocabulary, words_per_doc)
        X_new = X
        header(
            f"Multinomial NB, sparse bag of words: {n_docs:.0e} documents x {vocabulary:.0e} "
            f"words, {X.nnz / n_docs:.0f} non-zeros per row"
        )
    floor = timed(lambda: X.T @ np.ones((n_docs, 2)), repeats)
    for name, sk_est, gp_est in [
        ("MultinomialNB", sknb.MultinomialNB(), genprob.MultinomialNB()),
        ("BernoulliNB", sknb.BernoulliNB(), genprob.BernoulliNB()),
    ]:
        fit = timed_pair(
            lambda est=sk_est: est.fit(X, y), lambda est=gp_est: est.fit(X, y), repeats
        )
        predict = timed_pair(
            lambda est=sk_est: est.predict_proba(X_new),
            lambda est=gp_est: est.predict_proba(X_new),
            repeats,
        )
        row(name, fit, None, floor, predict, "SciPy X^T R")


def bench_busy(repeats):
    """Fits on digits (1797 x 64) while a second process keeps the other core busy (``yes``):
    a BLAS product that starts threads waits for the busy core; scikit-learn's fits start none."""
    import subprocess

    from sklearn.datasets import load_digits

    X, y = load_digits(return_X_y=True)
    pairs = [
        ("GaussianNB", sknb.GaussianNB(), genprob.GaussianNB()),
        (
            "QDA reg_param=0.1",
            skda.QuadraticDiscriminantAnalysis(reg_param=0.1),
            genprob.QuadraticDiscriminantAnalysis(reg_param=0.1),
        ),
        ("MultinomialNB", sknb.MultinomialNB(), genprob.MultinomialNB()),
    ]
    print("\ndigits 1797 x 64, a second process busy on the other core (yes > /dev/null)")
    busy = subprocess.Popen(["yes"], stdout=subprocess.DEVNULL)
    try:
        for name, theirs, ours in pairs:
            sk, gp, ratio = timed_pair(
                lambda t=theirs: t.fit(X, y), lambda o=ours: o.fit(X, y), repeats
            )
            print(f"{name:<20} sklearn {sk * 1e3:8.2f} ms  genprob {gp * 1e3:8.2f} ms  "
                  f"genprob/sklearn {1 / ratio:.2f}x")  # fmt: skip
            BUSY.append({"estimator": name, "sklearn fit": sk, "genprob fit": gp,
                         "genprob / sklearn": 1 / ratio})  # fmt: skip
    finally:
        busy.kill()
        busy.wait()


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small shapes (smoke run)")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--only", choices=["gaussian", "multinomial", "busy"], default=None)
    parser.add_argument("--json", default=None, help="also write the rows, date and machine here")
    args = parser.parse_args(argv)
    LOAD[0] = os.getloadavg()[0]
    print(
        f"jax {jax.__version__} ({jax.default_backend()}), scikit-learn {sklearn.__version__}, "
        f"{jax.device_count()} device(s); float64; times are medians of {args.repeats} runs; "
        f"load average {LOAD[0]:.1f}"
    )
    if args.only in (None, "gaussian"):
        shapes = (
            [(20_000, 20, 3), (5_000, 50, 5)]
            if args.quick
            else [
                (1_000_000, 20, 3),
                (100_000, 50, 5),
            ]
        )
        for n, d, k in shapes:
            bench_gaussian(n, d, k, args.repeats)
    if args.only in (None, "busy"):
        bench_busy(args.repeats)
    if args.only in (None, "multinomial"):
        bench_multinomial(0, 0, 0, args.repeats, sms=True)
        if args.quick:
            bench_multinomial(5_000, 2_000, 30, args.repeats)
        else:
            bench_multinomial(100_000, 50_000, 50, args.repeats)
    if args.json:
        write_json(args.json, args)


def write_json(path, args):
    """The rows with the run's date, machine and versions (one file per run)."""
    import json
    import os
    import platform

    from _run_info import machine, run_date

    record = {
        "date": run_date(),
        "machine": machine(),
        "versions": {
            "jax": jax.__version__,
            "scikit-learn": sklearn.__version__,
            "python": platform.python_version(),
        },
        # other jobs on the machine slow both libraries; the ratios are paired, the times are not
        "load_average_1min": LOAD[0],
        "load_average_1min_end": os.getloadavg()[0],
        "repeats": args.repeats,
        "quick": args.quick,
        "rows": RESULTS,
        "busy": BUSY,
    }
    with open(path, "w") as f:
        json.dump(record, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
