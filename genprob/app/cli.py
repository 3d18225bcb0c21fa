"""The ``genprob`` command line (also ``python -m genprob``); docs/cli.md describes its commands,
options, messages and exit codes. The library's messages are printed as they are, one line each."""

from __future__ import annotations

import argparse
import atexit
import dataclasses
import decimal
import functools
import logging
import os
import re
import shlex
import shutil
import sys
import tempfile
import time
import warnings

import numpy as np

__all__ = ["main", "build_parser", "UserError"]


class UserError(Exception):
    """A mistake in the command's input: reported on one line, exit code 2."""


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        # one line instead of argparse's usage block
        self.exit(2, f"{self.prog}: error: {message} (see --help)\n")


def _int_at_least(minimum: int, maximum: int | None = None):
    """An argparse type: an int in [minimum, maximum]; argparse names the option on failure."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be an integer, got {text!r}") from None
        if value < minimum or (maximum is not None and value > maximum):
            bound = f">= {minimum}" if maximum is None else f"in [{minimum}, {maximum}]"
            raise argparse.ArgumentTypeError(f"must be an integer {bound}, got {text}")
        return value

    return parse


_SEED = _int_at_least(0, 2**32 - 1)  # the range NumPy's seeding accepts
_COUNT = _int_at_least(1)  # draws, chains, iterations


def _check_out(path: str, directory: bool = False) -> None:
    """Refuse ``--out`` before the work unless ``path`` (a file, or a directory) can be written."""
    if directory and os.path.exists(path) and not os.path.isdir(path):
        raise UserError(f"--out {path} exists and is not a directory.")
    if not directory and os.path.isdir(path):
        raise UserError(f"--out {path} is a directory; give a file name.")
    existing = os.path.abspath(path) if directory else os.path.dirname(os.path.abspath(path))
    while directory and not os.path.exists(existing):  # the nearest ancestor that exists
        existing = os.path.dirname(existing)
    if not os.path.isdir(existing):
        raise UserError(f"--out {path}: no directory {existing}.")
    try:
        with tempfile.TemporaryFile(dir=existing):
            pass
    except OSError as error:
        raise UserError(
            f"--out {path}: cannot write in {existing} ({error.strerror or error})."
        ) from None


def _arg(names: str, help_text: str, **options) -> tuple:
    """One argument: its names (space-separated), its help and ``add_argument``'s keywords."""
    return names.split(), {"help": help_text, **options}


def _story_arg(how: str) -> tuple:
    return _arg(
        "--story",
        f"a story class of your own, {how}; MODULE is a module in the current directory or on "
        "the path, or a file path/to/module.py. This imports that module, which runs its code",
        dest="story_ref",
        metavar="MODULE:CLASS",
    )


_SEP = _arg(
    "--sep",
    "field separator of a CSV file, e.g. ';' or '\\t' for tabs (default: ',')",
    metavar="CHAR",
    default=",",
)
#: The options of every command that reads a table of its own choosing (not predict's).
_TABLE = (
    _SEP,
    _arg(
        "--features",
        "the feature columns to use, comma-separated (default: every column but --target)",
        metavar="COL,COL,...",
    ),
    _arg(
        "--drop", "columns to leave out, comma-separated (an ID column, say)", metavar="COL,COL,..."
    ),
)
_MISSING = ("error", "marginalize")
#: The options of fit and compare.
_FITTING = (
    _arg("story", "built-in story (see the list below)", metavar="STORY", nargs="?"),
    _arg("data", "a CSV file, or Parquet (.parquet, .pq)", metavar="DATA", nargs="?"),
    _arg("--target", "the label column", metavar="COL", required=True),
    _story_arg("instead of STORY: give DATA alone"),
    *_TABLE,
    _arg(
        "--unlabeled-label --unlabeled",
        "a target value that marks unlabeled rows, besides empty cells (e.g. '?' or -1); "
        "'none': every label is a class, -1 included (then no target cell may be empty)",
        dest="unlabeled",
        metavar="VALUE|none",
    ),
    _arg(
        "--missing",
        "empty feature cells: refuse them (default) or sum them out of the story",
        choices=_MISSING,
        default="error",
    ),
    _arg(
        "--unlabeled-weight",
        "weight in [0, 1] of the unlabeled rows in EM (EM-lambda; default: 1)",
        type=float,
        default=1.0,
        metavar="L",
    ),
    _arg("--seed", "random seed (default: 0)", type=_SEED, default=0),
    _arg(
        "--param",
        "a setting of the story's estimator (repeatable), e.g. --param reg_param=0.2 for qda, "
        "--param shrinkage=0.5 for lda_shrinkage, --param alpha=0.5 for the naive Bayes "
        "stories; VALUE is a number, true/false, none, text or numbers separated by commas",
        action="append",
        metavar="NAME=VALUE",
    ),
    _arg(
        "--max-iter",
        "most EM iterations when rows are unlabeled (default: 100)",
        type=_COUNT,
        metavar="N",
    ),
)


def build_parser() -> argparse.ArgumentParser:
    """The ``genprob`` argument parser: a subcommand per row of the table below."""
    from genprob.app import registry

    stories = ", ".join(registry.names())
    notes = " ".join(entry.note for entry in registry.STORIES.values() if entry.note)
    fit_epilog = (
        f"stories: {stories} (also {', '.join(registry.ALIASES)}). {notes} The "
        "other stories need numeric columns."
    )
    check = (
        _arg(
            "stories",
            "built-in stories to check (default: all of them)",
            nargs="*",
            metavar="STORY",
        ),
        _arg(
            "--data",
            "a bundled data set or a CSV file (default: each story's natural data set)",
            metavar="NAME|FILE.csv",
        ),
        _arg("--target", "label column of the CSV file (required with a CSV)", metavar="COL"),
        *_TABLE,
        _arg(
            "--all-data",
            "check each story on every one of its natural data sets, not only the first",
            action="store_true",
        ),
        _arg(
            "--dtype",
            "precision, which also selects the tolerances (default: float64)",
            choices=("float64", "float32"),
            default="float64",
        ),
        _arg("--seed", "seed of the optimizer's poor start (default: 0)", type=_SEED, default=0),
        _arg(
            "--max-iter",
            "L-BFGS iteration budget (default: genprob.fit_optimizer's)",
            type=_COUNT,
            metavar="N",
        ),
        _arg("--list", "list the built-in stories and data sets, then exit", action="store_true"),
    )
    demo = (
        _arg(
            "--out",
            "directory of the report (default: genprob-report/)",
            metavar="DIR",
            default="genprob-report",
        ),
        _arg(
            "--quick", "fewer stories, label subsets and draws: under a minute", action="store_true"
        ),
        _arg("--seed", "random seed (default: 0)", type=_SEED, default=0),
    )
    fit = (
        *_FITTING,
        _arg(
            "--out",
            "model file to write (default: model.npz; .npz is appended when missing)",
            metavar="MODEL",
            default="model.npz",
        ),
    )
    predict = (
        _arg("model", "a model file (.npz)", metavar="MODEL"),
        _story_arg("imported before the model is loaded (a model of that story)"),
        _arg("data", "a CSV file, or Parquet (.parquet, .pq)", metavar="DATA"),
        _arg("--proba", "add the class probabilities (proba_<class>)", action="store_true"),
        _SEP,
        _arg(
            "--missing",
            "empty feature cells: refuse them, or sum them out of the story (the density of each "
            "row's observed cells; no refit). Default: as the model was fitted",
            choices=_MISSING,
        ),
        _arg("--out", "write the CSV to this file (default: stdout)", metavar="FILE.csv"),
    )
    compare = (
        *_FITTING,
        _arg(
            "--out",
            "directory of the table and plots (default: genprob-compare/)",
            metavar="DIR",
            default="genprob-compare",
        ),
        _arg(
            "--method",
            "NUTS (any story) or exact draws (conjugate stories, labeled rows; default: nuts)",
            choices=("nuts", "exact"),
            default="nuts",
        ),
        _arg(
            "--num-samples", "draws per chain (default: 500)", type=_COUNT, default=500, metavar="N"
        ),
        _arg(
            "--num-warmup",
            "NUTS warm-up iterations per chain (default: 500)",
            type=_int_at_least(0),
            default=500,
            metavar="N",
        ),
        _arg("--chains --num-chains", "chains (default: 2)", type=_COUNT, default=2, metavar="N"),
        _arg(
            "--sampler",
            "NUTS implementation (blackjax needs genprob[blackjax]; default: numpyro)",
            choices=("numpyro", "blackjax"),
            default="numpyro",
        ),
        _arg(
            "--accept-diagnostics",
            "exit 0 even when an R-hat or ESS check fails (default: exit 1)",
            action="store_true",
        ),
        _arg(
            "--var-names",
            "parameters to tabulate and plot (default: all)",
            nargs="+",
            metavar="NAME",
        ),
    )
    table = {
        "check": (
            _run_check,
            "cross-check closed-form fits against numerical maximization of the likelihood",
            "Fit each story by its closed form and by L-BFGS on the NumPyro model's likelihood "
            "(from a poor start), and print per-parameter differences, the objective at both "
            "solutions and the gradient norm at the closed form. The verdict: the closed form's "
            "objective must not be below the optimizer's; parameter differences and gradients "
            "decide too where the likelihood is smooth. Smoothed/regularized stories "
            "are checked on their penalized (MAP) objective. Exit code 1 if a check fails.",
            f"stories: {stories}. bundled data sets: {', '.join(registry.DATASETS)}.",
            check,
        ),
        "demo": (
            _run_demo,
            "fit every story on bundled data and write a Markdown report with figures",
            "Offline tour of genprob on bundled data: every built-in story's held-out accuracy, "
            "log-likelihood and parameter count; LDA/QDA/Gaussian NB decision boundaries on a "
            "three-Gaussian example; closed form vs optimizer cross-checks; a semi-supervised "
            "EM curve over label fractions; MLE vs posterior (NUTS and exact). Writes "
            "report.md and PNG figures to DIR. Progress goes to stderr.",
            None,
            demo,
        ),
        "fit": (
            _run_fit,
            "fit a built-in story on a CSV/Parquet table and save the model",
            "Fit a built-in story on a table: the --target column holds the labels and every "
            "other column is a feature. Rows whose target is empty (or equals --unlabeled-label "
            "VALUE) are unlabeled: then the fit maximizes the marginal likelihood by EM. Saves the "
            "model (a .npz file without pickle, loadable with genprob.load) and prints a summary.",
            fit_epilog,
            fit,
        ),
        "predict": (
            _run_predict,
            "predict with a saved model; CSV with a prediction column",
            "Load a model written by `genprob fit` (or est.save) and predict the rows of DATA "
            "(CSV or Parquet). The model's target column, if present, is ignored; every feature "
            "column the model was fitted on must be present (extra columns are ignored). Writes "
            "CSV with a 'prediction' column, and 'proba_<class>' columns with --proba.",
            None,
            predict,
        ),
        "compare": (
            _run_compare,
            "MLE vs posterior (NUTS or exact): a table and plots",
            "Fit a built-in story on a table (as `genprob fit`), draw from the posterior of its "
            "parameters under the story's prior (NUTS, or the exact conjugate posterior), print "
            "the MLE next to the posterior mean, sd, 94% HDI, R-hat and ESS of every parameter, "
            "and save the table (mle_vs_posterior.csv) and one posterior-vs-MLE plot per "
            "parameter (posterior_vs_mle_<name>.png) to DIR.",
            fit_epilog,
            compare,
        ),
    }
    parser = _Parser(
        prog="genprob",
        description="Generative classifiers as probabilistic programs (JAX + NumPyro).",
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    commands.required = True
    for name, (handler, help_text, description, epilog, arguments) in table.items():
        command = commands.add_parser(name, help=help_text, description=description, epilog=epilog)
        for names, options in arguments:
            command.add_argument(*names, **options)
        command.set_defaults(handler=handler)
    return parser


# -- genprob check ---------------------------------------------------------------------------------
def _read_labeled_table(args, reader):
    """``(X, label codes, story or None)`` of a fully labeled table (``reader``: text columns)."""
    if not args.target:
        raise UserError(f"--target COL is required with a CSV file ({args.data}).")
    features, y, _ = _read_features(args, reader is not None)
    codes = np.unique(y.astype(str), return_inverse=True)[1].astype(np.int64)
    if reader:  # the table estimator's story, each categorical column as its category codes
        estimator = reader(features).fit(features, codes)
        table = np.asarray(estimator.encode(features), dtype=np.float64), codes, estimator.story_
    else:
        table = features.to_numpy(), codes, None
    _column_warnings(features, "check")  # after the table's column checks (text: the fit's)
    return table


def _check_jobs(args):
    """``(story name, data label, loader)`` for every requested check."""
    from genprob.app import registry

    names = args.stories or [name for name in registry.names() if registry.has_story(name)]
    # has_story raises the registry's "unknown story ...; known: ..." for a name it lacks
    chosen = [name for name in names if not registry.has_story(name)]
    if chosen:
        raise UserError(
            f"{chosen[0]!r} is not one story: it chooses its model per class by a criterion, "
            f"so there is no single likelihood to cross-check (genprob fit {chosen[0]} fits it)."
        )
    if args.target and not args.data:
        raise UserError("--target applies to a CSV file given with --data.")
    if args.target and args.data in registry.DATASETS:
        raise UserError(f"--target is for CSV files; {args.data!r} is a bundled data set.")
    jobs = []
    for name in names:
        if args.data is None or args.data in registry.DATASETS:
            natural = registry.get(name).datasets  # the default first
            data_sets = [args.data] if args.data else natural if args.all_data else natural[:1]
            jobs += [(name, d, lambda d=d: (*registry.load_data(d)[:2], None)) for d in data_sets]
        elif args.data.lower().endswith(".csv") or os.path.isfile(args.data):
            label = f"{os.path.basename(args.data)} (target {args.target})"
            reader = registry.get(name).table_estimator  # None: numeric columns only
            jobs.append(
                (name, (label, reader), functools.partial(_read_labeled_table, args, reader))
            )
        else:
            raise UserError(
                f"--data {args.data!r} is neither a bundled data set "
                f"({', '.join(registry.DATASETS)}) nor a CSV file."
            )
    return jobs


def _run_check(args) -> int:
    from genprob.app import registry
    from genprob.inference.crosscheck import crosscheck

    if args.list:
        for entry in registry.STORIES.values():
            print(f"{entry.name:<16}{entry.description}  [data: {', '.join(entry.datasets)}]")
        return 0
    jobs = _check_jobs(args)
    options = {"dtype": args.dtype, "seed": args.seed}
    if args.max_iter is not None:
        options["max_iter"] = args.max_iter
    cache, failed = {}, []
    for name, key, load in jobs:
        if key not in cache:
            cache[key] = load()
        X, y, story = cache[key]
        data_label = key[0] if isinstance(key, tuple) else key
        if sys.stderr.isatty():  # progress for people; pipes and logs get only the tables
            _note("check", f"{name} on {data_label} ...")
        if story is None:
            story = registry.make_story(name, X)
        result = crosscheck(story, X, y, data_name=data_label, label=name, **options)
        print(result, end="\n\n", flush=True)
        if not result.passed:
            failed.append(f"{name} on {data_label}")
    if failed:
        print(f"{len(failed)} of {len(jobs)} checks FAILED: {'; '.join(failed)}")
        return 1
    print(f"all {len(jobs)} checks passed")
    return 0


# -- shared by fit, predict and compare ------------------------------------------------------------
#: Bound of the command line's compilation cache directory (JAX drops the oldest entries).
CLI_CACHE_BYTES = 1 << 30
#: Cache directories found damaged in this process, dropped at its end (rebuilt by the next).
_DAMAGED_CACHES: list = []


def _positionals(args) -> None:
    """``args.story`` and ``args.data`` from ``STORY DATA`` or ``DATA --story MODULE:CLASS``."""
    reference = args.story_ref
    if reference is None:
        if args.story is None or args.data is None:
            raise UserError("give STORY and DATA (or DATA with --story MODULE:CLASS).")
    elif args.story is not None:  # DATA was read into the first positional
        if args.data is not None:
            raise UserError(
                f"--story {reference} names the story: give DATA alone, not "
                f"{args.story} {args.data}."
            )
        args.data, args.story = args.story, None
    elif args.data is None:
        raise UserError(f"--story {reference}: give the DATA file too.")


def _import_story(reference: str):
    """The Story class ``MODULE:CLASS`` (a module on the path, or a file ``path/to/module.py``)."""
    import importlib
    import importlib.util

    from genprob.story import Story

    module_name, colon, class_name = reference.rpartition(":")
    if not (colon and module_name and class_name):
        raise UserError(
            f"--story {reference!r}: write it as MODULE:CLASS (e.g. --story mystories:StudentT "
            "or --story path/to/mystories.py:StudentT)."
        )
    if module_name.endswith(".py") and not os.path.isfile(module_name):
        raise UserError(f"--story {reference}: no such file {module_name}.")
    try:
        if module_name.endswith(".py"):
            path = os.path.abspath(module_name)
            stem = os.path.splitext(os.path.basename(path))[0]
            module = sys.modules.get(stem)
            if module is None or getattr(module, "__file__", None) != path:
                spec = importlib.util.spec_from_file_location(stem, path)
                module = importlib.util.module_from_spec(spec)
                sys.modules[stem] = module  # the saved model names the class as stem.CLASS
                spec.loader.exec_module(module)
        else:
            if "" not in sys.path and os.getcwd() not in sys.path:
                sys.path.insert(0, os.getcwd())  # a module beside the user's data, as python does
            module = importlib.import_module(module_name)
    except ImportError as error:
        raise UserError(f"--story {reference}: cannot import {module_name}: {error}.") from None
    except Exception as error:  # the user's module raised while it ran
        raise UserError(
            f"--story {reference}: importing {module_name} raised {type(error).__name__}: "
            f"{_first_line(error)}"
        ) from None
    cls = getattr(module, class_name, None)
    if not (isinstance(cls, type) and issubclass(cls, Story)):
        raise UserError(f"--story {reference}: {module_name} defines no Story class {class_name}.")
    return cls


def _read_table(path: str, args, target: str | None = None):
    """A CSV file, or a Parquet file by its extension, as a DataFrame of the selected columns."""
    import pandas as pd

    sep = getattr(args, "sep", ",")
    sep = "\t" if sep in ("\\t", "tab") else sep
    if not sep:
        raise UserError("--sep: give a separator character, e.g. --sep ';'.")
    if os.path.isdir(path):
        raise UserError(f"{path} is a directory, not a data file.")
    if not os.path.isfile(path):
        raise UserError(f"no such file: {path}.")
    if path.lower().endswith((".parquet", ".pq")):
        try:  # pyarrow is a dependency of genprob
            frame = pd.read_parquet(path)
        except (OSError, ValueError) as error:
            raise UserError(f"cannot read {path} as Parquet: {_first_line(error)}") from None
    else:
        try:
            frame = pd.read_csv(path, sep=sep, dtype={target: str} if target else None)
        except pd.errors.EmptyDataError:
            raise UserError(f"{path} is empty.") from None
        except (pd.errors.ParserError, UnicodeDecodeError) as error:
            raise UserError(f"cannot parse {path} as CSV: {_first_line(error)}") from None
    if len(frame) == 0:
        raise UserError(f"{path} has a header but no rows.")
    if frame.shape[1] == 1 and sep == "," and ";" in str(frame.columns[0]):
        raise UserError(
            f"{path} reads as a single column {str(frame.columns[0])!r}; its fields look "
            "separated by ';': pass --sep ';'."
        )
    return _select_columns(frame, args, path, target)


def _first_line(error) -> str:
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__


_NUMBER = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")


def _exact_number(text: str):
    """The exact value (``Decimal``) of a decimal number written in ``text``, or None."""
    if _NUMBER.fullmatch(text) is None:
        return None
    return decimal.Decimal(text)


def _label_texts(values):
    """``(codes, texts)``: each distinct label once as stripped text, and each row's code."""
    import pandas as pd

    if values.dtype.kind == "f":
        values = values.map(lambda v: str(int(v)) if float(v).is_integer() else repr(float(v)))
    codes, uniques = pd.factorize(values.astype(str).str.strip())
    return codes, [str(v) for v in uniques]


def _as_labels(values):
    """Labels exactly as written: int64, float64 that tells them apart, else text (docs/cli.md)."""
    if values.dtype.kind == "i":
        return values.to_numpy(dtype=np.int64)
    codes, texts = _label_texts(values)
    numbers = [_exact_number(text) for text in texts]
    if all(number is not None for number in numbers):
        # exponents beyond 10**30 are not int64 (and int() of 1e999999999 would never end)
        if all(abs(n.adjusted()) <= 30 and n == n.to_integral_value() for n in numbers):
            integers = [int(number) for number in numbers]
            if all(-(2**63) <= v < 2**63 for v in integers):
                return np.array(integers, dtype=np.int64)[codes]
        elif not all(n == n.to_integral_value() for n in numbers):
            floats = [float(number) for number in numbers]
            if len(set(floats)) == len(floats) and np.all(np.isfinite(floats)):
                return np.array(floats)[codes]
    return np.array(texts, dtype=object)[codes]


def _is_marker(values, marker: str):
    """Rows of ``values`` holding ``marker``, as text or as the same number (-1 as -1.0)."""
    codes, texts = _label_texts(values)
    number = _exact_number(marker)
    same = [
        text == marker or (number is not None and _exact_number(text) == number) for text in texts
    ]
    return np.array(same, dtype=bool)[codes] & (codes >= 0)


def _every_label_a_class(unlabeled: str | None) -> bool:
    """``--unlabeled-label none``: no value marks unlabeled rows (the estimators' None)."""
    return unlabeled is not None and unlabeled.strip().lower() == "none"


def _read_features(args, text_allowed: bool):
    """``(features, y, unlabeled mask)`` of ``args.data``, features checked; ``y`` -1: unlabeled."""
    path, target = args.data, args.target
    unlabeled = getattr(args, "unlabeled", "none")  # check: every row labeled
    frame = _read_table(path, args, target)
    if target not in frame.columns:
        raise UserError(
            f"target column {target!r} is not in {path}; columns: {', '.join(map(str, frame))}."
        )
    column = frame[target]
    missing = column.isna().to_numpy() | (column.astype(str).str.strip() == "").to_numpy()
    every = _every_label_a_class(unlabeled)
    if every and missing.any():
        raise UserError(
            f"target column {target!r} of {path} has {int(missing.sum())} empty cells "
            f"(first at row {int(np.flatnonzero(missing)[0])}), but every row must be labeled "
            "here (--unlabeled-label none, or the cross-check)."
        )
    if unlabeled is not None and not every:
        missing |= _is_marker(column, unlabeled.strip())
    if missing.all():
        raise UserError(f"target column {target!r} of {path} has no labeled rows.")
    labels = _as_labels(column[~missing])
    if len(np.unique(labels.astype(str))) < 2:
        among = " among its labeled rows" if missing.any() else ""
        raise UserError(
            f"target column {target!r} of {path} holds a single class{among} ({labels[0]}); a "
            "classifier needs rows of at least two classes."
        )
    if not every and labels.dtype.kind in "if" and np.any(labels == -1):
        raise UserError(
            f"target column {target!r} holds the label -1, genprob's marker of unlabeled rows; "
            "pass --unlabeled-label -1 if those rows are unlabeled, or --unlabeled-label none "
            "if -1 is a class."
        )
    if missing.any():  # text labels: an object array where the number -1 marks unlabeled rows
        y = np.full(len(frame), -1, dtype=labels.dtype if labels.dtype.kind in "if" else object)
        y[~missing] = labels
    else:
        y = labels.astype(str) if labels.dtype == object else labels
    features = frame.drop(columns=[target])
    if features.shape[1] == 0:
        raise UserError(f"{path} has no feature columns besides {target!r}.")
    texts = column.dropna().astype(str).str.strip()
    markers = texts[texts.str.lower().isin(MISSING_MARKERS)] if unlabeled is None else []
    for marker in sorted(set(markers)):  # labels such as "?" fitted as a class of their own
        _note(
            args.command,
            f"hint: target column {target!r} holds {marker!r} on {int((texts == marker).sum())} "
            "row(s), which looks like a missing label; it is fitted as a class of its own unless "
            f"--unlabeled {shlex.quote(marker)} marks those rows unlabeled (fitted by EM).",
        )
    missing_cells = getattr(args, "missing", "error")
    features = _check_features(features, path, text_allowed=text_allowed, missing=missing_cells)
    return features, y, missing


def _check_features(
    features, path: str, *, text_allowed: bool, missing: str = "error", predicting: bool = False
):
    """The features, refused with empty cells or (unless ``text_allowed``) text columns."""
    import pandas as pd

    holes = [str(c) for c in features.columns if features[c].isna().any()]
    if holes and missing != "marginalize":
        raise UserError(
            f"missing values in {path}, columns: {', '.join(holes)} (--missing marginalize "
            f"sums them out of the story)."
        )
    if text_allowed:
        return features
    text = [str(c) for c in features.columns if not pd.api.types.is_numeric_dtype(features[c])]
    if text:
        from genprob.app import registry

        readers = " or ".join(repr(e.name) for e in registry.STORIES.values() if e.table_estimator)
        if predicting:  # the model's own columns: the data must hold numbers there
            raise UserError(
                f"non-numeric feature columns in {path}: {', '.join(text)}; the model was "
                "fitted on numbers in those columns."
            )
        raise UserError(
            f"non-numeric feature columns in {path}: {', '.join(text)}; this story needs numbers "
            f"(leave them out with --drop {shlex.quote(','.join(text))}, encode them as category "
            f"codes, or use the {readers} story, which takes text categories)."
        )
    features = features.astype(np.float64)
    infinite = [str(c) for c in features.columns if np.isinf(features[c].to_numpy()).any()]
    if infinite:
        raise UserError(f"infinite values in {path}, columns: {', '.join(infinite)}.")
    return features


def _make_estimator(name: str, features, args, user_story=None):
    """The estimator of story ``name`` (or of ``user_story``) with the command's options."""
    import genprob
    from genprob.app import registry

    options = {"unlabeled_weight": args.unlabeled_weight, "random_state": args.seed}
    options["missing"] = args.missing
    if _every_label_a_class(args.unlabeled):
        options["unlabeled_label"] = None
    if args.max_iter is not None:
        options["max_iter"] = args.max_iter
    observed = np.nan_to_num(features.to_numpy(), nan=0.0)  # shape from the observed cells
    if user_story is not None:
        try:
            story = user_story.from_data(observed)
        except Exception as error:  # the user's code
            raise UserError(
                f"--story {name}: {user_story.__name__}.from_data raised "
                f"{type(error).__name__}: {_first_line(error)}"
            ) from None
        return _set_cli_params(genprob.GenerativeClassifier(story, **options), args.param or [])
    entry = registry.get(name)
    if entry.table_estimator:  # the family's own estimator reads the table
        estimator = entry.table_estimator(features, **options)
    elif entry.face:  # the scikit-learn-style estimator of the story, named in the summary
        from genprob.families._registry import load

        estimator = load(entry.face)(**entry.face_options, **options)
    else:
        estimator = genprob.GenerativeClassifier(registry.make_story(name, observed), **options)
    return _set_cli_params(estimator, args.param or [])


#: Estimator parameters the command line sets through flags of its own.
_FLAG_PARAMETERS = {
    "unlabeled_weight": "--unlabeled-weight",
    "random_state": "--seed",
    "missing": "--missing",
    "unlabeled_label": "--unlabeled-label",
    "max_iter": "--max-iter",
}


#: Estimator parameters that take a Python object, which no text on a command line gives.
_OBJECT_PARAMETERS = frozenset({"covariance_estimator", "story", "families"})


def _settable(name, value) -> bool:
    return (
        name not in _FLAG_PARAMETERS
        and name not in _OBJECT_PARAMETERS
        and (
            isinstance(value, None | bool | int | float | str)
            # a list of numbers, as "1,2,3" (MixtureDiscriminantAnalysis's n_components)
            or (isinstance(value, list | tuple) and all(isinstance(v, int | float) for v in value))
        )
    )


def _param_value(text: str):
    """A ``--param`` value: None, a bool, an int, a float, a list of numbers, or the text."""
    lowered = text.strip().lower()
    if lowered in ("none", "null"):
        return None
    if lowered in ("true", "false"):
        return lowered == "true"
    for parse in (int, float):
        try:
            return parse(text)
        except ValueError:
            pass
    if "," in text:
        try:
            return [float(part) for part in text.split(",")]
        except ValueError:
            pass
    return text.strip()


def _set_cli_params(estimator, items):
    """``estimator`` with the ``--param`` settings (their values checked by its fit)."""
    current = estimator.get_params(deep=False)
    settings, texts = {}, {}
    for item in items:
        name, equals, text = item.partition("=")
        name = name.strip()
        if not equals or not name:
            raise UserError(f"--param {item!r}: write it as NAME=VALUE, e.g. --param alpha=0.5.")
        if name in _FLAG_PARAMETERS:
            raise UserError(f"--param {name}: set it with {_FLAG_PARAMETERS[name]}.")
        if name not in current or not _settable(name, current[name]):
            known = sorted(key for key, value in current.items() if _settable(key, value))
            raise UserError(
                f"--param {name}: {type(estimator).__name__} has no such setting; its settings: "
                f"{', '.join(known)}."
            )
        settings[name], texts[name] = _param_value(text), text
    estimator.set_params(**settings)
    estimator.cli_params_ = texts  # for messages about them (not saved)
    return estimator


def _fit_features(args):
    """Read ``args.data``, split the target, check the features, build and fit the estimator."""
    from sklearn.exceptions import ConvergenceWarning

    from genprob.app import registry

    _positionals(args)
    user_story = None if args.story_ref is None else _import_story(args.story_ref)
    # the registry's ValueError names the known stories
    name = args.story_ref if user_story else registry.get(args.story).name
    text_allowed = user_story is None and registry.get(name).table_estimator is not None
    features, y, unlabeled = _read_features(args, text_allowed)
    if not 0.0 <= args.unlabeled_weight <= 1.0:
        raise UserError(f"--unlabeled-weight must lie in [0, 1], got {args.unlabeled_weight}.")
    estimator = _make_estimator(name, features, args, user_story)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ConvergenceWarning)
        try:
            estimator.fit(features, y)
        except ValueError as error:
            raise UserError(_param_message(estimator, error)) from None
    # after the fit, which checked every column (a Parquet list column has no distinct count)
    _column_warnings(features, args.command)
    for warning in caught:
        if issubclass(warning.category, ConvergenceWarning):
            _note(args.command, f"warning: {' '.join(str(warning.message).split())}")
    return name, estimator, features, y, unlabeled


def _select_columns(frame, args, path: str, target: str | None):
    """``frame`` with the columns ``--features`` names (in order) or without ``--drop``'s."""
    texts = {"--features": getattr(args, "features", None), "--drop": getattr(args, "drop", None)}
    named = {option: text for option, text in texts.items() if text is not None}
    if not named:
        return frame
    columns = [str(c) for c in frame.columns]
    frame = frame.rename(columns=str)
    for option, text in named.items():
        named[option] = [name.strip() for name in text.split(",")]  # blanks around a name ignored
        if not all(named[option]):
            raise UserError(
                f"{option} {text!r}: an empty column name; give names separated by commas."
            )
        for name in named[option]:
            if name not in columns:
                raise UserError(
                    f"{option}: no column {name!r} in {path}; columns: {', '.join(columns)}."
                )
            if name == target:
                raise UserError(f"{option}: {name!r} is the --target column, not a feature.")
    chosen = named.get("--features") or [c for c in columns if c != target]
    chosen = [c for c in dict.fromkeys(chosen) if c not in named.get("--drop", ())]
    if not chosen:
        raise UserError(f"--features/--drop leave no feature column of {path}.")
    return frame[chosen + ([target] if target in columns else [])]


#: Fewest rows on which a column with a distinct value per row is taken for an identifier.
ID_MIN_ROWS = 8
#: A text column with fewer rows per category than this is flagged (a category per few rows).
ROWS_PER_CATEGORY = 5
#: Target values that usually mean "no label", compared stripped and lower-cased (pandas reads NA).
MISSING_MARKERS = frozenset({"?", "??", "unknown", "unk", "missing", "-", "--", "n.a.", "."})


def _column_warnings(features, command: str) -> None:
    """Warn of columns that look like identifiers or have a category per few rows."""
    import pandas as pd

    for name in features.columns:
        values = features[name].dropna()
        rows, distinct = len(values), values.nunique()
        if rows < ID_MIN_ROWS:
            continue
        text = not pd.api.types.is_numeric_dtype(values)
        whole = text or bool(np.all(np.mod(values.to_numpy(dtype=np.float64), 1) == 0))
        if distinct == rows and whole:
            found = (
                f"column {str(name)!r} holds a distinct value on each of its {rows} rows, like an "
                "identifier, and is fitted as a feature"
            )
        elif text and distinct * ROWS_PER_CATEGORY > rows:
            found = (
                f"text column {str(name)!r} has {distinct} categories in {rows} rows (fewer than "
                f"{ROWS_PER_CATEGORY} rows per category), each with its own parameters per class"
            )
        else:
            continue
        _note(command, f"warning: {found}; --drop {shlex.quote(str(name))} leaves it out.")


def _param_message(estimator, error) -> str:
    """An estimator's error, led by the ``--param`` it names."""
    message = " ".join(str(error).split())
    for name, text in getattr(estimator, "cli_params_", {}).items():
        if f"'{name}' parameter" in message or f"{name}=" in message:
            return f"--param {name}={text}: {message}"
    return message


def _note(command: str, message: str):
    print(f"genprob {command}: {message}", file=sys.stderr, flush=True)


# -- genprob demo ----------------------------------------------------------------------------------
def _run_demo(args) -> int:
    import matplotlib

    matplotlib.use("Agg")  # files only, no display
    from genprob.app import report

    _check_out(args.out, directory=True)
    start = time.perf_counter()

    def progress(step, total, message):
        elapsed = time.perf_counter() - start
        _note("demo", f"[{step}/{total}] {message} ({elapsed:.0f} s)")

    settings = report.Settings.preset(quick=args.quick, seed=args.seed)
    # NUTS is the longest step: a progress bar for people at a terminal, none in logs and pipes
    settings = dataclasses.replace(settings, progress_bar=sys.stderr.isatty())
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", UserWarning)
        path = report.write_report(args.out, settings, progress)
    # the library's advice (a UserWarning raised in genprob's code), not a dependency's notices
    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
    advice = (
        w
        for w in caught
        if issubclass(w.category, UserWarning) and os.path.abspath(w.filename).startswith(package)
    )
    for line in demo_advice([str(w.message) for w in advice], settings):
        _note("demo", f"warning: {line}")
    figures = sorted(name for name in os.listdir(args.out) if name.endswith(".png"))
    print(
        f"report written to {path} with {len(figures)} figures "
        f"({', '.join(figures)}) in {time.perf_counter() - start:.0f} s"
    )
    return 0


def demo_advice(messages, settings) -> list[str]:
    """The library's warnings as the demo's lines, each once, and the remedy for few draws."""
    lines = list(dict.fromkeys(" ".join(message.split()) for message in messages))
    if any(word in line for line in lines for word in ("draws", "chains")):
        if settings.quick:
            lines.append("in the demo: run without --quick for more draws.")
        else:
            lines.append(
                f"in the demo: this was the full demo, {settings.nuts_chains} chains x "
                f"{settings.nuts_samples} draws at --seed {settings.seed}: try another --seed, or "
                f"genprob compare with more --num-samples and --chains."
            )
    return lines


# -- genprob fit -----------------------------------------------------------------------------------
def _run_fit(args) -> int:
    out = args.out if args.out.endswith(".npz") else args.out + ".npz"
    _check_out(out)
    from genprob.io.persistence import save_target_error

    what = save_target_error(out)
    if what:  # a FIFO or a device: refused before the fit, and left as it is
        raise UserError(f"--out {out}: {what}, not a regular file; give a model file's name.")
    _positionals(args)
    if os.path.isdir(args.data):
        return _run_fit_streaming(args)
    name, estimator, features, y, unlabeled = _fit_features(args)
    # The target's name travels with the model, so that `genprob predict` can drop the column.
    estimator.target_column_ = args.target
    loglik = estimator.log_likelihood(features, y)  # refuses rows without a finite score
    path = estimator.save(args.out)
    labeled = ~unlabeled
    accuracy = estimator.score(features[labeled], np.asarray(list(y[labeled])))
    columns = [str(c) for c in features.columns]
    shown = ", ".join(columns[:8]) + (
        f", ... ({len(columns) - 8} more)" if len(columns) > 8 else ""
    )
    print(f"genprob fit: {name} on {args.data} (target {args.target})")
    print(f"  model:          {type(estimator).__name__}, {estimator.num_parameters()} parameters")
    print(f"  classes:        {', '.join(map(str, estimator.classes_))}")
    print(f"  features:       {len(columns)} ({shown})")
    rows = f"{len(y)} ({int(labeled.sum())} labeled, {int(unlabeled.sum())} unlabeled)"
    if unlabeled.any():
        state = "converged" if estimator.converged_ else "NOT converged"
        rows += f"; EM: {estimator.n_iter_} iterations, {state}"
    print(f"  rows:           {rows}")
    if hasattr(estimator, "n_components_"):  # a model chosen by a criterion, per class
        chosen = zip(estimator.classes_, estimator.structure_, estimator.n_components_, strict=True)
        text = ", ".join(f"{c}: {s} x {g}" for c, s, g in chosen)
        print(f"  chosen:         {text} (structure x components, by {estimator.criterion})")
    print(f"  train accuracy: {accuracy:.4f} (labeled rows)")
    marginal = ", marginal on unlabeled rows" if unlabeled.any() else ""
    # which call gives the number: without y, log_likelihood(X) is the mixture's log p(x)
    print(
        f"  log-likelihood: {loglik:.6g} ({loglik / len(y):.4g} per row; with the labels, "
        f"est.log_likelihood(X, y){marginal})"
    )
    print(f"  criteria:       {_criteria_text(estimator, features, y)}")
    print(f"  saved:          {path}")
    if hasattr(estimator, "summary"):  # MixtureDiscriminantAnalysis: mclust's summary(MclustDA)
        truth = np.asarray(list(y[labeled]))
        print(f"\n{estimator.summary(features[labeled], truth)}")
    return 0


def _criteria_text(estimator, features, y) -> str:
    """BIC and AIC of the fit on its rows (the log-likelihood above), smaller is better."""
    bic, aic = estimator.bic(features, y), estimator.aic(features, y)
    return f"BIC {bic:.6g}, AIC {aic:.6g} (est.bic(X, y), est.aic(X, y); smaller is better)"


def _run_fit_streaming(args) -> int:
    """``genprob fit STORY DIR/``: a Parquet directory, streamed."""
    from genprob.app import registry
    from genprob.engine import streaming

    if args.unlabeled is not None and not _every_label_a_class(args.unlabeled):
        raise UserError(
            "--unlabeled-label VALUE applies to tables read whole; in a Parquet directory an "
            "empty target cell (null) marks an unlabeled row (--unlabeled-label none: none may "
            "be empty)."
        )
    for option in ("story_ref", "features", "drop"):
        if getattr(args, option) is not None:
            raise UserError(
                f"--{option.removesuffix('_ref')} applies to tables read whole; {args.data} is a "
                "Parquet directory (streamed)."
            )
    entry = registry.get(args.story)
    try:
        source = streaming.parquet(args.data, target=args.target)
        first, _, _ = next(source.chunks())
    except (ValueError, StopIteration, OSError) as error:
        raise UserError(
            f"{args.data} is a directory, read as a Parquet dataset, and cannot be streamed: "
            f"{_first_line(error) or 'no rows'}"
        ) from None
    sample = _check_features(first, args.data, text_allowed=entry.table_estimator is not None)
    estimator = _make_estimator(entry.name, sample, args)
    progress = streaming.ProgressBar(total=source.num_rows)
    start = time.perf_counter()
    try:  # the library's messages are printed as they are
        streaming.fit(estimator, source, progress=progress)
    finally:
        progress.close()
    elapsed = time.perf_counter() - start
    estimator.target_column_ = args.target
    path = estimator.save(args.out)
    print(f"genprob fit: {entry.name} on {args.data} (target {args.target}), streamed")
    print(f"  model:          {type(estimator).__name__}, {estimator.num_parameters()} parameters")
    print(f"  classes:        {', '.join(map(str, estimator.classes_))}")
    print(
        f"  rows:           {source.num_rows} in {elapsed:.1f} s "
        f"({source.num_rows / max(elapsed, 1e-9):,.0f} rows/s)"
    )
    if hasattr(estimator, "n_iter_"):
        state = "converged" if estimator.converged_ else "NOT converged"
        print(f"  EM:             {estimator.n_iter_} iterations, {state}")
    if hasattr(estimator, "class_count_"):
        counts = np.asarray(estimator.class_count_)
        print(f"  class weights:  {', '.join(f'{c:g}' for c in counts)}")
    print(f"  saved:          {path}")
    return 0


# -- genprob predict -------------------------------------------------------------------------------
def _prediction_features(model, frame, path: str):
    """The columns of ``frame`` the model was fitted on, in its order."""
    from genprob.families import families

    target = getattr(model, "target_column_", None)
    if target is not None and target in frame.columns:
        frame = frame.drop(columns=[target])
    names = getattr(model, "feature_names_in_", None)
    if names is None:  # the estimator's own message names a wrong column count
        features = frame
    else:
        names = [str(n) for n in names]
        frame = frame.rename(columns=str)
        missing = [n for n in names if n not in frame.columns]
        if missing:
            raise UserError(
                f"{path} lacks the model's feature columns: {', '.join(missing)} (the model "
                f"uses: {', '.join(names)})."
            )
        extra = [str(c) for c in frame.columns if c not in set(names)]
        if extra:
            _note("predict", f"ignoring columns the model does not use: {', '.join(extra)}")
        features = frame[names]
    family = families().get(getattr(getattr(model, "story_", None), "name", None))
    return _check_features(
        features,
        path,
        text_allowed=any(c.table_estimator for c in getattr(family, "commands", ())),
        missing=getattr(model, "missing", "error"),  # a model fit to marginalize predicts so too
        predicting=True,
    )


def _run_predict(args) -> int:
    import pandas as pd

    import genprob
    from genprob.engine.masking import marginalized

    if args.out:
        _check_out(args.out)
    if not os.path.isfile(args.model):
        raise UserError(f"no such model file: {args.model}.")
    if args.story_ref is not None:
        _import_story(args.story_ref)
    try:  # ModelFileError (a ValueError) for any damaged content, printed as it is
        model = genprob.load(args.model)
    except OSError as error:
        raise UserError(
            f"cannot read model file {args.model}: {error.strerror or error}."
        ) from None
    frame = _read_table(args.data, args)
    # no refit; a story that cannot leave entries out is refused (no story_: by the estimator)
    if args.missing == "marginalize" and hasattr(model, "story_"):
        try:
            marginalized(model.story_)
        except ValueError as error:
            raise UserError(
                f"--missing marginalize: this model's story cannot sum out empty cells "
                f"({' '.join(str(error).split())})"
            ) from None
    if args.missing is not None:
        model.set_params(missing=args.missing)
    features = _prediction_features(model, frame, args.data)
    out = pd.DataFrame({"prediction": model.predict(features)})
    if args.proba:
        proba = model.predict_proba(features)
        for k, label in enumerate(model.classes_):
            out[f"proba_{label}"] = proba[:, k]
    if args.out:
        out.to_csv(args.out, index=False)
        _note("predict", f"wrote {len(out)} predictions to {args.out}")
    else:
        out.to_csv(sys.stdout, index=False)
    return 0


# -- genprob compare -------------------------------------------------------------------------------
def _run_compare(args) -> int:
    import matplotlib

    matplotlib.use("Agg")
    import pandas as pd

    import genprob
    from genprob.app.report import convergence_line, save_figure

    if args.method == "nuts":  # a missing sampler package is named before the fit
        genprob.mcmc.check_options(sampler=args.sampler)
    _check_out(args.out, directory=True)
    name, estimator, features, y, _ = _fit_features(args)
    unknown = [var for var in args.var_names or () if var not in estimator.params_]
    if unknown:  # checked before sampling, so no draws are lost to a typo
        raise UserError(
            f"--var-names: {', '.join(map(repr, unknown))} is not a parameter of {name}; its "
            f"parameters: {', '.join(sorted(estimator.params_))}."
        )
    what = (
        f"{args.chains} chain(s) x ({args.num_warmup} warm-up + {args.num_samples} draws)"
        if args.method == "nuts"
        else f"{args.chains} chain(s) x {args.num_samples} exact draws"
    )
    _note("compare", f"posterior of {name} on {args.data} by {args.method}: {what} ...")
    start = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        idata = estimator.posterior(
            features,
            y,
            method=args.method,
            num_samples=args.num_samples,
            num_warmup=args.num_warmup,
            num_chains=args.chains,
            random_state=args.seed,
            progress_bar=args.method == "nuts" and sys.stderr.isatty(),
            sampler=args.sampler,
        )
    for warning in caught:  # the library's advice
        _note("compare", f"warning: {' '.join(str(warning.message).split())}")
    _note("compare", f"sampled in {time.perf_counter() - start:.1f} s")
    table = genprob.mle_vs_posterior_table(idata, var_names=args.var_names)
    names = args.var_names or list(idata.posterior.data_vars)
    os.makedirs(args.out, exist_ok=True)
    table.to_csv(os.path.join(args.out, "mle_vs_posterior.csv"), index=False)
    with pd.option_context("display.max_rows", None, "display.width", 200):
        print(table.to_string(index=False, float_format=lambda v: f"{v:.4g}"))
    failed = False
    if args.method == "nuts":
        divergences = int(idata.sample_stats["diverging"].sum())
        print(f"divergences: {divergences}")
        line = convergence_line(table)
        print(line)
        failed = "FAILED" in line
    inside = int(table["mle_in_hdi"].sum())
    print(f"MLE inside the 94% HDI: {inside} of {len(table)} entries")
    criteria = _criteria_text(estimator, features, y)
    print(f"MLE fit: {estimator.num_parameters()} parameters, {criteria}")
    written = [os.path.join(args.out, "mle_vs_posterior.csv")]
    for var in names:
        # one figure per class when a parameter has more entries than a readable figure
        entries = int((table["parameter"].str.split("[").str[0] == var).sum())
        split = entries > 12 and "class" in idata.posterior[var].dims
        groups = list(idata.posterior.coords["class"].values) if split else [None]
        for group in groups:
            panels = -(-entries // len(groups))
            figure = genprob.plot_posterior_vs_mle(
                idata,
                var_names=[var],
                coords=None if group is None else {"class": [group]},
                max_panels=max(entries, 12),
                figsize=(13, max(3.0, 2.6 * -(-panels // 3) + 0.6)),
                textsize=10,
                title=f"{name} on {os.path.basename(args.data)}: {args.method} posterior of "
                f"{var}{'' if group is None else f' ({group})'} ({what}) against the MLE",
            )
            suffix = "" if group is None else f"_{group}"
            path = os.path.join(args.out, f"posterior_vs_mle_{var}{suffix}.png")
            save_figure(figure, path)
            written.append(path)
    print(f"wrote {', '.join(written)}")
    if failed and not args.accept_diagnostics:
        _note("compare", "a diagnostic failed (exit 1; --accept-diagnostics accepts the draws)")
        return 1
    return 0


# -- entry point -----------------------------------------------------------------------------------
def main(argv=None) -> int:
    """Run the ``genprob`` command line; return the exit code."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exit_:  # --help (0) or a usage error (2)
        return int(exit_.code or 0)
    try:
        return int(args.handler(args))
    except KeyboardInterrupt:
        print(f"genprob {args.command}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # the reader of stdout went away (`genprob predict ... | head`)
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())  # no second error when Python flushes at exit
        return 141
    except Exception as error:  # exit 1 is reserved for a failed check: every error is a 2
        message = " ".join(str(error).split()) or type(error).__name__
        if not isinstance(error, UserError | ValueError):
            message = f"{type(error).__name__}: {message}"
        print(f"genprob {args.command}: error: {message}", file=sys.stderr)
        return 2


def run() -> None:
    """The ``genprob`` console script: :func:`main`, compiled programs kept (docs/cli.md: why)."""
    # before JAX loads: jaxlib logs a false error line per cached program ("1": import jax's)
    if os.environ.get("TF_CPP_MIN_LOG_LEVEL", "1") == "1":
        os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
    _keep_compiled_programs()
    code = main()
    _drop_damaged_caches()
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe or stream: nothing left to write
            pass
    os._exit(code)


def _keep_compiled_programs() -> None:
    """JAX's persistent compilation cache for this process (docs/cli.md says why)."""
    if os.environ.get("GENPROB_CLI_CACHE", "1").strip().lower() in {"0", "off", "false", "no"}:
        return
    import jax

    if jax.config.jax_compilation_cache_dir is not None:
        return
    home = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    directory = os.path.join(home, "genprob", "jax")
    jax.config.update("jax_compilation_cache_dir", directory)
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)  # small programs too
    jax.config.update("jax_persistent_cache_min_entry_size_bytes", -1)
    jax.config.update("jax_compilation_cache_max_size", CLI_CACHE_BYTES)
    show = warnings.showwarning

    def drop_damaged(message, category, *args, **kwargs):
        # JAX compiles again past an unreadable entry but keeps it: drop the cache once
        if "persistent compilation cache entry" not in str(message):
            return show(message, category, *args, **kwargs)
        warnings.showwarning = show
        _DAMAGED_CACHES.append(directory)

    warnings.showwarning = drop_damaged
    atexit.register(_drop_damaged_caches)  # run() leaves by os._exit and calls it itself


def _drop_damaged_caches() -> None:
    while _DAMAGED_CACHES:
        shutil.rmtree(_DAMAGED_CACHES.pop(), ignore_errors=True)


if __name__ == "__main__":
    run()
