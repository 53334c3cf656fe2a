"""Compile a program in a child process with a time and a memory limit.

A few lines of source can ask the compiler for minutes of work or gigabytes (a long call chain,
a huge constant): the explorer serves strangers, so it never compiles their text in its own
process. :func:`compile_isolated` forks a child (from a ``forkserver`` started once, with
acrobat already imported, so a compile costs a fork, not an interpreter start), lets it parse
and compile under ``RLIMIT_AS``, and waits for its answer while checking ``should_stop`` (Cancel,
a newer request, a closed page) every few milliseconds. A stop, the deadline or the memory
limit kills the child at once. A child also ends itself once nobody can read its answer (the
explorer's process is gone, however it ended: even SIGKILL, which runs no handler). No GUI
imports.
"""

from __future__ import annotations

import multiprocessing
import os
import resource
import select
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

COMPILE_SECONDS = 30.0  # the longest one compile may take
COMPILE_MEMORY_MB = 2048  # memory one compile may take, above what the child starts with
POLL_S = 0.02


class CompileStopped(Exception):
    """``should_stop`` said so while the child compiled; the child is gone."""


@dataclass(frozen=True)
class CompileJob:
    """What to compile: the source and how to read it (all small, sent to the child)."""

    source: str
    filename: str
    sizes: dict
    disabled: tuple[str, ...]
    model: str  # the built-in model whose weights a built-in source uses
    size: str
    edited: bool  # an edited source gets fresh seeded weights instead


@dataclass(frozen=True)
class CompileOutcome:
    """The child's answer: the compiled results, or an error with where it is."""

    module: Any = None
    used_sizes: dict | None = None
    ir_text: str = ""
    weights: dict | None = None
    compiled: Any = None  # runner.Compiled
    error: str = ""
    line: int | None = None
    col: int | None = None


def _vm_bytes() -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    return 0


def _compile(job: CompileJob) -> CompileOutcome:
    from acrobat.frontend import parse
    from acrobat.viz import runner

    module = parse(job.source, sizes=job.sizes or None, filename=job.filename)
    used = dict(module.sizes) if job.edited else job.sizes  # an edit's own, as declared
    ir_text = module.pretty()
    weights = (
        runner.fresh_params(module) if job.edited else runner.load_spec(job.model, job.size).params
    )
    compiled = runner.compile_module(module, weights, job.disabled)
    return CompileOutcome(module, used, ir_text, weights, compiled)


def _exit_when_unread(conn) -> None:
    """End this process once the reading end of ``conn`` is closed: the explorer's process
    is gone. (Its parent is the fork server, which outlives the explorer while any child it
    made runs: each holds the fork server's keep-alive pipe, so no parent-death signal.)"""

    def watch() -> None:
        poller = select.poll()
        poller.register(conn.fileno(), 0)  # POLLERR and POLLHUP are always reported
        while True:
            for _, events in poller.poll():
                if events & (select.POLLERR | select.POLLHUP):
                    os._exit(1)
                if events & select.POLLNVAL:  # closed here: the answer was sent
                    return

    threading.Thread(target=watch, name="reader-gone", daemon=True).start()


def _child(job: CompileJob, conn, memory_bytes: int, seconds: float) -> None:
    from acrobat.errors import AcrobatError

    _exit_when_unread(conn)
    limit = _vm_bytes() + memory_bytes
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    # the kernel's own deadline too, should the server die without killing this child
    cpu = int(seconds) + 2
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu))
    try:
        outcome = _compile(job)
    except AcrobatError as err:
        outcome = CompileOutcome(error=str(err), line=err.line, col=err.col)
    except MemoryError:
        outcome = CompileOutcome(error=_memory_text(memory_bytes))
    except RecursionError:
        outcome = CompileOutcome(error="the program is nested too deeply to compile")
    except Exception as err:  # a bug in acrobat: say so
        outcome = CompileOutcome(error=f"internal error while compiling (please report): {err!r}")
    conn.send(outcome)


def _memory_text(memory_bytes: int) -> str:
    return (
        f"compiling needed over {memory_bytes // 2**20} MB, the explorer's limit "
        "(declare smaller sizes, or compile it with acrobat.compile outside the explorer)"
    )


def _context():
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(["acrobat.viz.compile_worker", "acrobat.viz.runner"])
    return ctx


def compile_isolated(
    job: CompileJob,
    should_stop: Callable[[], bool] = lambda: False,
    seconds: float = COMPILE_SECONDS,
    memory_mb: int = COMPILE_MEMORY_MB,
) -> CompileOutcome:
    """Compile ``job`` in a child process; an outcome with ``error`` set when it failed or
    passed a limit. Raises :class:`CompileStopped` (child killed) once ``should_stop()``."""
    ctx = _context()
    receive, send = ctx.Pipe(duplex=False)
    child = ctx.Process(target=_child, args=(job, send, memory_mb * 2**20, seconds), daemon=True)
    child.start()
    send.close()
    deadline = time.monotonic() + seconds
    try:
        while not receive.poll(POLL_S):
            if should_stop():
                raise CompileStopped()
            if time.monotonic() > deadline:
                return CompileOutcome(
                    error=f"compiling took over {seconds:g} s, the explorer's limit "
                    "(a long call chain or a very large program?)"
                )
            if not child.is_alive() and not receive.poll():
                return CompileOutcome(error=_memory_text(memory_mb * 2**20))
        try:
            return receive.recv()
        except EOFError:  # the child died mid-answer (out of memory)
            return CompileOutcome(error=_memory_text(memory_mb * 2**20))
    finally:
        child.kill()
        child.join(1)
        receive.close()
