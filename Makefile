# The two commands a new user runs: `make demo` and `make test`. Each bootstraps what it needs.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
DEMO_DIR ?= campaigns/demo-$(shell date +%Y%m%d-%H%M%S)
# The docker sandbox's engine: Recursor's own podman service unless DOCKER_HOST names another.
export DOCKER_HOST ?= unix:///run/recursor-podman/podman.sock
# The PostgreSQL server the `postgres` tests use: Recursor's private one (scripts/postgres.sh)
# unless this names another; unset, those tests are skipped with the reason printed
export RECURSOR_TEST_POSTGRES_URL ?= postgresql+psycopg://recursor@127.0.0.1:55432/recursor

# Modules are compiled to bytecode when first imported, and kept: the installs leave that to
# the imports (scripts/install.sh), and a process that recompiled torch's and the project's
# modules at every start would spend seconds doing it
unexport PYTHONDONTWRITEBYTECODE

COEVOLVE_DIR ?= campaigns/coevolve-$(shell date +%Y%m%d-%H%M%S)

RECURSIVE_DIR ?= campaigns/recursive-$(shell date +%Y%m%d-%H%M%S)

.PHONY: demo demo-coevolve demo-recursive test lint typecheck unit system-deps browser-deps container-engine postgres sandbox-image vllm-env clean

demo: $(STAMP) system-deps
	$(VENV)/bin/recursor run --dir $(DEMO_DIR)

# co-evolution of a tiny policy LM and its harness (worlds task; about 15 minutes on 2 idle CPUs)
demo-coevolve: $(STAMP) system-deps
	$(VENV)/bin/recursor run examples/campaigns/coevolve.yaml --dir $(COEVOLVE_DIR)

# the cfr campaign with a proposer model trained on its own archive as it grows (CPU)
demo-recursive: $(STAMP) system-deps
	$(VENV)/bin/recursor run examples/campaigns/learned-proposer.yaml --dir $(RECURSIVE_DIR)

# the type-check runs beside the tests' set-up and the tests (about a minute of one core the
# first time on a machine; its cache in ~/.cache/recursor/mypy makes later checkouts' seconds)
test: $(STAMP) system-deps lint
	@$(MAKE) --no-print-directory -j2 typecheck unit

# the suite on TEST_WORKERS pytest-xdist workers; tests that share a host-wide resource (the
# container engine, a Ray cluster, the browser) keep to one worker each (tests/conftest.py).
# One OpenMP/BLAS thread per process: the workers already keep every core busy, and threads
# of several trainings spinning on two cores slowed the suite (a task's own plan, e.g.
# worlds' evaluations, still sets its own)
TEST_WORKERS ?= 3
unit: $(STAMP) system-deps browser-deps postgres sandbox-image vllm-env
	OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 $(PY) -m pytest -q --durations=25 -n $(TEST_WORKERS)

lint: $(STAMP)
	$(VENV)/bin/ruff check .

# every package, through a symlink tree laid out as the installed package (see the script)
typecheck: $(STAMP)
	$(PY) scripts/typecheck.py

system-deps:
	@scripts/system-deps.sh

# Debian's chromium, driven by the UI's browser tests (tests/ui) through Playwright
browser-deps:
	@scripts/browser-deps.sh

# podman serving the Docker Engine API (installed and started when DOCKER_HOST is ours)
container-engine:
	@scripts/container-engine.sh

# PostgreSQL for the archive and checkpointer tests: Debian's server, a private cluster on
# 127.0.0.1:55432 (installed, initialized and started when the URL above is ours)
postgres:
	@scripts/postgres.sh >/dev/null

# vLLM in its own virtualenv (its pins differ from training's); about 3.5 GB, built once and
# cached in ~/.cache/recursor/vllm-env
vllm-env:
	@PYTHON=$(PYTHON) scripts/vllm-env.sh >/dev/null

# the docker sandbox's base image (debootstrap, about 90 s the first time; cached by hash)
sandbox-image: $(STAMP) container-engine
	$(VENV)/bin/recursor sandbox build-image

$(STAMP): pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	scripts/install.sh $(PY) dev,train,ray
	# DeepSpeed builds from source against the installed torch; on a CPU-only torch with its
	# shared-memory op compiled in; the wheel is cached per machine (see the script)
	scripts/deepspeed-install.sh $(PY)
	@touch $(STAMP)

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
