"""The ``genprob`` command line.

Commands are subcommands of one ``argparse`` parser; each lives in an ``_add_<command>`` function
that registers its arguments and its handler, so new commands are added the same way.

* ``genprob check [STORY ...] [--data NAME|FILE.csv --target COL] [--dtype float64]``: the
  closed-form vs optimizer cross-check (:func:`genprob.crosscheck`) of built-in stories on their
  natural bundled data sets, or on given data; prints one table per check.

Exit codes: 0 success, 1 a check failed, 2 a usage or input error (reported on one line, without
a traceback).
"""

from __future__ import annotations

import argparse
import os
import sys

import numpy as np

__all__ = ["main", "build_parser", "UserError"]


class UserError(Exception):
    """A mistake in the command's input: reported on one line, exit code 2."""


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        # one line instead of argparse's usage block
        self.exit(2, f"{self.prog}: error: {message} (see --help)\n")


def build_parser() -> argparse.ArgumentParser:
    """The ``genprob`` argument parser with every subcommand."""
    parser = _Parser(
        prog="genprob",
        description="Generative classifiers as probabilistic programs (JAX + NumPyro).",
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    commands.required = True
    _add_check(commands)
    return parser


# -- genprob check ---------------------------------------------------------------------------------
def _add_check(commands):
    from genprob import registry

    stories = ", ".join(registry.names())
    data_sets = ", ".join(registry.DATASETS)
    parser = commands.add_parser(
        "check",
        help="cross-check closed-form fits against numerical maximization of the likelihood",
        description=(
            "Fit each story by its closed form and by L-BFGS on the NumPyro model's likelihood "
            "(from a poor start), and print per-parameter differences, the objective at both "
            "solutions and the gradient norm at the closed form. Smoothed/regularized stories "
            "are checked on their penalized (MAP) objective. Exit code 1 if a check fails."
        ),
        epilog=f"stories: {stories}. bundled data sets: {data_sets}.",
    )
    parser.add_argument(
        "stories",
        nargs="*",
        metavar="STORY",
        help="built-in stories to check (default: all of them)",
    )
    parser.add_argument(
        "--data",
        metavar="NAME|FILE.csv",
        help="a bundled data set or a CSV file (default: each story's natural data set)",
    )
    parser.add_argument(
        "--target", metavar="COL", help="label column of the CSV file (required with a CSV)"
    )
    parser.add_argument(
        "--all-data",
        action="store_true",
        help="check each story on every one of its natural data sets, not only the first",
    )
    parser.add_argument(
        "--dtype",
        choices=("float64", "float32"),
        default="float64",
        help="precision, which also selects the tolerances (default: float64)",
    )
    parser.add_argument(
        "--seed", type=int, default=0, help="seed of the optimizer's poor start (default: 0)"
    )
    parser.add_argument(
        "--max-iter",
        type=int,
        default=None,
        metavar="N",
        help="L-BFGS iteration budget (default: genprob.fit_optimizer's)",
    )
    parser.add_argument(
        "--list", action="store_true", help="list the built-in stories and data sets, then exit"
    )
    parser.set_defaults(handler=_run_check)


def _read_csv(path: str, target: str | None):
    """Features and label codes of a CSV file; :class:`UserError` for anything unusable."""
    import pandas as pd

    if not target:
        raise UserError(f"--target COL is required with a CSV file ({path}).")
    if not os.path.isfile(path):
        raise UserError(f"no such file: {path}.")
    try:
        frame = pd.read_csv(path)
    except pd.errors.EmptyDataError:
        raise UserError(f"{path} is empty.") from None
    except (pd.errors.ParserError, UnicodeDecodeError) as error:
        first_line = str(error).strip().splitlines()[0] if str(error).strip() else ""
        raise UserError(f"cannot parse {path} as CSV: {first_line}") from None
    if target not in frame.columns:
        raise UserError(
            f"target column {target!r} is not in {path}; columns: {', '.join(map(str, frame))}."
        )
    if len(frame) == 0:
        raise UserError(f"{path} has a header but no rows.")
    labels = frame[target]
    if labels.isna().any():
        raise UserError(
            f"target column {target!r} has {int(labels.isna().sum())} missing values; "
            "the cross-check needs every row labeled."
        )
    features = frame.drop(columns=[target])
    if features.shape[1] == 0:
        raise UserError(f"{path} has no feature columns besides {target!r}.")
    text = [str(c) for c in features.columns if not pd.api.types.is_numeric_dtype(features[c])]
    if text:
        raise UserError(
            f"non-numeric feature columns in {path}: {', '.join(text)}; encode them as numbers "
            "(e.g. category codes) first."
        )
    missing = [str(c) for c in features.columns if features[c].isna().any()]
    if missing:
        raise UserError(f"missing values in {path}, columns: {', '.join(missing)}.")
    classes, codes = np.unique(labels.astype(str).to_numpy(), return_inverse=True)
    if len(classes) < 2:
        raise UserError(f"target column {target!r} has a single class ({classes[0]!r}).")
    X = features.to_numpy(dtype=np.float64)
    if not np.all(np.isfinite(X)):
        raise UserError(f"{path} has infinite feature values.")
    return X, codes.astype(np.int64)


def _check_jobs(args):
    """``(story name, data label, loader)`` for every requested check."""
    from genprob import registry

    names = args.stories or registry.names()
    unknown = [name for name in names if name not in registry.STORIES]
    if unknown:
        raise UserError(f"unknown story {unknown[0]!r}; known: {', '.join(registry.names())}.")
    if args.target and not args.data:
        raise UserError("--target applies to a CSV file given with --data.")
    jobs = []
    for name in names:
        if args.data is None:
            entry = registry.get(name)
            data_sets = entry.datasets if args.all_data else entry.datasets[:1]
            for data in data_sets:
                jobs.append((name, data, _bundled(data)))
        elif args.data in registry.DATASETS:
            if args.target:
                raise UserError(f"--target is for CSV files; {args.data!r} is a bundled data set.")
            jobs.append((name, args.data, _bundled(args.data)))
        elif args.data.lower().endswith(".csv") or os.path.isfile(args.data):
            path, target = args.data, args.target
            label = f"{os.path.basename(path)} (target {target})"
            jobs.append((name, label, lambda path=path, target=target: _read_csv(path, target)))
        else:
            raise UserError(
                f"--data {args.data!r} is neither a bundled data set "
                f"({', '.join(registry.DATASETS)}) nor a CSV file."
            )
    return jobs


def _bundled(name):
    def load():
        from genprob import registry

        X, y, _ = registry.load_data(name)
        return X, y

    return load


def _run_check(args) -> int:
    from genprob import registry
    from genprob.crosscheck import crosscheck

    if args.list:
        for entry in registry.STORIES.values():
            print(f"{entry.name:<16}{entry.description}  [data: {', '.join(entry.datasets)}]")
        return 0
    if args.max_iter is not None and args.max_iter < 1:
        raise UserError(f"--max-iter must be >= 1, got {args.max_iter}.")
    jobs = _check_jobs(args)
    options = {} if args.max_iter is None else {"max_iter": args.max_iter}
    cache, failed = {}, []
    for name, data_label, load in jobs:
        if data_label not in cache:
            cache[data_label] = load()
        X, y = cache[data_label]
        if sys.stderr.isatty():  # progress for people; pipes and logs get only the tables
            print(f"genprob check: {name} on {data_label} ...", file=sys.stderr, flush=True)
        story = registry.make_story(name, X)
        result = crosscheck(
            story,
            X,
            y,
            dtype=args.dtype,
            seed=args.seed,
            data_name=data_label,
            label=name,
            **options,
        )
        print(result, end="\n\n", flush=True)
        if not result.passed:
            failed.append(f"{name} on {data_label}")
    total = len(jobs)
    if failed:
        print(f"{len(failed)} of {total} checks FAILED: {'; '.join(failed)}")
        return 1
    print(f"all {total} checks passed")
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
    except (UserError, ValueError) as error:
        message = " ".join(str(error).split()) or type(error).__name__
        print(f"genprob {args.command}: error: {message}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"genprob {args.command}: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    raise SystemExit(main())
