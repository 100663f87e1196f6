# Everything runs from a local virtualenv in .venv; `make demo` and `make test` create it when missing.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

# The oldest pyspark the Spark connector supports (setup.cfg's pyspark>=, connector.spark.spark_versions.SPARK_FLOOR):
# `make test` also runs the connector's core tests (marker spark_core: source, sink, restarts) on it, in a venv of
# its own with only the spark and test extras.
SPARK_FLOOR := $(shell sed -n 's/^ *pyspark>=\([0-9.]*\),.*/\1/p' setup.cfg)
FLOOR_VENV := .venv-spark-floor
FLOOR_BIN := $(FLOOR_VENV)/bin
FLOOR_STAMP := $(FLOOR_VENV)/.installed

.PHONY: venv demo test test-spark-floor spark-floor bench protos clean

# editable_mode=compat puts the project folder itself on sys.path (a .pth line) rather than an import hook,
# so Spark's scan of top-level `pyspark_*` modules (pkgutil.iter_modules) finds pyspark_pulsarlike from any
# working folder, as it does for a regular install.
$(STAMP): setup.cfg pyproject.toml Makefile
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]' --config-settings editable_mode=compat
	touch $(STAMP)

$(FLOOR_STAMP): setup.cfg pyproject.toml Makefile
	test -x $(FLOOR_BIN)/python || $(PYTHON) -m venv $(FLOOR_VENV)
	$(FLOOR_BIN)/python -m pip install --quiet --upgrade pip
	$(FLOOR_BIN)/python -m pip install --quiet -e '.[spark,test]' 'pyspark==$(SPARK_FLOOR)' \
		--config-settings editable_mode=compat
	touch $(FLOOR_STAMP)

venv: $(STAMP)

demo: $(STAMP)
	$(BIN)/python -m jobs.stream_demo

test: $(STAMP) $(FLOOR_STAMP)
	$(BIN)/python -m pytest -q
	$(MAKE) --no-print-directory test-spark-floor

# the Spark connector's core tests on the oldest supported pyspark (about 2 minutes on 2 cores)
test-spark-floor: $(FLOOR_STAMP)
	$(FLOOR_BIN)/python -m pytest -q -m spark_core tests/spark

spark-floor:
	@echo $(SPARK_FLOOR)

bench: $(STAMP)
	$(BIN)/python bench/throughput.py

protos: $(STAMP)
	PATH=$(BIN):$$PATH scripts/gen_protos.sh

clean:
	rm -rf $(VENV) $(FLOOR_VENV) build *.egg-info .pytest_cache
