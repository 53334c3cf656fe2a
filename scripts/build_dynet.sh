#!/usr/bin/env bash
# Builds DyNet 2.1.2 (CPU, Eigen backend) into its own virtualenv, as the live DyNet peer of
# the benchmark (`make peers` runs it; acrobat/baselines/peers/ finds the result in .dynet-venv
# or $ACROBAT_DYNET_PYTHON). Needs root for apt-get, and PyPI for the sources.
# Usage: bash scripts/build_dynet.sh [VENV_DIR (default .dynet-venv)] [WORK_DIR (default .dynet-build)]
# Takes about 6-9 minutes on 2 cores; known to work on Debian 12, Python 3.11, g++ 12, cmake 3.25.
#
# What it works around, and why:
#   - `pip install dynet==2.1.2` downloads a pinned Eigen; EIGEN3_INCLUDE_DIR pointing at
#     Debian's libeigen3-dev (Eigen 3.4.0) skips that download.
#   - Cython 3 rejects _dynet.pyx ("undeclared name not builtin: long"): pin cython<3 and
#     install with --no-build-isolation.
#   - The wheel step fails on a missing LICENSE.txt because setup.py changes directory; an
#     empty `license_files =` in setup.cfg avoids it.
# The result: libdynet.so lands in the venv's lib/ (the install works only in that venv), built
# with -march=native (not portable to other CPUs: `make peers` keeps this CPU's fingerprint in
# $VENV/built-for-cpu and builds again on another). DyNet's batching strategy is process-wide
# (dynet_config.set(autobatch=K) before `import dynet`), so the benchmark runs one process per
# strategy.
set -euo pipefail
VENV=$(realpath -m "${1:-.dynet-venv}")
WORK=$(realpath -m "${2:-.dynet-build}")

# 1. system packages (Debian 12 bookworm): Eigen 3.4.0 headers and a C++ toolchain
apt-get update
apt-get install -y libeigen3-dev cmake make g++

# 2. a venv with the build dependencies; Cython must be < 3, no build isolation
python3 -m venv "$VENV"
"$VENV/bin/pip" install "cython<3" numpy setuptools wheel

# 3. the sdist, unpacked so that one file can be patched
mkdir -p "$WORK/src" && cd "$WORK"
"$VENV/bin/pip" download --no-deps --no-binary :all: dynet==2.1.2   # -> dyNET-2.1.2.tar.gz
rm -rf "$WORK/src/dyNET-2.1.2" && tar xzf dyNET-2.1.2.tar.gz -C "$WORK/src"
cd "$WORK/src/dyNET-2.1.2"
# setup.py's build_py chdir()s into build/py3.11-64bit/python, so bdist_wheel later fails
# with "No such file or directory: 'LICENSE.txt'": declare no license files. The sdist's
# setup.cfg has CRLF line endings, so it is rewritten whole rather than edited with sed.
printf '[metadata]\ndescription-file = README.md\nlicense_files =\n\n[egg_info]\ntag_build =\ntag_date = 0\n' > setup.cfg

# 4. build: setup.py reads EIGEN3_INCLUDE_DIR (no Eigen download) and MAKE_FLAGS. It runs
#    cmake, make and make install (libdynet.so -> $VENV/lib, headers -> $VENV/include), then
#    cythonizes python/_dynet.pyx and links _dynet.so with an rpath to $VENV/lib.
export EIGEN3_INCLUDE_DIR=/usr/include/eigen3
export MAKE_FLAGS="-j$(nproc)"
"$VENV/bin/pip" install -v --no-build-isolation --no-deps .

# 5. smoke test
cd "$WORK" && "$VENV/bin/python" - <<'PY'
import dynet_config; dynet_config.set(autobatch=1, mem=256, random_seed=1)
import dynet as dy
m = dy.ParameterCollection(); W = m.add_parameters((3, 4))
dy.renew_cg(); print("dynet OK:", dy.tanh(W * dy.inputVector([1, 2, 3, 4])).npvalue())
PY
