"""Code generation: the host program (IR -> Python that records DFG nodes) and kernel
source (NumPy here; CUDA in the GPU backend). Generated source is kept for viewing."""

import re

from acrobat.errors import MissingLoweringError
from acrobat.ir.ops import REGISTRY

_PLAIN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


def ident(prefix: str, name: str) -> str:
    """A Python and C identifier for an IR name, one-to-one: a plain identifier that does
    not start with ``q`` is kept as it is; any other name (the IR text allows quoted names,
    Python identifiers may be non-ASCII) becomes ``q`` and its UTF-8 bytes in hex. So no IR
    name can inject code, and two names never share an identifier (``é`` gives ``qc3a9``,
    the plain name ``qc3a9`` gives ``q7163336139``). Callers keep namespaces apart with
    prefixes none of which is another's prefix plus an encoding (``W_``, ``WT_``)."""
    if _PLAIN.match(name) and not name.startswith("q"):
        return prefix + name
    return prefix + "q" + name.encode().hex()


def missing_rule(op: str, backend: str, kernel: str) -> MissingLoweringError:
    """The typed error for an op that reached a kernel without a ``backend`` rule."""
    known = REGISTRY.get(op)
    if known is not None and not known.kind.in_kernel:
        hint = f"{op} is a {known.kind} op: it belongs in the host program, never in a kernel"
    else:
        hint = (
            f"add a {backend} rule for {op!r} (elementwise ops: "
            "acrobat.codegen.elementwise.define_elementwise_op registers every rule at once)"
        )
    return MissingLoweringError(op, backend, kernel, hint=hint)
