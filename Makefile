# The two commands a new user runs: `make demo` and `make test`. Each bootstraps what it needs.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
DEMO_DIR ?= campaigns/demo-$(shell date +%Y%m%d-%H%M%S)

.PHONY: demo test lint typecheck unit system-deps clean

demo: $(STAMP) system-deps
	$(VENV)/bin/recursor run --dir $(DEMO_DIR)

test: $(STAMP) system-deps lint typecheck unit

unit: $(STAMP) system-deps
	$(PY) -m pytest -q

lint: $(STAMP)
	$(VENV)/bin/ruff check .

typecheck: $(STAMP)
	$(VENV)/bin/mypy

system-deps:
	@scripts/system-deps.sh

$(STAMP): pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e ".[dev]"
	@touch $(STAMP)

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
