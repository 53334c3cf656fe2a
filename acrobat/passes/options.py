"""CompileOptions: one switch per optimization, so each can be turned off alone."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, fields

from acrobat.errors import AcrobatNameError

OPTIMIZATIONS = (
    "taint_specialization",
    "fusion",
    "horizontal_batching",
    "coarsening",
    "hoisting",
    "ghost_ops",
    "phases",
    "gather_fusion",
    "inline_depth",
    "independence",
)
"""The optimizations on by default; :meth:`CompileOptions.without` switches them off."""

OPT_IN = ("leveling",)
"""Options off by default; :meth:`CompileOptions.with_` switches them on."""


@dataclass(frozen=True)
class CompileOptions:
    """Switches for ACRoBat's optimizations (docs/paper.md, "The optimizations").

    taint_specialization  clone functions per weight set; fold weight-only expressions
    fusion                fuse op chains into one kernel (by op kind)
    horizontal_batching   merge independent dense ops on one input into one matmul
    coarsening            one DFG node per straight-line run of kernels
    hoisting              static depths for kernels that do not depend on recursion
    ghost_ops             pad the cheaper branch of an if so instances re-join in depth
    phases                honour phase(); off: phase() is dropped (one phase)
    gather_fusion         kernels read batched inputs through index arrays (run time)
    inline_depth          depths computed by the host program (off: a DFG traversal)
    independence          steps with no data dependency start at the same depth, as if
                          written in parallel(...); work that needs no tensor read's value
                          goes before the read (ReadsLast), and a kernel only read on the
                          host records at its phase's last level (off: program order)
    leveling              (opt-in, off by default) the acrobat policy moves a node to an
                          earlier bucket of its kernel in its phase when its inputs are
                          ready (run time). Fewer launches where instances' depths
                          misalign (child-sum TreeLSTM small b64: 127 -> 110), at a host
                          cost per bucket that matched what the saved launches gained on
                          the CPU (+3 ms there, +6 ms on StackRNN b64 for no saved launch)
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
    inline_depth: bool = True
    independence: bool = True
    leveling: bool = False
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
