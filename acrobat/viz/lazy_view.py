"""A Panel viewer that redraws only while it is shown.

A run changes many views at once, but the user looks at one tab. Views derive from ``LazyView``:
a change of the store calls ``_refresh`` at once when ``active``, and otherwise marks the view
stale and redraws it when it becomes active. The explorer sets ``active`` from the open tab; a
view used on its own stays active.
"""

from __future__ import annotations

import panel as pn
import param

from acrobat.viz.app_state import ExplorerState


class LazyView(pn.viewable.Viewer):
    """Base of the explorer's views: ``watch_state`` names what to redraw on; ``_refresh``."""

    state = param.ClassSelector(class_=ExplorerState)
    active = param.Boolean(default=True, doc="False while hidden: redraws wait until shown")

    def __init__(self, **params):
        super().__init__(**params)
        self._stale = False
        self.param.watch(self._shown, "active")

    def watch_state(self, *names: str) -> None:
        """Redraw when any of the store's parameters ``names`` changes (once shown)."""
        self.state.param.watch(self._changed, list(names))

    def _changed(self, *_events) -> None:
        if self.active:
            self._refresh()
        else:
            self._stale = True

    def _shown(self, event: param.parameterized.Event) -> None:
        if event.new and self._stale:
            self._stale = False
            self._refresh()

    def _refresh(self, *_events) -> None:
        raise NotImplementedError
