"""The disk cache of modules compiled at run time, and the compiler that fills it.

What goes in: the per-program host modules (:func:`acrobat.native.build_extension`) and,
in a checkout whose installed core is missing or stale, the core itself. The cache is
kept safe the way torch's and numba's JIT caches are:

- **a private directory**: :func:`cache_dir` (``$ACROBAT_CACHE_DIR``, else
  ``$XDG_CACHE_HOME/acrobat``, else ``~/.cache/acrobat``) is used only when it is a real
  directory owned by this user and writable by no one else; otherwise a private temporary
  one (``tempfile.mkdtemp``, removed at exit) takes its place, with one warning;
- **a key over everything that shapes the binary**: the source, the headers it includes,
  the compiler (``cc --version``), the flags, the interpreter's ABI and the platform;
- **a checksum checked before every import**: the SHA-256 of each module is recorded when
  it is built; a module whose bytes do not match (truncated, zeroed, replaced), or whose
  owner is not this user, is deleted and built again, never imported;
- **a lock per key** (``fcntl.flock``): processes starting together on an empty cache
  build a module once, the others wait for it and load it;
- **atomic publishing**: a module and its checksum are written to temporary names and
  renamed into place, so a reader sees a whole file or none;
- **a bounded compiler**: ``$ACROBAT_CC_TIMEOUT`` seconds (120 by default) per call, the
  whole process group killed past it; a failed or timed-out build is recorded beside the
  key and raised as :class:`~acrobat.errors.NativeBuildError` at once by later calls,
  never retried every run.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import hashlib
import os
import platform
import shutil
import signal
import stat
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

from acrobat.errors import NativeBuildError
from acrobat.native.fallback import warn_once

SUFFIX = sysconfig.get_config_var("EXT_SUFFIX") or ".so"
"""The file name ending of an extension module for this interpreter (its ABI tag)."""

SANITIZE_FLAGS = ("-O1", "-fsanitize=address,undefined", "-fno-omit-frame-pointer", "-g")
"""What ``ACROBAT_SANITIZE=1`` adds to every run-time build (``make test-asan``)."""

CC_TIMEOUT_S = 120.0
"""The default bound on one compiler call, in seconds (``$ACROBAT_CC_TIMEOUT``)."""

MAX_GENERATED = 256
"""Generated modules kept in the disk cache (~20-40 KB each); past this, the least
recently built go (a fuzzing campaign builds two per program it draws)."""


def _private(path: Path) -> str | None:
    """Why ``path`` is no directory to load code from, or None when it is one: a real
    directory (not a link), owned by this user, writable by no one else."""
    try:
        st = os.lstat(path)
    except OSError as err:
        return f"cannot read {path}: {err.strerror}"
    if not stat.S_ISDIR(st.st_mode):
        return f"{path} is not a directory"
    if hasattr(os, "getuid") and st.st_uid != os.getuid():
        return f"{path} belongs to another user (uid {st.st_uid})"
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return f"{path} is writable by its group or by others (mode {st.st_mode & 0o777:o})"
    return None


def configured_dir() -> Path:
    """The cache directory the environment names (before the safety check)."""
    env = os.environ.get("ACROBAT_CACHE_DIR")
    if env:
        return Path(env)
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "acrobat"


@functools.lru_cache(maxsize=8)
def _safe_dir(path: Path) -> tuple[Path, str | None]:
    with contextlib.suppress(OSError):  # _private says why
        path.mkdir(mode=0o700, parents=True, exist_ok=True)
    why = _private(path)
    if why is None:
        return path, None
    tmp = Path(tempfile.mkdtemp(prefix="acrobat-cache-"))
    atexit.register(shutil.rmtree, tmp, True)
    warn_once("the cache directory", why, f"building into {tmp} for this process")
    return tmp, why


def cache_dir() -> Path:
    """Where compiled modules are kept: :func:`configured_dir` when it is private to this
    user, else a private temporary directory for this process (one warning says why)."""
    return _safe_dir(configured_dir())[0]


def cache_state() -> str:
    """A line on the cache for ``python -m acrobat doctor``."""
    path, why = _safe_dir(configured_dir())
    if why:
        return f"{path} (temporary: {why})"
    mods = sum(1 for _ in path.glob(f"*{SUFFIX}"))
    failed = sum(1 for _ in path.glob("*.failed"))
    return f"{path} (private; {mods} modules, {failed} failed builds recorded)"


def compiler() -> list[str]:
    """The C compiler command (``$CC``, else ``cc`` or ``gcc`` on PATH)."""
    cc = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
    if not cc:
        raise NativeBuildError(
            "no C compiler (cc/gcc) on PATH", hint="install one, or set CC to a C compiler"
        )
    return cc.split()


def cc_timeout() -> float:
    """The bound on one compiler call, in seconds (``$ACROBAT_CC_TIMEOUT``)."""
    try:
        return float(os.environ.get("ACROBAT_CC_TIMEOUT", CC_TIMEOUT_S))
    except ValueError:
        return CC_TIMEOUT_S


def _run(cmd: list[str], timeout: float) -> subprocess.CompletedProcess:
    """``cmd``, its whole process group killed past ``timeout`` seconds: a typed error,
    never ``TimeoutExpired`` (a compiler wrapper's children die with it)."""
    try:
        proc = subprocess.Popen(
            cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True
        )
    except OSError as err:
        raise NativeBuildError(f"cannot run {cmd[0]}: {err.strerror}") from None
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(OSError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        raise NativeBuildError(
            f"{cmd[0]} did not finish in {timeout:g} s",
            hint="raise ACROBAT_CC_TIMEOUT, or fix the compiler (CC)",
        ) from None
    return subprocess.CompletedProcess(cmd, proc.returncode, out, err)


@functools.lru_cache(maxsize=4)
def _compiler_id(cc: tuple[str, ...]) -> str:
    done = _run([*cc, "--version"], cc_timeout())
    return " ".join(cc) + "\n" + done.stdout + done.stderr


def compiler_id() -> str:
    """The compiler and its version (``cc --version``): part of every key."""
    return _compiler_id(tuple(compiler()))


def sanitizing() -> bool:
    """Whether run-time builds carry AddressSanitizer and UBSan (``ACROBAT_SANITIZE=1``)."""
    return os.environ.get("ACROBAT_SANITIZE", "0") == "1"


def flags(opt: str, includes: tuple[str, ...]) -> list[str]:
    """Compile and link flags for an extension module of this interpreter."""
    out = [opt, "-shared", "-fPIC", "-pthread"]
    if sys.platform == "darwin":  # Python's LDSHARED: symbols resolved by the interpreter
        out += ["-undefined", "dynamic_lookup"]
    if sanitizing():
        out += SANITIZE_FLAGS
    return out + [f"-I{sysconfig.get_paths()['include']}", *(f"-I{i}" for i in includes)]


def key(source: bytes, build_flags: list[str]) -> str:
    """The cache key of a module: a SHA-256 of its source (headers included by the
    caller), the compiler, the flags, the interpreter's ABI and the platform."""
    h = hashlib.sha256(source)
    for part in (
        compiler_id(),
        "\0".join(build_flags),
        SUFFIX,
        sysconfig.get_config_var("SOABI") or "",
        sys.version,
        platform.platform(),
        platform.machine(),
    ):
        h.update(b"\0" + part.encode())
    return h.hexdigest()


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def recorded(path: Path) -> bool:
    """Whether ``path`` and its recorded checksum are both there (not yet verified)."""
    return path.exists() and path.with_name(path.name + ".sha256").exists()


def verified(path: Path) -> bool:
    """Whether ``path`` is a module this user built whose bytes match the checksum
    recorded when it was built; a module that fails this is deleted."""
    record = path.with_name(path.name + ".sha256")
    try:
        st = os.lstat(path)
        ok = (
            stat.S_ISREG(st.st_mode)
            and (not hasattr(os, "getuid") or st.st_uid == os.getuid())
            and record.read_text().strip() == _digest(path)
        )
    except OSError:
        ok = False
    if not ok:
        for p in (path, record):
            with contextlib.suppress(OSError):
                p.unlink()
    return ok


@contextlib.contextmanager
def locked(path: Path):
    """Holds an exclusive lock on ``path`` + ``.lock`` (``fcntl.flock``; none where the
    platform has no ``fcntl``)."""
    try:
        import fcntl
    except ImportError:
        yield
        return
    fd = os.open(path.with_name(path.name + ".lock"), os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing releases the lock


def _publish(data_from: Path, path: Path) -> None:
    """Records ``data_from``'s checksum for ``path``, then renames it to ``path``."""
    record = path.with_name(path.name + ".sha256")
    fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".sha256")
    with os.fdopen(fd, "w") as f:
        f.write(_digest(data_from) + "\n")
    os.replace(tmp, record)
    os.replace(data_from, path)


def compile_into(path: Path, cmd_head: list[str], sources: list[str]) -> None:
    """Compiles ``sources`` with ``cmd_head`` (compiler and flags) into ``path``, which it
    publishes with its checksum; a failure is recorded beside it (``.failed``) and raised
    as :class:`NativeBuildError`. The caller holds :func:`locked` of ``path``."""
    failed = path.with_name(path.name + ".failed")
    fd, tmp = tempfile.mkstemp(suffix=SUFFIX, dir=path.parent)
    os.close(fd)
    try:
        done = _run([*cmd_head, *sources, "-o", tmp], cc_timeout())
        if done.returncode != 0:
            raise NativeBuildError(
                f"{' '.join(cmd_head[:1])} failed: {done.stderr.strip()[-400:]}",
                hint="set CC to a working C compiler",
            )
        _publish(Path(tmp), path)
    except NativeBuildError as err:
        with contextlib.suppress(OSError):
            failed.write_text(err.message + "\n")
        raise
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def earlier_failure(path: Path) -> NativeBuildError | None:
    """The failure recorded for ``path``'s key by an earlier build, if any."""
    failed = path.with_name(path.name + ".failed")
    try:
        why = failed.read_text().strip()
    except OSError:
        return None
    return NativeBuildError(
        f"an earlier build of {path.name} failed ({why})",
        hint=f"fix the compiler, then delete {failed} to build again",
    )


def prune(folder: Path, keep: Path, limit: int = MAX_GENERATED) -> None:
    """Keeps the ``limit`` most recently built generated modules in ``folder``."""
    try:
        built = sorted(folder.glob(f"_acrobat_gen_*{SUFFIX}"), key=lambda p: p.stat().st_mtime)
        for old in built[: max(0, len(built) - limit)]:
            if old != keep:
                for p in (
                    old,
                    old.with_name(old.name + ".sha256"),
                    old.with_name(old.name + ".lock"),
                ):
                    p.unlink(missing_ok=True)
    except OSError:  # another process pruning at the same time: nothing lost
        pass
