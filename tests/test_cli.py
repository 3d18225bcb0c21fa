"""The ``genprob`` command line: every command, exit codes and one-line errors."""

import io
import os
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from genprob.app import cli, registry
from genprob.datasets import load_iris
from genprob.families import Command
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

    broken = Command(
        "broken", "wrong closed form", ("iris",), make_story=lambda X: WrongVariances()
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
        (["check", "lda", "--max-iter", "0"], ["--max-iter", "must be an integer >= 1, got 0"]),
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


def test_console_script_flushes_everything_before_it_leaves(iris_csv, tmp_path):
    """The script skips Python's teardown (cli.run): its output is still whole, its code kept."""
    model = tmp_path / "model.npz"
    fit = [GENPROB, "fit", "gaussian_nb", str(iris_csv), "--target", "species", "--out", str(model)]
    fitted = subprocess.run(fit, capture_output=True, text=True, timeout=300)
    assert fitted.returncode == 0, fitted.stderr
    assert fitted.stdout.splitlines()[-1].split() == ["saved:", str(model)]
    assert model.stat().st_size > 0
    predict = [GENPROB, "predict", str(model), str(iris_csv), "--proba"]
    predicted = subprocess.run(predict, capture_output=True, text=True, timeout=300)
    assert predicted.returncode == 0, predicted.stderr
    table = pd.read_csv(io.StringIO(predicted.stdout))  # every row reached the pipe
    assert len(table) == 150
    proba = table.filter(like="proba").to_numpy()
    np.testing.assert_allclose(proba.sum(axis=1), 1.0, rtol=1e-12)
    missing = subprocess.run(
        [*predict[:2], str(tmp_path / "none.npz"), str(iris_csv)],
        text=True,
        capture_output=True,
        timeout=300,
    )
    assert missing.returncode == 2 and "no such model file" in missing.stderr


# -- genprob fit / predict / compare / demo --------------------------------------------------------
IRIS_FEATURES = ["sepal_length", "sepal_width", "petal_length", "petal_width"]


def _summary_value(out, key):
    """The text after ``key:`` in the summary printed by ``genprob fit``."""
    for line in out.splitlines():
        if line.strip().startswith(f"{key}:"):
            return line.split(":", 1)[1].strip()
    raise AssertionError(f"no {key!r} line in:\n{out}")


def test_fit_then_predict_round_trip(iris_csv, tmp_path, capsys):
    from sklearn.naive_bayes import GaussianNB

    import genprob

    model = tmp_path / "iris_model"
    code = cli.main(
        ["fit", "gaussian_nb", str(iris_csv), "--target", "species", "--out", str(model)]
    )
    out = capsys.readouterr().out
    assert code == 0, out
    X, y = load_iris()
    names = np.array(["setosa", "versicolor", "virginica"])
    reference = GaussianNB(var_smoothing=1e-9).fit(X, names[y])
    assert _summary_value(out, "classes") == "setosa, versicolor, virginica"
    assert _summary_value(out, "rows") == "150 (150 labeled, 0 unlabeled)"
    # 2 class-prior + 12 mean + 12 variance parameters
    assert _summary_value(out, "model") == "GaussianNB, 26 parameters"
    accuracy = float(_summary_value(out, "train accuracy").split()[0])
    assert accuracy == pytest.approx(reference.score(X, names[y]), abs=5e-5)  # 0.9600
    saved = tmp_path / "iris_model.npz"  # the suffix is added
    assert _summary_value(out, "saved") == str(saved)
    loaded = genprob.load(saved)
    frame = pd.read_csv(iris_csv)
    loglik = float(_summary_value(out, "log-likelihood").split()[0])
    assert loglik == pytest.approx(loaded.log_likelihood(frame[IRIS_FEATURES], names[y]), rel=1e-5)
    # BIC and AIC of the same log-likelihood, 26 parameters, 150 rows
    criteria = _summary_value(out, "criteria").replace(",", "").split()
    assert float(criteria[1]) == pytest.approx(-2 * loglik + 26 * np.log(150), rel=1e-5)
    assert float(criteria[3]) == pytest.approx(-2 * loglik + 2 * 26, rel=1e-5)

    # to stdout; the target column of the data is dropped because the model names it
    assert cli.main(["predict", str(saved), str(iris_csv)]) == 0
    printed = pd.read_csv(io.StringIO(capsys.readouterr().out))
    assert list(printed.columns) == ["prediction"]
    np.testing.assert_array_equal(printed["prediction"], loaded.predict(frame[IRIS_FEATURES]))
    np.testing.assert_array_equal(printed["prediction"], reference.predict(X))

    # to a file, with probabilities, from data without the target and with shuffled columns
    shuffled = tmp_path / "shuffled.csv"
    frame[IRIS_FEATURES[::-1]].to_csv(shuffled, index=False)
    written = tmp_path / "predictions.csv"
    assert cli.main(["predict", str(saved), str(shuffled), "--proba", "--out", str(written)]) == 0
    assert "wrote 150 predictions" in capsys.readouterr().err
    result = pd.read_csv(written)
    proba_columns = [f"proba_{name}" for name in names]
    assert list(result.columns) == ["prediction", *proba_columns]
    proba = result[proba_columns].to_numpy()
    np.testing.assert_allclose(proba.sum(axis=1), 1.0, rtol=0, atol=1e-12)
    np.testing.assert_allclose(proba, reference.predict_proba(X), rtol=1e-7, atol=1e-12)
    np.testing.assert_array_equal(result["prediction"], names[proba.argmax(axis=1)])


def test_fit_with_unlabeled_rows_by_empty_cells_or_marker(iris_csv, tmp_path, capsys):
    import genprob

    frame = pd.read_csv(iris_csv)
    hidden = np.arange(len(frame)) % 3 != 0  # keep one label in three
    empty = frame.copy()
    empty.loc[hidden, "species"] = np.nan
    empty_csv = tmp_path / "empty_cells.csv"
    empty.to_csv(empty_csv, index=False)
    marked = frame.copy()
    marked.loc[hidden, "species"] = "unknown"
    marked_csv = tmp_path / "marked.csv"
    marked.to_csv(marked_csv, index=False)

    models = []
    for data, extra in ((empty_csv, []), (marked_csv, ["--unlabeled", "unknown"])):
        model = tmp_path / f"{data.stem}.npz"
        argv = ["fit", "lda", str(data), "--target", "species", "--out", str(model), *extra]
        assert cli.main(argv) == 0
        out = capsys.readouterr().out
        rows = _summary_value(out, "rows")
        assert rows.startswith("150 (50 labeled, 100 unlabeled); EM: ") and "converged" in rows
        assert _summary_value(out, "classes") == "setosa, versicolor, virginica"
        models.append(genprob.load(model))
    # the two ways of marking rows give the same EM fit
    for name, value in models[0].params_.items():
        np.testing.assert_array_equal(value, models[1].params_[name])
    # EM used the unlabeled rows: its fit differs from LDA on the 50 labeled rows alone
    labeled_only = genprob.LinearDiscriminantAnalysis(store_covariance=True)
    labeled_only.fit(frame.loc[~hidden, IRIS_FEATURES], frame.loc[~hidden, "species"])
    assert not np.allclose(models[0].params_["covariance"], labeled_only.covariance_, rtol=1e-3)

    # numeric labels: -1 is genprob's unlabeled marker, so it must be asked for
    X, y = load_iris()
    numeric = pd.DataFrame(X, columns=IRIS_FEATURES).assign(label=np.where(hidden, -1, y))
    numeric_csv = tmp_path / "numeric.csv"
    numeric.to_csv(numeric_csv, index=False)
    argv = ["fit", "gaussian_nb", str(numeric_csv), "--target", "label"]
    assert cli.main([*argv, "--out", str(tmp_path / "n.npz")]) == 2
    _one_line_error(capsys.readouterr(), "holds the label -1", "--unlabeled-label -1")
    assert cli.main([*argv, "--unlabeled", "-1", "--out", str(tmp_path / "n.npz")]) == 0
    out = capsys.readouterr().out
    assert _summary_value(out, "classes") == "0, 1, 2"
    assert _summary_value(out, "rows").startswith("150 (50 labeled, 100 unlabeled)")
    assert genprob.load(tmp_path / "n.npz").classes_.tolist() == [0, 1, 2]


def test_mixed_story_takes_text_columns(tmp_path, capsys):
    import genprob
    from genprob import datasets

    frame, species = datasets.load_penguins(as_frame=True)
    table = frame.assign(species=species.to_numpy())
    path = tmp_path / "penguins.csv"
    table.to_csv(path, index=False)
    model = tmp_path / "penguins.npz"
    assert cli.main(["fit", "mixed", str(path), "--target", "species", "--out", str(model)]) == 0
    capsys.readouterr()
    loaded = genprob.load(model)
    # text columns and the few-valued integer year are categorical, measurements Gaussian
    reference = genprob.MixedNB(families=datasets.PENGUIN_FAMILIES).fit(frame, species)
    features = pd.read_csv(path).drop(columns=["species"])
    np.testing.assert_allclose(
        loaded.predict_proba(features), reference.predict_proba(frame), rtol=1e-10, atol=1e-12
    )
    # the other stories need numbers and say which columns are not
    assert cli.main(["fit", "lda", str(path), "--target", "species"]) == 2
    _one_line_error(capsys.readouterr(), "non-numeric feature columns", "island, sex", "'mixed'")


def test_fit_and_predict_errors_exit_2_with_one_line(iris_csv, tmp_path, capsys):
    model = tmp_path / "model.npz"
    fit = ["fit", "gaussian_nb", str(iris_csv), "--target", "species", "--out", str(model)]
    assert cli.main(fit) == 0
    capsys.readouterr()
    frame = pd.read_csv(iris_csv)
    partial = tmp_path / "partial.csv"
    frame.drop(columns=["petal_length", "petal_width"]).to_csv(partial, index=False)
    corrupt = tmp_path / "corrupt.npz"
    corrupt.write_bytes(model.read_bytes()[:200])
    text = tmp_path / "text.csv"
    frame.assign(sepal_width="wide").to_csv(text, index=False)
    all_hidden = tmp_path / "hidden.csv"
    frame.assign(species=np.nan).to_csv(all_hidden, index=False)
    infinite = tmp_path / "infinite.csv"
    frame.assign(sepal_width=np.where(frame.index == 4, np.inf, frame.sepal_width)).to_csv(
        infinite, index=False
    )
    cases = [
        (["fit", "lda", str(infinite), "--target", "species"], ["infinite", "sepal_width"]),
        (["predict", str(model), str(infinite)], ["infinite values in", "columns: sepal_width"]),
        (["fit", "nonsense", str(iris_csv), "--target", "species"], ["unknown story 'nonsense'"]),
        (["fit", "lda", str(tmp_path / "no.csv"), "--target", "species"], ["no such file"]),
        (["fit", "lda", str(iris_csv), "--target", "label"], ["'label' is not in", "species"]),
        (["fit", "lda", str(iris_csv)], ["required: --target"]),
        (["fit", "lda", str(all_hidden), "--target", "species"], ["no labeled rows"]),
        (
            ["fit", "lda", str(iris_csv), "--target", "species", "--unlabeled-weight", "2"],
            ["[0, 1]"],
        ),
        (["predict", str(model), str(partial)], ["lacks", "petal_length, petal_width"]),
        (["predict", str(corrupt), str(iris_csv)], ["corrupt.npz"]),
        (["predict", str(tmp_path / "none.npz"), str(iris_csv)], ["no such model file"]),
        (["predict", str(model), str(text)], ["non-numeric feature columns", "sepal_width"]),
        (["compare", "lda", str(iris_csv), "--target", "species", "--chains", "0"], ["--chains"]),
        (["demo", "--out", str(iris_csv)], ["not a directory"]),
    ]
    for argv, fragments in cases:
        assert cli.main(argv) == 2, argv
        _one_line_error(capsys.readouterr(), *fragments)


def test_parquet_tables_fit_and_predict_like_csv(iris_csv, tmp_path, capsys):
    import genprob

    frame = pd.read_csv(iris_csv)
    parquet = tmp_path / "iris.parquet"
    frame.to_parquet(parquet)
    model = tmp_path / "model.npz"
    argv = ["fit", "lda", str(parquet), "--target", "species", "--out", str(model)]
    assert cli.main(argv) == 0
    capsys.readouterr()
    assert cli.main(["predict", str(model), str(parquet)]) == 0
    printed = pd.read_csv(io.StringIO(capsys.readouterr().out))
    reference = genprob.LinearDiscriminantAnalysis().fit(frame[IRIS_FEATURES], frame["species"])
    np.testing.assert_array_equal(printed["prediction"], reference.predict(frame[IRIS_FEATURES]))

    corrupt = tmp_path / "corrupt.parquet"
    corrupt.write_bytes(b"PAR1 not really parquet")
    assert cli.main(["fit", "lda", str(corrupt), "--target", "species"]) == 2
    _one_line_error(capsys.readouterr(), "cannot read", "as Parquet")


def test_every_command_has_help(capsys):
    expected = {
        "demo": ["--out", "--quick"],
        "fit": ["STORY", "DATA", "--target", "--unlabeled", "--out"],
        "predict": ["MODEL", "DATA", "--proba", "--out"],
        "compare": ["--num-samples", "--num-warmup", "--chains", "--seed", "--method", "--out"],
    }
    assert cli.main(["--help"]) == 0
    top = capsys.readouterr().out
    for command, options in expected.items():
        assert command in top
        assert cli.main([command, "--help"]) == 0
        out = capsys.readouterr().out
        assert out.startswith(f"usage: genprob {command}")
        for option in options:
            assert option in out, (command, option)


@pytest.mark.arviz
def test_compare_prints_the_table_and_saves_plots(iris_csv, tmp_path, capsys):
    out_dir = tmp_path / "compare"
    argv = ["compare", "gaussian_nb", str(iris_csv), "--target", "species", "--out", str(out_dir)]
    settings = ["--num-warmup", "30", "--num-samples", "30", "--chains", "1", "--seed", "0"]
    assert cli.main(argv + settings) == 1  # a failed diagnostic is a failed check
    captured = capsys.readouterr()
    assert "a diagnostic failed (exit 1; --accept-diagnostics accepts the draws)" in captured.err
    for line in captured.err.splitlines():  # one line per problem, no source path or code line
        assert line.startswith("genprob compare: "), line
    assert "30 warm-up + 30 draws" in captured.err
    assert "class_prior[setosa]" in captured.out and "divergences:" in captured.out
    # one chain, 30 draws: no R-hat, and the ESS is flagged
    assert "R-hat: needs two chains or more; smallest bulk ESS" in captured.out
    assert "FAILED (< 400)" in captured.out
    table = pd.read_csv(out_dir / "mle_vs_posterior.csv")
    assert len(table) == 3 + 12 + 12  # class prior, means, variances of 3 classes x 4 features
    # the MLE column is the closed form: class means and (biased) variances of iris
    X, y = load_iris()
    mle = table.set_index("parameter")["mle"]
    assert mle["class_prior[setosa]"] == pytest.approx(1 / 3, rel=1e-12)
    assert mle["means[setosa, sepal_length]"] == pytest.approx(X[y == 0, 0].mean(), rel=1e-12)
    assert mle["variances[virginica, petal_width]"] == pytest.approx(X[y == 2, 3].var(), rel=1e-6)
    inside = int(table["mle_in_hdi"].sum())
    assert f"MLE inside the 94% HDI: {inside} of 27 entries" in captured.out
    assert "MLE fit: 26 parameters, BIC " in captured.out
    for name in ("class_prior", "means", "variances"):
        assert (out_dir / f"posterior_vs_mle_{name}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert cli.main(argv + settings + ["--accept-diagnostics"]) == 0
    assert "FAILED (< 400)" in capsys.readouterr().out


@pytest.mark.arviz
def test_demo_quick_writes_the_report(tmp_path, capsys):
    out_dir = tmp_path / "report"
    assert cli.main(["demo", "--quick", "--out", str(out_dir)]) == 0
    captured = capsys.readouterr()
    for step in range(1, 6):
        assert f"[{step}/5]" in captured.err
    assert "report written to" in captured.out
    shown = [line for line in captured.err.splitlines() if ": warning: " in line]
    assert any("NUTS diagnostics" in line for line in shown)  # the library's advice is kept
    assert not any("deprecated" in line for line in shown)  # a dependency's notice is not
    report_md = (out_dir / "report.md").read_text()
    for title in (
        "Built-in stories on real data",
        "Decision boundaries: LDA, QDA, Gaussian naive Bayes",
        "Closed form vs optimizer",
        "Missing labels: EM vs the labeled rows alone",
        "MLE vs posterior",
    ):
        assert f". {title}" in report_md
    figures = [
        "boundaries.png",
        "semi_supervised.png",
        "posterior_vs_mle.png",
        "posterior_vs_mle_exact.png",
    ]
    for name in figures:
        assert f"]({name})" in report_md
        assert (out_dir / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # free parameters with K = 3, D = 2: prior 2 + means 6 + a shared covariance 3 (LDA), three
    # covariances 9 (QDA), three diagonals 6 (naive Bayes)
    assert "| LDA | one full covariance, shared | straight lines | 11 |" in report_md
    assert "| QDA | a full covariance per class | conics | 17 |" in report_md
    assert "| Gaussian NB | diagonal, per class | axis-aligned conics | 14 |" in report_md
    assert "| lda | iris |" in report_md and "| passed |" in report_md
    assert "FAILED" not in report_md
    # every label kept: 70% of iris (105 rows) labeled, EM has nothing to impute
    assert "| 1 | 105 |" in report_md
    assert "NUTS, Gaussian naive Bayes on iris** (1 chain(s), 30 warm-up" in report_md
    assert "probs[Chinstrap, island, Dream]" in report_md  # island names, not codes
