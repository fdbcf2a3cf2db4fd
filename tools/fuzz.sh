#!/usr/bin/env bash
# Builds the cargo-fuzz targets of tools/fuzz and runs each for SECONDS (default 60), one at a
# time, printing libFuzzer's final line (executions, coverage) per target.
#
#   tools/fuzz.sh [SECONDS] [TARGET...]
#
# Needs `cargo install cargo-fuzz`. Only a stable toolchain is assumed: RUSTC_BOOTSTRAP=1 lets
# it accept cargo-fuzz's -Z flags. The fuzz crate builds ndd_index without RocksDB, so no C++
# is recompiled. Build output and corpora live under $FUZZ_DIR (default
# ${CARGO_TARGET_DIR:-target}/fuzz), never in the repository; the small committed seeds in
# tools/fuzz/seeds/TARGET are copied in first. SANITIZER=none (default address) skips ASan.
set -euo pipefail
secs=${1:-60}
shift || true
here=$(cd "$(dirname "$0")" && pwd)
fuzz_dir=${FUZZ_DIR:-${CARGO_TARGET_DIR:-$here/../target}/fuzz}
sanitizer=${SANITIZER:-address}
export RUSTC_BOOTSTRAP=1
export CARGO_TARGET_DIR=$fuzz_dir/target
cd "$here/.."
fd=(--fuzz-dir tools/fuzz)
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
    mapfile -t targets < <(cargo fuzz list "${fd[@]}")
fi
cargo fuzz build "${fd[@]}" -O -s "$sanitizer" >&2
for t in "${targets[@]}"; do
    corpus=$fuzz_dir/corpus/$t
    mkdir -p "$corpus" "$fuzz_dir/artifacts/$t"
    if [ -d "$here/fuzz/seeds/$t" ]; then cp -n "$here/fuzz/seeds/$t"/* "$corpus"/ 2>/dev/null || true; fi
    log=$fuzz_dir/$t.log
    status=ok
    cargo fuzz run "${fd[@]}" -O -s "$sanitizer" "$t" "$corpus" -- \
        -max_total_time="$secs" -rss_limit_mb=2048 -max_len=65536 \
        -artifact_prefix="$fuzz_dir/artifacts/$t/" >"$log" 2>&1 || status=FAILED
    last=$(grep -E '^#[0-9]+' "$log" | tail -1 || true)
    echo "$t: $status: $last (log $log)"
done
