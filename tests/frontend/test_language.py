"""The modelling language end to end: parse, then evaluate against closed-form NumPy."""

import textwrap

import numpy as np
import pytest

import acrobat
from acrobat import AdtValue as V
from acrobat.ir.verify import verify

RTOL = 1e-5  # float32 results


def run(src, instance, sizes=None, seed=0):
    m = acrobat.parse(textwrap.dedent(src), sizes=sizes)
    verify(m)
    p = acrobat.init_params(m, seed)
    return acrobat.evaluate(m, instance, p), p, m


def sig(x):
    return 1 / (1 + np.exp(-x))


TREE_SUM = """
H = Size("H", 4)
W: Param[H, H]

class Tree(ADT):
    Leaf: (Tensor[H],)
    Node: (Tree, Tree)

def walk(t: Tree) -> Tensor[H]:
    match t:
        case Leaf(x):
            return tanh(dense(x, W))
        case Node(l, r):
            a, b = parallel(walk(l), walk(r))
            return a + b

def main(t: Tree) -> Tensor[H]:
    return walk(t)
"""


def test_tree_recursion_matches_numpy():
    rng = np.random.default_rng(1)
    xs = [rng.standard_normal(4).astype(np.float32) for _ in range(3)]
    t = V("Node", (V("Leaf", (xs[0],)), V("Node", (V("Leaf", (xs[1],)), V("Leaf", (xs[2],))))))
    y, p, _ = run(TREE_SUM, t)
    want = sum(np.tanh(p["W"] @ x) for x in xs)
    np.testing.assert_allclose(y, want, rtol=RTOL)
    assert y.dtype == np.float32


def test_sizes_bind_at_parse_time():
    m4 = acrobat.parse(TREE_SUM)
    m8 = acrobat.parse(TREE_SUM, sizes={"H": 8})
    assert m4.param_map["W"].ty.shape == (4, 4)
    assert m8.param_map["W"].ty.shape == (8, 8)
    assert dict(m8.sizes) == {"H": 8}


LIST_RNN = """
H = Size("H", 3)
Wx: Param[H, H]
Wh: Param[H, H]

def rnn(xs: List[Tensor[H]], h: Tensor[H]) -> Tensor[H]:
    match xs:
        case Nil():
            return h
        case Cons(x, rest):
            return rnn(rest, tanh(dense(x, Wx) + dense(h, Wh)))

def double(x: Tensor[H]) -> Tensor[H]:
    return x * 2.0

def main(xs: List[Tensor[H]]) -> tuple[Tensor[H], List[Tensor[H]]]:
    return rnn(xs, zeros(H)), map(double, xs)
"""


def test_list_recursion_and_map():
    rng = np.random.default_rng(2)
    xs = [rng.standard_normal(3).astype(np.float32) for _ in range(5)]
    (h, doubled), p, _ = run(LIST_RNN, acrobat.from_list(xs))
    want = np.zeros(3, np.float32)
    for x in xs:
        want = np.tanh(p["Wx"] @ x + p["Wh"] @ want)
    np.testing.assert_allclose(h, want, rtol=RTOL)
    for got, x in zip(acrobat.to_list(doubled), xs, strict=True):
        np.testing.assert_allclose(got, 2 * x, rtol=RTOL)


HOST_IF = """
H = Size("H", 2)

def scale(x: Tensor[H], n: int) -> Tensor[H]:
    if n > 2 and not n == 5:
        y = x * 3.0
    else:
        y = x - 1.0
    k = n // 2 + n % 2
    if k >= 2:
        return y + 1.0
    return y

def main(x: Tensor[H], n: int) -> Tensor[H]:
    return scale(x, n)
"""


@pytest.mark.parametrize("n", [0, 1, 3, 5, 7])
def test_if_join_and_early_return(n):
    x = np.array([1.0, -2.0], np.float32)
    y, _, _ = run(HOST_IF, (x, n))
    want = x * 3 if n > 2 and n != 5 else x - 1
    if n // 2 + n % 2 >= 2:
        want = want + 1
    np.testing.assert_allclose(y, want, rtol=RTOL)


NESTED_MATCH = """
class Tree(ADT):
    Leaf: (int,)
    Node: (Tree, Tree)

def shape(t: Tree) -> int:
    match t:
        case Node(Leaf(a), Leaf(b)):
            return 100 + a + b
        case Node(l, _):
            return 1 + shape(l)
        case Leaf(a):
            return a

def main(t: Tree) -> int:
    return shape(t)
"""


def test_nested_patterns():
    leaf = lambda a: V("Leaf", (a,))  # noqa: E731
    node = lambda a, b: V("Node", (a, b))  # noqa: E731
    assert run(NESTED_MATCH, node(leaf(1), leaf(2)))[0] == 103
    assert run(NESTED_MATCH, node(node(leaf(1), leaf(2)), leaf(9)))[0] == 104
    assert run(NESTED_MATCH, leaf(7))[0] == 7


MUTUAL = """
def even(n: int) -> bool:
    if n == 0:
        return True
    return odd(n - 1)

def odd(n: int) -> bool:
    if n == 0:
        return False
    return even(n - 1)

def main(n: int) -> bool:
    return even(n)
"""


@pytest.mark.parametrize("n", [0, 1, 6, 11, 3000])
def test_mutual_recursion(n):
    assert run(MUTUAL, n)[0] == (n % 2 == 0)


EARLY_EXIT = """
H = Size("H", 4)
W: Param[H, H]
w_exit: Param[1, H]

def layers(x: Tensor[H], i: int) -> tuple[Tensor[H], int]:
    y = tanh(dense(x, W))
    p = item(sigmoid(dense(y, w_exit)))
    if p > 0.5 or i + 1 >= 6:
        return y, i + 1
    return layers(y, i + 1)

def main(x: Tensor[H]) -> tuple[Tensor[H], int]:
    h, n = layers(x, 0)
    phase()
    return softmax(h), n
"""


def test_tensor_dependent_if_matches_numpy():
    rng = np.random.default_rng(3)
    depths = set()
    for k in range(12):
        x = rng.standard_normal(4).astype(np.float32) * 3
        (y, n), p, _ = run(EARLY_EXIT, x, seed=k)
        h, i = x, 0
        while True:
            h = np.tanh(p["W"] @ h)
            i += 1
            if sig(p["w_exit"] @ h)[0] > 0.5 or i >= 6:
                break
        e = np.exp(h - h.max())
        np.testing.assert_allclose(y, e / e.sum(), rtol=RTOL)
        assert n == i
        depths.add(n)
    assert len(depths) >= 2, "the exit decision should depend on the tensor values"


LOOPS = """
H = Size("H", 3)
W: Param[H, H]

def main(x: Tensor[H], n: int) -> tuple[Tensor[H], int]:
    total = 0
    for i in range(n):
        x = tanh(dense(x, W))
        total += i
    k = n
    while k > 1:
        k = k // 2
    return x, total * 10 + k
"""


@pytest.mark.parametrize("n", [0, 1, 4])
def test_while_and_for_range(n):
    x0 = np.array([0.5, -1.0, 2.0], np.float32)
    (y, code), p, m = run(LOOPS, (x0, n))
    want = x0
    for _ in range(n):
        want = np.tanh(p["W"] @ want)
    k = n
    while k > 1:
        k //= 2
    np.testing.assert_allclose(y, want, rtol=RTOL)
    assert code == sum(range(n)) * 10 + k
    assert {f.name for f in m.functions} >= {"main_loop1", "main_loop2"}


OPTION_AND_GENERIC = """
T = TypeVar("T")
H = Size("H", 2)

class Pair(ADT[T]):
    MkPair: (T, T)

def first(p: Pair[Tensor[H]]) -> Tensor[H]:
    match p:
        case MkPair(a, _):
            return a

def main(o: Option[Tensor[H]]) -> Tensor[H]:
    match o:
        case Some(x):
            return first(MkPair(x, x * 2.0))
        case Nothing():
            acc: List[Tensor[H]] = Nil()
            acc = Cons(ones(H), acc)
            match acc:
                case Cons(y, _):
                    return y
                case Nil():
                    return zeros(H)
"""


def test_generic_adts_option_and_inference():
    x = np.array([1.0, 2.0], np.float32)
    y, _, _ = run(OPTION_AND_GENERIC, V("Some", (x,)))
    np.testing.assert_allclose(y, x)
    y, _, _ = run(OPTION_AND_GENERIC, V("Nothing", ()))
    np.testing.assert_allclose(y, np.ones(2))


OPS = """
H = Size("H", 4)
S = 3
E: Param[10, H]
g: Param[H]
b: Param[H]
Q: Param[2, S, H]

def main(i: int, x: Tensor[S, H]) -> tuple[Tensor[H], Tensor[S, H], int, float, Tensor[2, S, S]]:
    e = embed(E, i)
    n = layer_norm(x, g, b)
    a = softmax(gelu(n) @ transpose(n), -1)
    scores = batch_matmul(Q, Q, transpose_b=True)
    h = relu(e) + sum(a, 0)[0:1] - mean(reshape(x, (S * H,)), keepdims=True)
    return h, a @ x, argmax(h), item(max(h)), scores
"""


def test_op_semantics_match_numpy():
    rng = np.random.default_rng(5)
    x = rng.standard_normal((3, 4)).astype(np.float32)
    (h, ax, am, mx, sc), p, _ = run(OPS, (7, x))
    mu = x.mean(-1, keepdims=True)
    n = (x - mu) / np.sqrt(x.var(-1, keepdims=True) + 1e-5) * p["g"] + p["b"]
    gelu = 0.5 * n * (1 + np.tanh(np.sqrt(2 / np.pi) * (n + 0.044715 * n**3)))
    s = gelu @ n.T
    a = np.exp(s - s.max(-1, keepdims=True))
    a /= a.sum(-1, keepdims=True)
    want_h = np.maximum(p["E"][7], 0) + a.sum(0)[0:1] - x.mean()
    np.testing.assert_allclose(h, want_h, rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(ax, a @ x, rtol=1e-4, atol=1e-6)
    assert am == int(np.argmax(want_h))
    assert mx == pytest.approx(float(want_h.max()), rel=1e-5)
    np.testing.assert_allclose(sc, p["Q"] @ p["Q"].transpose(0, 2, 1), rtol=1e-4, atol=1e-6)


def test_ten_thousand_deep_tree_evaluates():
    import acrobat.models as zoo

    m = zoo.parse_model("treelstm", "tiny")
    p = acrobat.init_params(m, 0)
    t = V("Leaf", (0,))
    for i in range(10_000):
        t = V("Node", (t, V("Leaf", (i % 50,))))
    h = acrobat.evaluate(m, t, p)
    assert h.shape == (8,) and np.all(np.isfinite(h))


def test_treelstm_example_matches_numpy():
    import acrobat.models as zoo

    m = zoo.parse_model("treelstm", "tiny")
    p = acrobat.init_params(m, 4)
    t = V("Node", (V("Leaf", (3,)), V("Node", (V("Leaf", (4,)), V("Leaf", (5,))))))

    def cell(t):
        if t.ctor == "Leaf":
            i, o, u = np.split(p["W_iou"] @ p["E"][t.fields[0]] + p["b_iou"], 3)
            c = sig(i) * np.tanh(u)
            return sig(o) * np.tanh(c), c
        (hl, cl), (hr, cr) = cell(t.fields[0]), cell(t.fields[1])
        i, o, u, fl, fr = np.split(p["U"] @ np.concatenate([hl, hr]) + p["b_U"], 5)
        c = sig(i) * np.tanh(u) + sig(fl) * cl + sig(fr) * cr
        return sig(o) * np.tanh(c), c

    np.testing.assert_allclose(acrobat.evaluate(m, t, p), cell(t)[0], rtol=RTOL, atol=1e-7)
