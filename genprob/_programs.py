"""genprob's compiled programs, kept traced on disk next to the compilation cache.

JAX's persistent compilation cache (:mod:`genprob._compile_cache`) stores compiled code, but a
new process still traces each program in Python and lowers it before it can look the code up:
for a first ``fit`` + ``predict_proba`` on iris that is 0.1 to 0.2 s, most of a fresh
cross-validation's time. :func:`program` is ``jax.jit`` for genprob's own entry points that, in
addition, keeps each traced program as a serialized :mod:`jax.export` artifact; a later process
loads it and skips tracing and lowering. The loaded program is bound inside an outer ``jax.jit``
(traced once per argument signature, in a few milliseconds), so later calls dispatch as fast as
any jitted function.

A program is only ever loaded under a key that covers everything its trace depends on: the
function, the argument structure (every story's class and static fields, dict keys), each
argument's shape and dtype, the values of static arguments, 64-bit mode and the JAX settings
read while tracing, the versions of JAX, jaxlib, NumPyro and NumPy, and a hash of genprob's own
source files. Arguments outside that (a story class defined outside genprob, whose code could
change between runs with nothing in the key to show it, or a static field that is not plain
data) are traced as usual, every time. The artifact is the program JAX would have compiled, so
a result never depends on this cache: it is on and off with the compilation cache
(``GENPROB_COMPILATION_CACHE``, :func:`genprob.set_compilation_cache`) and lives in its
``traces`` subdirectory. Monkeypatching genprob's internals is not seen by a program loaded
from it: switch the cache off for that.
"""

from __future__ import annotations

import functools
import hashlib
import os
import tempfile
from pathlib import Path

import jax
import numpy as np

from genprob import _compile_cache

try:
    from jax._src import core as _jax_core
except ImportError:  # internals moved: _at_top_level says no, and programs are traced
    _jax_core = None

__all__ = ["program"]

_SUFFIX = ".jaxexport"
_fingerprint: str | None = None
#: Every program, so that :func:`forget` reaches them all.
_PROGRAMS: list = []


class _NotCacheable(Exception):
    """The arguments hold something the key cannot describe across processes."""


def program(fn=None, *, static_argnames=()):
    """``jax.jit(fn, static_argnames=...)``, whose traced program a later process loads from disk.

    Static arguments are passed by keyword. Inside a transformation (tracers among the
    arguments), with ``jax.disable_jit``, or with the cache off, the call is ``jax.jit``'s.
    """
    if fn is None:
        return functools.partial(program, static_argnames=static_argnames)
    return _Program(fn, tuple(static_argnames))


class _Program:
    def __init__(self, fn, static_argnames):
        self._fn = fn
        self._static_argnames = static_argnames
        static = static_argnames or None
        self._plain = jax.jit(fn, static_argnames=static)

        # traced once per signature and process, by jit's own cache; its body binds the program
        # loaded from disk (one primitive) instead of tracing ``fn``
        def body(*args, **kwargs):
            return self._body(*args, **kwargs)

        body.__wrapped__ = fn  # jit reads the signature (static argument names) through it
        body.__name__ = body.__qualname__ = f"{fn.__name__}_cached"
        self._cached = jax.jit(body, static_argnames=static)
        self._name = f"{fn.__module__}.{fn.__qualname__}"
        functools.update_wrapper(self, fn)
        _PROGRAMS.append(self)

    def __call__(self, *args, **kwargs):
        if _at_top_level() and _active_directory() is not None:
            return self._cached(*args, **kwargs)
        return self._plain(*args, **kwargs)

    def _body(self, *args, **kwargs):
        """Run at trace time of ``_cached``: the loaded (or newly exported) program's call."""
        statics = {k: kwargs.pop(k) for k in self._static_argnames if k in kwargs}
        leaves, treedef = jax.tree_util.tree_flatten((args, kwargs))
        directory = _active_directory()
        exported = None
        if directory is not None:
            avals = [jax.typeof(leaf) for leaf in leaves]
            exported = self._load(directory, treedef, avals, statics)
        if exported is None:
            return self._fn(*args, **kwargs, **statics)
        return exported.call(*leaves)

    def _load(self, directory, treedef, avals, statics):
        """The exported program from disk, else traced, exported and saved; None when the
        arguments cannot be keyed or the program cannot be exported (then it is traced as
        usual, and an error in the arguments is raised from there)."""
        from jax import export

        try:
            described = repr(
                (self._name, _describe(treedef), avals, _plain(tuple(sorted(statics.items()))))
            )
        except (_NotCacheable, TypeError, ValueError):  # not describable: traced every time
            return None
        digest = hashlib.sha256(f"{described}|{_settings()}|{_environment()}".encode()).hexdigest()
        name = f"{self._fn.__qualname__}-{digest[:40]}{_SUFFIX}"
        path = Path(directory, _compile_cache.TRACES, name)
        exported = _read(path)
        if exported is not None:
            return exported

        def flat(*leaves):
            args, kwargs = jax.tree_util.tree_unflatten(treedef, leaves)
            return self._fn(*args, **kwargs, **statics)

        flat.__name__ = flat.__qualname__ = self._fn.__name__  # JAX's logs and profiles
        shapes = [jax.ShapeDtypeStruct(a.shape, a.dtype, weak_type=a.weak_type) for a in avals]
        try:
            exported = export.export(jax.jit(flat))(*shapes)
            blob = exported.serialize()
        except Exception:  # noqa: BLE001 - not exportable (or bad input): traced as usual
            return None
        _write(path, blob)
        return exported


def _at_top_level() -> bool:
    """True outside any JAX transformation (the arguments are concrete)."""
    try:
        return isinstance(_jax_core.trace_ctx.trace, _jax_core.EvalTrace)
    except AttributeError:  # internals moved: always trace
        return False


def forget() -> None:
    """Drop the programs loaded in this process (the next call reads or traces them again)."""
    for item in _PROGRAMS:
        item._cached.clear_cache()


def _active_directory():
    """The traces' parent directory inside a genprob call with genprob's cache in use."""
    directory = _compile_cache.active_directory()
    if directory is None or jax.config.jax_disable_jit or not _serializable():
        return None
    return directory


@functools.cache
def _serializable() -> bool:
    try:  # jax.export serializes with flatbuffers, an optional dependency of JAX
        import flatbuffers  # noqa: F401
    except ImportError:
        return False
    return True


def _settings() -> tuple:
    """JAX settings a trace reads (64-bit mode, dtype promotion, default matmul precision)."""
    config = jax.config
    return (
        bool(config.jax_enable_x64),
        str(config.jax_numpy_dtype_promotion),
        str(config.jax_default_matmul_precision),
    )


def _environment() -> str:
    """Versions of what a trace runs through, and a hash of genprob's source (computed once)."""
    global _fingerprint
    if _fingerprint is None:
        import jaxlib
        import numpyro

        digest = hashlib.sha256()
        root = Path(__file__).parent
        for source in sorted(root.rglob("*.py")):
            digest.update(str(source.relative_to(root)).encode())
            digest.update(source.read_bytes())
        versions = (jax.__version__, jaxlib.__version__, numpyro.__version__, np.__version__)
        _fingerprint = f"{versions}|{digest.hexdigest()}"
    return _fingerprint


def _describe(treedef):
    """A description of ``treedef`` that is the same in every process, or :class:`_NotCacheable`:
    built-in containers and genprob's own stories only, whose static fields are plain data."""
    from genprob.story import Story, qualified_name

    data = treedef.node_data()
    if data is None:
        return "*"
    kind, aux = data
    children = tuple(_describe(child) for child in treedef.children())
    if kind in (tuple, list, type(None)):
        return (kind.__name__, children)
    if kind is dict:
        return ("dict", _plain(tuple(aux)), children)
    if isinstance(kind, type) and issubclass(kind, Story) and _is_genprob(kind):
        fields = tuple((name, _plain(static._key), count) for name, static, count in aux)
        return (qualified_name(kind), fields, children)
    raise _NotCacheable(kind)


def _is_genprob(cls) -> bool:
    return cls.__module__ == "genprob" or cls.__module__.startswith("genprob.")


def _plain(value):
    """``value`` when it is plain data (its repr is the same in every process)."""
    from genprob.story import _HOLE

    if value is None or value is _HOLE or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, np.generic):
        return _plain(value.item())
    if type(value) in (tuple, list):
        return tuple(map(_plain, value))
    raise _NotCacheable(type(value))


def _read(path: Path):
    """The exported program in ``path``, or None (missing, partly written, or from another JAX)."""
    from jax import export

    try:
        blob = path.read_bytes()
    except OSError:
        return None
    try:
        return export.deserialize(bytearray(blob))
    except Exception:  # noqa: BLE001 - unreadable: trace again and replace it
        return None


def _write(path: Path, blob) -> None:
    """Write atomically (another process may read the file meanwhile); a failure only costs
    the next process a trace."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
        with os.fdopen(handle, "wb") as out:
            out.write(blob)
        os.replace(temporary, path)
    except OSError:
        pass
