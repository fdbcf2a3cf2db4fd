# The two entry points of README.md: `make demo` and `make test`. Both set up a fresh machine
# first (tools/setup.sh). Everything builds in one profile (release), tests included, so
# RocksDB is compiled once. CARGO_TARGET_DIR may point outside the clone (CI keeps a cache).
CARGO ?= cargo
export CARGO_TARGET_DIR ?= $(CURDIR)/target
BIN := $(CARGO_TARGET_DIR)/release/ndd-index
GEN := $(CARGO_TARGET_DIR)/release/ndd-gen
# The Python package (python/): built by maturin into this virtualenv (tools/setup.sh makes
# it), with the same CARGO_TARGET_DIR and profile, so RocksDB is not compiled again.
export NDD_VENV ?= $(CURDIR)/.venv
VENV_BIN := $(NDD_VENV)/bin

.PHONY: setup build demo test bench peer-bench fmt python python-test

setup:
	@bash tools/setup.sh

build: setup
	$(CARGO) build --release --workspace

demo: build
	@bash tools/demo.sh "$(BIN)" "$(GEN)"

test: setup
	$(CARGO) test --release --workspace
	$(MAKE) --no-print-directory python-test

# `maturin develop` installs the extension and python/ndd_index into the venv (editable).
python: setup
ifeq ($(NDD_SKIP_PYTHON),1)
	@echo "python: skipped (NDD_SKIP_PYTHON=1)"
else
	VIRTUAL_ENV=$(NDD_VENV) PATH="$(VENV_BIN):$$PATH" $(VENV_BIN)/maturin develop --release --quiet -m python/Cargo.toml
endif

# The pytest suite of the Python package (it uses the CLI and ndd-gen of the same build).
python-test: python
ifeq ($(NDD_SKIP_PYTHON),1)
	@echo "python-test: skipped (NDD_SKIP_PYTHON=1)"
else
	$(CARGO) build --release --workspace --bins
	NDD_INDEX_BIN=$(BIN) NDD_GEN_BIN=$(GEN) $(VENV_BIN)/python -m pytest -q python/tests
endif

bench: setup
	$(CARGO) bench --bench canonicalize --bench shingle --bench query

peer-bench: build
	NDD_INDEX=$(BIN) bash ../shared/peer-bench/run_all.sh

fmt:
	$(CARGO) fmt --all
