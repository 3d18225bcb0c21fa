"""Save and load fitted estimators without pickle."""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import inspect
import json
import math
import os
import secrets
import stat
import zipfile
from pathlib import Path

import numpy as np

from genprob._version import __version__
from genprob.engine.capabilities import has_closed_form
from genprob.story import CLASS_PRIOR, Story, init_parameters, qualified_name, story_class

FORMAT_NAME = "genprob-model"
#: The versions and what each added: docs/reference/persistence.md.
FORMAT_VERSION = 5

#: Fitted attributes that are caches or provenance records, rebuilt after loading.
_TRANSIENT = ("_scoring_cache", "_derived_from")
#: Parameters with at least this many entries may be stored as derived from the statistics.
_DERIVE_MIN_SIZE = 1 << 16

__all__ = ["save", "load", "register_estimator", "ModelFileError", "FORMAT_VERSION"]

#: Estimator classes a model file may name, by qualified name (filled by the estimator layer).
_ESTIMATORS: dict[str, type] = {}


class ModelFileError(ValueError):
    """A model file that cannot be loaded safely (corrupt, tampered, unknown or newer format)."""


def register_estimator(cls) -> type:
    """Make estimator class ``cls`` loadable (the estimator base class registers each subclass)."""
    _ESTIMATORS[qualified_name(cls)] = cls
    return cls


def _story_class(name):
    cls = story_class(name) if isinstance(name, str) else None
    if cls is None:
        module, _, short = str(name).rpartition(".")
        raise ModelFileError(
            f"the model's story class {name} is not defined in this process: import the module "
            f"that defines it (or define the class) before loading (in Python: import {module}; "
            f"on the command line: --story {module}:{short}, or --story "
            f"path/to/{module}.py:{short})."
        )
    return cls


# -- JSON encoding of configuration values --------------------------------------------------------
def _encode(value, arrays: dict, prefix: str, aliases=None):
    """JSON form of a setting; arrays go to ``arrays``, or by reference to ``aliases``' names."""
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if aliases and isinstance(value, np.ndarray) and id(value) in aliases:
        return {"__param__": aliases[id(value)]}
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, Story):
        return {
            "__story__": qualified_name(type(value)),
            "config": {
                k: _encode(v, arrays, f"{prefix}.{k}", aliases) for k, v in value.fields().items()
            },
        }
    if isinstance(value, dict):
        # Keys may be column positions (ints) as well as names, so store (key, value) pairs.
        return {
            "__items__": [
                [
                    _encode(k, arrays, f"{prefix}.key{i}", aliases),
                    _encode(v, arrays, f"{prefix}.{k if isinstance(k, str) else i}", aliases),
                ]
                for i, (k, v) in enumerate(value.items())
            ]
        }
    if isinstance(value, range):  # a parameter such as n_components=range(1, 6)
        return {"__range__": [value.start, value.stop, value.step]}
    if isinstance(value, list | tuple):
        kind = "__tuple__" if isinstance(value, tuple) else "__list__"
        return {kind: [_encode(v, arrays, f"{prefix}[{i}]", aliases) for i, v in enumerate(value)]}
    if isinstance(value, np.ndarray) and value.dtype == object:
        # item by item in the JSON: a fixed-width string array would drop trailing NULs
        items = [v.item() if isinstance(v, np.generic) else v for v in value.ravel().tolist()]
        kinds = [type(v).__name__ for v in items if not isinstance(v, _OBJECT_ITEMS)]
        if kinds:
            raise TypeError(
                f"cannot save {prefix}: it holds a Python {kinds[0]}; object arrays can be "
                f"stored without pickle when they hold strings, numbers, booleans or None."
            )
        return {"__objects__": items, "shape": list(value.shape)}
    if isinstance(value, np.ndarray):
        arrays[f"config.{prefix}"] = value
        return {"__array__": f"config.{prefix}"}
    raise TypeError(
        f"cannot save {prefix} of type {type(value).__name__}: only numbers, strings, lists, "
        f"ranges, dicts, arrays and genprob stories can be stored."
    )


#: The marker keys of encoded values, each with the other keys it may come with.
_MARKERS = {"__story__": {"config"}, "__objects__": {"shape"}} | dict.fromkeys(
    ("__items__", "__list__", "__tuple__", "__range__", "__array__", "__param__"), set()
)
#: Entries an object array may hold (stored as JSON, read back exactly).
_OBJECT_ITEMS = (str, int, float, bool, type(None))


def _is_shape(shape) -> bool:
    return isinstance(shape, list | tuple) and all(type(d) is int and d >= 0 for d in shape)


def _object_array(value) -> np.ndarray:
    """The object array of a ``__objects__`` entry (checked: shape and scalar items)."""
    items, shape = value["__objects__"], value.get("shape")
    if (
        not isinstance(items, list)
        or not _is_shape(shape)
        or math.prod(shape) != len(items)
        or not all(isinstance(item, _OBJECT_ITEMS) for item in items)
    ):
        raise ModelFileError("malformed metadata: an object array's items do not fit its shape.")
    array = np.empty(len(items), dtype=object)
    array[:] = items
    return array.reshape(shape)


def _decode(value, arrays):
    """Inverse of :func:`_encode`; any structure it could not have written is a ModelFileError."""
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if not isinstance(value, dict):
        raise ModelFileError(f"malformed metadata: unexpected {type(value).__name__}.")
    marker = [key for key in _MARKERS if key in value]
    if len(marker) != 1 or set(value) - {marker[0], *_MARKERS[marker[0]]}:
        raise ModelFileError(f"malformed metadata entry with keys {sorted(value)!r}.")
    if marker[0] == "__objects__":
        return _object_array(value)
    payload = value[marker[0]]
    if marker[0] == "__story__":
        cls = _story_class(payload)
        config = value.get("config")
        if not isinstance(config, dict):
            raise ModelFileError(f"malformed configuration of story {payload!r}.")
        return _checked_story(
            cls._from_fields(
                {_attribute_name(key): _decode(item, arrays) for key, item in config.items()}
            )
        )
    if marker[0] in ("__array__", "__param__"):
        name = (
            f"param.{payload}" if marker[0] == "__param__" and isinstance(payload, str) else payload
        )
        if not isinstance(name, str) or name not in arrays:
            raise ModelFileError(f"missing array {payload!r}.")
        return arrays[name]
    if not isinstance(payload, list):
        raise ModelFileError(f"malformed metadata: {marker[0]} holds a {type(payload).__name__}.")
    if marker[0] == "__items__":
        if not all(isinstance(pair, list) and len(pair) == 2 for pair in payload):
            raise ModelFileError("malformed metadata: a mapping entry is not a (key, value) pair.")
        decoded = {}
        for key, item in payload:
            key = _decode(key, arrays)
            if not isinstance(key, str | int | float | bool | type(None) | tuple):
                raise ModelFileError(f"malformed metadata: unhashable key {type(key).__name__}.")
            decoded[key] = _decode(item, arrays)
        return decoded
    if marker[0] == "__range__":
        if len(payload) != 3 or not all(type(v) is int for v in payload) or payload[2] == 0:
            raise ModelFileError(f"malformed metadata: a range of {payload!r}.")
        return range(*payload)
    items = [_decode(v, arrays) for v in payload]
    return items if marker[0] == "__list__" else tuple(items)


def _checked_story(story: Story) -> Story:
    """``story`` after its settings went through ``__init__`` once (refused at load, not use)."""
    cls = type(story)
    parameters = init_parameters(cls)
    if parameters is None:
        return story
    fields = vars(story)
    rebuilt = cls(**{p.name: fields[p.name] for p in parameters if p.name in fields})
    absent = sorted(set(vars(rebuilt)) - set(fields))
    if absent:
        raise ModelFileError(f"the story {cls.__name__} lacks the settings {absent!r}.")
    return story


def _attribute_name(key) -> str:
    """A key of the file that may be set as an attribute (no dunder names such as __class__)."""
    if not isinstance(key, str) or not key.isidentifier() or key.startswith("__"):
        raise ModelFileError(f"malformed metadata: {key!r} is not an attribute name.")
    return key


def _signature(key, digest: str) -> str:
    """HMAC-SHA256 of the file's digest under the user's ``key``."""
    if isinstance(key, str):
        key = key.encode()
    if not isinstance(key, bytes | bytearray) or not key:
        raise TypeError(f"key must be non-empty bytes or text, got {type(key).__name__}.")
    return hmac.new(bytes(key), digest.encode(), hashlib.sha256).hexdigest()


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
def save(estimator, path, *, key: bytes | str | None = None) -> Path:
    """Write a fitted genprob estimator to ``path`` (an ``.npz`` file; the suffix is added);
    a failed save leaves a model already at ``path`` intact.

    Args:
        estimator: a fitted genprob estimator.
        path: where to write it.
        key: a secret (bytes or text) to sign the file with (HMAC-SHA256 of its digest);
            ``load(path, key=key)`` then refuses any file not signed with that key.

    Raises:
        sklearn.exceptions.NotFittedError: if the estimator is not fitted.
        TypeError: if a hyperparameter or attribute cannot be stored without pickle.
        ValueError: ``path`` is (or links to) a directory, FIFO, socket or device: it is left
            untouched, where replacing it would destroy it.
    """
    from sklearn.utils.validation import check_is_fitted

    check_is_fitted(estimator, "params_")
    if _ESTIMATORS.get(qualified_name(type(estimator))) is not type(estimator):
        raise TypeError(f"{type(estimator).__name__} is not a genprob estimator.")
    arrays = {}
    init_params = estimator.get_params(deep=False)
    # every fitted attribute is stored (encodings too): the loaded estimator needs no data
    derivable = getattr(type(estimator), "_derivable_attributes", None)
    derived_attributes = set(derivable(estimator)) if derivable is not None else set()
    skipped = {*init_params, "params_", "story_", *_TRANSIENT, *derived_attributes}
    fitted = {name: value for name, value in vars(estimator).items() if name not in skipped}
    derived = _derivable_params(estimator)
    for name, value in estimator.params_.items():
        if np.asarray(value).dtype.kind not in "biuf":  # load reads numeric parameters only
            raise TypeError(f"cannot save params_[{name!r}]: it is not a numeric array.")
        if name not in derived:
            arrays[f"param.{name}"] = np.asarray(value)
    aliases = {
        id(value): name
        for name, value in estimator.params_.items()
        if isinstance(value, np.ndarray) and value.size >= _DERIVE_MIN_SIZE
    }
    metadata = {
        "format": FORMAT_NAME,
        "format_version": FORMAT_VERSION,
        "genprob_version": __version__,
        "estimator": qualified_name(type(estimator)),
        "init_params": _encode(init_params, arrays, "init"),
        "story": _encode(estimator.story_, arrays, "story"),
        "attributes": _encode(fitted, arrays, "attr", aliases),
        "params": sorted(estimator.params_),
        "derived": sorted(derived),
    }
    if derived_attributes:
        metadata["derived_attributes"] = sorted(derived_attributes)
    # what each member holds, so a load checks the sizes the zip declares before reading any
    metadata["arrays"] = {name: [a.dtype.str, list(a.shape)] for name, a in arrays.items()}
    metadata["sha256"] = _digest(metadata, arrays)
    if key is not None:
        metadata["hmac_sha256"] = _signature(key, metadata["sha256"])
    path = Path(path)
    if path.suffix != ".npz":
        path = path.with_name(path.name + ".npz")
    _write_atomically(path, metadata, arrays)
    return path


def _write_atomically(path: Path, metadata: dict, arrays: dict) -> None:
    """Write the archive to a new file beside ``path`` (links followed), then rename it."""
    target = Path(os.path.realpath(path))
    mode = _writable_target(path, target)
    temporary = target.with_name(f".{target.name}.{secrets.token_hex(8)}.tmp")
    # O_EXCL: a new file (a random 64-bit name); mode 0o666 less the umask, as any new file's
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        with os.fdopen(fd, "wb") as stream:
            np.savez_compressed(stream, metadata=np.array(json.dumps(metadata)), **arrays)
            stream.flush()
            os.fsync(stream.fileno())
        if mode is not None:
            os.chmod(temporary, mode)
        _writable_target(path, target)  # again: something else may have taken its place
        os.replace(temporary, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


def save_target_error(path) -> str | None:
    """Why a saved model must not replace ``path`` (``"it is a FIFO (named pipe)"``), or None."""
    target = os.path.realpath(path)
    try:
        mode = os.stat(target).st_mode
    except OSError:  # a new path (or one the write itself reports)
        return None
    if stat.S_ISREG(mode):
        return None
    where = f"it links to {target}, which is" if os.path.islink(path) else "it is"
    return f"{where} {_file_kind(mode)}"


def _writable_target(path, target: Path) -> int | None:
    """The permission bits of the regular file at ``target`` (None: a new path)."""
    what = save_target_error(path)
    if what is not None:
        raise ValueError(
            f"cannot save to {path}: {what}, not a regular file; a model is saved to a regular "
            f"file or a new path (nothing was written)."
        )
    try:
        return stat.S_IMODE(os.stat(target).st_mode)
    except FileNotFoundError:
        return None


def _recomputed_params(estimator, stats) -> dict:
    """The closed form's parameters from statistics as the fit computed them, or {}."""
    import jax

    from genprob.engine._dtype import numpy_dtype, precision

    story = getattr(estimator, "story_", None)
    if story is None or not has_closed_form(story):
        return {}
    if not isinstance(stats, dict) or "emission" not in stats:
        return {}
    from genprob.engine import execution

    dtype = numpy_dtype(estimator._dtype)
    with precision(estimator._dtype):
        emission = jax.tree_util.tree_map(lambda a: np.asarray(a, dtype), stats["emission"])
        params = execution.emission_parameters(story, emission)
        return {k: np.asarray(v) for k, v in params.items()}


def _derivable_params(estimator) -> set:
    """Large parameters that the closed form recomputes bit for bit from ``stats_``."""
    large = [
        name for name, value in estimator.params_.items() if np.size(value) >= _DERIVE_MIN_SIZE
    ]
    if not large or getattr(estimator, "stats_", None) is None:
        return set()
    try:
        recomputed = _recomputed_params(estimator, estimator.stats_)
    except Exception:  # noqa: BLE001 - a story that cannot refit keeps every parameter stored
        return set()
    return {
        name
        for name in large
        if name in recomputed
        and np.asarray(estimator.params_[name]).dtype == recomputed[name].dtype
        and np.array_equal(estimator.params_[name], recomputed[name])
    }


def load(path, *, key: bytes | str | None = None):
    """Read an estimator written by :func:`save`; predictions are identical to the saved one.

    Without ``key`` the digest detects damage, not a forger: load files from sources you trust,
    or pass the ``key`` they were signed with (an unsigned file is then refused).

    Raises:
        ModelFileError: anything wrong with the file (docs/reference/persistence.md lists the
            checks), or a path that is not a regular file.
        FileNotFoundError: no such file (other ``OSError`` when the path cannot be read).
    """
    path = Path(path)
    if key is not None:
        _signature(key, "")  # a bad key is refused before the file is read
    try:
        metadata, contents = _read_archive(path)
        metadata = _check_metadata(metadata, contents, key)
        estimator, recomputed = _rebuild(metadata, contents)
        _check_consistent(estimator, recomputed)
    except ModelFileError as error:  # every fault found in the file names it once
        raise ModelFileError(f"{path}: {error}") from error.__cause__
    except (TypeError, ValueError, AttributeError, RecursionError, LookupError) as error:
        # A file that passed its digest was edited by hand: any fault is the file's.
        raise ModelFileError(
            f"{path} holds inconsistent metadata ({type(error).__name__}: {error})."
        ) from error
    return estimator


def _check_consistent(estimator, recomputed=None) -> None:
    """Refuse an edited file whose fitted attributes disagree; ``recomputed``: _rebuild's M-step."""
    params = estimator.params_  # arrays as read (no pickle) or recomputed
    if not all(value.dtype.kind in "biuf" for value in params.values()):
        raise ModelFileError("the parameters must be numeric arrays.")
    prior = params.get(CLASS_PRIOR)
    if prior is None or prior.ndim != 1 or prior.size < 1:
        raise ModelFileError(f"the parameter {CLASS_PRIOR!r} must be a 1-D array.")
    num_classes = prior.shape[0]
    features = getattr(estimator, "n_features_in_", None)
    if type(features) is not int or features < 1:
        raise ModelFileError(f"n_features_in_ must be an int >= 1, got {features!r}.")
    sizes = {}
    for name, value in params.items():
        # an axis the story names (class, feature, component) or of the classes' or features' size
        dims = estimator.story_.parameter_dims(name, value.shape, num_classes, features)
        named = any(dim is not None for dim in dims)
        for dim, size in zip(dims, value.shape, strict=True):  # an axis has one size throughout
            if dim is not None and sizes.setdefault(dim, size) != size:
                raise ModelFileError(
                    f"the parameter {name!r} has {size} entries along {dim!r}, another one "
                    f"{sizes[dim]}."
                )
        if not named and not any(size in (num_classes, features) for size in value.shape):
            raise ModelFileError(
                f"the parameter {name!r} has shape {value.shape}, with no axis of the "
                f"{num_classes} classes or the {features} features."
            )
    classes = getattr(estimator, "classes_", None)
    if not isinstance(classes, np.ndarray) or classes.shape != (num_classes,):
        raise ModelFileError(
            f"classes_ must be a 1-D array of {num_classes} labels (one per entry of "
            f"{CLASS_PRIOR!r}), got {type(classes).__name__} {np.shape(classes)}."
        )
    if len(set(classes.tolist())) != num_classes:
        raise ModelFileError("classes_ repeats a label.")
    names = getattr(estimator, "feature_names_in_", None)
    if names is not None and (not isinstance(names, np.ndarray) or names.shape != (features,)):
        raise ModelFileError(
            f"feature_names_in_ must name the {features} features of n_features_in_, got "
            f"{type(names).__name__} {np.shape(names)}."
        )
    stats = getattr(estimator, "stats_", None)
    if stats is not None:
        counts = stats.get("class_counts") if isinstance(stats, dict) else None
        if (
            not isinstance(counts, np.ndarray)
            or counts.shape != (num_classes,)
            or not isinstance(stats.get("emission"), dict)
        ):
            raise ModelFileError(
                f"stats_ must hold class_counts of {num_classes} classes and the "
                f"emission's statistics."
            )
        try:  # the statistics must be the story's: its closed form reads every one it needs
            if recomputed is None:
                recomputed = _recomputed_params(estimator, stats)
        except Exception as error:  # noqa: BLE001 - whatever the M-step raises on foreign input
            raise ModelFileError(
                f"the stored statistics cannot be recomputed into the story's "
                f"parameters ({type(error).__name__}: {error})."
            ) from None
        for name, value in recomputed.items():
            if name in params and params[name].shape != value.shape:
                raise ModelFileError(
                    f"the parameter {name!r} has shape {params[name].shape}; the "
                    f"story's parameters from the stored statistics have {value.shape}."
                )


def _fitted_attribute(cls, init_params: dict, name, value) -> str:
    """``name`` checked: one :func:`save` writes, hiding nothing of ``cls``, of its kind."""
    name = _attribute_name(name)
    if name in init_params or name in ("params_", "story_", *_TRANSIENT):
        raise ModelFileError(f"the entry {name!r} is not a fitted attribute.")
    try:
        defined = inspect.getattr_static(cls, name)
    except AttributeError:
        pass
    else:
        method = callable(defined) or isinstance(defined, classmethod)
        kind = "a property" if isinstance(defined, property) else "a method" if method else ""
        raise ModelFileError(
            f"the entry {name!r} would replace {kind or 'an attribute'} of {cls.__name__} with "
            f"a {type(value).__name__}; it is not a fitted attribute."
        )
    kinds = getattr(cls, "_fitted_kinds", {}).get(name)
    if kinds is not None and not isinstance(value, kinds):
        kinds = kinds if isinstance(kinds, tuple) else (kinds,)
        expected = " or ".join(kind.__name__ for kind in kinds)
        raise ModelFileError(
            f"the entry {name!r} must be a {expected}, got {type(value).__name__}."
        )
    return name


def _rebuild(metadata: dict, contents: dict):
    """The estimator of checked ``metadata``, and the parameters derived from its statistics."""
    cls = _ESTIMATORS.get(metadata["estimator"])
    if cls is None:
        raise ModelFileError(f"the file names an unknown estimator {metadata['estimator']!r}.")
    derived = metadata.get("derived", [])
    missing = [
        name
        for name in metadata["params"]
        if f"param.{name}" not in contents and name not in derived
    ]
    if missing:
        raise ModelFileError(f"the file lacks the parameter arrays {missing!r}.")
    init_params = _decode(metadata["init_params"], contents)
    story = _decode(metadata["story"], contents)
    if not isinstance(init_params, dict):
        raise ModelFileError("init_params and attributes must be mappings.")
    if not (isinstance(story, Story) or story is None and not getattr(cls, "_has_story", True)):
        raise ModelFileError(f"the story must be a Story, got {type(story).__name__}.")
    try:
        estimator = cls(**{_attribute_name(k): v for k, v in init_params.items()})
    except (TypeError, ValueError) as error:
        raise ModelFileError(
            f"the file holds constructor parameters {cls.__name__} rejects ({error})."
        ) from None
    if story is not None:
        estimator.story_ = story
    stats = recomputed = None
    if derived:
        # the statistics come first: the derived parameters are recomputed from them
        for pair in metadata["attributes"].get("__items__", []):
            if isinstance(pair, list) and len(pair) == 2 and pair[0] == "stats_":
                stats = _decode(pair[1], contents)
        recomputed = _recomputed_params(estimator, stats)
        if not all(name in recomputed for name in derived):
            raise ModelFileError(f"derived parameters {derived!r} cannot be recomputed.")
        for name in derived:
            contents[f"param.{name}"] = recomputed[name]
    attributes = _decode(metadata["attributes"], contents)
    if not isinstance(attributes, dict):
        raise ModelFileError("init_params and attributes must be mappings.")
    for name, value in attributes.items():
        setattr(estimator, _fitted_attribute(cls, init_params, name, value), value)
    estimator.params_ = {name: contents[f"param.{name}"] for name in metadata["params"]}
    derived_attributes = metadata.get("derived_attributes", [])
    if derived_attributes:
        restore = getattr(type(estimator), "_restore_derived_attributes", None)
        if restore is None:
            raise ModelFileError(
                f"the file lists derived attributes {derived_attributes!r}, which "
                f"{cls.__name__} cannot recompute."
            )
        restore(estimator, [_attribute_name(name) for name in derived_attributes])
    return estimator, recomputed


_FILE_KINDS = {
    stat.S_IFDIR: "a directory",
    stat.S_IFIFO: "a FIFO (named pipe)",
    stat.S_IFCHR: "a character device",
    stat.S_IFBLK: "a block device",
    stat.S_IFSOCK: "a socket",
}


def _file_kind(mode: int) -> str:
    return _FILE_KINDS.get(stat.S_IFMT(mode), "a special file")


def _refuse_unless_regular(mode: int) -> None:
    if not stat.S_ISREG(mode):
        raise ModelFileError(
            f"it is {_file_kind(mode)}, not a regular file: give a model file's path."
        )


def _open_regular(path: Path):
    """``path`` opened for reading when it is a regular file, checked before and after opening."""
    _refuse_unless_regular(os.stat(path).st_mode)  # FileNotFoundError passes through
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0))
    try:
        _refuse_unless_regular(os.fstat(fd).st_mode)
    except BaseException:
        os.close(fd)
        raise
    return os.fdopen(fd, "rb")


def _read_archive(path: Path) -> tuple[dict, dict]:
    """The metadata and the arrays it names, without pickle, sizes checked before inflating."""
    from genprob.engine import _limits

    with _open_regular(path) as stream:  # FileNotFoundError and other OSErrors pass through
        head = stream.read(4)
        if head != b"PK\x03\x04":
            kind = "a bare .npy array" if head == b"\x93NUM" else "not a zip archive"
            raise ModelFileError(f"it is not a genprob model file ({kind}).")
        stream.seek(0)
        try:
            with zipfile.ZipFile(stream) as archive:
                members = archive.infolist()
                _check_members(members, _limits)
                members = {info.filename[: -len(".npy")]: info for info in members}
                info = members.pop("metadata", None)
                if info is None:
                    raise ModelFileError("it has no valid genprob metadata.")
                if info.file_size > _limits.MAX_METADATA_BYTES:
                    raise ModelFileError(
                        f"its metadata declares {_limits.compact(info.file_size)} bytes; "
                        f"the limit is {_limits.compact(_limits.MAX_METADATA_BYTES)} bytes "
                        f"(genprob.engine._limits.MAX_METADATA_BYTES)."
                    )
                metadata = _parse_metadata(_read_member(archive, info))
                named = _named_arrays(metadata)
                unnamed = sorted(set(members) - set(named))
                if unnamed:
                    raise ModelFileError(
                        f"it holds {len(unnamed)} array(s) its metadata does not name "
                        f"({', '.join(repr(name + '.npy') for name in unnamed[:3])}"
                        f"{', ...' if len(unnamed) > 3 else ''}): not a file genprob wrote, "
                        f"refused unread."
                    )
                for name, info in members.items():
                    _check_declared_size(info, named[name])
                return metadata, {
                    name: _read_member(archive, info, named[name]) for name, info in members.items()
                }
        except ModelFileError:
            raise
        except Exception as error:  # zlib, zip, header-parsing errors: all mean a damaged file
            raise ModelFileError(
                f"it is not a readable genprob model file ({type(error).__name__}: {error})."
            ) from error


def _named_arrays(metadata: dict) -> dict:
    """Member name -> the ``(dtype, shape)`` the metadata gives it (None in older files)."""
    listed = metadata.get("arrays")
    if listed is None:
        params, derived = metadata.get("params"), metadata.get("derived")
        named = dict.fromkeys(
            f"param.{name}"
            for name in (params if isinstance(params, list) else [])
            if isinstance(name, str) and name not in (derived if isinstance(derived, list) else [])
        )
        pending = [metadata]
        while pending:  # every {"__array__": name} anywhere in the document
            value = pending.pop()
            if isinstance(value, dict):
                if isinstance(value.get("__array__"), str):
                    named[value["__array__"]] = None
                pending.extend(value.values())
            elif isinstance(value, list):
                pending.extend(value)
        return named
    try:
        if not isinstance(listed, dict):
            raise TypeError
        named = {}
        for name, (dtype, shape) in listed.items():
            if not _is_shape(shape):
                raise TypeError
            named[name] = (np.dtype(dtype), tuple(shape))
    except (TypeError, ValueError):
        raise ModelFileError("metadata field 'arrays' must map names to [dtype, shape].") from None
    return named


#: Most bytes of a .npy member's header: NumPy writes 64 to 256 for the arrays a model holds.
_NPY_HEADER_BYTES = 4096


def _check_declared_size(info: zipfile.ZipInfo, spec) -> None:
    """The member's declared size against the ``(dtype, shape)`` the metadata gives it."""
    if spec is None:
        return
    dtype, shape = spec
    data = dtype.itemsize * math.prod(shape)
    if not data + 10 <= info.file_size <= data + _NPY_HEADER_BYTES:
        raise ModelFileError(
            f"member {info.filename!r} declares {info.file_size} bytes; its metadata "
            f"gives it dtype {dtype.str} and shape {shape} ({data} bytes of data)."
        )


def _check_members(members, limits) -> None:
    """Names, flags and declared sizes of the archive's members, before any is read."""
    names = set()
    for info in members:
        if not info.filename.endswith(".npy") or info.flag_bits & 0x1:
            raise ModelFileError(
                f"it holds member {info.filename!r}, which is not a plain .npy array."
            )
        if info.filename in names:
            raise ModelFileError(f"it holds member {info.filename!r} twice.")
        names.add(info.filename)
        # deflate expands at most 1032-fold: a larger declared size is a lie of the zip directory
        stored = info.compress_type == zipfile.ZIP_STORED
        if info.file_size > (info.compress_size if stored else 1032 * info.compress_size + 64):
            raise ModelFileError(
                f"member {info.filename!r} declares {limits.compact(info.file_size)} "
                f"bytes, more than its {limits.compact(info.compress_size)} compressed bytes can "
                f"hold (a damaged or forged file)."
            )
        if info.file_size > limits.MAX_ARRAY_BYTES:
            raise ModelFileError(
                f"member {info.filename!r} declares {limits.compact(info.file_size)} "
                f"bytes; the limit per array is {limits.compact(limits.MAX_ARRAY_BYTES)} bytes "
                f"(genprob.engine._limits.MAX_ARRAY_BYTES)."
            )
    total = sum(info.file_size for info in members)
    if total > limits.MAX_LOAD_BYTES:
        largest = max(members, key=lambda info: info.file_size)
        raise ModelFileError(
            f"its {len(members)} arrays declare {limits.compact(total)} bytes in all "
            f"(the largest, {largest.filename!r}, {limits.compact(largest.file_size)} bytes); "
            f"the limit is {limits.compact(limits.MAX_LOAD_BYTES)} bytes "
            f"(genprob.engine._limits.MAX_LOAD_BYTES). Raise it to load a larger model from a "
            "source you trust."
        )


#: Bytes read from a member per call (the only buffer besides the array itself).
_CHUNK = 1 << 20


def _read_member(archive: zipfile.ZipFile, info: zipfile.ZipInfo, spec=None) -> np.ndarray:
    """A ``.npy`` member whose header describes the bytes that follow (and ``spec``)."""
    with archive.open(info) as member:
        version = np.lib.format.read_magic(member)
        if version == (1, 0):
            shape, fortran, dtype = np.lib.format.read_array_header_1_0(member)
        elif version == (2, 0):
            shape, fortran, dtype = np.lib.format.read_array_header_2_0(member)
        else:
            raise ModelFileError(f"unsupported .npy version {version}.")
        if dtype.hasobject or not _is_shape(shape):
            raise ModelFileError(
                f"array header with dtype {dtype} and shape {shape} is not allowed."
            )
        if spec is not None and (dtype, tuple(shape)) != spec:
            raise ModelFileError(
                f"array {info.filename!r} has dtype {dtype.str} and shape {shape}; the metadata "
                f"gives it {spec[0].str} and {spec[1]}."
            )
        count = int(np.prod(shape, dtype=object))
        if count * dtype.itemsize != info.file_size - member.tell():
            raise ModelFileError("an array's header does not match its data length.")
        array = np.empty(count, dtype=dtype)
        if array.nbytes:
            view = memoryview(array.view(np.uint8))
            done = 0
            while done < len(view):
                read = member.readinto(view[done : done + _CHUNK])
                if not read:
                    raise ModelFileError("an array's data ends before its declared length.")
                done += read
        if member.read(1):  # also makes zipfile check the member's CRC
            raise ModelFileError("an array's data runs past its declared length.")
    return array.reshape(shape, order="F" if fortran else "C")


def _parse_metadata(raw: np.ndarray) -> dict:
    """The metadata document of a genprob model file of a version this genprob reads."""
    if raw.shape != () or raw.dtype.kind != "U":
        raise ModelFileError("it has no valid genprob metadata.")
    try:
        metadata = json.loads(str(raw))
    except (json.JSONDecodeError, RecursionError):
        raise ModelFileError("it has no valid genprob metadata.") from None
    if not isinstance(metadata, dict) or metadata.get("format") != FORMAT_NAME:
        raise ModelFileError("it is not a genprob model file.")
    version = metadata.get("format_version")
    if type(version) is not int or version < 1:
        raise ModelFileError(f"it has an invalid format_version {version!r} (a positive integer).")
    if version > FORMAT_VERSION:
        raise ModelFileError(
            f"it was written with model format version {version!r}; this genprob reads "
            f"versions up to {FORMAT_VERSION}. Upgrade genprob to load it."
        )
    return metadata


def _check_metadata(metadata: dict, contents: dict, key=None) -> dict:
    """The metadata's integrity (digest, signature) and schema, before any field is used."""
    expected = metadata.pop("sha256", None)
    signature = metadata.pop("hmac_sha256", None)
    if not isinstance(expected, str) or expected != _digest(metadata, contents):
        raise ModelFileError("it failed its integrity check: the file was modified or damaged.")
    if key is not None:
        if not isinstance(signature, str):
            raise ModelFileError("it is not signed; a key was given, so it is refused.")
        if not hmac.compare_digest(signature, _signature(key, expected)):
            raise ModelFileError(
                "it is not signed with this key: it was signed with another key, or "
                "modified after signing."
            )
    schema = {
        "genprob_version": str,
        "estimator": str,
        "init_params": dict,
        "attributes": dict,
        "params": list,
    }
    for field, kind in schema.items():  # the story is checked once decoded (None or a Story)
        if not isinstance(metadata.get(field), kind):
            raise ModelFileError(
                f"metadata field {field!r} must be a {kind.__name__}, got "
                f"{type(metadata.get(field)).__name__}."
            )
    if not all(isinstance(name, str) for name in metadata["params"]):
        raise ModelFileError("metadata field 'params' must list names.")
    derived = metadata.get("derived", [])
    if not isinstance(derived, list) or not set(derived) <= set(metadata["params"]):
        raise ModelFileError("metadata field 'derived' must list parameter names.")
    if not isinstance(metadata.get("derived_attributes", []), list):  # names: _attribute_name
        raise ModelFileError("metadata field 'derived_attributes' must list names.")
    if metadata.get("derived_statistics"):
        raise ModelFileError(
            "it leaves out statistics that this genprob no longer recomputes "
            "(derived_statistics); refit and save the model again."
        )
    return metadata
