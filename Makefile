# dbperf: `make demo` runs the main job on the embedded default (SQLite); `make test` runs every test.
# Both go through `make setup`, which is idempotent.

PYTHON ?= python3
VENV := .venv
DRIVER := driver/target/release/dbperf-driver

.PHONY: setup system-packages venv driver demo test lint clean

setup: system-packages venv driver

system-packages:
	@./scripts/install-system-packages.sh

venv: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install -q -e '.[dev]'
	@touch $@

driver:
	cd driver && cargo build --release --quiet

demo: setup
	$(VENV)/bin/dbperf run examples/demo.toml

test: setup
	cd driver && cargo test --release --quiet
	$(VENV)/bin/pytest -q

lint: setup
	$(VENV)/bin/ruff check dbperf tests benchmarks
	cd driver && cargo clippy --release --quiet -- -D warnings

clean:
	rm -rf $(VENV) driver/target
