"""The explorer's viewers wired to one store: sidebar parts and a tab per registered view.

Each tab is registered once (:func:`register_view`: an attribute name, a tab title and a
builder called with the store); ``Explorer`` builds the registered views in registration order,
keeps each as an attribute of that name, and lays them out as tabs. ``acrobat.viz.app`` puts
``sidebar`` and the explorer into a template. Tests build an ``Explorer`` without a browser and
read its viewers' panes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import panel as pn
import param

from acrobat.errors import AcrobatNameError
from acrobat.registry import Registry
from acrobat.viz.app_state import ExplorerState
from acrobat.viz.compile_panels import PassesView, TaintView
from acrobat.viz.lazy_view import LazyView
from acrobat.viz.panels import ModelPicker, ProgramView
from acrobat.viz.run_panels import RunSettings, StatusLine, TraceFiles
from acrobat.viz.view_panels import (
    CompareView,
    DfgView,
    KernelSourceView,
    ScheduleView,
    TimelineView,
)


@dataclass(frozen=True)
class ExplorerView:
    """A tab of the explorer: ``build(state=...)`` makes its viewer, which ``Explorer`` keeps
    as the attribute ``name`` and shows under ``title``. A ``LazyView`` redraws only while its
    tab is open."""

    name: str
    title: str
    build: Callable[..., pn.viewable.Viewer]


_VIEWS: Registry[ExplorerView] = Registry("explorer view")


def register_view(name: str, title: str, build: Callable[..., pn.viewable.Viewer]) -> None:
    """Add a tab (after the ones registered so far) to every ``Explorer`` built from now on."""
    if any(v.title == title for v in _VIEWS.values()):
        raise AcrobatNameError(
            f"explorer view title {title!r} is registered twice",
            hint="pick another title, or unregister_view() the old view first",
        )
    _VIEWS.add(name, ExplorerView(name, title, build))


def unregister_view(name: str) -> None:
    """Remove the tab registered as ``name``."""
    _VIEWS.remove(name)


def explorer_views() -> tuple[ExplorerView, ...]:
    """The registered tabs, in order."""
    return tuple(_VIEWS.values())


register_view("program", "Program", ProgramView)
register_view("passes", "Passes", PassesView)
register_view("taint", "Taint", TaintView)
register_view("dfg", "DFG", DfgView)
register_view("schedule", "Schedule", ScheduleView)
register_view("timeline", "Timeline", TimelineView)
register_view("compare", "Compare", CompareView)
register_view("kernels", "Kernels", KernelSourceView)


class Explorer(pn.viewable.Viewer):
    """Every view of one store: ``sidebar`` (model, run settings, trace files) and the tabs."""

    state = param.ClassSelector(class_=ExplorerState)

    def __init__(self, **params):
        # The app's store works on its own thread, so the server keeps answering other pages.
        # Served, it starts once the page is in the browser (``pn.state.onload``): an update
        # made on the worker before the page's models exist would be lost.
        doc = pn.state.curdoc
        served = doc is not None and doc.session_context is not None
        if "state" not in params:
            params["state"] = ExplorerState(auto_run=True, background=True, start=not served)
            if served:
                pn.state.onload(params["state"].start)
                # a closed page kills its compile and frees its worker thread
                pn.state.on_session_destroyed(lambda _context, s=params["state"]: s.close())
        super().__init__(**params)
        state = self.state
        self.picker = ModelPicker(state=state)
        self.settings = RunSettings(state=state)
        self.files = TraceFiles(state=state)
        self.status = StatusLine(state=state)
        self.views = {spec.title: spec.build(state=state) for spec in explorer_views()}
        for spec in explorer_views():
            if hasattr(self, spec.name):
                raise AcrobatNameError(
                    f"explorer view name {spec.name!r} clashes with an Explorer attribute"
                )
            setattr(self, spec.name, self.views[spec.title])
        # Not dynamic: Panel 1.9 gives the models of a tab first drawn inside a callback CDN
        # stylesheet URLs (theme.base._apply_params before the model joins the document), which
        # an offline machine cannot load.
        self.tabs = pn.Tabs(
            *self.views.items(),
            dynamic=False,
            sizing_mode="stretch_width",
            css_classes=["explorer-tabs"],
        )
        # Hidden views redraw when their tab opens, so a run costs only the open view's redraw.
        self._lazy = {t: v for t, v in self.views.items() if isinstance(v, LazyView)}
        self.tabs.param.watch(self._show_tab, "active")
        self._show_tab()

    @property
    def tab_names(self) -> list[str]:
        """The tab titles, in order."""
        return list(self.views)

    def _show_tab(self, *_events) -> None:
        shown = self.tab_names[self.tabs.active]
        for name, view in self._lazy.items():
            view.active = name == shown

    @property
    def sidebar(self) -> list:
        """What goes in the template's sidebar, top to bottom."""
        return [self.picker, self.settings, self.files]

    def open_tab(self, title: str) -> None:
        """Switch to the tab called ``title`` (one of ``tab_names``)."""
        self.tabs.active = self.tab_names.index(title)

    def __panel__(self):
        # No loading overlay: the status line shows progress and Cancel while work runs.
        return pn.Column(
            self.status,
            self.tabs,
            sizing_mode="stretch_width",
            css_classes=["explorer-main"],
        )
