"""Compile the C client/server (``csrc/qdperf.c``) with the system C compiler, once per source version.

The binary is cached under ``_build/measure/`` in the repository (git-ignored, removed by ``make clean``)
as ``qdperf-<sha256 prefix of source and compiler>``, so editing the source or changing the compiler
rebuilds it and concurrent callers never see a half-written file (compile to a temporary name, then
``os.replace``).  Override the folder with ``QUEUE_DEPTH_MEASURE_BUILD``.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

__all__ = ["SOURCE", "BuildError", "build_dir", "compiler", "qdperf_binary", "source_sha256"]

#: The C source of the client and server.
SOURCE = Path(__file__).resolve().parent / "csrc" / "qdperf.c"

#: Compiler flags: optimised, warnings as errors so a broken toolchain is noticed at once.
CFLAGS = ("-O2", "-Wall", "-Wextra", "-Werror", "-std=gnu11")


class BuildError(RuntimeError):
    """The C compiler is missing or rejected the source."""


def build_dir() -> Path:
    """Where compiled binaries are cached: ``$QUEUE_DEPTH_MEASURE_BUILD`` or ``<repo>/_build/measure``."""
    env = os.environ.get("QUEUE_DEPTH_MEASURE_BUILD")
    if env:
        return Path(env)
    return Path(__file__).resolve().parents[2] / "_build" / "measure"


def compiler() -> str | None:
    """Path of the C compiler (``$CC``, else ``cc``, else ``gcc``), or ``None`` if there is none."""
    for name in (os.environ.get("CC"), "cc", "gcc"):
        if name and shutil.which(name):
            return shutil.which(name)
    return None


def source_sha256() -> str:
    """Hex SHA-256 of the C source (recorded in every dataset's metadata)."""
    return hashlib.sha256(SOURCE.read_bytes()).hexdigest()


def _compiler_version(cc: str) -> str:
    out = subprocess.run([cc, "--version"], capture_output=True, text=True, timeout=30)
    return out.stdout.splitlines()[0] if out.stdout else cc


def qdperf_binary(rebuild: bool = False) -> Path:
    """Return the path of a compiled ``qdperf``, compiling it first if needed.

    Parameters
    ----------
    rebuild
        Compile even if a cached binary for this source and compiler exists.

    Raises
    ------
    BuildError
        No C compiler on ``PATH``, or compilation failed (the compiler's message is included).
    """
    cc = compiler()
    if cc is None:
        raise BuildError("no C compiler found (set CC, or install gcc: apt-get install gcc)")
    key = hashlib.sha256(
        SOURCE.read_bytes() + _compiler_version(cc).encode() + " ".join(CFLAGS).encode()
    )
    name = f"qdperf-{key.hexdigest()[:16]}"
    # A normal user may not be able to write into a repository checked out by someone else: fall back
    # to a per-user folder in the temporary directory.
    candidates = [build_dir(), Path(tempfile.gettempdir()) / f"queue-depth-measure-{os.getuid()}"]
    for folder in candidates:
        target = folder / name
        if target.is_file() and os.access(target, os.X_OK) and not rebuild:
            return target
    for folder in candidates:
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError:
            continue
        if os.access(folder, os.W_OK):
            return _compile(cc, folder, name)
    raise BuildError(f"no writable build folder among {[str(c) for c in candidates]}")


def _compile(cc: str, out_dir: Path, name: str) -> Path:
    target = out_dir / name
    fd, tmp = tempfile.mkstemp(prefix=".qdperf-", dir=out_dir)
    os.close(fd)
    try:
        res = subprocess.run(
            [cc, *CFLAGS, "-o", tmp, str(SOURCE)], capture_output=True, text=True, timeout=120
        )
        if res.returncode != 0:
            raise BuildError(f"{cc} failed on {SOURCE}:\n{res.stderr.strip()}")
        os.chmod(tmp, 0o755)
        os.replace(
            tmp, target
        )  # atomic: a concurrent caller sees the old file or the whole new one
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return target
