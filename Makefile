# dbperf: `make demo` runs the main job on the embedded default (SQLite); `make test` runs every test.
# Both go through `make setup`, which is idempotent.

PYTHON ?= python3
VENV := .venv
DRIVER := driver/target/release/dbperf-driver

.PHONY: setup system-packages venv driver demo test test-fast lint clean

setup: system-packages venv driver

system-packages:
	@./scripts/install-system-packages.sh

venv: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	SETUPTOOLS_RUST_CARGO_PROFILE=release $(VENV)/bin/pip install -q -e '.[dev]'
	@touch $@

driver:
	cd driver && cargo build --release --quiet

demo: setup
	$(VENV)/bin/dbperf run examples/demo.toml

test: setup
	cd driver && cargo test --release --quiet
	$(VENV)/bin/pytest -q

# The unit tier only (no engine is run): under a minute.
test-fast: setup
	$(VENV)/bin/pytest -q -m unit

lint: setup
	$(VENV)/bin/ruff check dbperf tests benchmarks
	$(VENV)/bin/mypy
	cd driver && cargo clippy --release --quiet -- -D warnings && cargo fmt --check

clean:
	rm -rf $(VENV) driver/target
