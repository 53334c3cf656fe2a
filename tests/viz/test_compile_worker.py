"""The explorer compiles in a child process that a limit, Cancel or a closed page kills."""

from __future__ import annotations

import os
import time

import pytest

from acrobat import models
from acrobat.bench.compile_time import doubling_chain
from acrobat.viz import compile_worker
from acrobat.viz.app_state import ExplorerState
from acrobat.viz.compile_worker import CompileJob, CompileStopped, compile_isolated


def _job(source: str) -> CompileJob:
    return CompileJob(source, "chain.py", {}, (), "treelstm", "tiny", edited=True)


def _slow_source() -> str:
    """A source whose compile takes well over a second: many statements."""
    body = "".join(f"    x = tanh(x) * {i}.0\n" for i in range(1500))
    return f"def main(x: Tensor[4]) -> Tensor[4]:\n{body}    return x\n"


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    with open(f"/proc/{pid}/stat") as stat:  # a zombie no longer runs
        return stat.read().split()[2] == "Z"


@pytest.fixture(scope="module", autouse=True)
def _warm():
    """Start the fork server (once per process: it imports acrobat) before any timing."""
    assert not compile_isolated(_job(doubling_chain(2))).error


def test_a_compile_over_the_time_limit_is_stopped_with_a_message():
    started = time.monotonic()
    out = compile_isolated(_job(_slow_source()), seconds=0.5)
    assert "took over 0.5 s" in out.error and time.monotonic() - started < 2


def test_a_stop_kills_the_compiling_child_at_once(monkeypatch):
    children = []
    real = compile_worker._context

    def context():
        ctx = real()
        process = ctx.Process

        def remembered(*args, **kwargs):
            children.append(process(*args, **kwargs))
            return children[-1]

        monkeypatch.setattr(ctx, "Process", remembered)
        return ctx

    monkeypatch.setattr(compile_worker, "_context", context)
    asked = time.monotonic() + 0.5
    with pytest.raises(CompileStopped):
        compile_isolated(_job(_slow_source()), lambda: time.monotonic() > asked)
    assert time.monotonic() - asked < 1.0
    assert _gone(children[0].pid)


def test_a_compile_over_the_memory_limit_fails_in_the_child_only():
    job = _job(models.source("treelstm"))
    assert not compile_isolated(job).error
    out = compile_isolated(job, memory_mb=1)  # parse turns its MemoryError into a typed one
    assert out.error and out.compiled is None


def test_the_store_compiles_in_the_child_and_shows_errors_with_their_place():
    state = ExplorerState(model="treelstm", size="tiny", batch_size=2, repeats=1)
    assert state.compile() and "def @main" in state.ir_text
    assert state.run(), state.run_error
    state.source = models.source("treelstm") + "\nW_big: Param[60000, 60000]\n"
    assert not state.compile() and "SizeLimitError" in state.error and state.error_line


_KILLED_PARENT = """
import time
from acrobat.viz import compile_worker
from acrobat.viz.compile_worker import CompileJob, compile_isolated


def _forever(job):  # a compile that never ends (the child imports this file too)
    time.sleep(120)


compile_worker._compile = _forever
if __name__ == "__main__":
    print("compiling", flush=True)
    compile_isolated(CompileJob("", "slow.py", {}, (), "treelstm", "tiny", edited=True))
"""


def _children(pid: int) -> set[int]:
    found = set()
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as stat:
                    fields = stat.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid and fields[0] != "Z":
                found.add(int(entry))
    return found


def test_a_compile_dies_with_a_server_killed_outright(tmp_path):
    """SIGKILL runs no handler: the fork server sees its parent's pipe close and exits, and
    the compile child, whose parent-death signal is SIGKILL, goes with it."""
    import signal
    import subprocess
    import sys

    script = tmp_path / "server.py"
    script.write_text(_KILLED_PARENT)
    env = dict(
        os.environ,
        PYTHONPATH=os.pathsep.join(filter(None, [os.getcwd(), os.environ.get("PYTHONPATH")])),
    )
    server = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, env=env)
    try:
        assert server.stdout.readline().strip() == b"compiling"
        deadline = time.monotonic() + 60
        compiling: set[int] = set()
        while not compiling and time.monotonic() < deadline:
            compiling = {g for c in _children(server.pid) for g in _children(c)}
            time.sleep(0.05)
        assert compiling, "no compile process started"
        server.send_signal(signal.SIGKILL)
        server.wait(10)
        killed = time.monotonic()
        while not all(_gone(p) for p in compiling) and time.monotonic() - killed < 5:
            time.sleep(0.05)
        assert all(_gone(p) for p in compiling), compiling
    finally:
        server.kill()
        server.wait(10)
