# Developer and CI entry points: `make setup | test | lint | explorer | clean`.
# `setup` is idempotent: system packages only when missing, pip only when pyproject.toml changed.

VENV ?= .venv
PY = $(VENV)/bin/python
PORT ?= 5006
ADDRESS ?= localhost
PYTEST_ARGS ?=
SYSTEM_PACKAGES = graphviz chromium

.PHONY: setup system-packages test lint explorer clean

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

# The stamp makes a second `make test` install nothing unless pyproject.toml changed.
$(VENV)/.installed: pyproject.toml | $(PY)
	$(PY) -m pip install -e '.[dev]'
	touch $@

# pytest exits 5 when it collected nothing: say so loudly and fail rather than pass silently.
test: setup
	@$(PY) -m pytest $(PYTEST_ARGS); status=$$?; \
	if [ $$status -eq 5 ]; then \
		echo "*** pytest collected no tests: failing the run ***" >&2; exit 1; \
	fi; \
	exit $$status

lint: $(VENV)/.installed
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

explorer: setup
	$(VENV)/bin/panel serve apps/explorer.py --port $(PORT) --address $(ADDRESS)

clean:
	rm -rf $(VENV) build dist *.egg-info .pytest_cache .ruff_cache .hypothesis
	find . -name __pycache__ -type d -prune -exec rm -rf {} +
