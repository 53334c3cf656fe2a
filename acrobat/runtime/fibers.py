"""Fibers: concurrent instances for tensor-dependent control flow (docs/paper.md §8).

Every instance runs as a fiber: a stack of host-program generators (a call of another
fiber function pushes its generator, so nesting is a list, not C recursion). A fiber
runs until it needs something:

* READ a tensor value (``item``/``argmax``): it blocks; when every live fiber is blocked,
  the pending DFG is executed in ONE batched pass and all reads are answered together;
* SPAWN independent children (``parallel``/``map`` of fiber functions): each child is a
  fiber; the parent resumes with all their results once the last one finishes;
* a PHASE barrier: it waits until every fiber has reached the barrier (or finished);
* REDUCE a List (``sum``/``max``/``attend`` of a list): it blocks as a read does, and the
  pass's reductions are answered with its reads (:mod:`acrobat.runtime.segments`).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable

from acrobat.codegen.records import CALL, PHASE, READ_ARGMAX, READ_ITEM, REDUCE, SPAWN, TAIL
from acrobat.errors import InstanceError

# the scheduler tells a read apart with one comparison, ``op <= READ_ARGMAX``
assert READ_ITEM < READ_ARGMAX < min(CALL, SPAWN, PHASE, TAIL)

# what host arithmetic in the generated program can raise (the reference interpreter
# turns the same failures into an EvaluationError)
HOST_FAILURES = (ArithmeticError, ValueError)


def host_failure(err: Exception, inst: int) -> InstanceError:
    """The typed error for a failure in an instance's host code."""
    return InstanceError(
        f"host arithmetic failed: {err}",
        inst,
        hint="check the instance's host values (a division by zero, an overflow)",
    )


class Fiber:
    """One instance (or one spawned child): its generator stack and its parent."""

    __slots__ = ("stack", "inst", "parent", "slot", "pending", "results")

    def __init__(self, gen, inst: int, parent: Fiber | None = None, slot: int = 0):
        self.stack = [gen]
        self.inst = inst
        self.parent = parent
        self.slot = slot
        self.pending = 0
        self.results: list | None = None


def run_fibers(
    roots: list[Fiber],
    set_instance: Callable[[int], None],
    flush: Callable[[], None],
    read_all: Callable[[list[int], list[int]], list],
) -> tuple[list, int]:
    """Drive fibers to completion; returns (results by root order, DFG passes made).

    ``read_all(ops, value ids)`` answers every read of a pass at once, in order (a list
    reduction's payload in place of its value id)."""
    results: list = [None] * len(roots)
    ready: deque = deque((f, None) for f in roots)
    reads: list = []
    barrier: list = []
    passes = 0
    root_index = {id(f): i for i, f in enumerate(roots)}
    popleft, push = ready.popleft, ready.append
    add_read = reads.append
    current = None  # the instance set_instance last set (the host program keeps it)
    while True:
        while ready:
            fiber, value = popleft()
            if fiber.inst != current:
                current = fiber.inst
                set_instance(current)
            stack = fiber.stack
            gen = stack[-1]
            while True:
                try:
                    op, payload = gen.send(value)
                except HOST_FAILURES as err:
                    raise host_failure(err, fiber.inst) from None
                except StopIteration as stop:
                    stack.pop()
                    value = stop.value
                    if stack:
                        gen = stack[-1]
                        continue
                    parent = fiber.parent
                    if parent is None:
                        results[root_index[id(fiber)]] = value
                    else:
                        parent.results[fiber.slot] = value
                        parent.pending -= 1
                        if parent.pending == 0:
                            push((parent, parent.results))
                    break
                if op <= READ_ARGMAX:  # READ_ITEM or READ_ARGMAX
                    add_read((fiber, op, payload))
                elif op == TAIL:  # the caller is done: the callee takes its place
                    gen = stack[-1] = payload
                    value = None
                    continue
                elif op == CALL:
                    gen = payload
                    stack.append(gen)
                    value = None
                    continue
                elif op == SPAWN:
                    gens = payload
                    fiber.pending = len(gens)
                    fiber.results = [None] * len(gens)
                    for i, g in enumerate(gens):
                        push((Fiber(g, fiber.inst, fiber, i), None))
                elif op == PHASE:
                    barrier.append(fiber)
                elif op == REDUCE:  # answered with the reads (acrobat.runtime.segments)
                    add_read((fiber, op, payload))
                break
        if reads:
            flush()
            passes += 1
            answers = read_all([op for _, op, _ in reads], [vid for _, _, vid in reads])
            ready.extend(zip([fiber for fiber, _, _ in reads], answers))
            reads.clear()  # add_read appends to this list
        elif barrier:
            ready.extend((f, None) for f in barrier)
            barrier = []
        else:
            return results, passes
