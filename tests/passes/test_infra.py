"""Pass infrastructure: shared IR helpers, the host-function loop, declared needs, facts."""

from __future__ import annotations

from acrobat.ir.parser import parse_module
from acrobat.ir.traversal import kernel_key, var_names

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


def test_var_names_include_bound_variables():
    m = parse_module(KERNELS)
    assert var_names(m.function_map["a"].body) == {"x", "t_1", "t_2"}
    assert var_names(m.function_map["main"].body) == {"x", "h"}
