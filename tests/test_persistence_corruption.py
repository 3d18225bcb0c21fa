"""Every fault of a model file is a ModelFileError: byte flips at every position, foreign files,
zip-level faults and hand-edited metadata with a recomputed digest."""

import io
import json
import zipfile

import numpy as np
import pytest

import genprob
from genprob import persistence
from genprob.persistence import ModelFileError

X_TINY = np.array([[0.0, 1.0], [0.5, 1.5], [1.0, 0.2], [3.0, 4.0], [3.5, 3.0], [4.0, 5.0]])
Y_TINY = np.array([0, 0, 0, 1, 1, 1])


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory):
    estimator = genprob.GaussianNB().fit(X_TINY, Y_TINY)
    path = estimator.save(tmp_path_factory.mktemp("model") / "tiny.npz")
    return estimator, path.read_bytes()


def _load_bytes(tmp_path, data: bytes, name="model.npz"):
    path = tmp_path / name
    path.write_bytes(data)
    return genprob.load(path)


def _check_flips(tmp_path, original, data: bytes, positions, masks):
    """Each flipped file loads to the same predictions or raises ModelFileError, nothing else."""
    reference = original.predict_proba(X_TINY)
    path = tmp_path / "flipped.npz"
    outcomes = {"loaded": 0, "refused": 0}
    for position in positions:
        for mask in masks:
            flipped = bytearray(data)
            flipped[position] ^= mask
            path.write_bytes(bytes(flipped))
            try:
                loaded = genprob.load(path)
            except ModelFileError:
                outcomes["refused"] += 1
                continue
            except Exception as error:  # the property under test: nothing else escapes
                pytest.fail(f"flip {mask:#04x} at byte {position}: {type(error).__name__}: {error}")
            # Loaded: the flip touched bytes without meaning (zip timestamps, version fields).
            outcomes["loaded"] += 1
            np.testing.assert_array_equal(loaded.predict_proba(X_TINY), reference)
            for key, value in original.params_.items():
                np.testing.assert_array_equal(loaded.params_[key], value)
    return outcomes


def test_sampled_byte_flips_load_identically_or_are_refused(tiny_model, tmp_path):
    """600 positions (fixed seed) in the fast suite; the slow test below covers every one."""
    estimator, data = tiny_model
    positions = np.random.default_rng(18).choice(len(data), size=600, replace=False)
    outcomes = _check_flips(tmp_path, estimator, data, sorted(positions), (0xFF,))
    assert sum(outcomes.values()) == 600
    # Most bytes carry meaning (compressed data, CRCs, digests): the bulk must be refused
    # (about 77% over all positions of this file; zip timestamps and version fields do not).
    assert outcomes["refused"] > 0.6 * 600


@pytest.mark.slow
def test_every_byte_flipped_every_way(tiny_model, tmp_path):
    estimator, data = tiny_model
    masks = (0xFF,) + tuple(1 << bit for bit in range(8))
    outcomes = _check_flips(tmp_path, estimator, data, range(len(data)), masks)
    assert sum(outcomes.values()) == len(masks) * len(data)
    assert outcomes["refused"] > 0.6 * len(masks) * len(data)


def test_truncations_are_refused(tiny_model, tmp_path):
    _, data = tiny_model
    for length in range(0, len(data), max(1, len(data) // 97)):
        with pytest.raises(ModelFileError):
            _load_bytes(tmp_path, data[:length])


# -- foreign files --------------------------------------------------------------------------------
def test_npy_renamed_npz(tmp_path):
    buffer = io.BytesIO()
    np.save(buffer, np.arange(5.0))
    with pytest.raises(ModelFileError, match="bare .npy array"):
        _load_bytes(tmp_path, buffer.getvalue())


def test_csv_renamed_npz_gets_no_pickle_advice(tmp_path):
    with pytest.raises(ModelFileError, match="not a zip archive") as info:
        _load_bytes(tmp_path, b"x1,x2,y\n1.0,2.0,0\n3.0,4.0,1\n")
    assert "allow_pickle" not in str(info.value)


def test_zip_of_other_files_and_npz_without_metadata(tmp_path):
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("readme.txt", "hello")
    with pytest.raises(ModelFileError, match="not a plain .npy"):
        _load_bytes(tmp_path, buffer.getvalue())
    buffer = io.BytesIO()
    np.savez(buffer, weights=np.ones(3))
    with pytest.raises(ModelFileError, match="no valid genprob metadata"):
        _load_bytes(tmp_path, buffer.getvalue())


def test_missing_file_stays_file_not_found(tmp_path):
    with pytest.raises(FileNotFoundError):
        genprob.load(tmp_path / "absent.npz")


# -- zip-level faults -----------------------------------------------------------------------------
def _patch_all(data: bytes, signature: bytes, offset: int, value: bytes) -> bytes:
    """Overwrite a field at ``offset`` after every zip record with ``signature``."""
    patched = bytearray(data)
    start = patched.find(signature)
    assert start >= 0
    while start >= 0:
        patched[start + offset : start + offset + len(value)] = value
        start = patched.find(signature, start + 1)
    return bytes(patched)


def test_encrypted_members_are_refused(tiny_model, tmp_path):
    _, data = tiny_model
    data = _patch_all(data, b"PK\x03\x04", 6, b"\x01\x00")  # general-purpose flag: encrypted
    data = _patch_all(data, b"PK\x01\x02", 8, b"\x01\x00")
    with pytest.raises(ModelFileError, match="not a plain .npy"):
        _load_bytes(tmp_path, data)


def test_unknown_compression_method_is_refused(tiny_model, tmp_path):
    _, data = tiny_model
    data = _patch_all(data, b"PK\x03\x04", 8, b"\x63\x00")  # method 99 (AES): unsupported
    data = _patch_all(data, b"PK\x01\x02", 10, b"\x63\x00")
    with pytest.raises(ModelFileError, match="NotImplementedError"):
        _load_bytes(tmp_path, data)


def test_array_header_lying_about_its_size_is_refused(tmp_path):
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        header = io.BytesIO()
        np.save(header, np.zeros(2))
        payload = header.getvalue().replace(b"(2,)", b"(9999999999,)"[:4])
        archive.writestr("metadata.npy", payload)
    with pytest.raises(ModelFileError):
        _load_bytes(tmp_path, buffer.getvalue())


def test_object_arrays_are_refused(tmp_path):
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        member = io.BytesIO()
        np.save(member, np.array([{"a": 1}], dtype=object), allow_pickle=True)
        archive.writestr("metadata.npy", member.getvalue())
    with pytest.raises(ModelFileError, match="not allowed"):
        _load_bytes(tmp_path, buffer.getvalue())


# -- hand-edited metadata with a recomputed digest -------------------------------------------------
def _edited(data: bytes, edit) -> bytes:
    """The model with ``edit(metadata, arrays)`` applied and its digest recomputed."""
    with np.load(io.BytesIO(data), allow_pickle=False) as archive:
        arrays = {name: archive[name] for name in archive.files}
    metadata = json.loads(str(arrays.pop("metadata")))
    metadata.pop("sha256")
    edit(metadata, arrays)
    metadata["sha256"] = persistence._digest(metadata, arrays)
    buffer = io.BytesIO()
    np.savez_compressed(buffer, metadata=np.array(json.dumps(metadata)), **arrays)
    return buffer.getvalue()


def _set(field, value):
    return lambda metadata, arrays: metadata.__setitem__(field, value)


EDITS = {
    "format_version 0": (_set("format_version", 0), "invalid format_version 0"),
    "format_version -7": (_set("format_version", -7), "invalid format_version -7"),
    "format_version true": (_set("format_version", True), "invalid format_version True"),
    "format_version '1'": (_set("format_version", "1"), "invalid format_version '1'"),
    "format_version 1.0": (_set("format_version", 1.0), "invalid format_version 1.0"),
    "newer format_version": (_set("format_version", 99), "Upgrade genprob"),
    "estimator not a string": (_set("estimator", 7), "'estimator' must be a str"),
    "unknown estimator": (_set("estimator", "os.system"), "unknown estimator"),
    "params not a list": (_set("params", "theta"), "'params' must be a list"),
    "params of numbers": (_set("params", [1, 2]), "must list names"),
    "missing parameter array": (_set("params", ["theta", "ghost"]), "lacks the parameter"),
    "init_params a list": (_set("init_params", [1]), "'init_params' must be a dict"),
    "unknown constructor parameter": (
        _set("init_params", {"__items__": [["no_such_option", 1]]}),
        "constructor parameters",
    ),
    "dunder attribute": (
        _set("attributes", {"__items__": [["__class__", "GaussianNB"]]}),
        "not an attribute name",
    ),
    "unknown story class": (
        _set("story", {"__story__": "builtins.object", "config": {}}),
        "is not defined in this process",
    ),
    "story without config": (
        lambda metadata, arrays: metadata["story"].pop("config"),
        "malformed",
    ),
    "two markers": (_set("story", {"__list__": [], "__array__": "x"}), "malformed"),
    "pair that is not a pair": (_set("attributes", {"__items__": [[1, 2, 3]]}), "pair"),
    "unhashable key": (
        _set("attributes", {"__items__": [[{"__list__": []}, 1]]}),
        "unhashable",
    ),
    "array reference to nothing": (
        _set("attributes", {"__items__": [["classes_", {"__array__": "config.none"}]]}),
        "missing array",
    ),
}


@pytest.mark.parametrize("case", list(EDITS), ids=list(EDITS))
def test_hand_edited_metadata_is_refused(case, tiny_model, tmp_path):
    _, data = tiny_model
    edit, message = EDITS[case]
    with pytest.raises(ModelFileError, match=message.replace("(", r"\(").replace(".", r"\.")):
        _load_bytes(tmp_path, _edited(data, edit))


def test_unedited_rewrite_still_loads(tiny_model, tmp_path):
    """The editing helper itself keeps a valid file valid (so the refusals above are the edits')."""
    estimator, data = tiny_model
    loaded = _load_bytes(tmp_path, _edited(data, lambda metadata, arrays: None))
    np.testing.assert_array_equal(loaded.predict_proba(X_TINY), estimator.predict_proba(X_TINY))
