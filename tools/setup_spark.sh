# Sourced by tools/setup.sh: what `ndd_index.spark` (issue 12, python/tests/test_spark.py)
# needs on top of the Python package: Java 17 or newer (Spark's JVM) and, in the venv,
# pyspark 4 with the Arrow path of mapInArrow (pyarrow, numpy, pandas < 3, which pyspark 4
# supports). Idempotent and silent when all is there. NDD_SKIP_SPARK=1 (or
# NDD_SKIP_PYTHON=1) skips it; the Spark tests are then skipped too.
spark_wanted() { python_wanted && [ "${NDD_SKIP_SPARK:-0}" = 0 ]; }
java_major() { java -version 2>&1 | sed -n 's/.* version "\([0-9]*\).*/\1/p' | head -1; }
if spark_wanted; then
  if ! command -v java >/dev/null || [ "$(java_major)" -lt 17 ] 2>/dev/null; then
    if [ "$(id -u)" = 0 ] || command -v sudo >/dev/null; then
      s=""; [ "$(id -u)" = 0 ] || s=sudo
      echo "setup: installing openjdk-17-jre-headless (Java 17 for Spark)" >&2
      $s apt-get update -q >/dev/null
      DEBIAN_FRONTEND=noninteractive $s apt-get install -y -q --no-install-recommends openjdk-17-jre-headless >/dev/null
    fi
    if ! command -v java >/dev/null || [ "$(java_major)" -lt 17 ] 2>/dev/null; then
      echo "setup: Spark needs Java 17 or newer (java -version: $(java_major 2>/dev/null || echo none)); install openjdk-17-jre-headless or set NDD_SKIP_SPARK=1" >&2
      exit 1
    fi
  fi
  if ! "$VENV/bin/python" - <<'PY' >/dev/null 2>&1
import sys
from importlib.metadata import version
def v(name):
    return tuple(int(x) for x in version(name).split(".")[:2] if x.isdigit())
ok = (4, 0) <= v("pyspark") < (5, 0) and (2, 2) <= v("pandas") < (3, 0) and v("pyarrow") >= (11, 0)
import numpy  # noqa: F401
sys.exit(0 if ok else 1)
PY
  then
    echo "setup: installing pyspark>=4,<5, pyarrow, numpy, pandas>=2.2,<3 into $VENV (pip)" >&2
    "$VENV/bin/python" -m pip install -q --disable-pip-version-check \
      "pyspark>=4,<5" "pyarrow>=11" numpy "pandas>=2.2,<3"
  fi
fi
