"""The record and request formats shared by the host program and the runtime.

The generated host program (:mod:`acrobat.codegen.host`) writes these; the DFG, the
schedules, the executor and the fiber scheduler (:mod:`acrobat.runtime`) read them. This
module is the one place that defines them.

**Records.** At every kernel call the host program adds one row of ints to that
kernel's record list instead of computing (the list holds the rows one after the other,
flat: ``R<k>(row)`` extends it, and the runtime reshapes it by the row width)::

    (key, out, inst, arg_0, arg_1, ...)
     KEY  OUT  INST ARGS ...

* ``key = phase * STRIDE + depth``: the node's phase and inline depth, which orders the
  ``acrobat`` schedule (phase-major, then depth);
* ``out``: the node's first output value id; a kernel with ``n`` outputs makes the ids
  ``out .. out + n - 1`` (value ids grow in recording order);
* ``inst``: the instance that recorded the node (for errors that name it);
* then one column per kernel argument, from column ``ARGS``: the value id of a tensor
  argument, or the host value itself: an int, or a float as its float64 bits
  (:func:`float_bits`), so that every row is int64.

The runtime turns the rows recorded since its last pass into one ``[N, ARGS + n_args]``
int64 array per kernel (:class:`acrobat.runtime.dfg.DFG`).

**Requests.** Host functions that need tensor values (the fiber functions) are
generators; they yield ``(op, payload)`` to the fiber scheduler
(:mod:`acrobat.runtime.fibers`):

* ``(READ_ITEM, value id)`` / ``(READ_ARGMAX, value id)``: the float of a one-element
  tensor / the flat argmax of a tensor, once the pending DFG has run;
* ``(CALL, generator)``: run another fiber function (trampolined, no C recursion);
* ``(TAIL, generator)``: the same, in tail position: the callee's result is the caller's,
  so the callee replaces the caller (which is never resumed) and the fiber's stack does
  not grow with a recursion that ends in a call;
* ``(SPAWN, generators)``: run independent children; resume with all their results;
* ``(PHASE, None)``: wait at a phase barrier until every fiber has reached it;
* ``(REDUCE, (kind, out, ids, ids2, query, signature))``: a list reduction
  (:mod:`acrobat.ir.list_ops`) of the value ids ``ids`` (and ``ids2``, ``query`` for
  ``attend``): answered with the reads, once the pending DFG has run, by storing its
  result as value ``out`` (an ``argmax``, whose ``out`` is None: with the index;
  :mod:`acrobat.runtime.segments`).
"""

from __future__ import annotations

import struct

STRIDE = 1 << 32  # depth keys: phase * STRIDE + depth
KEY, OUT, INST, ARGS = 0, 1, 2, 3  # record columns; arguments start at ARGS
READ_ITEM, READ_ARGMAX, CALL, SPAWN, PHASE, TAIL, REDUCE = range(7)  # fiber request ops; the
# reads first (the fiber scheduler tests ``op <= READ_ARGMAX``)

_FLOAT64, _INT64 = struct.Struct("<d"), struct.Struct("<q")


def float_bits(x: float) -> int:
    """The bits of ``float(x)`` as a float64, read as an int64 (how records carry floats)."""
    return _INT64.unpack(_FLOAT64.pack(x))[0]


__all__ = [
    "ARGS",
    "CALL",
    "INST",
    "KEY",
    "OUT",
    "PHASE",
    "READ_ARGMAX",
    "READ_ITEM",
    "REDUCE",
    "SPAWN",
    "STRIDE",
    "TAIL",
    "float_bits",
]
