"""Saved fuzz cases: a program's source and a batch of instances, as one JSON file.

Minimized failures are saved under ``tests/fuzz/cases/`` and every file there is
re-checked by the test suite (``tests/fuzz/test_cases.py``), so a bug the fuzzer found
stays fixed. Instances are encoded exactly: tensors keep dtype, shape and every float32
bit pattern (as hex), ADT values their constructor, tuples stay tuples.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from acrobat.ir.values import AdtValue


@dataclass(frozen=True)
class Case:
    """One saved program and batch; ``note`` says what it once broke."""

    name: str
    source: str
    instances: list
    note: str = ""


def encode(v: Any) -> Any:
    """A JSON-ready form of an instance value."""
    if isinstance(v, np.ndarray):
        return {"tensor": v.dtype.str, "shape": list(v.shape), "hex": v.tobytes().hex()}
    if isinstance(v, AdtValue):
        return {"ctor": v.ctor, "fields": [encode(f) for f in v.fields]}
    if isinstance(v, tuple):
        return {"tuple": [encode(x) for x in v]}
    if isinstance(v, bool):
        return {"bool": v}
    if isinstance(v, int):
        return {"int": str(v)}  # exact beyond 2**53
    if isinstance(v, float):
        return {"float": float.hex(v)}
    raise TypeError(f"cannot encode a {type(v).__name__} in a fuzz case")


def decode(d: Any) -> Any:
    """The instance value :func:`encode` wrote."""
    if "tensor" in d:
        a = np.frombuffer(bytes.fromhex(d["hex"]), dtype=np.dtype(d["tensor"]))
        return a.reshape(d["shape"]).copy()
    if "ctor" in d:
        return AdtValue(d["ctor"], tuple(decode(f) for f in d["fields"]))
    if "tuple" in d:
        return tuple(decode(x) for x in d["tuple"])
    if "bool" in d:
        return bool(d["bool"])
    if "int" in d:
        return int(d["int"])
    if "float" in d:
        return float.fromhex(d["float"])
    raise ValueError(f"not an encoded fuzz value: {d!r}")


def save(case: Case, folder: Path) -> Path:
    """Write ``case`` as ``<folder>/<name>.json`` and return the path."""
    folder.mkdir(parents=True, exist_ok=True)
    name = re.sub(r"[^A-Za-z0-9_.-]", "_", case.name)
    path = folder / f"{name}.json"
    body = {
        "note": case.note,
        "source": case.source.splitlines(),
        "instances": [encode(x) for x in case.instances],
    }
    path.write_text(json.dumps(body, indent=1) + "\n")
    return path


def load(path: Path) -> Case:
    """Read a case file written by :func:`save`."""
    body = json.loads(Path(path).read_text())
    source = "\n".join(body["source"]) + "\n"
    instances = [decode(x) for x in body["instances"]]
    return Case(Path(path).stem, source, instances, body.get("note", ""))
