"""Host-program code generation: ACRoBat's AOT host program, as Python source.

Each IR function becomes one Python function that runs an instance's control flow on
real host values (ADT values, ints) and, at every kernel call, *records* a DFG node
instead of computing: it adds the row ``(key, out, instance, *args)`` to the kernel's
record list (``R<k>`` extends that flat list of ints by the row), where ``out`` is the
first of the node's fresh output value ids (tensor handles) and
``key = phase * STRIDE + depth`` orders the schedule. Depth is threaded inline
(docs/paper.md §4): a function that can move the depth takes ``d`` and returns
``(result, d)``; a dynamic kernel call records at ``d`` then increments it; a hoisted
call records at its static depth within the current phase; ``parallel``/``map``
children start at the same ``d`` and the parent continues from their max; ghost ops add
to ``d``; ``phase()`` moves ``d`` to the next phase's base. A function that never moves
it returns its result alone, and one that never reads it takes no ``d``
(:func:`depth_use`); a call of a function itself in tail position is a loop. No IR is interpreted at run time.

After a tensor read the fiber resumes only once the pending DFG has been executed, so
every value it can see exists: its dynamic depth restarts at the phase's base, which
re-aligns instances that drifted apart (a shift-reduce parser doing different numbers of
SHIFTs and REDUCEs) — an improvement over keeping depths across rounds. With
independence on, a kernel call whose value is only read on the host (a decision such as
``item(sigmoid(w . h))``) records at the phase's last level, ``LATE``: nothing in the DFG
consumes it, so the decisions of every instance in a round of reads form one launch
however many steps each instance took before its read.

Functions that need tensor values (``item``/``argmax``, or calls of such functions —
the taint analysis's fiber functions) are generated as generators: they yield requests
``(op, payload)`` to the fiber scheduler in :mod:`acrobat.runtime.fibers` — READ a
tensor value, CALL a fiber function (trampolined, so deep recursion never nests C
frames), SPAWN independent children, or wait at a PHASE barrier.

Both formats, records and requests, are defined in :mod:`acrobat.codegen.records`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from acrobat.analysis.independence import READS as READ_OPS
from acrobat.analysis.independence import is_barrier, moves_depth
from acrobat.codegen import ident
from acrobat.codegen.records import (
    CALL,
    PHASE,
    READ_ARGMAX,
    READ_ITEM,
    REDUCE,
    SPAWN,
    STRIDE,
    TAIL,
)
from acrobat.ir.list_ops import EMPTY, LIST_REDUCTIONS, NEEDS_AN_ELEMENT, signature
from acrobat.ir.nodes import (
    Const,
    CtorCall,
    Expr,
    FnCall,
    Function,
    GlobalRef,
    If,
    KernelCall,
    Let,
    Map,
    Match,
    Module,
    OpCall,
    Parallel,
    ParamRef,
    Pattern,
    PCtor,
    Phase,
    Proj,
    PVar,
    TupleExpr,
    Var,
)
from acrobat.ir.ops import LIST_INDEX_ERROR, NEGATIVE_INT_POWER
from acrobat.ir.traversal import var_names, walk
from acrobat.ir.types import FLOAT, INT, TupleType

LATE = STRIDE - 1  # the last depth of a phase: where a kernel only read on the host records

_HOST_OPS = {
    "h.add": "({} + {})",
    "h.sub": "({} - {})",
    "h.mul": "({} * {})",
    "h.truediv": "({} / {})",
    "h.floordiv": "({} // {})",
    "h.mod": "({} % {})",
    "h.pow": "({} ** {})",
    "h.lt": "({} < {})",
    "h.le": "({} <= {})",
    "h.gt": "({} > {})",
    "h.ge": "({} >= {})",
    "h.eq": "({} == {})",
    "h.ne": "({} != {})",
    "h.and": "({} and {})",
    "h.or": "({} or {})",
    "h.neg": "(-{})",
    "h.not": "(not {})",
    "h.abs": "abs({})",
    "h.min": "min({}, {})",
    "h.max": "max({}, {})",
    "h.len": "len(to_list({}))",
    "h.int": "int({})",
    "h.float": "float({})",
    "h.nth": "{0}[{1}]",  # on to_list(xs), after the range check (see _Gen.op)
}


@dataclass(frozen=True)
class HostProgram:
    """Generated source and what the runtime needs to call it."""

    source: str
    kernels: tuple[str, ...]  # kernel names, index = record list number
    fibers: frozenset[str]
    entry: str
    weight_values: tuple[str, ...] = ()  # weights the host program passes as values
    # the same program as C (acrobat.codegen.host_c), None where it stays Python
    c_source: str | None = None


def v(name: str) -> str:
    return ident("v_", name)


def fn(name: str) -> str:
    return ident("f_", name)


# How a host function uses the depth ``d`` (see :func:`depth_use`)
FREE, READS, MOVES = 0, 1, 2


def depth_use(m: Module, fibers: frozenset[str]) -> dict[str, int]:
    """Per host function, how it uses the depth: ``MOVES`` (takes ``d``, returns
    ``(value, d)``: it records at the dynamic depth, pads or starts a phase, directly or
    through a call), ``READS`` (takes ``d`` for hoisted records at static depths within
    the phase, returns the value alone: its caller's ``d`` is unchanged) or ``FREE`` (no
    ``d`` at all: pure host code such as a list reversal). Fiber functions and the entry
    keep the full convention (``MOVES``). A fixed point over the call graph."""
    fns = [f for f in m.functions if not f.is_kernel]
    use = {f.name: MOVES if f.name in fibers or f.name == m.entry else FREE for f in fns}
    changed = True
    while changed:
        changed = False
        for f in fns:
            level = use[f.name]
            if level == MOVES:
                continue
            for e in walk(f.body):
                t = type(e)
                if t is KernelCall:
                    level = max(level, MOVES if e.depth is None else READS)
                elif t is Phase or t is OpCall and (e.op == "ghost" or e.op in READ_OPS):
                    level = MOVES
                elif t is FnCall or t is Map:
                    level = max(level, use.get(e.fn, FREE))
                if level == MOVES:
                    break
            if level != use[f.name]:
                use[f.name] = level
                changed = True
    return use


def _tails(e: Expr):
    """The expressions in tail position of ``e`` (through blocks and branches)."""
    stack = [e]
    while stack:
        e = stack.pop()
        if isinstance(e, Let):
            stack.append(e.body)
        elif isinstance(e, If):
            stack.extend((e.then, e.orelse))
        elif isinstance(e, Match):
            stack.extend(c.body for c in e.clauses)
        else:
            yield e


LOOP_LIMIT = 1 << 22
"""Iterations of a self tail call loop before the run stops with an error (a program that
calls itself forever would otherwise never return; recursion stopped at 200,000 frames)."""
LOOP_MESSAGE = f"a function called itself in tail position more than {LOOP_LIMIT} times"


def calls_itself_in_tail(f: Function) -> bool:
    """Whether ``f`` calls itself in tail position (through blocks, branches and matches):
    the generated programs run such calls as a loop instead of a call."""
    return any(
        isinstance(e, FnCall) and e.fn == f.name and len(f.params) == len(e.args)
        for e in _tails(f.body)
    )


class _Gen:
    def __init__(
        self,
        m: Module,
        fibers: frozenset[str],
        kernels: list[str],
        base: int,
        independence: bool = False,
    ):
        self.m, self.fibers, self.base = m, fibers, base
        self.independence = independence
        self.kid = {k: i for i, k in enumerate(kernels)}
        self.lines: list[str] = []
        self.tmp = 0
        self.weight_values: set[str] = set()
        # independence: depth variable -> the depth variables it is known to be >= of
        self.below: dict[str, frozenset[str]] = {}
        self.use = depth_use(m, fibers)
        self.current: Function | None = None  # the function being generated
        self.loops = False  # its self tail calls are a loop

    def emit(self, indent: int, text: str) -> None:
        self.lines.append("    " * indent + text)

    def fresh(self) -> str:
        self.tmp += 1
        return f"_t{self.tmp}"

    # -- functions ---------------------------------------------------------------------
    def function(self, f: Function) -> None:
        """One host function. Its depth convention is :func:`depth_use`'s; a call of
        itself in tail position rebinds its parameters and loops (no frame, no generator
        per step)."""
        params = [v(p.name) for p in f.params]
        args = ", ".join(params + ["d"] if self.use[f.name] else params)
        self.emit(1, f"def {fn(f.name)}({args}):")
        if any(
            isinstance(e, KernelCall) or isinstance(e, OpCall) and e.op in LIST_REDUCTIONS
            for e in walk(f.body)
        ):
            self.emit(2, "nonlocal nv")
        self.is_fiber = f.name in self.fibers
        self.read_only = _read_only(f.body) if self.independence else frozenset()
        self.current = f
        self.loops = calls_itself_in_tail(f)
        # a fiber function is a generator even when nothing in it yields (its self tail
        # calls, which would, are a loop)
        if self.is_fiber and (self.loops or not any(_yields(e, self.fibers) for e in walk(f.body))):
            self.emit(2, "if False:")
            self.emit(3, "yield")
        if self.loops:
            self.emit(2, f"for _ in range({LOOP_LIMIT}):  # its calls of itself in tail position")
        self.tail(f.body, 3 if self.loops else 2)
        if self.loops:  # the body returns or continues: only a runaway loop gets here
            self.emit(2, f"raise RecursionError({LOOP_MESSAGE!r})")
        self.current, self.loops = None, False

    def tail(self, e: Expr, ind: int) -> None:
        """Code that computes ``e`` and returns it: blocks and branches here, the value
        itself in :meth:`tail_value`."""
        if isinstance(e, Let):
            self.block(e, ind, lambda body: self.tail(body, ind))
        elif isinstance(e, If):
            self.emit(ind, f"if {self.atom(e.cond)}:")
            self.tail(e.then, ind + 1)
            self.emit(ind, "else:")
            self.tail(e.orelse, ind + 1)
        elif isinstance(e, Match):
            self.match(e, ind, None)
        else:
            self.tail_value(e, ind)

    def tail_value(self, e: Expr, ind: int) -> None:
        """Return ``(value, d)`` (or the value alone, see :func:`depth_use`) of a tail
        expression that is not a block or a branch; a call of the function itself loops."""
        if self.loops and isinstance(e, FnCall) and e.fn == self.current.name:
            params = [v(p.name) for p in self.current.params]
            if params:
                values = ", ".join(self.atom(a) for a in e.args)
                self.emit(ind, f"{', '.join(params)}, = {values},")
            self.emit(ind, "continue")
        elif self.is_fiber and isinstance(e, FnCall) and e.fn in self.fibers:
            # a tail call: the callee's (value, d) is ours; it replaces this generator
            call = f"{fn(e.fn)}({', '.join([self.atom(a) for a in e.args] + ['d'])})"
            self.emit(ind, f"return (yield ({TAIL}, {call}))")
        else:
            r = self.fresh()
            self.bind(r, e, ind)
            moves = self.current is None or self.use[self.current.name] == MOVES
            self.emit(ind, f"return {r}, d" if moves else f"return {r}")

    def match(self, e: Match, ind: int, target: str | None) -> None:
        s = self.atom(e.scrutinee)
        last = len(e.clauses) - 1
        for i, c in enumerate(e.clauses):
            cond, binds = self.pattern(c.pattern, s)
            # the last case needs no test: the match is exhaustive
            inner = ind if last == 0 else ind + 1
            if last:
                kw = "if" if i == 0 else "elif"
                self.emit(ind, f"{kw} {cond}:" if i < last else "else:")
            for name, expr in binds:
                self.emit(inner, f"{name} = {expr}")
            if target is None:
                self.tail(c.body, inner)
            else:
                self.bind(target, c.body, inner)

    def pattern(self, p: Pattern, s: str) -> tuple[str, list[tuple[str, str]]]:
        conds: list[str] = []
        binds: list[tuple[str, str]] = []

        def go(p: Pattern, expr: str) -> None:
            if isinstance(p, PVar):
                binds.append((v(p.var.name), expr))
            elif isinstance(p, PCtor):
                conds.append(f"{expr}.ctor == {p.ctor!r}")
                if p.fields and all(isinstance(q, PVar) for q in p.fields):
                    # every field bound: one unpacking (``a, b, = s.fields``), not one
                    # attribute read and index per field
                    names = ", ".join(v(q.var.name) for q in p.fields) + ","
                    binds.append((names, f"{expr}.fields"))
                    return
                for j, q in enumerate(p.fields):
                    go(q, f"{expr}.fields[{j}]")

        go(p, s)
        return (" and ".join(conds) or "True"), binds

    # -- expressions -------------------------------------------------------------------
    def atom(self, e: Expr) -> str:
        if isinstance(e, Var):
            return v(e.name)
        if isinstance(e, Const):
            return repr(e.value)
        if isinstance(e, GlobalRef):
            return fn(e.name)
        if isinstance(e, ParamRef):
            # a weight passed around as a value (taint specialization off, or a weight in a
            # mixed tuple): it is uploaded once per run and handled like any tensor value
            self.weight_values.add(e.name)
            return f"WEIGHTS[{e.name!r}]"
        raise NotImplementedError(f"not an atom: {type(e).__name__}")

    def call(self, name: str, args: list[str], target: str, ind: int) -> None:
        use = self.use[name]
        call = f"{fn(name)}({', '.join(args + ['d'] if use else args)})"
        if name in self.fibers:
            self.emit(ind, f"{target}, d = yield ({CALL}, {call})")
        elif use == MOVES:
            self.emit(ind, f"{target}, d = {call}")
        else:  # the depth is unchanged
            self.emit(ind, f"{target} = {call}")

    def bind(self, target: str, e: Expr, ind: int) -> None:
        """Code that assigns the value of ``e`` to ``target`` (may move ``d``)."""
        t = type(e)
        if t in (Var, Const, GlobalRef, ParamRef):
            self.emit(ind, f"{target} = {self.atom(e)}")
        elif t is KernelCall:
            self.kernel_call(target, e, ind)
        elif t is FnCall:
            self.call(e.fn, [self.atom(a) for a in e.args], target, ind)
        elif t is OpCall:
            self.op(target, e, ind)
        elif t is CtorCall:
            fields = "".join(self.atom(a) + ", " for a in e.args)
            self.emit(ind, f"{target} = AdtValue({e.ctor!r}, ({fields}))")
        elif t is TupleExpr:
            fields = "".join(self.atom(a) + ", " for a in e.fields)
            self.emit(ind, f"{target} = ({fields})")
        elif t is Proj:
            self.emit(ind, f"{target} = {self.atom(e.tup)}[{e.index}]")
        elif t is Parallel:
            self.parallel(target, e, ind)
        elif t is Map:
            self.map(target, e, ind)
        elif t is Phase:
            if self.is_fiber:
                self.emit(ind, f"yield ({PHASE}, None)")
            self.emit(ind, f"d = (d // {STRIDE} + 1) * {STRIDE} + {self.base}")
            self.emit(ind, f"{target} = ()")
        elif t is If:
            self.emit(ind, f"if {self.atom(e.cond)}:")
            self.bind(target, e.then, ind + 1)
            self.emit(ind, "else:")
            self.bind(target, e.orelse, ind + 1)
        elif t is Match:
            self.match(e, ind, target)
        elif t is Let:
            self.block(e, ind, lambda body: self.bind(target, body, ind))
        else:
            raise NotImplementedError(f"host code for {t.__name__}")

    # -- blocks ------------------------------------------------------------------------
    def block(self, e: Let, ind: int, finish) -> None:
        """A block's bindings, then ``finish(body)``.

        Sequential depth (independence off): each binding starts where the one before
        ended. Independence on (:mod:`acrobat.analysis.independence`): a step starts at
        the max depth its operands are ready at, so steps with no data dependency start
        together, as in ``parallel(...)``; a barrier starts after everything before it and
        everything after it starts after it; the block's result continues from the max
        over everything it did. Depths live in local variables ``_dN`` of the generated
        function, so the cost at run time is a few assignments and ``max`` calls."""
        moves = self.current is None or self.use[self.current.name] == MOVES
        if not self.independence or not moves:  # a function that never moves d: no depths
            for b in e.bindings:
                self.bind(v(b.var.name), b.value, ind)
            finish(e.body)
            return
        entry = self.depth_var(ind, frozenset())
        ready: dict[str, frozenset[str]] = {}  # variable -> depth vars it is ready at
        front = frozenset({entry})  # depth vars whose max is where the block is
        now = front  # depth vars whose max ``d`` holds now
        for b in e.bindings:
            target, value = v(b.var.name), b.value
            if is_barrier(value, self.fibers):
                now = self.set_depth(front, now, ind)
                self.bind(target, value, ind)
                entry = self.depth_var(ind, frozenset())  # a read may restart the depth
                ready, front = {}, frozenset({entry})
                now = front
                continue
            deps = frozenset().union(*(ready[n] for n in var_names(value) if n in ready))
            deps = self.prune(deps or frozenset({entry}))
            if moves_depth(value):
                now = self.set_depth(deps, now, ind)
                self.bind(target, value, ind)
                dv = self.depth_var(ind, deps)
                ready[b.var.name] = frozenset({dv})
                front = self.prune(front | {dv})
                now = frozenset({dv})
            else:
                self.bind(target, value, ind)
                ready[b.var.name] = deps
        self.set_depth(front, now, ind)
        finish(e.body)

    def depth_var(self, ind: int, below: frozenset[str]) -> str:
        """A new depth variable holding ``d`` now, known to be >= every var in ``below``."""
        self.tmp += 1
        name = f"_d{self.tmp}"
        self.below[name] = frozenset().union(below, *(self.below[b] for b in below))
        self.snapshot_depth(ind, name)
        return name

    def snapshot_depth(self, ind: int, name: str) -> None:
        """Code for ``name = d`` (the C generator writes its own)."""
        self.emit(ind, f"{name} = d")

    def assign_depth_max(self, ind: int, names: list[str]) -> None:
        """Code for ``d = max(names)`` (the C generator writes its own)."""
        self.emit(ind, f"d = max({', '.join(names)})" if len(names) > 1 else f"d = {names[0]}")

    def prune(self, deps: frozenset[str]) -> frozenset[str]:
        """``deps`` without the variables another one of them is known to be >= of."""
        if len(deps) < 2:
            return deps
        return frozenset(x for x in deps if not any(x in self.below[y] for y in deps if y != x))

    def set_depth(self, deps: frozenset[str], now: frozenset[str], ind: int) -> frozenset[str]:
        """Make ``d`` the max of ``deps`` (no code when it already is)."""
        deps = self.prune(deps)
        if deps != now:
            self.assign_depth_max(ind, sorted(deps, key=lambda x: int(x[2:])))
        return deps

    def kernel_call(self, target: str, e: KernelCall, ind: int) -> None:
        k = self.kid[e.kernel]
        n_out = len(e.ty.fields) if isinstance(e.ty, TupleType) else 1
        self.emit(ind, f"o = nv; nv = o + {n_out}")
        key = "d" if e.depth is None else f"d - d % {STRIDE} + {e.depth}"
        if e.depth is None and n_out == 1 and target in self.read_only:
            # only read on the host: nothing in this DFG consumes it, so it waits for
            # the last level of the phase, where every other instance's read joins it
            key = f"d - d % {STRIDE} + {LATE}"
        kparams = self.m.function_map[e.kernel].params
        # records are int64 rows: a host float travels as the bits of a float64
        args = "".join(
            f", fbits({self.atom(a)})" if p.ty == FLOAT else ", " + self.atom(a)
            for a, p in zip(e.args, kparams)
        )
        self.emit(ind, f"R{k}(({key}, o, inst{args}))")
        if e.depth is None:
            self.emit(ind, "d += 1")
        if n_out == 1:
            self.emit(ind, f"{target} = o")
        else:
            outs = ", ".join(f"o + {j}" if j else "o" for j in range(n_out))
            self.emit(ind, f"{target} = ({outs})")

    def op(self, target: str, e: OpCall, ind: int) -> None:
        if e.op == "h.pow" and e.ty == INT:  # as ops.int_pow: an int power is an int
            a, b = (self.atom(x) for x in e.args)
            self.emit(ind, f"if {b} < 0:")
            self.emit(
                ind + 1,
                f'raise ValueError(f"{NEGATIVE_INT_POWER}: {{{a}}} ** {{{b}}} '
                '(for a float power write float(a) ** b)")',
            )
        if e.op == "h.nth":  # as ops.list_item: Python's xs[k], a ValueError out of range
            items, k = self.fresh(), self.atom(e.args[1])
            self.emit(ind, f"{items} = to_list({self.atom(e.args[0])})")
            self.emit(ind, f"if not -len({items}) <= {k} < len({items}):")
            self.emit(
                ind + 1,
                f'raise ValueError(f"{LIST_INDEX_ERROR}: {{{k}}} for a list of {{len({items})}}")',
            )
            self.emit(ind, f"{target} = {items}[{k}]")
            return
        if e.op in _HOST_OPS:
            code = _HOST_OPS[e.op].format(*(self.atom(a) for a in e.args))
            if e.op in ("h.min", "h.max") and e.ty == FLOAT:
                code = f"float({code})"  # min(2, 3.0) is the int 2; the IR type is float
            self.emit(ind, f"{target} = {code}")
        elif e.op == "ghost":
            self.emit(ind, f"d += {e.attr('count', 1)}")
            self.emit(ind, f"{target} = ()")
        elif e.op in LIST_REDUCTIONS:
            self.list_reduction(target, e, ind)
        elif e.op in ("item", "argmax"):
            code = READ_ITEM if e.op == "item" else READ_ARGMAX
            self.emit(ind, f"{target} = yield ({code}, {self.atom(e.args[0])})")
            # everything recorded before the read has been executed: restart the
            # dynamic depth at this phase's base, so instances re-align every round
            self.emit(ind, f"d = d - d % {STRIDE} + {self.base}")
        else:
            raise NotImplementedError(f"tensor op {e.op} outside a kernel")

    def reduced_lists(self, e: OpCall, ind: int) -> list[str]:
        """Code binding the Python lists a list reduction reduces (and raising the error
        of ``xs[0]`` where it needs an element and has none); returns their names."""
        lists = [self.fresh() for _ in range(2 if e.op == "list_attend" else 1)]
        for t, a in zip(lists, e.args):
            self.emit(ind, f"{t} = to_list({self.atom(a)})")
        if e.op in NEEDS_AN_ELEMENT:  # the max, argmax or softmax of nothing
            n = f"min(len({lists[0]}), len({lists[1]}))" if len(lists) == 2 else f"len({lists[0]})"
            self.emit(ind, f"if not {n}:")
            self.emit(ind + 1, f"raise ValueError({EMPTY!r})")
        return lists

    def list_reduction(self, target: str, e: OpCall, ind: int) -> None:
        """A list reduction: a request answered with the pass's reads, once everything
        pending has run, by storing the result as the value id it takes here (``argmax``:
        answered with the index; :mod:`acrobat.runtime.segments`); the depth restarts as
        after a read."""
        attend = e.op == "list_attend"
        lists = self.reduced_lists(e, ind)
        sig = signature(e)
        rest = f"{lists[1]}, {self.atom(e.args[2])}" if attend else "None, None"
        kind = LIST_REDUCTIONS.index(e.op)
        if e.op == "list_argmax":  # the answer is the index
            request = f"({REDUCE}, ({kind}, None, {lists[0]}, None, None, {sig!r}))"
            self.emit(ind, f"{target} = yield {request}")
        else:
            self.emit(ind, "o = nv; nv = o + 1")
            self.emit(ind, f"yield ({REDUCE}, ({kind}, o, {lists[0]}, {rest}, {sig!r}))")
            self.emit(ind, f"{target} = o")
        self.emit(ind, f"d = d - d % {STRIDE} + {self.base}")

    def parallel(self, target: str, e: Parallel, ind: int) -> None:
        """Every call starts at the same depth; the parent continues from their max.

        Calls of fiber functions run as spawned child fibers; the others are ordinary
        calls made first (they cannot wait for anything, so the order does not matter)."""
        d0, outs, ds, spawned = self.fresh(), [], [], []
        if any(self.use[c.fn] for c in e.calls):  # else no call takes a depth (and this
            self.emit(ind, f"{d0} = d")  # function, recording nothing, may have none)
        still = False  # a call that leaves the depth at d0
        for c in e.calls:
            use = self.use[c.fn]
            args = [self.atom(a) for a in c.args] + ([d0] if use else [])
            call = f"{fn(c.fn)}({', '.join(args)})"
            if c.fn in self.fibers:
                spawned.append(call)
                outs.append(None)
                continue
            r = self.fresh()
            if use == MOVES:
                dd = self.fresh()
                self.emit(ind, f"{r}, {dd} = {call}")
                ds.append(dd)
            else:
                self.emit(ind, f"{r} = {call}")
                still = True
            outs.append(r)
        if spawned:
            r = self.fresh()
            self.emit(ind, f"{r} = yield ({SPAWN}, ({''.join(g + ', ' for g in spawned)}))")
            k = 0
            for j, o in enumerate(outs):
                if o is None:
                    outs[j] = f"{r}[{k}][0]"
                    ds.append(f"{r}[{k}][1]")
                    k += 1
        self.emit(ind, f"{target} = ({''.join(o + ', ' for o in outs)})")
        if still and ds:
            ds.append(d0)
        if ds:  # else every call left the depth at d0, which is d
            self.emit(ind, f"d = max({', '.join(ds)})" if len(ds) > 1 else f"d = {ds[0]}")

    def map(self, target: str, e: Map, ind: int) -> None:
        extra = "".join(self.atom(a) + ", " for a in e.extra)
        xs = self.atom(e.xs)
        items = self.fresh()
        self.emit(ind, f"{items} = to_list({xs})")
        if e.fn in self.fibers:
            r = self.fresh()
            self.emit(
                ind,
                f"{r} = (yield ({SPAWN}, tuple({fn(e.fn)}(x, {extra}d) for x in {items}))) "
                f"if {items} else ()",
            )
        elif self.use[e.fn] != MOVES:  # the depth is unchanged
            d = "d" if self.use[e.fn] else ""
            self.emit(ind, f"{target} = from_list([{fn(e.fn)}(x, {extra}{d}) for x in {items}])")
            return
        else:
            r = self.fresh()
            self.emit(ind, f"{r} = [{fn(e.fn)}(x, {extra}d) for x in {items}]")
        self.emit(ind, f"{target} = from_list([x[0] for x in {r}])")
        self.emit(ind, f"d = max([d] + [x[1] for x in {r}])")


def _read_only(body: Expr) -> frozenset[str]:
    """Generated names of the variables that are only ever tensor-read (``item``/``argmax``)
    in ``body``: no kernel or value uses them, so the read is their only consumer."""
    reads: dict[str, int] = {}
    uses: dict[str, int] = {}
    for x in walk(body):
        if type(x) is Var:
            uses[x.name] = uses.get(x.name, 0) + 1
        elif type(x) is OpCall and x.op in ("item", "argmax") and type(x.args[0]) is Var:
            reads[x.args[0].name] = reads.get(x.args[0].name, 0) + 1
    return frozenset(v(n) for n, k in reads.items() if uses[n] == k)


def _yields(e: Expr, fibers) -> bool:
    return (
        isinstance(e, OpCall)
        and e.op in READ_OPS
        or isinstance(e, (FnCall, Map))
        and e.fn in fibers
        or isinstance(e, Parallel)
        and any(c.fn in fibers for c in e.calls)
        or isinstance(e, Phase)
    )


def generate_host(
    m: Module, fibers: frozenset[str], base: int, independence: bool = False
) -> HostProgram:
    """Python source of the host program: ``make(recorders, ...)`` returns the entry.

    ``independence``: depths follow data dependencies inside blocks (see :meth:`_Gen.block`)."""
    kernels = [f.name for f in m.functions if f.is_kernel]
    g = _Gen(m, fibers, kernels, base, independence)
    rec = ", ".join(f"R{i}" for i in range(len(kernels)))
    g.emit(
        0,
        f"def make({rec}{', ' if kernels else ''}AdtValue, to_list, from_list, WEIGHTS, fbits):",
    )
    g.emit(1, '"""Host program; R<k> records a node of kernel k: (key, out, inst, *args)."""')
    g.emit(1, "nv = 0")
    g.emit(1, "inst = 0")
    for f in m.functions:
        if not f.is_kernel:
            g.function(f)
    g.emit(1, "def start(i, first_value=None):")
    g.emit(2, '"""Set the instance number and the next free value id."""')
    g.emit(2, "nonlocal inst, nv")
    g.emit(2, "inst = i")
    g.emit(2, "if first_value is not None:")
    g.emit(3, "nv = first_value")
    g.emit(1, "def next_value():")
    g.emit(2, "return nv")
    g.emit(1, f"return {fn(m.entry)}, start, next_value")
    return HostProgram(
        "\n".join(_unused_depths_dropped(g.lines)) + "\n",
        tuple(kernels),
        fibers,
        m.entry,
        tuple(sorted(g.weight_values)),
    )


_DEPTH_SNAPSHOT = re.compile(r"^\s*(_d\d+) = d$")
_DEPTH_NAME = re.compile(r"\b_d\d+\b")


def _unused_depths_dropped(lines: list[str]) -> list[str]:
    """The program without the depth snapshots ``_dN = d`` that nothing reads (the
    independence bookkeeping takes one at every step; most are never needed)."""
    used: set[str] = set()
    for line in lines:
        m = _DEPTH_SNAPSHOT.match(line)
        names = _DEPTH_NAME.findall(line)
        used.update(names[1:] if m else names)
    return [ln for ln in lines if not ((m := _DEPTH_SNAPSHOT.match(ln)) and m[1] not in used)]
