"""The explorer's state: the program shown, how it is compiled and run, and the traces it gave.

No GUI imports here: the Panel viewers in ``acrobat.viz.panels`` / ``acrobat.viz.view_panels``
and the notebook widgets in ``acrobat.viz.widgets`` watch these parameters, and tests set them
directly and assert on the outputs (``ir_text``, ``error``, ``compile_trace``, ``trace_a``,
``trace_b``, ``comparison``). The source is parsed, never executed.
"""

from __future__ import annotations

from contextlib import contextmanager

import param

from acrobat import models
from acrobat.errors import AcrobatError, UndeclaredSizeError
from acrobat.frontend import parse
from acrobat.trace import Trace
from acrobat.viz import runner
from acrobat.viz.compare_view import CompareRow, compare_row, options_label
from acrobat.viz.ir_view import pipeline_stages
from acrobat.viz.trace_bundle import dumps, join_traces, loads, split_trace

SIZE_NAMES = ("tiny", "small", "large")


class ExplorerState(param.Parameterized):
    """One model's program, compiled with the chosen optimizations and run under two policies.

    ``compile()`` parses ``source`` and runs the pass pipeline; ``run()`` runs policy A and B on
    ``batch_size`` seeded instances. With ``auto_run`` (the app turns it on) every change of a
    setting recompiles or reruns what it affects: a policy change reruns only that side."""

    model = param.Selector(default=None, objects=[], doc="catalog name of the model shown")
    size = param.Selector(default="small", objects=list(SIZE_NAMES), doc="named model size")
    source = param.String(default="", doc="program text in the modelling language")
    ir_text = param.String(default="", doc="output: the IR printed by Module.pretty()")
    error = param.String(default="", doc='output: the compile error, "" when the source compiled')
    error_line = param.Integer(default=None, allow_None=True, doc="output: 1-based error line")
    error_col = param.Integer(default=None, allow_None=True, doc="output: 0-based error column")
    sizes_used = param.Dict(default={}, doc="output: the size bindings the last compile passed")

    batch_size = param.Integer(default=64, bounds=(1, 1024), doc="instances per run")
    seed = param.Integer(default=0, bounds=(0, None), doc="seed of the instances")
    backend = param.Selector(default="numpy", objects=list(runner.backend_choices()))
    optimizations = param.ListSelector(default=[], objects=[], doc="optimizations switched on")
    policy_a = param.Selector(default="acrobat", objects=list(runner.policy_names()))
    policy_b = param.Selector(default="dynet-depth", objects=list(runner.policy_names()))
    auto_run = param.Boolean(default=False, doc="rerun on every change of a setting")

    compile_trace = param.ClassSelector(class_=Trace, default=None, doc="output: passes, taint")
    trace_a = param.ClassSelector(class_=Trace, default=None, doc="output: policy A's run")
    trace_b = param.ClassSelector(class_=Trace, default=None, doc="output: policy B's run")
    run_error = param.String(default="", doc='output: why the last run failed, "" if it ran')
    timings = param.Dict(default={}, doc="output: compile_ms, run_a_ms, run_b_ms")
    comparison = param.List(default=[], item_type=CompareRow, doc="output: rows of runs so far")
    busy = param.Boolean(default=False, doc="output: True while compiling or running")
    origin = param.String(default="", doc="output: what the traces show (model run or file)")
    selected_batch = param.Tuple(
        default=None, allow_None=True, length=2, doc='("A" or "B", run-wide batch number)'
    )
    selected_node = param.Tuple(
        default=None, allow_None=True, length=2, doc='("A" or "B", DFG node number)'
    )

    def __init__(self, **params):
        names = [info.name for info in models.catalog()]
        self.param.model.objects = names
        switches = list(runner.optimization_names())
        self.param.optimizations.objects = switches
        # from the registries as they are now (a policy registered after import is offered)
        self.param.backend.objects = list(runner.backend_choices())
        self.param.policy_a.objects = list(runner.policy_names())
        self.param.policy_b.objects = list(runner.policy_names())
        params.setdefault("model", names[0])
        params.setdefault("optimizations", switches)
        self._compiled: runner.Compiled | None = None
        self._module = None
        self._weights: dict = {}
        self._spec = None
        self._quiet = 0
        self._busy = 0
        self._workload: tuple = ()
        super().__init__(**params)
        self.load_model()

    @property
    def info(self) -> models.ModelInfo:
        """The catalog entry of the chosen model (description, features, sizes)."""
        return next(info for info in models.catalog() if info.name == self.model)

    @property
    def disabled(self) -> tuple[str, ...]:
        """The optimizations switched off, in pipeline order."""
        return tuple(n for n in self.param.optimizations.objects if n not in self.optimizations)

    @param.depends("model", "size", watch=True)
    def load_model(self) -> None:
        """Replace ``source`` with the chosen model's program text, compile it, run if live."""
        self._spec = None
        self.source = models.source(self.model)
        self.compile_and_run()

    def compile_and_run(self) -> bool:
        """``compile()``, then ``run()`` when ``auto_run`` is on. Returns success."""
        with self._working():
            return self.compile() and (not self.auto_run or self.run())

    def compile(self) -> bool:
        """Parse ``source`` at the chosen size and run the passes; set ``ir_text`` and
        ``compile_trace``, or ``error``. Never raises, so the app stays up whatever the user
        typed. Earlier runs are cleared: they belong to the previous program. Returns success."""
        self._compiled = None
        self.param.update(trace_a=None, trace_b=None, run_error="", origin="")
        try:
            with self._working():
                sizes = models.sizes(self.model, self.size)
                module, used = _parse_with_declared_sizes(self.source, sizes, f"{self.model}.py")
                ir_text = module.pretty()
                weights = self._params(module)
                self._compiled = runner.compile_module(module, weights, self.disabled)
                self._module, self._weights = module, weights
        except AcrobatError as err:
            self._fail(str(err), err.line, err.col)
            return False
        except Exception as err:  # a bug in acrobat, not in the program: show it, stay up
            self._fail(f"internal error while compiling (please report): {err!r}", None, None)
            return False
        self.timings = {"compile_ms": self._compiled.ms}
        self.param.update(error_line=None, error_col=None, sizes_used=used)
        self.param.update(ir_text=ir_text, compile_trace=self._compiled.trace, error="")
        return True

    def _fail(self, message: str, line: int | None, col: int | None) -> None:
        # Outputs first, ``error`` last: viewers watching ``error`` see a consistent state.
        self.param.update(ir_text="", error_line=line, error_col=col, sizes_used={})
        self.param.update(compile_trace=None, timings={})
        self.error = message

    def run(self, sides: tuple[str, ...] = ("a", "b")) -> bool:
        """Run policy A and/or B on ``batch_size`` instances; set ``trace_a`` / ``trace_b`` or
        ``run_error`` (never raises). Compiles first if needed. Returns success."""
        with self._working():
            if self._compiled is None and not self.compile():
                return False
            try:
                instances = self._model_spec().instances(self.batch_size, self.seed)
                runs = {}
                for side in sides:
                    policy = self.policy_a if side == "a" else self.policy_b
                    same = [r for r in runs.values() if r.policy == policy]
                    runs[side] = same[0] if same else self._run_one(instances, policy)
            except AcrobatError as err:
                self.param.update(**{f"trace_{side}": None for side in sides})
                self.run_error = f"the program could not run on {self.model}'s inputs: {err}"
                return False
            except Exception as err:  # a bug in acrobat: show it, stay up
                self.param.update(**{f"trace_{side}": None for side in sides})
                self.run_error = f"internal error while running (please report): {err!r}"
                return False
            timings = dict(self.timings, **{f"run_{side}_ms": r.ms for side, r in runs.items()})
            traces = {f"trace_{side}": r.trace for side, r in runs.items()}
            self.param.update(timings=timings, run_error="", origin=self._describe(), **traces)
            return True

    def _run_one(self, instances: list, policy: str) -> runner.Ran:
        ran = runner.run_program(self._compiled, instances, policy, self.backend)
        self._record(compare_row(ran.trace, options_label(self.disabled)))
        return ran

    def _record(self, *new: CompareRow) -> None:
        """Add rows to ``comparison`` (each replaces one of the same policy and options); rows
        of another workload (model, size, batch, seed, backend or source) are dropped first."""
        workload = (self.model, self.size, self.batch_size, self.seed, self.backend, self.source)
        rows = [] if workload != self._workload else list(self.comparison)
        self._workload = workload
        for row in new:
            rows = [r for r in rows if (r.policy, r.options) != (row.policy, row.options)]
            rows.append(row)
        self.comparison = rows

    def _describe(self) -> str:
        edited = " (edited)" if self.source != models.source(self.model) else ""
        return (
            f"{self.model}{edited}, {self.size}, {self.batch_size} instances, seed {self.seed}, "
            f"{self.backend}, {options_label(self.disabled)}"
        )

    def _live(self) -> bool:
        return self.auto_run and not self._quiet and not self.error

    @param.depends("policy_a", watch=True)
    def _policy_a_changed(self) -> None:
        if self._live():
            self.run(("a",))

    @param.depends("policy_b", watch=True)
    def _policy_b_changed(self) -> None:
        if self._live():
            self.run(("b",))

    @param.depends("batch_size", "seed", "backend", watch=True)
    def _workload_changed(self) -> None:
        if self._live():
            self.run()

    @param.depends("trace_a", "trace_b", watch=True)
    def _clear_selection(self) -> None:
        """A new run ends the selection: its batch and node numbers were the old run's."""
        self.param.update(selected_batch=None, selected_node=None)

    @param.depends("optimizations", watch=True)
    def _options_changed(self) -> None:
        if not self._quiet:
            self.compile_and_run()

    def compare_policies(self) -> bool:
        """Run every policy with the current options; each adds a row to ``comparison``."""
        return self._compare([(policy, self.disabled) for policy in runner.policy_names()])

    def compare_options(self) -> bool:
        """Run policy A with every optimization on, then with each one off alone (an
        ablation); each adds a row to ``comparison``. The settings and views stay as they are."""
        switches = self.param.optimizations.objects
        return self._compare([(self.policy_a, ())] + [(self.policy_a, (n,)) for n in switches])

    def _compare(self, runs: list[tuple[str, tuple[str, ...]]]) -> bool:
        """Compile and run each (policy, disabled optimizations) aside from the shown runs."""
        with self._working():
            if self._compiled is None and not self.compile():
                return False
            compiled = {self.disabled: self._compiled}
            rows = []
            try:
                instances = self._model_spec().instances(self.batch_size, self.seed)
                for policy, disabled in runs:
                    if disabled not in compiled:
                        compiled[disabled] = runner.compile_module(
                            self._module, self._weights, disabled
                        )
                    ran = runner.run_program(compiled[disabled], instances, policy, self.backend)
                    rows.append(compare_row(ran.trace, options_label(disabled)))
            except AcrobatError as err:
                self.run_error = f"the comparison could not run: {err}"
                return False
            finally:
                self._record(*rows)
            return True

    @contextmanager
    def _quietly(self):
        """Change settings without the watchers recompiling or rerunning."""
        self._quiet += 1
        try:
            yield
        finally:
            self._quiet -= 1

    def session_trace(self) -> Trace:
        """The compile trace followed by policy A's and policy B's runs, as one trace."""
        return join_traces(self.compile_trace, self.trace_a, self.trace_b)

    def trace_text(self) -> str:
        """``session_trace()`` as JSON Lines text (what the download button saves)."""
        return dumps(self.session_trace())

    def load_trace_text(self, text: str, name: str = "uploaded trace") -> bool:
        """Show a trace saved by ``trace_text()`` (or ``Trace.save``): its passes and its first
        two runs as policy A and B. Nothing is rerun. Sets ``run_error`` if it is no trace."""
        try:
            with self._working():
                bundle = split_trace(loads(text, name))
        except ValueError as err:
            self.run_error = f"could not read {name}: {err}"
            return False
        if not bundle.runs and not len(bundle.compile):
            self.run_error = f"{name} holds no trace events"
            return False
        runs = list(bundle.runs) + [None, None]
        stages = pipeline_stages(bundle.compile)
        self._compiled = None
        with self._quietly():
            for side, trace in zip("ab", runs[:2]):
                policy = _policy_of(trace)
                if policy in self.param.policy_a.objects:
                    setattr(self, f"policy_{side}", policy)
            self.param.update(
                compile_trace=bundle.compile if len(bundle.compile) else None,
                ir_text=stages[0].text if stages else "",
                trace_a=runs[0],
                trace_b=runs[1],
                comparison=[compare_row(t) for t in bundle.runs if _finished(t)],
                timings={},
                run_error="",
                origin=f"{name} ({len(bundle.runs)} run(s); nothing was rerun)",
            )
        return True

    def _model_spec(self):
        if self._spec is None or (self._spec.name, self._spec.size) != (self.model, self.size):
            self._spec = runner.load_spec(self.model, self.size)
        return self._spec

    def _params(self, module) -> dict:
        edited = self.source != models.source(self.model)
        return runner.fresh_params(module) if edited else self._model_spec().params

    @contextmanager
    def _working(self):
        """Set ``busy`` for the outermost of nested compile/run calls."""
        self._busy += 1
        if self._busy == 1:
            self.busy = True
        try:
            yield
        finally:
            self._busy -= 1
            if self._busy == 0:
                self.busy = False


def _parse_with_declared_sizes(source: str, sizes: dict[str, int], filename: str):
    """Parse with ``sizes``; if the (edited) program does not declare some of them, drop those
    and parse again, so a user's edit that removes a size still compiles."""
    try:
        return parse(source, sizes=sizes, filename=filename), sizes
    except UndeclaredSizeError as err:
        kept = {name: value for name, value in sizes.items() if name not in err.names}
        if kept == sizes:  # the error named nothing we passed: fall back to the defaults
            kept = {}
        return parse(source, sizes=kept or None, filename=filename), kept


def _policy_of(trace: Trace | None) -> str | None:
    if trace is None:
        return None
    summaries = [e for e in trace.events if e.kind in ("ScheduleFormed", "BatchFormed")]
    return getattr(summaries[0], "policy", None) if summaries else None


def _finished(trace: Trace) -> bool:
    return any(e.kind == "RunSummary" for e in trace.events)
