# One entry point for a fresh machine. `make demo`: set up and tour the sample store (samples/demo.sh).
# `make test`: set up and run the tests. Both create .venv with everything mqtool needs (Python >= 3.11).
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
SAMPLE := samples/store-a

.PHONY: setup demo test lint man clean

$(BIN)/mqtool: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $(BIN)/mqtool

setup: $(BIN)/mqtool

demo: setup
	samples/demo.sh $(BIN)/mqtool $(SAMPLE) build/demo

lint: setup
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

test: setup lint
	$(BIN)/python -m pytest -q -n 2

man: setup
	$(BIN)/python -m mqtool.cli.manpages man

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .ruff_cache
