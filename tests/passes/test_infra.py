"""Pass infrastructure: shared IR helpers, the host-function loop, declared needs, facts."""

from __future__ import annotations

import pytest

import acrobat
from acrobat.analysis.depth import DepthResult
from acrobat.compiler import default_passes
from acrobat.errors import PipelineError
from acrobat.ir.nodes import Var
from acrobat.ir.parser import parse_module
from acrobat.ir.traversal import kernel_key, var_names
from acrobat.passes.anf import ToANF
from acrobat.passes.base import (
    Facts,
    Instrument,
    PassContext,
    Pipeline,
    Property,
    VerifyInstrument,
    declared,
    map_host_functions,
)
from acrobat.passes.fuse import FuseOps
from acrobat.passes.hoist import HoistStaticDepth
from acrobat.passes.options import OPTIMIZATIONS, CompileOptions
from tests.passes.helpers import run

KERNELS = """# acrobat IR
size H = 4
param U: Tensor[4, 4]
kernel @a(%x: Tensor[4]) -> Tensor[4] {
  let %t_1: Tensor[4] = dense(%x, $U);
  let %t_2: Tensor[4] = tanh(%t_1);
  %t_2
}
kernel @b(%y: Tensor[4]) -> Tensor[4] {
  let %u: Tensor[4] = dense(%y, $U);
  let %v: Tensor[4] = tanh(%u);
  %v
}
kernel @c(%y: Tensor[4]) -> Tensor[4] {
  let %u: Tensor[4] = dense(%y, $U);
  let %v: Tensor[4] = sigmoid(%u);
  %v
}
def @main(%x: Tensor[4]) -> Tensor[4] {
  let %h: Tensor[4] = @a(%x);
  %h
}
"""


def test_kernel_key_ignores_variable_names_only():
    m = parse_module(KERNELS)
    a, b, c = (m.function_map[n] for n in "abc")
    assert kernel_key(a) == kernel_key(b)
    assert kernel_key(a) != kernel_key(c)


def test_var_names_are_the_variables_read():
    m = parse_module(KERNELS)
    # bound inside and read: listed; the binding's own variable is not a read
    assert var_names(m.function_map["a"].body) == {"x", "t_1", "t_2"}
    assert var_names(m.function_map["main"].body) == {"x", "h"}


def test_map_host_functions_keeps_kernels_and_rewrites_in_order():
    m = parse_module(KERNELS)
    seen: list[tuple[str, str, list[str]]] = []

    def rule(f, names, current):
        # ``current`` holds the rewritten earlier functions; ``names`` is fresh for ``f``
        seen.append((f.name, names.fresh("h"), [g.name for g in current.functions]))

        def one(e):
            if isinstance(e, Var) and e.name == "h":
                return Var("renamed", ty=e.ty)
            return e

        return one

    fns = map_host_functions(m, rule)
    assert [f.name for f in fns] == ["a", "b", "c", "main"]
    assert fns[:3] == m.functions[:3]  # kernels are kept as they are
    assert seen == [("main", "h_1", ["a", "b", "c", "main"])]
    assert var_names(fns[3].body) == {"x", "renamed"}


def test_map_host_functions_shows_earlier_rewrites():
    src = (
        KERNELS
        + """def @g(%x: Tensor[4]) -> Tensor[4] {
  %x
}
"""
    )
    m = parse_module(src)
    bodies = []

    def rule(f, names, current):
        bodies.append(current.function_map["main"].body)
        return lambda e: Var("x", ty=e.ty) if isinstance(e, Var) and e.name == "h" else e

    fns = map_host_functions(m, rule)
    assert bodies[0] == m.function_map["main"].body
    assert bodies[1] == fns[3].body != m.function_map["main"].body


def test_facts_after_the_default_pipeline():
    spec = acrobat.models.load("treelstm", "tiny")
    out, ctx = run(default_passes(), spec.module, spec.params)
    assert isinstance(ctx.facts, Facts)
    assert ctx.facts.phases == 1
    assert isinstance(ctx.facts.depth, DepthResult)
    kernels = {f.name for f in out.functions if f.is_kernel}
    assert ctx.facts.coarse_groups and set(ctx.facts.coarse_groups) <= kernels
    assert all(isinstance(g, str) for gs in ctx.facts.coarse_groups.values() for g in gs)
    off, ctx = run(default_passes(), spec.module, spec.params, CompileOptions(hoisting=False))
    assert ctx.facts.depth is None


def test_default_pipeline_satisfies_every_declaration():
    passes = default_passes()
    Pipeline(passes).check()
    for p in passes:  # every built-in pass declares what it requires, even when nothing
        assert isinstance(type(p).__dict__.get("requires"), frozenset), p.name
        assert all(isinstance(x, Property) for x in declared(p, "requires"))


def test_pass_before_what_it_requires_names_both():
    with pytest.raises(PipelineError) as err:
        Pipeline([FuseOps(), ToANF()]).check()
    msg = str(err.value)
    assert "FuseOps (step 1) requires 'anf'" in msg and "ToANF provides only later (step 2)" in msg
    assert err.value.hint == "run ToANF before FuseOps"


def test_invalidated_property_names_the_pass_that_broke_it():
    passes = default_passes()
    second_hoist = [i for i, p in enumerate(passes) if p.name == "HoistStaticDepth"][1]
    del passes[second_hoist]
    with pytest.raises(
        PipelineError, match=r"InferIndependence .* requires 'hoisted'.*CoarsenGrains"
    ):
        Pipeline(passes).check()


def test_missing_provider_and_given_properties():
    with pytest.raises(PipelineError, match="no pass before it provides"):
        Pipeline([FuseOps()]).check()
    Pipeline([FuseOps(), HoistStaticDepth()], given=frozenset({Property.ANF})).check()


def test_run_checks_before_running_any_pass():
    seen = []

    class Record(Instrument):
        def before(self, p, module, ctx):
            seen.append(p.name)

    spec = acrobat.models.load("birnn", "tiny")
    ctx = PassContext(CompileOptions(), dict(spec.params))
    with pytest.raises(PipelineError):
        Pipeline([ToANF(), HoistStaticDepth()], [Record()]).run(spec.module, ctx)
    assert seen == []


def test_undeclared_pass_counts_as_requiring_nothing():
    class Identity:
        name = "Identity"

        def apply(self, module, ctx):
            return module

    passes = default_passes()
    passes.insert(3, Identity())
    spec = acrobat.models.load("birnn", "tiny")
    ctx = PassContext(CompileOptions(), dict(spec.params))
    out = Pipeline(passes).run(spec.module, ctx)
    assert any(f.is_kernel for f in out.functions)


@pytest.mark.parametrize("off", OPTIMIZATIONS)
def test_switched_off_passes_still_satisfy_the_pipeline(off):
    spec = acrobat.models.load("treelstm", "tiny")
    options = CompileOptions().without(off)
    ins = VerifyInstrument()  # ANF checked from the pass that provides it
    prog = acrobat.compile(spec.module, spec.params, options, instruments=[ins])
    assert ins.anf and prog.kernels
