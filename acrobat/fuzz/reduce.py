"""Source-level reduction of a failing program (after choice-sequence shrinking).

Choice shrinking keeps a program the generator could have written; this step then
deletes what the failure does not need, as delta debugging does: single statements
anywhere (a block that would become empty gets ``pass``), whole module-level
declarations (functions, ADTs, weights, sizes), then compound expressions replaced by
one of their operands — each change kept only while the program still parses and still
fails the same way (an ill-typed candidate is refused by the frontend at once, which
costs little). Each pass walks its candidates from the end, so a kept change never moves
the ones still to try. The instances are kept as they are, so ``main``'s signature never
changes.
"""

from __future__ import annotations

import ast
from collections.abc import Callable

_COMPOUND = (ast.Call, ast.BinOp, ast.IfExp, ast.UnaryOp)


def _statement_lists(tree: ast.Module) -> list[list[ast.stmt]]:
    """Every statement list inside function bodies (nested blocks included)."""
    out: list[list[ast.stmt]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.If | ast.While | ast.For | ast.match_case):
            for name in ("body", "orelse"):
                block = getattr(node, name, None)
                if block:
                    out.append(block)
    return out


def _expressions(tree: ast.Module) -> list[ast.expr]:
    """Compound expressions inside function bodies, in a fixed walk order (an expression
    comes before everything inside it)."""
    return [
        node
        for fn in tree.body
        if isinstance(fn, ast.FunctionDef)
        for node in ast.walk(fn)
        if isinstance(node, _COMPOUND)
    ]


def _operands(e: ast.expr) -> list[ast.expr]:
    if isinstance(e, ast.Call):
        return list(e.args)
    if isinstance(e, ast.BinOp):
        return [e.left, e.right]
    if isinstance(e, ast.IfExp):
        return [e.body, e.orelse]
    return [e.operand]


class _Replace(ast.NodeTransformer):
    def __init__(self, target: ast.expr, by: ast.expr):
        self.target, self.by = target, by

    def visit(self, node):
        return self.by if node is self.target else super().visit(node)


class _Reducer:
    def __init__(self, source: str, still_fails: Callable[[str], bool], budget: int):
        self.best, self.still_fails, self.budget = source, still_fails, budget
        self.calls = 0

    def attempt(self, tree: ast.Module) -> bool:
        candidate = ast.unparse(tree)
        if self.calls >= self.budget or len(candidate) >= len(self.best):
            return False
        self.calls += 1
        if self.still_fails(candidate):
            self.best = candidate
            return True
        return False

    def statements(self) -> bool:
        changed = False
        for li in range(len(_statement_lists(ast.parse(self.best)))):
            lists = _statement_lists(ast.parse(self.best))
            if li >= len(lists):
                break
            for si in reversed(range(len(lists[li]))):
                t = ast.parse(self.best)
                block = _statement_lists(t)[li]
                if si >= len(block) or isinstance(block[si], ast.Pass):
                    continue
                del block[si]
                if not block:
                    block.append(ast.Pass())
                changed |= self.attempt(t)
        return changed

    def declarations(self) -> bool:
        changed = False
        for i in reversed(range(len(ast.parse(self.best).body))):
            t = ast.parse(self.best)
            if i >= len(t.body):
                continue
            stmt = t.body[i]
            if isinstance(stmt, ast.FunctionDef) and stmt.name == "main":
                continue
            del t.body[i]
            changed |= self.attempt(t)
        return changed

    def expressions(self) -> bool:
        changed = False
        for i in reversed(range(len(_expressions(ast.parse(self.best))))):
            for j in range(len(_operands(_expressions(ast.parse(self.best))[i]))):
                t = ast.parse(self.best)
                e = _expressions(t)[i]
                if self.attempt(_Replace(e, _operands(e)[j]).visit(t)):
                    changed = True
                    break  # node i is gone; earlier indices are unchanged
        return changed


def reduce_source(source: str, still_fails: Callable[[str], bool], budget: int = 400) -> str:
    """The smallest program found that ``still_fails`` (at most ``budget`` checks)."""
    r = _Reducer(source, still_fails, budget)
    while r.calls < r.budget:
        changed = r.statements()
        changed |= r.declarations()
        changed |= r.expressions()
        if not changed:
            break
    return r.best.rstrip() + "\n"
