"""Code generation: the host program (IR -> Python that records DFG nodes) and kernel
source (NumPy here; CUDA in the GPU backend). Generated source is kept for viewing."""

import re

_PLAIN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


def ident(prefix: str, name: str) -> str:
    """A Python identifier for an IR name; names that are not plain identifiers (the IR
    text allows quoted names) are hex-encoded, so no IR name can inject code."""
    if _PLAIN.match(name):
        return prefix + name
    return prefix + "q" + name.encode().hex()
