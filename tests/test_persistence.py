"""Saving and loading estimators without pickle."""

import json
import zipfile

import numpy as np
import pytest

import genprob
from genprob.datasets import load_digits, load_iris
from genprob.io import persistence


def _fitted_estimators():
    X_iris, y_iris = load_iris()
    labels = np.array(["setosa", "versicolor", "virginica"], dtype=object)[y_iris]
    X_digits, y_digits = load_digits()
    X_digits, y_digits = X_digits[:400], y_digits[:400]
    yield "gaussian_nb", genprob.GaussianNB().fit(X_iris, labels), X_iris
    yield "bernoulli_nb", genprob.BernoulliNB(binarize=7.5).fit(X_digits, y_digits), X_digits
    yield "multinomial_nb", genprob.MultinomialNB(alpha=0.5).fit(X_digits, y_digits), X_digits
    yield (
        "categorical_nb",
        genprob.CategoricalNB(min_categories=17).fit(X_digits, y_digits),
        (X_digits),
    )
    yield "poisson_nb", genprob.PoissonNB().fit(X_digits, y_digits), X_digits
    for name in ("LinearDiscriminantAnalysis", "QuadraticDiscriminantAnalysis"):
        if hasattr(genprob, name):
            kwargs = {"reg_param": 0.1} if name.startswith("Quadratic") else {}
            yield name, getattr(genprob, name)(**kwargs).fit(X_iris, labels), X_iris
    penguins_X, penguins_y = genprob.datasets.load_penguins(as_frame=True)
    mixed = genprob.MixedNB(families=genprob.datasets.PENGUIN_FAMILIES)
    yield "mixed_nb", mixed.fit(penguins_X, penguins_y), penguins_X


@pytest.mark.parametrize("case", list(_fitted_estimators()), ids=lambda case: case[0])
def test_round_trip_gives_identical_predictions(case, tmp_path):
    _, estimator, X = case
    path = estimator.save(tmp_path / "model")
    assert path.suffix == ".npz"
    loaded = genprob.load(path)
    assert type(loaded) is type(estimator)
    assert loaded.get_params() == estimator.get_params() or json.dumps(
        loaded.get_params(), default=str, sort_keys=True
    ) == json.dumps(estimator.get_params(), default=str, sort_keys=True)
    np.testing.assert_array_equal(loaded.predict_proba(X), estimator.predict_proba(X))
    np.testing.assert_array_equal(loaded.predict(X), estimator.predict(X))
    for name, value in estimator.params_.items():
        np.testing.assert_array_equal(loaded.params_[name], value)


def _gaussian_file(tmp_path):
    X, y = load_iris()
    return genprob.GaussianNB().fit(X, y).save(tmp_path / "model.npz")


def test_edited_array_is_rejected(tmp_path):
    path = _gaussian_file(tmp_path)
    with np.load(path, allow_pickle=False) as archive:
        contents = {name: archive[name] for name in archive.files}
    contents["param.means"] = contents["param.means"] + 1.0
    np.savez(path, **contents)
    with pytest.raises(persistence.ModelFileError, match="integrity"):
        genprob.load(path)


def test_truncated_and_garbage_files_are_rejected(tmp_path):
    path = _gaussian_file(tmp_path)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(persistence.ModelFileError):
        genprob.load(path)
    path.write_bytes(b"not a zip at all")
    with pytest.raises(persistence.ModelFileError):
        genprob.load(path)


def _rewrite_metadata(path, edit):
    with np.load(path, allow_pickle=False) as archive:
        contents = {name: archive[name] for name in archive.files}
    metadata = json.loads(str(contents["metadata"]))
    edit(metadata)
    metadata.pop("sha256")
    arrays = {k: v for k, v in contents.items() if k != "metadata"}
    metadata["sha256"] = persistence._digest(metadata, arrays)
    np.savez(path, metadata=np.array(json.dumps(metadata)), **arrays)


def test_newer_format_version_is_rejected(tmp_path):
    path = _gaussian_file(tmp_path)
    _rewrite_metadata(path, lambda m: m.update(format_version=persistence.FORMAT_VERSION + 1))
    with pytest.raises(persistence.ModelFileError, match="version"):
        genprob.load(path)


def test_file_naming_a_foreign_class_is_rejected_without_importing_it(tmp_path):
    path = _gaussian_file(tmp_path)
    _rewrite_metadata(path, lambda m: m.update(estimator="os.system"))
    with pytest.raises(persistence.ModelFileError, match="unknown estimator"):
        genprob.load(path)


def test_pickled_object_arrays_are_never_loaded(tmp_path):
    path = _gaussian_file(tmp_path)
    with np.load(path, allow_pickle=False) as archive:
        contents = {name: archive[name] for name in archive.files}
    contents["config.attr.classes_"] = np.array([object(), object(), object()], dtype=object)
    np.savez(path, **contents)  # stores a pickle inside the .npy
    with pytest.raises(persistence.ModelFileError):
        genprob.load(path)


def test_unfitted_estimator_cannot_be_saved(tmp_path):
    from sklearn.exceptions import NotFittedError

    with pytest.raises(NotFittedError):
        genprob.GaussianNB().save(tmp_path / "model")


def test_archive_is_a_plain_zip_of_npy_files(tmp_path):
    path = _gaussian_file(tmp_path)
    with zipfile.ZipFile(path) as archive:
        names = archive.namelist()
    assert "metadata.npy" in names and all(name.endswith(".npy") for name in names)


def test_a_file_with_derived_parameters_runs_the_m_step_once(tmp_path, monkeypatch):
    """Large parameters are recomputed from the stored statistics at load; the consistency
    check reuses that M-step instead of running a second one."""
    from genprob.engine import execution

    rng = np.random.default_rng(0)
    X = rng.poisson(0.3, size=(40, 40_000)).astype(float)
    y = np.repeat([0, 1], 20)
    estimator = genprob.MultinomialNB().fit(X, y)
    path = estimator.save(tmp_path / "wide")
    with zipfile.ZipFile(path) as archive:
        assert "param.probs" not in archive.namelist()  # derived, not stored
    calls = []
    original = execution.emission_parameters

    def counted(*args, **kwargs):
        calls.append(1)
        return original(*args, **kwargs)

    monkeypatch.setattr(execution, "emission_parameters", counted)
    loaded = genprob.load(path)
    assert len(calls) == 1
    np.testing.assert_array_equal(loaded.params_["probs"], estimator.params_["probs"])
    np.testing.assert_array_equal(loaded.predict_proba(X[:5]), estimator.predict_proba(X[:5]))


def test_a_range_parameter_round_trips(tmp_path):
    """MixtureDiscriminantAnalysis(n_components=range(1, 3)) was refused at save ("type range")."""
    X, y = load_iris()
    model = genprob.MixtureDiscriminantAnalysis(structure=["EEE", "VVV"], n_components=range(1, 3))
    model.fit(X, y)
    model.save(tmp_path / "m.npz")
    loaded = genprob.load(tmp_path / "m.npz")
    assert loaded.get_params()["n_components"] == range(1, 3)
    np.testing.assert_array_equal(loaded.predict_proba(X), model.predict_proba(X))
    for payload in ([1, 3], [1, 3, 0], [1.0, 3, 1]):
        with pytest.raises(persistence.ModelFileError, match="range"):
            persistence._decode({"__range__": payload}, {})
