"""Source-level reduction of a failing program (after choice-sequence shrinking).

Choice shrinking keeps a program the generator could have written; this step then
deletes what the failure does not need, as delta debugging does: single statements
anywhere (a block that would become empty gets ``pass``), then whole module-level
declarations (functions, ADTs, weights, sizes) — each deletion kept only while the
program still parses and still fails the same way. The instances are kept as they are,
so ``main``'s signature never changes.
"""

from __future__ import annotations

import ast
from collections.abc import Callable

_BLOCKS = ("body", "orelse")


def _statement_lists(tree: ast.Module) -> list[list[ast.stmt]]:
    """Every statement list inside function bodies (nested blocks included)."""
    out: list[list[ast.stmt]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.If | ast.While | ast.For | ast.match_case):
            for name in _BLOCKS:
                block = getattr(node, name, None)
                if block:
                    out.append(block)
    return out


def _deletions(source: str):
    """Candidate sources, each with one statement or declaration deleted."""
    tree = ast.parse(source)
    n_lists = len(_statement_lists(tree))
    for li in range(n_lists):
        for si in reversed(range(len(_statement_lists(tree)[li]))):
            t = ast.parse(source)
            block = _statement_lists(t)[li]
            if si >= len(block) or isinstance(block[si], ast.Pass):
                continue
            del block[si]
            if not block:
                block.append(ast.Pass())
            yield ast.unparse(t)
    for i in reversed(range(len(tree.body))):
        t = ast.parse(source)
        stmt = t.body[i]
        if isinstance(stmt, ast.FunctionDef) and stmt.name == "main":
            continue
        del t.body[i]
        yield ast.unparse(t)


def reduce_source(source: str, still_fails: Callable[[str], bool], budget: int = 400) -> str:
    """The smallest program found that ``still_fails`` (at most ``budget`` checks)."""
    best, calls, progress = source, 0, True
    while progress and calls < budget:
        progress = False
        for candidate in _deletions(best):
            if calls >= budget:
                break
            if len(candidate) >= len(best):
                continue
            calls += 1
            if still_fails(candidate):
                best, progress = candidate, True
                break  # restart from the smaller program (indices moved)
    return best.rstrip() + "\n"
