# One entry point for a fresh machine. `make demo`: set up and tour the sample store (samples/demo.sh).
# `make test`: set up and run the tests. Both create .venv with everything mqtool needs (Python >= 3.11).
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
SAMPLE := samples/store-a

.PHONY: setup kernels demo test lint man architecture clean oracle-build oracle-build-49 oracle-fixtures oracle-check oracle-timer-replay oracle-bench oracle-batchcq oracle-dledger-fixtures

$(BIN)/mqtool: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test,spark]'
	touch $(BIN)/mqtool

setup: $(BIN)/mqtool

# The columnar kernels compiled ahead of time in place (pip install builds them too; formats/columnar/aot.py):
# after editing a kernel, until this runs, the kernels compile on first use (numba's JIT) instead.
kernels: setup
	$(BIN)/python -m formats.columnar.aot

demo: setup
	samples/demo.sh $(BIN)/mqtool $(SAMPLE) build/demo

lint: setup
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

test: setup lint
	$(BIN)/python -m pytest -q -n 2

man: setup
	$(BIN)/python -m mqtool.cli.manual.manpages man

# the import graph at the top of docs/ARCHITECTURE.md (tests/test_docs.py fails when it drifts)
architecture: setup
	$(BIN)/python docs/import_graph.py

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .ruff_cache formats/columnar/_aot_kernels*

# The oracle (tests/oracle/README.md): RocketMQ 5.3.3's own store code, compiled from source outside the
# repository (~/.cache/mqtool-oracle). CI never runs these; it runs on the fixtures they wrote.
ORACLE_SEED ?= 20261124

oracle-build: setup
	tests/oracle/build.sh

# The same harness on RocketMQ 4.9.8 (load and recover; tests/oracle/harness49): judges 4.9 stores.
oracle-build-49: setup
	RMQ_TAG=rocketmq-all-4.9.8 tests/oracle/build.sh

oracle-fixtures: oracle-build
	rm -rf build/oracle/store-timer5 && mkdir -p build/oracle
	tests/oracle/run.sh timer-store build/oracle/store-timer5 $(ORACLE_SEED)
	find tests/data/store-timer5 -mindepth 1 ! -name README.md -delete 2>/dev/null || true
	mkdir -p tests/data/store-timer5 && cp -r build/oracle/store-timer5/. tests/data/store-timer5/
	rm -rf build/oracle/store-timer-states
	tests/oracle/run.sh timer-states build/oracle/store-timer-states 20261126
	find tests/data/store-timer-states -mindepth 1 ! -name README.md -delete 2>/dev/null || true
	mkdir -p tests/data/store-timer-states && cp -r build/oracle/store-timer-states/. tests/data/store-timer-states/
	rm -rf build/oracle/store-timer-crash
	tests/oracle/run.sh timer-crash build/oracle/store-timer-crash 20261126 || true  # it halts on purpose
	tests/oracle/run.sh timer-crash-expect build/oracle/store-timer-crash
	find tests/data/store-timer-crash -mindepth 1 ! -name README.md -delete 2>/dev/null || true
	mkdir -p tests/data/store-timer-crash && cp -r build/oracle/store-timer-crash/. tests/data/store-timer-crash/
	tests/oracle/run.sh pop-bodies 20261126 200 > tests/data/pop-bodies.json
	rm -rf build/oracle/store-pop
	tests/oracle/run.sh pop-store build/oracle/store-pop 20261126
	find tests/data/store-pop -mindepth 1 ! -name README.md -delete 2>/dev/null || true
	mkdir -p tests/data/store-pop && cp -r build/oracle/store-pop/. tests/data/store-pop/
	rm -rf build/oracle/store-batchcq
	tests/oracle/run.sh batchcq-store build/oracle/store-batchcq 20261126
	find tests/data/store-batchcq -mindepth 1 ! -name README.md -delete 2>/dev/null || true
	mkdir -p tests/data/store-batchcq && cp -r build/oracle/store-batchcq/. tests/data/store-batchcq/
	rm -rf build/oracle/store-rocksdb
	tests/oracle/run.sh rocksdb-store build/oracle/store-rocksdb 20261126
	find tests/data/store-rocksdb -mindepth 1 ! -name README.md -delete 2>/dev/null || true
	mkdir -p tests/data/store-rocksdb && cp -r build/oracle/store-rocksdb/. tests/data/store-rocksdb/
	rm -rf build/oracle/store-rocksdb-v2
	tests/oracle/run.sh rocksdb-v2-store build/oracle/store-rocksdb-v2 20261126
	find tests/data/store-rocksdb-v2 -mindepth 1 ! -name README.md -delete 2>/dev/null || true
	mkdir -p tests/data/store-rocksdb-v2 && cp -r build/oracle/store-rocksdb-v2/. tests/data/store-rocksdb-v2/
	rm -rf build/oracle/store-lmq
	tests/oracle/run.sh lmq-store build/oracle/store-lmq 20261126
	find tests/data/store-lmq -mindepth 1 ! -name README.md -delete 2>/dev/null || true
	mkdir -p tests/data/store-lmq && cp -r build/oracle/store-lmq/. tests/data/store-lmq/
	rm -rf build/oracle/store-compaction
	tests/oracle/run.sh compaction-store build/oracle/store-compaction 20261127
	find tests/data/store-compaction -mindepth 1 ! -name README.md -delete 2>/dev/null || true
	mkdir -p tests/data/store-compaction && cp -r build/oracle/store-compaction/. tests/data/store-compaction/
	rm -rf build/oracle/store-tiered
	tests/oracle/run.sh tiered-store build/oracle/store-tiered 20261128
	find tests/data/store-tiered -mindepth 1 ! -name README.md -delete 2>/dev/null || true
	mkdir -p tests/data/store-tiered && cp -r build/oracle/store-tiered/. tests/data/store-tiered/
	rm -rf build/oracle/subscriptions && cp -r tests/data/store-a build/oracle/subscriptions
	tests/oracle/run.sh subscriptions build/oracle/subscriptions > tests/data/subscriptions/expect.json
	cp build/oracle/subscriptions/config/subscriptionGroup.json build/oracle/subscriptions/config/subscriptionGroup.json.bak \
	   build/oracle/subscriptions/config/consumerFilter.json tests/data/subscriptions/config/
	tests/oracle/run.sh trace-bodies 20261127 150 > tests/data/trace-bodies-5.3.3.json
	[ ! -f "$${MQTOOL_ORACLE_CACHE:-$$HOME/.cache/mqtool-oracle}/build/4.9.8/classpath" ] || \
		ORACLE_VERSION=4.9.8 tests/oracle/run.sh trace-bodies 20261127 150 > tests/data/trace-bodies-4.9.8.json
	rm -rf build/oracle/store-trace-a build/oracle/store-trace-b
	tests/oracle/run.sh trace-store build/oracle/store-trace-a build/oracle/store-trace-b 20261127
	for s in store-trace-a store-trace-b; do \
		find tests/data/$$s -mindepth 1 ! -name README.md -delete 2>/dev/null || true; \
		mkdir -p tests/data/$$s && cp -r build/oracle/$$s/. tests/data/$$s/; done
	rm -rf build/oracle/store-dlq
	tests/oracle/run.sh dlq-store build/oracle/store-dlq 20261127
	find tests/data/store-dlq -mindepth 1 ! -name README.md -delete 2>/dev/null || true
	mkdir -p tests/data/store-dlq && cp -r build/oracle/store-dlq/. tests/data/store-dlq/

# The DLedger fixtures (tests/oracle/DLEDGER.md): store-dledger, -mixed, -multipath, -crash (5.3.3) and
# store-dledger-49 (4.9.8), each packed as tests/data/<name>/store.tar.gz with expect.json and write.json.
oracle-dledger-fixtures: oracle-build oracle-build-49
	PYTHON=$(BIN)/python tests/oracle/dledger_fixtures.sh

oracle-check: oracle-build oracle-build-49
	$(BIN)/python tests/oracle/check.py

# Only the timer replay's judge (also the last part of oracle-check): delay replay --timer against a broker run.
oracle-timer-replay: oracle-build
	$(BIN)/python tests/oracle/timer_replay_check.py

# Only the BatchCQ rebuild's judge: rebuilt batchconsumequeue/ loaded and read by the real 5.3.3 broker.
oracle-batchcq: oracle-build
	$(BIN)/python tests/oracle/batchcq_check.py

oracle-bench: oracle-build
	$(BIN)/python bench/bench_oracle.py
