"""acrobat's native kernels: C source shipped with the package, built on first use.

Six files, one module. ``smallgemm.c``: :func:`sgemm`, a float32 product of a few rows
with a resident weight, ``out = x @ wt (+ bias)``, that packs nothing (the file says why
OpenBLAS loses there). The generated NumPy kernels call it through :func:`dense_rows` for
small products (:data:`SMALL_ROWS`, :data:`MULTI_THREAD_MACS`) and NumPy's ``matmul``
otherwise; in a run whose products are acrobat's own (:func:`set_threads` with
``own=True``), for every product, on two threads from :data:`TWO_THREAD_MACS`
multiply-adds (the calling thread and a helper thread the module starts once per process).
``rowprog.c``: a kernel's chain of elementwise ops, row by row in L1-resident vectors.
``plan.c``: the executor's row bookkeeping of a whole flush in one call
(``Executor.plan``); ``flush.c``: a whole flush of host kernels, bookkeeping and launches,
in one call (``Executor.run_native``), and with the ``acrobat`` policy's schedule in the
same call (``Executor.run_leveled``: ``batchplan.h`` is the schedule both files share).
``sched.c``: the ``acrobat`` policy's leveling scheduler (:mod:`acrobat.runtime.leveling`).
``values.c``: ADT values made and walked in C
for the host program (:func:`adt_maker`), with ``adt.h``, the layout of an ADT value's
class, which the compiled host programs (:func:`build_extension`) include too.

Building: the first process that needs it compiles the six files with the host's C
compiler (``$CC`` or ``cc``, the Python headers of this interpreter and NumPy's, whose C
API ``flush.c`` uses for its views) into the disk cache (:mod:`acrobat.native.cache`: a
private directory, keys over source, compiler, flags and ABI, checksums verified before
every import, one build per key at a time, a bounded compiler time); later processes
load it from there. :func:`status` says what happened (``"built"``, ``"loaded"``,
or why it is off) and :func:`load_ms` what it cost this process (``RunStats.jit_ms``
includes it). Without a compiler, on a CPU without AVX2 and FMA, or with
``ACROBAT_NATIVE=0``, everything runs on NumPy alone: the results are the same up to
float rounding.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.machinery
import importlib.util
import os
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

from acrobat.errors import NativeBuildError
from acrobat.native import cache
from acrobat.native.cache import MAX_GENERATED, cache_dir
from acrobat.native.fallback import NativeFallbackWarning as NativeFallbackWarning
from acrobat.native.fallback import warn_once

SOURCES = tuple(
    Path(__file__).with_name(f)
    for f in ("smallgemm.c", "rowprog.c", "plan.c", "flush.c", "sched.c", "values.c")
)
"""The C files compiled into the one native module."""

HEADERS = tuple(Path(__file__).with_name(f) for f in ("adt.h", "batchplan.h"))
"""The headers in this folder that the native module and the generated modules include
(``#include "adt.h"``): part of every built module's hash, so an edit rebuilds them."""

SMALL_ROWS = 64
"""Products of at most this many rows may go to the native kernel (when it is available)."""

MULTI_THREAD_MACS = 2_500_000
"""With more than one BLAS thread, only products of at most this many multiply-adds
(rows x in x out) go to the native kernel, which runs on one thread.

Both limits were measured on this project's machine (AMD EPYC, OpenBLAS 0.3.31 with its
Haswell kernels; ``timeit``, best of 7, native time / ``matmul`` time): on one BLAS thread
the native kernel is ahead up to 64 rows on every weight tried (256 x 256 to 1280 x 512:
1.03-1.84x at 8-64 rows, 0.97-1.11x at 96-128); on two, OpenBLAS splits its work and
wins past about 2.5e6 multiply-adds (1280 x 512: 1.05x at 8 rows, 0.92x at 16; 256 x 256:
1.09x at 32 rows, 0.75x at 48). Measured again with the AVX-512 tiles on an Intel Xeon
(OpenBLAS's SkylakeX kernels, one thread): ahead up to 64 rows (1.00-1.35x at 48-64 rows on
256 x 256 to 512 x 1280), even at about 96-128 rows and behind past them, so the row limit
stands there too; the two-thread limit was not measured again."""

TWO_THREAD_MACS = 500_000
"""In a run that gives the products to acrobat's own two threads (:func:`set_threads` with
``own=True``), a product of at least this many multiply-adds is cut between the calling
thread and the native module's helper thread; smaller ones stay on the caller (measured
on this project's machine: 256 x 256 weights, two threads ahead from about 7 rows)."""

_lock = threading.Lock()
# the current rule (set_threads); conservative until told
_max_rows = SMALL_ROWS
_max_macs = MULTI_THREAD_MACS
_two = False  # products of TWO_THREAD_MACS or more run on two threads (own mode)
_module = None
_status = "not loaded"
_load_ms = 0.0


@functools.lru_cache(maxsize=1)
def _header_bytes() -> bytes:
    return b"".join(p.read_bytes() for p in HEADERS)


_failures: dict[Path, NativeBuildError] = {}  # builds that failed in this process


def _cached_module(path: Path, write_sources, opt: str, includes: tuple[str, ...]):
    """The module at ``path`` in the disk cache (:mod:`acrobat.native.cache`): verified
    and imported, or built first (``write_sources(folder)`` writes the C files into a
    private folder and returns their paths) under the key's lock. Returns ``(module,
    built)``; raises :class:`NativeBuildError` (also for a failure recorded earlier)."""
    err = _failures.get(path)
    if err is not None:
        raise err
    name = path.name[: -len(cache.SUFFIX)].split("-")[0]
    built = False
    with cache.locked(path):
        if not cache.verified(path):
            err = cache.earlier_failure(path)
            if err is None:
                try:
                    with tempfile.TemporaryDirectory(dir=path.parent) as tmp:
                        head = [*cache.compiler(), *cache.flags(opt, includes)]
                        cache.compile_into(path, head, write_sources(Path(tmp)))
                except NativeBuildError as e:
                    err = e
            if err is not None:
                _failures[path] = err
                raise err
            built = True
    return _import(path, name), built


def _import(path: Path, name: str):
    loader = importlib.machinery.ExtensionFileLoader(name, str(path))
    spec = importlib.util.spec_from_file_location(name, path, loader=loader)
    mod = importlib.util.module_from_spec(spec)
    loader.exec_module(mod)
    return mod


def _core_path() -> Path:
    """Where a run-time build of the core lives: its name holds the key of the six files,
    the headers, this NumPy (``flush.c`` uses its C API), compiler, flags and ABI."""
    source = b"".join(p.read_bytes() for p in SOURCES) + _header_bytes()
    flags = cache.flags("-O3", _CORE_INCLUDES)
    key = cache.key(source + np.__version__.encode(), flags)
    return cache_dir() / f"_acrobat_native-{key[:16]}{cache.SUFFIX}"


_CORE_INCLUDES = (str(Path(__file__).parent), np.get_include())  # HEADERS; NumPy's C API
_GEN_INCLUDES = (str(Path(__file__).parent),)  # adt.h
_extensions: dict[str, object] = {}


def _extension_path(source: str) -> Path:
    key = cache.key(source.encode() + _header_bytes(), cache.flags("-O2", _GEN_INCLUDES))
    return cache_dir() / f"_acrobat_gen_{key[:20]}{cache.SUFFIX}"


def extension_cached(source: str) -> bool:
    """Whether :func:`build_extension` of ``source`` would only load (this process has
    it, or the disk cache has it with its checksum; it is verified when loaded)."""
    try:
        path = _extension_path(source)
    except NativeBuildError:  # no compiler: nothing can be cached for it
        return False
    return path.name in _extensions or cache.recorded(path)


def build_extension(source: str, placeholder: str = "@MODULE@"):
    """A generated C extension module (e.g. a compiled host program,
    :mod:`acrobat.codegen.host_c`): its name is ``_acrobat_gen_<key>`` (the key of the
    source, compiler, flags, ABI and platform: :mod:`acrobat.native.cache`), written over
    ``placeholder`` in ``source``; compiled with the host's C compiler into
    :func:`cache_dir` unless a verified copy is there, and imported. Returns ``(module,
    ms)``: what building or loading cost this call (0 when this process had it already).
    Raises :class:`~acrobat.errors.NativeBuildError` (an ``OSError``: no compiler, a
    failed or timed-out build, ``ACROBAT_NATIVE=0``) or ``ImportError``."""
    if os.environ.get("ACROBAT_NATIVE", "1") == "0":
        raise NativeBuildError("native code is off (ACROBAT_NATIVE=0)")
    try:
        return _build_extension(source, placeholder)
    except NativeBuildError as err:
        warn_once("the compiled host program", err.message, "the Python host program runs")
        raise


def _build_extension(source: str, placeholder: str):
    with _lock:
        path = _extension_path(source)
        mod = _extensions.get(path.name)
        if mod is not None:
            return mod, 0.0
        t0 = time.perf_counter()
        name = path.name[: -len(cache.SUFFIX)]

        def write(folder: Path) -> list[str]:
            src = folder / f"{name}.c"
            src.write_text(source.replace(placeholder, name))
            return [str(src)]

        mod, built = _cached_module(path, write, "-O2", _GEN_INCLUDES)
        if built:
            cache.prune(path.parent, path, MAX_GENERATED)
        _extensions[path.name] = mod
        return mod, (time.perf_counter() - t0) * 1e3


def new_int64s(shape) -> np.ndarray:
    """A new int64 array of ``shape`` (an int or a tuple): what the native calls that
    return index arrays (``run_flush``, ``list_schedule``) fill. Once the native module
    is loaded, its own ``new_int64s`` (the same ``numpy.empty`` call, made from C) takes
    this name: the native calls make ~600 a StackRNN run."""
    return np.empty(shape, np.int64)


def load():
    """The native module, built or loaded on the first call; None when it is off (see
    :func:`status`). Thread-safe; failures are remembered, not retried."""
    global _module, _status, _load_ms, new_int64s
    if _status != "not loaded":
        return _module
    with _lock:
        if _status != "not loaded":
            return _module
        t0 = time.perf_counter()
        try:
            if os.environ.get("ACROBAT_NATIVE", "1") == "0":
                _status = "off (ACROBAT_NATIVE=0)"
                return None
            _module, _status = _installed_or_built()
            new_int64s = _module.new_int64s  # the same allocator, without a Python frame
            if not _module.available():
                _status += " (portable: no AVX2/FMA GEMM)"
                forced = os.environ.get("ACROBAT_NATIVE_ISA") == "portable"
                why = "ACROBAT_NATIVE_ISA=portable" if forced else "this CPU lacks AVX2/FMA"
                warn_once("the AVX2 GEMM", why, "products run on NumPy")
        except (OSError, ImportError) as err:
            _status = f"off ({err})"
            warn_once("the native core", str(err), "running on NumPy and Python alone")
        finally:
            _load_ms = (time.perf_counter() - t0) * 1e3
    return _module


def _sources_sha() -> str | None:
    """The SHA-256 of the C sources and headers beside this file, as ``setup.py`` records
    it in the installed core (None where they are not shipped)."""
    try:
        return hashlib.sha256(b"".join(p.read_bytes() for p in SOURCES + HEADERS)).hexdigest()
    except OSError:
        return None


def _installed():
    """The core compiled at install time (``setup.py``), or None and why it is not used."""
    if os.environ.get("ACROBAT_NATIVE_INSTALLED", "1") == "0":
        return None, "ACROBAT_NATIVE_INSTALLED=0"
    if cache.sanitizing():  # the installed core is not instrumented
        return None, "ACROBAT_SANITIZE=1"
    try:
        from acrobat.native import _acrobat_native as mod
    except ImportError as err:
        return None, f"no core compiled at install time ({err})"
    sha = _sources_sha()
    if sha is not None and mod.sources_sha != sha:
        return None, "the core compiled at install time is older than its C sources"
    return mod, None


def _installed_or_built():
    """The core and its status: the installed one, else one built at run time into the
    disk cache (a checkout not installed, or whose C sources changed since; one warning)."""
    mod, why = _installed()
    if mod is not None:
        return mod, "installed"
    if not why.startswith("ACROBAT_"):
        warn_once("the installed native core", why, "building it at run time (pip install -e .)")
    mod, built = _cached_module(
        _core_path(), lambda _: [str(p) for p in SOURCES], "-O3", _CORE_INCLUDES
    )
    return mod, "built" if built else "loaded"


def status() -> str:
    """``"installed"`` (compiled at install time), ``"built"`` (compiled by this process
    into the disk cache), ``"loaded"`` (from the cache), ``"not loaded"`` (nothing asked
    for it yet) or ``"off (why)"``; `` (portable: ...)`` follows where the CPU has no
    AVX2/FMA (the products then run on NumPy, the rest of the core natively)."""
    return _status


def load_ms() -> float:
    """What building or loading the native module cost this process, in milliseconds."""
    return _load_ms


def packable(shape: tuple[int, ...], dtype) -> bool:
    """Whether a transposed weight of ``shape`` (``[K, N]``) and ``dtype`` is one the kernel
    takes (:func:`pack` makes its panels): float32, 2-d, ``N`` a multiple of 8."""
    return len(shape) == 2 and np.dtype(dtype) == np.float32 and shape[1] % 8 == 0


def pack(wt: np.ndarray) -> np.ndarray | None:
    """The transposed weight ``wt`` (``[K, N]``) as the kernel's panels of 16 columns,
    ``[ceil(N / 16), K, 16]`` float32 (zero-padded), or None when the kernel cannot take it
    (not float32 2-d, or ``N`` not a multiple of 8)."""
    if not packable(wt.shape, wt.dtype):
        return None
    k, n = wt.shape
    nb = -(-n // 16)
    padded = np.zeros((k, nb * 16), np.float32)
    padded[:, :n] = wt
    return np.ascontiguousarray(padded.reshape(k, nb, 16).transpose(1, 0, 2))


def set_threads(n: int, own: bool = False) -> None:
    """Tell the rule how many threads the products around it run with (the runtime's
    thread plan calls this at the start and the end of every run): with one BLAS thread,
    up to :data:`SMALL_ROWS` rows go native; with more, only products of at most
    :data:`MULTI_THREAD_MACS` multiply-adds. ``own`` (with ``n`` >= 2): the BLAS runs on
    one thread and every product the native kernel can take is its, on two threads from
    :data:`TWO_THREAD_MACS` multiply-adds (``smallgemm.c``: the helper thread)."""
    global _max_rows, _max_macs, _two
    park = getattr(_module, "park", None)
    if _two and not (own and n >= 2) and park is not None:
        park()  # the run is over: the helper thread sleeps rather than spins
    _two = own and n >= 2
    _max_rows = 1 << 62 if _two else SMALL_ROWS
    _max_macs = 1 << 62 if (n == 1 or _two) else MULTI_THREAD_MACS


def _threads_for(macs: int) -> int:
    """The threads the rule gives a native product of ``macs`` multiply-adds."""
    return 2 if _two and macs >= TWO_THREAD_MACS else 1


def two_threads() -> bool:
    """Whether the rule now gives products to the native kernel's two threads."""
    return _two


def dense_rows(x, wt, panels, out, bias=None):
    """``out = x @ wt (+ bias)`` for float32 ``x`` ``[M, K]``, ``wt`` ``[K, N]`` (and
    ``panels``, :func:`pack` of it, or None): the native kernel for a product the rule gives
    it (:data:`SMALL_ROWS`, :func:`set_threads`) whose layouts suit it, else NumPy. Returns
    ``out``."""
    if x.ndim == 2 and native_product(x, panels, out, bias):
        return out
    np.matmul(x, wt, out=out)
    if bias is not None:
        out += bias
    return out


def native_product(x, panels, out, bias=None, segs=None) -> bool:
    """``out = x @ W^T (+ bias)`` by the native kernel, if the rule gives it the product
    (:data:`SMALL_ROWS`, :func:`set_threads`). ``x`` is an ``[M, K]`` array, or a tuple of
    parts concatenated along K, each an ``[M, Kp]`` array or an ``(arena buffer, rows)``
    pair whose rows the kernel reads where they lie (the gather fused in, no copy first).
    ``segs`` (a twin group's ``(member, rows)`` pairs): ``panels`` and ``bias`` are tuples,
    one per member, as :func:`dense_rows_by_member` takes them. True when it computed
    ``out``; False, with nothing written, when the rule gives the product to NumPy or a
    layout does not suit the kernel (the caller then runs it another way)."""
    mod = load()
    if mod is None:
        return False
    m, n_out = out.shape[0], out.shape[-1]
    if segs is None:
        if panels is None:
            return False
        macs = m * panels.shape[1] * n_out
        if m > _max_rows or macs > _max_macs:
            return False
        return mod.sgemm(x, panels, out, bias, _threads_for(macs))
    if any(p is None for p in panels):
        return False
    k = panels[0].shape[1]
    rows = max(r for _, r in segs) if segs else 0
    if rows > _max_rows or rows * k * n_out > _max_macs:
        return False
    return mod.sgemm_segs(x, panels, out, bias, segs, _threads_for(m * k * n_out))


def dense_rows_by_member(x, wts, panels, segs, out, biases=None):
    """:func:`dense_rows` for a twin group's batch (:mod:`acrobat.codegen.twins`):
    ``segs`` is ``(member, rows)`` pairs in row order; each member's rows of ``x`` take its
    weight (``wts[member]``, ``panels[member]``, ``biases[member]``). One native call for
    the whole batch when the rule gives it every member's rows (on two threads the
    members' products run side by side), else each member apart. Returns ``out``."""
    if x.ndim == 2 and native_product(x, panels, out, biases, segs):
        return out
    s = 0
    for m, n in segs:
        if not n:
            continue
        e = s + n
        xs, os_ = x[s:e], out[s:e]
        b = biases[m] if biases is not None else None
        if not (x.ndim == 2 and native_product(xs, panels[m], os_, b)):
            np.matmul(xs, wts[m], out=os_)
            if b is not None:
                os_ += b
        s = e
    return out


_makers: dict[type, object] = {}


def adt_maker(cls: type):
    """A maker of ``cls``'s values made in C by ``values.c`` (``cls`` must have exactly the
    slots ``ctor`` and ``fields``, as :class:`acrobat.ir.values.AdtValue`):
    ``maker(ctor, fields)`` is ``cls(ctor, fields)`` (~40 ns against ~160),
    ``maker.list(items)`` a Cons/Nil list of ``items`` and ``maker.items(value)`` that
    list's elements. None when the native module is off."""
    maker = _makers.get(cls)
    if maker is None:
        mod = load()
        if mod is None:
            return None
        maker = _makers[cls] = mod.adt_maker(cls)
    return maker
