"""The explorer's state: which model and size is shown, its program text, and the compiled IR.

No GUI imports here: the Panel viewers in ``acrobat.viz.panels`` watch these parameters, and tests
set them directly and assert on ``ir_text`` / ``error``.
"""

from __future__ import annotations

import re

import param

from acrobat import models
from acrobat.errors import AcrobatError
from acrobat.frontend import parse

SIZE_NAMES = ("tiny", "small", "large")
# The frontend's message when sizes are passed that the program does not declare.
_UNDECLARED_SIZES = re.compile(r"sizes \[(?P<names>[^\]]*)\] were given but the program declares")


class ExplorerState(param.Parameterized):
    """One model's program text and its IR; edits to ``source`` compile on ``compile()``."""

    model = param.Selector(default=None, objects=[], doc="catalog name of the model shown")
    size = param.Selector(default="small", objects=list(SIZE_NAMES), doc="named model size")
    source = param.String(default="", doc="program text in the modelling language")
    ir_text = param.String(default="", doc="output: the IR printed by Module.pretty()")
    error = param.String(default="", doc='output: the compile error, "" when the source compiled')
    error_line = param.Integer(default=None, allow_None=True, doc="output: 1-based error line")
    error_col = param.Integer(default=None, allow_None=True, doc="output: 0-based error column")
    sizes_used = param.Dict(default={}, doc="output: the size bindings the last compile passed")

    def __init__(self, **params):
        names = [info.name for info in models.catalog()]
        self.param.model.objects = names
        params.setdefault("model", names[0])
        super().__init__(**params)
        self.load_model()

    @property
    def info(self) -> models.ModelInfo:
        """The catalog entry of the chosen model (description, features, sizes)."""
        return next(info for info in models.catalog() if info.name == self.model)

    @param.depends("model", "size", watch=True)
    def load_model(self) -> None:
        """Replace ``source`` with the chosen model's program text and compile it."""
        self.source = models.source(self.model)
        self.compile()

    def compile(self) -> bool:
        """Parse ``source`` at the chosen size; set ``ir_text`` or ``error``. Never raises for
        an AcrobatError, so the app stays up whatever the user typed. Returns success."""
        try:
            sizes = models.sizes(self.model, self.size)
            module, used = _parse_with_declared_sizes(self.source, sizes, f"{self.model}.py")
            ir_text = module.pretty()
        except AcrobatError as err:
            self._fail(str(err), err.line, err.col)
            return False
        except Exception as err:  # a bug in acrobat, not in the program: show it, stay up
            self._fail(f"internal error while compiling (please report): {err!r}", None, None)
            return False
        self.param.update(error_line=None, error_col=None, sizes_used=used)
        self.param.update(ir_text=ir_text, error="")
        return True

    def _fail(self, message: str, line: int | None, col: int | None) -> None:
        # Outputs first, ``error`` last: viewers watching ``error`` see a consistent state.
        self.param.update(ir_text="", error_line=line, error_col=col, sizes_used={})
        self.error = message


def _parse_with_declared_sizes(source: str, sizes: dict[str, int], filename: str):
    """Parse with ``sizes``; if the (edited) program does not declare some of them, drop those
    and parse again, so a user's edit that removes a size still compiles."""
    try:
        return parse(source, sizes=sizes, filename=filename), sizes
    except AcrobatError as err:
        match = _UNDECLARED_SIZES.search(err.message)
        if not match:
            raise
        undeclared = set(re.findall(r"'(\w+)'", match["names"]))
        kept = {name: value for name, value in sizes.items() if name not in undeclared}
        if kept == sizes:  # the message named nothing we passed: fall back to the defaults
            kept = {}
        return parse(source, sizes=kept or None, filename=filename), kept
