"""A checker of the Chrome Trace Event Format (the JSON Object form), for the export tests.

The rules checked are the format's: a ``traceEvents`` list and an optional ``displayTimeUnit``
("ms" or "ns"); every event has a string ``name`` and ``ph`` and integer ``pid``/``tid``;
complete events (``"ph": "X"``) have numeric ``ts`` and ``dur`` in microseconds (>= 0), a
string ``cat`` and an ``args`` object; metadata events (``"ph": "M"``) are one of the
documented names with the documented ``args``; slices on one thread nest by time (a slice
starting inside another ends inside it: no partial overlaps); and the whole is JSON (no NaN).
"""

from __future__ import annotations

import json
import math
from collections import defaultdict

METADATA = {
    "process_name": ("name", str),
    "thread_name": ("name", str),
    "process_sort_index": ("sort_index", int),
    "thread_sort_index": ("sort_index", int),
    "process_labels": ("labels", str),
}
EPS_US = 1e-3  # one nanosecond: what a viewer resolves


def _number(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def _int(x) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


def check_chrome_trace(doc) -> list[str]:
    """Every rule ``doc`` (a parsed JSON document) breaks; empty when it is valid."""
    bad: list[str] = []
    try:
        text = json.dumps(doc, allow_nan=False)
    except (TypeError, ValueError) as err:
        return [f"not JSON: {err}"]
    if json.loads(text) != doc:
        bad.append("does not survive a JSON round trip")
    if not isinstance(doc, dict) or not isinstance(doc.get("traceEvents"), list):
        return bad + ["no traceEvents list"]
    if doc.get("displayTimeUnit", "ms") not in ("ms", "ns"):
        bad.append(f"displayTimeUnit {doc['displayTimeUnit']!r} is not 'ms' or 'ns'")
    slices = defaultdict(list)
    named_processes, named_threads = set(), set()
    for n, e in enumerate(doc["traceEvents"]):
        where = f"event {n} ({e.get('name')!r})" if isinstance(e, dict) else f"event {n}"
        if not isinstance(e, dict):
            bad.append(f"{where}: not an object")
            continue
        if not isinstance(e.get("name"), str) or not isinstance(e.get("ph"), str):
            bad.append(f"{where}: name and ph must be strings")
        if not _int(e.get("pid")) or not _int(e.get("tid")):
            bad.append(f"{where}: pid and tid must be integers")
            continue
        if e.get("ph") == "X":
            if not _number(e.get("ts")) or not _number(e.get("dur")):
                bad.append(f"{where}: ts and dur must be numbers (microseconds)")
                continue
            if e["ts"] < 0 or e["dur"] < 0:
                bad.append(f"{where}: negative ts or dur")
            if not isinstance(e.get("cat"), str) or not isinstance(e.get("args"), dict):
                bad.append(f"{where}: cat must be a string and args an object")
            slices[(e["pid"], e["tid"])].append((e["ts"], e["ts"] + e["dur"], e["name"]))
        elif e.get("ph") == "M":
            rule = METADATA.get(e.get("name"))
            args = e.get("args")
            if rule is None:
                bad.append(f"{where}: unknown metadata event")
            elif not isinstance(args, dict) or not isinstance(args.get(rule[0]), rule[1]):
                bad.append(f"{where}: args.{rule[0]} must be a {rule[1].__name__}")
            elif e["name"] == "process_name":
                named_processes.add(e["pid"])
            elif e["name"] == "thread_name":
                named_threads.add((e["pid"], e["tid"]))
        else:
            bad.append(f"{where}: phase {e.get('ph')!r} is not one this exporter writes")
    for (pid, tid), spans in slices.items():
        if pid not in named_processes:
            bad.append(f"pid {pid} has slices but no process_name")
        if (pid, tid) not in named_threads:
            bad.append(f"pid {pid} tid {tid} has slices but no thread_name")
        stack: list[tuple[float, float, str]] = []
        for start, end, name in sorted(spans, key=lambda s: (s[0], -s[1])):
            while stack and stack[-1][1] <= start + EPS_US:  # ended before this one began
                stack.pop()
            if stack and end > stack[-1][1] + EPS_US:
                parent = stack[-1]
                bad.append(
                    f"pid {pid} tid {tid}: {name!r} [{start}, {end}] overlaps the end of "
                    f"{parent[2]!r} [{parent[0]}, {parent[1]}]"
                )
            stack.append((start, end, name))
    return bad


def slices_of(doc, pid: int, tid: int | None = None) -> list[dict]:
    """The complete events of one process (and thread)."""
    return [
        e
        for e in doc["traceEvents"]
        if e["ph"] == "X" and e["pid"] == pid and (tid is None or e["tid"] == tid)
    ]
