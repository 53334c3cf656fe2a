"""The acrobat explorer app: `make explorer` (or `panel serve apps/explorer.py`).

Only composes the viewers from ``acrobat.viz`` into a template; all logic lives there.
BootstrapTemplate loads nothing from the internet (FastListTemplate would fetch web fonts).
"""

import panel as pn

from acrobat.viz.explorer import Explorer


def build_app(explorer: Explorer | None = None) -> pn.template.BootstrapTemplate:
    """One page: model, run settings and trace files in the sidebar; a tab per view."""
    explorer = explorer or Explorer()
    return pn.template.BootstrapTemplate(
        title="acrobat explorer",
        sidebar=explorer.sidebar,
        main=[explorer],
        sidebar_width=330,
    )


build_app().servable()
