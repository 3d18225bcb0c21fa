"""The command line on tables the project did not write: column choice, separators, identifier
columns, missing-value markers, hyperparameters, messages in the command line's terms."""

import io
import os
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
from test_cli import _one_line_error

from genprob.app import cli, registry

#: two well-separated classes of six rows, with an ID column
ROWS = {
    "sample_id": [101, 102, 103, 104, 105, 106, 107, 108, 109, 110, 111, 112],
    "width": [1.0, 1.2, 0.9, 1.1, 1.3, 1.05, 3.0, 3.2, 2.9, 3.1, 3.3, 3.05],
    "height": [2.0, 2.1, 1.9, 2.2, 2.05, 1.95, 4.0, 4.1, 3.9, 4.2, 4.05, 3.95],
    "kind": ["a"] * 6 + ["b"] * 6,
}


@pytest.fixture
def table(tmp_path):
    return pd.DataFrame(ROWS)


def _write(frame, tmp_path, name="table.csv", sep=","):
    path = tmp_path / name
    frame.to_csv(path, index=False, sep=sep)
    return str(path)


def test_drop_features_and_sep(table, tmp_path, capsys):
    semicolons = _write(table, tmp_path, "semi.csv", sep=";")
    model = str(tmp_path / "m.npz")
    argv = ["fit", "gaussian_nb", semicolons, "--target", "kind", "--out", model]
    assert cli.main([*argv, "--sep", ";", "--drop", "sample_id"]) == 0
    out = capsys.readouterr().out
    assert "features:       2 (width, height)" in out
    assert "train accuracy: 1.0000" in out
    # --features picks (and orders) the columns
    assert cli.main([*argv, "--sep", ";", "--features", "height,width"]) == 0
    assert "features:       2 (height, width)" in capsys.readouterr().out
    # predict reads the same separator; the ID column is ignored with a note
    assert cli.main(["predict", model, semicolons, "--sep", ";"]) == 0
    captured = capsys.readouterr()
    assert captured.out.split() == ["prediction"] + ["a"] * 6 + ["b"] * 6
    assert "ignoring columns the model does not use: sample_id" in captured.err


@pytest.mark.parametrize(
    "extra, fragments",
    [
        (["--drop", "sample"], ["--drop: no column 'sample'", "columns: sample_id, width"]),
        (["--features", "width,depth"], ["--features: no column 'depth'"]),
        (["--features", "width,kind"], ["--features: 'kind' is the --target column"]),
        (["--drop", "width,,height"], ["--drop 'width,,height': an empty column name"]),
        (["--drop", "sample_id,width,height"], ["--features/--drop leave no feature column"]),
        (["--sep", ""], ["--sep: give a separator"]),
    ],
)
def test_column_options_errors_name_the_flag_and_column(table, tmp_path, capsys, extra, fragments):
    path = _write(table, tmp_path)
    argv = ["fit", "lda", path, "--target", "kind", "--out", str(tmp_path / "m.npz")]
    assert cli.main([*argv, *extra]) == 2
    _one_line_error(capsys.readouterr(), *fragments)


def test_a_semicolon_file_read_with_commas_says_to_pass_sep(table, tmp_path, capsys):
    path = _write(table, tmp_path, sep=";")
    assert cli.main(["fit", "lda", path, "--target", "kind", "--out", str(tmp_path / "m")]) == 2
    _one_line_error(capsys.readouterr(), "reads as a single column", "pass --sep ';'")


def test_check_takes_the_column_options(table, tmp_path, capsys):
    path = _write(table, tmp_path, sep=";")
    argv = ["check", "gaussian_nb", "--data", path, "--target", "kind", "--sep", ";"]
    assert cli.main([*argv, "--drop", "sample_id"]) == 0
    out = capsys.readouterr().out
    assert "(12 rows, 2 features, 2 classes" in out
    assert out.strip().endswith("all 1 checks passed")


def test_python_dash_m_genprob_runs_the_command_line():
    done = subprocess.run(
        [sys.executable, "-m", "genprob", "fit", "nonsense", "x.csv", "--target", "y"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 2
    assert done.stderr.strip() == (
        "genprob fit: error: unknown story 'nonsense'; known: " + ", ".join(registry.names()) + "."
    )


def test_identifier_columns_are_flagged_with_drop(table, tmp_path, capsys):
    table["tag"] = [f"s{i}" for i in range(12)]  # a text identifier
    table["batch"] = ["p", "q", "r", "s", "t", "u"] * 2  # six categories in twelve rows
    path = _write(table, tmp_path)
    model = str(tmp_path / "m.npz")
    assert cli.main(["fit", "mixed", path, "--target", "kind", "--out", model]) == 0
    err = capsys.readouterr().err.splitlines()
    assert err == [
        "genprob fit: warning: column 'sample_id' holds a distinct value on each of its 12 rows, "
        "like an identifier, and is fitted as a feature; --drop sample_id leaves it out.",
        "genprob fit: warning: column 'tag' holds a distinct value on each of its 12 rows, like "
        "an identifier, and is fitted as a feature; --drop tag leaves it out.",
        "genprob fit: warning: text column 'batch' has 6 categories in 12 rows (fewer than 5 rows "
        "per category), each with its own parameters per class; --drop batch leaves it out.",
    ]
    # measurements with a distinct value per row are not identifiers; dropped columns are quiet
    argv = ["fit", "mixed", path, "--target", "kind", "--out", model]
    assert cli.main([*argv, "--drop", "sample_id,tag,batch"]) == 0
    assert capsys.readouterr().err == ""


def test_a_text_column_outside_mixed_names_drop(table, tmp_path, capsys):
    table["tag"] = [f"s{i}" for i in range(12)]
    path = _write(table, tmp_path)
    argv = ["fit", "lda", path, "--target", "kind", "--drop", "sample_id"]
    assert cli.main([*argv, "--out", str(tmp_path / "m")]) == 2
    _one_line_error(
        capsys.readouterr(), "non-numeric feature columns", "tag", "--drop tag", "'mixed' story"
    )


def test_a_question_mark_target_hints_at_unlabeled(table, tmp_path, capsys):
    table.loc[[2, 9], "kind"] = "?"
    path = _write(table, tmp_path)
    model = str(tmp_path / "m.npz")
    argv = ["fit", "gaussian_nb", path, "--target", "kind", "--drop", "sample_id", "--out", model]
    assert cli.main(argv) == 0
    captured = capsys.readouterr()
    assert captured.err == (
        "genprob fit: hint: target column 'kind' holds '?' on 2 row(s), which looks like a "
        "missing label; it is fitted as a class of its own unless --unlabeled '?' marks those "
        "rows unlabeled (fitted by EM).\n"
    )
    assert "classes:        ?, a, b" in captured.out
    assert cli.main([*argv, "--unlabeled", "?"]) == 0
    captured = capsys.readouterr()
    assert captured.err == ""
    assert "classes:        a, b" in captured.out
    assert "rows:           12 (10 labeled, 2 unlabeled)" in captured.out


@pytest.mark.parametrize(
    "story, estimator",
    [
        ("lda", "LinearDiscriminantAnalysis, 8 parameters"),
        ("qda", "QuadraticDiscriminantAnalysis, 11 parameters"),
        ("gaussian_nb", "GaussianNB, 9 parameters"),
        ("shared_diag", "GenerativeClassifier, 7 parameters"),
    ],
)
def test_the_summary_names_the_estimator(table, tmp_path, capsys, story, estimator):
    path = _write(table, tmp_path)
    argv = ["fit", story, path, "--target", "kind", "--drop", "sample_id"]
    assert cli.main([*argv, "--out", str(tmp_path / "m")]) == 0
    assert f"  model:          {estimator}\n" in capsys.readouterr().out


def test_param_sets_hyperparameters_checked_by_the_estimator(table, tmp_path, capsys):
    import genprob

    path = _write(table, tmp_path)
    model = str(tmp_path / "m.npz")
    argv = ["fit", "qda", path, "--target", "kind", "--drop", "sample_id", "--out", model]
    assert cli.main([*argv, "--param", "reg_param=0.3", "--param", "priors=0.25,0.75"]) == 0
    capsys.readouterr()
    fitted = genprob.load(model)
    assert type(fitted).__name__ == "QuadraticDiscriminantAnalysis"
    assert fitted.reg_param == 0.3
    np.testing.assert_array_equal(fitted.priors_, [0.25, 0.75])
    assert cli.main([*argv, "--max-iter", "7"]) == 0
    assert genprob.load(model).max_iter == 7


@pytest.mark.parametrize(
    "extra, message",
    [
        (
            ["--param", "reg_param=2"],
            "--param reg_param=2: The 'reg_param' parameter of QuadraticDiscriminantAnalysis must "
            "be a float in the range [0.0, 1.0]. Got 2 instead.",
        ),
        (
            ["--param", "colour=red"],
            "--param colour: QuadraticDiscriminantAnalysis has no such setting; its settings: "
            "dtype, em_tol, n_init, priors, reg_param, shrinkage, solver, store_covariance, tol.",
        ),
        (["--param", "reg_param"], "--param 'reg_param': write it as NAME=VALUE"),
        (["--param", "random_state=3"], "--param random_state: set it with --seed."),
        (["--param", "max_iter=3"], "--param max_iter: set it with --max-iter."),
    ],
)
def test_param_errors_name_the_flag_and_value(table, tmp_path, capsys, extra, message):
    path = _write(table, tmp_path)
    argv = ["fit", "qda", path, "--target", "kind", "--drop", "sample_id"]
    assert cli.main([*argv, *extra, "--out", str(tmp_path / "m")]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"genprob fit: error: {message}"), err
    assert len(err.strip().splitlines()) == 1


def test_max_iter_must_be_a_positive_integer(table, tmp_path, capsys):
    path = _write(table, tmp_path)
    assert cli.main(["fit", "qda", path, "--target", "kind", "--max-iter", "0"]) == 2
    _one_line_error(capsys.readouterr(), "--max-iter", "must be an integer >= 1, got 0")


def test_library_messages_name_flags_columns_and_classes(table, tmp_path, capsys):
    path = _write(table, tmp_path)
    argv = ["--target", "kind", "--drop", "sample_id", "--out", str(tmp_path / "m")]
    assert cli.main(["fit", "bernoulli", path, *argv]) == 2
    _one_line_error(
        capsys.readouterr(),
        "column 'height': expected binary features (0 or 1)",
        "(BernoulliNB's binarize=0.0 maps every positive value to 1)",
        "found 2.0 at row 0",
        "(23 such entries)",
    )
    lonely = _write(table.iloc[:7], tmp_path, "lonely.csv")  # class b has a single row
    assert cli.main(["fit", "qda", lonely, *argv]) == 2
    _one_line_error(capsys.readouterr(), "only 1 sample in class b", "Set reg_param > 0 (e.g. 0.1)")


def test_em_warnings_name_max_iter(table, tmp_path, capsys):
    table.loc[[1, 2, 7, 8], "kind"] = "?"
    path = _write(table, tmp_path)
    argv = ["fit", "gaussian_nb", path, "--target", "kind", "--drop", "sample_id"]
    assert (
        cli.main([*argv, "--unlabeled", "?", "--max-iter", "1", "--out", str(tmp_path / "m")]) == 0
    )
    captured = capsys.readouterr()
    assert "EM: 1 iterations, NOT converged" in captured.out
    assert captured.err == (
        "genprob fit: warning: EM did not converge in max_iter=1 iterations (change of the mean "
        "per-row objective above em_tol=1e-12); raise max_iter.\n"
    )


def test_predict_missing_marginalize_needs_no_refit(table, tmp_path, capsys):
    import genprob

    path = _write(table, tmp_path, sep=";")
    model = str(tmp_path / "lda.npz")
    argv = ["fit", "lda", path, "--target", "kind", "--sep", ";", "--drop", "sample_id"]
    assert cli.main([*argv, "--out", model]) == 0
    capsys.readouterr()
    holes = pd.DataFrame({"width": [1.0, None, 3.1], "height": [None, 2.0, 4.0]})
    holes_path = _write(holes, tmp_path, "holes.csv", sep=";")
    assert cli.main(["predict", model, holes_path, "--sep", ";"]) == 2
    _one_line_error(capsys.readouterr(), "columns: width, height", "--missing marginalize")
    assert cli.main(["predict", model, holes_path, "--sep", ";", "--missing", "marginalize"]) == 0
    predicted = capsys.readouterr().out.split()
    assert predicted == ["prediction", "a", "a", "b"]
    # the same numbers as the fitted model's marginal of the observed cells
    fitted = genprob.load(model).set_params(missing="marginalize")
    assert list(fitted.predict(holes)) == predicted[1:]


def test_predict_missing_marginalize_with_text_columns(tmp_path, capsys):
    frame = pd.DataFrame(
        {
            "width": [1.0, 1.5, 1.2, 1.1, 3.0, 3.2, 3.1, 3.5],
            "colour": ["red", "red", "blue", "red", "blue", "blue", "green", "blue"],
            "kind": ["x"] * 4 + ["z"] * 4,
        }
    )
    model = str(tmp_path / "mixed.npz")
    assert (
        cli.main(["fit", "mixed", _write(frame, tmp_path), "--target", "kind", "--out", model]) == 0
    )
    capsys.readouterr()
    holes = pd.DataFrame({"width": [1.0, None, 3.1], "colour": [None, "blue", "red"]})
    argv = ["predict", model, _write(holes, tmp_path, "holes.csv"), "--proba"]
    assert cli.main([*argv, "--missing", "marginalize"]) == 0
    out = pd.read_csv(io.StringIO(capsys.readouterr().out))
    assert list(out["prediction"]) == ["x", "z", "z"]
    # the row with only colour=blue: the class prior (1/2 each) times P(blue | class), smoothed
    # by alpha=1 over three categories: x (1+1)/(4+3), z (3+1)/(4+3) -> 1/3, 2/3
    proba = out.loc[1, ["proba_x", "proba_z"]].to_numpy(dtype=float)  # a row of mixed columns
    np.testing.assert_allclose(proba, [1 / 3, 2 / 3], rtol=1e-12)


def test_predict_missing_marginalize_refused_by_multinomial(tmp_path, capsys):
    counts = pd.DataFrame({"w": [1, 1, 2, 5, 6, 5], "h": [2, 3, 1, 6, 5, 5], "y": list("xxxzzz")})
    model = str(tmp_path / "mn.npz")
    argv = ["fit", "multinomial", _write(counts, tmp_path), "--target", "y", "--out", model]
    assert cli.main(argv) == 0
    capsys.readouterr()
    holes = _write(pd.DataFrame({"w": [1.0, None], "h": [None, 2.0]}), tmp_path, "holes.csv")
    assert cli.main(["predict", model, holes, "--missing", "marginalize"]) == 2
    _one_line_error(
        capsys.readouterr(), "--missing marginalize: this model's story cannot sum out empty cells"
    )


def test_check_mixed_takes_the_text_columns_fit_takes(tmp_path, capsys):
    frame = pd.DataFrame(
        {
            "sample_id": [f"s{i}" for i in range(10)],
            "width": [1.0, 1.5, 1.2, 1.1, 1.4, 3.0, 3.2, 3.1, 3.5, 2.9],
            "colour": ["red", "red", "blue", "red", "red", "blue", "blue", "red", "blue", "blue"],
            "kind": ["x"] * 5 + ["z"] * 5,
        }
    )
    path = _write(frame, tmp_path, sep=";")
    argv = ["check", "mixed", "--data", path, "--target", "kind", "--sep", ";"]
    assert cli.main([*argv, "--drop", "sample_id"]) == 0
    captured = capsys.readouterr()
    assert "mixed on table.csv (target kind) (10 rows, 2 features, 2 classes" in captured.out
    assert "categorical.probs (2, 1, 2)" in captured.out
    assert captured.out.strip().endswith("all 1 checks passed")
    assert captured.err == ""
    # the same table under a story of numbers: the text column is named, with --drop
    assert cli.main(["check", "lda", *argv[2:], "--drop", "sample_id"]) == 2
    _one_line_error(capsys.readouterr(), "non-numeric feature columns", "colour", "--drop colour")


USER_STORY = '''
import numpyro
import numpyro.distributions as dist

from genprob.story import Story


class Exponential(Story):
    """Independent exponential features per class (closed form: rate = count / sum)."""

    name = "cli_test_exponential"

    def prior(self, num_classes, num_features):
        shape = [num_classes, num_features]
        return {"rate": numpyro.sample("rate", dist.Gamma(2.0, 1.0).expand(shape).to_event(2))}

    def emission(self, params):
        return dist.Exponential(params["rate"]).to_event(1)

    def sufficient_statistics(self, X, R):
        return {"counts": R.sum(axis=0), "sums": R.T @ X}

    def maximize(self, stats):
        return {"rate": stats["counts"][:, None] / stats["sums"]}
'''


def test_a_story_of_the_users_own_module(tmp_path, capsys):
    (tmp_path / "cli_user_story.py").write_text(USER_STORY)
    frame = pd.DataFrame(
        {
            "id": [1, 2, 3, 4, 5, 6],
            "w": [0.1, 0.2, 0.15, 3.0, 2.0, 4.0],
            "h": [0.2, 0.1, 0.3, 4.0, 5.0, 3.0],
            "y": list("xxxzzz"),
        }
    )
    data, model = _write(frame, tmp_path), str(tmp_path / "m.npz")
    story = f"{tmp_path / 'cli_user_story.py'}:Exponential"
    argv = ["fit", data, "--story", story, "--target", "y", "--drop", "id", "--out", model]
    assert cli.main(argv) == 0
    out = capsys.readouterr().out
    assert "model:          GenerativeClassifier, 5 parameters" in out
    assert "train accuracy: 1.0000" in out
    # rate = count / sum per class and column: x (3/0.45, 3/0.6), z (3/9, 3/12)
    import genprob

    np.testing.assert_allclose(
        genprob.load(model).params_["rate"], [[3 / 0.45, 3 / 0.6], [3 / 9, 3 / 12]], rtol=1e-12
    )
    # a fresh process needs --story to load the model; then it predicts
    run = [sys.executable, "-m", "genprob", "predict", model, data]
    # the genprob under test, wherever the test process found it
    root = os.path.dirname(os.path.dirname(genprob.__file__))
    env = {**os.environ, "GENPROB_CLI_CACHE": "0", "PYTHONPATH": root}
    done = subprocess.run(run, cwd=tmp_path, capture_output=True, text=True, check=False, env=env)
    assert done.returncode == 2
    # the library's message as it is: the file, the class, and how to import it on this face
    assert done.stderr == (
        f"genprob predict: error: {model}: the model's story class cli_user_story.Exponential "
        "is not defined in this process: import the module that defines it (or define the "
        "class) before loading (in Python: import cli_user_story; on the command line: --story "
        "cli_user_story:Exponential, or --story path/to/cli_user_story.py:Exponential).\n"
    )
    run += ["--story", "cli_user_story:Exponential"]
    done = subprocess.run(run, cwd=tmp_path, capture_output=True, text=True, check=False, env=env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["prediction", "x", "x", "x", "z", "z", "z"]


@pytest.mark.parametrize(
    "story, message",
    [
        ("cli_user_story", "--story 'cli_user_story': write it as MODULE:CLASS"),
        ("no_such_module_here:X", "--story no_such_module_here:X: cannot import"),
        ("{dir}/missing.py:X", "no such file"),
        ("{dir}/cli_user_story.py:Nope", "cli_user_story.py defines no Story class Nope."),
    ],
)
def test_story_option_errors(tmp_path, capsys, story, message):
    (tmp_path / "cli_user_story.py").write_text(USER_STORY)
    data = _write(pd.DataFrame(ROWS), tmp_path)
    story = story.format(dir=tmp_path)
    assert cli.main(["fit", data, "--story", story, "--target", "kind"]) == 2
    _one_line_error(capsys.readouterr(), message)
