"""Taint view: every analysed binding coloured by its class, scoped per function."""

import html
import re
from collections import Counter

from acrobat.trace import TaintComputed, Trace
from acrobat.viz.taint_view import (
    TAINT_CLASSES,
    final_ir,
    function_taints,
    taint_html,
    taint_legend_html,
    taint_rows,
    taint_table_html,
    taint_variables_html,
)

SPAN = re.compile(r'<span class="taint-([\w-]+)" title="(\w+): [\w-]+">([%$])(\w+)</span>')


def test_rows_are_the_traced_classes(stackrnn):
    events = stackrnn.compile.of(TaintComputed)
    rows = taint_rows(stackrnn.compile)
    assert len(rows) == sum(len(e.classes) for e in events)
    assert {(r.function, r.variable, r.taint) for r in rows} == {
        (e.function, v, c) for e in events for v, c in e.classes.items()
    }
    assert {r.taint for r in rows} == set(TAINT_CLASSES)  # stackrnn has all three


def test_html_keeps_the_ir_and_colours_each_function_with_its_own_classes(stackrnn):
    trace = stackrnn.compile
    page = taint_html(trace)
    assert html.unescape(re.sub(r"<[^>]+>", "", page)) == final_ir(trace)
    classes = {e.function: e.classes for e in trace.of(TaintComputed)}
    function, seen = None, Counter()
    for line in page.splitlines():
        header = re.search(r"^(?:<pre[^>]*><code>)?(?:def|kernel) @(\w+)", line)
        if header:
            function = header.group(1)
        for taint, name, sigil, token in SPAN.findall(line):
            assert name == token
            if sigil == "$":
                assert taint == "parameter"
            else:
                assert taint == classes[function][name], (function, name)
                seen[taint] += 1
    assert set(seen) == set(TAINT_CLASSES)


def test_kernels_and_unknown_names_stay_plain():
    ir = "def @f(%x: T) {\n  %x\n}\nkernel @k(%x: T) {\n  %x\n}\n"
    trace = Trace([TaintComputed("f", {"x": "tensor-dependent"})])
    page = taint_html(trace, ir)
    assert page.count('class="taint-tensor-dependent"') == 2  # only inside @f


def test_legend_counts_and_tables(stackrnn):
    trace = stackrnn.compile
    counts = Counter(r.taint for r in taint_rows(trace))
    legend = taint_legend_html(trace)
    for cls in TAINT_CLASSES:
        assert f"</span> <b>{counts[cls]}</b>" in legend.split(f'class="taint-{cls}"')[1]
    per_function = function_taints(trace)
    table = taint_table_html(trace)
    assert table.count("<tr>") == len(per_function) + 1
    fiber = [f for f in per_function if f.fiber]
    assert fiber and all(f"<code>@{f.function}</code></td><td>yes" in table for f in fiber)
    assert "%t_6" in table  # parse's tensor-dependent branch
    assert taint_variables_html(trace).count("<tr>") == len(taint_rows(trace)) + 1
