"""Statements for the program generator (see :mod:`acrobat.fuzz.generate`): augmented
assignments, tuple unpacking, non-returning ``if``/``match`` joins, loops (``for i in
range``, ``while``, ``for x in xs``), ``map`` and ``parallel``. Option 0 of every draw is
the simplest.
"""

from __future__ import annotations

from acrobat.fuzz.hosts import Ctx
from acrobat.ir.types import FLOAT, INT, AdtType, ScalarType, TensorType, TupleType, Type

MAX_FUNCTIONS = 14
MAX_HELPER_DEPTH = 3


class StmtGen:
    """Mixin: needs the statement and function machinery of
    :class:`acrobat.fuzz.generate._Gen`."""

    def aug(self, ctx, lines, ind, d, loop) -> None:
        cands = [(n, t) for n, t in ctx if isinstance(t, TensorType) or t in (INT, FLOAT)]
        cands = [c for c in cands if c[0] not in self.frozen]
        if not cands:
            return
        n, t = self.src.choice(cands)
        self.feat.add("stmt:augassign")
        if t == INT:
            self.feat.add("host:int_arith")
            self.ops("h.add")
            lines.append(f"{ind}{n} += {self.src.integer(1, 2)}")
            return
        if t == FLOAT:
            self.feat.add("host:float_arith")
            self.ops("h.mul")
            lines.append(f"{ind}{n} *= 0.5")
            return
        s = t.shape
        sym, op = self.src.choice([("+", "add"), ("-", "sub"), ("*", "mul")])
        self.ops(op)
        rhs = self.tensor(self.variant(s) if s else s, ctx, d)
        if loop:
            self.ops("tanh")
            lines.append(f"{ind}{n} = tanh({n} {sym} {rhs})")
        else:
            lines.append(f"{ind}{n} {sym}= {rhs}")

    def unpack(self, ctx, lines, ind, d) -> None:
        self.feat.add("stmt:tuple_unpack")
        a, b = self.fresh("u"), self.fresh("u")
        k = self.src.choice(["split", "tuple", "call"])
        s = self.shape(self.src.integer(1, 2))
        t1 = t2 = TensorType(s)
        if k == "split":
            self.ops("split")
            rhs = f"split({self.tensor((s[0] * 2,) + s[1:], ctx, d)}, 2)"
        else:
            t2 = self.src.choice([TensorType(self.shape()), INT, FLOAT])
            tt = TupleType((t1, t2))
            rhs = (self.helper(ctx, tt) if k == "call" else None) or self.value(tt, ctx, d)
        lines.append(f"{ind}{a}, {b} = {rhs}")
        ctx += [(a, t1), (b, t2)]

    def targets(self, ctx) -> list[tuple[str, Type]]:
        cands = [(n, t) for n, t in ctx if isinstance(t, (TensorType, ScalarType))]
        cands = [c for c in cands if c[0] not in self.frozen]
        out: list[tuple[str, Type]] = []
        for _ in range(self.src.integer(0, 2) if cands else 0):
            c = self.src.choice(cands)
            if c not in out:
                out.append(c)
        return out

    def join(self, k, ctx, lines, ind, ret, d, loop, adts) -> None:
        """A non-returning if/match: every arm reassigns the same variables (same types),
        and sometimes defines a new one."""
        tg = self.targets(ctx)
        new = []
        if self.src.boolean(0.4):
            new = [(self.fresh("j"), TensorType(self.shape()))]
        arms: list[tuple[str, Ctx]] = []
        if k == "if":
            self.feat.add("stmt:if")
            lines.append(f"{ind}if {self.boolean(ctx, d)}:")
            arms.append(("", list(ctx)))
            if new or self.src.boolean(0.7):
                arms.append((f"{ind}else:", list(ctx)))
        else:
            self.feat.add("stmt:match")
            n, t = self.src.choice(adts)
            lines.append(f"{ind}match {n}:")
            ctors = self.ctors(t)
            wild = len(ctors) >= 2 and self.src.boolean(0.3)
            for j, (c, fields) in enumerate(ctors):
                if wild and j == len(ctors) - 1:
                    self.feat.add("match:wildcard")
                    arms.append((f"{ind}    case _:", list(ctx)))
                    continue
                fn = [self.fresh("y") if self.src.boolean(0.8) else "_" for _ in fields]
                arm = list(ctx) + [(a, f) for a, f in zip(fn, fields) if a != "_"]
                arms.append((f"{ind}    case {c}({', '.join(fn)}):", arm))
        inner = ind + ("        " if k == "match" else "    ")
        for head, arm in arms:
            if head:
                lines.append(head)
            n0 = len(lines)
            self.stmts(arm, lines, inner, self.src.integer(0, 2), ret, loop=loop)
            for v, t in tg + new:
                lines.append(f"{inner}{v} = {self.value(t, arm, d, loop)}")
            if len(lines) == n0:
                lines.append(f"{inner}pass")
        ctx += new

    def loop(self, k, ctx, lines, ind, ret, d) -> None:
        ints = self.vars_of(ctx, INT)
        bound = str(self.src.integer(1, 3))
        if ints and self.src.boolean(0.5):
            bound = f"{self.src.choice(ints)} % {self.src.integer(2, 4)}"
            self.ops("h.mod")
        i = self.fresh("i")
        self.frozen.add(i)
        if k == "for":
            self.feat.add("stmt:for_range")
            lines.append(f"{ind}for {i} in range({bound}):")
        else:
            self.feat.add("stmt:while")
            self.ops("h.lt")
            lines.append(f"{ind}{i} = 0")
            cond = f"{i} < {bound}"
            if self.src.boolean(0.4):
                self.ops("h.and")
                cond += f" and {self.boolean(ctx, 1)}"
            lines.append(f"{ind}while {cond}:")
        arm = list(ctx) + [(i, INT)]
        n0 = len(lines)
        tg = [c for c in self.targets(ctx) if c[1] != INT]
        # a while loop's counter steps at the end: a continue there would never step it
        self.exit(arm, lines, ind + "    ", ("break",) if k == "while" else ("break", "continue"))
        self.stmts(arm, lines, ind + "    ", self.src.integer(0, 2), ret, loop=True)
        for v, t in tg:
            lines.append(f"{ind}    {v} = {self.value(t, arm, d, squash=True)}")
        if k == "while":
            self.ops("h.add")
            lines.append(f"{ind}    {i} += 1")
        elif len(lines) == n0:
            lines.append(f"{ind}    pass")
        ctx.append((i, INT))

    def for_list(self, ctx, lines, ind, ret, d, lists) -> None:
        """``for x in xs:`` (or ``for a, b in pairs:``) over a List in scope, carrying
        tensors (squashed, as in an RNN: ``h = tanh(dense(x, W) + h)``)."""
        n, t = self.src.choice(lists)
        elem = t.args[0]
        self.feat.add("stmt:for_list")
        others = [(m, u) for m, u in lists if m != n]
        if others and self.src.boolean(0.3):  # for a, b in zip(xs, ys):
            m, u = self.src.choice(others)
            self.feat.add("expr:zip")
            n, elem = f"zip({n}, {m})", TupleType((elem, u.args[0]))
        if isinstance(elem, TupleType) and self.src.boolean(0.7):
            self.feat.add("stmt:for_tuple_target")
            names = [self.fresh("e") for _ in elem.fields]
            bound = list(zip(names, elem.fields))
            target = ", ".join(names)
        else:
            target = self.fresh("e")
            bound = [(target, elem)]
        self.frozen.update(v for v, _ in bound)
        lines.append(f"{ind}for {target} in {n}:")
        arm = list(ctx) + bound
        n0 = len(lines)
        tg = [c for c in self.targets(ctx) if isinstance(c[1], TensorType)]
        self.exit(arm, lines, ind + "    ", ("break", "continue"))
        self.stmts(arm, lines, ind + "    ", self.src.integer(0, 2), ret, loop=True)
        for v, vt in tg:
            lines.append(f"{ind}    {v} = {self.carry(v, vt, bound, arm, d)}")
        if self.src.boolean(0.3):
            ints = [v for v, vt in ctx if vt == INT and v not in self.frozen]
            if ints:
                self.ops("h.add")
                lines.append(f"{ind}    {self.src.choice(ints)} += 1")
        if len(lines) == n0:
            lines.append(f"{ind}    pass")

    def exit(self, ctx, lines, ind, kinds) -> None:
        """Now and then ``if <host bool>: break`` (or ``continue``) at the top of a loop body."""
        if not self.src.boolean(0.25):
            return
        kind = self.src.choice(kinds)
        self.feat.add("stmt:" + kind)
        lines.append(f"{ind}if {self.boolean(ctx, 1)}:")
        lines.append(f"{ind}    {kind}")

    def carry(self, v, vt, bound, arm, d) -> str:
        """The new value of a loop-carried tensor ``v``: random, or an RNN step on an item
        of the list."""
        items = [x for x, xt in bound if isinstance(xt, TensorType) and len(xt.shape) == 1]
        if len(vt.shape) == 1 and items and self.src.boolean(0.5):
            self.feat.add("stmt:rnn_step")
            self.ops("dense", "add", "tanh")
            x = self.src.choice(items)
            w = self.weight((vt.shape[0], dict(bound)[x].shape[0]))
            return f"tanh(dense({x}, {w}) + {v})"
        return self.value(vt, arm, d, squash=True)

    def map_stmt(self, ctx, lines, ind, lists, d) -> None:
        n, t = self.src.choice(lists)
        elem = t.args[0]
        extra = [(self.fresh("a"), self.src.choice(ctx))] if self.src.boolean(0.3) else []
        others = [(m, u) for m, u in lists if m != n]
        if others and self.src.boolean(0.3):  # map(f, xs, ys): f takes an element of each
            m, u = self.src.choice(others)
            self.feat.add("expr:map_zip")
            extra = [(self.fresh("a"), (m, u.args[0]))] + extra
        ret = self.src.weighted(  # a Tensor[1]: scores, which argmax(ys) reads
            [(4, TensorType((self.sizes["H"],))), (1, TensorType(self.shape()))]
            + [(1, TensorType((1,)))]
        )
        ret = ret if self.src.boolean(0.8) else TupleType((ret, INT))
        if self.helper_depth >= MAX_HELPER_DEPTH or len(self.funcs) >= MAX_FUNCTIONS:
            return
        f = self.fresh("m")
        params = [(self.fresh("p"), elem)] + [(p, e[1]) for p, e in extra]
        self.helper_depth += 1
        self.function(f, params, ret, lambda c, ls: self.body(c, ls, ret, 2, 1))
        self.helper_depth -= 1
        self.call(f)
        self.feat.add("expr:map")
        self.sites.append(("map", [f]))
        v = self.fresh("ys")
        args = ", ".join([f, n] + [e[0] for _, e in extra])
        lines.append(f"{ind}{v} = map({args})")
        ctx.append((v, AdtType("List", (ret,))))
        if ret == TensorType((1,)) and self.src.boolean(0.6):  # the best score's index
            self.read("argmax")
            self.feat.update(("expr:list_argmax", "op:list_argmax"))
            k = self.fresh("k")
            lines.append(f"{ind}{k} = argmax({v})")
            ctx.append((k, INT))

    def parallel(self, ctx, lines, ind) -> None:
        calls, rets = [], []
        for _ in range(self.src.integer(2, 3)):
            r = self.src.weighted(
                [(4, TensorType((self.sizes["H"],))), (1, TensorType(self.shape()))]
            )
            c = self.helper(ctx, r)
            if c is None:
                return
            calls.append(c)
            rets.append(r)
        self.feat.add("expr:parallel")
        self.sites.append(("parallel", [c.split("(")[0] for c in calls]))
        outs = [self.fresh("q") for _ in calls]
        lines.append(f"{ind}{', '.join(outs)} = parallel({', '.join(calls)})")
        ctx += list(zip(outs, rets))
