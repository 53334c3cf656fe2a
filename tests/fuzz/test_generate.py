"""The program generator: tiny all-zeros program, well-typed seeded programs, op and
feature coverage (every tensor and host op, the language constructs)."""

import contextlib

import acrobat
from acrobat.fuzz.choices import ChoiceSource
from acrobat.fuzz.generate import GeneratedProgram, generate_instances, generate_program
from acrobat.ir.nodes import OpCall
from acrobat.ir.ops import REGISTRY
from acrobat.ir.traversal import walk
from acrobat.ir.values import entry_args


def test_all_zeros_program_is_tiny_and_runs():
    g = generate_program(ChoiceSource(prefix=[]))
    assert isinstance(g, GeneratedProgram)
    assert g.source.count("def ") == 1 and len(g.source.splitlines()) < 12
    m = acrobat.parse(g.source)
    (x,) = generate_instances(m, ChoiceSource(prefix=[]), 1)
    y = acrobat.evaluate(m, x, acrobat.init_params(m, 0))
    assert acrobat.values_equal(y, x)


def test_replaying_the_choices_gives_the_same_program():
    for seed in range(20):
        src = ChoiceSource(seed=seed)
        g = generate_program(src)
        assert generate_program(ChoiceSource(prefix=src.choices)) == g


def test_seeded_programs_parse_and_instances_fit():
    for seed in range(50):
        g = generate_program(ChoiceSource(seed=seed))
        m = acrobat.parse(g.source)
        xs = generate_instances(m, ChoiceSource(seed=seed), 4)
        assert len(xs) == 4
        for i, x in enumerate(xs):
            entry_args(m, x, i)


def test_seeded_programs_evaluate_without_untyped_errors():
    for seed in range(30):
        m = acrobat.parse(generate_program(ChoiceSource(seed=seed)).source)
        params = acrobat.init_params(m, 0)
        for x in generate_instances(m, ChoiceSource(seed=seed), 2):
            with contextlib.suppress(acrobat.AcrobatError):  # bad ids are drawn on purpose
                acrobat.evaluate(m, x, params)


def test_features_cover_every_op():
    features: set[str] = set()
    parsed: set[str] = set()  # ops in the parsed IR: literal-only host ops are folded away
    for seed in range(200):
        g = generate_program(ChoiceSource(seed=seed))
        features |= g.features
        m = acrobat.parse(g.source)
        parsed |= {e.op for f in m.functions for e in walk(f.body) if isinstance(e, OpCall)}
    ops = {n for n, op in REGISTRY.items() if op.kind not in ("host", "ghost")}
    assert {n for n in ops if f"op:{n}" not in features} == set()
    host = {n for n, op in REGISTRY.items() if op.kind == "host"}
    assert host and all(n.startswith("h.") for n in host)
    assert {n for n in host if f"op:{n}" not in features} == set()
    assert host - parsed == set()
    assert "scalar" in parsed
    wanted = {
        "stmt:if",
        "stmt:match",
        "stmt:while",
        "stmt:for_range",
        "stmt:for_list",
        "stmt:for_tuple_target",
        "stmt:rnn_step",
        "decl:host_const",
        "bcast:host_scalar",
        "op:scalar",
        "op:h.len",
        "op:h.abs",
        "op:h.min",
        "op:h.max",
        "op:h.neg",
        "op:h.pow",
        "stmt:tuple_unpack",
        "stmt:augassign",
        "expr:parallel",
        "expr:map",
        "expr:ifexp",
        "expr:tuple_index",
        "expr:slice",
        "expr:offset_slice",
        "expr:list_index",
        "expr:zip",
        "expr:map_zip",
        "expr:conversion",
        "stmt:break",
        "stmt:continue",
        "decl:generic_function",
        "expr:list_sum",
        "expr:list_max",
        "expr:list_argmax",
        "expr:attend",
        "phase",
        "adt:recursive",
        "adt:mutual",
        "adt:generic",
        "adt:list",
        "adt:option",
        "fiber",
        "mix:parallel_fiber_nonfiber",
        "mix:map_fiber",
        "host:int_arith",
        "host:float_arith",
        "param:rank1",
        "param:rank2",
        "param:rank3",
        "weight:arg",
        "weight:twins",
        "weight:ifexp",
        "weight:tuple",
        "bcast:wx",
        "bcast:xw",
    }
    assert wanted - features == set()
