"""Does unlabeled data help? Labeled-only fits against semi-supervised EM on real data.

For each data set, label fraction p and seed:

1. stratified split: 30% test, 20% validation (labeled, used only to tune λ), 50% training pool;
2. keep the labels of a stratified fraction p of the pool (at least one row per class), mark
   the other pool rows unlabeled (y = -1);
3. fit and score on the test split (accuracy):
   * **labeled-only**: the estimator fitted on the labeled pool rows alone (closed form);
   * **EM λ=1**: ``fit`` on the whole pool, unlabeled rows included (the marginal likelihood);
   * **EM tuned λ**: EM-λ (Nigam et al. 2000) with λ in ``LAMBDAS`` chosen by validation
     accuracy (ties go to the smaller λ; λ = 0 is the labeled-only fit).

Data sets and models:

* ``digits``: scikit-learn's 8x8 digits (1,797 images, 10 classes), pixel intensities 0..16 read
  as counts by multinomial naive Bayes (``genprob.MultinomialNB(alpha=1)``);
* ``sms``: the SMS Spam Collection (5,574 messages, ham/spam), word counts from
  ``CountVectorizer`` fitted on the training pool's texts (labeled and unlabeled: no test text),
  multinomial naive Bayes on the sparse counts.

EM uses the estimators' defaults (``max_iter=100``, relative tolerance 1e-8, one initialization
from the labeled-only fit).

Usage::

    python benchmarks/semi_supervised.py                  # 5 seeds, prints a Markdown table
    python benchmarks/semi_supervised.py --seeds 3 --quick
    python benchmarks/semi_supervised.py --write-doc docs/semi_supervised.md
"""

from __future__ import annotations

import argparse
import re
import time
import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning
from sklearn.feature_extraction.text import CountVectorizer
from sklearn.model_selection import train_test_split

import genprob
from genprob.datasets import load_digits, load_sms_spam

FRACTIONS = (0.01, 0.02, 0.05, 0.10, 1.00)
LAMBDAS = (0.0, 0.01, 0.03, 0.1, 0.3, 1.0)
RESULTS_START = "<!-- semi-supervised results: start -->"
RESULTS_END = "<!-- semi-supervised results: end -->"


def make_model(unlabeled_weight: float):
    """Multinomial NB with the EM weight λ of the unlabeled rows."""
    model = genprob.MultinomialNB(alpha=1.0)
    # EM controls are read from the estimator's attributes (constructor parameters as well).
    model.unlabeled_weight = unlabeled_weight
    return model


def split(X_raw, y, seed):
    """Stratified test (30%), validation (20%) and training pool (50%) indices."""
    index = np.arange(len(y))
    rest, test = train_test_split(index, test_size=0.3, stratify=y, random_state=seed)
    pool, validation = train_test_split(
        rest, test_size=2 / 7, stratify=y[rest], random_state=seed + 1000
    )
    return pool, validation, test


def hide_labels(y_pool, fraction, seed):
    """Pool labels with all but a stratified ``fraction`` (>= one per class) set to -1."""
    if fraction >= 1.0:
        return y_pool.copy()
    num_classes = len(np.unique(y_pool))
    keep_count = max(int(round(fraction * len(y_pool))), num_classes)
    keep, _ = train_test_split(
        np.arange(len(y_pool)), train_size=keep_count, stratify=y_pool, random_state=seed
    )
    y_partial = np.full_like(y_pool, -1)
    y_partial[keep] = y_pool[keep]
    return y_partial


def load(name):
    if name == "digits":
        X, y = load_digits()
        return X, y, None
    texts, labels = load_sms_spam()
    return texts, (labels == "spam").astype(int), CountVectorizer()


def features(X_raw, vectorizer, pool, validation, test):
    if vectorizer is None:
        return X_raw[pool], X_raw[validation], X_raw[test]
    vectorizer = vectorizer.fit(X_raw[pool])  # vocabulary of the training pool only
    return tuple(vectorizer.transform(X_raw[part]) for part in (pool, validation, test))


def run(name, seeds, fractions):
    X_raw, y, vectorizer = load(name)
    classes = np.unique(y)
    rows = {fraction: [] for fraction in fractions}
    for seed in range(seeds):
        pool, validation, test = split(X_raw, y, seed)
        X_pool, X_val, X_test = features(X_raw, vectorizer, pool, validation, test)
        for fraction in fractions:
            y_partial = hide_labels(y[pool], fraction, seed)
            labeled = y_partial >= 0
            baseline = make_model(1.0).fit(X_pool[labeled], y_partial[labeled])
            fits = {}
            for unlabeled_weight in LAMBDAS:
                if unlabeled_weight == 0.0:
                    fits[0.0] = baseline
                    continue
                model = make_model(unlabeled_weight)
                with warnings.catch_warnings(record=True) as caught:
                    warnings.simplefilter("always", ConvergenceWarning)
                    model.fit(X_pool, y_partial, classes=classes)
                model.not_converged_ = any(
                    issubclass(w.category, ConvergenceWarning) for w in caught
                )
                fits[unlabeled_weight] = model
            validation_scores = [fits[w].score(X_val, y[validation]) for w in LAMBDAS]
            best = LAMBDAS[int(np.argmax(validation_scores))]
            em_fits = [m for w, m in fits.items() if w > 0 and hasattr(m, "n_iter_")]
            rows[fraction].append(
                {
                    "labeled": int(labeled.sum()),
                    "labeled_only": baseline.score(X_test, y[test]),
                    "em": fits[1.0].score(X_test, y[test]),
                    "tuned": fits[best].score(X_test, y[test]),
                    "lambda": best,
                    "iterations": [m.n_iter_ for m in em_fits],
                    "not_converged": sum(m.not_converged_ for m in em_fits),
                }
            )
    return rows


def table(results, seeds):
    lines = [
        "| data | labels kept | labeled rows | labeled-only | EM λ = 1 | EM tuned λ | λ chosen "
        "| seeds where EM hurts (λ = 1 / tuned) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    notes = []
    for name, rows in results.items():
        for fraction, runs in rows.items():

            def cell(key, runs=runs):
                values = np.array([run[key] for run in runs])
                return f"{values.mean():.3f} ± {values.std(ddof=1):.3f}"

            chosen = sorted(run["lambda"] for run in runs)
            hurts_em = sum(run["em"] < run["labeled_only"] for run in runs)
            hurts_tuned = sum(run["tuned"] < run["labeled_only"] for run in runs)
            lines.append(
                f"| {name} | {fraction:.0%} | {np.mean([r['labeled'] for r in runs]):.0f} | "
                f"{cell('labeled_only')} | {cell('em')} | {cell('tuned')} | "
                f"{', '.join(f'{c:g}' for c in chosen)} | {hurts_em} / {hurts_tuned} |"
            )
            iterations = [i for run in runs for i in run["iterations"]]
            not_converged = sum(run["not_converged"] for run in runs)
            if iterations:
                notes.append(
                    f"{name} {fraction:.0%}: EM iterations median {int(np.median(iterations))}, "
                    f"max {max(iterations)}; {not_converged} of {len(iterations)} EM fits hit "
                    f"max_iter"
                )
    header = (
        f"Test accuracy, mean ± sd over {seeds} seeds (stratified 30% test / 20% validation / "
        f"50% training pool; multinomial naive Bayes, alpha = 1)."
    )
    return "\n".join([header, "", *lines, "", *(f"- {note}" for note in notes)])


def write_doc(path, text):
    with open(path, encoding="utf-8") as handle:
        document = handle.read()
    pattern = re.compile(re.escape(RESULTS_START) + ".*?" + re.escape(RESULTS_END), re.S)
    if not pattern.search(document):
        raise SystemExit(f"{path} has no '{RESULTS_START}' ... '{RESULTS_END}' block.")
    block = f"{RESULTS_START}\n{text}\n{RESULTS_END}"
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(pattern.sub(lambda _: block, document))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", type=int, default=5, help="number of seeds (default 5)")
    parser.add_argument("--quick", action="store_true", help="fractions 2%% and 100%% only")
    parser.add_argument("--data", nargs="+", default=["digits", "sms"], choices=["digits", "sms"])
    parser.add_argument("--write-doc", metavar="PATH", help="replace the results block of PATH")
    args = parser.parse_args(argv)
    fractions = (0.02, 1.0) if args.quick else FRACTIONS
    start = time.perf_counter()
    results = {name: run(name, args.seeds, fractions) for name in args.data}
    text = table(results, args.seeds)
    print(text)
    print(f"\n(run time {time.perf_counter() - start:.0f} s)")
    if args.write_doc:
        write_doc(args.write_doc, text)


if __name__ == "__main__":
    main()
