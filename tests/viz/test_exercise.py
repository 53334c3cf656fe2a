"""The build-a-batcher check of lesson 01 (acrobat.viz.exercise): it counts the kernel calls
itself and compares every output, so the wrong answers that fooled the old check (one tree at a
time while claiming 11 calls; only tree 0's output) are rejected, each with a message."""

import numpy as np
import pytest

import acrobat
from acrobat.viz.exercise import CountedKernels, ExerciseFailed, before_after, check_batcher


@pytest.fixture(scope="module")
def treelstm():
    spec = acrobat.models.load("treelstm", size="tiny")
    P = spec.params

    def sigmoid(x):
        return 1 / (1 + np.exp(-x))

    def leaf(words):
        i, o, u = np.split(P["E"][words] @ P["W_iou"].T + P["b_iou"], 3, axis=1)
        c = sigmoid(i) * np.tanh(u)
        return sigmoid(o) * np.tanh(c), c

    def node(hl, cl, hr, cr):
        gates = np.concatenate([hl, hr], axis=1) @ P["U"].T + P["b_U"]
        i, o, u, fl, fr = np.split(gates, 5, axis=1)
        c = sigmoid(i) * np.tanh(u) + sigmoid(fl) * cl + sigmoid(fr) * cr
        return sigmoid(o) * np.tanh(c), c

    trees = spec.instances(16, seed=0)
    run = acrobat.run(acrobat.compile(spec.module, spec.params), trees)
    return trees, {"leaf": leaf, "node": node}, run


def record(tree, nodes):
    if tree.ctor == "Leaf":
        nodes.append(("leaf", tree.fields[0], (), 0))
        return len(nodes) - 1, 0
    left, d_left = record(tree.fields[0], nodes)
    right, d_right = record(tree.fields[1], nodes)
    depth = 1 + max(d_left, d_right)
    nodes.append(("node", None, (left, right), depth))
    return len(nodes) - 1, depth


def batched(trees, kernels):
    """Lesson 01's solution: one kernel call per (depth, kernel) bucket."""
    nodes = []
    roots = [record(t, nodes)[0] for t in trees]
    buckets = {}
    for n, (kernel, _word, _inputs, depth) in enumerate(nodes):
        buckets.setdefault((depth, kernel), []).append(n)
    h, c = {}, {}
    for depth, kernel in sorted(buckets):
        ids = buckets[depth, kernel]
        if kernel == "leaf":
            hs, cs = kernels["leaf"](np.array([nodes[n][1] for n in ids]))
        else:
            args = [
                np.stack([state[nodes[n][2][side]] for n in ids])
                for side in (0, 1)
                for state in (h, c)
            ]
            hs, cs = kernels["node"](*args)
        for k, n in enumerate(ids):
            h[n], c[n] = hs[k], cs[k]
    return [h[r] for r in roots]


def one_at_a_time(tree, kernels):
    """Evaluate one tree node by node: one kernel call per node."""
    if tree.ctor == "Leaf":
        h, c = kernels["leaf"](np.array([tree.fields[0]]))
        return h, c
    hl, cl = one_at_a_time(tree.fields[0], kernels)
    hr, cr = one_at_a_time(tree.fields[1], kernels)
    return kernels["node"](hl, cl, hr, cr)


def test_the_solution_passes(treelstm):
    trees, kernels, run = treelstm
    found = check_batcher(batched, trees, kernels, run.outputs, run.stats["launches"])
    assert found.total == run.stats["launches"] == run.stats["lower_bound"]
    assert found.calls["leaf"] == 1
    assert str(found).startswith(f"{found.total} kernel calls")


def test_one_tree_at_a_time_is_counted_not_believed(treelstm):
    """Right outputs, one call per node: the count is the wrappers', whatever it claims."""
    trees, kernels, run = treelstm

    def eager(trees, kernels):
        return [one_at_a_time(t, kernels)[0][0] for t in trees]

    nodes = run.stats["nodes"]
    with pytest.raises(ExerciseFailed, match=rf"made {nodes} kernel calls .*launched 11"):
        check_batcher(eager, trees, kernels, run.outputs, run.stats["launches"])

    def claims_11(trees, kernels):  # the old exercise's (outputs, calls) answer
        return eager(trees, kernels), 11

    with pytest.raises(ExerciseFailed, match="returned 2 outputs for 16 instances"):
        check_batcher(claims_11, trees, kernels, run.outputs, run.stats["launches"])


def test_only_tree_0s_output_is_rejected(treelstm):
    trees, kernels, run = treelstm

    def first_only(trees, kernels):
        return batched(trees, kernels)[:1]

    with pytest.raises(ExerciseFailed, match="returned 1 outputs for 16 instances"):
        check_batcher(first_only, trees, kernels, run.outputs, run.stats["launches"])


def test_wrong_values_and_shapes_name_the_instance(treelstm):
    trees, kernels, run = treelstm

    def off_by_one(trees, kernels):
        out = batched(trees, kernels)
        out[3] = out[3] + 1.0
        return out

    with pytest.raises(ExerciseFailed, match="output 3 differs.*largest difference 1"):
        check_batcher(off_by_one, trees, kernels, run.outputs, run.stats["launches"])

    def wrong_shape(trees, kernels):
        return [h[:4] for h in batched(trees, kernels)]

    with pytest.raises(ExerciseFailed, match=r"output 0 differs.*shape \(4,\), expected \(8,\)"):
        check_batcher(wrong_shape, trees, kernels, run.outputs, run.stats["launches"])

    with pytest.raises(ExerciseFailed, match="returned None"):
        check_batcher(lambda t, k: None, trees, kernels, run.outputs, run.stats["launches"])


def test_counted_kernels_keep_calls_and_batch_sizes():
    counted = CountedKernels({"double": lambda x: 2 * x})
    assert list(counted) == ["double"] and len(counted) == 1
    assert counted["double"](np.ones(3)).tolist() == [2.0, 2.0, 2.0]
    counted["double"](np.ones(5))
    assert counted.calls["double"] == 2 == counted.total
    assert counted.sizes["double"] == [3, 5]


def test_before_after_draws_each_run_side_by_side():
    spec = acrobat.models.load("treelstm", size="tiny")
    trees = spec.instances(2, seed=0)
    runs = {
        "eager <1>": acrobat.run(
            acrobat.compile(spec.module, spec.params), trees, policy="eager", trace_level="nodes"
        ),
        "batched": acrobat.run(
            acrobat.compile(spec.module, spec.params), trees, trace_level="nodes"
        ),
    }
    page = before_after({label: r.trace for label, r in runs.items()}, instance=1)
    assert page.count("<svg") == 2 and page.index("eager &lt;1&gt;") < page.index("batched")
    assert "<1>" not in page  # labels are escaped
