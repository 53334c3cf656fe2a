"""CompileOptions: one switch per optimization, so each can be turned off alone."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, fields

from acrobat.errors import AcrobatNameError


@dataclass(frozen=True)
class Switch:
    """One on/off option of :class:`CompileOptions`, described for people.

    ``label`` is the human name the explorer shows (beside the passes it turns off, in the
    Passes tab), ``what`` one or two sentences on what it does (the explorer's tooltip), and
    ``passes`` the pipeline passes whose work it switches, by their ``PassApplied`` name (``()``
    when it acts in code generation or at run time). ``default`` is its value in
    ``CompileOptions()``; ``False`` marks an opt-in option (:data:`OPT_IN`)."""

    name: str
    label: str
    what: str
    passes: tuple[str, ...] = ()
    default: bool = True


SWITCHES = (
    Switch(
        "taint_specialization",
        "Weight specialization",
        "Clone functions per set of weights they are called with, then fold expressions of "
        "weights alone into new weights at compile time.",
        ("SpecializeWeights", "FoldWeightExpressions"),
    ),
    Switch(
        "fusion",
        "Op fusion",
        "Fuse chains of ops into one kernel, by op kind (off: every op is its own kernel).",
        ("FuseOps",),
    ),
    Switch(
        "horizontal_batching",
        "Horizontal batching",
        "Merge independent dense ops that read the same input into one matrix multiply.",
        ("BatchHorizontally",),
    ),
    Switch(
        "coarsening",
        "Grain coarsening",
        "Record one DFG node per straight-line run of kernels instead of one per kernel.",
        ("CoarsenGrains",),
    ),
    Switch(
        "hoisting",
        "Static depth hoisting",
        "Give kernels that do not depend on recursion a depth fixed at compile time.",
        ("FuseOps", "HoistStaticDepth"),
    ),
    Switch(
        "ghost_ops",
        "Ghost ops",
        "Pad the cheaper branch of an if with ghost steps so instances re-join in depth.",
        ("AddGhostOps",),
    ),
    Switch(
        "phases",
        "Program phases",
        "Honour phase() markers: each phase is scheduled on its own (off: phase() is dropped "
        "and the program is one phase).",
        ("ValidatePhases",),
    ),
    Switch(
        "gather_fusion",
        "Gather fusion",
        "Kernels read their batched inputs through index arrays instead of copying them "
        "together first (run time).",
    ),
    Switch(
        "twin_launches",
        "Twin launches",
        "Kernels that differ only in their weights (a function specialized per weight set, "
        "such as a BiRNN's two directions) are batched together, and each batch runs as one "
        "call: the rows side by side, each weight product on its own rows (run time).",
    ),
    Switch(
        "inline_depth",
        "Inline depth computation",
        "The host program computes each node's depth as it records it (off: a DFG traversal "
        "after recording).",
    ),
    Switch(
        "independence",
        "Data-flow independence",
        "Steps with no data dependency start at the same depth, as if written in parallel(...); "
        "work that needs no tensor read's value goes before the read, and a kernel only read "
        "on the host records at its phase's last level (off: program order).",
        ("ReadsLast", "InferIndependence", "AddGhostOps"),
    ),
    Switch(
        "leveling",
        "Critical-path leveling",
        "At run time the acrobat policy list-schedules each pass, phase by phase: it launches "
        "the kernel whose ready nodes head the longest chain still to run, all of them at once, "
        "so work off the critical path waits and joins its kernel's next launch. It merges equal "
        "work that the depth keys put at different depths (child lists of different lengths, "
        "instances that finish early): child-sum TreeLSTM small b8 106 -> 51 launches. It never "
        "launches more than the key buckets (off: one launch per depth key and kernel, the "
        "paper's schedule).",
    ),
    Switch(
        "embedding_tables",
        "Embedding tables",
        "Compute once per row of an embedding table the work that depends on that row alone "
        "(a TreeLSTM leaf's projection and gates), at compile time, so a run looks it up "
        "instead of computing it for every leaf.",
        ("TabulateEmbeddings",),
    ),
    Switch(
        "fused_elementwise",
        "Fused elementwise chains",
        "On the CPU, a kernel's consecutive elementwise ops (an LSTM cell's gates, a tanh "
        "after a bias add) run as one native call, row by row in vectors that stay in L1, "
        "instead of one NumPy call per op over whole arrays (code generation).",
    ),
)
"""Every on/off option of :class:`CompileOptions`, in field order: the one place their human
labels, descriptions and passes are written (``CompileOptions.switches()``)."""

OPTIMIZATIONS = tuple(s.name for s in SWITCHES if s.default)
"""The optimizations on by default; :meth:`CompileOptions.without` switches them off."""

OPT_IN = tuple(s.name for s in SWITCHES if not s.default)
"""Options off by default; :meth:`CompileOptions.with_` switches them on."""


@dataclass(frozen=True)
class CompileOptions:
    """Switches for ACRoBat's optimizations (docs/paper.md, "The optimizations").

    Each on/off field is described in :data:`SWITCHES` (human label, what it does, the passes
    it switches; ``CompileOptions.switches()``): :data:`OPTIMIZATIONS` are on by default and
    :data:`OPT_IN` (none at present) off. One more field:

    inline_max_bindings   functions at most this big (and not recursive) are inlined
    """

    taint_specialization: bool = True
    fusion: bool = True
    horizontal_batching: bool = True
    coarsening: bool = True
    hoisting: bool = True
    ghost_ops: bool = True
    phases: bool = True
    gather_fusion: bool = True
    twin_launches: bool = True
    inline_depth: bool = True
    independence: bool = True
    leveling: bool = True
    embedding_tables: bool = True
    fused_elementwise: bool = True
    inline_max_bindings: int = 8

    def without(self, *names: str) -> CompileOptions:
        """A copy with the named optimizations (or opt-in options) switched off."""
        known = {f.name for f in fields(self)}
        for n in names:
            if n not in OPTIMIZATIONS + OPT_IN or n not in known:
                raise AcrobatNameError(
                    f"unknown optimization {n!r}", hint=f"choose from {list(OPTIMIZATIONS)}"
                )
        return dataclasses.replace(self, **{n: False for n in names})

    def with_(self, *names: str) -> CompileOptions:
        """A copy with the named options switched on (the opt-in ones, :data:`OPT_IN`, or
        optimizations switched off before)."""
        for n in names:
            if n not in OPTIMIZATIONS + OPT_IN:
                raise AcrobatNameError(
                    f"unknown option {n!r}", hint=f"choose from {list(OPTIMIZATIONS + OPT_IN)}"
                )
        return dataclasses.replace(self, **{n: True for n in names})

    @staticmethod
    def switches() -> tuple[Switch, ...]:
        """Every on/off option, described (:data:`SWITCHES`), in field order."""
        return SWITCHES

    @staticmethod
    def switch(name: str) -> Switch:
        """The description of the on/off option ``name`` (``AcrobatNameError`` if unknown)."""
        for s in SWITCHES:
            if s.name == name:
                return s
        raise AcrobatNameError(
            f"unknown option {name!r}", hint=f"choose from {[s.name for s in SWITCHES]}"
        )
