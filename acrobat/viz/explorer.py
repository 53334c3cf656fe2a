"""The explorer's viewers wired to one store: sidebar parts and a tab per view.

``Explorer`` only builds the viewers of ``acrobat.viz`` over one ``ExplorerState`` and lays the
views out as tabs; ``apps/explorer.py`` puts ``sidebar`` and the explorer into a template.
Tests build an ``Explorer`` without a browser and read its viewers' panes.
"""

from __future__ import annotations

import panel as pn
import param

from acrobat.viz.app_state import ExplorerState
from acrobat.viz.compile_panels import PassesView, TaintView
from acrobat.viz.panels import IRView, ModelPicker, SourceEditor
from acrobat.viz.run_panels import RunSettings, StatusLine, TraceFiles
from acrobat.viz.view_panels import (
    CompareView,
    DfgView,
    KernelSourceView,
    ScheduleView,
    TimelineView,
)

TAB_NAMES = ("Program", "Passes", "Taint", "DFG", "Schedule", "Timeline", "Compare", "Kernels")


class Explorer(pn.viewable.Viewer):
    """Every view of one store: ``sidebar`` (model, run settings, trace files) and the tabs."""

    state = param.ClassSelector(class_=ExplorerState)

    def __init__(self, **params):
        params.setdefault("state", ExplorerState(auto_run=True))
        super().__init__(**params)
        state = self.state
        self.picker = ModelPicker(state=state)
        self.settings = RunSettings(state=state)
        self.files = TraceFiles(state=state)
        self.status = StatusLine(state=state)
        self.editor = SourceEditor(state=state)
        self.ir = IRView(state=state)
        self.passes = PassesView(state=state)
        self.taint = TaintView(state=state)
        self.dfg = DfgView(state=state)
        self.schedule = ScheduleView(state=state)
        self.timeline = TimelineView(state=state)
        self.compare = CompareView(state=state)
        self.kernels = KernelSourceView(state=state)
        program = pn.Row(self.editor, self.ir, sizing_mode="stretch_width")
        views = (
            program,
            self.passes,
            self.taint,
            self.dfg,
            self.schedule,
            self.timeline,
            self.compare,
            self.kernels,
        )
        # Not dynamic: Panel 1.9 gives the models of a tab first drawn inside a callback CDN
        # stylesheet URLs (theme.base._apply_params before the model joins the document), which
        # an offline machine cannot load.
        self.tabs = pn.Tabs(
            *zip(TAB_NAMES, views),
            dynamic=False,
            sizing_mode="stretch_width",
            css_classes=["explorer-tabs"],
        )
        # Hidden views redraw when their tab opens, so a run costs only the open view's redraw.
        self._lazy = dict(zip(TAB_NAMES[1:], views[1:]))
        self.tabs.param.watch(self._show_tab, "active")
        self._show_tab()

    def _show_tab(self, *_events) -> None:
        shown = TAB_NAMES[self.tabs.active]
        for name, view in self._lazy.items():
            view.active = name == shown

    @property
    def sidebar(self) -> list:
        """What goes in the template's sidebar, top to bottom."""
        return [self.picker, self.settings, self.files]

    def open_tab(self, name: str) -> None:
        """Switch to the tab called ``name`` (one of ``TAB_NAMES``)."""
        self.tabs.active = TAB_NAMES.index(name)

    def __panel__(self):
        return pn.Column(
            self.status,
            self.tabs,
            loading=self.state.param.busy,
            sizing_mode="stretch_width",
            css_classes=["explorer-main"],
        )
