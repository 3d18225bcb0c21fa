"""Save and load fitted estimators without pickle.

A model file is a NumPy ``.npz`` archive (a zip of ``.npy`` arrays) holding

* ``metadata``: one JSON document (format name and version, genprob version, estimator class,
  constructor parameters, the story's class and configuration, scalar fitted attributes, and a
  SHA-256 digest of everything else);
* ``param.<name>``: the story's named parameters (``params_``);
* ``config.<path>``: arrays inside constructor parameters, the story and fitted attributes
  (``classes_``, ``feature_names_in_``, encodings, ...), referenced from the metadata.

Loading uses ``numpy.load(..., allow_pickle=False)`` and rebuilds objects only from classes
registered in this process: estimator classes register when they are defined (subclasses of
``GenerativeClassifierBase``), stories too (every :class:`~genprob.story.Story` subclass, a
user's own included). A class is found by its qualified name; loading never imports a module or
unpickles, so a crafted file cannot execute code, and a story class that is not defined yet must be
imported or defined before :func:`load`. A file whose digest
does not match (corrupted, truncated or edited), or written by a newer format version, is rejected
with :class:`ModelFileError`.
"""

from __future__ import annotations

import hashlib
import io
import json
import zipfile
from pathlib import Path

import numpy as np

from genprob._version import __version__
from genprob.story import Story, qualified_name, story_class

FORMAT_NAME = "genprob-model"
FORMAT_VERSION = 1

__all__ = ["save", "load", "register_estimator", "ModelFileError", "FORMAT_VERSION"]

#: Estimator classes a model file may name, by qualified name (filled by the estimator layer).
_ESTIMATORS: dict[str, type] = {}


class ModelFileError(ValueError):
    """A model file that cannot be loaded safely (corrupt, tampered, unknown or newer format)."""


def register_estimator(cls) -> type:
    """Make estimator class ``cls`` loadable (the estimator base class calls this for every
    subclass when it is defined)."""
    _ESTIMATORS[qualified_name(cls)] = cls
    return cls


def _qualified(cls) -> str:
    return qualified_name(cls)


def _story_class(name):
    cls = story_class(name) if isinstance(name, str) else None
    if cls is None:
        raise ModelFileError(
            f"the file names the story class {name!r}, which is not defined in this process: "
            f"import the module that defines it (or define the class) before genprob.load."
        )
    return cls


# -- JSON encoding of configuration values --------------------------------------------------------
def _encode(value, arrays: dict, prefix: str):
    """JSON-compatible form of a hyperparameter or story attribute; arrays go to ``arrays``."""
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, Story):
        return {
            "__story__": _qualified(type(value)),
            "config": {k: _encode(v, arrays, f"{prefix}.{k}") for k, v in value.fields().items()},
        }
    if isinstance(value, dict):
        # Keys may be column positions (ints) as well as names, so store (key, value) pairs.
        return {
            "__items__": [
                [
                    _encode(k, arrays, f"{prefix}.key{i}"),
                    _encode(v, arrays, f"{prefix}.{k if isinstance(k, str) else i}"),
                ]
                for i, (k, v) in enumerate(value.items())
            ]
        }
    if isinstance(value, list | tuple):
        kind = "__tuple__" if isinstance(value, tuple) else "__list__"
        return {kind: [_encode(v, arrays, f"{prefix}[{i}]") for i, v in enumerate(value)]}
    if isinstance(value, np.ndarray):
        arrays[f"config.{prefix}"] = _plain_array(value, prefix)
        return {"__array__": f"config.{prefix}"}
    raise TypeError(
        f"cannot save {prefix} of type {type(value).__name__}: only numbers, strings, lists, "
        f"dicts, arrays and genprob stories can be stored."
    )


def _decode(value, arrays):
    if isinstance(value, list):
        raise ModelFileError("malformed metadata: bare JSON list.")
    if not isinstance(value, dict):
        return value
    if "__story__" in value:
        cls = _story_class(value["__story__"])
        config = value["config"]
        if not isinstance(config, dict):
            raise ModelFileError("malformed metadata: a story's config is not a mapping.")
        return cls._from_fields({key: _decode(item, arrays) for key, item in config.items()})
    if "__items__" in value:
        return {_decode(k, arrays): _decode(v, arrays) for k, v in value["__items__"]}
    if "__list__" in value:
        return [_decode(v, arrays) for v in value["__list__"]]
    if "__tuple__" in value:
        return tuple(_decode(v, arrays) for v in value["__tuple__"])
    if "__array__" in value:
        try:
            return arrays[value["__array__"]]
        except KeyError:
            raise ModelFileError(f"missing array {value['__array__']!r}.") from None
    raise ModelFileError(f"malformed metadata entry {sorted(value)!r}.")


def _plain_array(value, name: str) -> np.ndarray:
    """An array ``np.save`` can store without pickle (object arrays of strings become unicode)."""
    array = np.asarray(value)
    if array.dtype == object:
        items = array.ravel().tolist()
        if all(isinstance(v, str) for v in items):
            return array.astype(str)
        if all(isinstance(v, int | float) and not isinstance(v, bool) for v in items):
            return np.asarray(items).reshape(array.shape)
        raise TypeError(
            f"cannot save {name}: it holds Python objects of mixed types; only numeric or string "
            f"arrays can be stored without pickle."
        )
    return array


def _digest(metadata: dict, arrays: dict) -> str:
    digest = hashlib.sha256(json.dumps(metadata, sort_keys=True).encode())
    for name in sorted(arrays):
        array = np.ascontiguousarray(arrays[name])
        digest.update(name.encode())
        digest.update(str(array.dtype).encode())
        digest.update(str(array.shape).encode())
        digest.update(array.tobytes())
    return digest.hexdigest()


# -- public API -----------------------------------------------------------------------------------
def save(estimator, path) -> Path:
    """Write a fitted genprob estimator to ``path`` (an ``.npz`` file; the suffix is added).

    Raises:
        sklearn.exceptions.NotFittedError: if the estimator is not fitted.
        TypeError: if a hyperparameter or attribute cannot be stored without pickle.
    """
    from sklearn.utils.validation import check_is_fitted

    check_is_fitted(estimator, "params_")
    if _ESTIMATORS.get(_qualified(type(estimator))) is not type(estimator):
        raise TypeError(f"{type(estimator).__name__} is not a genprob estimator.")
    arrays = {}
    init_params = estimator.get_params(deep=False)
    # Every fitted attribute (public ``name_`` and private helpers such as encodings) is stored,
    # so the loaded estimator needs no data to predict.
    fitted = {
        name: value
        for name, value in vars(estimator).items()
        if name not in init_params and name not in ("params_", "story_")
    }
    for name, value in estimator.params_.items():
        arrays[f"param.{name}"] = _plain_array(value, f"params_[{name!r}]")
    metadata = {
        "format": FORMAT_NAME,
        "format_version": FORMAT_VERSION,
        "genprob_version": __version__,
        "estimator": _qualified(type(estimator)),
        "init_params": _encode(estimator.get_params(deep=False), arrays, "init"),
        "story": _encode(estimator.story_, arrays, "story"),
        "attributes": _encode(fitted, arrays, "attr"),
        "params": sorted(estimator.params_),
    }
    metadata["sha256"] = _digest(metadata, arrays)
    path = Path(path)
    if path.suffix != ".npz":
        path = path.with_name(path.name + ".npz")
    buffer = io.BytesIO()
    np.savez_compressed(buffer, metadata=np.array(json.dumps(metadata)), **arrays)
    path.write_bytes(buffer.getvalue())
    return path


def load(path):
    """Read an estimator written by :func:`save`; predictions are identical to the saved one.

    Raises:
        ModelFileError: corrupt, truncated or edited file, unknown classes, or a newer format.
        FileNotFoundError: no such file.
    """
    path = Path(path)
    try:
        with np.load(path, allow_pickle=False) as archive:
            contents = {name: archive[name] for name in archive.files}
    except FileNotFoundError:
        raise
    except (zipfile.BadZipFile, ValueError, OSError, EOFError, KeyError) as error:
        raise ModelFileError(f"{path} is not a readable genprob model file ({error}).") from None
    try:
        metadata = json.loads(str(contents.pop("metadata")))
    except (KeyError, json.JSONDecodeError):
        raise ModelFileError(f"{path} has no valid genprob metadata.") from None
    if not isinstance(metadata, dict) or metadata.get("format") != FORMAT_NAME:
        raise ModelFileError(f"{path} is not a genprob model file.")
    version = metadata.get("format_version")
    if not isinstance(version, int) or version > FORMAT_VERSION:
        raise ModelFileError(
            f"{path} was written with model format version {version!r}; this genprob reads "
            f"versions up to {FORMAT_VERSION}. Upgrade genprob to load it."
        )
    expected = metadata.pop("sha256", None)
    if expected != _digest(metadata, contents):
        raise ModelFileError(
            f"{path} failed its integrity check: the file was modified or damaged."
        )
    cls = _ESTIMATORS.get(metadata.get("estimator"))
    if cls is None:
        raise ModelFileError(f"{path} names an unknown estimator {metadata.get('estimator')!r}.")
    estimator = cls(**_decode(metadata["init_params"], contents))
    for name, value in _decode(metadata["attributes"], contents).items():
        setattr(estimator, name, value)
    estimator.story_ = _decode(metadata["story"], contents)
    estimator.params_ = {name: contents[f"param.{name}"] for name in metadata["params"]}
    return estimator
