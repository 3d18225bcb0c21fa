"""Host statistics passes split over threads, as BLAS would split them.

NumPy's ``np.dot`` releases the GIL around its BLAS call (``@`` does not, as of NumPy 2.4), and
ufuncs release it on large arrays, so the cache-sized blocks of a statistics pass can run on
several cores at once: each thread sums a contiguous span of rows block by block, and the spans'
sums are added in order. BLAS is held to one thread meanwhile, as scikit-learn's KMeans does
around its own threads (``threadpoolctl.threadpool_limits(1, "blas")``), since two threads each
starting BLAS threads on small blocks measured slower than one. The limit is process-wide: BLAS
calls of the process's other threads run on one thread while a pass runs.

The thread count is what BLAS is allowed: ``OPENBLAS_NUM_THREADS=1``, ``OMP_NUM_THREADS=1`` or
``threadpoolctl.threadpool_limits(1)`` make these passes serial too. Sums of a span do not
depend on the thread count except through the order of additions (rounding).
"""

from __future__ import annotations

import contextlib
import contextvars
import math
import os
import threading
from concurrent.futures import ThreadPoolExecutor, wait

import jax
import numpy as np

__all__ = [
    "blas_would_thread",
    "map_spans",
    "one_blas_thread",
    "scratch",
    "span_count",
    "sum_over_spans",
]

#: A span smaller than this many bytes of rows is not worth a thread's handoff (about 0.1 ms).
MIN_SPAN_BYTES = 1 << 22

#: A scratch buffer up to this many bytes is kept for the thread's next pass.
SCRATCH_BYTES = 1 << 23

_lock = threading.Lock()
_scratch = threading.local()
_state = {"pool": None, "pid": None, "controller": None, "limited": 0, "limiter": None}


def _cpu_count() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not on Linux
        return os.cpu_count() or 1


def _blas():
    """threadpoolctl's controller of the loaded BLAS libraries (None without threadpoolctl or
    BLAS), made once: threadpoolctl scans the process's libraries, about 1 ms."""
    if _state["controller"] is None:
        try:
            from threadpoolctl import ThreadpoolController

            _state["controller"] = ThreadpoolController().select(user_api="blas")
        except Exception:  # no threadpoolctl, or it failed to read a library: stay serial
            _state["controller"] = ()
    return _state["controller"] or None


def scratch(slot: str, shape: tuple[int, ...], dtype) -> np.ndarray:
    """An uninitialized C-contiguous array of ``shape``: a view of this thread's buffer
    ``slot``, kept between calls up to ``SCRATCH_BYTES``.

    A pass that writes its blocks' temporaries into it allocates nothing: fresh memory costs a
    page fault per 4 KiB on first touch (0.5 ms for two 1 MiB blocks in a process that did
    other work), as BLAS keeps its own packing buffers for the same reason. The view is valid
    until the thread next asks for ``slot``.
    """
    dtype = np.dtype(dtype)
    size = math.prod(shape)
    if size * dtype.itemsize > SCRATCH_BYTES:
        return np.empty(shape, dtype)
    buffers = _scratch.__dict__
    buffer = buffers.get(slot)
    if buffer is None or buffer.nbytes < size * dtype.itemsize:
        buffer = buffers[slot] = np.empty(size * dtype.itemsize, np.uint8)
    return buffer[: size * dtype.itemsize].view(dtype).reshape(shape)


def span_count(num_rows: int, row_bytes: int) -> int:
    """How many threads a pass over ``num_rows`` rows of ``row_bytes`` bytes uses: as many as
    BLAS may use and the process has cores, with at least ``MIN_SPAN_BYTES`` per thread."""
    by_size = (num_rows * row_bytes) // MIN_SPAN_BYTES
    if by_size < 2:
        return 1
    blas = _blas()
    if blas is None:
        return 1
    with _lock:
        # while another pass holds BLAS to one thread, count what it will restore
        limiter = _state["limiter"]
        if limiter is not None:
            allowed = list(limiter.get_original_num_threads().values())
        else:
            allowed = [entry["num_threads"] for entry in blas.info()]
    threads = min((int(n) for n in allowed if n is not None), default=1)
    return max(1, min(by_size, threads, _cpu_count()))


def _pool(workers: int) -> ThreadPoolExecutor:
    """The process's pool of at least ``workers`` threads. Its tasks never wait on each other,
    so passes from several of the user's threads share it without deadlock."""
    with _lock:
        pool = _state["pool"]
        # a pool inherited through fork has no threads behind it: start a new one in the child
        if pool is None or _state["pid"] != os.getpid() or pool._max_workers < workers:
            pool = ThreadPoolExecutor(workers, thread_name_prefix="genprob-statistics")
            _state["pool"], _state["pid"] = pool, os.getpid()
        return pool


@contextlib.contextmanager
def one_blas_thread():
    """Hold BLAS to one thread inside the block (nothing without threadpoolctl or BLAS).

    Blocks may overlap in the user's threads: the first limits BLAS, the last restores.
    """
    blas = _blas()
    if blas is None:
        yield
        return
    with _lock:
        if _state["limited"] == 0:
            _state["limiter"] = blas.limit(limits=1)
        _state["limited"] += 1
    try:
        yield
    finally:
        with _lock:
            _state["limited"] -= 1
            if _state["limited"] == 0:
                _state["limiter"].restore_original_limits()
                _state["limiter"] = None


#: OpenBLAS threads a matrix-vector product of this many entries or more (interface/gemv.c:
#: ``m n < 2304 GEMM_MULTITHREAD_THRESHOLD`` runs on one thread; the threshold defaults to 4).
BLAS_THREADED_ENTRIES = 2304 * 4


def blas_would_thread(array) -> bool:
    """True when a BLAS product over ``array`` would start BLAS's helper threads."""
    return array.size >= BLAS_THREADED_ENTRIES


def map_spans(partial, num_rows: int, row_bytes: int, block_rows: int = 1) -> list:
    """``[partial(start, stop) for each span]``, contiguous spans of ``range(num_rows)`` in
    order, one per thread (:func:`span_count`), edges on multiples of ``block_rows``. One span
    runs in the calling thread; BLAS runs on one thread while there are several."""
    spans = span_count(num_rows, row_bytes)
    if spans == 1:
        return [partial(0, num_rows)]
    edges = [(num_rows * i // spans) // block_rows * block_rows for i in range(spans)]
    edges.append(num_rows)
    pool = _pool(spans - 1)
    with one_blas_thread():
        # each span in a copy of the caller's context: NumPy's errstate is a context variable
        # (an overflow the caller ignores would warn, or raise, in a pool thread)
        futures = [
            pool.submit(contextvars.copy_context().run, partial, edges[i], edges[i + 1])
            for i in range(1, spans)
        ]
        try:
            first = partial(edges[0], edges[1])
        finally:
            wait(futures)  # BLAS stays limited until every span is done, even after an error
    return [first] + [future.result() for future in futures]


def sum_over_spans(partial, num_rows: int, row_bytes: int, block_rows: int = 1):
    """``sum of partial(start, stop)`` over the spans of :func:`map_spans`, added in order;
    ``partial`` returns a pytree of NumPy sums."""
    parts = map_spans(partial, num_rows, row_bytes, block_rows)
    total = parts[0]
    for part in parts[1:]:
        total = jax.tree_util.tree_map(np.add, total, part)
    return total
