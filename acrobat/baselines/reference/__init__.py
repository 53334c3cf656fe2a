"""Independent plain-NumPy references: every model written again, per instance, without the IR.

They share nothing with the language, the interpreter or the runtime, so agreement is
evidence that all three are right. Each model's file defines
``reference(params, instance, sizes, decisions)``.
"""

from __future__ import annotations

import importlib
from typing import Any

import numpy as np


def reference(name: str, params: dict[str, np.ndarray], instance: Any, sizes: dict, decisions: str):
    """The reference output of model ``name`` on one instance."""
    mod = importlib.import_module(f"acrobat.baselines.reference.{name}")
    return mod.reference(params, instance, sizes, decisions)


def sigmoid(x: np.ndarray) -> np.ndarray:
    """Logistic function, float32 in and out."""
    return (1.0 / (1.0 + np.exp(-x))).astype(x.dtype, copy=False)
