"""Typed errors that users can hit.

Every error carries where it happened (file, line, column when known) and a hint that
says what to do. The message users see is ``file:line:col: error: message (hint: ...)``.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Span:
    """A source location: 1-based line, 0-based column, as the ``ast`` module reports them."""

    file: str = "<source>"
    line: int = 0
    col: int = 0

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.col}"


class AcrobatError(Exception):
    """Base class of every error acrobat raises on purpose."""

    def __init__(self, message: str, span: Span | None = None, hint: str | None = None):
        self.message = message
        self.span = span
        self.hint = hint
        super().__init__(self.format())

    @property
    def line(self) -> int | None:
        return self.span.line if self.span else None

    @property
    def col(self) -> int | None:
        return self.span.col if self.span else None

    def format(self) -> str:
        where = f"{self.span}: " if self.span else ""
        hint = f" (hint: {self.hint})" if self.hint else ""
        return f"{where}{type(self).__name__}: {self.message}{hint}"


class AcrobatSyntaxError(AcrobatError):
    """The source uses a construct outside the modelling language."""


class AcrobatNameError(AcrobatError):
    """A name is undefined, defined twice, or not allowed."""


class UndeclaredSizeError(AcrobatNameError):
    """``sizes=`` binds names the program does not declare; ``names`` lists them, sorted."""

    def __init__(self, message: str, names: tuple[str, ...] = (), hint: str | None = None):
        self.names = tuple(names)
        super().__init__(message, None, hint)


class AcrobatTypeError(AcrobatError):
    """Types do not agree, an annotation is missing, or an op gets the wrong arguments."""


class AcrobatShapeError(AcrobatTypeError):
    """Tensor shapes do not agree with an op's shape rule."""


class SizeLimitError(AcrobatTypeError):
    """A declared size, a tensor or all the weights together are over a limit acrobat keeps
    (so a tiny source cannot make it allocate gigabytes); ``limit`` is that limit."""

    def __init__(
        self,
        message: str,
        span: Span | None = None,
        limit: int = 0,
        advice: str = "declare smaller sizes",
    ):
        self.limit = limit
        super().__init__(message, span, hint=f"the limit is {limit:,}; {advice}")


class AcrobatMatchError(AcrobatTypeError):
    """A ``match`` is not exhaustive or a pattern does not fit the scrutinee."""


class AcrobatPhaseError(AcrobatError):
    """``phase()`` appears somewhere other than the top level of the entry function."""


class IRParseError(AcrobatError):
    """The printed IR text could not be read back."""


class VerificationError(AcrobatError):
    """The IR broke an invariant (scoping, types, shapes, ANF)."""


class InstanceError(AcrobatError):
    """An input instance does not fit the program's entry signature."""

    def __init__(self, message: str, index: int | None = None, hint: str | None = None):
        self.index = index
        prefix = f"instance {index}: " if index is not None else ""
        super().__init__(prefix + message, None, hint)


class EvaluationError(AcrobatError):
    """A run-time failure inside the reference interpreter (e.g. item() of a non-scalar)."""


class BackendUnavailableError(AcrobatError):
    """The requested backend cannot run here (e.g. no CuPy, no CUDA driver, no device)."""


class NativeBuildError(AcrobatError, OSError):
    """Compiling native code failed: no compiler, a compiler error, or one past its time
    bound (``ACROBAT_CC_TIMEOUT``). Also an ``OSError``, as a missing compiler is."""


class PipelineError(AcrobatError):
    """A pass pipeline runs a pass before the module has what the pass requires."""


class MissingLoweringError(AcrobatError):
    """A kernel uses an op that a backend has no lowering rule for (``op`` names it)."""

    def __init__(self, op: str, backend: str, kernel: str, hint: str | None = None):
        self.op, self.backend, self.kernel = op, backend, kernel
        super().__init__(f"kernel {kernel}: no {backend} rule for op {op!r}", None, hint)


class IndexOutOfRange(Exception):
    """An embedding id outside its table; ``position`` is the row of the batch.

    Not an :class:`AcrobatError`: kernels raise it, and the executor turns it into the
    :class:`InstanceError` of the instance that recorded that row."""

    def __init__(self, position: int, value: int, size: int):
        super().__init__(f"id {value} is outside the table of {size} rows")
        self.position, self.value, self.size = position, value, size


class MissingExtraError(AcrobatError, ImportError):
    """An optional part of acrobat needs packages of an extra that is not installed.

    It is also an ``ImportError``, so ``import acrobat.viz`` fails the way a missing module does.
    """


class RunCancelled(Exception):
    """The run's :class:`acrobat.CancelToken` was set: the run stopped at its next check
    (before a launch, a flush or an instance) and its results are gone; the runtime is
    ready for the next run.

    Not an :class:`AcrobatError`: nothing is wrong with the program or its input, and code
    that handles those (``except AcrobatError``) must not swallow a cancel."""

    def __init__(self, message: str = "the run was cancelled (its CancelToken was set)"):
        super().__init__(message)
