# Everything runs from a local virtualenv in .venv; `make demo` and `make test` create it when missing.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: venv demo test bench protos clean

# editable_mode=compat puts the project folder itself on sys.path (a .pth line) rather than an import hook,
# so Spark's scan of top-level `pyspark_*` modules (pkgutil.iter_modules) finds pyspark_pulsarlike from any
# working folder, as it does for a regular install.
$(STAMP): setup.cfg pyproject.toml Makefile
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]' --config-settings editable_mode=compat
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
