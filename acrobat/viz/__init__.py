"""The visual workbench: view models and figures from traces, a param store, Panel viewers.

Pure functions from a Trace (or IR text) to view models and figures, no GUI state:
``ir_view`` (pipeline stages, pass table, diff between any two stages), ``taint_view``,
``dfg_view`` (Graphviz SVG rendered on the server, folded when large), ``schedule_view``
(schedule and kernel-timeline Bokeh figures), ``compare_view``, ``source_view``, ``highlight``
(IR syntax highlighting) and ``trace_bundle`` (one JSON Lines file per session).

``app_state`` holds the store (``ExplorerState``: settings, compile and run through the public
facade in ``runner``, traces out) with no GUI imports; ``panels``, ``compile_panels``,
``view_panels`` and ``run_panels`` hold the Panel ``Viewer`` classes, ``explorer`` wires them to
one store, and ``apps/explorer.py`` only puts them in a template. ``widgets`` is the ipywidgets
front end for notebooks over the same store and figure functions.
"""
