"""Every fault of a model file is a ModelFileError: byte flips at every position, foreign files,
zip-level faults and hand-edited metadata with a recomputed digest."""

import io
import json
import os
import re
import stat
import subprocess
import sys
import zipfile

import numpy as np
import pandas as pd
import pytest
from test_safety import _opened_members  # the zip members a load opens

import genprob
from genprob.io import persistence
from genprob.io.persistence import ModelFileError

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


# -- issue 60: saves never replace a special file; loads bounded by their metadata ---------------
@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="POSIX FIFOs")
def test_save_refuses_a_fifo_a_link_to_one_and_a_directory(tiny_model, tmp_path):
    estimator, _ = tiny_model
    fifo, link, folder = tmp_path / "pipe.npz", tmp_path / "link.npz", tmp_path / "dir.npz"
    os.mkfifo(fifo)
    link.symlink_to(fifo)
    folder.mkdir()
    cases = {
        fifo: f"cannot save to {fifo}: it is a FIFO (named pipe), not a regular file",
        link: f"cannot save to {link}: it links to {fifo}, which is a FIFO (named pipe)",
        folder: f"cannot save to {folder}: it is a directory, not a regular file",
    }
    for path, message in cases.items():
        with pytest.raises(ValueError, match=re.escape(message)):
            estimator.save(path)
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode) and link.is_symlink()
    assert os.path.isdir(folder) and not any(folder.iterdir())
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dir.npz", "link.npz", "pipe.npz"]
    # a new path and a regular file are written as before
    saved = estimator.save(tmp_path / "new")
    estimator.save(saved)
    _same(genprob.load(saved), estimator)


def _same(loaded, estimator):
    np.testing.assert_array_equal(loaded.predict_proba(X_TINY), estimator.predict_proba(X_TINY))


#: Large members of zeros: 8 x 256 MiB, a few MB once compressed.
_ZEROS, _ZERO_BYTES = 8, 256 << 20


@pytest.fixture(scope="module")
def zero_bombs(tiny_model, tmp_path_factory):
    """Two archives of eight 256 MiB members of zeros (streamed, never in memory): one without
    genprob's metadata, one with a genprob model's members as well (its metadata names none of
    the zeros)."""
    _, data = tiny_model
    root = tmp_path_factory.mktemp("bombs")
    header = io.BytesIO()
    np.lib.format.write_array_header_1_0(
        header, {"descr": "<f8", "fortran_order": False, "shape": (_ZERO_BYTES // 8,)}
    )
    chunk = bytes(16 << 20)
    paths = {}
    for kind in ("bare", "with metadata"):
        paths[kind] = path = root / f"{kind.replace(' ', '_')}.npz"
        with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as archive:
            if kind == "with metadata":
                with zipfile.ZipFile(io.BytesIO(data)) as model:
                    for name in model.namelist():
                        archive.writestr(name, model.read(name))
            for i in range(_ZEROS):
                with archive.open(f"param.zeros{i}.npy", "w", force_zip64=True) as member:
                    member.write(header.getvalue())
                    for _ in range(_ZERO_BYTES // len(chunk)):
                        member.write(chunk)
        assert path.stat().st_size < 16 << 20
    return paths


_BOUNDED_LOAD = """
import resource, sys
import genprob
from genprob.engine import _limits
from genprob.io import persistence

def address_space():
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) << 10 for line in status if line.startswith("VmSize:"))

resource.setrlimit(resource.RLIMIT_AS, (address_space() + (1 << 30), resource.RLIM_INFINITY))
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss << 10
try:
    genprob.load(sys.argv[1])
except persistence.ModelFileError as error:
    grown = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss << 10) - before
    print(grown, type(error.__cause__).__name__, error)
"""


@pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="Linux address-space limit")
@pytest.mark.parametrize("kind", ["bare", "with metadata"])
def test_zero_members_are_refused_unread_under_a_memory_limit(kind, zero_bombs):
    """The issue's zip of 8 x 256 MiB zeros: refused from its metadata (absent, or naming none
    of them) before any is inflated; under an address-space limit of 1 GiB more than the
    interpreter's, its peak memory grows by less than the file's size."""
    path = zero_bombs[kind]
    root = os.path.dirname(os.path.dirname(genprob.__file__))  # the genprob under test
    result = subprocess.run(
        [sys.executable, "-c", _BOUNDED_LOAD, str(path)],
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "PYTHONPATH": root},
    )
    assert result.returncode == 0, result.stderr
    grown, cause, message = result.stdout.split(" ", 2)
    assert cause == "NoneType" and "MemoryError" not in message  # refused, not out of memory
    if kind == "bare":
        assert "has no valid genprob metadata" in message
    else:
        assert "holds 8 array(s) its metadata does not name ('param.zeros0.npy'" in message
    assert int(grown) < path.stat().st_size + (8 << 20)


def _with_member(data: bytes, name: str, array, listed=None) -> bytes:
    """The model's archive with the array ``name`` added; ``listed``: the (dtype, shape) its
    metadata gives it (the digest recomputed), None to leave the metadata as it is."""
    with np.load(io.BytesIO(data), allow_pickle=False) as archive:
        arrays = {member: archive[member] for member in archive.files}
    metadata = json.loads(str(arrays.pop("metadata")))
    if listed is not None:
        metadata.pop("sha256")
        metadata["arrays"][name] = listed
        metadata["sha256"] = persistence._digest(metadata, {**arrays, name: array})
    buffer = io.BytesIO()
    np.savez_compressed(buffer, metadata=np.array(json.dumps(metadata)), **arrays, **{name: array})
    return buffer.getvalue()


def test_a_member_the_metadata_does_not_name_is_refused_unread(tiny_model, tmp_path, monkeypatch):
    _, data = tiny_model
    path = tmp_path / "extra.npz"
    path.write_bytes(_with_member(data, "config.attr.extra", np.zeros(1000)))
    opened = _opened_members(monkeypatch)
    with pytest.raises(ModelFileError, match=r"1 array\(s\) its metadata does not name"):
        genprob.load(path)
    assert opened == ["metadata.npy"]


def test_a_declared_size_unlike_the_metadata_is_refused_unread(tiny_model, tmp_path, monkeypatch):
    """The metadata lists an array of 3 doubles; the member holds 1000: refused from the zip's
    directory before the member is opened."""
    _, data = tiny_model
    path = tmp_path / "bigger.npz"
    path.write_bytes(_with_member(data, "config.attr.extra", np.zeros(1000), ["<f8", [3]]))
    opened = _opened_members(monkeypatch)
    message = r"'config.attr.extra.npy' declares 8128 bytes; its metadata gives it dtype <f8"
    with pytest.raises(ModelFileError, match=message + r" and shape \(3,\) \(24 bytes of data\)"):
        genprob.load(path)
    assert opened == ["metadata.npy"]
    # a header unlike the metadata, over the right number of bytes: refused at the header
    path.write_bytes(_with_member(data, "config.attr.extra", np.zeros(3, "<i8"), ["<f8", [3]]))
    with pytest.raises(ModelFileError, match="has dtype <i8 and shape .3,.; the metadata gives"):
        genprob.load(path)


def test_metadata_beyond_its_limit_is_refused_unread(tiny_model, tmp_path, monkeypatch):
    from genprob.engine import _limits

    _, data = tiny_model
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        size = archive.getinfo("metadata.npy").file_size
    monkeypatch.setattr(_limits, "MAX_METADATA_BYTES", size - 1)
    opened = _opened_members(monkeypatch)
    message = rf"its metadata declares {size} bytes; the limit is {size - 1} bytes"
    with pytest.raises(ModelFileError, match=message):
        _load_bytes(tmp_path, data)
    assert opened == []


def test_a_file_written_before_arrays_were_listed_still_loads(tiny_model, tmp_path):
    """Files of earlier versions (no 'arrays' in the metadata) load; a member they do not refer
    to is refused all the same."""
    estimator, data = tiny_model
    older = _edited(data, lambda metadata, arrays: metadata.pop("arrays"))
    _same(_load_bytes(tmp_path, older), estimator)
    with pytest.raises(ModelFileError, match="metadata does not name .'param.ghost.npy'"):
        _load_bytes(tmp_path, _with_member(older, "param.ghost", np.zeros(3)))


def _entries(data: bytes) -> list:
    with np.load(io.BytesIO(data), allow_pickle=False) as archive:
        metadata = json.loads(str(archive["metadata"]))
    return [name for name, _ in metadata["attributes"]["__items__"]]


def _entry_set(name, value):
    def edit(metadata, arrays):
        items = metadata["attributes"]["__items__"]
        items[:] = [pair for pair in items if pair[0] != name] + [[name, value]]

    return edit


@pytest.fixture(scope="module")
def mixed_model(tmp_path_factory):
    frame = pd.DataFrame({"x": X_TINY[:, 0], "colour": ["r", "g", "r", "b", "b", "g"]})
    estimator = genprob.MixedNB({"x": "gaussian", "colour": "categorical"}).fit(frame, Y_TINY)
    path = estimator.save(tmp_path_factory.mktemp("mixed") / "mixed.npz")
    return estimator, path.read_bytes(), frame


@pytest.mark.parametrize("which", ["gaussian", "mixed"])
def test_every_entry_set_to_a_number_is_refused_or_harmless(
    which, tiny_model, mixed_model, tmp_path
):
    """Each fitted entry of the file replaced by the number 3 (and a method's name added): the
    load refuses it naming the entry, or the model predicts as before. n_features_in_ = 3 is
    an int as expected; the estimator then names the feature count at predict."""
    estimator, data, X = (*tiny_model, X_TINY) if which == "gaussian" else mixed_model
    expected = estimator.predict_proba(X)
    refused = []
    for name in [*_entries(data), "predict_proba", "fit", "classes_", "story_", "params_"]:
        try:
            loaded = _load_bytes(tmp_path, _edited(data, _entry_set(name, 3)))
        except ModelFileError as error:
            assert name in str(error), (name, error)
            refused.append(name)
            continue
        if name == "n_features_in_":
            with pytest.raises(ValueError, match="expecting 3 features"):
                loaded.predict_proba(X)
            continue
        np.testing.assert_array_equal(loaded.predict_proba(X), expected, err_msg=name)
    assert {"predict_proba", "fit", "story_", "params_"} <= set(refused)
    if which == "mixed":
        assert {"_columns", "_block_positions", "categories_"} <= set(refused)


def test_a_method_shadowed_by_a_number_names_the_entry(tiny_model, tmp_path):
    _, data = tiny_model
    message = r"the entry 'predict_proba' would replace a method of GaussianNB with a int"
    with pytest.raises(ModelFileError, match=message):
        _load_bytes(tmp_path, _edited(data, _entry_set("predict_proba", 3)))
    with pytest.raises(ModelFileError, match="the story must be a Story, got list"):
        _load_bytes(tmp_path, _edited(data, _set("story", {"__list__": []})))
