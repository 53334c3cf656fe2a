"""Every quantitative claim in the lessons' prose is checked here, against acrobat itself.

A lesson's prose (its Markdown outside code blocks and inline code) may state a number, or a
quantity in words ("hundreds", "nearly double"), only where this file holds it: as a
**claim**, a phrase of the prose with a check that recomputes it (launch counts, node counts,
sizes: deterministic, so the check is exact), or as a **given**, a phrase whose number is not a
measurement (an input's size, a setting, an arithmetic fact spelled out in the text). Times are
never claimed in prose: the lessons print ``acrobat.measure``'s verdicts and word their text
from them. ``test_every_number_in_the_prose_is_held`` fails on a number or quantity word that
is neither, so a new sentence with a number needs its check here; ``test_claims_hold`` runs
the checks, and fails too when a phrase is no longer in its lesson.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import cache
from pathlib import Path

import pytest

import acrobat

SOURCES = Path(__file__).resolve().parents[1] / "tutorials" / "src"
NUMBER = re.compile(
    r"\d+(?:[.,]\d+)*|\b(?:hundreds|hundred|dozen|twice|double|half|quarter|factor|several times"
    r"|many times)\b",
    re.IGNORECASE,
)
# Numbers that are references or names, not quantities: lesson, section, stage and list numbers,
# citations, the paper's venue.
REFERENCE = re.compile(
    r"[Ll]essons? \d\d(?:,? (?:and|or) \d\d)*|\[\d\d\]|[Ss]ections? \d+(?:-\d+| and \d+)?|§\d+"
    r"|[Ss]tage \d+|Try it \d|[Ee]xercise \d|et al\. \d{4}|MLSys 2024|arXiv:\S+|H = \d+|hidden size \d+"
    r"|(?:[Ii]nstances?|depths?|phase|layer|seed) \d+(?: and \d+)?|the middle half"
)


def prose(text: str) -> str:
    """A lesson's prose on one line: no code blocks, no inline code, no link targets, no list
    numbers, no headings, no HTML comments."""
    text = re.sub(r"^```.*?^```[ \t]*$", " ", text, flags=re.MULTILINE | re.DOTALL)
    text = re.sub(r"<!--.*?-->", " ", text, flags=re.DOTALL)
    text = re.sub(r"^#.*$", " ", text, flags=re.MULTILINE)
    text = re.sub(r"^\s*\d+\. ", " ", text, flags=re.MULTILINE)
    text = re.sub(r"`[^`]*`", "`…`", text)
    text = re.sub(r"\]\([^)]*\)", "]", text)
    text = re.sub(r"\$\$.*?\$\$", " ", text, flags=re.DOTALL)
    return re.sub(r"\s+", " ", text)


def _spans(text: str, phrases) -> list[tuple[int, int]]:
    spans = [m.span() for m in REFERENCE.finditer(text)]
    for phrase in phrases:
        spans += [(m.start(), m.end()) for m in re.finditer(re.escape(phrase), text)]
    return spans


def uncovered(lesson: str, text: str) -> list[tuple[str, str]]:
    """(token, context) of every number or quantity word in ``text`` that no claim, given or
    reference of ``lesson`` covers."""
    spans = _spans(text, [*CLAIMS.get(lesson, {}), *GIVEN.get(lesson, ()), *EVERY_LESSON])
    out = []
    for m in NUMBER.finditer(text):
        if not any(a <= m.start() and m.end() <= b for a, b in spans):
            out.append((m.group(), text[max(0, m.start() - 60) : m.end() + 40]))
    return out


# --- what the checks compute ---------------------------------------------------------------


@cache
def load(name: str, size: str = "tiny", **kw):
    return acrobat.models.load(name, size=size, **kw)


def stats(name: str, n: int = 16, seed: int = 0, options=None, policy="acrobat", size="tiny"):
    m = load(name, size)
    prog = acrobat.compile(m.module, m.params, options or acrobat.CompileOptions())
    kw = {"trace_level": "off", "strategy": "batched"}
    return acrobat.run(prog, m.instances(n, seed=seed), policy=policy, **kw).stats


def launches(name: str, n: int = 16, **kw) -> int:
    return stats(name, n, **kw)["launches"]


Options = acrobat.CompileOptions


def eager_and_batched() -> tuple[int, int]:
    """Lesson 01's 16 TreeLSTM trees: (eager launches, batched launches)."""
    return launches("treelstm", policy="eager"), launches("treelstm")


def hundreds_of_eager_launches() -> bool:
    return 100 <= eager_and_batched()[0] < 1000


def solution_lines(lesson: str, name: str) -> int:
    """Non-blank lines of the (folded solution) block that defines ``name``."""
    (source,) = SOURCES.glob(f"{lesson}_*.md")
    text = source.read_text(encoding="utf-8")
    blocks = re.findall(r"^```python\n(.*?)^```", text, re.MULTILINE | re.DOTALL)
    used = [b for b in blocks if f"def {name}(" in b]
    return sum(1 for b in used for line in b.splitlines() if line.strip())


def childsum(opts=None, policy="acrobat", source_change=None, key="launches"):
    """Lesson 04's child-sum TreeLSTM numbers (16 trees, seed 0)."""
    m = load("treelstm_childsum")
    module = m.module
    if source_change is not None:
        module = acrobat.parse(source_change(m.source), sizes=m.sizes)
    prog = acrobat.compile(module, m.params, opts or Options())
    return acrobat.run(prog, m.instances(16, seed=0), policy=policy).stats[key]


def reordered(source: str) -> str:
    """Lesson 04's rewrite: the sums before the ``dense`` that reads them, in ``parallel``."""
    out = source.replace(
        "            i, o, u = split(dense(x, W_iou, b_iou) + dense(sum_h(kids), U_iou), 3)\n"
        "            fc = sum_all(map(forget, kids, dense(x, W_f, b_f)))",
        "            fs = map(forget, kids, dense(x, W_f, b_f))\n"
        "            hsum, fc = parallel(sum_h(kids), sum_all(fs))\n"
        "            i, o, u = split(dense(x, W_iou, b_iou) + dense(hsum, U_iou), 3)",
    )
    assert out != source, "lesson 04's rewrite no longer applies to the model's source"
    return out


def specialization_bytes() -> tuple[int, int]:
    """Bytes gathered by lesson 03's BiRNN (small, 16 sentences): specialized, not."""
    m = load("birnn", "small")
    xs = m.instances(16, seed=0)
    out = []
    for opts in (Options(), Options().without("taint_specialization")):
        out.append(acrobat.run(acrobat.compile(m.module, m.params, opts), xs).stats)
    return out[0]["bytes_gathered"], out[1]["bytes_gathered"]


def zeros_rows() -> int:
    """Lesson 03: ``forward_k0`` nodes of 32 BiRNN sentences (two per sentence, one launch)."""
    m = load("birnn")
    prog = acrobat.compile(m.module, m.params)
    res = acrobat.run(prog, m.instances(32, seed=0), trace_level="nodes")
    from acrobat.trace import NodeRecorded

    return sum(1 for e in res.trace.of(NodeRecorded) if e.kernel == "forward_k0")


def berxit_seed_4() -> bool:
    """Lesson 05: with seed 4 no instance runs all six layers, yet the run takes six passes
    (at every batch size its check loop uses that has no six-layer instance)."""
    m = load("berxit")
    prog = acrobat.compile(m.module, m.params)
    seen = False
    for n in (4, 8, 16, 32):
        res = acrobat.run(prog, m.instances(n, seed=4))
        if max(layers for _logits, layers in res.outputs) < 6:
            seen = True
            if res.stats["passes"] != 6:
                return False
    return seen


def drnn_passes(**off) -> int:
    m = load("drnn")
    prog = acrobat.compile(m.module, m.params, Options(**off))
    return acrobat.run(prog, m.instances(16, seed=0)).stats["passes"]


def treelstm_u_bytes() -> int:
    """Lesson 06: the bytes of the internal-node kernel's matrix U at H = 256."""
    m = load("treelstm", "small")
    assert m.sizes["H"] == 256
    return m.params["U"].nbytes


PAPER_ORDER = Options().without("independence", "leveling")
KEYS = Options().without("leveling")

# lesson -> {phrase of its prose: a check computed here, or an assert in its code (a string),
# which runs whenever the lesson executes (tests/test_notebooks.py)}
CLAIMS: dict[str, dict[str, Callable[[], bool] | str]] = {
    "01": {
        "launches hundreds of tiny kernels": hundreds_of_eager_launches,
        "hundreds of tiny launches for 16 short sentences": hundreds_of_eager_launches,
        "From hundreds of launches down to about a dozen": lambda: (
            hundreds_of_eager_launches() and 9 <= eager_and_batched()[1] <= 15
        ),
        "a dense comb of hundreds of tiny launches": hundreds_of_eager_launches,
        "(hundreds for 16 small trees)": hundreds_of_eager_launches,
        "these 30 lines": lambda: solution_lines("01", "solution_batch_run") <= 30,
    },
    "03": {
        "a batcher in 30 lines": lambda: solution_lines("01", "solution_batch_run") <= 30,
        "save 63 rows": lambda: zeros_rows() == 64,
        "more than a hundred times the bytes moved": lambda: (
            specialization_bytes()[1] > 100 * specialization_bytes()[0]
        ),
        "more than a hundred times the bytes gathered": lambda: (
            specialization_bytes()[1] > 100 * specialization_bytes()[0]
        ),
    },
    "04": {
        "takes the keys from 157 launches (program order) to 111": lambda: (
            childsum(PAPER_ORDER) == 157 and childsum(KEYS) == 111
        ),
        "Leveling takes them to 51": lambda: childsum() == 51,
        "`…` 93, `…` 67": lambda: (
            childsum(policy="dynet-depth") == 93 and childsum(policy="dynet-agenda") == 67
        ),
        "(2652 nodes to 2352 here, lower bound 39 to 30)": lambda: (
            childsum(key="nodes") == 2652
            and childsum(source_change=reordered, key="nodes") == 2352
            and childsum(key="lower_bound") == 39
            and childsum(source_change=reordered, key="lower_bound") == 30
        ),
        "15 fewer launches (51 to 36)": lambda: (
            childsum() == 51 and childsum(source_change=reordered) == 36
        ),
        "from 111 to 51": lambda: childsum(KEYS) == 111 and childsum() == 51,
        "(157 -> 111 launches)": lambda: childsum(PAPER_ORDER) == 157 and childsum(KEYS) == 111,
        "below both DyNet policies (51)": lambda: (
            childsum() == 51 < min(childsum(policy="dynet-depth"), childsum(policy="dynet-agenda"))
        ),
        "fewer launches (36)": lambda: childsum(source_change=reordered) == 36,
    },
    "05": {
        "the launches nearly double": (
            'assert without_ghosts.stats["launches"] > 1.8 * with_ghosts.stats["launches"]'
        ),
        "a batch of 8 sentences with 6 different lengths launches it 6 times": (
            "assert len(bag_sentences) == 8 and len(set(bag_lengths)) == tanh_launches == 6"
        ),
        "with seed 4, no instance runs all six layers, yet the run takes six passes": (
            berxit_seed_4
        ),
        "nearly twice the passes, `…` for `…`": lambda: (
            drnn_passes(independence=False) == 2 * drnn_passes() - 1
        ),
        "by about a quarter": 'assert on["nodes"] < 0.8 * off["nodes"]',
        "by more than half": 'assert on["launches"] < 0.5 * off["launches"]',
    },
    "06": {
        "starts after 0": "assert before > 0",
        "2.6 MB at": lambda: round(treelstm_u_bytes() / 1e6, 1) == 2.6,
    },
    "07": {
        "several times the lower bound": (
            'assert in_order_stats["launches"] >= 3 * in_order_stats["lower_bound"]'
        ),
    },
}

# Every lesson's box on the paper and acrobat states the paper's result (not ours to check).
EVERY_LESSON = ("up to 8.5x faster than DyNet on a GPU (NVIDIA RTX 3070)",)

# lesson -> phrases whose numbers are not measured: input sizes, settings, arithmetic.
GIVEN: dict[str, tuple[str, ...]] = {
    "01": (
        "one matrix product over 64 inputs costs less than 64 products",
        "To run 64 inputs",
        "product instead of 64",
        "one call instead of 64",
        "the other 15 trees",  # 16 trees; all leaves in one launch is asserted in the lesson
        "(0 for a node without inputs)",
        "the same 16 trees",
        "Measure both on 64 trees",
        "(1 to 64 trees)",
    ),
    "03": (
        "a batch of 16 instances would carry 16 copies",
        "the 16 tiny sentences",
        "on 16 sentences",
        "the 16 inputs",
    ),
    "04": (
        "(1 + deepest producer)",
        "on 16 sentences",
        '"1 + the deepest input"',
        "size, 8 trees",
        "medians of 5 interleaved repeats",
    ),
    "05": ("over 16 instances", "depths restart at 0"),
    "06": (
        "on 32 trees",
        "the second half of the case",
        "a launch of 64 nodes reads the weights once, 64 launches of one node read them 64 times",
        "the same 64 trees",
        "capped at 256 trees",
    ),
    "07": ("run all 32 trees", "run 64 trees"),
}


@pytest.mark.parametrize("lesson", sorted({p.stem[:2] for p in SOURCES.glob("0*.md")}))
def test_every_number_in_the_prose_is_held(lesson):
    (source,) = SOURCES.glob(f"{lesson}_*.md")
    loose = uncovered(lesson, prose(source.read_text(encoding="utf-8")))
    assert not loose, f"{source.name}: numbers in the prose that no claim or given holds:\n" + (
        "\n".join(f"  {token!r} in ...{context}..." for token, context in loose)
    )


@pytest.mark.parametrize(
    "lesson, phrase", [(lesson, phrase) for lesson, c in CLAIMS.items() for phrase in c]
)
def test_claims_hold(lesson, phrase):
    (source,) = SOURCES.glob(f"{lesson}_*.md")
    assert phrase in prose(source.read_text(encoding="utf-8")), (
        f"{source.name} no longer says {phrase!r}: update its claim here"
    )
    check = CLAIMS[lesson][phrase]
    if isinstance(check, str):  # asserted in the lesson, which tests/test_notebooks.py runs
        code = "\n".join(re.findall(r"^```python\n(.*?)^```", source.read_text(), re.M | re.S))
        assert check in code, f"{source.name} no longer asserts {check!r}"
    else:
        assert check(), f"{source.name}: {phrase!r} does not hold"


def test_givens_are_in_their_lessons():
    for lesson in sorted({p.stem[:2] for p in SOURCES.glob("0*.md")}):
        phrases = (*GIVEN.get(lesson, ()), *EVERY_LESSON)
        (source,) = SOURCES.glob(f"{lesson}_*.md")
        text = prose(source.read_text(encoding="utf-8"))
        missing = [p for p in phrases if p not in text]
        assert not missing, f"{source.name} no longer says {missing}: update GIVEN here"
