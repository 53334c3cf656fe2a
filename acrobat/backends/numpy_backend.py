"""The NumPy backend: batched kernels generated as NumPy source, run on the CPU."""

from __future__ import annotations

import numpy as np

from acrobat.backends.tiling import CancelSlot, tile_rows, tiled, tiled_group
from acrobat.codegen.numpy_kernels import (
    NUMPY_PRODUCTS,
    Products,
    compile_numpy_group,
    compile_numpy_kernel,
)


class NumpyBackend:
    """Compiles each kernel to a batched NumPy function (weights bound once)."""

    name = "numpy"
    xp = np
    # Kernels gather their own rows ((arena buffer, rows), out=views): rows that are one
    # block are read in place, others taken into a workspace (counted as gathered bytes).
    fused_gather = True
    gather_copies = True

    def compile(
        self,
        kernel,
        params: dict[str, np.ndarray],
        fused_elementwise: bool = True,
        products: Products = NUMPY_PRODUCTS,
        cancel: CancelSlot | None = None,
    ):
        """A callable ``fn(B, *args, out=views)`` (or, with gathered arguments and no
        ``out``, ``fn(B, *args) -> tuple of [B, ...] arrays``) and its source.
        ``fused_elementwise``: elementwise chains as one call of the products' ``rowprog``
        (``CompileOptions``); ``products``: what the kernel calls for products and chains
        (the runtime's engine's, :mod:`acrobat.runtime.engines`); ``cancel``: the runtime's
        slot for its run's cancel flag, read between a tiled launch's tiles."""
        k = compile_numpy_kernel(kernel.function, params, fuse=fused_elementwise, products=products)
        rows = tile_rows(kernel.function, sum(params[w].nbytes for w in kernel.weights))
        if rows is None:
            return k.fn, k.source
        # a large working set per instance: launches of more rows run in tiles
        # (acrobat.backends.tiling), so the temporaries stay in cache
        note = f"# launches of more than {rows} rows are called in tiles of {rows} rows\n"
        return tiled(k.fn, rows, cancel), note + k.source

    def compile_group(
        self,
        kernels: list,
        varying: dict,
        params: dict[str, np.ndarray],
        fused_elementwise: bool = True,
        products: Products = NUMPY_PRODUCTS,
        cancel: CancelSlot | None = None,
    ):
        """The group kernel of twin kernels (:mod:`acrobat.codegen.twins`) and its source,
        or None where it cannot be written (then the members run apart). Tiled as its
        members are (twins: the same rows per tile)."""
        g = compile_numpy_group(
            [k.function for k in kernels],
            varying,
            params,
            fuse=fused_elementwise,
            products=products,
        )
        if g is None:
            return None
        k = kernels[0]
        rows = tile_rows(k.function, sum(params[w].nbytes for w in k.weights))
        if rows is None:
            return g.fn, g.source
        note = f"# launches of more than {rows} rows are called in tiles of {rows} rows\n"
        return tiled_group(g.fn, rows, cancel), note + g.source

    @staticmethod
    def to_device(a: np.ndarray) -> np.ndarray:
        return a

    @staticmethod
    def to_host(a) -> np.ndarray:
        return np.array(a)

    def synchronize(self) -> None:
        """Nothing to wait for on the CPU."""

    def take_device_ms(self) -> None:
        """No device clock: kernels run on the host, timed by the host."""
        return None
