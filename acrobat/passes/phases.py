"""ValidatePhases: ``phase()`` only at the top level of the entry (docs/paper.md §7).

Checks that every ``phase()`` is a binding of the entry function's top-level block (not
in a branch, a loop or another function) and raises :class:`AcrobatPhaseError` with the
source line otherwise. With ``options.phases`` off, the markers are dropped: the whole
program is then one phase (used to measure what phases buy).

Writes ``ctx.facts.phases``.
"""

from __future__ import annotations

import dataclasses

from acrobat.errors import AcrobatPhaseError
from acrobat.ir.nodes import Let, Module, Phase
from acrobat.ir.traversal import walk
from acrobat.passes.base import PassContext, Property


class ValidatePhases:
    """Reject misplaced phases; drop them all when phases are switched off."""

    name = "ValidatePhases"
    requires: frozenset[Property] = frozenset()
    provides = frozenset({Property.TOP_LEVEL_PHASES})

    def apply(self, module: Module, ctx: PassContext) -> Module:
        main = module.main
        top = set()
        if isinstance(main.body, Let):
            top = {id(b.value) for b in main.body.bindings if isinstance(b.value, Phase)}
        for f in module.functions:
            for e in walk(f.body):
                if isinstance(e, Phase) and id(e) not in top:
                    raise AcrobatPhaseError(
                        f"phase() in {f.name} is not at the top level of {module.entry}",
                        e.span,
                        hint="phase() may only appear as a statement directly in main",
                    )
        ctx.facts.phases = len(top) + 1
        if ctx.options.phases or not top:
            if top:
                ctx.note(self.name, f"{len(top) + 1} program phases")
            return module
        body = dataclasses.replace(
            main.body,
            bindings=tuple(b for b in main.body.bindings if not isinstance(b.value, Phase)),
        )
        ctx.facts.phases = 1
        ctx.note(self.name, f"phases off: {len(top)} phase() marker(s) dropped")
        fns = tuple(dataclasses.replace(f, body=body) if f is main else f for f in module.functions)
        return dataclasses.replace(module, functions=fns)
