"""The explorer as a served page: ``acrobat-explorer`` (or ``panel serve apps/explorer.py``).

``build_app`` only composes the viewers of :mod:`acrobat.viz.explorer` into a template; all
logic lives there. BootstrapTemplate loads nothing from the internet (FastListTemplate would
fetch web fonts). ``main`` serves one fresh page per browser session through Panel's
programmatic server, at ``/explorer`` as ``panel serve apps/explorer.py`` does, until Ctrl-C or
SIGTERM: either stops the server's loop, the server closes, and the process exits, taking any
compile child with it (``acrobat.viz.compile_worker``).
"""

from __future__ import annotations

import argparse
import signal

import panel as pn

from acrobat.viz.explorer import Explorer

SESSION_CHECK_MS = 1000  # as `make explorer` passes to panel serve


def build_app(explorer: Explorer | None = None) -> pn.template.BootstrapTemplate:
    """One page: model, run settings and trace files in the sidebar; a tab per view."""
    explorer = explorer or Explorer()
    return pn.template.BootstrapTemplate(
        title="acrobat explorer",
        sidebar=explorer.sidebar,
        main=[explorer],
        sidebar_width=330,
    )


def _parser() -> argparse.ArgumentParser:
    from acrobat import __version__

    p = argparse.ArgumentParser(
        prog="acrobat-explorer",
        description="Serve the acrobat explorer at http://ADDRESS:PORT/explorer.",
    )
    p.add_argument(
        "--port", type=int, default=5006, help="TCP port to serve on (default: %(default)s)"
    )
    p.add_argument(
        "--address", default="localhost", help="address to listen on (default: %(default)s)"
    )
    p.add_argument(
        "--allow-websocket-origin",
        action="append",
        metavar="HOST[:PORT]",
        help="a further host the browser may connect from (repeatable); ADDRESS:PORT always may",
    )
    p.add_argument("--show", action="store_true", help="open the page in a web browser")
    p.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    return p


def main(argv: list[str] | None = None) -> int:
    """Serve the explorer until interrupted (Ctrl-C or SIGTERM)."""
    args = _parser().parse_args(argv)
    local = [
        f"{host}:{args.port}" for host in dict.fromkeys([args.address, "localhost", "127.0.0.1"])
    ]
    origins = [*local, *(args.allow_websocket_origin or [])]
    server = pn.serve(
        {"explorer": build_app},
        port=args.port,
        address=args.address,
        websocket_origin=origins,
        show=args.show,
        start=False,
        title="acrobat explorer",
        verbose=False,
        # a closed page's session (and its compile, ExplorerState.close) ends within ~2 s
        check_unused_sessions_milliseconds=SESSION_CHECK_MS,
        unused_session_lifetime_milliseconds=SESSION_CHECK_MS,
    )
    print(f"acrobat explorer at http://{args.address}:{server.port}/explorer", flush=True)
    # SIGTERM (a service manager, a container stop) ends the loop as Ctrl-C does, so the
    # server closes and multiprocessing's exit handler kills a compile still running.
    loop = server.io_loop.asyncio_loop
    loop.add_signal_handler(signal.SIGTERM, server.io_loop.stop)
    try:
        server.io_loop.start()
    except KeyboardInterrupt:
        pass
    finally:
        loop.remove_signal_handler(signal.SIGTERM)
        server.stop()
    print("acrobat explorer stopped", flush=True)
    return 0
