"""DyNet 2.1.2 TreeLSTM and BiRNN, run by the DyNet virtualenv's Python in its own process.

Usage: ``python dynet_job.py JOB.json`` prints ``{"ready": true}`` once the model is built,
then runs one forward pass per ``run`` line read from stdin and answers each with a JSON
line ``{"ms": ..., "checksum": ...}`` (its own timing of that pass), until ``quit`` or the
end of its input: the benchmark measures DyNet this way, interleaved with acrobat's
configurations. The job names the model, the autobatch strategy (0 off, 1 agenda, 2
depth) and files holding the
weights (``.npz``) and the inputs (JSON: trees as nested lists ``[word]`` / ``[l, r]``,
sequences as lists of ids). This file imports only DyNet and NumPy (it runs outside
acrobat's environment). Same equations as acrobat.models.treelstm / birnn.
"""

import json
import sys
import time

import numpy as np


def main(path):
    with open(path) as f:
        job = json.load(f)
    import dynet_config

    dynet_config.set(autobatch=job["strategy"], mem=job.get("mem", 2048), random_seed=1)
    import dynet as dy

    weights = dict(np.load(job["weights"]))
    with open(job["inputs"]) as f:
        inputs = json.load(f)
    pc = dy.ParameterCollection()
    P = {}
    for k, v in weights.items():
        if k == "E":
            P[k] = pc.lookup_parameters_from_numpy(v)
        else:
            P[k] = pc.parameters_from_numpy(v)
    H = weights["E"].shape[1]

    def tree_forward(instances):
        dy.renew_cg()
        W, b, U, bU = (dy.parameter(P[k]) for k in ("W_iou", "b_iou", "U", "b_U"))
        roots = []
        for t in instances:
            stack, res = [(t, False)], []
            while stack:
                node, done = stack.pop()
                if len(node) == 1:
                    g = dy.affine_transform([b, W, dy.lookup(P["E"], node[0])])
                    i, o, u = (dy.pick_range(g, k * H, (k + 1) * H) for k in range(3))
                    c = dy.cmult(dy.logistic(i), dy.tanh(u))
                    res.append((dy.cmult(dy.logistic(o), dy.tanh(c)), c))
                elif done:
                    (hr, cr), (hl, cl) = res.pop(), res.pop()
                    g = dy.affine_transform([bU, U, dy.concatenate([hl, hr])])
                    i, o, u, fl, fr = (dy.pick_range(g, k * H, (k + 1) * H) for k in range(5))
                    c = (
                        dy.cmult(dy.logistic(i), dy.tanh(u))
                        + dy.cmult(dy.logistic(fl), cl)
                        + dy.cmult(dy.logistic(fr), cr)
                    )
                    res.append((dy.cmult(dy.logistic(o), dy.tanh(c)), c))
                else:
                    stack += [(node, True), (node[1], False), (node[0], False)]
            roots.append(res[0][0])
        dy.forward(roots)
        return [r.npvalue() for r in roots]

    def birnn_forward(instances):
        dy.renew_cg()
        ps = {k: dy.parameter(P[k]) for k in P if k != "E"}

        def states(xs, W, U, b):
            h = dy.zeros(H)
            out = []
            for x in xs:
                h = dy.tanh(dy.affine_transform([b, W, x, U, h]))
                out.append(h)
            return out

        outs = []
        for seq in instances:
            xs = [dy.lookup(P["E"], w) for w in seq]
            fs = states(xs, ps["W_fw"], ps["U_fw"], ps["b_fw"])
            bs = states(xs[::-1], ps["W_bw"], ps["U_bw"], ps["b_bw"])[::-1]
            outs.append(
                [
                    dy.affine_transform([ps["b_c"], ps["W_c"], dy.concatenate([f, b])])
                    for f, b in zip(fs, bs)
                ]
            )
        flat = [o for seq in outs for o in seq]
        if flat:
            dy.forward(flat)
        return [[o.npvalue() for o in seq] for seq in outs]

    fn = tree_forward if job["model"] == "treelstm" else birnn_forward
    answers, sys.stdout = sys.stdout, sys.stderr  # DyNet's own prints go to stderr
    print(json.dumps({"ready": True}), file=answers, flush=True)
    for line in sys.stdin:
        if line.strip() != "run":
            break
        t = time.perf_counter()
        out = fn(inputs)
        ms = (time.perf_counter() - t) * 1e3
        print(json.dumps({"ms": ms, "checksum": checksum(out)}), file=answers, flush=True)


def checksum(out) -> float:
    flat = []
    for o in out:
        flat.extend(o if isinstance(o, list) else [o])
    return float(sum(np.asarray(x, np.float64).sum() for x in flat))


if __name__ == "__main__":
    main(sys.argv[1])
