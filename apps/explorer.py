"""The acrobat explorer app: `make explorer` (or `panel serve apps/explorer.py`).

The app lives in the package (:mod:`acrobat.viz.app`, also served by ``acrobat-explorer``);
this file only marks it servable for ``panel serve``.
"""

from acrobat.viz.app import build_app

__all__ = ["build_app"]

build_app().servable()
