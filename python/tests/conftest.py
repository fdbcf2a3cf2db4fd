"""Shared fixtures: the CLI and ndd-gen binaries of the same build, a generated corpus, a slice
of the shared llvm-docs corpus, and helpers to run the CLI."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def _binary(env: str, name: str) -> Path | None:
    cands = []
    if os.environ.get(env):
        cands.append(Path(os.environ[env]))
    target = os.environ.get("CARGO_TARGET_DIR")
    if target:
        cands.append(Path(target) / "release" / name)
    cands.append(REPO / "target" / "release" / name)
    for c in cands:
        if c.is_file() and os.access(c, os.X_OK):
            return c
    return None


@pytest.fixture(scope="session")
def cli() -> Path:
    b = _binary("NDD_INDEX_BIN", "ndd-index")
    if b is None:
        pytest.skip("ndd-index CLI not built (make python-test builds it; or set NDD_INDEX_BIN)")
    return b


@pytest.fixture(scope="session")
def gen() -> Path:
    b = _binary("NDD_GEN_BIN", "ndd-gen")
    if b is None:
        pytest.skip("ndd-gen not built (make python-test builds it; or set NDD_GEN_BIN)")
    return b


def run_cli(cli: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    p = subprocess.run([str(cli), *map(str, args)], capture_output=True, text=True)
    if check and p.returncode != 0:
        raise AssertionError(f"ndd-index {' '.join(map(str, args))} exited {p.returncode}: {p.stderr}")
    return p


def cli_pairs(cli: Path, index: Path, threshold: str = "0.8") -> list[str]:
    out = run_cli(cli, "pairs", "--index", index, "--threshold", threshold).stdout
    return out.splitlines()


def cli_clusters(cli: Path, index: Path) -> dict[int, list[str]]:
    out = run_cli(cli, "clusters", "--index", index).stdout
    d: dict[int, list[str]] = {}
    for line in out.splitlines():
        cid, key = line.split("\t", 1)
        d.setdefault(int(cid), []).append(key)
    return d


def py_pairs_lines(pairs) -> list[str]:
    return [f"{a}\t{b}\t{r:.6f}" for a, b, r in pairs]


def load_docs(root: Path) -> list[tuple[str, str]]:
    """(key, html) of every file under root, keys as the CLI makes them (relative, with /),
    in the CLI's order (bytewise by key)."""
    docs = []
    for p in root.rglob("*"):
        if p.is_file():
            docs.append((p.relative_to(root).as_posix(), p.read_text(encoding="utf-8")))
    docs.sort(key=lambda d: d[0].encode())
    return docs


@pytest.fixture(scope="session")
def corpus(gen: Path, tmp_path_factory) -> Path:
    """600 generated pages with planted near-duplicates, in two nightly batches."""
    out = tmp_path_factory.mktemp("gen") / "corpus"
    subprocess.run(
        [str(gen), "--out", str(out), "--docs", "600", "--batches", "2", "--seed", "11",
         "--edit-rate", "0.03", "--words", "200", "--quiet"],
        check=True,
    )
    return out


def _shared_corpus() -> Path | None:
    for c in [REPO.parent / "shared" / "corpus" / "llvm-docs", Path("/work/shared/corpus/llvm-docs")]:
        if (c / "docs.tar.zst").is_file():
            return c
    return None


@pytest.fixture(scope="session")
def llvm_slice(tmp_path_factory) -> Path:
    """The CommandGuide pages of every package of the shared llvm-docs corpus (llvm 14, 15
    and 16 have many versions of the same page), extracted to a temp dir."""
    src = _shared_corpus()
    if src is None:
        if os.environ.get("CI"):
            pytest.fail("CI is set but the shared corpus (../shared/corpus/llvm-docs) is missing")
        pytest.skip("shared corpus not found (../shared/corpus/llvm-docs)")
    if shutil.which("zstd") is None:
        pytest.skip("zstd not installed (tools/setup.sh installs it)")
    out = tmp_path_factory.mktemp("llvm") / "docs"
    out.mkdir()
    z = subprocess.Popen(["zstd", "-dc", str(src / "docs.tar.zst")], stdout=subprocess.PIPE)
    n = 0
    with tarfile.open(fileobj=z.stdout, mode="r|") as tar:
        for m in tar:
            parts = m.name.split("/")
            if m.isfile() and len(parts) > 3 and parts[2] == "CommandGuide":
                data = tar.extractfile(m).read()
                dest = out / "/".join(parts[1:])
                dest.parent.mkdir(parents=True, exist_ok=True)
                dest.write_bytes(data)
                n += 1
    z.wait()
    assert n > 50, f"only {n} CommandGuide pages in the shared corpus"
    return out


def run_python(code: str, *args: str) -> subprocess.CompletedProcess:
    """Runs code in a fresh interpreter (another process), with the same ndd_index."""
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True)


def as_json(s: str):
    return json.loads(s)
