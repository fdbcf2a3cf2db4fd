#!/usr/bin/env bash
# Installs what a fresh Debian machine lacks to build and test ndd-index. Idempotent; quiet when
# everything is there already. Each check looks for the exact thing the build loads, not a
# look-alike:
#  - libclang: bindgen (RocksDB's bindings) dlopens the C library libclang.so / libclang-N.so.*
#    / libclang.so.N, never libclang-cpp.so.N (the C++ interface, which a fresh machine has from
#    the package libclang-cpp14 and which bindgen skips). Debian's libclang-dev brings the C
#    library and clang's builtin headers (stddef.h) that bindgen also needs.
#  - zstd: the tests unpack the shared corpus; cc/c++: RocksDB's C++.
set -euo pipefail

# The C libclang bindgen loads (clang-sys's search: llvm-config's libdir, /usr/lib/llvm-*/lib,
# the linker's directories), excluding libclang-cpp.
have_libclang() {
  local dirs=(/usr/lib/llvm-*/lib /usr/lib/x86_64-linux-gnu /usr/lib/aarch64-linux-gnu /usr/lib /usr/local/lib)
  [ -n "${LIBCLANG_PATH:-}" ] && dirs=("$LIBCLANG_PATH" "${dirs[@]}")
  local d f base
  for d in "${dirs[@]}"; do
    for f in "$d"/libclang.so "$d"/libclang-*.so "$d"/libclang.so.* "$d"/libclang-*.so.*; do
      [ -e "$f" ] || continue
      base=$(basename "$f")
      case "$base" in libclang-cpp*) continue ;; esac
      # clang's builtin headers must come with it (libclang-common-N-dev), or bindgen fails on
      # <stddef.h>.
      compgen -G "$(dirname "$f")/clang/*/include/stddef.h" >/dev/null && return 0
    done
  done
  return 1
}

missing=()
have_libclang || missing+=(libclang-dev)
command -v zstd >/dev/null || missing+=(zstd)
{ command -v cc >/dev/null && command -v c++ >/dev/null; } || missing+=(build-essential)
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" != 0 ] && ! command -v sudo >/dev/null; then
    echo "setup: please install: ${missing[*]} (needs root)" >&2
    exit 1
  fi
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO=sudo
  echo "setup: installing ${missing[*]} (Debian packages)" >&2
  $SUDO apt-get update -q >/dev/null
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null
  if printf '%s\n' "${missing[@]}" | grep -qx libclang-dev && ! have_libclang; then
    echo "setup: libclang-dev is installed but no libclang.so that bindgen loads was found" >&2
    exit 1
  fi
fi
command -v cargo >/dev/null || { echo "setup: cargo not found: install Rust (rustup)" >&2; exit 1; }
