"""The explorer's state: the program shown, how it is compiled and run, and the traces it gave.

No GUI imports here: the Panel viewers in ``acrobat.viz.panels`` / ``acrobat.viz.view_panels``
and the notebook widgets in ``acrobat.viz.widgets`` watch these parameters, and tests set them
directly and assert on the outputs (``ir_text``, ``error``, ``compile_trace``, ``trace_a``,
``trace_b``, ``comparison``, ``timing``). The source is parsed, never executed.

Timings follow ``acrobat.measure``: after the traced runs the views draw, the policies run as a
plain ``acrobat.run`` call runs them (no node records), interleaved, ``WARMUP`` dropped rounds
then ``repeats`` timed ones. Every time shown (status line, Compare and Ablate rows, Timeline)
is a median with its spread from one record of the timed runs (``record``, a
:class:`~acrobat.viz.timing_record.TimingRecord`). With ``background=True`` (the app) the work runs on one worker thread
per store, so the server keeps answering: ``busy``, ``progress`` and ``progress_text`` say what
it is doing, :meth:`ExplorerState.cancel` stops it mid-run (each job's ``acrobat.CancelToken``
is given to its runs: they stop before their next launch), and a new request supersedes
the work in flight (the newest setting wins).
"""

from __future__ import annotations

import dataclasses
import logging
import queue
import threading
import time
from collections.abc import Mapping
from contextlib import contextmanager

import param

from acrobat import models
from acrobat.errors import (
    AcrobatError,
    BackendUnavailableError,
    MissingLoweringError,
)
from acrobat.trace import ConfigurationTimed, SessionSettings, Trace
from acrobat.viz import runner
from acrobat.viz.compare_view import CompareRow, compare_row, options_label
from acrobat.viz.compile_worker import CompileJob, CompileStopped, compile_isolated
from acrobat.viz.ir_view import pipeline_stages
from acrobat.viz.progress import Calibration, RunPlan, Ticker
from acrobat.viz.timing_record import RunTiming, TimedRun, TimingRecord
from acrobat.viz.trace_bundle import dumps, join_traces, loads, split_trace

_log = logging.getLogger("acrobat.explorer")

SIZE_NAMES = ("tiny", "small", "large")
WARMUP = 1  # dropped rounds before the timed ones
DEFAULT_REPEATS = 5  # timed rounds per policy, by default
DEFAULT_BATCH = 64  # a model's batch when the user has not picked one ...
MIN_DEFAULT_BATCH = 8  # ... halved down to this while one run is estimated over:
RUN_BUDGET_MS = 1000.0
JOB_BUDGET_MS = 15_000.0  # timed repeats are cut so one request stays near this
MAX_UPLOAD_MB = 32  # the largest trace file the explorer opens
EDITED_NAME = "edited.py"  # what errors in an edited source call the file


class ExplorerState(param.Parameterized):
    """One model's program, compiled with the chosen optimizations and run under two policies.

    ``compile()`` parses ``source`` and runs the pass pipeline; ``run()`` runs policy A and B on
    ``batch_size`` seeded instances (traced, for the views) and times them (interleaved,
    ``repeats`` rounds). With ``auto_run`` (the app turns it on) every change of a setting
    recompiles or reruns what it affects: a policy change reruns only that side's traced run.
    With ``background`` (the app turns it on too) that work runs on this store's worker thread.
    """

    model = param.Selector(default=None, objects=[], doc="catalog name of the model shown")
    size = param.Selector(default="small", objects=list(SIZE_NAMES), doc="named model size")
    source = param.String(default="", doc="program text in the modelling language")
    ir_text = param.String(default="", doc="output: the IR printed by Module.pretty()")
    error = param.String(default="", doc='output: the compile error, "" when the source compiled')
    error_line = param.Integer(default=None, allow_None=True, doc="output: 1-based error line")
    error_col = param.Integer(default=None, allow_None=True, doc="output: 0-based error column")
    sizes_used = param.Dict(default={}, doc="output: the size bindings the last compile passed")

    batch_size = param.Integer(default=DEFAULT_BATCH, bounds=(1, 1024), doc="instances per run")
    seed = param.Integer(default=0, bounds=(0, None), doc="seed of the instances")
    backend = param.Selector(default="numpy", objects=list(runner.backend_choices()))
    optimizations = param.ListSelector(default=[], objects=[], doc="optimizations switched on")
    policy_a = param.Selector(default="acrobat", objects=list(runner.policy_names()))
    policy_b = param.Selector(default="dynet-depth", objects=list(runner.policy_names()))
    repeats = param.Integer(
        default=DEFAULT_REPEATS, bounds=(1, 50), doc="timed rounds of every policy per run"
    )
    auto_run = param.Boolean(default=False, doc="rerun on every change of a setting")
    background = param.Boolean(
        default=False, constant=True, doc="compile and run on a worker thread (the app)"
    )

    compile_trace = param.ClassSelector(class_=Trace, default=None, doc="output: passes, taint")
    trace_a = param.ClassSelector(class_=Trace, default=None, doc="output: policy A's run")
    trace_b = param.ClassSelector(class_=Trace, default=None, doc="output: policy B's run")
    run_error = param.String(default="", doc='output: why the last run failed, "" if it ran')
    timings = param.Dict(default={}, doc="output: compile_ms, run_a_ms, run_b_ms (medians)")
    timing = param.ClassSelector(
        class_=RunTiming, default=None, doc="output: the record's times of policy A and B"
    )
    record = param.ClassSelector(
        class_=TimingRecord,
        default=TimingRecord(),
        instantiate=False,
        doc="output: every configuration timed on this workload (all times shown are its)",
    )
    comparison = param.List(default=[], item_type=CompareRow, doc="output: rows of runs so far")
    gap = param.Parameter(
        default=None, doc="output: acrobat.gap_report of the workload shown (on request), or None"
    )
    busy = param.Boolean(default=False, doc="output: True while compiling or running")
    progress = param.Integer(default=-1, bounds=(-1, 100), doc="output: percent done, -1: unknown")
    progress_text = param.String(default="", doc="output: what the work in flight is doing")
    notice = param.String(default="", doc="output: a note on the last run (cancelled, cut)")
    reproduce = param.String(
        default="", doc="output: the CLI commands that rerun the timed runs, one a line, or ''"
    )
    origin = param.String(default="", doc="output: what the traces show (model run or file)")
    viewing = param.String(
        default="", doc="output: the file shown read-only (a trace without settings), or ''"
    )
    selected_batch = param.Tuple(
        default=None, allow_None=True, length=2, doc='("A" or "B", run-wide batch number)'
    )
    selected_node = param.Tuple(
        default=None, allow_None=True, length=2, doc='("A" or "B", DFG node number)'
    )

    def __init__(self, start: bool = True, **params):
        """``start=False`` loads the model's source but compiles nothing until ``start()``:
        the app starts its store once the page is in the browser, so no update made on the
        worker can land before the page's models exist (it would be lost)."""
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
        # a batch the caller picks is kept; the default one is lowered for expensive models
        self._batch_chosen = "batch_size" in params
        self._compiled: runner.Compiled | None = None
        self._module = None
        self._weights: dict = {}
        self._spec = None
        self._quiet = 0
        self._busy = 0
        self._measured = 0  # measurements so far (an entry says which one timed it)
        self._lock = threading.RLock()
        self._tokens: list[runner.CancelToken] = []  # one per queued or running job
        self._local = threading.local()  # the token of the job this thread runs
        self._jobs: queue.SimpleQueue | None = None  # the worker thread's queue
        self._last_progress = 0.0
        self._results: dict = {}
        self._estimates: dict = {}  # the last probe (a run's cost before calibration)
        self._calibration = Calibration()  # measured runs against their probes
        self._started = start
        self._shown: dict = {}  # the run settings of the traces shown (see cancel())
        super().__init__(**params)
        self.load_model()

    def start(self) -> None:
        """Compile (and run, when live) the program shown, if the store was made with
        ``start=False`` and has not started yet."""
        if not self._started:
            self._started = True
            self.submit(self.compile_and_run)

    @property
    def info(self) -> models.ModelInfo:
        """The catalog entry of the chosen model (description, features, sizes)."""
        return next(info for info in models.catalog() if info.name == self.model)

    @property
    def disabled(self) -> tuple[str, ...]:
        """The optimizations switched off, in pipeline order."""
        return tuple(n for n in self.param.optimizations.objects if n not in self.optimizations)

    # --- work: inline, or on the worker thread ------------------------------------------------

    def submit(self, fn, *args) -> None:
        """Do ``fn(*args)`` now (inline), or with ``background`` on the worker thread after
        cancelling the work in flight (a new request supersedes it)."""
        if not self.background:
            fn(*args)
            return
        token = runner.CancelToken()
        with self._lock:
            for old in self._tokens:
                old.set()
            self._tokens.append(token)
            if self._jobs is None:
                self._jobs = queue.SimpleQueue()
                # a daemon: a server told to stop (SIGTERM) exits without waiting for a run
                threading.Thread(target=self._serve, name="explorer", daemon=True).start()
            self._enter_busy()
        self._jobs.put((fn, args, token))

    def _serve(self) -> None:
        while (job := self._jobs.get()) is not None:
            self._job(*job)

    def close(self) -> None:
        """The page is gone: stop the work in flight (a compiling child is killed within
        ``compile_worker.POLL_S``) and end the worker thread once it is idle."""
        self.cancel()
        with self._lock:
            if self._jobs is not None:
                self._jobs.put(None)
                self._jobs = None

    def _job(self, fn, args, token: runner.CancelToken) -> None:
        self._local.token = token
        try:
            if not token.is_set():
                fn(*args)
        except runner.Cancelled:
            pass  # the canceller said so (cancel() or a newer request)
        except Exception as err:  # a bug in acrobat: show it, keep the worker alive
            self.run_error = f"internal error (please report): {err!r}"
        finally:
            self._local.token = None
            with self._lock:
                if token in self._tokens:
                    self._tokens.remove(token)
                self._leave_busy()

    def cancel(self) -> None:
        """Stop the work in flight and drop queued work: a compiling child is killed within
        ``compile_worker.POLL_S``, a run before its next kernel launch. What had finished stays
        shown, and the sidebar goes back at once to the settings of the runs shown; the
        progress line says "cancelling…" until the job has stopped."""
        with self._lock:
            tokens = list(self._tokens) + [getattr(self._local, "token", None)]
            for token in tokens:
                if token is not None:
                    token.set()
        if self.busy:
            # the sidebar goes back to the settings of what the views show, at once
            changed = {k: v for k, v in self._shown.items() if getattr(self, k) != v}
            with self._quietly():
                self.param.update(**changed)
            self.param.update(
                notice="Cancelled: the views show what had finished.",
                progress_text="cancelling…",
                progress=-1,
            )

    def _run_settings(self) -> dict:
        """The settings a run reads (what ``cancel()`` puts back in the sidebar)."""
        names = ("batch_size", "seed", "backend", "policy_a", "policy_b", "repeats")
        return {name: getattr(self, name) for name in names}

    def wait(self, timeout: float | None = None) -> bool:
        """Block until no work is queued or running; ``True`` if idle, ``False`` when
        ``timeout`` (seconds) passed first. (For notebooks and tests of ``background``.)"""
        deadline = None if timeout is None else time.monotonic() + timeout
        while self._busy:
            if deadline is not None and time.monotonic() > deadline:
                return False
            time.sleep(0.01)
        return True

    def _stopping(self) -> bool:
        """Whether this thread's job was cancelled (polled while a child compiles)."""
        token = getattr(self._local, "token", None)
        return token is not None and token.is_set()

    @property
    def _token(self) -> runner.CancelToken | None:
        """This thread's job's token: the runs it starts stop mid-run once it is set."""
        return getattr(self._local, "token", None)

    def _check(self) -> None:
        """Raise ``runner.Cancelled`` if this thread's job was cancelled."""
        token = getattr(self._local, "token", None)
        if token is not None and token.is_set():
            raise runner.Cancelled()

    def _set_progress(self, percent: int, text: str, force: bool = True) -> None:
        if self._stopping():
            return  # "cancelling…" stays until the job ends
        now = time.monotonic()
        if force or now - self._last_progress > 0.1:  # at most ten updates a second
            self._last_progress = now
            self.param.update(progress=max(-1, min(100, int(percent))), progress_text=text)

    def _enter_busy(self) -> None:
        with self._lock:
            self._busy += 1
            if self._busy == 1:
                self.param.update(busy=True, notice="")

    def _leave_busy(self) -> None:
        with self._lock:
            self._busy -= 1
            if self._busy == 0:
                self.param.update(busy=False, progress=-1, progress_text="")

    @contextmanager
    def _working(self):
        """Set ``busy`` for the outermost of nested compile/run calls; a synchronous call on
        a thread that runs no job gets its own cancel token (so ``cancel()`` reaches it)."""
        own = getattr(self._local, "token", None) is None
        if own:
            self._local.token = runner.CancelToken()
            with self._lock:
                self._tokens.append(self._local.token)
        self._enter_busy()
        try:
            yield
        finally:
            self._leave_busy()
            if own:
                with self._lock:
                    if self._local.token in self._tokens:
                        self._tokens.remove(self._local.token)
                self._local.token = None

    # --- compiling ------------------------------------------------------------------------------

    @param.depends("model", "size", watch=True)
    def load_model(self) -> None:
        """Replace ``source`` with the chosen model's program text, compile it, run if live."""
        if self._quiet:
            return
        self._spec = None
        self.viewing = ""
        self.source = models.source(self.model)
        if self._started:
            self.submit(self.compile_and_run)

    def compile_and_run(self) -> bool:
        """``compile()``, then ``run()`` when ``auto_run`` is on. Returns success."""
        with self._working():
            if not self.compile():
                return False
            if not self.auto_run:
                return True
            self._lower_default_batch()
            return self.run()

    def compile(self) -> bool:
        """Parse ``source`` at the chosen size and run the passes; set ``ir_text`` and
        ``compile_trace``, or ``error``. Never raises, so the app stays up whatever the user
        typed. Earlier runs are cleared: they belong to the previous program. Returns success."""
        self._compiled = None
        self.param.update(
            trace_a=None, trace_b=None, run_error="", origin="", timing=None, reproduce=""
        )
        # one reading of what to compile: a setting that changes meanwhile (another thread)
        # cannot pair one model's source with another size's weights
        model, size, source = self.model, self.size, self.source
        try:
            with self._working():
                self._set_progress(-1, f"compiling {model} ({size})")
                # the size preset is the built-in source's; an edited one keeps its own sizes
                # (and is not called by the model's file name)
                edited = source != models.source(model)
                job = CompileJob(
                    source=source,
                    filename=EDITED_NAME if edited else f"{model}.py",
                    sizes={} if edited else models.sizes(model, size),
                    disabled=self.disabled,
                    model=model,
                    size=size,
                    edited=edited,
                )
                out = compile_isolated(job, self._stopping)
                if out.error:
                    self._fail(out.error, out.line, out.col)
                    return False
                self._compiled, self._module, self._weights = out.compiled, out.module, out.weights
                used, ir_text = out.used_sizes, out.ir_text
        except CompileStopped:
            raise runner.Cancelled() from None
        except AcrobatError as err:
            # a built-in model's own source failing is never the user's doing: say so
            level = logging.WARNING if source == models.source(model) else logging.INFO
            _log.log(level, "compiling %s (%s) failed: %s", model, size, err)
            self._fail(str(err), err.line, err.col)
            return False
        except Exception as err:  # a bug in acrobat, not in the program: show it, stay up
            _log.warning("internal error compiling %s (%s): %r", model, size, err, exc_info=True)
            self._fail(f"internal error while compiling (please report): {err!r}", None, None)
            return False
        self.timings = {"compile_ms": self._compiled.ms}
        self.param.update(error_line=None, error_col=None, sizes_used=used)
        self.param.update(ir_text=ir_text, compile_trace=self._compiled.trace, error="")
        return True

    def _fail(self, message: str, line: int | None, col: int | None) -> None:
        # Outputs first, ``error`` last: viewers watching ``error`` see a consistent state.
        self.param.update(ir_text="", error_line=line, error_col=col, sizes_used={})
        self.param.update(compile_trace=None, timings={}, timing=None, reproduce="")
        self.error = message

    def _lower_default_batch(self) -> None:
        """If the user has not picked a batch, halve the default while one run of it is
        estimated over ``RUN_BUDGET_MS`` (down to ``MIN_DEFAULT_BATCH``), and say so."""
        if self._batch_chosen or self._compiled is None:
            return
        batch = DEFAULT_BATCH
        try:
            instances = self._instances(batch)
            estimate = self._estimate(instances, self.policy_a)
            if estimate > RUN_BUDGET_MS:  # a first probe in a fresh process can pay one-time
                self._estimates = {}  # costs (imports, thread pools): probe again, keep the less
                estimate = min(estimate, self._estimate(instances, self.policy_a))
        except AcrobatError:
            return  # run() reports it
        while estimate > RUN_BUDGET_MS and batch > MIN_DEFAULT_BATCH:
            batch //= 2
            estimate /= 2
        if batch != self.batch_size:
            with self._quietly():
                self.batch_size = batch
            if batch < DEFAULT_BATCH:
                self.notice = (
                    f"Batch lowered to {batch} for {self.model}: a run of {DEFAULT_BATCH} "
                    "instances is estimated to take over "
                    f"{RUN_BUDGET_MS * DEFAULT_BATCH / batch / 1000:.1f} s. "
                    "Raise it with the slider."
                )

    # --- running and timing ---------------------------------------------------------------------

    def run(self, sides: tuple[str, ...] = ("a", "b")) -> bool:
        """Run policy A and/or B traced (the views draw these) on ``batch_size`` instances,
        then time both policies interleaved; set ``trace_a`` / ``trace_b``, ``timing`` and
        ``timings``, or ``run_error`` (never raises). A side with no trace yet runs too.
        Compiles first if needed. Returns success (``False`` when cancelled)."""
        with self._working():
            if self._compiled is None and not self.compile():
                return False
            sides = tuple(s for s in "ab" if s in sides or self._trace(s) is None)
            policies = {"a": self.policy_a, "b": self.policy_b}
            # the times shown are of the settings shown, or none
            self.param.update(timing=None, reproduce="")
            try:
                instances = self._instances(self.batch_size)
                measured = tuple(dict.fromkeys(policies.values()))
                first = policies[sides[0]]
                repeats, note = self._plan(instances, first, len(measured), sides)
                traced = len({policies[side] for side in sides})
                plan = self._run_plan(instances, first, traced, len(measured), repeats, note)
                ticker = self._ticking(plan)
                runs: dict[str, runner.Ran] = {}
                with ticker:
                    for side in sides:
                        self._check()
                        policy = policies[side]
                        same = [r for r in runs.values() if r.policy == policy]
                        if same:  # the same policy on both sides: one run
                            runs[side] = same[0]
                            continue
                        ticker.say(f"running {side.upper()} ({policy}) with tracing")
                        runs[side] = self._traced(instances, policy)
                        plan.finish()
                    traces = {f"trace_{side}": r.trace for side, r in runs.items()}
                    other = {"a": "b", "b": "a"}
                    for side in sides:  # the same policy on both sides: shown twice
                        if policies[other[side]] == policies[side] and other[side] not in runs:
                            traces[f"trace_{other[side]}"] = runs[side].trace
                    self.param.update(run_error="", origin=self._describe(runs), **traces)
                    self._shown = self._run_settings()
                    configs = {
                        p: runner.run_stats(self._compiled, instances, p, self.backend, self._token)
                        for p in measured
                    }
                    options = options_label(self.disabled)
                    labels = {p: (p, options) for p in measured}
                    self._time(configs, labels, repeats, note, ticker)
                self._calibrate(instances, first, plan)
            except runner.Cancelled:
                self.param.update(timing=None)
                return False
            except AcrobatError as err:
                self.param.update(**{f"trace_{side}": None for side in sides}, timing=None)
                self.run_error = self._run_failure(err)
                return False
            except Exception as err:  # a bug in acrobat: show it, stay up
                self.param.update(**{f"trace_{side}": None for side in sides}, timing=None)
                self.run_error = f"internal error while running (please report): {err!r}"
                return False
            self.reproduce = self._reproduce(measured, self.timing)
            return True

    def _reproduce(self, policies: tuple[str, ...], timing: RunTiming) -> str:
        """One ``python -m acrobat.bench run`` command per policy timed, or "" for an edited
        source (the command line runs the built-in programs only)."""
        if self.source != models.source(self.model):
            return ""
        return "\n".join(
            runner.reproduce_command(
                self.model,
                self.size,
                self.batch_size,
                self.seed,
                policy,
                self.backend,
                self.disabled,
                timing.repeats,
                timing.warmup,
            )
            for policy in policies
        )

    def _trace(self, side: str) -> Trace | None:
        return self.trace_a if side == "a" else self.trace_b

    def _traced(self, instances: list, policy: str) -> runner.Ran:
        return runner.run_program(self._compiled, instances, policy, self.backend, self._token)

    def _run_failure(self, err: AcrobatError, what: str = "") -> str:
        """Why a run failed: the backend (named, with its reason) when it is to blame, else
        the program on the model's inputs."""
        if isinstance(err, BackendUnavailableError):
            hint = f" ({err.hint})" if err.hint else ""
            return f"the {self.backend} backend cannot run here: {err.message}{hint}"
        if isinstance(err, MissingLoweringError):
            return f"the {err.backend} backend cannot run this program: {err.message}"
        what = what or f"the program could not run on {self.model}'s inputs"
        return f"{what}: {err}"

    def _plan(self, instances: list, policy: str, configs: int, traced=()) -> tuple[int, str]:
        """Timed rounds for this request: ``repeats``, cut so the traced runs and the timed
        ones of ``configs`` policies stay near ``JOB_BUDGET_MS`` (from a probe of one run)."""
        estimate = self._estimate(instances, policy)
        wanted = self.repeats
        runs = len(traced) + configs * (WARMUP + wanted)
        if estimate * runs <= JOB_BUDGET_MS:
            return wanted, ""
        fit = int((JOB_BUDGET_MS / max(estimate, 1e-3) - len(traced)) / configs) - WARMUP
        repeats = max(1, min(wanted, fit))
        note = (
            f"{repeats} timed round(s) instead of {wanted}: one run is estimated at "
            f"{estimate / 1000:.1f} s"
        )
        return repeats, note

    def _estimate(self, instances: list, policy: str) -> float:
        """One run's estimate: ``runner.probe_ms`` (once per program, batch, seed, policy and
        backend) times what this session measured against its probes (``_calibration``)."""
        return self._calibration.estimate_ms(self._probe(instances, policy))

    def _probe(self, instances: list, policy: str) -> float:
        key = (id(self._compiled), len(instances), self.seed, policy, self.backend)
        if key not in self._estimates:
            self._set_progress(-1, f"estimating one run of {len(instances)} instances")
            self._estimates = {
                key: runner.probe_ms(self._compiled, instances, policy, self.backend, self._token)
            }
        return self._estimates[key]

    def _run_plan(self, instances, policy, traced, configs, repeats, note) -> RunPlan:
        """The runs of a request: ``traced`` traced ones, then ``configs`` configurations'
        dropped and timed rounds, each estimated like one run of ``policy``."""
        timed = configs * (_warmup(repeats, note) + repeats)
        return RunPlan(traced + timed, self._estimate(instances, policy))

    def _calibrate(self, instances: list, policy: str, plan: RunPlan) -> None:
        """Keep how the request's runs compared with its probe, for the next estimates."""
        if plan.done:
            self._calibration.add(self._probe(instances, policy), plan.per_run_ms())

    def _ticking(self, plan: RunPlan) -> Ticker:
        """A :class:`Ticker` moving the bar through ``plan`` until this job is cancelled
        (then "cancelling…" stays)."""
        token = getattr(self._local, "token", None)

        def show(percent: int, text: str, force: bool) -> None:
            if token is None or not token.is_set():
                self._set_progress(percent, text, force)

        plan.start()
        return Ticker(plan, show)

    def _time(self, configs: dict, labels: dict, repeats: int, note: str, ticker) -> None:
        """Time ``configs`` interleaved, with progress (``ticker``) and cancellation between
        runs, and put each in the record as ``labels[name]`` (its policy and options)."""
        what = f"timing {', '.join(configs)}"

        def on_run(done: int, total: int) -> None:
            self._check()
            ticker.plan.finish()
            ticker.say(what)

        ticker.say(what)
        m = runner.time_runs(configs, repeats, _warmup(repeats, note), on_run)
        self._results = dict(m.results)  # each configuration's last stats
        others = m.load.other_busy if m.load.other_busy == m.load.other_busy else 0.0
        self._measured += 1
        timed, runs = [], {}
        for name, fn in configs.items():
            policy, options = labels[name]
            walls = m.samples[name]["wall_ms"]
            timed.append(self._entry(m, name, policy, options, others, note))
            traces = getattr(fn, "traces", ())[m.warmup :]
            if len(traces) == len(walls):
                middle = m.spread(name).median
                k = min(range(len(walls)), key=lambda i: abs(walls[i] - middle))
                runs[(policy, options)] = TimedRun(traces[k], walls[k], k + 1, len(walls))
        self._put_record(self.record.updated(self._workload_now(), timed, runs))

    def _entry(self, m, name: str, policy: str, options: str, others: float, note: str):
        """The record's entry of configuration ``name`` of measurement ``m``."""
        stats = self._results.get(name)  # an acrobat.RunStats (a Mapping) from a plain run
        stats = stats if isinstance(stats, Mapping) else {}

        def median(*metrics: str) -> float:
            return sum(m.spread(name, k).median for k in metrics if k in m.samples[name])

        strategy = ""
        if stats.get("strategy", "batched") != "batched":
            why = stats.get("strategy_reason", "")
            strategy = f"{stats['strategy']}" + (f" ({why})" if why else "")
        return ConfigurationTimed(
            policy=policy,
            options=options,
            wall_ms=tuple(m.samples[name]["wall_ms"]),
            host_ms=median("gen_ms", "sched_ms"),
            exe_ms=median("exe_ms"),
            launches=int(stats.get("launches", 0)),
            mean_batch=float(stats.get("mean_batch", 0.0)),
            lower_bound=int(stats.get("lower_bound", 0)),
            nodes=int(stats.get("nodes", 0)),
            strategy=strategy,
            measurement=self._measured,
            warmup=m.warmup,
            others_busy=others,
            load=str(m.load),
            note=note,
        )

    def _workload_now(self) -> tuple:
        """What the timed runs run on: entries of another workload are dropped."""
        return (self.model, self.size, self.batch_size, self.seed, self.backend, self.source)

    def _put_record(self, record: TimingRecord) -> None:
        """Set the record and what every screen reads from it: the Compare rows, and the
        timing of policy A and B at the options shown (status line, Timeline)."""
        timing = record.timing((self.policy_a, self.policy_b), options_label(self.disabled))
        medians = {}
        if timing is not None:
            medians = {
                f"run_{side}_ms": timing.spreads[policy].median
                for side, policy in (("a", self.policy_a), ("b", self.policy_b))
            }
        compile_ms = {k: v for k, v in self.timings.items() if k == "compile_ms"}
        self.param.update(
            record=record, comparison=record.rows(), timing=timing, timings=compile_ms | medians
        )

    def clear_comparison(self) -> None:
        """Forget every timed configuration: the Compare tab's rows and the status line's."""
        self._put_record(TimingRecord())

    def _describe(self, runs: dict | None = None) -> str:
        edited = " (edited)" if self.source != models.source(self.model) else ""
        return (
            f"{self.model}{edited}, {self.size}, {self.batch_size} instances, seed {self.seed}, "
            f"{self._backend_shown(runs)}, {options_label(self.disabled)}"
        )

    def _backend_shown(self, runs: dict | None) -> str:
        """The backend, and for ``"auto"`` the one the runs ran on: ``"auto → numpy"``."""
        if self.backend != runner.AUTO:
            return self.backend
        runs = runs or {}
        ran_on = {_stat(r.trace, "backend") for r in runs.values()} - {None}
        return f"auto → {', '.join(sorted(ran_on)) or runner.auto_backend()[0]}"

    def _live(self) -> bool:
        return self.auto_run and not self._quiet and not self.error and not self.viewing

    @param.depends("policy_a", watch=True)
    def _policy_a_changed(self) -> None:
        if self._live():
            self.submit(self.run, ("a",))

    @param.depends("policy_b", watch=True)
    def _policy_b_changed(self) -> None:
        if self._live():
            self.submit(self.run, ("b",))

    @param.depends("batch_size", watch=True)
    def _batch_changed(self) -> None:
        if not self._quiet:
            self._batch_chosen = True
        if self._live():
            self.submit(self.run)

    @param.depends("seed", "backend", "repeats", watch=True)
    def _workload_changed(self) -> None:
        if self._live():
            self.submit(self.run)

    @param.depends("trace_a", "trace_b", watch=True)
    def _clear_selection(self) -> None:
        """A new run ends the selection and the gap report: they were the old run's."""
        self.param.update(selected_batch=None, selected_node=None, gap=None)

    def explain_gap(self) -> bool:
        """Why the schedule is above the lower bound: ``acrobat.gap_report`` of the program
        on the workload shown (one more batched run); sets ``gap``, or ``run_error``."""
        with self._working():
            if self._compiled is None and not self.compile():
                return False
            self._set_progress(-1, "explaining the launches above the lower bound (one run)")
            try:
                instances = self._instances(self.batch_size)
                report = runner.gap_report(self._compiled, instances, self.backend, self.source)
            except AcrobatError as err:
                self.run_error = self._run_failure(err, "the gap report could not run")
                return False
            self.gap = report
            return True

    @param.depends("optimizations", watch=True)
    def _options_changed(self) -> None:
        if not self._quiet:
            self.submit(self.compile_and_run)

    def request_run(self) -> None:
        """What the Run button does: ``run()``, on the worker thread in the app."""
        self.submit(self.run)

    def request_compile(self) -> None:
        """What the Compile button does: ``compile_and_run()``, on the worker in the app."""
        self.submit(self.compile_and_run)

    def compare_policies(self) -> bool:
        """Time every policy with the current options, interleaved in one measurement; each
        adds a row to ``comparison``."""
        return self._compare([(policy, self.disabled) for policy in runner.policy_names()])

    def compare_options(self) -> bool:
        """Time policy A with every optimization on, then with each one off alone (an
        ablation), interleaved in one measurement; each adds a row to ``comparison``. The
        settings and views stay as they are. Policy A and B at the options shown are timed
        in it too: the record keeps one entry per configuration, so the status line shows
        this measurement's times of them, and a verdict between two of one measurement."""
        a, switches = self.policy_a, self.param.optimizations.objects
        runs = [(a, ())] + [(a, (n,)) for n in switches]
        runs += [(a, self.disabled), (self.policy_b, self.disabled)]
        return self._compare(list(dict.fromkeys(runs)))

    def _compare(self, runs: list[tuple[str, tuple[str, ...]]]) -> bool:
        """Compile each (policy, disabled optimizations) aside from the shown runs, then time
        them all interleaved into the record (one entry each)."""
        with self._working():
            if self._compiled is None and not self.compile():
                return False
            compiled = {self.disabled: self._compiled}
            try:
                instances = self._instances(self.batch_size)
                configs, labels = {}, {}
                for policy, disabled in runs:
                    self._check()
                    if disabled not in compiled:
                        self._set_progress(-1, f"compiling with {options_label(disabled)}")
                        compiled[disabled] = runner.compile_module(
                            self._module, self._weights, disabled
                        )
                    name = f"{policy} · {options_label(disabled)}"
                    configs[name] = runner.run_stats(
                        compiled[disabled], instances, policy, self.backend, self._token
                    )
                    labels[name] = (policy, options_label(disabled))
                repeats, note = self._plan(instances, runs[0][0], len(configs))
                plan = self._run_plan(instances, runs[0][0], 0, len(configs), repeats, note)
                with self._ticking(plan) as ticker:
                    self._time(configs, labels, repeats, note, ticker)
                self._calibrate(instances, runs[0][0], plan)
            except runner.Cancelled:
                return False
            except AcrobatError as err:
                self.run_error = self._run_failure(err, "the comparison could not run")
                return False
            return True

    # --- sharing -------------------------------------------------------------------------------

    @contextmanager
    def _quietly(self):
        """Change settings without the watchers recompiling or rerunning."""
        self._quiet += 1
        try:
            yield
        finally:
            self._quiet -= 1

    def settings_event(self) -> SessionSettings:
        """The page's settings, as the event a saved session trace starts with."""
        return SessionSettings(
            model=self.model,
            size=self.size,
            source=self.source,
            batch_size=self.batch_size,
            seed=self.seed,
            backend=self.backend,
            policy_a=self.policy_a,
            policy_b=self.policy_b,
            disabled=self.disabled,
        )

    def session_trace(self) -> Trace:
        """The page's settings, its timed configurations (the record), the compile trace,
        then policy A's and policy B's runs, as one trace."""
        settings = [self.settings_event()] if not self.viewing else []
        page = Trace(settings + list(self.record.entries))
        return join_traces(page, self.compile_trace, self.trace_a, self.trace_b)

    def trace_text(self) -> str:
        """``session_trace()`` as JSON Lines text (what the download button saves)."""
        return dumps(self.session_trace())

    def request_load(self, text: str, name: str) -> None:
        """What opening a file does: ``load_trace_text``, on the worker thread in the app."""
        self.submit(self.load_trace_text, text, name)

    def load_trace_text(self, text: str, name: str = "uploaded trace") -> bool:
        """Show a trace saved by ``trace_text()`` (or ``Trace.save``): its passes and its first
        two runs as policy A and B. Nothing is rerun. A file the explorer saved sets the whole
        page to it (model, size, source, options, run settings); any other trace is shown
        read-only (``viewing``) until :meth:`close_file`. Sets ``run_error`` if it is no
        trace."""
        try:
            with self._working():
                self._set_progress(-1, f"reading {name}")
                bundle = split_trace(loads(text, name))
        except ValueError as err:
            hint = ""
            if text.lstrip().startswith('{"traceEvents"'):
                hint = (
                    " (this is a Chrome trace, for Perfetto or chrome://tracing; the explorer "
                    "opens the .jsonl trace it saves)"
                )
            self.run_error = f"could not read {name}: {err}{hint}"
            return False
        if not bundle.runs and not len(bundle.compile):
            self.run_error = f"{name} holds no trace events"
            return False
        runs = list(bundle.runs) + [None, None]
        stages = pipeline_stages(bundle.compile)
        settings = bundle.settings
        restored = _usable(settings, self.param.model.objects)
        with self._working(), self._quietly():
            if restored:
                self._restore(settings)
            else:
                self._compiled = None
            for side, trace in zip("ab", runs[:2]):
                policy = _policy_of(trace)
                if policy in self.param.policy_a.objects:
                    setattr(self, f"policy_{side}", policy)
            compile_trace = bundle.compile if len(bundle.compile) else None
            shown = {"compile_trace": compile_trace} if compile_trace or not restored else {}
            if not restored:
                shown["ir_text"] = stages[0].text if stages else ""
            self.param.update(
                **shown,
                trace_a=runs[0],
                trace_b=runs[1],
                timings={},
                reproduce="",
                run_error="",
                viewing="" if restored else name,
                origin=f"{name} ({len(bundle.runs)} run(s); nothing was rerun)",
            )
            self._show_file_times(bundle, restored, name)
        return True

    def _show_file_times(self, bundle, restored: bool, name: str) -> None:
        """The record of a file: its timed configurations (a file the explorer saved), else
        one row per finished run (one run's time each: no verdict)."""
        workload = self._workload_now() if restored else ("file", name)
        self._put_record(TimingRecord(workload, bundle.timed))
        if not bundle.timed:
            self.comparison = [compare_row(t) for t in bundle.runs if _finished(t)]
        elif not restored:  # the sidebar's options are not the file's: show its first's
            shown = (self.policy_a, self.policy_b)
            self.timing = self.record.timing(shown, bundle.timed[0].options)
        if restored and self.timing is not None:
            self.reproduce = self._reproduce(tuple(self.timing.spreads), self.timing)

    def _restore(self, settings: SessionSettings) -> None:
        """Set the page to a saved session's settings and compile its source (no run)."""
        sizes = self.param.size.objects
        switches = self.param.optimizations.objects
        backend = settings.backend if settings.backend in self.param.backend.objects else None
        self._spec = None
        self._batch_chosen = True
        self.param.update(
            model=settings.model,
            size=settings.size if settings.size in sizes else self.size,
            source=settings.source,
            batch_size=max(1, min(1024, int(settings.batch_size))),
            seed=max(0, int(settings.seed)),
            optimizations=[n for n in switches if n not in settings.disabled],
            viewing="",
            **({"backend": backend} if backend else {}),
        )
        self.compile()

    def close_file(self) -> None:
        """Leave the read-only view of a file: reload the sidebar's model."""
        self.viewing = ""
        self.load_model()

    def _instances(self, n: int) -> list:
        """``n`` inputs of the benchmark's workload (``ModelSpec.workload``, what
        ``python -m acrobat.bench run`` runs), made at the sizes the program was compiled
        at: an edited source keeps its own."""
        spec = self._model_spec()
        if any(spec.sizes.get(k, v) != v for k, v in self.sizes_used.items()):
            spec = dataclasses.replace(spec, sizes={**spec.sizes, **self.sizes_used})
        return spec.workload(n, self.seed)

    def _model_spec(self, model: str | None = None, size: str | None = None):
        """The model's spec (data, weights) at ``model`` and ``size`` (default: the page's)."""
        model, size = model or self.model, size or self.size
        spec = self._spec
        if spec is None or (spec.name, spec.size) != (model, size):
            spec = self._spec = runner.load_spec(model, size)
        return spec


def _warmup(repeats: int, note: str) -> int:
    """Dropped rounds before ``repeats`` timed ones: none when a long run cut them to one."""
    return WARMUP if repeats > 1 or not note else 0


def _policy_of(trace: Trace | None) -> str | None:
    if trace is None:
        return None
    summaries = [e for e in trace.events if e.kind in ("ScheduleFormed", "BatchFormed")]
    return getattr(summaries[0], "policy", None) if summaries else None


def _stat(trace: Trace, name: str):
    """Statistic ``name`` of the run's last ``RunSummary``, or None."""
    summaries = [e for e in trace.events if e.kind == "RunSummary"]
    return summaries[-1].stats.get(name) if summaries else None


def _usable(settings: SessionSettings | None, models_known: list) -> bool:
    """Whether a file's settings can set the page: a known model, a source text, and whole
    numbers for the batch and the seed (a hand-edited or foreign file may hold anything;
    such a file is shown read-only instead)."""
    if settings is None or settings.model not in models_known:
        return False
    if not isinstance(settings.source, str) or not isinstance(settings.disabled, tuple):
        return False
    numbers = (settings.batch_size, settings.seed)
    return all(isinstance(n, int) and not isinstance(n, bool) for n in numbers)


def _finished(trace: Trace) -> bool:
    return any(e.kind == "RunSummary" for e in trace.events)
