"""Progress of a long command with an ETA: a ``tqdm`` bar on a terminal, plain lines elsewhere.

On a TTY (and with ``tqdm``, which the ``viz`` extra installs) the bar redraws in place; when
stderr is a file or a pipe (CI logs, ``2> log``) no ``\\r`` frames are written, only a line
every ``every`` seconds and one at the end, each with the count, the elapsed time and the ETA.
The ETA assumes the remaining work goes at the average pace so far; with a time limit
(``deadline_s``, e.g. a fuzz campaign's ``--minutes``) it is at most the time left.
"""

from __future__ import annotations

import sys
import time
from typing import TextIO


def eta_seconds(done: float, total: float, elapsed: float) -> float | None:
    """Seconds left at the pace so far (None before any work is done)."""
    if done <= 0 or total <= 0:
        return None
    return max(0.0, elapsed / done * (total - done))


def _clock(seconds: float | None) -> str:
    if seconds is None:
        return "?"
    m, s = divmod(int(seconds + 0.5), 60)
    return f"{m // 60}:{m % 60:02d}:{s:02d}" if m >= 60 else f"{m}:{s:02d}"


class Progress:
    """``update(done, label)`` as work completes (``done`` of ``total``, in ``unit``;
    ``total`` None: no count limit, only ``deadline_s``); ``close()`` at the end."""

    def __init__(
        self,
        total: float | None,
        unit: str,
        stream: TextIO | None = None,
        every: float = 30.0,
        deadline_s: float | None = None,
    ) -> None:
        self.stream = stream or sys.stderr
        self.total, self.unit, self.every, self.deadline_s = total, unit, every, deadline_s
        self.t0 = self.last = time.perf_counter()
        self.done: float = 0  # an int count stays an int in the bar
        self.bar = None
        if self.stream.isatty():
            try:
                from tqdm import tqdm
            except ImportError:
                tqdm = None
            if tqdm is not None:
                self.bar = tqdm(total=total, unit=unit, file=self.stream, dynamic_ncols=True)

    def line(self, label: str = "") -> str:
        """``"3/28 configurations, 0:42 elapsed, ETA 5:10  label"``."""
        elapsed = time.perf_counter() - self.t0
        etas = [eta_seconds(self.done, self.total, elapsed) if self.total else None]
        etas.append(max(0.0, self.deadline_s - elapsed) if self.deadline_s else None)
        eta = _clock(min((e for e in etas if e is not None), default=None))
        count = f"{self.done:g}" + (f"/{self.total:g}" if self.total else "") + f" {self.unit}"
        return f"{count}, {_clock(elapsed)} elapsed, ETA {eta}  {label}".rstrip()

    def update(self, done: float, label: str = "") -> None:
        if self.bar is not None:
            self.bar.update(done - self.done)
            self.bar.set_postfix_str(label, refresh=True)
            self.done = done
            return
        self.done = done
        now = time.perf_counter()
        if now - self.last >= self.every:
            self.last = now
            print(self.line(label), file=self.stream, flush=True)

    def close(self, done: float | None = None, label: str = "done") -> None:
        """The last update (``done`` if given), then the bar closes or a last line prints."""
        if done is not None and self.bar is not None:
            self.bar.update(done - self.done)
        self.done = self.done if done is None else done
        if self.bar is not None:
            self.bar.close()
        else:
            print(self.line(label), file=self.stream, flush=True)
