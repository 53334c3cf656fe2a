"""ValidatePhases: phase() only at the top level of the entry; off drops the markers."""

from __future__ import annotations

import numpy as np
import pytest

import acrobat
from acrobat.errors import AcrobatPhaseError
from acrobat.ir.parser import parse_module
from acrobat.passes.options import CompileOptions
from acrobat.passes.phases import ValidatePhases
from tests.passes.helpers import check_pass, run, vec

GOOD = """# acrobat IR
size H = 4
param W: Tensor[4, 4]
def @main(%x: Tensor[4]) -> Tensor[4] {
  let %a: Tensor[4] = tanh(%x);
  let %p: () = phase();
  let %b: Tensor[4] = dense(%a, $W);
  let %q: () = phase();
  sigmoid(%b)
}
"""

IN_HELPER = """# acrobat IR
size H = 4
def @helper(%x: Tensor[4]) -> Tensor[4] {
  let %p: () = phase();
  tanh(%x)
}
def @main(%x: Tensor[4]) -> Tensor[4] {
  @helper(%x)
}
"""

IN_BRANCH = """# acrobat IR
size H = 4
def @main(%x: Tensor[4], %n: int) -> Tensor[4] {
  let %c: bool = h.gt(%n, 0);
  if (%c) {
    let %a: Tensor[4] = tanh(%x);
    let %p: () = phase();
    %a
  } else {
    %x
  }
}
"""


def test_top_level_phases_are_counted():
    m = parse_module(GOOD)
    rng = np.random.default_rng(0)
    out, ctx = check_pass(ValidatePhases(), m, acrobat.init_params(m), [vec(rng, 4)], anf=False)
    assert out == m
    assert ctx.facts.phases == 3 and ctx.notes["ValidatePhases"] == ["3 program phases"]


def test_phases_off_drops_the_markers():
    m = parse_module(GOOD)
    rng = np.random.default_rng(1)
    out, ctx = check_pass(
        ValidatePhases(),
        m,
        acrobat.init_params(m),
        [vec(rng, 4)],
        case="phases_off",
        options=CompileOptions(phases=False),
        anf=False,
    )
    assert "phase()" not in out.pretty()
    assert ctx.facts.phases == 1
    assert ctx.notes["ValidatePhases"] == ["phases off: 2 phase() marker(s) dropped"]


@pytest.mark.parametrize(
    ("text", "line", "where"), [(IN_HELPER, 4, "helper"), (IN_BRANCH, 7, "main")]
)
def test_misplaced_phase_is_an_error_with_its_line(text, line, where):
    m = parse_module(text)
    with pytest.raises(AcrobatPhaseError, match=f"phase\\(\\) in {where} is not at the top") as err:
        run([ValidatePhases()], m, {})
    assert err.value.line == line
    assert "main" in err.value.hint
    # also with phases switched off: a misplaced marker is a program error either way
    with pytest.raises(AcrobatPhaseError):
        run([ValidatePhases()], m, {}, CompileOptions(phases=False))


def test_frontend_rejects_phase_in_a_loop_with_its_line():
    src = """
H = Size("H", 4)

def main(x: Tensor[H], n: int) -> Tensor[H]:
    for i in range(n):
        x = tanh(x)
        phase()
    return x
"""
    with pytest.raises(AcrobatPhaseError) as err:
        acrobat.parse(src)
    assert err.value.line == 7


def test_compile_reports_phases():
    for name, phases in (("birnn", 2), ("berxit", 2), ("treelstm", 1)):
        spec = acrobat.models.load(name, "tiny")
        assert acrobat.compile(spec.module, spec.params).phases == phases
        off = acrobat.compile(spec.module, spec.params, CompileOptions().without("phases"))
        assert off.phases == 1 and "phase()" not in off.module.pretty()
