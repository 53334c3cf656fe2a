"""Host values (ints, floats, bools) for the program generator (see
:mod:`acrobat.fuzz.generate`): variables, literals, named host constants, host arithmetic,
``len``/``abs``/``min``/``max``, and reads of tensors (``item``, ``argmax``). Option 0 of
every draw is the simplest.
"""

from __future__ import annotations

from acrobat.ir.types import BOOL, FLOAT, INT, Type

Ctx = list[tuple[str, Type]]

HOST_INT = [("+", "h.add"), ("-", "h.sub"), ("*", "h.mul")]


class HostGen:
    """Mixin: needs ``src``, ``feat``, ``ops()``, ``pick()``, ``vars_of()``, ``tensor()``,
    ``shape()`` and ``read()``."""

    # -- host values -----------------------------------------------------------------
    def integer(self, ctx: Ctx, d: int, index: bool = False) -> str:
        vs = self.vars_of(ctx, INT)
        opts = [(4, "leaf")]
        if d > 0:
            opts += [(2, "arith"), (1, "mod"), (1, "argmax"), (1, "ifexp"), (1, "neg")]
        k = self.pick(opts)
        if index and k != "leaf":
            self.ops("h.mod")
            return f"({self._int(k, ctx, d, vs)} % V)"
        return self._int(k, ctx, d, vs, index)

    def _int(self, k, ctx, d, vs, index=False) -> str:
        if k == "leaf":
            if vs and (index or self.src.boolean(0.8)):
                return self.src.choice(vs)
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
        if k == "neg":
            op, text = self.src.choice([("h.neg", "(-{})"), ("h.pow", "({} ** 2)")])
            self.feat.add("host:int_arith")
            self.ops(op)
            return text.format(self.integer(ctx, d - 1))
        self.feat.add("expr:ifexp")
        a, b = self.integer(ctx, d - 1, index), self.integer(ctx, d - 1, index)
        return f"({a} if {self.boolean(ctx, d - 1)} else {b})"

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
            opts += [(2, "arith"), (2, "item"), (1, "int")]
        k = self.pick(opts)
        if k == "leaf":
            if vs and self.src.boolean(0.8):
                return self.src.choice(vs)
            return self.src.choice(["0.5", "1.0", "-1.5", "2.0"])
        if k == "arith":
            sym, op = self.src.choice([("+", "h.add"), ("-", "h.sub"), ("*", "h.mul")])
            self.feat.add("host:float_arith")
            self.ops(op)
            return f"({self.real(ctx, d - 1)} {sym} {self.real(ctx, d - 1)})"
        if k == "item":
            return self.item(ctx, d - 1)
        self.feat.add("host:float_arith")
        self.ops("h.truediv")
        return f"({self.integer(ctx, d - 1)} / 4.0)"

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
            return self.src.choice(vs) if vs else self.src.choice(["True", "False"])
        if k == "icmp":
            sym, op = self.src.choice([*[cmp], ("==", "h.eq"), ("!=", "h.ne")])
            self.ops(op)
            return f"({self.integer(ctx, d - 1)} {sym} {self.src.integer(0, 3)})"
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
