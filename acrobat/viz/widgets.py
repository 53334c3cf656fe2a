"""ipywidgets front ends for notebooks, over the same store and figure functions as the app.

``NotebookExplorer`` shows model / size / policy pickers, batch-size and seed sliders and one
checkbox per optimization, and below them one view (schedule, timeline, DFG, compare, passes,
taint or kernels) drawn by the figure functions of ``acrobat.viz``. Bokeh figures are embedded
as standalone HTML with inline BokehJS, so nothing is fetched from the internet::

    from acrobat.viz.widgets import NotebookExplorer
    NotebookExplorer(model="treelstm", size="tiny", batch_size=16)   # last line of a cell

``show(obj)`` embeds any figure of ``acrobat.viz`` (Bokeh layout, SVG or HTML text) the same way.
"""

from __future__ import annotations

import html
from collections.abc import Callable

import ipywidgets as w
from bokeh.embed import file_html
from bokeh.model import Model
from bokeh.resources import INLINE
from IPython.display import HTML

from acrobat import models
from acrobat.viz.app_state import ExplorerState
from acrobat.viz.compare_view import compare_figure, compare_table_html
from acrobat.viz.dfg_view import dfg_legend_html, dfg_model, dfg_svg, instances_in
from acrobat.viz.highlight import IR_CSS
from acrobat.viz.ir_view import DIFF_CSS, TABLE_CSS, diff_html, pass_diff, pipeline_stages
from acrobat.viz.runner import policy_names
from acrobat.viz.schedule_view import schedule_pair, timeline_pair
from acrobat.viz.source_view import CODE_CSS, code_html, host_program, kernel_sources
from acrobat.viz.taint_view import TAINT_CSS, taint_html, taint_legend_html

STYLE = f"<style>{IR_CSS}{DIFF_CSS}{TABLE_CSS}{TAINT_CSS}{CODE_CSS}</style>"


def show(obj) -> HTML:
    """A displayable for a Bokeh layout (standalone, inline BokehJS, in an iframe) or HTML text."""
    if isinstance(obj, Model):
        page = file_html(obj, resources=INLINE, title="acrobat")
        frame = html.escape(page, quote=True)
        style = "width:100%;height:780px;border:0"
        return HTML(
            f'<div class="acrobat-figure"><iframe srcdoc="{frame}" style="{style}"></iframe></div>'
        )
    return HTML(STYLE + str(obj))


class NotebookExplorer:
    """Pickers, sliders and optimization checkboxes over an ``ExplorerState``, and one view."""

    def __init__(self, state: ExplorerState | None = None, **settings):
        settings.setdefault("auto_run", True)
        settings.setdefault("repeats", 3)  # each change times A and B: keep cells quick
        self.state = state if state is not None else ExplorerState(**settings)
        state = self.state
        self.model = w.Dropdown(
            description="Model", options=state.param.model.objects, value=state.model
        )
        self.size = w.Dropdown(
            description="Size", options=state.param.size.objects, value=state.size
        )
        self.batch = w.IntSlider(
            description="Batch size",
            min=1,
            max=256,
            value=state.batch_size,
            continuous_update=False,
        )
        self.seed = w.IntSlider(
            description="Seed", min=0, max=100, value=state.seed, continuous_update=False
        )
        policies = state.param.policy_a.objects
        self.policy_a = w.Dropdown(description="Policy A", options=policies, value=state.policy_a)
        self.policy_b = w.Dropdown(description="Policy B", options=policies, value=state.policy_b)
        self.options = {
            name: w.Checkbox(description=name, value=name in state.optimizations, indent=False)
            for name in state.param.optimizations.objects
        }
        self.view = w.ToggleButtons(
            options=list(NOTEBOOK_VIEWS), value="schedule", description="View"
        )
        self.instance = w.BoundedIntText(description="Instance", min=0, max=0, value=0)
        self.message = w.HTML()
        self.output = w.Output()
        self._link()
        self.refresh()

    def _link(self) -> None:
        pairs = [
            (self.model, "model"),
            (self.size, "size"),
            (self.batch, "batch_size"),
            (self.seed, "seed"),
            (self.policy_a, "policy_a"),
            (self.policy_b, "policy_b"),
        ]
        for widget, name in pairs:
            widget.observe(lambda change, name=name: setattr(self.state, name, change.new), "value")
            self.state.param.watch(lambda e, widget=widget: setattr(widget, "value", e.new), name)
        for box in self.options.values():
            box.observe(self._set_options, "value")
        for widget in (self.view, self.instance):
            widget.observe(lambda _change: self.refresh(), "value")
        self.state.param.watch(
            lambda *_events: self.refresh(),
            ["trace_a", "trace_b", "compile_trace", "comparison", "error", "run_error"],
        )

    def _set_options(self, _change) -> None:
        self.state.optimizations = [n for n, box in self.options.items() if box.value]

    def figure(self, view: str | None = None):
        """The figure of ``view`` (default: the chosen one) for the current traces: a Bokeh
        layout, or HTML text; ``None`` when there is nothing to show yet."""
        return NOTEBOOK_VIEWS[view or self.view.value](self)

    def runs(self) -> list:
        """The traces of policy A and B that exist."""
        return [t for t in (self.state.trace_a, self.state.trace_b) if t is not None]

    def refresh(self) -> None:
        """Redraw the chosen view below the controls (and any error above it)."""
        state = self.state
        problem = state.error or state.run_error
        self.message.value = (
            f"<b style='color:#cf222e'>{html.escape(problem)}</b>" if problem else ""
        )
        figure = self.figure()
        self.output.outputs = ()
        if figure is not None:
            self.output.append_display_data(show(figure))
        if self.view.value == "compare":
            self.output.append_display_data(show(compare_table_html(state.comparison)))

    def widget(self) -> w.VBox:
        """The whole front end as one ipywidgets box."""
        pickers = w.HBox([self.model, self.size, self.policy_a, self.policy_b])
        sliders = w.HBox([self.batch, self.seed, self.instance])
        options = w.HBox(list(self.options.values()), layout=w.Layout(flex_flow="row wrap"))
        return w.VBox([pickers, sliders, options, self.view, self.message, self.output])

    def _ipython_display_(self):
        from IPython.display import display

        display(self.widget())


# The notebook's views, in the order of the view picker: name -> figure of a NotebookExplorer
# (None when there is nothing to show yet). Adding a view is one entry here.


def _schedule(nb: NotebookExplorer):
    runs = nb.runs()
    return schedule_pair(*runs) if runs else None


def _timeline(nb: NotebookExplorer):
    runs = nb.runs()
    return timeline_pair(*runs) if runs else None


def _dfg(nb: NotebookExplorer):
    runs = nb.runs()
    if not runs:
        return None
    instances = instances_in(runs[0])
    nb.instance.max = instances[-1] if instances else 0
    model = dfg_model(runs[0], min(nb.instance.value, nb.instance.max))
    return dfg_legend_html(model) + dfg_svg(model)


def _compare(nb: NotebookExplorer):
    rows = nb.state.comparison
    return compare_figure(rows) if rows else None


def _passes(nb: NotebookExplorer):
    trace = nb.state.compile_trace
    if trace is None:
        return None
    stages = pipeline_stages(trace)
    return diff_html(pass_diff(stages, 0, len(stages) - 1))


def _taint(nb: NotebookExplorer):
    trace = nb.state.compile_trace
    return None if trace is None else taint_legend_html(trace) + taint_html(trace)


def _kernels(nb: NotebookExplorer):
    runs = nb.runs()
    if not runs:
        return None
    parts = [
        f"<h4>{html.escape(k)}</h4>{code_html(s.source, s.language)}"
        for k, s in kernel_sources(runs[0]).items()
    ]
    return "".join(parts) + "<h4>host program</h4>" + code_html(host_program(runs[0]))


NOTEBOOK_VIEWS: dict[str, Callable[[NotebookExplorer], object]] = {
    "schedule": _schedule,
    "timeline": _timeline,
    "dfg": _dfg,
    "compare": _compare,
    "passes": _passes,
    "taint": _taint,
    "kernels": _kernels,
}


def model_picker(value: str = "treelstm") -> w.Dropdown:
    """A Dropdown of the model zoo's names (for notebooks that build their own layouts)."""
    return w.Dropdown(description="Model", options=[i.name for i in models.catalog()], value=value)


def policy_picker(value: str = "acrobat", description: str = "Policy") -> w.Dropdown:
    """A Dropdown of the scheduling policies."""
    return w.Dropdown(description=description, options=policy_names(), value=value)
