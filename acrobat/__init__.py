"""acrobat: auto-batching of dynamic deep-learning programs at compile time (ACRoBat).

The public facade::

    import acrobat
    module = acrobat.parse(source, sizes={"H": 256})     # model source -> typed IR (never exec'd)
    params = acrobat.init_params(module, seed=0)         # seeded weights for every Param
    y = acrobat.evaluate(module, instance, params)       # reference interpreter, one instance
    print(module.pretty())                               # the IR as text
    acrobat.policies(), acrobat.backends()               # what run(policy=, backend=) takes
    m = acrobat.measure({"a": f, "b": g})                # interleaved timing, spreads, verdict
"""

from acrobat import (
    backends,  # the package; calling it lists the backends
    models,  # the model zoo: acrobat.models.load(...)
)
from acrobat.backends import BackendInfo
from acrobat.baselines.measure import Measurement, Spread, Verdict, measure, spread
from acrobat.compiler import CompiledProgram, KernelSpec, compile
from acrobat.errors import (
    AcrobatError,
    AcrobatMatchError,
    AcrobatNameError,
    AcrobatPhaseError,
    AcrobatShapeError,
    AcrobatSyntaxError,
    AcrobatTypeError,
    EvaluationError,
    InstanceError,
    IRParseError,
    RunCancelled,
    UndeclaredSizeError,
    VerificationError,
)
from acrobat.frontend import parse
from acrobat.ir import AdtValue, Module, evaluate, from_list, init_params, to_list, values_equal
from acrobat.passes.options import CompileOptions
from acrobat.runtime.cancel import CancelToken
from acrobat.runtime.gap import GapReport, KernelGap, explain, gap_report
from acrobat.runtime.run import RunResult, run
from acrobat.runtime.schedule import PolicyInfo, policies

__version__ = "0.1.0"

__all__ = [
    "AcrobatError",
    "AcrobatMatchError",
    "AcrobatNameError",
    "AcrobatPhaseError",
    "AcrobatShapeError",
    "AcrobatSyntaxError",
    "AcrobatTypeError",
    "AdtValue",
    "BackendInfo",
    "CancelToken",
    "CompileOptions",
    "CompiledProgram",
    "KernelSpec",
    "Measurement",
    "Spread",
    "Verdict",
    "compile",
    "explain",
    "gap_report",
    "GapReport",
    "KernelGap",
    "models",
    "EvaluationError",
    "IRParseError",
    "InstanceError",
    "Module",
    "PolicyInfo",
    "RunCancelled",
    "RunResult",
    "UndeclaredSizeError",
    "VerificationError",
    "backends",
    "evaluate",
    "from_list",
    "init_params",
    "measure",
    "spread",
    "parse",
    "policies",
    "run",
    "to_list",
    "values_equal",
]
