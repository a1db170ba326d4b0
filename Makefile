# dralloc — developer entry points. `make test` builds its own environment.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: install test lint bench run clean conformance

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[test]'
	touch $(STAMP)

install: $(STAMP)

test: $(STAMP)
	$(BIN)/pytest -q $(PYTEST_ARGS)

lint: $(STAMP)
	$(BIN)/ruff check operator tests bench
	$(BIN)/mypy

bench: $(STAMP)
	$(BIN)/python bench/allocation.py
	$(BIN)/python bench/simulate.py
	$(BIN)/python bench/cel.py
	$(BIN)/python bench/placement.py
	$(BIN)/python bench/sandbox.py

# Chaos (tests/chaos): two `dralloc run` processes under random API faults, kill -9 and
# rolling handovers for CHAOS_SECONDS at fault level CHAOS_P, then the audit; plus one
# kill -9 with the default 15/10/2 s Lease timing. CHAOS_SEED=N replays a run's choices.
.PHONY: chaos
CHAOS_SECONDS ?= 300
CHAOS_P ?= 0.1
chaos: $(STAMP)
	DRALLOC_CHAOS_SECONDS=$(CHAOS_SECONDS) DRALLOC_CHAOS_P=$(CHAOS_P) DRALLOC_CHAOS_SEED=$(CHAOS_SEED) \
		$(BIN)/pytest -q -s tests/chaos -k "long or default_timing" $(PYTEST_ARGS)

# The demo: sandbox cluster + operator + examples/demo, then where every pod went.
# `make run ARGS=--once` exits after the table (0: every demo pod placed, 1: not).
run: $(STAMP)
	$(BIN)/dralloc demo $(ARGS)

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
