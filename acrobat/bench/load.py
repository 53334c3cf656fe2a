"""Load on demand: a bounded busy-loop process beside a measurement, and the load test
(``python -m acrobat.bench load-test``): TreeLSTM small b64 quiet and with one busy
process, interleaved. The busy process is pinned to one CPU (the last this process may
run on), as a neighbour that keeps one core busy (a browser tab, a build job) does;
``pin=False`` (``--unpinned``) lets the kernel move it among every CPU."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from typing import Any

import acrobat
from acrobat.baselines.measure import Measurement, measure
from acrobat.bench.harness import bench_instances

# a process that spins on one core until its deadline (it ends by itself even if its
# parent dies without killing it)
_SPIN = "import time\nend = time.monotonic() + {s}\nwhile time.monotonic() < end:\n    pass\n"


@contextlib.contextmanager
def busy_process(seconds: float = 60.0, cpu: int | None = None) -> Iterator[subprocess.Popen]:
    """One Python process spinning on a core for at most ``seconds`` (on CPU ``cpu`` only,
    when given and the platform can pin); killed on exit."""
    proc = subprocess.Popen([sys.executable, "-c", _SPIN.format(s=float(seconds))])
    if cpu is not None and hasattr(os, "sched_setaffinity"):
        with contextlib.suppress(OSError):  # gone already, or the CPU not allowed
            os.sched_setaffinity(proc.pid, {cpu})
    try:
        time.sleep(0.05)  # let it start spinning
        yield proc
    finally:
        proc.kill()
        proc.wait()


class Busy:
    """A configuration that runs ``fn`` with one busy process beside it.

    The process is started on the first call and killed by :meth:`close` (or by its own
    deadline); between calls it is suspended (SIGSTOP), so the configurations interleaved
    with this one run quiet. Each call resumes it ``lead`` seconds before ``fn`` starts
    (the runtime's load sampler, which reads the last 50 ms or more, sees a steady
    neighbour) and, after suspending it, waits ``lead`` seconds again so the next
    configuration's sampler window is quiet. Time ``fn`` itself (e.g. ``total_ms`` of
    the run's stats), not the call."""

    def __init__(
        self, fn: Callable[[], Any], seconds: float, lead: float = 0.1, cpu: int | None = None
    ):
        self.fn, self.seconds, self.lead, self.cpu = fn, seconds, lead, cpu
        self.stack = contextlib.ExitStack()
        self.proc: subprocess.Popen | None = None

    def __call__(self) -> Any:
        if self.proc is None:
            self.proc = self.stack.enter_context(busy_process(self.seconds, self.cpu))
        else:
            self.proc.send_signal(signal.SIGCONT)
        time.sleep(self.lead)
        try:
            return self.fn()
        finally:
            self.proc.send_signal(signal.SIGSTOP)
            time.sleep(self.lead)

    def close(self) -> None:
        if self.proc is not None:
            self.proc.send_signal(signal.SIGCONT)
        self.stack.close()
        self.proc = None


def load_test(
    model: str = "treelstm",
    size: str = "small",
    batch: int = 64,
    settings: tuple[int | None, ...] = (None,),
    repeats: int = 15,
    warmup: int = 3,
    seed: int = 0,
    pin: bool = True,
) -> tuple[Measurement, dict[str, dict[str, Any]]]:
    """``model`` ``size`` b``batch``, quiet and with one busy process, for each thread
    setting (``None``: the automatic policy; an int: forced), all interleaved.

    Configurations are named ``quiet/<setting>`` and ``busy/<setting>``; compare them on
    metric ``total_ms`` (the run's own time). ``pin``: the busy process runs on one CPU
    (see the module's doc). Also returns, per configuration, the thread facts of its last
    run."""
    spec = acrobat.models.load(model, size)
    xs = bench_instances(spec, batch, seed)
    prog = acrobat.compile(spec.module, spec.params)
    configs: dict[str, Callable[[], Any]] = {}
    busies = []
    cpu = busy_cpu() if pin else None
    for t in settings:

        def run(t=t):
            return acrobat.run(prog, xs, trace_level="off", threads=t).stats

        label = "auto" if t is None else str(t)
        configs[f"quiet/{label}"] = run
        busies.append(Busy(run, seconds=60 + 2 * repeats * len(settings), cpu=cpu))
        configs[f"busy/{label}"] = busies[-1]
    try:
        m = measure(configs, repeats=repeats, warmup=warmup, metrics=("total_ms", "blas_threads"))
    finally:
        for b in busies:
            b.close()
    facts = {
        name: {
            "blas": st.blas,
            "blas_threads": st.blas_threads,
            "threads": st.threads,
        }
        for name, st in m.results.items()
    }
    return m, facts


def busy_cpu() -> int | None:
    """The CPU a pinned busy process takes: the last one this process may run on (None
    where affinity cannot be read or only one CPU is allowed)."""
    try:
        allowed = sorted(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return None
    return allowed[-1] if len(allowed) > 1 else None


def _range(xs) -> str:
    return f"{int(min(xs))}..{int(max(xs))}" if xs else "-"


def report(m: Measurement, facts: dict[str, dict[str, Any]]) -> str:
    """The load test as text: per configuration its spread and threads, per setting the
    busy/quiet ratio and verdict, and the load."""
    lines = []
    for name in m.names:
        f = facts[name]
        lines.append(
            f"{name:>10}: {m.spread(name, 'total_ms')}  "
            f"threads {_range(m.samples[name].get('blas_threads', ()))} [last: {f['threads']}]"
        )
    for name in m.names:
        if name.startswith("quiet/"):
            other = "busy/" + name.split("/", 1)[1]
            q, b = m.spread(name, "total_ms"), m.spread(other, "total_ms")
            lines.append(
                f"{other} / {name}: {b.median / q.median:.2f}x median, worst "
                f"{b.max / q.median:.2f}x  ({m.verdict(name, other, 'total_ms').text})"
            )
    lines.append(str(m.load) + " (the busy process included)")
    lines.append("BLAS: " + next(iter(facts.values()))["blas"])
    return "\n".join(lines)
