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

# The Python package (python/, `make python`, `make python-test`): a virtualenv in the clone
# (${NDD_VENV:-.venv}) with maturin and pytest. `python3 -m venv` needs ensurepip, which Debian
# ships apart (python3.X-venv). NDD_SKIP_PYTHON=1 skips all of it.
cd "$(dirname "$0")/.."
PYTHON="${NDD_PYTHON:-python3}"
VENV="${NDD_VENV:-.venv}"
python_wanted() { [ "${NDD_SKIP_PYTHON:-0}" = 0 ]; }
venv_ready() { [ -x "$VENV/bin/python" ] && "$VENV/bin/python" -m pip --version >/dev/null 2>&1; }

missing=()
have_libclang || missing+=(libclang-dev)
if python_wanted; then
  command -v "$PYTHON" >/dev/null || { echo "setup: $PYTHON not found: install Python >= 3.10 (or set NDD_SKIP_PYTHON=1)" >&2; exit 1; }
  "$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 10))' || {
    echo "setup: $PYTHON is $("$PYTHON" -V 2>&1); the Python package needs >= 3.10 (set NDD_PYTHON, or NDD_SKIP_PYTHON=1)" >&2; exit 1; }
  # venv creates a working environment only with ensurepip (Debian: python3.X-venv).
  if ! venv_ready && ! "$PYTHON" -c 'import venv, ensurepip' >/dev/null 2>&1; then
    pyver=$("$PYTHON" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
    missing+=("python$pyver-venv")
  fi
fi
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

if python_wanted; then
  if ! venv_ready; then
    "$PYTHON" -c 'import venv, ensurepip' >/dev/null 2>&1 || {
      echo "setup: $PYTHON has no ensurepip (python3-venv) even after installing it; is it Debian's python3?" >&2; exit 1; }
    echo "setup: creating the Python virtualenv $VENV" >&2
    rm -rf "$VENV"
    "$PYTHON" -m venv "$VENV"
  fi
  # The exact versions the build and the tests need, checked in the venv itself.
  if ! "$VENV/bin/python" - <<'PY' >/dev/null 2>&1
import sys
from importlib.metadata import version
def v(name):
    return tuple(int(x) for x in version(name).split(".")[:2] if x.isdigit())
ok = (1, 5) <= v("maturin") < (2, 0) and v("pytest") >= (7, 0)
sys.exit(0 if ok else 1)
PY
  then
    echo "setup: installing maturin>=1.5,<2 and pytest>=7 into $VENV (pip)" >&2
    "$VENV/bin/python" -m pip install -q --disable-pip-version-check "maturin>=1.5,<2" "pytest>=7"
  fi
  # Optional: pyarrow lets the tests cover Pairs.to_arrow() (skipped without it).
  if ! "$VENV/bin/python" -c 'import pyarrow' >/dev/null 2>&1; then
    echo "setup: installing pyarrow into $VENV (pip; optional)" >&2
    "$VENV/bin/python" -m pip install -q --disable-pip-version-check pyarrow ||
      echo "setup: warning: pyarrow did not install; the to_arrow test will be skipped" >&2
  fi
fi

# Spark (ndd_index.spark): Java 17 and pyspark in the venv; NDD_SKIP_SPARK=1 skips it.
. tools/setup_spark.sh   # (the cwd is the clone: see the cd above)
