"""A file dropper that holds at most a limit of bytes on the server, however the client talks.

Panel's ``FileDropper`` checks ``max_file_size`` in the browser, then sends the file in chunks
that the server keeps until the last one arrives. A client that skips the browser check (or
announces a million chunks) could make the server hold whatever it sends. Here every chunk is
counted as it arrives: once the bytes held (all uploads together) pass ``max_bytes`` the upload
is dropped and ``refused`` names it; later chunks of it are ignored.
"""

from __future__ import annotations

import panel as pn
import param


class BoundedFileDropper(pn.widgets.FileDropper):
    """``FileDropper`` that refuses an upload as soon as the bytes held pass ``max_bytes``."""

    max_bytes = param.Integer(default=32 * 2**20, bounds=(1, None), doc="bytes held at most")
    refused = param.Tuple(
        default=None,
        allow_None=True,
        length=2,
        doc="output: (name, bytes seen) of a refused upload",
    )

    # server-side only: the browser's model has no such properties
    _rename = {**pn.widgets.FileDropper._rename, "max_bytes": None, "refused": None}

    def _process_event(self, event) -> None:
        if event.event_name != "upload_event":
            super()._process_event(event)
            return
        data = event.data
        name, chunk = data.get("name"), data.get("chunk")
        if chunk != 1 and name not in self._file_buffer:
            return  # a refused upload's later chunks, or chunks out of order
        if chunk == 1:
            self._file_buffer.pop(name, None)
        mine = sum(len(c) for c in self._file_buffer.get(name, ())) + len(data.get("data") or b"")
        held = mine + sum(len(c) for n, cs in self._file_buffer.items() if n != name for c in cs)
        if held > self.max_bytes:
            self._file_buffer.pop(name, None)
            self.refused = (str(name), mine)
            return
        super()._process_event(event)

    @property
    def held_bytes(self) -> int:
        """The bytes of unfinished uploads held now."""
        return sum(len(c) for chunks in self._file_buffer.values() for c in chunks)
