"""Host values (ints, floats, bools) for the program generator (see
:mod:`acrobat.fuzz.generate`): variables, literals, named host constants, host arithmetic,
``len``/``abs``/``min``/``max``, and reads of tensors (``item``, ``argmax``). Option 0 of
every draw is the simplest.
"""

from __future__ import annotations

from acrobat.ir.types import BOOL, FLOAT, INT, AdtType, TensorType, Type

Ctx = list[tuple[str, Type]]

HOST_INT = [("+", "h.add"), ("-", "h.sub"), ("*", "h.mul")]
# names and values of host constants by type (an int one is 0 or negative)
CONSTS = {
    "int": (["BOS", "NEG", "OFF"], ["0", "-1", "-2"]),
    "float": (["EPS", "SCALE", "GAIN"], ["1e-3", "-0.5", "0.25", "1.5"]),
    "bool": (["FLAG", "DEBUG"], ["False", "True"]),
}


class HostGen:
    """Mixin: needs ``src``, ``feat``, ``ops()``, ``pick()``, ``vars_of()``, ``tensor()``,
    ``shape()`` and ``read()``."""

    # -- named host constants --------------------------------------------------------
    def const(self, ty: Type, zero: bool = False) -> str:
        """A module-level host constant of type ``ty`` (an int one is 0 or negative: a
        positive int would be a size), reused or declared; ``zero``: one worth 0."""
        have = [n for n, (t, v) in self.consts.items() if t == ty and (not zero or v == "0")]
        self.feat.add("decl:host_const")
        if have and self.src.boolean(0.6):
            return self.src.choice(have)
        names, values = CONSTS[ty.kind]
        value = "0" if zero else self.src.choice(values)
        k = len(self.consts)
        name = names[k % len(names)] + ("" if k < len(names) else str(k))
        self.consts[name] = (ty, value)
        return name

    # -- host values -----------------------------------------------------------------
    def integer(self, ctx: Ctx, d: int, index: bool = False) -> str:
        vs = self.vars_of(ctx, INT)
        opts = [(4, "leaf")]
        if d > 0:
            opts += [(2, "arith"), (1, "mod"), (1, "argmax"), (1, "ifexp"), (1, "neg")]
            opts += [(1, "minmax"), (1, "abs"), (1, "conv")]
            if self.lists(ctx):
                opts.append((1, "len"))
            if self.lists_of(ctx, INT):
                opts += [(1, "nth"), (1, "generic")]
            if self.score_lists(ctx):
                opts.append((1, "list_argmax"))
        k = self.pick(opts)
        if index and k != "leaf":
            self.ops("h.mod")
            return f"({self._int(k, ctx, d, vs)} % V)"
        return self._int(k, ctx, d, vs, index)

    def _int(self, k, ctx, d, vs, index=False) -> str:
        if k == "leaf":
            if vs and (index or self.src.boolean(0.8)):
                return self.src.choice(vs)
            if self.src.boolean(0.15):
                return self.const(INT, zero=index)
            return str(self.src.integer(0, 3))
        if k == "arith":
            sym, op = self.src.choice(HOST_INT)
            self.feat.add("host:int_arith")
            self.ops(op)
            b = self.src.integer(1, 3) if sym == "*" else self.integer(ctx, d - 1)
            return f"({self.integer(ctx, d - 1)} {sym} {b})"
        if k == "mod":
            sym, op = self.src.choice([("%", "h.mod"), ("//", "h.floordiv")])
            self.feat.add("host:int_arith")
            self.ops(op)
            n = self.src.integer(2, 4)
            return f"({self.integer(ctx, d - 1)} {sym} {'V' if index else n})"
        if k == "argmax":
            return self.argmax(ctx, d - 1)
        if k == "neg":  # on a non-literal operand, or the frontend folds it away
            op, text = self.src.choice([("h.neg", "(-{})"), ("h.pow", "({} ** {})")])
            self.feat.add("host:int_arith")
            self.ops(op)
            atom = self.int_atom(ctx, d - 1)
            if op == "h.pow":  # a clamped base: repeated squaring in a recursion would
                atom = f"max(min({atom}, 4), -4)"  # grow a bigint without bound
            # a negative exponent: a typed error on every path (int ** int is an int)
            return text.format(atom, self.src.choice([2, 0, 1, 3, -1]))
        if k == "minmax":
            return self.minmax(ctx, d, self.int_atom, self.integer)
        if k == "abs":
            self.ops("h.abs")
            return f"abs({self.int_atom(ctx, d - 1)})"
        if k == "len":
            return self.length(ctx)
        if k == "conv":
            self.ops("h.int")
            self.feat.add("expr:conversion")
            return f"int({self.real(ctx, d - 1)})"
        if k == "nth":
            return self.nth(ctx, d, INT)
        if k == "generic":
            return self.generic_last(ctx, INT, self.integer(ctx, d - 1))
        if k == "list_argmax":
            self.read("argmax")
            self.feat.update(("expr:list_argmax", "op:list_argmax"))
            return f"argmax({self.src.choice(self.score_lists(ctx))})"
        self.feat.add("expr:ifexp")
        a, b = self.integer(ctx, d - 1, index), self.integer(ctx, d - 1, index)
        return f"({a} if {self.boolean(ctx, d - 1)} else {b})"

    def lists(self, ctx: Ctx) -> list[str]:
        return [n for n, t in ctx if isinstance(t, AdtType) and t.name == "List"]

    def score_lists(self, ctx: Ctx) -> list[str]:
        """Lists of scores (``Tensor[()]``, ``Tensor[1]``), which ``argmax`` takes."""
        return self.lists_of(ctx, TensorType(())) + self.lists_of(ctx, TensorType((1,)))

    def lists_of(self, ctx: Ctx, elem: Type) -> list[str]:
        return [n for n, t in ctx if t == AdtType("List", (elem,))]

    def nth(self, ctx: Ctx, d: int, elem: Type) -> str:
        """``xs[k]`` of a List of ``elem``s: mostly in range (an empty list's is not),
        now and then a host int as it comes (out of range: the typed error)."""
        xs = self.src.choice(self.lists_of(ctx, elem))
        self.ops("h.nth")
        self.feat.add("expr:list_index")
        k = self.int_atom(ctx, d - 1)
        if self.src.boolean(0.85):
            self.ops("h.mod", "h.max", "h.len")
            return f"{xs}[{k} % max(len({xs}), 1)]"
        return f"{xs}[{k}]"

    def generic_last(self, ctx: Ctx, elem: Type, default: str) -> str:
        """A call of the generic helper ``g_last(xs: List[T], d: T) -> T`` (its last
        element, or ``d``): the frontend makes one copy per element type."""
        self.generic = True
        self.feat.add("decl:generic_function")
        return f"g_last({self.src.choice(self.lists_of(ctx, elem))}, {default})"

    def length(self, ctx: Ctx) -> str:
        self.ops("h.len")
        return f"len({self.src.choice(self.lists(ctx))})"

    def int_atom(self, ctx: Ctx, d: int) -> str:
        """A host int that is not a literal: a variable, ``len(xs)`` or ``argmax(t)``."""
        vs = self.vars_of(ctx, INT)
        opts = ([(4, "var")] if vs else []) + [(1, "argmax")]
        if self.lists(ctx):
            opts.append((2, "len"))
        if self.score_lists(ctx):
            opts.append((2, "list_argmax"))
        k = self.pick(opts)
        if k == "var":
            return self.src.choice(vs)
        if k == "list_argmax":
            return self._int(k, ctx, d, vs)
        return self.length(ctx) if k == "len" else self.argmax(ctx, d)

    def real_atom(self, ctx: Ctx, d: int) -> str:
        """A host float that is not a literal: a variable or ``item(t)``."""
        vs = self.vars_of(ctx, FLOAT)
        if vs and self.src.boolean(0.7):
            return self.src.choice(vs)
        return self.item(ctx, d)

    def minmax(self, ctx, d, atom, other) -> str:
        """``min``/``max`` of two or three host numbers, the first not a literal."""
        name = self.src.choice(["min", "max"])
        self.ops("h." + name)
        args = [atom(ctx, d - 1)] + [other(ctx, d - 1) for _ in range(self.src.integer(1, 2))]
        return f"{name}({', '.join(args)})"

    def tame_int(self, ctx: Ctx, d: int, positive: bool = False) -> str:
        """A small non-literal host int to scale a tensor by (``positive``: at least 1)."""
        counters = [n for n in self.vars_of(ctx, INT) if n in self.frozen]
        opts = [(2, "mod"), (2, "clamp")] + ([(3, "counter")] if counters else [])
        if self.lists(ctx):
            opts.append((2, "len"))
        k = self.pick(opts)
        if k == "counter":
            n = self.src.choice(counters)
        elif k == "len":
            n = self.length(ctx)
        elif k == "mod":
            self.ops("h.mod")
            n = f"({self.int_atom(ctx, d)} % {self.src.integer(2, 4)})"
        else:
            self.ops("h.min", "h.max")
            n = f"min(max({self.int_atom(ctx, d)}, {self.src.integer(-3, 0)}), 3)"
        if positive:
            if k == "clamp":
                return f"max({n}, 1)"
            self.ops("h.add")
            return f"({n} + 1)"
        return n

    def tame_real(self, ctx: Ctx, d: int) -> tuple[str, bool]:
        """A small host float to scale a tensor by, and whether it is a literal (a named
        constant: the frontend folds it into a tensor constant)."""
        k = self.src.weighted([(2, "atom"), (1, "const"), (1, "clamp")])
        if k == "const":
            return self.const(FLOAT), True
        x = self.real_atom(ctx, d)
        if k == "clamp":
            self.ops("h.min", "h.max")
            return f"min(max({x}, -2.0), 2.0)", False
        return x, False

    def argmax(self, ctx, d) -> str:
        self.read("argmax")
        return f"argmax({self.tensor(self.shape(), ctx, d)})"

    def item(self, ctx, d) -> str:
        self.read("item")
        s = self.src.choice([(), (1,), (1, 1)])
        if self.src.boolean(0.6):
            self.ops("sum")
            return f"item(sigmoid(sum({self.tensor(self.shape(), ctx, d)})))"
        return f"item({self.tensor(s, ctx, d)})"

    def real(self, ctx: Ctx, d: int) -> str:
        vs = self.vars_of(ctx, FLOAT)
        opts = [(4, "leaf")]
        if d > 0:
            opts += [(2, "arith"), (2, "item"), (1, "int"), (1, "minmax"), (1, "abs")]
            opts.append((1, "conv"))
        k = self.pick(opts)
        if k == "leaf":
            if vs and self.src.boolean(0.8):
                return self.src.choice(vs)
            if self.src.boolean(0.15):
                return self.const(FLOAT)
            return self.src.choice(["0.5", "1.0", "-1.5", "2.0"])
        if k == "minmax":
            return self.minmax(ctx, d, self.real_atom, self.number)
        if k == "abs":
            self.ops("h.abs")
            return f"abs({self.real_atom(ctx, d - 1)})"
        if k == "arith":
            sym, op = self.src.choice([("+", "h.add"), ("-", "h.sub"), ("*", "h.mul")])
            self.feat.add("host:float_arith")
            self.ops(op)
            return f"({self.real(ctx, d - 1)} {sym} {self.real(ctx, d - 1)})"
        if k == "item":
            return self.item(ctx, d - 1)
        if k == "conv":
            self.ops("h.float")
            self.feat.add("expr:conversion")
            return f"float({self.integer(ctx, d - 1)})"
        self.feat.add("host:float_arith")
        self.ops("h.truediv")
        return f"({self.integer(ctx, d - 1)} / 4.0)"

    def number(self, ctx: Ctx, d: int) -> str:
        """A host float, now and then an int (``max(f, n)`` is a float)."""
        return self.integer(ctx, d) if self.src.boolean(0.2) else self.real(ctx, d)

    def boolean(self, ctx: Ctx, d: int) -> str:
        vs = self.vars_of(ctx, BOOL)
        opts = [(2, "leaf"), (3, "icmp")]
        if d >= 0:
            opts += [(1, "fcmp"), (2, "item"), (1, "argmax")]
        if d > 0:
            opts += [(1, "not"), (1, "andor")]
        k = self.pick(opts)
        cmp = self.src.choice([("<", "h.lt"), ("<=", "h.le"), (">", "h.gt"), (">=", "h.ge")])
        if k == "leaf":
            if vs:
                return self.src.choice(vs)
            if self.src.boolean(0.15):
                return self.const(BOOL)
            return self.src.choice(["True", "False"])
        if k == "icmp":
            sym, op = self.src.choice([*[cmp], ("==", "h.eq"), ("!=", "h.ne")])
            self.ops(op)
            rhs = self.const(INT) if self.src.boolean(0.1) else str(self.src.integer(0, 3))
            return f"({self.integer(ctx, d - 1)} {sym} {rhs})"
        if k == "fcmp":
            self.ops(cmp[1])
            return f"({self.real(ctx, d)} {cmp[0]} 0.25)"
        if k == "item":
            self.ops(cmp[1])
            return f"({self.item(ctx, d - 1)} {cmp[0]} 0.5)"
        if k == "argmax":
            self.ops("h.eq")
            return f"({self.argmax(ctx, d - 1)} == {self.src.integer(0, 2)})"
        if k == "not":
            self.ops("h.not")
            return f"(not {self.boolean(ctx, d - 1)})"
        sym = self.src.choice(["and", "or"])
        self.ops("h." + sym)
        return f"({self.boolean(ctx, d - 1)} {sym} {self.boolean(ctx, d - 1)})"
