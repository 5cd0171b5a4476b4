# Every target sets itself up: the venv is (re)built when missing or when
# pyproject.toml changed, so `make demo` / `make test` work on a fresh machine.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo serve test test-fast bench bench-all compiled lint fmt setup system-deps clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[dev]'
	# The chat-UI extras (the examples' browser tests), in steps of their own: one
	# resolve of all three can take minutes.
	$(BIN)/python -m pip install -q -e '.[gradio,streamlit]'
	$(BIN)/python -m pip install -q -e '.[chainlit]'
	touch $(STAMP)

setup: $(STAMP)

# The demo needs only the package itself (no dev extra: playwright, matplotlib, mypy…);
# a venv that `make setup`/`make test` already built is used as it is.
DEMO_STAMP := $(VENV)/.installed-demo

$(DEMO_STAMP): pyproject.toml
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	test $(STAMP) -nt pyproject.toml || $(BIN)/python -m pip install -q -e .
	touch $(DEMO_STAMP)

demo: $(DEMO_STAMP)
	$(BIN)/streamcite ask --demo

# The quick start's backend, in the foreground until Ctrl-C (ARGS: more options).
serve: $(DEMO_STAMP)
	$(BIN)/streamcite serve-local $(ARGS)

# System packages the tests use (Chromium for the browser tests, redis-server for
# the scale-out tests) are installed by the project's scripts when missing and
# when we may (root or sudo); otherwise those tests skip with a reason (not on CI).
system-deps:
	@if [ -x scripts/install-chromium.sh ]; then scripts/install-chromium.sh || echo "chromium not installed: browser tests will skip"; fi
	@if [ -x scripts/redis-server.sh ]; then scripts/redis-server.sh install || echo "redis-server not installed: Redis tests will skip"; fi
	scripts/node-deps.sh

test: $(STAMP) system-deps
	$(BIN)/python -m pytest -q

# No browser, no Redis: the inner loop while editing.
test-fast: $(STAMP)
	$(BIN)/python -m pytest -q -m 'not browser and not redis'

# The hot core compiled by mypyc, into build/compiled (run with PYTHONPATH=build/compiled);
# rebuilt only when a source changed. `STREAMCITE_COMPILE=1 pip install .` makes a compiled wheel.
compiled: $(STAMP)
	$(BIN)/python scripts/build_compiled.py

# The quick ones (a few minutes). bench-all adds the long-running ones.
bench: $(STAMP)
	$(BIN)/python benchmarks/bench_parse.py
	$(BIN)/python benchmarks/bench_ttft.py
	$(BIN)/python benchmarks/bench_enrich.py

bench-all: bench system-deps
	$(BIN)/python benchmarks/grounding_quality.py
	$(BIN)/python benchmarks/bench_relay.py
	$(BIN)/python benchmarks/bench_redislog.py
	$(BIN)/python examples/bench_local.py --out bench-out

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

fmt: $(STAMP)
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache build
