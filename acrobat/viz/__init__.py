"""The visual workbench: a param-based store of what the user looks at, and Panel viewers over it.

``app_state`` holds the state and logic with no GUI imports (tests drive it directly);
``panels`` holds the Panel ``Viewer`` classes; ``apps/explorer.py`` only composes them.
"""
