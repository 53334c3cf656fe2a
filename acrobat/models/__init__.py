"""The model zoo: the ACRoBat paper's evaluation models in acrobat's modelling language.

``load(name, size)`` gives a :class:`ModelSpec` (source, typed module, seeded weights,
seeded inputs, the reference interpreter); ``catalog()`` lists the models.

Each model lives in its own file ``acrobat/models/<name>.py`` defining ``DESCRIPTION``,
``FEATURES``, ``SIZES`` (``tiny``/``small``/``large`` size bindings), ``DEFAULT_DATA``,
``DECISIONS`` (``("tensor",)`` or ``("tensor", "random")``), ``source(decisions)``,
``instances(n, seed, sizes, decisions)`` and ``validate(instance, sizes, decisions)``.
An independent plain-NumPy version of each is in ``acrobat/baselines/reference/``.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from acrobat.baselines.reference import reference as numpy_reference
from acrobat.errors import AcrobatNameError, InstanceError
from acrobat.frontend import parse
from acrobat.ir.evaluate import evaluate
from acrobat.ir.nodes import Module
from acrobat.ir.values import entry_args, init_params
from acrobat.models import data

MODEL_NAMES = (
    "treelstm",
    "mvrnn",
    "birnn",
    "nestedrnn",
    "drnn",
    "berxit",
    "stackrnn",
)
VARIANTS = ("treelstm_childsum",)


@dataclass(frozen=True)
class ModelInfo:
    """One catalog entry."""

    name: str
    description: str
    features: tuple[str, ...]
    sizes: tuple[str, ...]
    default_data: str
    decisions: tuple[str, ...]


def _module(name: str):
    if name not in MODEL_NAMES + VARIANTS:
        raise AcrobatNameError(
            f"unknown model {name!r}", hint=f"choose one of {list(MODEL_NAMES + VARIANTS)}"
        )
    return importlib.import_module(f"acrobat.models.{name}")


def catalog() -> list[ModelInfo]:
    """Every built-in model with its description, control-flow features and sizes."""
    out = []
    for name in MODEL_NAMES + VARIANTS:
        mod = _module(name)
        out.append(
            ModelInfo(
                name,
                mod.DESCRIPTION,
                tuple(mod.FEATURES),
                tuple(mod.SIZES),
                mod.DEFAULT_DATA,
                tuple(mod.DECISIONS),
            )
        )
    return out


def source(name: str, decisions: str = "tensor") -> str:
    """The model's program text in the modelling language."""
    mod = _module(name)
    _check_decisions(name, mod, decisions)
    return mod.source(decisions)


def sizes(name: str, size: str) -> dict[str, int]:
    """The size bindings of one named size ("tiny", "small", "large")."""
    table = _module(name).SIZES
    if size not in table:
        raise AcrobatNameError(f"model {name} has no size {size!r}", hint=f"sizes: {list(table)}")
    return dict(table[size])


def parse_model(name: str, size: str = "small", decisions: str = "tensor") -> Module:
    """The typed IR module of a built-in model at one size."""
    return parse(source(name, decisions), sizes=sizes(name, size), filename=f"{name}.py")


def _check_decisions(name: str, mod, decisions: str) -> None:
    if decisions not in mod.DECISIONS:
        raise AcrobatNameError(
            f"model {name} has no decisions mode {decisions!r}", hint=f"modes: {mod.DECISIONS}"
        )


@dataclass(frozen=True)
class ModelSpec:
    """A model at one size: its source, typed IR, seeded weights and inputs."""

    name: str
    size: str
    decisions: str
    source: str
    module: Module
    params: dict[str, np.ndarray] = field(repr=False)
    sizes: dict[str, int]

    def instances(self, n: int, seed: int = 0) -> list[Any]:
        """``n`` seeded inputs from the model's default data distribution."""
        if n < 0:
            raise InstanceError(f"cannot make {n} instances", hint="n must be >= 0")
        return _module(self.name).instances(n, seed, self.sizes, self.decisions)

    def workload(self, n: int, seed: int = 0) -> list[Any]:
        """The benchmark's ``n`` inputs (``python -m acrobat.bench run`` and the explorer
        both run these): the default data, except TreeLSTM and MV-RNN, which get random
        binary trees of 10..60 leaves (the shape of the DyNet comparison)."""
        if self.name in ("treelstm", "mvrnn"):
            rng = np.random.default_rng(seed)
            return [data.random_tree(rng, self.sizes["V"]) for _ in range(n)]
        return self.instances(n, seed)

    def check(self, instances: list[Any]) -> None:
        """Raise :class:`InstanceError` naming the first instance that does not fit."""
        mod = _module(self.name)
        for i, x in enumerate(instances):
            entry_args(self.module, x, i)  # checks every argument against its type
            why = mod.validate(x, self.sizes, self.decisions)
            if why:
                raise InstanceError(why, i)

    def evaluate(self, instance: Any) -> Any:
        """The reference interpreter's result for one instance."""
        self.check([instance])
        return evaluate(self.module, instance, self.params)

    def reference(self, instance: Any) -> Any:
        """The independent plain-NumPy result for one instance (no IR involved)."""
        self.check([instance])
        return numpy_reference(self.name, self.params, instance, self.sizes, self.decisions)


def load(name: str, size: str = "small", decisions: str = "tensor", seed: int = 0) -> ModelSpec:
    """A built-in model at ``size`` with weights drawn from ``seed``."""
    mod = _module(name)
    _check_decisions(name, mod, decisions)
    bound = sizes(name, size)
    module = parse_model(name, size, decisions)
    init = getattr(mod, "init_params", None)
    params = init(module, seed, bound) if init else init_params(module, seed)
    return ModelSpec(name, size, decisions, source(name, decisions), module, params, bound)


__all__ = ["ModelInfo", "ModelSpec", "catalog", "load", "parse_model", "source", "sizes"]
