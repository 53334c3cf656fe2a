"""The visual workbench: view models and figures from traces, a param store, Panel viewers.

Pure functions from a Trace (or IR text) to view models and figures, no GUI state:
``ir_view`` (pipeline stages, pass table, diff between any two stages), ``taint_view``,
``dfg_view`` (laid out by Graphviz on the server, drawn by Bokeh with zoom and selection, folded
when large), ``schedule_view`` (schedule and kernel-timeline Bokeh figures), ``compare_view``,
``source_view``, ``highlight`` (IR syntax highlighting), ``selection`` (what a selected batch or
DFG node is), ``colors`` (one colour per policy) and ``trace_bundle`` (one JSON Lines file per
session).

``app_state`` holds the store (``ExplorerState``: settings, compile and run through the public
facade in ``runner``, traces out) with no GUI imports; ``panels``, ``compile_panels``,
``view_panels`` and ``run_panels`` hold the Panel ``Viewer`` classes, ``explorer`` wires them to
one store, and ``app`` only puts them in a template (``acrobat-explorer`` serves it;
``apps/explorer.py`` marks it servable for ``panel serve``). ``widgets`` is the ipywidgets
front end for notebooks over the same store and figure functions.
"""

import importlib.util

from acrobat.errors import MissingExtraError

# The packages of the `viz` extra (pyproject.toml); the compiler and runtime need none of them.
VIZ_PACKAGES = ("panel", "bokeh", "param", "ipywidgets", "graphviz", "pygments")


def _missing(names: tuple[str, ...]) -> list[str]:
    """The names that cannot be imported here (checked without importing them: Panel is slow)."""
    missing = []
    for name in names:
        try:
            found = importlib.util.find_spec(name) is not None
        except (ImportError, ValueError):
            found = False
        if not found:
            missing.append(name)
    return missing


if _absent := _missing(VIZ_PACKAGES):
    raise MissingExtraError(
        f"acrobat.viz needs the optional GUI packages, and {', '.join(_absent)} "
        f"{'is' if len(_absent) == 1 else 'are'} not installed",
        hint="pip install 'acrobat[viz]' (or `make setup`, which installs every extra)",
    )
