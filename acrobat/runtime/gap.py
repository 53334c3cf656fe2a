"""The gap report: where the ``acrobat`` policy launches more than DyNet's policies.

:func:`gap_report` runs a compiled program once, batched, and schedules the DFGs that run
recorded (one per round of tensor reads) with ``acrobat``, ``dynet-depth`` and
``dynet-agenda``: recording does not depend on the policy, so every policy sees the same
nodes. For each kernel it counts the launches under each policy and the kernel's share of
the lower bound (:func:`acrobat.runtime.schedule.kernel_chains`: the most nodes of that
kernel on one dependency path, summed over the rounds), and names the source lines its ops
come from and the host functions that call it. A kernel is *behind* when ``acrobat``
launches it more often than the better of the two DyNet policies does.

``acrobat.gap_report(prog, instances)`` returns the :class:`GapReport` (``str()`` is a
table); ``acrobat.explain(module, params, instances=xs)`` adds it as a "gap" section.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from acrobat.compiler import CompiledProgram
from acrobat.compiler import compile as compile_program
from acrobat.compiler import explain as explain_compile
from acrobat.ir.nodes import Module
from acrobat.passes.options import CompileOptions
from acrobat.runtime.run import run
from acrobat.runtime.schedule import kernel_chains, schedule

POLICIES = ("acrobat", "dynet-depth", "dynet-agenda")
OTHERS = POLICIES[1:]


@dataclass(frozen=True)
class KernelGap:
    """One kernel: its launches under each policy, its lower bound and where it comes from.

    ``lines``: ``(line, text)`` of the source lines of the kernel's ops and call sites,
    ascending (``text`` is ``""`` when the report was made without the source);
    ``functions``: the host functions that call it."""

    kernel: str
    launches: dict[str, int]
    lower_bound: int
    nodes: int
    lines: tuple[tuple[int, str], ...] = ()
    functions: tuple[str, ...] = ()

    @property
    def best_other(self) -> int:
        """The fewer launches of the two DyNet policies."""
        return min(self.launches[p] for p in OTHERS)

    @property
    def behind(self) -> int:
        """Launches ``acrobat`` uses beyond the better DyNet policy (0 when not behind)."""
        return max(0, self.launches["acrobat"] - self.best_other)

    def where(self) -> str:
        """``fn1, fn2: line 21, 32`` — who calls the kernel and its source lines."""
        lines = ", ".join(str(n) for n, _ in self.lines)
        fns = ", ".join(self.functions)
        return f"{fns}: line {lines}" if lines else fns


@dataclass(frozen=True)
class GapReport:
    """Launches of ``acrobat`` against ``dynet-depth`` and ``dynet-agenda`` on one run.

    ``launches``: per policy, in total; ``kernels``: every kernel that ran, the ones
    furthest behind first; ``passes``: the rounds (DFGs) the run executed."""

    instances: int
    passes: int
    launches: dict[str, int]
    lower_bound: int
    kernels: tuple[KernelGap, ...]
    source_file: str = ""

    @property
    def best_other(self) -> str:
        """The DyNet policy with fewer launches (``dynet-depth`` on a tie)."""
        return min(OTHERS, key=lambda p: self.launches[p])

    @property
    def behind(self) -> int:
        """Launches ``acrobat`` uses beyond the better DyNet policy (0 when not behind)."""
        return max(0, self.launches["acrobat"] - self.launches[self.best_other])

    @property
    def gaps(self) -> tuple[KernelGap, ...]:
        """The kernels ``acrobat`` launches more often than the better DyNet policy does."""
        return tuple(k for k in self.kernels if k.behind)

    def table(self) -> str:
        """Totals, then one row per kernel (launches per policy, bound, behind, source)."""
        la = self.launches
        head = (
            f"launches: acrobat {la['acrobat']}, dynet-depth {la['dynet-depth']}, "
            f"dynet-agenda {la['dynet-agenda']}; lower bound {self.lower_bound} "
            f"({self.instances} instance(s), {self.passes} pass(es))"
        )
        if self.behind:
            verdict = (
                f"acrobat is {self.behind} launch(es) behind {self.best_other}; "
                f"{len(self.gaps)} kernel(s) behind: "
                + ", ".join(f"{k.kernel} (+{k.behind})" for k in self.gaps)
            )
        else:
            verdict = f"acrobat is not behind ({self.best_other} is the better DyNet policy)"
        width = max([len(k.kernel) for k in self.kernels] + [6])
        rows = [
            head,
            verdict,
            f"  {'kernel':<{width}} {'nodes':>6} {'acrobat':>8} {'depth':>6} {'agenda':>7} "
            f"{'bound':>6} {'behind':>7}  source",
        ]
        for k in self.kernels:
            lk = k.launches
            rows.append(
                f"  {k.kernel:<{width}} {k.nodes:>6} {lk['acrobat']:>8} {lk['dynet-depth']:>6} "
                f"{lk['dynet-agenda']:>7} {k.lower_bound:>6} "
                f"{('+' + str(k.behind)) if k.behind else '':>7}  {k.where()}"
            )
        for k in self.gaps:
            for n, text in k.lines:
                if text:
                    rows.append(f"    {k.kernel} <- {self.source_file}:{n}: {text.strip()}")
        return "\n".join(rows)

    def __str__(self) -> str:
        return self.table()


def kernel_sources(prog: CompiledProgram) -> dict[str, tuple[set[int], set[str], str]]:
    """Kernel name -> (source lines of its ops and call sites, calling host functions,
    the file the spans name), from the program's compile-time ``kernel_map``."""
    return {name: (set(m.lines), set(m.functions), m.file) for name, m in prog.kernel_map.items()}


def _sources_of(name: str, where: dict) -> tuple[set[int], set[str], str]:
    """The lines, host functions and file of kernel ``name``; a twin group's
    (``a+b``) are its members' together."""
    lines: set[int] = set()
    fns: set[str] = set()
    file = ""
    for member in name.split("+"):
        ls, fs, f = where.get(member, (set(), set(), ""))
        lines |= ls
        fns |= fs
        file = file or f
    return lines, fns, file


def gap_report(
    prog: CompiledProgram,
    instances: list,
    backend: str = "numpy",
    source: str | None = None,
) -> GapReport:
    """Run ``instances`` of ``prog`` once (batched, ``acrobat`` policy) and compare the
    launches of ``acrobat``, ``dynet-depth`` and ``dynet-agenda`` on the DFGs it recorded,
    per kernel, with the lower bound. ``source``: the program text, to quote the lines."""
    instances = list(instances)
    res = run(prog, instances, backend=backend, trace_level="off", strategy="batched")
    dfgs = res.stats._dfgs  # the run's DFGs (kept until the lower bound is first read)
    # keyed by the DFG's kernel names, not the program's: the runtime adds kernels of its
    # own after the program's (a twin group, ``rnn_k1+rnn_dup1_k1``, runs its members')
    launches = {p: {} for p in POLICIES}
    bound: dict[str, int] = {}
    nodes: dict[str, int] = {}
    opts = prog.options
    for dfg in dfgs:
        names = [ki.name for ki in dfg.kernels]
        for p in POLICIES:
            for b in schedule(dfg, p, opts.inline_depth, opts.leveling).batches:
                launches[p][names[b.kernel]] = launches[p].get(names[b.kernel], 0) + 1
        for name, chain, recs in zip(names, kernel_chains(dfg), dfg.records):
            bound[name] = bound.get(name, 0) + int(chain)
            nodes[name] = nodes.get(name, 0) + len(recs)
    text = source.splitlines() if source is not None else []
    where = kernel_sources(prog)
    kernels = []
    files = set()
    for name, n in nodes.items():
        if not n:
            continue
        lines, fns, file = _sources_of(name, where)
        if file:
            files.add(file)
        kernels.append(
            KernelGap(
                name,
                {p: launches[p].get(name, 0) for p in POLICIES},
                bound[name],
                n,
                tuple((n, text[n - 1] if 0 < n <= len(text) else "") for n in sorted(lines)),
                tuple(sorted(fns)),
            )
        )
    kernels.sort(key=lambda g: (-g.behind, -g.launches["acrobat"], g.kernel))
    return GapReport(
        len(instances),
        len(dfgs),
        {p: sum(launches[p].values()) for p in POLICIES},
        sum(bound.values()),
        tuple(kernels),
        ", ".join(sorted(files)),
    )


def explain(
    module: Module,
    params: dict[str, np.ndarray],
    options: CompileOptions | None = None,
    instances: list | None = None,
    backend: str = "numpy",
    source: str | None = None,
) -> str:
    """``acrobat.explain``: what each pass did and the kernel table
    (:func:`acrobat.compiler.explain`); with ``instances``, a "gap" section: where the
    ``acrobat`` policy launches more than DyNet's policies on them (:func:`gap_report`)."""
    text = explain_compile(module, params, options)
    if instances is None:
        return text
    report = gap_report(compile_program(module, params, options), instances, backend, source)
    return text + "\ngap: acrobat against dynet-depth and dynet-agenda\n" + report.table() + "\n"


__all__ = ["GapReport", "KernelGap", "explain", "gap_report"]
