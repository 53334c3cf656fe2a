"""A Panel viewer that redraws only while it is shown, and only on its page's thread.

A run changes many views at once, but the user looks at one tab. Views derive from ``LazyView``:
a change of the store calls ``_refresh`` at once when ``active``, and otherwise marks the view
stale and redraws it when it becomes active. The explorer sets ``active`` from the open tab; a
view used on its own stays active.

In the served app the store changes on its worker thread, but a view's ``_refresh`` edits Bokeh
models of the page's document, which only the server's thread may touch, with the document
locked. So a change that arrives on another thread schedules the redraw on the document's next
tick (one pending redraw per view; it reads the store as it is then). Outside a server (tests,
notebooks) there is no document and redraws happen at once. One lock per view orders a change
against a tab switch, so no change is lost between them.
"""

from __future__ import annotations

import logging
import threading

import panel as pn
import param

from acrobat.viz.app_state import ExplorerState

log = logging.getLogger(__name__)


class LazyView(pn.viewable.Viewer):
    """Base of the explorer's views: ``watch_state`` names what to redraw on; ``_refresh``."""

    state = param.ClassSelector(class_=ExplorerState)
    active = param.Boolean(default=True, doc="False while hidden: redraws wait until shown")

    def __init__(self, **params):
        super().__init__(**params)
        self._stale = False
        self._queued = False
        self._lock = threading.RLock()
        # the page this view belongs to, when built by a server session (else None)
        doc = pn.state.curdoc
        self._doc = doc if doc is not None and doc.session_context is not None else None
        self._doc_thread = threading.get_ident()
        self.param.watch(self._shown, "active")

    def watch_state(self, *names: str) -> None:
        """Redraw when any of the store's parameters ``names`` changes (once shown)."""
        self.state.param.watch(self._changed, list(names))

    def _changed(self, *_events) -> None:
        with self._lock:
            if not self.active:
                self._stale = True
                return
        self._redraw()

    def _shown(self, event: param.parameterized.Event) -> None:
        with self._lock:
            if not (event.new and self._stale):
                return
            self._stale = False
        self._redraw()

    def _redraw(self) -> None:
        """``_refresh`` now on the page's thread (or outside a server), else on its next tick."""
        if self._doc is None or threading.get_ident() == self._doc_thread:
            with self._lock:
                self._refresh()
            return
        with self._lock:
            if self._queued:
                return
            self._queued = True
        self._doc.add_next_tick_callback(self._scheduled)

    def on_page(self, fn, *args) -> None:
        """Call ``fn(*args)`` now on the page's thread (or outside a server), else on the
        document's next tick: for a store watcher that edits Bokeh models outside ``_refresh``
        (e.g. outlining a selection)."""
        if self._doc is None or threading.get_ident() == self._doc_thread:
            with self._lock:
                fn(*args)
            return

        def call() -> None:
            from panel.io.state import set_curdoc

            try:
                with set_curdoc(self._doc), self._lock:
                    fn(*args)
            except Exception:  # a drawing bug must not take the page down
                log.exception("%s could not update", type(self).__name__)

        self._doc.add_next_tick_callback(call)

    def _scheduled(self) -> None:
        from panel.io.state import set_curdoc

        with self._lock:
            self._queued = False
        try:
            with set_curdoc(self._doc), self._lock:
                self._refresh()
        except Exception:  # a drawing bug must not take the page down
            log.exception("%s could not redraw", type(self).__name__)

    def _refresh(self, *_events) -> None:
        raise NotImplementedError
