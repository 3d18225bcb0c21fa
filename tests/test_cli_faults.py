"""CLI faults over every subcommand: each is one line on stderr and exit code 2, never a traceback
(exit 1 stays reserved for a failed `genprob check`), and --out is checked before the work."""

import io
import os
import pathlib
import re
import stat
import struct
import subprocess
import sys
import zipfile

import numpy as np
import pandas as pd
import pytest

import genprob
from genprob.app import cli
from genprob.datasets import load_iris

GENPROB = os.path.join(os.path.dirname(sys.executable), "genprob")
UNWRITABLE = "/proc"  # no file can be created there, even by root (chmod does not stop root)


def _compressed_data_middle(path):
    """A byte inside the compressed data of the archive's largest member: not a header or
    extra field, which zipfile does not read (a flip there loads the same model)."""
    with zipfile.ZipFile(path) as archive:
        info = max(archive.infolist(), key=lambda member: member.compress_size)
    raw = path.read_bytes()
    name_length, extra_length = struct.unpack(
        "<HH", raw[info.header_offset + 26 : info.header_offset + 30]
    )
    start = info.header_offset + 30 + name_length + extra_length
    return start + info.compress_size // 2


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    root = tmp_path_factory.mktemp("cli_faults")
    X, y = load_iris()
    frame = pd.DataFrame(X[::3], columns=["a", "b", "c", "d"])
    frame["species"] = np.array(["setosa", "versicolor", "virginica"])[y[::3]]
    data = root / "iris.csv"
    frame.to_csv(data, index=False)
    model = root / "model.npz"
    assert (
        cli.main(["fit", "gaussian_nb", str(data), "--target", "species", "--out", str(model)]) == 0
    )
    corrupt = root / "corrupt.npz"
    raw = bytearray(model.read_bytes())
    raw[_compressed_data_middle(model)] ^= 0xFF
    corrupt.write_bytes(bytes(raw))
    garbage = root / "garbage.csv"
    garbage.write_bytes(bytes(range(256)) * 4)
    text_features = root / "text.csv"
    frame.assign(a=["x"] * len(frame)).to_csv(text_features, index=False)
    one_class = root / "one_class.csv"
    frame.assign(species=["setosa"] * (len(frame) - 5) + [""] * 5).to_csv(one_class, index=False)
    lacking = root / "lacking.csv"
    frame.drop(columns=["d"]).to_csv(lacking, index=False)
    a_file = root / "plain.txt"
    a_file.write_text("not a directory")
    # issue 60: a FIFO as --out (directly and through a link), Parquet columns MixedNB refuses
    fifo, link = root / "pipe.npz", root / "link.npz"
    os.mkfifo(fifo)
    link.symlink_to(fifo)
    rows = len(frame)
    parquet = {
        "struct": [{"x": i} for i in range(rows)],
        "list": [[i, 1] for i in range(rows)],
        "datetime": pd.date_range("2020-01-01", periods=rows),
        "timedelta": pd.to_timedelta(np.arange(rows), unit="s"),
    }
    for kind, column in parquet.items():
        frame.assign(odd=column).to_parquet(root / f"{kind}.parquet")
    return {
        "root": root,
        "data": str(data),
        "model": str(model),
        "corrupt": str(corrupt),
        "garbage": str(garbage),
        "text": str(text_features),
        "one_class": str(one_class),
        "lacking": str(lacking),
        "file": str(a_file),
        "fifo": str(fifo),
        "link": str(link),
        **{kind: str(root / f"{kind}.parquet") for kind in parquet},
    }


def _fails_cleanly(capsys, argv, *fragments):
    code = cli.main(argv)
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert code == 2, (argv, code, captured.err)
    assert len(lines) == 1, captured.err
    assert "Traceback" not in captured.err
    for fragment in fragments:
        assert fragment in lines[0], lines[0]
    return lines[0]


def _cases(f):
    """(argv, fragments expected in the message) per fault, for every subcommand."""
    missing = str(f["root"] / "absent.csv")
    fit = ["fit", "gaussian_nb"]
    compare = ["compare", "gaussian_nb"]
    target = ["--target", "species"]
    return {
        # missing and unreadable files
        "check missing data": (["check", "lda", "--data", missing, "--target", "y"], ["no such"]),
        "fit missing data": ([*fit, missing, *target], ["no such file", "absent.csv"]),
        "compare missing data": ([*compare, missing, *target], ["no such file"]),
        "predict missing model": (["predict", missing, f["data"]], ["no such model file"]),
        "predict missing data": (["predict", f["model"], missing], ["no such file"]),
        "fit data is a directory": ([*fit, str(f["root"]), *target], ["is a directory"]),
        "fit binary garbage": ([*fit, f["garbage"], *target], ["garbage.csv"]),
        "check binary garbage": (["check", "lda", "--data", f["garbage"], "--target", "y"], []),
        # bad columns
        "fit unknown target": ([*fit, f["data"], "--target", "nope"], ["'nope'", "columns"]),
        "compare unknown target": ([*compare, f["data"], "--target", "nope"], ["'nope'"]),
        "check unknown target": (["check", "lda", "--data", f["data"], "--target", "x"], ["'x'"]),
        "fit text features": ([*fit, f["text"], *target], ["non-numeric", "a"]),
        "predict missing columns": (["predict", f["model"], f["lacking"]], ["lacks", "d"]),
        "predict text features": (["predict", f["model"], f["text"]], ["non-numeric"]),
        "fit one labeled class": ([*fit, f["one_class"], *target], ["single class", "setosa"]),
        # Parquet columns MixedNB cannot hold: named, with what was expected
        "fit mixed struct column": (
            ["fit", "mixed", f["struct"], *target],
            ["column 'odd' holds dict values", "a category is a string, a number or a boolean"],
        ),
        "fit mixed list column": (
            ["fit", "mixed", f["list"], *target],
            ["column 'odd' holds ndarray values", "a category is a string"],
        ),
        "check mixed struct column": (
            ["check", "mixed", "--data", f["struct"], *target],
            ["column 'odd' holds dict values"],
        ),
        "fit mixed datetime column": (
            ["fit", "mixed", f["datetime"], *target],
            ["column 'odd' holds dates, times or durations", "convert it"],
        ),
        "fit mixed timedelta column": (
            ["fit", "mixed", f["timedelta"], *target],
            ["column 'odd' holds dates, times or durations"],
        ),
        # bad model files
        "predict corrupt model": (["predict", f["corrupt"], f["data"]], ["corrupt.npz"]),
        "predict csv as model": (["predict", f["data"], f["data"]], ["not a genprob model"]),
        # bad --out
        "fit out in missing dir": (
            [*fit, f["data"], *target, "--out", str(f["root"] / "no" / "m.npz")],
            ["--out", "no directory"],
        ),
        "fit out unwritable": (
            [*fit, f["data"], *target, "--out", f"{UNWRITABLE}/m.npz"],
            ["--out", "cannot write"],
        ),
        "predict out missing dir": (
            ["predict", f["model"], f["data"], "--out", str(f["root"] / "no" / "p.csv")],
            ["--out", "no directory"],
        ),
        "predict out unwritable": (
            ["predict", f["model"], f["data"], "--out", f"{UNWRITABLE}/p.csv"],
            ["--out", "cannot write"],
        ),
        "predict out is a directory": (
            ["predict", f["model"], f["data"], "--out", str(f["root"])],
            ["--out", "is a directory"],
        ),
        "fit out is a fifo": (
            [*fit, f["data"], *target, "--out", f["fifo"]],
            ["--out", "pipe.npz: it is a FIFO (named pipe), not a regular file"],
        ),
        "fit out links to a fifo": (
            [*fit, f["data"], *target, "--out", f["link"][: -len(".npz")]],
            ["--out", "link.npz: it links to", "pipe.npz, which is a FIFO (named pipe)"],
        ),
        "compare out is a file": ([*compare, f["data"], *target, "--out", f["file"]], ["--out"]),
        "compare out under a file": (
            [*compare, f["data"], *target, "--out", f["file"] + "/sub"],
            ["--out", "no directory"],
        ),
        "compare out unwritable": (
            [*compare, f["data"], *target, "--out", f"{UNWRITABLE}/cmp"],
            ["--out", "cannot write"],
        ),
        "demo out is a file": (["demo", "--out", f["file"]], ["--out", "not a directory"]),
        "demo out unwritable": (["demo", "--out", f"{UNWRITABLE}/rep"], ["cannot write"]),
        # bad numeric options name the option
        "check seed -5": (["check", "lda", "--seed", "-5"], ["--seed", "-5"]),
        "demo seed -5": (["demo", "--seed", "-5"], ["--seed", "-5"]),
        "fit seed -5": ([*fit, f["data"], *target, "--seed", "-5"], ["--seed", "-5"]),
        "compare seed 2.5": ([*compare, f["data"], *target, "--seed", "2.5"], ["--seed", "2.5"]),
        "fit seed 2**32": ([*fit, f["data"], *target, "--seed", str(2**32)], ["--seed"]),
        "check max-iter 0": (["check", "lda", "--max-iter", "0"], ["--max-iter", "0"]),
        "compare num-samples 0": (
            [*compare, f["data"], *target, "--num-samples", "0"],
            ["--num-samples"],
        ),
        "compare num-warmup -1": (
            [*compare, f["data"], *target, "--num-warmup", "-1"],
            ["--num-warmup"],
        ),
        "compare chains x": ([*compare, f["data"], *target, "--chains", "x"], ["--chains", "x"]),
        "fit unlabeled-weight 2": (
            [*fit, f["data"], *target, "--unlabeled-weight", "2"],
            ["--unlabeled-weight"],
        ),
        # usage
        "unknown story": (["fit", "nope", f["data"], *target], ["unknown story 'nope'"]),
        "unknown check story": (["check", "nope"], ["unknown story 'nope'"]),
    }


_PLACEHOLDERS = dict.fromkeys(
    ("data", "model", "corrupt", "garbage", "text", "one_class", "lacking", "file", "fifo"), ""
) | dict.fromkeys(("link", "struct", "list", "datetime", "timedelta"), "")
CASE_NAMES = list(_cases({**_PLACEHOLDERS, "root": pathlib.Path("/")}))


@pytest.mark.parametrize("case", CASE_NAMES)
def test_fault_is_one_line_and_exit_2(case, files, capsys, monkeypatch):
    argv, fragments = _cases(files)[case]
    # --out is checked before the work: none of these cases may reach fitting or loading.
    if "out" in case:
        monkeypatch.setattr(cli, "_fit_features", _must_not_run)
        monkeypatch.setattr("genprob.load", _must_not_run)
        monkeypatch.setattr("genprob.app.report.write_report", _must_not_run)
    _fails_cleanly(capsys, argv, *fragments)


def test_a_fifo_out_is_left_a_fifo(files, capsys):
    """The FIFO cases above leave the FIFO and the link to it as they were (nothing written)."""
    for out in (files["fifo"], files["link"]):
        argv = ["fit", "gaussian_nb", files["data"], "--target", "species", "--out", out]
        assert cli.main(argv) == 2
    capsys.readouterr()
    assert stat.S_ISFIFO(os.lstat(files["fifo"]).st_mode)
    assert os.readlink(files["link"]) == files["fifo"]
    assert not [p for p in files["root"].iterdir() if p.name.endswith(".tmp")]


def _must_not_run(*args, **kwargs):
    raise AssertionError("the work started before --out was checked")


def test_unexpected_errors_are_one_line_and_exit_2(files, capsys, monkeypatch):
    def broken(*args, **kwargs):
        raise RuntimeError("something\ninternal")

    monkeypatch.setattr(cli, "_fit_features", broken)
    line = _fails_cleanly(capsys, ["fit", "gaussian_nb", files["data"], "--target", "species"])
    assert line == "genprob fit: error: RuntimeError: something internal"


def test_out_checks_accept_good_targets(files, capsys):
    out = files["root"] / "new" / "nested"
    assert cli.main(["predict", files["model"], files["data"], "--out", str(out) + ".csv"]) == 2
    capsys.readouterr()
    target = files["root"] / "predictions.csv"
    assert cli.main(["predict", files["model"], files["data"], "--out", str(target)]) == 0
    assert len(pd.read_csv(target)) == 50
    cli._check_out(str(out), directory=True)  # a new nested directory under a writable one is fine
    assert not out.exists()  # the check creates nothing


def test_corrupt_model_exit_code_in_a_real_process(files):
    result = subprocess.run(
        [GENPROB, "predict", files["corrupt"], files["data"]],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 2, result.stderr
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in result.stderr
    assert lines[0].startswith("genprob predict: error:") and "corrupt.npz" in lines[0]


def _finite_or_one_line_error(code, captured):
    """Exit 0 with no empty or NaN cell in the output, or exit 2 with one clear line."""
    if code == 0:
        assert ",," not in captured.out and not captured.out.rstrip().endswith(",")
        assert not re.search(r"\bnan\b", captured.out.lower()), captured.out
        return None
    assert code == 2, captured.err
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in captured.err
    return lines[0]


def test_predict_never_prints_empty_probability_cells(files, capsys, tmp_path):
    frame = pd.read_csv(files["data"]).drop(columns=["species"])
    frame.iloc[3, 0] = 1e200  # squares overflow in the Gaussian density (issue item 2)
    path = tmp_path / "extreme.csv"
    frame.to_csv(path, index=False)
    code = cli.main(["predict", files["model"], str(path), "--proba"])
    line = _finite_or_one_line_error(code, capsys.readouterr())
    if line is not None:
        # refused by the estimator, naming the row (0-based 3), before any cell is printed
        assert "row 3 has values too large to score" in line


def test_fit_never_saves_a_nan_model(files, capsys, tmp_path):
    frame = pd.read_csv(files["data"])
    frame["a"] = 2.5  # the only Gaussian column of MixedNB, constant (issue item 3)
    frame[["b", "c", "d"]] = frame[["b", "c", "d"]].round().astype(int)  # categorical codes
    path = tmp_path / "constant.csv"
    frame.to_csv(path, index=False)
    out = tmp_path / "m.npz"
    code = cli.main(["fit", "mixed", str(path), "--target", "species", "--out", str(out)])
    line = _finite_or_one_line_error(code, capsys.readouterr())
    if line is not None:
        # refused at fit like GaussianNB's zero variance, naming the column and the class
        assert "feature 'a' has zero variance" in line and not out.exists()


@pytest.fixture(scope="module")
def categorical_files(tmp_path_factory):
    root = tmp_path_factory.mktemp("cli_categorical")
    rng = np.random.default_rng(0)
    frame = pd.DataFrame({"colour": rng.integers(0, 3, 60), "size": rng.integers(0, 4, 60)})
    frame["y"] = rng.integers(0, 2, 60)
    data = root / "train.csv"
    frame.to_csv(data, index=False)
    model = root / "categorical.npz"
    assert cli.main(["fit", "categorical", str(data), "--target", "y", "--out", str(model)]) == 0
    return {"root": root, "model": str(model), "frame": frame}


@pytest.mark.parametrize(
    ("code", "fragment"),
    [(7, "category code 7"), (1e200, "category code 1e+200"), (-1, "code -1"), (2.5, "code 2.5")],
)
def test_predict_refuses_a_category_code_the_model_does_not_know(
    code, fragment, categorical_files, capsys, tmp_path
):
    new = pd.DataFrame({"colour": [0.0, 1.0, 2.0], "size": [3.0, code, 0.0]})
    path = tmp_path / "new.csv"
    new.to_csv(path, index=False)
    argv = ["predict", categorical_files["model"], str(path), "--proba"]
    line = _fails_cleanly(capsys, argv, "column 'size'", "(row 1)", fragment, "n_categories[1] = 4")
    assert line.startswith("genprob predict: error: ")
    # codes it knows: the probabilities of CategoricalNB fitted on the same table
    train = categorical_files["frame"]
    new["size"] = [3.0, 1.0, 0.0]
    new.to_csv(path, index=False)
    assert cli.main(argv) == 0
    printed = pd.read_csv(io.StringIO(capsys.readouterr().out))
    expected = genprob.CategoricalNB().fit(train[["colour", "size"]], train["y"]).predict_proba(new)
    np.testing.assert_allclose(printed[["proba_0", "proba_1"]], expected, atol=1e-12)
