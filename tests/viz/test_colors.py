"""One colour per policy, in every view and session."""

import subprocess
import sys

import acrobat
from acrobat.viz.colors import EXTRA_COLORS, POLICY_COLORS, policy_color, policy_colors


def test_registered_policies_have_fixed_distinct_colours():
    names = [p.name for p in acrobat.policies()]
    assert set(names) <= set(POLICY_COLORS)
    colors = [policy_color(n) for n in names]
    assert len(set(colors)) == len(colors)
    assert policy_colors(names) == dict(zip(names, colors))
    assert not set(EXTRA_COLORS) & set(POLICY_COLORS.values())


def test_other_names_hash_to_the_same_colour_in_every_process():
    here = policy_color("my-policy")
    assert here in EXTRA_COLORS and policy_color("my-policy") == here
    code = "from acrobat.viz.colors import policy_color; print(policy_color('my-policy'))"
    other = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.strip()
    assert other == here  # hashlib, not hash(): no per-process salt
    assert len({policy_color(f"p{n}") for n in range(40)}) > 1


def test_the_schedule_view_colours_each_policy_by_name(treelstm):
    from acrobat.viz.schedule_view import schedule_pair

    for a, b in (("acrobat", "eager"), ("eager", "acrobat")):
        fig_a, fig_b = schedule_pair(treelstm.runs[a], treelstm.runs[b]).children
        assert fig_a.title.text_color == policy_color(a) == fig_a.outline_line_color
        assert fig_b.title.text_color == policy_color(b)
