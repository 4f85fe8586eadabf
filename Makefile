# dbperf: `make demo` runs the main job on the embedded default (SQLite); `make test` runs every test.
# `make demo` sets up only what the demo needs (demo-setup); `make test`, `make lint` and CI set up everything
# (setup). Both are idempotent: they install only what is missing.

PYTHON ?= python3
VENV := .venv
DRIVER := driver/target/release/dbperf-driver
SITE := build/site

.PHONY: setup setup-builds demo-setup system-packages demo-packages venv venv-dev driver demo test test-fast lint docs clean

# The driver (cargo) and the package (pip) are set up at once, after the system packages: pip creates the venv,
# resolves and downloads while cargo compiles (its last crate, codegen-units=1 and LTO, keeps one core). cargo
# shows its progress here; the package's own build of the driver (setuptools-rust, under a quiet pip) waits on
# cargo's lock of driver/target, then finds it up to date.
setup: system-packages
	@$(MAKE) --no-print-directory -j2 driver venv-dev

demo-setup: demo-packages
	@$(MAKE) --no-print-directory -j2 driver venv

# Everything setup installs, plus what servers built from source need (MariaDB's cmake build, BOLT, clang-16): the
# studies that build servers (pgo-server, tuning-ladder, read-mostly-globals) refuse to start without them.
setup-builds: setup
	@./scripts/install-system-packages.sh build

system-packages:
	@./scripts/install-system-packages.sh all

# Says in one line that the server packages and chromium are left for `make test`.
demo-packages:
	@./scripts/install-system-packages.sh demo

driver:
	@echo "building dbperf-driver (cargo, release profile: a few minutes the first time)"
	cd driver && cargo build --release

venv: $(VENV)/.installed

venv-dev: $(VENV)/.installed-dev

# The libraries first (pyproject's dependencies, scripts/project_requirements.py): downloaded, unpacked and compiled
# while cargo builds the driver; then the package, whose own cargo call waits for cargo's lock.
$(VENV)/.installed: pyproject.toml
	@echo "installing the dbperf package and its libraries into $(VENV) (pip, quiet: a minute or two the first time)"
	$(PYTHON) -m venv $(VENV)
	$(PYTHON) scripts/project_requirements.py > $(VENV)/requirements.txt
	$(VENV)/bin/pip install -q --disable-pip-version-check -r $(VENV)/requirements.txt
	SETUPTOOLS_RUST_CARGO_PROFILE=release $(VENV)/bin/pip install -q --disable-pip-version-check -e .
	-$(VENV)/bin/python -m dbperf.report.plotly_bundle
	@touch $@

# The package with the dev extras in one pip call (CI's path), which also stands for the plain install. Both fetch
# the HTML report's plotly.js bundle (npm's cartesian one, said before it downloads; without it, or offline, the
# report embeds the plotly package's full bundle and says so).
$(VENV)/.installed-dev: pyproject.toml
	@echo "installing the dbperf package and the development tools into $(VENV) (pip, quiet: a few minutes the first time)"
	$(PYTHON) -m venv $(VENV)
	SETUPTOOLS_RUST_CARGO_PROFILE=release $(VENV)/bin/pip install -q -e '.[dev]'
	-$(VENV)/bin/python -m dbperf.report.plotly_bundle
	@touch $(VENV)/.installed $@

demo: demo-setup
	$(VENV)/bin/dbperf run examples/demo.toml

# The suite in two processes (pytest-xdist, a test file per worker): most tests wait on a server, a compiler or
# valgrind on one core, so two workers take about half the time on a 2-core machine. TEST_WORKERS=0: one process.
TEST_WORKERS ?= 2

test: setup
	cd driver && cargo test --release --quiet
	$(VENV)/bin/pytest -q -n $(TEST_WORKERS) --dist loadfile

# The unit tier only (no engine is run): under a minute.
test-fast: setup
	$(VENV)/bin/pytest -q -m unit

lint: setup
	$(VENV)/bin/ruff check dbperf tests benchmarks scripts
	$(VENV)/bin/mypy
	$(VENV)/bin/lint-imports
	cd driver && cargo clippy --release --quiet -- -D warnings && cargo fmt --check
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict --site-dir $(SITE)
	$(VENV)/bin/dbperf study check

# The documentation site (docs/, mkdocs.yml), built as `make lint` checks it.
docs: driver venv-dev
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict --site-dir $(SITE)

clean:
	rm -rf $(VENV) driver/target $(SITE)
