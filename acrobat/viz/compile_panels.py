"""Panel viewers over the compile trace: the pass pipeline (with a diff) and the taint view.

Each viewer recomputes its panes from ``state.compile_trace`` with the pure functions of
``acrobat.viz.ir_view`` / ``acrobat.viz.taint_view``; the attributes holding the panes are
public so tests can read what is shown.
"""

from __future__ import annotations

import panel as pn
import param

from acrobat.viz import runner
from acrobat.viz.app_state import ExplorerState
from acrobat.viz.highlight import IR_CSS, highlight_ir, scroll_box
from acrobat.viz.ir_view import (
    DIFF_CSS,
    TABLE_CSS,
    diff_html,
    pass_diff,
    pass_rows,
    pass_table_html,
    pipeline_stages,
)
from acrobat.viz.lazy_view import LazyView
from acrobat.viz.taint_view import (
    TAINT_CSS,
    default_stage,
    taint_html,
    taint_legend_html,
    taint_stages,
    taint_table_html,
    taint_variables_html,
)

NOT_COMPILED = "<p><i>Not compiled: fix the error in the Program tab.</i></p>"
SCROLL = {"overflow": "auto"}


class OptimizationSwitches(pn.viewable.Viewer):
    """Sidebar: one checkbox per optimization, by its human label (the labels the Passes tab
    shows beside the passes it switches), each with a tooltip saying what it does.

    ``value`` holds the field names of ``acrobat.CompileOptions`` switched on and follows
    ``state.optimizations`` both ways (the store keeps field names)."""

    state = param.ClassSelector(class_=ExplorerState)
    value = param.List(default=[], item_type=str, doc="the optimizations switched on")

    def __init__(self, **params):
        super().__init__(**params)
        names = self.state.param.optimizations.objects
        self.boxes = {
            name: pn.widgets.Checkbox(
                label=runner.optimization_label(name),
                value=name in self.state.optimizations,
                css_classes=["optimization", f"optimization-{name}"],
                margin=(2, 0, 2, 10),
            )
            for name in names
        }
        self.tips = {
            name: pn.widgets.TooltipIcon(value=runner.optimization_help(name), margin=(0, 4))
            for name in names
        }
        self.value = list(self.state.optimizations)
        for box in self.boxes.values():
            box.param.watch(self._from_boxes, "value")
        self.param.watch(self._to_state, "value")
        self.state.param.watch(self._from_state, "optimizations")

    def __panel__(self):
        rows = [
            pn.Row(self.boxes[name], self.tips[name], margin=0, height=26) for name in self.boxes
        ]
        return pn.Column(*rows, css_classes=["optimizations"], sizing_mode="stretch_width")

    def _from_boxes(self, _event) -> None:
        self.value = [name for name, box in self.boxes.items() if box.value]

    def _to_state(self, event: param.parameterized.Event) -> None:
        order = list(self.boxes)
        chosen = sorted(set(event.new), key=order.index)
        for name, box in self.boxes.items():
            box.value = name in chosen
        if list(self.state.optimizations) != chosen:
            self.state.optimizations = chosen

    def _from_state(self, event: param.parameterized.Event) -> None:
        if list(self.value) != list(event.new):
            self.value = list(event.new)


class PassesView(LazyView):
    """The pass pipeline: a table of passes, and a diff between any two stages."""

    def __init__(self, **params):
        super().__init__(**params)
        self.stage_a = pn.widgets.Select(label="From stage", css_classes=["stage-a"], width=190)
        self.stage_b = pn.widgets.Select(label="To stage", css_classes=["stage-b"], width=190)
        self.context = pn.widgets.IntInput(label="Context", value=3, start=0, width=90)
        self.diff = pn.pane.HTML(
            "",
            stylesheets=[DIFF_CSS, scroll_box(640)],
            sizing_mode="stretch_width",
            css_classes=["pass-diff"],
        )
        self.table = pn.pane.HTML(
            "", stylesheets=[TABLE_CSS], css_classes=["pass-table"], styles=SCROLL
        )
        self.stage_text = pn.pane.HTML(
            "", stylesheets=[IR_CSS, scroll_box(640)], sizing_mode="stretch_width"
        )
        self._stages = []
        self.watch_state("compile_trace")
        for widget in (self.stage_a, self.stage_b, self.context):
            widget.param.watch(self._show_diff, "value")
        self._refresh()

    def __panel__(self):
        controls = pn.Row(self.stage_a, self.stage_b, self.context)
        diff = pn.Column(controls, self.diff, sizing_mode="stretch_width")
        ir = pn.Card(
            self.stage_text,
            title="IR at the 'to' stage",
            collapsed=True,
            sizing_mode="stretch_width",
        )
        return pn.Row(
            pn.Column(diff, ir, sizing_mode="stretch_width"),
            pn.Column(pn.pane.Markdown("**Passes, in order**"), self.table, width=480),
            sizing_mode="stretch_width",
        )

    def _refresh(self, *_events) -> None:
        trace = self.state.compile_trace
        self._stages = pipeline_stages(trace) if trace is not None else []
        options = {stage.label: stage.index for stage in self._stages}
        last = len(self._stages) - 1
        self.stage_a.param.update(options=options, value=0 if options else None)
        self.stage_b.param.update(options=options, value=last if options else None)
        self.table.object = pass_table_html(pass_rows(trace)) if trace is not None else ""
        self._show_diff()

    def _show_diff(self, *_events) -> None:
        if not self._stages or self.stage_a.value is None or self.stage_b.value is None:
            self.diff.object, self.stage_text.object = NOT_COMPILED, ""
            return
        diff = pass_diff(self._stages, self.stage_a.value, self.stage_b.value, self.context.value)
        self.diff.object = diff_html(diff)
        self.stage_text.object = highlight_ir(self._stages[self.stage_b.value].text)

    def show(self, a: int, b: int) -> None:
        """Diff stage ``a`` against stage ``b`` (what the pickers do)."""
        self.stage_a.value, self.stage_b.value = a, b


class TaintView(LazyView):
    """The program at a chosen pipeline stage with every binding coloured by taint class;
    legend and tables. The stage picker offers the stages the compile trace has classes of
    and starts at the most informative (before fusion: every op still in a host function)."""

    def __init__(self, **params):
        super().__init__(**params)
        sheets = [IR_CSS, TAINT_CSS, TABLE_CSS]
        self.stage = pn.widgets.Select(label="Stage", css_classes=["taint-stage"], width=320)
        self.stage_note = pn.pane.Markdown("", css_classes=["taint-stage-note"], margin=(0, 10))
        self.legend = pn.pane.HTML("", stylesheets=sheets, css_classes=["taint-legend"])
        self.table = pn.pane.HTML("", stylesheets=sheets, css_classes=["taint-table"])
        self.variables = pn.pane.HTML("", stylesheets=sheets, max_height=500, styles=SCROLL)
        self.program = pn.pane.HTML(
            "",
            stylesheets=[*sheets, scroll_box(720)],
            sizing_mode="stretch_width",
            css_classes=["taint-view"],
        )
        self._stages = []
        self.stage.param.watch(self._show, "value")
        self.watch_state("compile_trace")
        self._refresh()

    def __panel__(self):
        side = pn.Column(
            pn.pane.Markdown("**Taint classes**"),
            self.legend,
            pn.pane.Markdown("**Per function**"),
            self.table,
            pn.Card(self.variables, title="Every variable", collapsed=True),
            width=520,
        )
        main = pn.Column(self.stage, self.stage_note, self.program, sizing_mode="stretch_width")
        return pn.Row(main, side, sizing_mode="stretch_width")

    def _refresh(self, *_events) -> None:
        trace = self.state.compile_trace
        self._stages = taint_stages(trace) if trace is not None else []
        options = {stage.label: position for position, stage in enumerate(self._stages)}
        value = default_stage(self._stages) if self._stages else None
        before = self.stage.value
        self.stage.param.update(options=options, value=value)
        if self.stage.value == before:  # the watcher did not redraw: the classes may differ
            self._show()

    def _show(self, *_events) -> None:
        trace = self.state.compile_trace
        if trace is None or not self._stages or self.stage.value is None:
            self.program.object, self.legend.object = NOT_COMPILED, ""
            self.table.object = self.variables.object = self.stage_note.object = ""
            return
        stage = self._stages[self.stage.value]
        self.stage_note.object = _stage_note(stage)
        self.program.object = taint_html(trace, stage=stage)
        self.legend.object = taint_legend_html(trace, stage)
        self.table.object = taint_table_html(trace, stage)
        self.variables.object = taint_variables_html(trace, stage)

    def show_stage(self, label_end: str) -> None:
        """Pick the stage whose label ends with ``label_end`` (what the picker does)."""
        self.stage.value = next(
            position
            for position, stage in enumerate(self._stages)
            if stage.label.endswith(label_end)
        )


def _stage_note(stage) -> str:
    if stage.compiled:
        return (
            "*The compiled program: values inside kernels are not classified (a kernel runs "
            "batched); fibers and tensor-dependent branches are this stage's.*"
        )
    if stage.index == 0:
        return "*The program as parsed, before any pass.*"
    return (
        "*Before fusion: every op is still in a host function, so every value is classified. "
        "Fibers are decided on the compiled program.*"
    )
