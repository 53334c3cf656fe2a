"""The benchmark harness: ``python -m acrobat.bench run|paper|ablation|report``.

Every speed claim of acrobat is measured here, as ratios against baselines measured in
the same process and run: per-instance eager NumPy, hand-batched NumPy, the machine's
single-SGEMM GFLOP/s, and (when installed) PyTorch and DyNet.
"""
