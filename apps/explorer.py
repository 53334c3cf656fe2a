"""The acrobat explorer app: `make explorer` (or `panel serve apps/explorer.py`).

Only composes the store and the viewers from ``acrobat.viz``; all logic lives there.
"""

import panel as pn

from acrobat.viz.app_state import ExplorerState
from acrobat.viz.panels import IRView, ModelPicker, SourceEditor


def build_app() -> pn.template.BootstrapTemplate:
    """One page: the model picker in the sidebar, the source editor beside its IR."""
    state = ExplorerState()
    return pn.template.BootstrapTemplate(
        title="acrobat explorer",
        sidebar=[ModelPicker(state=state)],
        main=[pn.Row(SourceEditor(state=state), IRView(state=state), sizing_mode="stretch_width")],
        sidebar_width=300,
    )


build_app().servable()
