"""What the runtime needs from a backend: the :class:`Backend` protocol.

A backend compiles each kernel of a program into a batched callable and moves arrays
between the host and its device. The executor calls a compiled kernel in one of two
conventions, chosen by ``fused_gather``:

* ``fused_gather = False``: ``fn(B, *args) -> tuple of [B, *shape] arrays``, each
  batched argument a gathered ``[B, *shape]`` array on the device, each host argument a
  ``[B]`` int array (already passed through ``to_device``);
* ``fused_gather = True``: ``fn(B, *args, out=views)``, each batched argument an
  ``(arena buffer, rows)`` pair with ``rows`` a host index array, each host argument a
  host ``[B]`` int array; the kernel gathers its own inputs and writes into ``out``.
  ``gather_copies`` says how: ``True`` when rows that are not one block are copied
  (the NumPy kernels take them into a workspace; the executor counts those bytes in
  ``bytes_gathered``), ``False`` when the kernels read through the row indices (CUDA).

Either may raise :class:`acrobat.errors.IndexOutOfRange` for an embedding id outside its
table; the executor turns it into the instance's :class:`~acrobat.errors.InstanceError`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import numpy as np

if TYPE_CHECKING:  # typing only: the compiler is a lower layer, nothing to import at run time
    from acrobat.compiler import KernelSpec


@runtime_checkable
class Backend(Protocol):
    """One device: kernel compilation, host <-> device copies and device timing."""

    name: str  # what RunStats.backend and the trace report
    xp: Any  # the array module of the device's arrays (numpy, cupy): arenas live there
    fused_gather: bool  # which calling convention compiled kernels use (module docstring)
    gather_copies: bool  # fused kernels copy rows that are not one block (module docstring)

    def compile(self, kernel: KernelSpec, params: dict[str, np.ndarray]) -> tuple[Callable, str]:
        """The batched callable of ``kernel`` (weights from ``params`` bound once) and the
        source it was generated from (shown in the trace)."""
        ...

    def to_device(self, a: np.ndarray) -> Any:
        """A device copy (or the array itself on the CPU) of a host array."""
        ...

    def to_host(self, a: Any) -> np.ndarray:
        """A host NumPy copy of a device array."""
        ...

    def synchronize(self) -> None:
        """Wait until every launched kernel has finished (host timers then include them)."""
        ...

    def take_device_ms(self) -> list[float] | None:
        """Device time (ms) of every kernel call since the last call, in call order; None
        when the backend has no device clock (then only host times are reported)."""
        ...


__all__ = ["Backend"]
