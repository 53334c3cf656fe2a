"""``python -m acrobat.bench compile``: compile time against program size.

Three families of generated programs, each at growing sizes: a call chain (``f_i`` calls
``f_{i-1}`` once), a doubling chain (``f_i(x) = f_{i-1}(f_{i-1}(x))``: 2**n calls once inlined,
the shape that made the inliner exponential) and straight-line statements. Each program is
parsed and compiled in a child process killed at ``limit_s``; one JSON row per program says how
long each part took, or which typed error refused it (a program over the frontend's size limits
is refused before any work). Compile time should grow about linearly down each family.
"""

from __future__ import annotations

import multiprocessing
import time
from collections.abc import Callable

DEFAULT_LIMIT_S = 5.0
SIZES = {
    "chain": (25, 50, 100, 200),
    "doubling": (4, 8, 12, 16, 20),
    "statements": (250, 500, 1000, 20_000),
}


def call_chain(n: int) -> str:
    """``f_i`` calls ``f_{i-1}`` once; ``main`` calls ``f_{n-1}``."""
    fns = ["def f0(x: Tensor[4]) -> Tensor[4]:\n    return tanh(x)\n"]
    fns += [
        f"def f{i}(x: Tensor[4]) -> Tensor[4]:\n    return tanh(f{i - 1}(x))\n" for i in range(1, n)
    ]
    return "\n".join(fns) + f"\ndef main(x: Tensor[4]) -> Tensor[4]:\n    return f{n - 1}(x)\n"


def doubling_chain(n: int) -> str:
    """``f_i(x) = f_{i-1}(f_{i-1}(x))``: 2**n calls of ``f_0`` once everything is inlined."""
    fns = ["def f0(x: Tensor[4]) -> Tensor[4]:\n    return tanh(x)\n"]
    fns += [
        f"def f{i}(x: Tensor[4]) -> Tensor[4]:\n    return f{i - 1}(f{i - 1}(x))\n"
        for i in range(1, n)
    ]
    return "\n".join(fns) + f"\ndef main(x: Tensor[4]) -> Tensor[4]:\n    return f{n - 1}(x)\n"


def statements(n: int) -> str:
    """``main`` of ``n`` statements, each rebinding ``x``."""
    body = "".join(f"    x = tanh(x) * {i % 7 + 1}.0\n" for i in range(n))
    return f"def main(x: Tensor[4]) -> Tensor[4]:\n{body}    return x\n"


FAMILIES: dict[str, Callable[[int], str]] = {
    "chain": call_chain,
    "doubling": doubling_chain,
    "statements": statements,
}


def _compile(source: str, answer) -> None:
    import acrobat
    from acrobat.errors import AcrobatError

    answer.send("imported")  # the clock starts here, not at the interpreter's start
    row: dict = {}
    started = time.perf_counter()
    try:
        module = acrobat.parse(source, filename="generated.py")
        row["parse_s"] = round(time.perf_counter() - started, 4)
        acrobat.compile(module, acrobat.init_params(module))
    except AcrobatError as err:
        row["refused"] = f"{type(err).__name__}: {err.message}"
    row["total_s"] = round(time.perf_counter() - started, 4)
    answer.send(row)


def measure(family: str, n: int, limit_s: float = DEFAULT_LIMIT_S) -> dict:
    """Parse and compile one generated program in a child process; its row."""
    source = FAMILIES[family](n)
    row = {"family": family, "n": n, "lines": source.count("\n"), "limit_s": limit_s}
    ctx = multiprocessing.get_context("spawn")  # a fresh interpreter: nothing cached
    receive, send = ctx.Pipe(duplex=False)
    child = ctx.Process(target=_compile, args=(source, send), daemon=True)
    child.start()
    send.close()
    try:
        if receive.poll(120) and receive.recv() == "imported" and receive.poll(limit_s):
            row |= receive.recv()
        else:
            row["killed"] = f"no answer within {limit_s:g} s"
    except EOFError:
        row["killed"] = "the compiler process died"
    finally:
        child.kill()
        child.join(5)
    row["within_limit"] = "killed" not in row and row["total_s"] <= limit_s
    return row


def run(families: list[str], limit_s: float = DEFAULT_LIMIT_S) -> list[dict]:
    """Every size of every family in ``families``, smallest first."""
    return [measure(family, n, limit_s) for family in families for n in SIZES[family]]
