"""JAX's persistent compilation cache, on by default, switched on only while genprob computes.

A fresh Python process compiles every jitted program (and every eager operation) again: on iris,
a first ``fit`` + ``predict_proba`` spends almost all of its time compiling. JAX can keep
compiled programs on disk, but its switch (``jax_compilation_cache_dir``) is global. genprob sets
it only inside its own calls, as thread-local overrides of JAX's settings, and afterwards returns
JAX's cache to its untouched state, so the user's own JAX code never reads or writes genprob's
cache and the user's global JAX configuration is never changed.

The directory is ``genprob/jax`` under ``$XDG_CACHE_HOME`` or ``~/.cache``. Elsewhere:
``GENPROB_COMPILATION_CACHE=/a/dir``; off: ``GENPROB_COMPILATION_CACHE=0`` or
:func:`set_compilation_cache` with ``False``. When the user has configured a JAX cache of their
own, genprob leaves it alone and adds none.

A cached program is the program JAX would compile (the key covers the program, the compile
options, the JAX/XLA versions and the device), so results never depend on the cache; an entry
that cannot be read (removed, or still being written by another process) is compiled again. The
directory is kept under 1 GiB (:func:`prune`, least recently used entries first). Like any JAX
cache it is trusted code: keep it in a directory only you can write to. A loaded program holds
as many memory mappings as a compiled one; :mod:`genprob._mappings` bounds them either way.
Its ``traces`` subdirectory keeps genprob's programs traced (:mod:`genprob._programs`), so a new
process skips tracing and lowering them as well; they go on and off, and are pruned, with the
rest.
"""

from __future__ import annotations

import contextlib
import functools
import os
import threading
import time
from pathlib import Path

__all__ = ["set_compilation_cache", "compilation_cache_dir", "compilation_cache"]

_ENV = "GENPROB_COMPILATION_CACHE"
_OFF = {"0", "off", "false", "no", "none", ""}
_ON = {"1", "on", "true", "yes"}
#: ``None``: follow the environment variable; ``False``: off; ``True``: the default directory;
#: a string: that directory.
_setting: object = None
_active = threading.local()
#: Size bound of the cache directory; genprob's entries are ~10 kB each. Checked once per process
#: and directory (JAX's own bound re-reads the whole directory on every write).
_MAX_BYTES = 1 << 30
_pruned: set[str] = set()
#: The directory is scanned for pruning at most this often (the mark file's age); a day of
#: genprob's programs (~10 kB each) cannot approach the bound.
_PRUNE_EVERY = 24 * 3600.0
_PRUNE_MARK = ".genprob-pruned"
#: Subdirectory holding traced programs (:mod:`genprob._programs`), pruned with the rest.
TRACES = "traces"


def set_compilation_cache(enabled_or_path=True) -> None:
    """Switch genprob's persistent compilation cache on, off, or to another directory.

    Without a call here, ``$GENPROB_COMPILATION_CACHE`` decides (``0``/``off``: off, ``1``/``on``
    or unset: the default directory, anything else: that directory).

    Args:
        enabled_or_path: ``True`` (on, in the default directory), ``False`` (off: every new
            process compiles again), a directory (on, there), or ``None`` (follow
            ``$GENPROB_COMPILATION_CACHE`` again).
    """
    global _setting
    if enabled_or_path is None or isinstance(enabled_or_path, bool):
        _setting = enabled_or_path
    else:
        _setting = os.fspath(enabled_or_path)


def compilation_cache_dir() -> str | None:
    """The directory genprob's compiled programs are kept in, or None when the cache is off."""
    if _setting is False:
        return None
    if isinstance(_setting, str):
        return _setting
    if _setting is None and _ENV in os.environ:
        value = os.environ[_ENV].strip()
        if value.lower() in _OFF:
            return None
        if value.lower() not in _ON:
            return value
    return _default_dir(os.environ.get("XDG_CACHE_HOME"), os.environ.get("HOME"))


@functools.lru_cache(maxsize=8)
def _default_dir(cache_home, home) -> str:
    """``genprob/jax`` under the cache home (computed once per environment: every top-level
    call asks)."""
    base = cache_home or os.path.join(home or Path.home(), ".cache")
    return os.path.join(base, "genprob", "jax")


@contextlib.contextmanager
def compilation_cache():
    """Within this block, JAX reads and writes compiled programs in genprob's cache directory."""
    if getattr(_active, "depth", 0):
        _active.depth += 1
        try:
            yield
        finally:
            _active.depth -= 1
        return
    scope, _active.directory = _scope()
    _active.depth = 1
    try:
        with scope:
            yield
    finally:
        _active.depth = 0
        _active.directory = None


def outermost() -> bool:
    """True inside the outermost :func:`compilation_cache` block of this thread."""
    return getattr(_active, "depth", 0) == 1


def active_directory() -> str | None:
    """genprob's cache directory inside a :func:`compilation_cache` block that uses it (not
    when the cache is off or the user's own JAX cache is in use), else None."""
    return getattr(_active, "directory", None)  # set by the outermost block, reset on its exit


def _scope():
    """The context that points JAX at genprob's directory, and that directory (or None)."""
    path = compilation_cache_dir()
    if path is None:
        return contextlib.nullcontext(), None
    try:
        import jax
        from jax._src import compilation_cache as jax_cache
        from jax._src import config as jax_config
    except ImportError:  # a JAX without these internals: no persistent cache
        return contextlib.nullcontext(), None
    # The user's own cache (or one already in use) wins; genprob never replaces it.
    if (
        jax.config.jax_compilation_cache_dir is not None
        or not jax.config.jax_enable_compilation_cache
        or getattr(jax_cache, "_cache", None) is not None
    ):
        return contextlib.nullcontext(), None
    if path not in _pruned:
        _pruned.add(path)
        if _pruning_due(path):
            prune(path)
    return _cache_scope(jax_config, jax_cache, path), path


def _pruning_due(path, now: float | None = None) -> bool:
    """True at most once per :data:`_PRUNE_EVERY` seconds per directory (then the mark is
    renewed): scanning ~10,000 entries costs ~60 ms, which every new process would pay."""
    mark = os.path.join(path, _PRUNE_MARK)
    now = time.time() if now is None else now
    try:
        if now - os.stat(mark).st_mtime < _PRUNE_EVERY:
            return False
    except OSError:
        pass  # no mark yet (or unreadable): scan
    try:
        os.makedirs(path, exist_ok=True)
        with open(mark, "a"):
            pass
        os.utime(mark, (now, now))
    except OSError:
        pass  # a read-only directory: scan every time, as before
    return True


def prune(path, max_bytes: int | None = None) -> int:
    """Delete the least recently used entries of ``path`` until it holds ``max_bytes`` at most.

    Entries go oldest first (last access or write) down to three quarters of the bound, so a
    full directory is not pruned again by the next process. Returns the number deleted; a file
    another process removed or still writes is skipped (JAX compiles again when an entry is
    missing or unreadable).
    """
    max_bytes = _MAX_BYTES if max_bytes is None else max_bytes
    entries = []
    for directory in (path, os.path.join(path, TRACES)):
        try:
            with os.scandir(directory) as scan:
                for entry in scan:
                    if entry.name == _PRUNE_MARK or entry.is_dir():
                        continue
                    try:
                        info = entry.stat()
                    except OSError:
                        continue
                    entries.append((max(info.st_atime, info.st_mtime), info.st_size, entry.path))
        except OSError:  # no directory yet
            continue
    total = sum(size for _, size, _ in entries)
    if total <= max_bytes:
        return 0
    deleted = 0
    for _, size, name in sorted(entries):
        if total <= 0.75 * max_bytes:
            break
        try:
            os.remove(name)
        except OSError:
            continue
        total -= size
        deleted += 1
    return deleted


@contextlib.contextmanager
def _cache_scope(jax_config, jax_cache, path):
    stack = contextlib.ExitStack()
    try:
        stack.enter_context(jax_config.compilation_cache_dir(path))
        # genprob's programs compile in well under JAX's 1 s threshold; keep them all
        stack.enter_context(jax_config.persistent_cache_min_compile_time_secs(0.0))
        jax_cache.reset_cache()  # a process that compiled before sees the directory now
    except Exception:  # noqa: BLE001 - internals changed: compile as usual, uncached
        stack.close()
        yield
        return
    try:
        yield
    finally:
        stack.close()
        # back to JAX's pristine state: nothing outside genprob's calls uses this directory
        jax_cache.reset_cache()
