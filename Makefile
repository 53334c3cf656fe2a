# Developer and CI entry points: `make setup | test | test-slow | test-asan | test-engines | lint | explorer | clean`.
# `setup` is idempotent: system packages only when missing, pip only when pyproject.toml (or the
# native core's C sources) changed.

VENV ?= .venv
PY = $(VENV)/bin/python
PORT ?= 5006
ADDRESS ?= localhost
PYTEST_ARGS ?=
# `make test` runs the default suite (tests marked `slow` left out: under 15 minutes on a
# 2-core machine); `make test-slow` runs only those; CI (.ci/run) runs both.
PYTEST_MARKS ?= not slow
SYSTEM_PACKAGES = graphviz chromium

.PHONY: setup system-packages test test-slow test-asan test-engines lint explorer notebooks peers bench clean

setup: system-packages $(VENV)/.installed

# Graphviz `dot` renders IR/DFG graphs; Debian's Chromium drives the e2e browser tests.
system-packages:
	@if command -v dot >/dev/null 2>&1 && [ -x /usr/bin/chromium ]; then exit 0; fi; \
	if [ "$$(id -u)" -eq 0 ]; then \
		apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y $(SYSTEM_PACKAGES); \
	else \
		echo "error: Graphviz 'dot' or /usr/bin/chromium is missing." >&2; \
		echo "       Install them as root: apt-get install -y $(SYSTEM_PACKAGES)" >&2; \
		exit 1; \
	fi

$(PY):
	python3 -m venv $(VENV)

# The stamp makes a second `make test` install nothing unless pyproject.toml changed, or the
# native core's sources (the editable install compiles them in place: setup.py).
# `viz` (the explorer and notebook widgets) and `numba` (the scheduler where the native core is
# off) are extras for users; tests and the explorer need them.
NATIVE_SOURCES = setup.py $(wildcard acrobat/native/*.c acrobat/native/*.h)
$(VENV)/.installed: pyproject.toml $(NATIVE_SOURCES) | $(PY)
	$(PY) -m pip install -e '.[dev,viz,numba]'
	touch $@

# pytest exits 5 when it collected nothing: say so loudly and fail rather than pass silently.
test: setup
	@$(PY) -m pytest -m "$(PYTEST_MARKS)" $(PYTEST_ARGS); status=$$?; \
	if [ $$status -eq 5 ]; then \
		echo "*** pytest collected no tests: failing the run ***" >&2; exit 1; \
	fi; \
	exit $$status

test-slow:
	@$(MAKE) --no-print-directory test PYTEST_MARKS=slow

# The native tests, the compiled host programs' fiber tests and a short fuzz campaign under
# AddressSanitizer + UBSan
# (tests/native/test_sanitize.py says how; CI runs it in the slow suite).
test-asan: setup
	$(PY) -m pytest tests/native/test_sanitize.py -m slow $(PYTEST_ARGS)

# The suite runs on the engine `auto` picks (native where its core loads); this runs the
# equivalence suite, the models' tests and the saved fuzz cases on the reference engine, then a
# short differential fuzz campaign on each engine (acrobat/runtime/engines).
FUZZ_MINUTES ?= 2
test-engines: setup
	ACROBAT_ENGINE=reference $(PY) -m pytest -m "not slow and not e2e" \
		tests/runtime/test_equivalence.py tests/models tests/fuzz/test_cases.py
	ACROBAT_ENGINE=reference $(PY) -m acrobat.fuzz --minutes $(FUZZ_MINUTES) --seed 1 --quiet
	ACROBAT_ENGINE=native $(PY) -m acrobat.fuzz --minutes $(FUZZ_MINUTES) --seed 2 --quiet

lint: $(VENV)/.installed
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

explorer: setup
	$(VENV)/bin/panel serve apps/explorer.py --port $(PORT) --address $(ADDRESS) \
		--check-unused-sessions 1000 --unused-session-lifetime 1000

# The lessons' one source is tutorials/src/NN_*.md; this regenerates notebooks/NN_*.ipynb from it,
# executes them and renders the text versions tutorials/NN_*.md (outputs, figures as images).
notebooks: setup
	$(PY) scripts/lessons.py

# Optional peers for the benchmark: PyTorch (a local CPU build) in the venv, and DyNet 2.1.2
# built from its PyPI sdist into .dynet-venv by scripts/build_dynet.sh (6-9 minutes, needs root).
# The build targets this CPU (-march=native), so a .dynet-venv built on another CPU (a checkout
# carried to another machine) is built again: its CPU's fingerprint is kept beside it.
CPU_ID = $(shell (grep -m1 '^model name' /proc/cpuinfo; grep -m1 '^flags' /proc/cpuinfo) 2>/dev/null | sha256sum | cut -c1-16)
peers: setup
	$(PY) -m pip install torch==2.13.0
	@if [ -x .dynet-venv/bin/python ] && .dynet-venv/bin/python -c "import dynet" 2>/dev/null \
		&& [ "$$(cat .dynet-venv/built-for-cpu 2>/dev/null)" = "$(CPU_ID)" ]; then \
		echo "DyNet already built in .dynet-venv for this CPU"; \
	else \
		bash scripts/build_dynet.sh .dynet-venv .dynet-build && echo "$(CPU_ID)" > .dynet-venv/built-for-cpu; \
	fi

# The paper's grid on this machine, then the report (CSV, markdown, HTML).
bench: setup
	$(PY) -m acrobat.bench paper --out bench-results/paper.jsonl
	$(PY) -m acrobat.bench report bench-results/paper.jsonl --out bench-results/report

clean:
	rm -rf $(VENV) build dist *.egg-info .pytest_cache .ruff_cache .hypothesis .dynet-build
	find . -name __pycache__ -type d -prune -exec rm -rf {} +
