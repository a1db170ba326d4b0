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

# Until the operator demo lands: the offline allocator on the example cluster.
run: $(STAMP)
	@echo "dralloc allocate -f examples/snapshot.yaml --explain  (the operator demo replaces this in a later issue)"
	@$(BIN)/dralloc allocate -f examples/snapshot.yaml --explain $(ARGS) || test $$? -eq 1

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
