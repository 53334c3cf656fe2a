"""Kernel source view: every compiled kernel's code and the host program, highlighted."""

import html
import re

from acrobat.trace import HostProgramGenerated, KernelCompiled, Trace
from acrobat.viz.source_view import KernelSource, code_html, host_program, kernel_sources


def _text(page: str) -> str:
    return html.unescape(re.sub(r"<[^>]+>", "", page))


def test_every_compiled_kernel_is_listed(treelstm):
    trace = treelstm.runs["acrobat"]
    compiled = trace.of(KernelCompiled)
    sources = kernel_sources(trace)
    assert list(sources) == [k.kernel for k in compiled]
    for event in compiled:
        assert sources[event.kernel].source == event.source
        assert sources[event.kernel].backend == "numpy"
        assert sources[event.kernel].language == "python"


def test_host_program(treelstm):
    trace = treelstm.runs["acrobat"]
    assert host_program(trace) == trace.of(HostProgramGenerated)[-1].source
    assert host_program(Trace()) == ""


def test_code_html_keeps_every_character(treelstm):
    source = kernel_sources(treelstm.runs["acrobat"])["cell_node1"].source
    page = code_html(source + "\n# <script>alert(1)</script>\n")
    assert "<script>" not in page
    assert _text(page).strip() == (source + "\n# <script>alert(1)</script>").strip()


def test_cuda_source_is_recognised():
    cuda = 'extern "C" __global__ void k(float* x) { x[threadIdx.x] = 0; }'
    kernel = KernelSource("k", "cupy", cuda)
    assert kernel.language == "cuda"
    assert _text(code_html(cuda, "cuda")).strip() == cuda
