"""Lowering of function bodies (statements) to the functional IR.

Imperative blocks become nested ``Let`` / ``If`` / ``Match`` expressions:

* an ``if``/``match`` whose branches all ``return`` ends the block;
* one whose branches never ``return`` is a *join*: every branch yields the tuple of the
  variables it may change, and the block continues with those rebound;
* one where only some paths return gets the rest of the block appended to the paths
  that fall through (so an early exit reads naturally).

``while <host cond>`` and ``for i in range(...)`` are lambda-lifted into tail-recursive
global functions (``<fn>_loop<k>``) that take the loop-carried and free variables.
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
from acrobat.ir.types import TupleType, Type


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


class FunctionLowerer(ExprLowerer):
    """Lowers one function; lifted loops are appended to ``lifted``."""

    def __init__(self, decl: Declarations, sigs: Module, sig: Signature, lifted: list):
        self.decl, self.sig, self.lifted = decl, sig, lifted
        self.inf = FunctionInference(sigs, sigs.function_map[sig.name])
        self.sigs = sigs
        self.used: set[str] = set()
        self.scope = {}
        self.top_level = {id(s) for s in sig.body}
        self.join_type: Type | None = None  # type of the join tuple of the branches so far

    # -- names ------------------------------------------------------------------------
    def fresh(self, base: str) -> str:
        name, k = base, 0
        while name in self.used:
            k += 1
            name = f"{base}_{k}"
        self.used.add(name)
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
                self.for_range(st, bindings)
            elif isinstance(st, (ast.Break, ast.Continue)):
                raise AcrobatSyntaxError(
                    f"{type(st).__name__.lower()} is not supported",
                    self.span(st),
                    hint="use the loop condition",
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
        try:
            if setup is not None:
                setup()
            return self.block(stmts, join)
        finally:
            self.scope = saved

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
            self.bind(bindings, None, Phase(span=self.span(st)), node=st)
            return
        raise unsupported(st, self.decl)

    # -- loops ------------------------------------------------------------------------
    def while_loop(self, st: ast.While, bindings) -> None:
        sp = self.span(st)
        if st.orelse:
            raise AcrobatSyntaxError("while ... else is not supported", sp)
        if isinstance(st.test, ast.Constant):
            raise AcrobatSyntaxError(
                f"`while {st.test.value!r}` has no host condition",
                sp,
                hint="loop while a host bool holds (while i < n:), or use recursion",
            )
        for sub in ast.walk(st):
            if isinstance(sub, (ast.Return, ast.Break, ast.Continue)):
                raise AcrobatSyntaxError(
                    f"{type(sub).__name__.lower()} inside a loop is not supported",
                    self.span(sub),
                    hint="express the exit in the loop condition",
                )
        carried = sorted(assigned_names(st.body) & self.scope.keys())
        free = sorted((read_names([st]) & self.scope.keys()) - set(carried))
        types = []
        for n in carried + free:
            t = self.inf.resolve(self.inf.env[self.scope[n]])
            if _has_meta(t):
                raise AcrobatTypeError(
                    f"cannot infer the type of {n!r} used by the loop",
                    sp,
                    hint="annotate it where it is assigned",
                )
            types.append(t)
        name = self.lift_name()
        ret = TupleType(tuple(types[: len(carried)]))
        args = [ast.Name(n, ast.Load()) for n in carried + free]
        recur = ast.Return(ast.Call(ast.Name(name, ast.Load()), args, []))
        done = ast.Return(ast.Tuple([ast.Name(n, ast.Load()) for n in carried], ast.Load()))
        body = [ast.If(st.test, copy.deepcopy(st.body) + [recur], []), done]
        for node in body:
            for sub in ast.walk(node):
                if not hasattr(sub, "lineno") or sub.lineno is None:
                    ast.copy_location(sub, st)
        sig = Signature(name, list(zip(carried + free, types)), ret, body, st)
        self.register(sig)
        call = FnCall(name, tuple(Var(self.scope[n]) for n in carried + free), span=sp)
        tmp = self.bind(bindings, None, call, node=st)
        for j, n in enumerate(carried):
            self.bind(bindings, n, Proj(Var(tmp), j, span=sp), node=st)

    def for_range(self, st: ast.For, bindings) -> None:
        sp = self.span(st)
        it = st.iter
        if not (
            isinstance(it, ast.Call)
            and isinstance(it.func, ast.Name)
            and it.func.id == "range"
            and 1 <= len(it.args) <= 2
            and not it.keywords
        ):
            raise unsupported(st, self.decl)
        if not isinstance(st.target, ast.Name) or st.orelse:
            raise AcrobatSyntaxError("write `for i in range(n):` with a single name", sp)
        start, stop = (ast.Constant(0), it.args[0]) if len(it.args) == 1 else it.args
        i = st.target.id
        init = ast.Assign([ast.Name(i, ast.Store())], start)
        step = ast.AugAssign(ast.Name(i, ast.Store()), ast.Add(), ast.Constant(1))
        loop = ast.While(
            ast.Compare(ast.Name(i, ast.Load()), [ast.Lt()], [stop]), st.body + [step], []
        )
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
        elif isinstance(st, ast.For):
            out |= {n.id for n in ast.walk(st.target) if isinstance(n, ast.Name)}
    return out


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
