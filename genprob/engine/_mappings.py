"""Keep a long-lived process below Linux's limit on memory mappings (``vm.max_map_count``),
which JAX's cached programs fill until XLA's next ``mmap`` kills the interpreter: above
:data:`FRACTION` of it, compiled programs are dropped (docs/scaling.md)."""

from __future__ import annotations

import sys
import threading
import time

from genprob.engine._warnings import warn_user

__all__ = ["CHECK_EVERY", "MIN_SECONDS", "FRACTION", "CompiledProgramsDropped", "after_call"]

#: Top-level genprob calls between two counts (a count reads all of /proc/self/maps) ...
CHECK_EVERY = 64
#: ... and seconds at least between them (a count costs milliseconds)
MIN_SECONDS = 1.0
#: Share of ``vm.max_map_count`` above which compiled programs are dropped.
FRACTION = 0.5

_lock = threading.Lock()
_calls = 0
_last_count = -float("inf")
_warned = False


class CompiledProgramsDropped(RuntimeWarning):
    """JAX's compiled programs were dropped to keep the process below its mapping limit."""


def map_count_limit() -> int | None:
    """``vm.max_map_count``, or None where it cannot be read (not Linux)."""
    try:
        with open("/proc/sys/vm/max_map_count") as handle:
            return int(handle.read().strip())
    except (OSError, ValueError):
        return None


def mapping_count() -> int | None:
    """Memory mappings the process holds now, or None where it cannot be read."""
    try:
        with open("/proc/self/maps", "rb") as maps:
            return sum(1 for _ in maps)
    except OSError:
        return None


def after_call() -> None:
    """Count one top-level call; check the mappings every :data:`CHECK_EVERY` calls."""
    global _calls, _last_count
    with _lock:
        _calls += 1
        now = time.monotonic()
        if _calls < CHECK_EVERY or now - _last_count < MIN_SECONDS:
            return
        _calls, _last_count = 0, now
    release_if_needed()


def release_if_needed() -> bool:
    """Drop JAX's compiled programs if the process holds too many mappings; True if dropped."""
    global _warned
    if "jax" not in sys.modules:
        return False  # no compiled program to drop
    limit, count = map_count_limit(), mapping_count()
    if limit is None or count is None or count <= FRACTION * limit:
        return False
    import gc

    import jax

    jax.clear_caches()
    gc.collect()  # the executables' mappings go with their last Python reference
    after = mapping_count()
    if not _warned:
        _warned = True
        warn_user(
            f"genprob dropped JAX's compiled programs: the process held {count:,} memory "
            f"mappings of the {limit:,} Linux allows (vm.max_map_count), {after:,} now. "
            "Programs compile again on next use. This happens after thousands of different "
            "shapes in one process; see genprob.engine._mappings.",
            CompiledProgramsDropped,
        )
    return True
