"""Type-directed expressions for the program generator (see :mod:`acrobat.fuzz.generate`).

Every method builds source text of one type from the variables in scope (``ctx``, a list
of ``(name, type)``), declaring weights on demand. Option 0 of every draw is the simplest:
a variable (or a constant) rather than an op, fewer and smaller operands.
"""

from __future__ import annotations

import itertools
import math

from acrobat.fuzz.hosts import Ctx, HostGen
from acrobat.ir.types import BOOL, FLOAT, INT, AdtType, TensorType, TupleType, Type

UNARY = [
    ("sigmoid({})", ("sigmoid",)),
    ("tanh({})", ("tanh",)),
    ("relu({})", ("relu",)),
    ("gelu({})", ("gelu",)),
    ("exp(tanh({}))", ("exp", "tanh")),
    ("log(sigmoid({}))", ("log", "sigmoid")),
    ("sqrt(sigmoid({}))", ("sqrt", "sigmoid")),
    ("(-{})", ("neg",)),
    ("neg({})", ("neg",)),
]
BINARY = [
    ("({} + {})", ("add",)),
    ("({} - {})", ("sub",)),
    ("({} * {})", ("mul",)),
    ("({} / (1.0 + sigmoid({})))", ("div", "add", "sigmoid")),
    ("maximum({}, {})", ("maximum",)),
    ("minimum({}, {})", ("minimum",)),
    ("add({}, {})", ("add",)),
    ("sub({}, {})", ("sub",)),
    ("div({}, (2.0 + tanh({})))", ("div", "add", "tanh")),
]
LITERAL = [
    ("({} * 2.0)", ("mul",)),
    ("(0.5 + {})", ("add",)),
    ("({} - 1)", ("sub",)),
    ("({} / 2.0)", ("div",)),
    ("({} * H)", ("mul",)),
    ("(1.0 - {})", ("sub",)),
]


def _is_list(t: Type) -> bool:
    return isinstance(t, AdtType) and t.name == "List"


def prod(s: tuple[int, ...]) -> int:
    return math.prod(s)


class ExprGen(HostGen):
    """Mixin: needs ``src``, ``feat``, ``dims``, ``weight()``, ``shape_text()``, ``helper()``
    and ``read()`` from :class:`acrobat.fuzz.generate._Gen`."""

    # -- tensors ---------------------------------------------------------------------
    def tensor(self, s: tuple[int, ...], ctx: Ctx, d: int) -> str:
        if d <= 0:
            return self.leaf(s, ctx)
        r = len(s)
        opts = [(4, self.leaf), (3, self.t_unary), (4, self.t_binary), (1, self.t_literal)]
        if r >= 1:
            opts += [(3, self.t_dense), (1, self.t_concat), (1, self.t_split), (1, self.t_slice)]
            opts += [(1, self.t_reshape), (1, self.t_softmax), (1, self.t_layer_norm)]
        if r <= 2:
            opts.append((1, self.t_matmul))
        if r == 3:
            opts.append((2, self.t_bmm))
        if r == 1:
            opts.append((2, self.t_embed))
        if r >= 2:
            opts.append((1, self.t_transpose))
        opts += [(2, self.t_reduce), (1, self.t_create), (1, self.t_ifexp), (1, self.t_call)]
        opts += [(1, self.t_proj), (2, self.t_scalar)]
        return self.pick(opts)(s, ctx, d - 1)

    def pick(self, opts):
        """``weighted``, but a lone option is taken without a draw: ChoiceSource.weighted
        records a draw for it from an RNG yet none on replay, so replays would drift."""
        return opts[0][1] if len(opts) == 1 else self.src.weighted(opts)

    def ops(self, *names: str) -> None:
        self.feat.update("op:" + n for n in names)

    def vars_of(self, ctx: Ctx, ty: Type) -> list[str]:
        return [n for n, t in ctx if t == ty]

    def leaf(self, s, ctx, d=0) -> str:
        vs = self.vars_of(ctx, TensorType(s))
        others = [(n, t) for n, t in ctx if isinstance(t, TensorType) and t.shape != s]
        opts = [(6, "var")] if vs else []
        opts += [(1, "create"), (3, "weight")] if s else [(1, "create")]
        if others:
            opts.append((3, "adapt"))
        if self.lists_of(ctx, TensorType(s)):
            opts += [(2, "nth"), (1, "generic"), (2, "reduce")]
        keys = [t for _, t in ctx if _is_list(t) and len(getattr(t.args[0], "shape", ())) == 1]
        if keys and self.lists_of(ctx, TensorType(s)):
            opts.append((1, "attend"))
        k = self.pick(opts)
        if k == "var":
            return self.src.choice(vs)
        if k == "nth":
            return self.nth(ctx, d, TensorType(s))
        if k == "generic":
            return self.generic_last(ctx, TensorType(s), self.t_create(s, ctx, 0))
        if k == "reduce":  # one segmented launch a pass (ir/list_ops.py, runtime/segments.py)
            red = self.src.choice(["sum", "max"])
            self.feat.update(("expr:list_" + red, "op:list_" + red))
            return f"{red}({self.src.choice(self.lists_of(ctx, TensorType(s)))})"
        if k == "attend":
            key = self.src.choice(keys)
            self.feat.update(("expr:attend", "op:list_attend"))
            ks = self.src.choice(self.lists_of(ctx, key.args[0]))
            vs = self.src.choice(self.lists_of(ctx, TensorType(s)))
            return f"attend({ks}, {vs}, {self.tensor(key.args[0].shape, ctx, 0)})"
        if k == "weight":
            return self.weight_expr(s, ctx)
        if k == "create":
            return self.t_create(s, ctx, 0)
        n, t = self.src.choice(others)
        q = t.shape
        if s and q and q[:-1] == s[:-1]:
            self.ops("dense")
            return f"dense({n}, {self.weight((s[-1], q[-1]))})"
        red = self.src.choice(["mean", "sum", "max"])
        self.ops(red)
        if not s:
            return f"{red}({n})"
        self.ops("ones", "mul")
        return f"({self.t_create(s, ctx, 0, 'ones')} * tanh({red}({n})))"

    def weight_expr(self, s, ctx) -> str:
        """A weight of shape ``s``; sometimes one chosen by a conditional expression."""
        if self.src.boolean(0.1):
            self.feat.update({"weight:ifexp", "expr:ifexp"})
            a, b = self.weight(s, fresh=False), self.weight(s, fresh=True)
            return f"({a} if {self.boolean(ctx, -1)} else {b})"
        return self.weight(s)

    def operand(self, s, ctx, d) -> str:
        if s and self.src.boolean(0.3):
            return self.weight_expr(s, ctx)
        return self.tensor(s, ctx, d)

    def origin(self, text: str, ctx: Ctx) -> str:
        if text in self.params:
            return "w"
        if any(text == n for n, _ in ctx):
            return "x"
        return "e"

    def t_unary(self, s, ctx, d) -> str:
        tmpl, ops = self.src.choice(UNARY)
        self.ops(*ops)
        return tmpl.format(self.tensor(s, ctx, d))

    def variant(self, s):
        k = self.src.integer(0, len(s))
        return tuple(1 if self.src.boolean(0.3) else x for x in s[k:])

    def t_binary(self, s, ctx, d) -> str:
        mode = self.src.choice(["same", "b", "a", "complement"] if s else ["same"])
        sa = sb = s
        if mode == "b":
            sb = self.variant(s)
        elif mode == "a":
            sa = self.variant(s)
        elif mode == "complement":
            mask = [self.src.boolean() for _ in s]
            sa = tuple(1 if m else x for m, x in zip(mask, s))
            sb = tuple(x if m else 1 for m, x in zip(mask, s))
        a, b = self.operand(sa, ctx, d), self.operand(sb, ctx, d)
        self.feat.add(f"bcast:{len(sa)}x{len(sb)}")
        self.feat.add(f"bcast:{self.origin(a, ctx)}{self.origin(b, ctx)}")
        if sa != sb:
            self.feat.add(f"bcast:{sa}x{sb}".replace(" ", ""))
        tmpl, ops = self.src.choice(BINARY)
        self.ops(*ops)
        return tmpl.format(a, b)

    def t_literal(self, s, ctx, d) -> str:
        tmpl, ops = self.src.choice(LITERAL)
        self.ops(*ops)
        self.feat.add("bcast:literal")
        return tmpl.format(self.tensor(s, ctx, d))

    def t_scalar(self, s, ctx, d) -> str:
        """A tensor and a small host int or float: ``x * s``, ``s * x``, ``x / n``, ``x + s``,
        ``x - n`` (the frontend makes the host value a ``scalar`` op)."""
        x = self.tensor(s, ctx, d)
        form = self.src.choice(["x * s", "s * x", "x / n", "x + s", "x - n", "x * n"])
        op = {"*": "mul", "/": "div", "+": "add", "-": "sub"}[form.split()[1]]
        if form.endswith("n"):
            h, literal = self.tame_int(ctx, d, positive=form == "x / n"), False
        else:
            h, literal = self.tame_real(ctx, d)
        self.ops(op)
        if not literal:
            self.ops("scalar")
            self.feat.add("bcast:host_scalar")
        a, sym, _ = form.split()
        return f"({x} {sym} {h})" if a == "x" else f"({h} {sym} {x})"

    def matrix(self, s, ctx) -> str:
        """A 2-d operand of dense: usually a weight, sometimes a variable (a weight
        passed as an argument) of that shape."""
        vs = self.vars_of(ctx, TensorType(s))
        if vs and self.src.boolean(0.5):
            return self.src.choice(vs)
        return self.weight_expr(s, ctx)

    def t_dense(self, s, ctx, d) -> str:
        din = self.src.choice(self.dims)
        x = self.tensor(s[:-1] + (din,), ctx, d)
        w = self.matrix((s[-1], din), ctx)
        self.ops("dense")
        if self.src.boolean(0.4):
            self.feat.add("dense:bias")
            return f"dense({x}, {w}, {self.matrix((s[-1],), ctx)})"
        return f"dense({x}, {w})"

    def t_matmul(self, s, ctx, d) -> str:
        k = self.src.choice(self.dims)
        if not s:
            sa, sb = (k,), (k,)
        elif len(s) == 1:
            sa, sb = ((k,), (k, s[0])) if self.src.boolean() else ((s[0], k), (k,))
        else:
            sa, sb = (s[0], k), (k, s[1])
        a, b = self.operand(sa, ctx, d), self.operand(sb, ctx, d)
        self.ops("matmul")
        return f"matmul({a}, {b})" if self.src.boolean() else f"({a} @ {b})"

    def t_bmm(self, s, ctx, d) -> str:
        g, m, n = s
        k = self.src.choice(self.dims)
        tb = self.src.boolean()
        a = self.operand((g, m, k), ctx, d)
        b = self.operand((g, n, k) if tb else (g, k, n), ctx, d)
        self.ops("batch_matmul")
        return f"batch_matmul({a}, {b}{', transpose_b=True' if tb else ''})"

    def t_embed(self, s, ctx, d) -> str:
        table = self.matrix((self.vocab, s[0]), ctx)
        self.ops("embed")
        return f"embed({table}, {self.integer(ctx, d, index=True)})"

    def t_concat(self, s, ctx, d) -> str:
        axes = [i for i, x in enumerate(s) if x >= 2]
        if not axes:
            return self.leaf(s, ctx)
        a = self.src.choice(axes)
        d1 = self.src.integer(1, s[a] - 1)
        x = self.tensor(s[:a] + (d1,) + s[a + 1 :], ctx, d)
        y = self.tensor(s[:a] + (s[a] - d1,) + s[a + 1 :], ctx, d)
        self.ops("concat")
        if a == 0 and self.src.boolean(0.7):
            return f"concat({x}, {y})"
        return f"concat({x}, {y}, axis={a - len(s) if self.src.boolean() else a})"

    def t_split(self, s, ctx, d) -> str:
        a = self.src.integer(0, len(s) - 1)
        n = self.src.choice([2, 3])
        if s[a] * n > 8:
            n = 2
        q = s[:a] + (s[a] * n,) + s[a + 1 :]
        x = self.tensor(q, ctx, d)
        k = self.src.integer(0, n - 1)
        self.ops("split")
        self.feat.add("expr:tuple_index")
        if a == 0:
            return f"split({x}, {n})[{k}]"
        return f"split({x}, {n}, axis={a})[{k}]"

    def t_slice(self, s, ctx, d) -> str:
        a = 0 if self.src.boolean(0.7) else self.src.integer(0, len(s) - 1)
        extra = self.src.integer(1, 2)
        start = self.src.integer(0, extra)
        q = s[:a] + (s[a] + extra,) + s[a + 1 :]
        x = self.tensor(q, ctx, d)
        if a == 0 and self.src.boolean(0.3):  # at a host int: rows looked up with embed
            self.feat.add("expr:offset_slice")
            self.ops("embed", "reshape", "h.mod")
            k = self.int_atom(ctx, d)
            k = f"({k} % {extra + 1})" if self.src.boolean(0.85) else k
            return f"{x}[{k}:{k} + {s[0]}]"
        self.ops("slice")
        if a == 0:
            self.feat.add("expr:slice")
            lo = "" if start == 0 and self.src.boolean() else str(start)
            return f"{x}[{lo}:{start + s[0]}]"
        return f"slice({x}, {start}, {start + s[a]}, {a})"

    def t_reshape(self, s, ctx, d) -> str:
        n = prod(s)
        cands = [(n,)] if len(s) != 1 else []
        if len(s) >= 2:
            cands.append(tuple(reversed(s)))
        if len(s) == 1:
            cands += [(a, n // a) for a in range(1, n + 1) if n % a == 0]
        q = self.src.choice(cands)
        x = self.tensor(q, ctx, d)
        self.ops("reshape")
        if len(s) == 1 and self.src.boolean(0.3):
            return f"reshape({x}, (-1,))"
        return f"reshape({x}, {self.shape_text(s)})"

    def t_transpose(self, s, ctx, d) -> str:
        self.ops("transpose")
        if len(s) == 2:
            x = self.tensor((s[1], s[0]), ctx, d)
            return f"transpose({x})" if self.src.boolean() else f"transpose({x}, (1, 0))"
        p = self.src.choice(list(itertools.permutations(range(len(s)))))
        q = [0] * len(s)
        for i, pi in enumerate(p):
            q[pi] = s[i]
        return f"transpose({self.tensor(tuple(q), ctx, d)}, {tuple(p)})"

    def t_softmax(self, s, ctx, d) -> str:
        x = self.tensor(s, ctx, d)
        self.ops("softmax")
        form = self.src.integer(0, 2)
        a = self.src.integer(-len(s), len(s) - 1)
        return [f"softmax({x})", f"softmax({x}, {a})", f"softmax({x}, axis={a})"][form]

    def t_layer_norm(self, s, ctx, d) -> str:
        x = self.tensor(s, ctx, d)
        g, b = self.operand((s[-1],), ctx, 0), self.operand((s[-1],), ctx, 0)
        self.ops("layer_norm")
        return f"layer_norm({x}, {g}, {b})"

    def t_reduce(self, s, ctx, d) -> str:
        op = self.src.choice(["sum", "mean", "max"])
        modes = ["axis"] if len(s) < 3 else []
        if 1 in s:
            modes.append("keep")
        if not s or all(x == 1 for x in s):
            modes.append("all")
        if not modes:
            return self.leaf(s, ctx)
        mode = self.src.choice(modes)
        self.ops(op)
        new = self.src.choice(self.dims)
        if mode == "axis":
            a = self.src.integer(0, len(s))
            x = self.tensor(s[:a] + (new,) + s[a:], ctx, d)
            ax = a - len(s) - 1 if self.src.boolean(0.3) else a
            return f"{op}({x}, {ax})" if self.src.boolean() else f"{op}({x}, axis={ax})"
        if mode == "keep":
            a = self.src.choice([i for i, x in enumerate(s) if x == 1])
            x = self.tensor(s[:a] + (new,) + s[a + 1 :], ctx, d)
            self.feat.add("reduce:keepdims")
            return f"{op}({x}, axis={a}, keepdims=True)"
        q = self.shape(len(s) if s else None)
        x = self.tensor(q, ctx, d)
        if s:
            self.feat.add("reduce:keepdims")
            return f"{op}({x}, keepdims=True)"
        return f"{op}({x})"

    def t_create(self, s, ctx, d, which=None) -> str:
        which = which or self.src.choice(["zeros", "ones"])
        self.ops(which)
        if len(s) == 1 and self.src.boolean():
            return f"{which}({self.dim_text(s[0])})"
        return f"{which}({self.shape_text(s)})"

    def t_ifexp(self, s, ctx, d) -> str:
        self.feat.add("expr:ifexp")
        return f"({self.tensor(s, ctx, d)} if {self.boolean(ctx, d)} else {self.tensor(s, ctx, d)})"

    def t_call(self, s, ctx, d) -> str:
        call = self.helper(ctx, TensorType(s), twins=True)
        return call if call is not None else self.leaf(s, ctx)

    def t_proj(self, s, ctx, d) -> str:
        ty = TensorType(s)
        tups = [
            (n, i)
            for n, t in ctx
            if isinstance(t, TupleType)
            for i, f in enumerate(t.fields)
            if f == ty
        ]
        if tups:
            n, i = self.src.choice(tups)
            self.feat.add("expr:tuple_index")
            return f"{n}[{i}]"
        other = TensorType(self.shape())
        k = self.src.boolean()
        call = self.helper(ctx, TupleType((other, ty) if k else (ty, other)))
        if call is None:
            return self.leaf(s, ctx)
        self.feat.add("expr:tuple_index")
        return f"{call}[{int(k)}]"

    # -- any type --------------------------------------------------------------------
    def value(self, ty: Type, ctx: Ctx, d: int, squash: bool = False) -> str:
        if isinstance(ty, TensorType):
            e = self.tensor(ty.shape, ctx, d)
            if squash:
                self.ops("tanh")
                return f"tanh({e})"
            return e
        if ty == INT:
            return self.integer(ctx, d)
        if ty == FLOAT:
            return self.real(ctx, d)
        if ty == BOOL:
            return self.boolean(ctx, d)
        if isinstance(ty, TupleType):
            vs = self.vars_of(ctx, ty)
            if vs and self.src.boolean(0.3):
                return self.src.choice(vs)
            parts = [self.value(f, ctx, d, squash) for f in ty.fields]
            if any(p in self.params for p in parts):
                self.feat.add("weight:tuple")
            return "(" + ", ".join(parts) + ("," if len(parts) == 1 else "") + ")"
        assert isinstance(ty, AdtType)
        return self.construct(ty, ctx, d)

    def construct(self, ty: AdtType, ctx: Ctx, d: int) -> str:
        vs = self.vars_of(ctx, ty)
        if vs and self.src.boolean(0.7):
            return self.src.choice(vs)
        ctors = self.ctors(ty)
        name, fields = ctors[0] if d <= 0 else self.src.choice(ctors)
        args = [self.value(f, ctx, d - 1) for f in fields]
        self.feat.add("expr:ctor")
        return f"{name}({', '.join(args)})"
