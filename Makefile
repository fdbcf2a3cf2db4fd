# The two entry points of README.md: `make demo` and `make test`. Both set up a fresh machine
# first (tools/setup.sh). Everything builds in one profile (release), tests included, so
# RocksDB is compiled once. CARGO_TARGET_DIR may point outside the clone (CI keeps a cache).
CARGO ?= cargo
export CARGO_TARGET_DIR ?= $(CURDIR)/target
BIN := $(CARGO_TARGET_DIR)/release/ndd-index
GEN := $(CARGO_TARGET_DIR)/release/ndd-gen

.PHONY: setup build demo test bench peer-bench fmt

setup:
	@bash tools/setup.sh

build: setup
	$(CARGO) build --release --workspace

demo: build
	@bash tools/demo.sh "$(BIN)" "$(GEN)"

test: setup
	$(CARGO) test --release --workspace

bench: setup
	$(CARGO) bench --bench canonicalize --bench shingle --bench query

peer-bench: build
	NDD_INDEX=$(BIN) bash ../shared/peer-bench/run_all.sh

fmt:
	$(CARGO) fmt --all
