"""The direct program: the host program's second flavour, which computes instead of recording.

Generated from the same IR as the recording host program (:mod:`acrobat.codegen.host`),
for the runtime's *direct* strategy: one instance at a time, every kernel call runs the
kernel's per-instance flavour at once for that instance (tensors in hand as arrays of
their own shapes, no batch axis), with no records, no DFG, no schedule and no arenas. A tensor read
(``item``/``argmax``) reads the array it holds, so no function needs to be a generator:
fiber functions become plain functions. Depths, ghost ops and phases only order the
batched schedule and are dropped. ``parallel``/``map`` calls run one after the other. A
function's calls of itself in tail position are a loop (no frame per step; a runaway loop
stops after ``LOOP_LIMIT`` steps, as in the host program).

The generated ``make(K0, K1, ..., np, AdtValue, to_list, from_list, WEIGHTS, LISTS)`` takes the
kernels as ``fn(*args) -> result`` for one instance (a tuple only for a kernel returning
one; :func:`acrobat.codegen.numpy_kernels.compile_numpy_kernel` with ``per_instance=True``)
and returns ``(entry, calls)``: ``calls()`` is the number of kernel calls made so far (the
DFG nodes the batched path would have recorded).

Kernel arguments that are host values pass as they are (the kernel converts a float as
``scalar`` does), except that an int must fit in 64 bits as the batched path's int64
records require: each is checked on a line of its own, listed in ``int_lines``, where one
that does not fit raises NumPy's ``OverflowError`` (told apart from a host-arithmetic
failure by its line).
"""

from __future__ import annotations

from dataclasses import dataclass

from acrobat.codegen.host import LOOP_LIMIT, LOOP_MESSAGE, _Gen, calls_itself_in_tail, fn, v
from acrobat.ir.list_ops import LIST_REDUCTIONS
from acrobat.ir.nodes import (
    Expr,
    FnCall,
    Function,
    KernelCall,
    Map,
    Module,
    OpCall,
    Parallel,
    Phase,
)
from acrobat.ir.traversal import walk
from acrobat.ir.types import FLOAT, TensorType

_I64_MIN, _I64_MAX = -(1 << 63), (1 << 63) - 1


@dataclass(frozen=True)
class DirectProgram:
    """Generated source of the direct program and what the runtime needs to call it."""

    source: str
    kernels: tuple[str, ...]  # kernel names, index = K<k> argument of make
    entry: str
    weight_values: tuple[str, ...] = ()  # weights the program passes as values
    int_lines: frozenset[int] = frozenset()  # source lines that convert a host int


class _DirectGen(_Gen):
    """The host generator with kernel calls that compute and plain (non-generator) calls."""

    def __init__(self, m: Module, kernels: list[str]):
        super().__init__(m, frozenset(), kernels, 0)
        self.int_lines: set[int] = set()

    def function(self, f: Function) -> None:
        self.emit(1, f"def {fn(f.name)}({', '.join(v(p.name) for p in f.params)}):")
        if any(isinstance(e, KernelCall) for e in walk(f.body)):
            self.emit(2, "nonlocal nk")
        self.is_fiber = False
        self.looping = f if calls_itself_in_tail(f) else None
        if self.looping is None:
            self.tail(f.body, 2)
            return
        self.emit(2, f"for _ in range({LOOP_LIMIT}):  # its calls of itself in tail position")
        self.tail(f.body, 3)
        self.emit(2, f"raise RecursionError({LOOP_MESSAGE!r})")

    def tail_value(self, e: Expr, ind: int) -> None:
        """Return the value of a tail expression (no depth in the direct program); a call
        of the function itself starts its loop again with the call's arguments."""
        f = self.looping
        if isinstance(e, FnCall) and f is not None and e.fn == f.name:
            params = "".join(v(p.name) + ", " for p in f.params)
            args = "".join(self.atom(a) + ", " for a in e.args)
            if params:
                self.emit(ind, f"{params}= {args}")
            self.emit(ind, "continue")
            return
        r = self.fresh()
        self.bind(r, e, ind)
        self.emit(ind, f"return {r}")

    def call(self, name: str, args: list[str], target: str, ind: int) -> None:
        self.emit(ind, f"{target} = {fn(name)}({', '.join(args)})")

    def bind(self, target: str, e: Expr, ind: int) -> None:
        if isinstance(e, Phase):  # a barrier of the batched schedule only
            self.emit(ind, f"{target} = ()")
        else:
            super().bind(target, e, ind)

    def kernel_call(self, target: str, e: KernelCall, ind: int) -> None:
        k = self.kid[e.kernel]
        args = []
        for a, p in zip(e.args, self.m.function_map[e.kernel].params):
            x = self.atom(a)
            if isinstance(p.ty, TensorType) or p.ty == FLOAT:
                args.append(x)
            else:  # an int: one that does not fit in 64 bits fails as the records' int64
                t = self.fresh()
                self.emit(ind, f"{t} = {x} if {_I64_MIN} <= {x} <= {_I64_MAX} else np.int64({x})")
                self.int_lines.add(len(self.lines))  # 1-based number of the line above
                args.append(t)
        self.emit(ind, "nk += 1")
        self.emit(ind, f"{target} = K{k}({', '.join(args)})")

    def op(self, target: str, e: OpCall, ind: int) -> None:
        if e.op == "ghost":  # depth padding of the batched schedule only
            self.emit(ind, f"{target} = ()")
        elif e.op == "item":
            self.emit(ind, f"{target} = float({self.atom(e.args[0])}.item())")
        elif e.op == "argmax":
            self.emit(ind, f"{target} = int({self.atom(e.args[0])}.argmax())")
        elif e.op in LIST_REDUCTIONS:  # acrobat.ir.list_ops.ON_ITEMS on the lists' arrays
            args = self.reduced_lists(e, ind) + [self.atom(a) for a in e.args[2:]]
            if e.op == "list_sum":
                args.append(repr(tuple(e.attr("shape"))))
            self.emit(ind, f"{target} = LISTS[{e.op!r}]({', '.join(args)})")
        else:
            super().op(target, e, ind)

    def parallel(self, target: str, e: Parallel, ind: int) -> None:
        outs = []
        for c in e.calls:
            r = self.fresh()
            self.call(c.fn, [self.atom(a) for a in c.args], r, ind)
            outs.append(r)
        self.emit(ind, f"{target} = ({''.join(o + ', ' for o in outs)})")

    def map(self, target: str, e: Map, ind: int) -> None:
        extra = "".join(", " + self.atom(a) for a in e.extra)
        xs = self.atom(e.xs)
        self.emit(ind, f"{target} = from_list([{fn(e.fn)}(x{extra}) for x in to_list({xs})])")


def generate_direct(m: Module) -> DirectProgram:
    """Python source of the direct program: ``make(K0, ..., np, AdtValue, to_list,
    from_list, WEIGHTS, LISTS)`` returns ``(entry, calls)`` (``LISTS``: the list
    reductions on lists of arrays, :data:`acrobat.ir.list_ops.ON_ITEMS`)."""
    kernels = [f.name for f in m.functions if f.is_kernel]
    g = _DirectGen(m, kernels)
    ks = "".join(f"K{i}, " for i in range(len(kernels)))
    g.emit(0, f"def make({ks}np, AdtValue, to_list, from_list, WEIGHTS, LISTS):")
    g.emit(1, '"""Direct program; K<k>(*args) runs kernel k for one instance."""')
    g.emit(1, "nk = 0")
    for f in m.functions:
        if not f.is_kernel:
            g.function(f)
    g.emit(1, "def calls():")
    g.emit(2, "return nk")
    g.emit(1, f"return {fn(m.entry)}, calls")
    return DirectProgram(
        "\n".join(g.lines) + "\n",
        tuple(kernels),
        m.entry,
        tuple(sorted(g.weight_values)),
        frozenset(g.int_lines),
    )


__all__ = ["DirectProgram", "generate_direct"]
