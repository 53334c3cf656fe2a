"""Random well-typed programs of the modelling language, for the differential fuzzer.

``generate_program(src)`` writes a model source text from a :class:`ChoiceSource`; an
all-zeros choice sequence gives ``def main(x: Tensor[H]) -> Tensor[H]: return x``. The
program is type-directed (expressions in :mod:`acrobat.fuzz.exprs`) and terminates on
every instance by construction:

* functions over ADTs ("consumers", one or two mutually recursive per ADT type) match
  on their argument and call consumers only on its fields (structural recursion);
* other functions ("helpers") are created on demand, each only calling newer helpers, and
  helpers reachable from a consumer never call consumers;
* loops run ``for i in range(n)`` / ``while k < n`` with a counter and small host bounds
  (instance ints enter bounds only as ``n % 3``), or ``for x in xs`` over a List in scope
  (statements in :mod:`acrobat.fuzz.stmts`, host values in :mod:`acrobat.fuzz.hosts`).

``generate_instances`` (in :mod:`acrobat.fuzz.instances`) draws inputs for a parsed module.
"""

from __future__ import annotations

from dataclasses import dataclass

from acrobat.fuzz.choices import ChoiceSource
from acrobat.fuzz.exprs import Ctx, ExprGen
from acrobat.fuzz.instances import generate_instances
from acrobat.fuzz.stmts import MAX_FUNCTIONS, MAX_HELPER_DEPTH, StmtGen
from acrobat.ir.types import (
    BOOL,
    FLOAT,
    INT,
    AdtType,
    ScalarType,
    TensorType,
    TupleType,
    Type,
    TypeParam,
    substitute,
)

__all__ = ["GeneratedProgram", "generate_program", "generate_instances"]

_TP = TypeParam("T")
GENERIC_LAST = """def g_last(xs: List[T], d: T) -> T:
    out = d
    for x in xs:
        out = x
    return out"""
"""The generic helper generated programs call (:meth:`HostGen.generic_last`)."""


@dataclass(frozen=True)
class GeneratedProgram:
    """A generated model: its source and the features it uses (for coverage)."""

    source: str
    features: frozenset[str]


def generate_program(src: ChoiceSource) -> GeneratedProgram:
    """A random well-typed, terminating program drawn from ``src``."""
    g = _Gen(src)
    text = g.program()
    return GeneratedProgram(text, frozenset(g.feat))


class _Gen(ExprGen, StmtGen):
    def __init__(self, src: ChoiceSource):
        self.src = src
        self.feat: set[str] = set()
        self.counter = 0
        h = src.choice([2, 3, 1, 4])
        r = src.choice([3, 2, 1, 4])
        v = src.choice([4, 5])
        self.sizes = {"H": h, "R": r, "V": v, "D": 2 * h}
        self.size_src = {"H": f'Size("H", {h})', "R": f'Size("R", {r})'}
        self.size_src |= {"V": f'Size("V", {v})', "D": "2 * H"}
        self.vocab = v
        self.dims = [h, r, 1, 2 * h]
        self.params: dict[str, tuple[int, ...]] = {}
        self.adts: dict[str, tuple[tuple[str, ...], list[tuple[str, list[Type]]]]] = {
            "List": (("T",), [("Nil", []), ("Cons", [_TP, AdtType("List", (_TP,))])]),
            "Option": (("T",), [("Nothing", []), ("Some", [_TP])]),
        }
        self.declared: list[str] = []  # ADT names to print, in order
        self.funcs: list[str] = []
        self.consumers: dict[Type, tuple[list[str], Type, list[Type]]] = {}
        self.calls: dict[str, set[str]] = {}
        self.reads: set[str] = set()
        self.sites: list[tuple[str, list[str]]] = []
        self.stack: list[str] = []
        self.may_consume = True
        self.helper_depth = 0
        self.frozen: set[str] = set()  # loop counters: never reassigned
        self.early_in_main = False
        self.consts: dict[str, tuple[Type, str]] = {}  # host constants: type, literal
        self.generic = False  # the generic helper g_last is called

    # -- names and text --------------------------------------------------------------
    def fresh(self, base: str) -> str:
        self.counter += 1
        return f"{base}{self.counter}"

    def dim_text(self, v: int) -> str:
        for name, val in self.sizes.items():
            if val == v:
                if name == "D":
                    self.feat.add("size:derived")
                return name
        return str(v)

    def shape_text(self, s: tuple[int, ...]) -> str:
        if len(s) == 1:
            return f"({self.dim_text(s[0])},)"
        return "(" + ", ".join(self.dim_text(x) for x in s) + ")"

    def ty(self, t: Type) -> str:
        if isinstance(t, TensorType):
            return "Tensor[" + (", ".join(self.dim_text(x) for x in t.shape) or "()") + "]"
        if isinstance(t, ScalarType):
            return t.kind
        if isinstance(t, TupleType):
            return "tuple[" + ", ".join(self.ty(f) for f in t.fields) + "]"
        if isinstance(t, TypeParam):
            return t.name
        assert isinstance(t, AdtType)
        if not t.args:
            return t.name
        return f"{t.name}[" + ", ".join(self.ty(a) for a in t.args) + "]"

    def shape(self, rank: int | None = None) -> tuple[int, ...]:
        if rank is None:
            rank = self.src.weighted([(5, 1), (3, 2), (1, 0), (1, 3)])
        return tuple(self.src.choice(self.dims) for _ in range(rank))

    def weight(self, s: tuple[int, ...], fresh: bool | None = None) -> str:
        same = [n for n, q in self.params.items() if q == s]
        if fresh is None:
            fresh = not same or self.src.boolean(0.3)
        if not fresh and same:
            return self.src.choice(same)
        name = f"W{len(self.params)}"
        self.params[name] = s
        self.feat.add(f"param:rank{len(s)}")
        return name

    def read(self, op: str) -> None:
        self.ops(op)
        self.feat.add("fiber")
        if self.stack:
            self.reads.add(self.stack[-1])

    def call(self, name: str) -> None:
        if self.stack:
            self.calls.setdefault(self.stack[-1], set()).add(name)

    # -- ADTs ------------------------------------------------------------------------
    def declare(self, name: str) -> None:
        if name in self.adts:
            return
        th = TensorType((self.sizes["H"],))
        if name == "Tree":
            leaf = self.src.choice(
                [[INT], [th], [INT, th], [FLOAT, th], [TensorType((self.sizes["R"], 1))]]
                + [[AdtType("Option", (th,))], [BOOL, INT]]
            )
            node = self.src.choice([[], [th], [INT]])
            tree = AdtType("Tree")
            self.adts[name] = ((), [("Leaf", leaf), ("Node", [tree, tree, *node])])
        elif name in ("Rose", "Forest"):
            rose, forest = AdtType("Rose"), AdtType("Forest")
            self.adts["Rose"] = ((), [("RNode", [th, forest])])
            self.adts["Forest"] = ((), [("FNil", []), ("FCons", [rose, forest])])
            self.declared += ["Rose", "Forest"]
            return
        elif name == "Pair":
            self.adts[name] = (("T",), [("MkPair", [_TP, _TP])])
        elif name == "Chain":
            chain = AdtType("Chain", (_TP,))
            self.adts[name] = (("T",), [("End", [_TP]), ("Link", [_TP, chain])])
        self.declared.append(name)

    def ctors(self, t: AdtType) -> list[tuple[str, list[Type]]]:
        tps, ctors = self.adts[t.name]
        m = dict(zip(tps, t.args))
        return [(c, [substitute(f, m) for f in fs]) for c, fs in ctors]

    def gen_type(self, depth: int) -> Type:
        opts = [(8, "tensor"), (3, "int"), (1, "float"), (1, "bool")]
        if depth > 0:
            opts += [(3, "List"), (1, "Option"), (3, "Tree"), (1, "Rose"), (1, "Pair")]
            opts += [(1, "Chain")]
        k = self.pick(opts)
        if k == "tensor":
            return TensorType(self.shape() if self.src.boolean(0.4) else (self.sizes["H"],))
        if k in ("int", "float", "bool"):
            return {"int": INT, "float": FLOAT, "bool": BOOL}[k]
        self.declare(k)
        if k in ("Tree", "Rose"):
            self.feat.add("adt:recursive")
            if k == "Rose":
                self.feat.add("adt:mutual")
            return AdtType(k)
        self.feat.add({"List": "adt:list", "Option": "adt:option"}.get(k, "adt:generic"))
        if k in ("List", "Chain"):
            self.feat.add("adt:recursive")
        if k == "List" and self.src.boolean(0.25):
            h = TensorType((self.sizes["H"],))
            pair = self.src.choice([(h, INT), (INT, FLOAT), (h, h)])
            return AdtType(k, (TupleType(pair),))
        return AdtType(k, (self.gen_type(depth - 1),))

    # -- functions -------------------------------------------------------------------
    def function(self, name, params, ret, body) -> None:
        """Generate a function: ``body(ctx, lines)`` writes its statements."""
        self.stack.append(name)
        head = ", ".join(f"{n}: {self.ty(t)}" for n, t in params)
        lines = [f"def {name}({head}) -> {self.ty(ret)}:"]
        body(list(params), lines)
        self.stack.pop()
        self.funcs.append("\n".join(lines))

    def helper(self, ctx: Ctx, ret: Type, twins: bool = False) -> str | None:
        """A call of a new non-recursive function returning ``ret``, with arguments
        taken from ``ctx`` (and sometimes a weight passed as an argument). With ``twins``
        (a tensor expression is wanted, not a call), a helper taking a weight may be
        called twice, with two weights, and the results added."""
        if self.helper_depth >= MAX_HELPER_DEPTH or len(self.funcs) >= MAX_FUNCTIONS:
            return None
        name = self.fresh("f")
        args, params = [], []
        for _ in range(self.src.integer(0, min(3, len(ctx)))):
            n, t = self.src.choice(ctx)
            if n not in args:
                args.append(n)
                params.append((self.fresh("p"), t))
        twin = None  # the same call with another weight of the same shape
        if self.src.boolean(0.25):
            s = self.src.choice([(self.vocab, self.sizes["H"]), self.shape(2), self.shape(1)])
            args.append(self.weight_expr(s, ctx))
            params.append((self.fresh("w"), TensorType(s)))
            self.feat.add("weight:arg")
            if (
                twins
                and not self.helper_depth
                and isinstance(ret, TensorType)
                and self.src.boolean(0.5)
            ):
                # called twice with two weights: specialization clones the helper, and the
                # clones' kernels are twins (acrobat/codegen/twins.py); not inside another
                # helper, where the calls would double at every level
                twin = args[:-1] + [self.weight(s, fresh=True)]
                self.feat.add("weight:twins")
        self.helper_depth += 1
        self.function(name, params, ret, lambda c, ls: self.body(c, ls, ret, 2, 1))
        self.helper_depth -= 1
        self.call(name)
        if twin is not None:
            return f"({name}({', '.join(args)}) + {name}({', '.join(twin)}))"
        return f"{name}({', '.join(args)})"

    def consumer(self, t: AdtType) -> tuple[list[str], Type, list[Type]]:
        """One or two (mutually recursive) functions matching on ``t``."""
        if t in self.consumers:
            return self.consumers[t]
        recursive = any(t in fs for _, fs in self.ctors(t))
        k = 2 if recursive and self.src.boolean(0.2) else 1
        names = [self.fresh("rec") for _ in range(k)]
        if k == 2:
            self.feat.add("fn:mutual")
        ret = self.src.weighted(
            [(8, TensorType((self.sizes["H"],))), (3, TensorType(self.shape()))]
            + [(1, TupleType((TensorType((self.sizes["H"],)), INT)))]
        )
        extras = [
            self.src.weighted([(3, TensorType((self.sizes["H"],))), (2, INT), (1, FLOAT)])
            for _ in range(self.src.weighted([(3, 0), (3, 1), (1, 2)]))
        ]
        self.consumers[t] = (names, ret, extras)
        saved, self.may_consume = self.may_consume, False
        for i, name in enumerate(names):
            params = [(self.fresh("x"), t)] + [(self.fresh("e"), e) for e in extras]
            nxt = names[(i + 1) % k]
            self.function(name, params, ret, lambda c, ls, n=nxt: self.match_body(c, ls, n, t))
        self.may_consume = saved
        return self.consumers[t]

    def match_body(self, ctx: Ctx, lines: list[str], again: str, t: AdtType) -> None:
        names, ret, extras = self.consumers[t]
        x = ctx[0][0]
        if self.src.boolean(0.2):
            self.stmts(ctx, lines, "    ", 1, ret, top=False)
        self.feat.add("stmt:match")
        lines.append(f"    match {x}:")
        ctors = self.ctors(t)
        wild = len(ctors) >= 2 and self.src.boolean(0.2)
        for j, (c, fields) in enumerate(ctors):
            arm = list(ctx)
            if wild and j == len(ctors) - 1:
                self.feat.add("match:wildcard")
                lines.append("        case _:")
            else:
                fnames = [self.fresh("y") if self.src.boolean(0.85) else "_" for _ in fields]
                lines.append(f"        case {c}({', '.join(fnames)}):")
                arm += [(n, f) for n, f in zip(fnames, fields) if n != "_"]
                calls = []
                for n, f in zip(fnames, fields):
                    if n == "_" or not isinstance(f, AdtType):
                        continue
                    callee, r, ex = (again, ret, extras) if f == t else self.sub_consumer(f)
                    if callee is None:
                        continue
                    ex_args = [self.value(e, arm, 1) for e in ex]
                    self.call(callee)
                    calls.append((f"{callee}({', '.join([n, *ex_args])})", r))
                self.recursive_calls(calls, arm, lines, "            ")
            self.body(arm, lines, ret, 2, 2, squash=True, indent="            ")

    def sub_consumer(self, f: AdtType):
        names, r, ex = self.consumer(f)
        return names[0], r, ex

    def recursive_calls(self, calls, ctx: Ctx, lines: list[str], ind: str) -> None:
        if len(calls) >= 2 and self.src.boolean(0.6):
            self.feat.add("expr:parallel")
            outs = [self.fresh("r") for _ in calls[:2]]
            lines.append(f"{ind}{', '.join(outs)} = parallel({calls[0][0]}, {calls[1][0]})")
            self.sites.append(("parallel", [c.split("(")[0] for c, _ in calls[:2]]))
            ctx += [(o, r) for o, (_, r) in zip(outs, calls[:2])]
            calls = calls[2:]
        for c, r in calls:
            o = self.fresh("r")
            lines.append(f"{ind}{o} = {c}")
            ctx.append((o, r))

    # -- statements ------------------------------------------------------------------
    def body(self, ctx, lines, ret, most, budget, squash=False, indent="    ", main=False):
        self.stmts(ctx, lines, indent, self.src.integer(0, most), ret, top=True, main=main)
        lines.append(f"{indent}return {self.value(ret, ctx, self.src.integer(0, 3), squash)}")

    def stmts(self, ctx, lines, ind, n, ret, top=False, main=False, loop=False) -> None:
        for _ in range(n):
            self.stmt(ctx, lines, ind, ret, top, main, loop)

    def stmt(self, ctx, lines, ind, ret, top, main, loop) -> None:
        d = self.src.integer(0, 3)
        nested = len(ind) < 16
        adts = [(n, t) for n, t in ctx if isinstance(t, AdtType)]
        lists = [(n, t) for n, t in adts if t.name == "List"]
        opts = [(6, "assign"), (2, "aug"), (2, "unpack"), (2, "host")]
        if nested:
            opts += [(2, "if"), (1, "while"), (1, "for")]
            if adts:
                opts.append((2, "match"))
            if lists:
                opts.append((3, "for_list"))
        if top and not loop:
            opts.append((1, "early"))
        if main and not self.early_in_main:
            opts.append((1, "phase"))
        if lists:
            opts.append((2, "map"))
        if adts and self.may_consume:
            opts.append((3, "consume"))
        opts.append((1, "parallel"))
        k = self.pick(opts)
        if k == "assign":
            t = self.local_type(ctx)
            v = self.fresh("v")
            ann = f": {self.ty(t)}" if isinstance(t, AdtType) or self.src.boolean(0.1) else ""
            lines.append(f"{ind}{v}{ann} = {self.value(t, ctx, d, loop)}")
            ctx.append((v, t))
        elif k == "aug":
            self.aug(ctx, lines, ind, d, loop)
        elif k == "unpack":
            self.unpack(ctx, lines, ind, d)
        elif k == "host":
            t = self.src.choice([INT, FLOAT, BOOL])
            v = self.fresh("n")
            lines.append(f"{ind}{v} = {self.value(t, ctx, d + 1)}")
            ctx.append((v, t))
        elif k in ("if", "match"):
            self.join(k, ctx, lines, ind, ret, d, loop, adts)
        elif k == "early":
            self.feat.add("stmt:early_return")
            self.early_in_main |= main  # what follows is no longer at main's top level
            lines.append(f"{ind}if {self.boolean(ctx, d)}:")
            arm = list(ctx)
            self.stmts(arm, lines, ind + "    ", self.src.integer(0, 1), ret)
            lines.append(f"{ind}    return {self.value(ret, arm, d, loop)}")
        elif k in ("while", "for"):
            self.loop(k, ctx, lines, ind, ret, d)
        elif k == "for_list":
            self.for_list(ctx, lines, ind, ret, d, lists)
        elif k == "phase":
            self.feat.add("phase")
            lines.append(f"{ind}phase()")
        elif k == "map":
            self.map_stmt(ctx, lines, ind, lists, d)
        elif k == "consume":
            n, t = self.src.choice(adts)
            names, r, ex = self.consumer(t)
            args = [n, *(self.value(e, ctx, 1) for e in ex)]
            self.call(names[0])
            v = self.fresh("c")
            lines.append(f"{ind}{v} = {names[0]}({', '.join(args)})")
            ctx.append((v, r))
        else:
            self.parallel(ctx, lines, ind)

    def local_type(self, ctx: Ctx) -> Type:
        tensors = [t for _, t in ctx if isinstance(t, TensorType)]
        k = self.src.weighted([(4, "same"), (3, "shape"), (1, "tuple"), (1, "host"), (1, "adt")])
        if k == "same" and tensors:
            return self.src.choice(tensors)
        if k == "tuple":
            return TupleType((TensorType(self.shape()), self.src.choice([INT, TensorType((1,))])))
        if k == "host":
            return self.src.choice([INT, FLOAT, BOOL])
        adts = [t for _, t in ctx if isinstance(t, AdtType)]
        if k == "adt" and adts:
            return self.src.choice(adts)
        return TensorType(self.shape())

    # -- the program -----------------------------------------------------------------
    def program(self) -> str:
        params = [(self.fresh("x"), self.gen_type(2)) for _ in range(self.src.integer(1, 3))]
        ret = self.src.weighted(
            [(8, TensorType((self.sizes["H"],))), (2, TensorType(self.shape()))]
            + [(1, TupleType((TensorType((self.sizes["H"],)), TensorType(self.shape()))))]
            + [(1, TupleType((TensorType((self.sizes["H"],)), INT))), (1, FLOAT)]
            + [(1, AdtType("List", (TensorType((self.sizes["H"],)),)))]
        )
        if isinstance(ret, AdtType):
            self.feat.add("ret:adt")

        def main_body(ctx, lines):
            for n, t in list(ctx):
                if isinstance(t, AdtType) and self.src.boolean(0.8):
                    names, r, ex = self.consumer(t)
                    args = [n, *(self.value(e, ctx, 1) for e in ex)]
                    self.call(names[0])
                    v = self.fresh("c")
                    lines.append(f"    {v} = {names[0]}({', '.join(args)})")
                    ctx.append((v, r))
            self.body(ctx, lines, ret, 6, 3, main=True)

        self.function("main", params, ret, main_body)
        self.mixes()
        out = []
        out += [f"{n} = {s}" for n, s in self.size_src.items()]
        out += [f"{n} = {v}" for n, (_, v) in self.consts.items()]
        if self.generic or any(self.adts[a][0] for a in self.declared):
            out.append('T = TypeVar("T")')
        if self.generic:
            self.funcs.insert(0, GENERIC_LAST)
        out += [
            f"{n}: Param[{', '.join(self.dim_text(x) for x in s)}]" for n, s in self.params.items()
        ]
        for a in self.declared:
            tps, ctors = self.adts[a]
            out.append(f"\n\nclass {a}(ADT{'[T]' if tps else ''}):")
            for c, fs in ctors:
                inner = ", ".join(self.ty(f) for f in fs)
                out.append(f"    {c}: ({inner}{',' if len(fs) == 1 else ''})")
        return "\n".join(out) + "\n\n\n" + "\n\n\n".join(reversed(self.funcs)) + "\n"

    def mixes(self) -> None:
        reads = set(self.reads)
        changed = True
        while changed:
            changed = False
            for f, cs in self.calls.items():
                if f not in reads and cs & reads:
                    reads.add(f)
                    changed = True
        for kind, callees in self.sites:
            flags = {c in reads for c in callees}
            if kind == "parallel" and flags == {True, False}:
                self.feat.add("mix:parallel_fiber_nonfiber")
            if kind == "map" and True in flags:
                self.feat.add("mix:map_fiber")
