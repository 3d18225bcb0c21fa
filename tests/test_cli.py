"""The ``genprob`` command line: ``genprob check``, exit codes and one-line errors."""

import os
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from genprob import cli, registry
from genprob.datasets import load_iris
from genprob.families.gaussian import GaussianStory

GENPROB = os.path.join(os.path.dirname(sys.executable), "genprob")


def _one_line_error(captured, *fragments):
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1, captured.err
    assert "Traceback" not in captured.err
    for fragment in fragments:
        assert fragment in lines[0], lines[0]


@pytest.fixture
def iris_csv(tmp_path):
    X, y = load_iris()
    frame = pd.DataFrame(X, columns=["sepal_length", "sepal_width", "petal_length", "petal_width"])
    frame["species"] = np.array(["setosa", "versicolor", "virginica"])[y]
    path = tmp_path / "iris.csv"
    frame.to_csv(path, index=False)
    return path


def test_check_lda_passes_and_prints_the_table(capsys):
    assert cli.main(["check", "lda"]) == 0
    out = capsys.readouterr().out
    assert "lda on iris (150 rows, 4 features, 3 classes, float64)" in out
    for row in ("class_prior (3,)", "means (3, 4)", "covariance (4, 4)", "objective"):
        assert row in out
    assert "gradient at closed form" in out and "PASSED" in out
    assert "FAIL" not in out
    assert out.strip().endswith("all 1 checks passed")


def test_check_on_a_csv_file(iris_csv, capsys):
    code = cli.main(["check", "lda", "--data", str(iris_csv), "--target", "species"])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "lda on iris.csv (target species) (150 rows, 4 features, 3 classes" in out


def test_failing_check_exits_with_1(monkeypatch, capsys):
    class WrongVariances(GaussianStory):
        def maximize(self, stats):
            params = dict(super().maximize(stats))
            params["covariance"] = params["covariance"] * 1.01
            return params

    broken = registry.StoryEntry(
        "broken", "wrong closed form", lambda X: WrongVariances(), ("iris",)
    )
    monkeypatch.setitem(registry.STORIES, "broken", broken)
    assert cli.main(["check", "broken"]) == 1
    out = capsys.readouterr().out
    assert "FAIL" in out and "1 of 1 checks FAILED: broken on iris" in out


@pytest.mark.parametrize(
    "argv, fragments",
    [
        (["check", "nonsense"], ["unknown story 'nonsense'", "known: lda"]),
        (["check", "lda", "--data", "nowhere"], ["neither a bundled data set"]),
        (["check", "lda", "--data", "iris", "--target", "species"], ["--target is for CSV"]),
        (["check", "lda", "--target", "species"], ["--target applies to a CSV"]),
        (["check", "lda", "--max-iter", "0"], ["--max-iter must be >= 1"]),
        (["check", "--dtype", "float16"], ["invalid choice"]),
        (["frobnicate"], ["invalid choice"]),
        ([], ["required"]),
    ],
)
def test_usage_errors_exit_2_with_one_line(argv, fragments, capsys):
    assert cli.main(argv) == 2
    _one_line_error(capsys.readouterr(), *fragments)


def test_bad_csv_files_exit_2_with_one_line(iris_csv, tmp_path, capsys):
    missing_target = ["check", "lda", "--data", str(iris_csv), "--target", "label"]
    assert cli.main(missing_target) == 2
    _one_line_error(capsys.readouterr(), "target column 'label' is not in", "species")

    assert cli.main(["check", "lda", "--data", str(iris_csv)]) == 2
    _one_line_error(capsys.readouterr(), "--target COL is required")

    empty = tmp_path / "empty.csv"
    empty.write_text("")
    assert cli.main(["check", "lda", "--data", str(empty), "--target", "y"]) == 2
    _one_line_error(capsys.readouterr(), "is empty")

    frame = pd.read_csv(iris_csv)
    frame["colour"] = "blue"
    text_column = tmp_path / "text.csv"
    frame.to_csv(text_column, index=False)
    assert cli.main(["check", "lda", "--data", str(text_column), "--target", "species"]) == 2
    _one_line_error(capsys.readouterr(), "non-numeric feature columns", "colour")

    frame = pd.read_csv(iris_csv)
    frame.loc[3, "petal_width"] = np.nan
    holes = tmp_path / "holes.csv"
    frame.to_csv(holes, index=False)
    assert cli.main(["check", "lda", "--data", str(holes), "--target", "species"]) == 2
    _one_line_error(capsys.readouterr(), "missing values", "petal_width")

    assert cli.main(["check", "bernoulli", "--data", str(iris_csv), "--target", "species"]) == 2
    _one_line_error(capsys.readouterr(), "binary features")


def test_help_and_list(capsys):
    assert cli.main(["--help"]) == 0
    assert "check" in capsys.readouterr().out
    assert cli.main(["check", "--help"]) == 0
    out = capsys.readouterr().out
    for option in ("--data", "--target", "--dtype", "STORY"):
        assert option in out
    assert cli.main(["check", "--list"]) == 0
    out = capsys.readouterr().out
    for name in registry.names():
        assert name in out


def test_console_script_reports_errors_without_traceback():
    assert os.path.exists(GENPROB), "the genprob console script is not installed"
    done = subprocess.run(
        [GENPROB, "check", "nonsense"], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 2
    assert done.stderr.strip() == (
        f"genprob check: error: unknown story 'nonsense'; known: {', '.join(registry.names())}."
    )
    helped = subprocess.run([GENPROB, "check", "--help"], capture_output=True, text=True)
    assert helped.returncode == 0 and "usage: genprob check" in helped.stdout
