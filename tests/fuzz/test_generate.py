"""The program generator: tiny all-zeros program, well-typed seeded programs, op coverage."""

import contextlib

import acrobat
from acrobat.fuzz.choices import ChoiceSource
from acrobat.fuzz.generate import GeneratedProgram, generate_instances, generate_program
from acrobat.ir.ops import REGISTRY
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


def test_features_cover_every_tensor_op():
    features: set[str] = set()
    for seed in range(200):
        features |= generate_program(ChoiceSource(seed=seed)).features
    ops = {n for n, op in REGISTRY.items() if op.kind not in ("host", "ghost")}
    assert {n for n in ops if f"op:{n}" not in features} == set()
    wanted = {
        "stmt:if",
        "stmt:match",
        "stmt:while",
        "stmt:for_range",
        "stmt:tuple_unpack",
        "stmt:augassign",
        "expr:parallel",
        "expr:map",
        "expr:ifexp",
        "expr:tuple_index",
        "expr:slice",
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
        "weight:ifexp",
        "weight:tuple",
        "bcast:wx",
        "bcast:xw",
    }
    assert wanted - features == set()
