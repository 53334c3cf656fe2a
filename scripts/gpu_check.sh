#!/usr/bin/env bash
# GPU check of the CuPy backend, on a machine with an NVIDIA GPU and a working CUDA driver.
# Run from anywhere; it works in the repository root:
#   1. CuPy: use the one already installed (any cupy-cudaXXx wheel), else install the `gpu`
#      extra (cupy-cuda12x; needs the package index);
#   2. `pytest -m gpu`: the CuPy backend equals the NumPy backend on every model and policy;
#   3. a first benchmark: TreeLSTM and BiRNN (small) at batch 8 and 64, backends numpy vs
#      cupy, policies acrobat / dynet-depth / eager; one table on stdout.
# PY picks the interpreter (default: .venv/bin/python if present, else python3).
# Expected time on an H200: about 1-2 min of tests, 2-3 min of benchmark.
set -euo pipefail
cd "$(dirname "$0")/.."
if [[ -z "${PY:-}" ]]; then
  if [[ -x .venv/bin/python ]]; then PY=.venv/bin/python; else PY=python3; fi
fi
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1

nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || true
if ! "$PY" -c "import cupy" 2>/dev/null; then
  "$PY" -m pip install -q -e '.[gpu]'
fi
# fail fast, with the reason, when CUDA does not work
"$PY" -c "from acrobat.backends import get_backend; import cupy; \
print('cupy', cupy.__version__, 'backend', get_backend('cupy').name)"

"$PY" -m pytest -m gpu -q -p no:cacheprovider tests/backends

"$PY" - <<'EOF'
"""numpy vs cupy, three policies, TreeLSTM and BiRNN small at batch 8 and 64."""

from acrobat.bench.harness import run_acrobat

rows = {}
for model in ("treelstm", "birnn"):
    for batch in (8, 64):
        for policy in ("acrobat", "dynet-depth", "eager"):
            for backend in ("numpy", "cupy"):
                r = run_acrobat(model, "small", batch, policy, backend=backend, runs=5, warmup=2)
                rows[model, batch, policy, backend] = r
                print(f"  done {model} b{batch} {policy} {backend}: {r['total_ms']:.1f} ms", flush=True)

head = (
    f"{'model':<9}{'batch':>6} {'policy':<12}{'launches':>9}{'bound':>6}"
    f"{'numpy ms':>10}{'cupy ms':>9}{'cupy exe':>9}{'cupy gen':>9}{'speedup':>8}  checksums"
)
print("\n" + head + "\n" + "-" * len(head))
for (model, batch, policy, backend), c in rows.items():
    if backend != "cupy":
        continue
    n = rows[model, batch, policy, "numpy"]
    same = abs(c["checksum"] - n["checksum"]) <= 1e-3 * max(1.0, abs(n["checksum"]))
    print(
        f"{model:<9}{batch:>6} {policy:<12}{c['launches']:>9}{c['lower_bound']:>6}"
        f"{n['total_ms']:>10.1f}{c['total_ms']:>9.1f}{c['exe_ms']:>9.1f}{c['gen_ms']:>9.1f}"
        f"{n['total_ms'] / c['total_ms']:>8.2f}  {'agree' if same else 'DIFFER'}"
    )
EOF
