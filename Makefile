# Everything runs from a local virtualenv in .venv; `make demo` and `make test` create it when missing.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: venv demo test bench protos clean

$(STAMP): setup.cfg pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

venv: $(STAMP)

demo: $(STAMP)
	$(BIN)/python -m jobs.stream_demo

test: $(STAMP)
	$(BIN)/python -m pytest -q

bench: $(STAMP)
	$(BIN)/python bench/throughput.py

protos: $(STAMP)
	PATH=$(BIN):$$PATH scripts/gen_protos.sh

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache
