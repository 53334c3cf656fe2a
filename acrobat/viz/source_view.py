"""Kernel source view model: the generated kernel code and host program of a run.

From ``KernelCompiled`` (one per kernel, NumPy Python or CUDA C depending on the backend) and
``HostProgramGenerated``. Highlighted on the server with Pygments when it is installed (it comes
with IPython, which ipywidgets needs); plain escaped text otherwise.
"""

from __future__ import annotations

import html
from dataclasses import dataclass

from acrobat.trace import HostProgramGenerated, KernelCompiled, Trace

CODE_CSS = """
div.acrobat-code pre { font-family: ui-monospace, 'DejaVu Sans Mono', monospace;
  font-size: 12.5px; line-height: 1.45; background: #fafafa; border: 1px solid #e1e4e8;
  border-radius: 4px; padding: 8px 12px; margin: 0; overflow: auto; white-space: pre;
  max-height: var(--code-max-height, 720px); box-sizing: border-box; }
"""
"""Code blocks scroll inside themselves (at most 720 px tall unless the pane sets
``--code-max-height``: ``acrobat.viz.highlight.scroll_box``), so the horizontal scrollbar of a
long program is on screen and long lines are reached sideways."""


@dataclass(frozen=True)
class KernelSource:
    """One generated kernel: name, the backend that compiled it, its source and language."""

    kernel: str
    backend: str
    source: str

    @property
    def language(self) -> str:
        """``"cuda"`` for CUDA C source, ``"python"`` for the NumPy backend's code."""
        cuda = "__global__" in self.source or 'extern "C"' in self.source
        return "cuda" if cuda else "python"


def kernel_sources(trace: Trace) -> dict[str, KernelSource]:
    """Every compiled kernel by name (the last compile of a name wins), in trace order."""
    return {
        event.kernel: KernelSource(event.kernel, event.backend, event.source)
        for event in trace.of(KernelCompiled)
    }


def host_program(trace: Trace) -> str:
    """The generated host program (Python), or "" when the trace has none."""
    generated = trace.of(HostProgramGenerated)
    return generated[-1].source if generated else ""


def code_html(source: str, language: str = "python") -> str:
    """``source`` as highlighted HTML in a ``<div class="acrobat-code">``, every character kept."""
    try:
        from pygments import highlight
        from pygments.formatters import HtmlFormatter
        from pygments.lexers import CudaLexer, PythonLexer
    except ImportError:  # highlighting is a nicety; the code itself is what matters
        return f'<div class="acrobat-code"><pre>{html.escape(source)}</pre></div>'
    lexer = CudaLexer() if language == "cuda" else PythonLexer()
    formatter = HtmlFormatter(noclasses=True, nobackground=True, style="default")
    return f'<div class="acrobat-code">{highlight(source, lexer, formatter)}</div>'
