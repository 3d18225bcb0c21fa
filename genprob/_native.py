"""One statistics kernel compiled at run time by LLVM (llvmlite, the optional ``native`` extra).

Per-class sums and sums of squares of hard-labeled rows (Gaussian naive Bayes' statistics) need
one read of X, but NumPy and SciPy take three passes over each cache-sized block: SciPy's
scatter-add of the rows onto their classes, their squares, the scatter-add of the squares
(``genprob._arrays.OneHotRows.class_sums_adder``), with a handoff of the GIL between threads
at each call. The kernel below does it in one: for each row, ``z = x - shift`` added (times the
row's weight) to its class's sums and ``z^2`` to its sums of squares, in blocks of rows whose
partial sums are then added to the totals (the same blocked sums as the SciPy path). At 1e5 x
50, K = 5 it takes 2.5 ms on one thread, less than NumPy's column sums of X (3.1 ms), against
5.6 ms for the SciPy path; docs/benchmarks.md.

Why llvmlite and not a compiled extension or Numba: genprob ships no compiled code, and
llvmlite, a binding to LLVM without a NumPy requirement, loads and compiles this module in
about 50 ms, once per process, where Numba's first call costs 0.45 s with its on-disk cache
(1.3 s without). The kernel is written in LLVM's IR; loops are vectorized by LLVM's own passes.
It is used only for passes of at least ``MIN_BYTES`` (below that, the 50 ms would take many
fits to pay back) and never on small inputs, so a cold process fitting iris does not load it.

Without llvmlite, or with ``GENPROB_NATIVE=0``, or if LLVM fails to compile (the reason is kept:
:func:`status`), the SciPy path runs; both give the same sums (tested to rounding). The kernel
is called through ``ctypes``, which releases the GIL, so spans of rows run on threads in
parallel. Every argument is checked before the call (dtype, contiguity, shapes), since a wrong
one would read or write outside its array: callers pass row targets already checked to lie in
``0..L-1`` (``OneHotRows._scatter_index``).
"""

from __future__ import annotations

import os
import threading

import numpy as np

__all__ = ["MIN_BYTES", "class_moments", "enabled", "status"]

#: Passes over fewer bytes of rows than this take the SciPy path even with the kernel at hand
#: (it saves about 1 ms per 20 MiB; its first use in a process costs about 50 ms).
MIN_BYTES = 1 << 23
_ENV = "GENPROB_NATIVE"
_OFF = {"0", "off", "false", "no"}
_TYPES = {np.dtype(np.float64): "double", np.dtype(np.float32): "float"}

_lock = threading.Lock()
#: ``functions``: dtype -> ctypes function, compiled on first use; ``engines``: LLVM's, which hold
#: their code; ``error``: why the kernel could not be made (then no further attempt).
_state: dict = {"functions": {}, "engines": [], "machine": None, "error": None}

# z = x - shift, weighted by the row's w, added to part[c, 0, :] and z^2 to part[c, 1, :], c the
# row's target; every `block` rows part (L x 2 x d entries, `size`, zero on entry) is drained
# into out: each entry added to out and set back to zero.
# A target outside 0..L-1 (which callers never pass) goes to L-1, so no write leaves the arrays.
# Loops are do-while: the caller guarantees n, d, size and block >= 1.
_IR = """
define void @class_moments_{T}({T}* noalias nocapture readonly %X,
    i64* noalias nocapture readonly %idx, {T}* noalias nocapture readonly %w,
    {T}* noalias nocapture readonly %shift, {T}* noalias nocapture %out,
    {T}* noalias nocapture %part, i64 %n, i64 %d, i64 %size, i64 %block) nounwind {{
entry:
  %d2 = shl i64 %d, 1
  %targets = udiv i64 %size, %d2
  %last = sub nsw i64 %targets, 1
  br label %block_start
block_start:
  %b0 = phi i64 [0, %entry], [%b_end, %add_end]
  %bb = add nuw nsw i64 %b0, %block
  %short = icmp slt i64 %bb, %n
  %b_end = select i1 %short, i64 %bb, i64 %n
  br label %row
row:
  %i = phi i64 [%b0, %block_start], [%i_next, %row_end]
  %cp = getelementptr inbounds i64, i64* %idx, i64 %i
  %c_read = load i64, i64* %cp
  %outside = icmp uge i64 %c_read, %targets
  %c = select i1 %outside, i64 %last, i64 %c_read
  %wp = getelementptr inbounds {T}, {T}* %w, i64 %i
  %wi = load {T}, {T}* %wp
  %so = mul nsw i64 %c, %d2
  %s = getelementptr inbounds {T}, {T}* %part, i64 %so
  %q = getelementptr inbounds {T}, {T}* %s, i64 %d
  %xo = mul nsw i64 %i, %d
  %x = getelementptr inbounds {T}, {T}* %X, i64 %xo
  br label %col
col:
  %j = phi i64 [0, %row], [%j_next, %col]
  %xp = getelementptr inbounds {T}, {T}* %x, i64 %j
  %xv = load {T}, {T}* %xp
  %hp = getelementptr inbounds {T}, {T}* %shift, i64 %j
  %hv = load {T}, {T}* %hp
  %z = fsub {T} %xv, %hv
  %wz = fmul {T} %wi, %z
  %sp = getelementptr inbounds {T}, {T}* %s, i64 %j
  %sv = load {T}, {T}* %sp
  %sn = fadd {T} %sv, %wz
  store {T} %sn, {T}* %sp
  %zz = fmul {T} %z, %z
  %wzz = fmul {T} %wi, %zz
  %qp = getelementptr inbounds {T}, {T}* %q, i64 %j
  %qv = load {T}, {T}* %qp
  %qn = fadd {T} %qv, %wzz
  store {T} %qn, {T}* %qp
  %j_next = add nuw nsw i64 %j, 1
  %jc = icmp slt i64 %j_next, %d
  br i1 %jc, label %col, label %row_end
row_end:
  %i_next = add nuw nsw i64 %i, 1
  %ic = icmp slt i64 %i_next, %b_end
  br i1 %ic, label %row, label %add
add:
  %e1 = phi i64 [0, %row_end], [%e1n, %add]
  %pa = getelementptr inbounds {T}, {T}* %part, i64 %e1
  %pv = load {T}, {T}* %pa
  %oa = getelementptr inbounds {T}, {T}* %out, i64 %e1
  %ov = load {T}, {T}* %oa
  %on = fadd {T} %ov, %pv
  store {T} %on, {T}* %oa
  store {T} 0.0, {T}* %pa
  %e1n = add nuw nsw i64 %e1, 1
  %ac = icmp slt i64 %e1n, %size
  br i1 %ac, label %add, label %add_end
add_end:
  %more = icmp slt i64 %b_end, %n
  br i1 %more, label %block_start, label %done
done:
  ret void
}}
"""


def enabled() -> bool:
    """False when ``GENPROB_NATIVE`` is ``0``/``off`` (read at every pass, so it can be switched
    in a running process)."""
    return os.environ.get(_ENV, "1").strip().lower() not in _OFF


def status() -> str:
    """How the kernel stands in this process: off, not loaded yet, compiled, or why it failed."""
    if not enabled():
        return f"off ({_ENV}=0)"
    if _state["error"] is not None:
        return f"unavailable: {_state['error']}"
    if not _state["functions"]:
        return "not loaded yet (loaded by the first large pass)"
    import llvmlite
    import llvmlite.binding as llvm

    version = ".".join(map(str, llvm.llvm_version_info))
    return f"compiled (llvmlite {llvmlite.__version__}, LLVM {version})"


def _optimize(llvm, module, machine) -> None:
    """LLVM's -O3 passes (loop vectorization included), through whichever pass manager this
    llvmlite has; unoptimized code is still correct, only slower."""
    if hasattr(llvm, "create_pass_builder"):  # llvmlite >= 0.44: the new pass manager
        options = llvm.create_pipeline_tuning_options(speed_level=3)
        options.loop_vectorization = True
        options.slp_vectorization = True
        builder = llvm.create_pass_builder(machine, options)
        builder.getModulePassManager().run(module, builder)
        return
    # llvmlite 0.43 (the floor): the legacy pass manager
    manager_builder = llvm.create_pass_manager_builder()
    manager_builder.opt_level = 3
    manager_builder.loop_vectorize = True
    manager_builder.slp_vectorize = True
    manager = llvm.create_module_pass_manager()
    machine.add_analysis_passes(manager)
    manager_builder.populate(manager)
    manager.run(module)


def _machine():
    """LLVM's target machine for this CPU (made once)."""
    import llvmlite.binding as llvm

    if _state["machine"] is None:
        try:  # needed before llvmlite 0.45, an error from then on
            llvm.initialize()
        except Exception:
            pass
        llvm.initialize_native_target()
        llvm.initialize_native_asmprinter()
        try:
            features = llvm.get_host_cpu_features().flatten()
        except Exception:  # pragma: no cover - a host LLVM cannot describe: its baseline
            features = ""
        _state["machine"] = llvm.Target.from_default_triple().create_target_machine(
            cpu=llvm.get_host_cpu_name(), features=features, opt=3
        )
    return _state["machine"]


def _compile(dtype):
    """The kernel for ``dtype`` compiled for this CPU, as a ctypes function."""
    import ctypes

    import llvmlite.binding as llvm

    machine = _machine()
    name = _TYPES[dtype]
    module = llvm.parse_assembly(_IR.format(T=name))
    module.verify()
    _optimize(llvm, module, machine)
    engine = llvm.create_mcjit_compiler(module, machine)
    engine.finalize_object()
    _state["engines"].append(engine)  # the code lives as long as its engine
    pointer, size = ctypes.c_void_p, ctypes.c_int64
    # calls through a CFUNCTYPE release the GIL
    signature = ctypes.CFUNCTYPE(None, *[pointer] * 6, *[size] * 4)
    return signature(engine.get_function_address(f"class_moments_{name}"))


def _function(dtype):
    """The ctypes function for ``dtype`` (float64 or float32), compiled on first use; None
    when llvmlite is missing or LLVM failed (the reason is kept for :func:`status`)."""
    function = _state["functions"].get(dtype)
    if function is not None or _state["error"] is not None:
        return function
    with _lock:
        if dtype not in _state["functions"] and _state["error"] is None:
            try:
                _state["functions"][dtype] = _compile(dtype)
            except ImportError:
                _state["error"] = "llvmlite is not installed (pip install 'genprob[native]')"
            except Exception as error:  # LLVM refused the module: keep the SciPy path
                _state["error"] = f"{type(error).__name__}: {error}"
        return _state["functions"].get(dtype)


def class_moments(rows, targets, weights, shift, out, part, block_rows: int) -> bool:
    """``out[t, 0] += sum w (x - shift)`` and ``out[t, 1] += sum w (x - shift)^2`` over the rows
    ``x`` of target ``t``, in blocks of ``block_rows`` rows summed in ``part`` (scratch,
    overwritten) first.

    ``rows`` (n, d) C-contiguous float64 or float32; ``targets`` (n,) int64, each in
    ``0..L-1`` (callers check them: the kernel sends any other to ``L - 1``, the row callers
    drop, rather than write outside ``part``); ``weights`` (n,), ``shift`` (d,), ``out`` and
    ``part`` (L, 2, d), all C-contiguous and aligned in the rows' dtype. Returns False, doing
    nothing, when the kernel is off or unavailable (the caller takes the SciPy path).
    """
    if not isinstance(rows, np.ndarray) or rows.ndim != 2:
        raise ValueError("class_moments: rows must be a 2-D NumPy array.")
    if not enabled() or rows.dtype not in _TYPES:
        return False
    function = _function(rows.dtype)
    if function is None:
        return False
    n, d = rows.shape
    L = out.shape[0]
    expected = {
        "rows": (rows, (n, d)),
        "targets": (targets, (n,)),
        "weights": (weights, (n,)),
        "shift": (shift, (d,)),
        "out": (out, (L, 2, d)),
        "part": (part, (L, 2, d)),
    }
    for name, (array, shape) in expected.items():
        dtype = np.dtype(np.int64) if name == "targets" else rows.dtype
        if (
            not isinstance(array, np.ndarray)
            or array.shape != shape
            or array.dtype != dtype
            or not (array.flags.c_contiguous and array.flags.aligned)
            or (name in ("out", "part") and not array.flags.writeable)
        ):
            raise ValueError(
                f"class_moments: {name} must be a C-contiguous, aligned {dtype} array of "
                f"shape {shape}{', writeable' if name in ('out', 'part') else ''}."
            )
    if block_rows < 1:
        raise ValueError(f"class_moments: block_rows must be at least 1, got {block_rows}.")
    if n == 0 or d == 0 or L == 0:
        return True
    part.fill(0)  # the kernel drains it back to zero after each block
    function(
        rows.ctypes.data,
        targets.ctypes.data,
        weights.ctypes.data,
        shift.ctypes.data,
        out.ctypes.data,
        part.ctypes.data,
        n,
        d,
        out.size,
        int(block_rows),
    )
    return True
