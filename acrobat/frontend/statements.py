"""Lowering of function bodies (statements) to the functional IR.

Imperative blocks become nested ``Let`` / ``If`` / ``Match`` expressions:

* an ``if``/``match`` whose branches all ``return`` ends the block;
* one whose branches never ``return`` is a *join*: every branch yields the tuple of the
  variables it may change, and the block continues with those rebound;
* one where only some paths return gets the rest of the block appended to the paths
  that fall through (so an early exit reads naturally).

``while <host cond>``, ``for i in range(...)`` and ``for x in xs`` (a List) are
lambda-lifted into tail-recursive global functions (``<fn>_loop<k>``) that take the
loop-carried and free variables (and, for a list loop, the rest of the list) and return the
loop-carried ones; a list loop's function matches on the list.
"""

from __future__ import annotations

import ast
import copy
import dataclasses

from acrobat.errors import (
    AcrobatNameError,
    AcrobatPhaseError,
    AcrobatSyntaxError,
    AcrobatTypeError,
)
from acrobat.frontend.declarations import Declarations, unsupported
from acrobat.frontend.expressions import ExprLowerer
from acrobat.frontend.generated import HelperCalls
from acrobat.frontend.generics import GenericCalls
from acrobat.frontend.reductions import ReductionCalls
from acrobat.ir.nodes import (
    ATOMS,
    Binding,
    Clause,
    Expr,
    FnCall,
    Function,
    If,
    Let,
    Match,
    Module,
    Pattern,
    PCtor,
    Phase,
    Proj,
    PVar,
    PWild,
    TupleExpr,
    Var,
)
from acrobat.ir.typecheck import FunctionInference, _has_meta
from acrobat.ir.types import AdtType, TupleType, Type


@dataclasses.dataclass
class Signature:
    """A function to lower: parameters with types, result type and body statements."""

    name: str
    params: list[tuple[str, Type]]
    ret: Type
    body: list[ast.stmt]
    node: ast.AST
    is_entry: bool = False


def make_let(bindings: list[Binding], body: Expr) -> Expr:
    return Let(tuple(bindings), body) if bindings else body


class FunctionLowerer(ExprLowerer, HelperCalls, GenericCalls, ReductionCalls):
    """Lowers one function; lifted loops are appended to ``lifted``."""

    def __init__(self, decl: Declarations, sigs: Module, sig: Signature, lifted: list):
        self.decl, self.sig, self.lifted = decl, sig, lifted
        self.inf = FunctionInference(sigs, sigs.function_map[sig.name])
        self.sigs = sigs
        self.used: set[str] = set()
        self.next_suffix: dict[str, int] = {}
        self.scope = {}
        self.top_level = {id(s) for s in sig.body}
        self.branch_depth = 0  # > 0 while lowering the arms of an if/match
        self.join_type: Type | None = None  # type of the join tuple of the branches so far

    # -- names ------------------------------------------------------------------------
    def fresh(self, base: str) -> str:
        """``base``, or ``base_k`` with the least ``k`` not used yet. Names are never freed,
        so the search resumes where the last one for ``base`` stopped (linear in a function
        that rebinds ``x`` thousands of times, not quadratic)."""
        k = self.next_suffix.get(base, 0)
        name = f"{base}_{k}" if k else base
        while name in self.used:
            k += 1
            name = f"{base}_{k}"
        self.used.add(name)
        self.next_suffix[base] = k
        return name

    def bind(
        self,
        bindings: list,
        src: str | None,
        value: Expr,
        ann: Type | None = None,
        node=None,
        ty: Type | None = None,
    ) -> str:
        """Append ``src = value`` and record the new variable's type (``ty`` if known)."""
        ty = self.type_of(value) if ty is None else ty
        if ann is not None:
            ty = self.inf.unify(ann, ty, self.span(node) if node else None, f"variable {src}")
        name = self.fresh(src if src and src != "_" else "_t")
        self.inf.env[name] = ty
        sp = self.span(node) if node is not None else None
        bindings.append(Binding(Var(name, ty=ann, span=sp), value))
        if src and src != "_":
            self.scope[src] = name
        return name

    def lower(self) -> Function:
        sig = self.sig
        params = []
        for src, ty in sig.params:
            name = self.fresh(src)
            self.scope[src] = name
            self.inf.env[name] = ty
            params.append(Var(name, ty=ty, span=self.span(sig.node)))
        body = self.block(sig.body, None)
        return Function(sig.name, tuple(params), sig.ret, body, span=self.span(sig.node))

    # -- blocks -----------------------------------------------------------------------
    def block(self, stmts: list[ast.stmt], join: tuple[str, ...] | None) -> Expr:
        """Lower ``stmts``; ``join`` names the variables to yield if control falls off."""
        bindings: list[Binding] = []
        for i, st in enumerate(stmts):
            rest = stmts[i + 1 :]
            if isinstance(st, ast.Return):
                if join is not None:
                    raise AcrobatSyntaxError(
                        "return inside a loop is not supported",
                        self.span(st),
                        hint="return after the loop ends",
                    )
                if st.value is None:
                    raise AcrobatSyntaxError("return needs a value", self.span(st))
                if rest:
                    raise AcrobatSyntaxError("unreachable code after return", self.span(rest[0]))
                return make_let(bindings, self.expr(st.value))
            if isinstance(st, (ast.If, ast.Match)):
                done = self.branching(st, rest, join, bindings)
                if done is not None:
                    return make_let(bindings, done)
            elif isinstance(st, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
                self.assign(st, bindings)
            elif isinstance(st, ast.Expr):
                self.expr_statement(st, bindings)
            elif isinstance(st, ast.While):
                self.while_loop(st, bindings)
            elif isinstance(st, ast.For):
                self.for_loop(st, bindings)
            elif isinstance(st, (ast.Break, ast.Continue)):
                # inside a loop body, no_loop_exits has already said what to write instead
                raise AcrobatSyntaxError(
                    f"{type(st).__name__.lower()} outside a loop", self.span(st), hint="remove it"
                )
            elif isinstance(st, ast.FunctionDef):
                raise AcrobatSyntaxError(
                    "nested functions are not supported",
                    self.span(st),
                    hint="define functions at module level",
                )
            elif not isinstance(st, ast.Pass):
                raise unsupported(st, self.decl)
        if join is None:
            where = stmts[-1] if stmts else self.sig.node
            raise AcrobatSyntaxError(
                f"function {self.sig.name} can end without returning a value",
                self.span(where),
                hint="every path must end in `return ...`",
            )
        for n in join:
            if n not in self.scope:
                raise AcrobatNameError(
                    f"{n!r} may be undefined here", self.span(stmts[-1]) if stmts else None
                )
        result = TupleExpr(tuple(Var(self.scope[n]) for n in join))
        ty = self.type_of(result)
        if self.join_type is not None:
            self.inf.unify(
                self.join_type,
                ty,
                self.span(stmts[-1]) if stmts else None,
                f"the values of {', '.join(join)} after the branches",
            )
        self.join_type = ty
        return make_let(bindings, result)

    def in_branch(self, stmts: list[ast.stmt], join, setup=None) -> Expr:
        """Lower a branch in a copy of the current scope."""
        saved = dict(self.scope)
        self.branch_depth += 1
        try:
            if setup is not None:
                setup()
            return self.block(stmts, join)
        finally:
            self.scope = saved
            self.branch_depth -= 1

    def branching(self, st, rest, join, bindings) -> Expr | None:
        """Lower an if/match; return the block's value if it ends the block."""
        arms = [st.body, st.orelse] if isinstance(st, ast.If) else [c.body for c in st.cases]
        kinds = [returns(a) for a in arms]
        if all(k == "always" for k in kinds):
            if rest:
                raise AcrobatSyntaxError(
                    "unreachable code: every branch above returns", self.span(rest[0])
                )
            return self.branch_expr(st, [], join, bindings)
        if all(k == "never" for k in kinds):
            names = join_names(arms, self.scope)
            outer, self.join_type = self.join_type, None
            value = self.branch_expr(st, [], names, bindings)
            ty, self.join_type = self.join_type, outer
            tmp = self.bind(bindings, None, value, node=st, ty=ty)
            for j, n in enumerate(names):
                self.bind(bindings, n, Proj(Var(tmp), j, span=self.span(st)), node=st)
            return None
        return self.branch_expr(st, rest, join, bindings)

    def branch_expr(self, st, rest, join, bindings) -> Expr:
        sp = self.span(st)
        if isinstance(st, ast.If):
            cond = self.expr(st.test)
            then = self.in_branch(_then(st.body, rest), join)
            orelse = self.in_branch(_then(st.orelse, rest), join)
            return If(cond, then, orelse, span=sp)
        scrut = self.expr(st.subject)
        if type(scrut) not in ATOMS:
            scrut = Var(self.bind(bindings, None, scrut, node=st.subject))
        st_ty = self.type_of(scrut)
        clauses = []
        for case in st.cases:
            if case.guard is not None:
                raise AcrobatSyntaxError(
                    "case guards (`if ...`) are not supported",
                    self.span(case.guard),
                    hint="use an if inside the case",
                )
            holder: list[Pattern] = []

            def setup(case=case, holder=holder):
                pat = self.pattern(case.pattern)
                self.inf.pattern(pat, st_ty, self.span(case.pattern))
                holder.append(pat)

            body = self.in_branch(_then(case.body, rest), join, setup)
            clauses.append(Clause(holder[0], body, span=self.span(case.pattern)))
        return Match(scrut, tuple(clauses), span=sp)

    def pattern(self, p: ast.pattern) -> Pattern:
        sp = self.span(p)
        if isinstance(p, ast.MatchAs) and p.pattern is None:
            if p.name is None:
                return PWild()
            name = self.fresh(p.name)
            self.scope[p.name] = name
            return PVar(Var(name, span=sp))
        if isinstance(p, ast.MatchClass):
            if not isinstance(p.cls, ast.Name) or p.cls.id not in self.decl.ctors:
                raise AcrobatNameError(f"unknown constructor in pattern: {ast.unparse(p.cls)}", sp)
            if p.kwd_patterns:
                raise AcrobatSyntaxError(
                    "keyword patterns are not supported",
                    sp,
                    hint="match fields by position: Node(l, r)",
                )
            return PCtor(p.cls.id, tuple(self.pattern(q) for q in p.patterns))
        raise AcrobatSyntaxError(
            "only constructor patterns, names and _ are supported",
            sp,
            hint="case Node(left, right): ... / case Leaf(_): ... / case _: ...",
        )

    # -- simple statements ------------------------------------------------------------
    def assign(self, st, bindings) -> None:
        if isinstance(st, ast.AugAssign):
            if not isinstance(st.target, ast.Name):
                raise AcrobatSyntaxError("only names can be updated", self.span(st))
            value = ast.BinOp(ast.Name(st.target.id, ast.Load()), st.op, st.value)
            ast.copy_location(value, st)
            ast.copy_location(value.left, st)
            self.bind(bindings, st.target.id, self.expr(value), node=st)
            return
        if isinstance(st, ast.AnnAssign):
            if not isinstance(st.target, ast.Name) or st.value is None:
                raise AcrobatSyntaxError(
                    "annotated assignments need a name and a value", self.span(st)
                )
            ann = self.decl.type_of(st.annotation)
            self.bind(bindings, st.target.id, self.expr(st.value), ann, node=st)
            return
        if len(st.targets) != 1:
            raise AcrobatSyntaxError(
                "chained assignment (a = b = ...) is not supported", self.span(st)
            )
        self.assign_target(st.targets[0], self.expr(st.value), bindings, st)

    def assign_target(self, target, value: Expr, bindings, st) -> None:
        if isinstance(target, ast.Name):
            self.bind(bindings, target.id, value, node=target)
            return
        if isinstance(target, ast.Tuple):
            ty = self.type_of(value)
            if not isinstance(ty, TupleType) or len(ty.fields) != len(target.elts):
                raise AcrobatTypeError(
                    f"cannot unpack {ty} into {len(target.elts)} names", self.span(target)
                )
            tmp = (
                value if isinstance(value, Var) else Var(self.bind(bindings, None, value, node=st))
            )
            for j, t in enumerate(target.elts):
                self.assign_target(t, Proj(tmp, j, span=self.span(t)), bindings, st)
            return
        raise unsupported(target, self.decl, f"assigning to {type(target).__name__.lower()}")

    def expr_statement(self, st: ast.Expr, bindings) -> None:
        v = st.value
        if isinstance(v, ast.Constant) and isinstance(v.value, str):
            return  # a docstring or comment string
        if isinstance(v, ast.Call) and isinstance(v.func, ast.Name) and v.func.id == "phase":
            if v.args or v.keywords:
                raise AcrobatSyntaxError("phase() takes no arguments", self.span(st))
            if not self.sig.is_entry or id(st) not in self.top_level:
                raise AcrobatPhaseError(
                    "phase() may only appear at the top level of the entry function",
                    self.span(st),
                    hint="move phase() out of branches, loops and helper functions into main",
                )
            if self.branch_depth:  # top level in the source, but after an early return
                raise AcrobatPhaseError(
                    "phase() cannot follow an if/match that may return early: the rest of "
                    "main then runs inside that branch",
                    self.span(st),
                    hint="put phase() before the early return, or make the if/match end "
                    "main on every path",
                )
            self.bind(bindings, None, Phase(span=self.span(st)), node=st)
            return
        raise unsupported(st, self.decl)

    # -- loops ------------------------------------------------------------------------
    def while_loop(self, st: ast.While, bindings) -> None:
        sp = self.span(st)
        if st.orelse:
            raise AcrobatSyntaxError("while ... else is not supported", sp)
        if isinstance(st.test, ast.Constant) and not (st.test.value is True and _breaks(st.body)):
            raise AcrobatSyntaxError(
                f"`while {st.test.value!r}` has no host condition",
                sp,
                hint="loop while a host bool holds (while i < n:), or write `while True:` with "
                "a `break`",
            )
        self.no_loop_exits(st)
        carried = sorted(assigned_names(st.body) & self.scope.keys())
        free = sorted((read_names([st]) & self.scope.keys()) - set(carried))

        def body(recur: ast.stmt, done: ast.stmt) -> list[ast.stmt]:
            loop = _exits_replaced(st.body, done, [recur])
            return [ast.If(st.test, _then(loop, [recur]), []), done]

        self.lift_loop(st, ([], []), carried, free, body, bindings)

    def for_loop(self, st: ast.For, bindings) -> None:
        """``for i in range(...)``, or ``for x in xs`` over a List."""
        self.no_loop_exits(st)
        if st.orelse:
            raise AcrobatSyntaxError("for ... else is not supported", self.span(st))
        if _is_range(st.iter):
            self.for_range(st, bindings)
            return
        xs = self.expr(st.iter)
        ty = self.type_of(xs)
        if not (isinstance(ty, AdtType) and ty.name == "List"):
            raise AcrobatSyntaxError(
                f"for loops iterate over range(...) or a List, not {ty}",
                self.span(st),
                hint="write for i in range(n):, or for x in xs: with xs a List[T]",
            )
        self.for_list(st, xs, bindings)

    def no_loop_exits(self, st: ast.While | ast.For) -> None:
        """Reject ``return`` in a loop, saying how to write the exit instead (``break``
        and ``continue`` are rewritten: see :func:`_exits_replaced`)."""
        for sub in ast.walk(st):
            if isinstance(sub, ast.Return):
                raise AcrobatSyntaxError(
                    "return is not supported in loops", self.span(sub), hint=_RETURN_IN_LOOP_FIX
                )

    def for_list(self, st: ast.For, xs: Expr, bindings) -> None:
        """Lift ``for x in xs:`` into a function matching on the list: ``Cons(x, rest)``
        runs the body and recurs on ``rest``; ``Nil()`` yields the loop-carried variables."""
        if not _names_only(st.target):
            raise AcrobatSyntaxError(
                "write `for x in xs:` with a name or a tuple of names", self.span(st.target)
            )
        # the list, its rest and its head get names the function's source never uses
        cursor, rest, head = self.hidden_names(("__xs", "__rest", "__x"))
        if isinstance(xs, Var):
            self.scope[cursor] = xs.name
        else:
            self.bind(bindings, cursor, xs, node=st.iter)
        targets = {n.id for n in ast.walk(st.target) if isinstance(n, ast.Name)}
        # a target that exists before the loop is carried: afterwards it holds the last item
        carried = sorted((assigned_names(st.body) | targets) & self.scope.keys())
        free = sorted((read_names(st.body) & self.scope.keys()) - set(carried))

        def body(recur: ast.stmt, done: ast.stmt) -> list[ast.stmt]:
            if isinstance(st.target, ast.Name):
                item, unpack = st.target.id, []
            else:
                item = head
                unpack = [ast.Assign([copy.deepcopy(st.target)], ast.Name(head, ast.Load()))]
            cons = ast.MatchClass(
                ast.Name("Cons", ast.Load()),
                [ast.MatchAs(name=item), ast.MatchAs(name=rest)],
                [],
                [],
            )
            nil = ast.MatchClass(ast.Name("Nil", ast.Load()), [], [], [])
            return [
                ast.Match(
                    ast.Name(cursor, ast.Load()),
                    [
                        ast.match_case(
                            cons,
                            None,
                            unpack + _then(_exits_replaced(st.body, done, [recur]), [recur]),
                        ),
                        ast.match_case(nil, None, [done]),
                    ],
                )
            ]

        self.lift_loop(st, ([cursor], [rest]), carried, free, body, bindings)

    def hidden_names(self, bases: tuple[str, ...]) -> list[str]:
        """Source names, one per base, that the function being lowered never uses."""
        used = {p for p, _ in self.sig.params}
        for st in self.sig.body:
            used.update(getattr(n, "id", None) or getattr(n, "name", None) for n in ast.walk(st))
        out = []
        for base in bases:
            name, k = base, 0
            while name in used:
                k += 1
                name = f"{base}{k}"
            out.append(name)
        return out

    def lift_loop(self, st, head, carried, free, make_body, bindings) -> None:
        """Lift a loop into a tail-recursive function ``<fn>_loop<k>`` and bind the
        ``carried`` variables to what its call returns.

        The function takes ``head[0]`` (for a list loop, the list), then the ``carried`` and
        ``free`` variables; ``make_body(recur, done)`` builds its body from the statement
        that recurs (passing ``head[1]``, the rest of the list, in place of ``head[0]``) and
        the one that returns the carried variables.
        """
        sp = self.span(st)
        params = head[0] + carried + free
        types = []
        for n in params:
            t = self.inf.resolve(self.inf.env[self.scope[n]])
            if _has_meta(t):
                what = "the list" if n in head[0] else repr(n)
                raise AcrobatTypeError(
                    f"cannot infer the type of {what} used by the loop",
                    sp,
                    hint="annotate it where it is assigned, e.g. xs: List[Tensor[H]] = Nil()",
                )
            types.append(t)
        name = self.lift_name()
        ret = TupleType(tuple(types[len(head[0]) :][: len(carried)]))
        args = [ast.Name(n, ast.Load()) for n in head[1] + carried + free]
        recur = ast.Return(ast.Call(ast.Name(name, ast.Load()), args, []))
        done = ast.Return(ast.Tuple([ast.Name(n, ast.Load()) for n in carried], ast.Load()))
        body = make_body(recur, done)
        for node in body:
            for sub in ast.walk(node):
                if not getattr(sub, "lineno", None):
                    ast.copy_location(sub, st)
        sig = Signature(name, list(zip(params, types)), ret, body, st)
        self.register(sig)
        call = FnCall(name, tuple(Var(self.scope[n]) for n in params), span=sp)
        tmp = self.bind(bindings, None, call, node=st)
        for j, n in enumerate(carried):
            self.bind(bindings, n, Proj(Var(tmp), j, span=sp), node=st)

    def for_range(self, st: ast.For, bindings) -> None:
        """``for i in range(n)`` / ``range(a, b)`` as ``i = a`` then ``while i < b:`` with
        ``i += 1`` at the end of the body."""
        sp = self.span(st)
        it = st.iter
        if len(it.args) not in (1, 2) or it.keywords:
            raise AcrobatSyntaxError(
                "range takes one or two arguments", sp, hint="range(n) or range(start, stop)"
            )
        if not isinstance(st.target, ast.Name):
            raise AcrobatSyntaxError("write `for i in range(n):` with a single name", sp)
        start, stop = (ast.Constant(0), it.args[0]) if len(it.args) == 1 else it.args
        i = st.target.id
        init = ast.Assign([ast.Name(i, ast.Store())], start)
        step = ast.AugAssign(ast.Name(i, ast.Store()), ast.Add(), ast.Constant(1))
        # a ``continue`` steps first (the while loop's continue only re-tests)
        body = _exits_replaced(st.body, ast.Break(), [step, ast.Continue()])
        if not _always_exits(body):
            body.append(step)
        loop = ast.While(ast.Compare(ast.Name(i, ast.Load()), [ast.Lt()], [stop]), body, [])
        for node in (init, step, loop):
            for sub in ast.walk(node):
                if not getattr(sub, "lineno", None):
                    ast.copy_location(sub, st)
        self.assign(init, bindings)
        self.while_loop(loop, bindings)

    def lift_name(self) -> str:
        k = 0
        while True:
            k += 1
            name = f"{self.sig.name}_loop{k}"
            if name not in self.decl.functions and name not in self.sigs.function_map:
                return name

    def register_helper(self, name, params, ret, body, node) -> None:
        """Queue a generated helper function (:mod:`acrobat.frontend.generated`)."""
        self.register(Signature(name, params, ret, body, node))

    def register(self, sig: Signature) -> None:
        """Make a lifted function callable (its signature) and queue its body."""
        params = tuple(Var(n, ty=t) for n, t in sig.params)
        self.sigs.function_map[sig.name] = Function(sig.name, params, sig.ret, TupleExpr(()))
        self.decl.functions[sig.name] = sig.node
        self.lifted.append(sig)


# -- statement facts ---------------------------------------------------------------------


def _then(arm: list[ast.stmt], rest: list[ast.stmt]) -> list[ast.stmt]:
    """An arm followed by the rest of the block, unless the arm always returns."""
    return arm if returns(arm) == "always" else arm + rest


def returns(stmts: list[ast.stmt]) -> str:
    """'always' if every path through ``stmts`` returns, 'never' if none does, else 'sometimes'."""
    for st in stmts:
        if isinstance(st, ast.Return):
            return "always"
        if isinstance(st, ast.If) and returns(st.body) == returns(st.orelse) == "always":
            return "always"
        if isinstance(st, ast.Match) and all(returns(c.body) == "always" for c in st.cases):
            return "always"
    found = any(isinstance(n, ast.Return) for st in stmts for n in ast.walk(st))
    return "sometimes" if found else "never"


def assigned_names(stmts: list[ast.stmt]) -> set[str]:
    """Names assigned anywhere in ``stmts`` (nested blocks included)."""
    out: set[str] = set()
    for st in stmts:
        for n in ast.walk(st):
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
                out.add(n.id)
    return out


def definitely_assigned(stmts: list[ast.stmt]) -> set[str]:
    """Names assigned on every path through ``stmts``."""
    out: set[str] = set()
    for st in stmts:
        if isinstance(st, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = st.targets if isinstance(st, ast.Assign) else [st.target]
            for t in targets:
                out |= {n.id for n in ast.walk(t) if isinstance(n, ast.Name)}
        elif isinstance(st, ast.If):
            out |= definitely_assigned(st.body) & definitely_assigned(st.orelse)
        elif isinstance(st, ast.Match) and st.cases:
            out |= set.intersection(*(definitely_assigned(c.body) for c in st.cases))
        elif isinstance(st, ast.For) and _is_range(st.iter):
            # the range loop's counter is set before the loop; a list may be empty
            out |= {n.id for n in ast.walk(st.target) if isinstance(n, ast.Name)}
    return out


def _is_range(it: ast.expr) -> bool:
    return isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and it.func.id == "range"


def _names_only(target: ast.expr) -> bool:
    """A loop target is a name or a (nested) tuple of names."""
    if isinstance(target, ast.Tuple):
        return all(_names_only(t) for t in target.elts)
    return isinstance(target, ast.Name)


_RETURN_IN_LOOP_FIX = (
    "set a variable, `break`, and return after the loop, or write the loop as a recursive "
    "function that returns early"
)


def _breaks(body: list[ast.stmt]) -> bool:
    """Whether ``body`` has a ``break`` of its own loop (not of a nested one)."""
    for st in body:
        if isinstance(st, ast.Break):
            return True
        if isinstance(st, ast.If) and (_breaks(st.body) or _breaks(st.orelse)):
            return True
        if isinstance(st, ast.Match) and any(_breaks(c.body) for c in st.cases):
            return True
    return False


def _exits_replaced(body: list[ast.stmt], done: ast.stmt, cont: list[ast.stmt]) -> list[ast.stmt]:
    """A copy of a loop's ``body`` with its own ``break`` replaced by ``done`` (the lifted
    function returns the loop-carried variables) and its ``continue`` by ``cont`` (it
    recurs); nested loops keep theirs. The early return then ends the block as any other
    (the rest of the body goes to the paths that fall through)."""
    out: list[ast.stmt] = []
    for st in body:
        if isinstance(st, ast.Break):
            return out + [copy.deepcopy(done)]  # what follows in the block never runs
        if isinstance(st, ast.Continue):
            return out + copy.deepcopy(cont)
        if isinstance(st, ast.If):
            out.append(
                ast.If(
                    st.test,
                    _exits_replaced(st.body, done, cont),
                    _exits_replaced(st.orelse, done, cont),
                )
            )
            ast.copy_location(out[-1], st)
        elif isinstance(st, ast.Match):
            cases = [
                ast.match_case(c.pattern, c.guard, _exits_replaced(c.body, done, cont))
                for c in st.cases
            ]
            out.append(ast.copy_location(ast.Match(st.subject, cases), st))
        else:
            out.append(copy.deepcopy(st))
        if _always_exits(out[-1:]):
            return out  # what follows in the block never runs
    return out


def _always_exits(stmts: list[ast.stmt]) -> bool:
    """Whether every path through ``stmts`` ends in return, break or continue."""
    for st in stmts:
        if isinstance(st, (ast.Return, ast.Break, ast.Continue)):
            return True
        if isinstance(st, ast.If) and _always_exits(st.body) and _always_exits(st.orelse):
            return True
        if isinstance(st, ast.Match) and all(_always_exits(c.body) for c in st.cases):
            return True
    return False


def join_names(arms: list[list[ast.stmt]], scope: dict[str, str]) -> tuple[str, ...]:
    """Variables a non-returning if/match yields: changed ones that exist afterwards."""
    changed = set().union(*(assigned_names(a) for a in arms))
    everywhere = set.intersection(*(definitely_assigned(a) for a in arms))
    return tuple(sorted((changed & scope.keys()) | everywhere))


def read_names(stmts: list[ast.stmt]) -> set[str]:
    return {
        n.id
        for st in stmts
        for n in ast.walk(st)
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)
    }
