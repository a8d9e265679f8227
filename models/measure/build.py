"""Compile the C programs (``csrc/qdperf.c``, the client/server; ``csrc/qdcosts.c``, the host-cost
microbenchmarks) with the system C compiler, once per source version.

A binary is cached as ``qdperf-<sha256 prefix of source, compiler and flags>`` (``qdcosts-...``
likewise), so editing the
source or changing the compiler rebuilds it, and concurrent callers never see a half-written file
(compile to a temporary name, then ``os.replace``).  Where, in order:

1. ``$QUEUE_DEPTH_MEASURE_BUILD`` if set (the override: used as given, or refused with an error).
2. ``_build/measure/`` in the repository, when ``models`` runs from a checkout (never inside an
   installed package: nothing is written into ``site-packages``).
3. A per-user folder, ``$XDG_CACHE_HOME/queue-depth/measure`` (``~/.cache/...``), then
   ``<tmp>/queue-depth-measure-<uid>``.
4. A fresh private folder (``tempfile.mkdtemp``) for this process, removed at exit.

The binary runs as the caller, often root, so nothing another user could have written is run: a
folder is used only if it is a real directory (not a link) owned by the effective user and not
writable by group or others (a folder the harness creates is mode 0700), and its parent is not
writable by others unless sticky (as ``/tmp`` is); a cached binary only if it is a regular file
owned by the effective user and not writable by group or others.  A planted file is never run:
its folder is skipped, or the binary is rebuilt over it.
"""

from __future__ import annotations

import atexit
import hashlib
import os
import shutil
import stat
import subprocess
import tempfile
from pathlib import Path

__all__ = [
    "SOURCE",
    "BuildError",
    "UnsafePath",
    "build_dir",
    "candidate_dirs",
    "check_private_dir",
    "check_own_binary",
    "compiler",
    "qdperf_binary",
    "qdcosts_binary",
    "COSTS_SOURCE",
    "source_sha256",
]

#: The C source of the client and server.
SOURCE = Path(__file__).resolve().parent / "csrc" / "qdperf.c"

#: The C source of the host-cost microbenchmarks (``python -m models.measure costs``).
COSTS_SOURCE = Path(__file__).resolve().parent / "csrc" / "qdcosts.c"

#: Compiler flags: optimised, warnings as errors so a broken toolchain is noticed at once.
CFLAGS = ("-O2", "-Wall", "-Wextra", "-Werror", "-std=gnu11")
#: Extra flags per program, by binary prefix (the microbenchmarks run a second thread).
_EXTRA_FLAGS = {"qdperf": (), "qdcosts": ("-pthread",)}

#: Environment variable naming the build folder (the override).
ENV = "QUEUE_DEPTH_MEASURE_BUILD"

_GROUP_OTHER_WRITE = stat.S_IWGRP | stat.S_IWOTH
_session_dir: Path | None = None


class BuildError(RuntimeError):
    """The C compiler is missing or rejected the source, or no safe build folder exists."""


class UnsafePath(BuildError):
    """A build folder or cached binary that another user could have written: it is not used."""


def _checkout_root() -> Path | None:
    """The repository root when ``models`` is imported from a checkout (``pyproject.toml`` beside it)."""
    root = Path(__file__).resolve().parents[2]
    return root if (root / "pyproject.toml").is_file() and (root / "models").is_dir() else None


def build_dir() -> Path:
    """The first choice of build folder: ``$QUEUE_DEPTH_MEASURE_BUILD``, else the checkout's
    ``_build/measure``, else the per-user cache folder (see the module docstring)."""
    return candidate_dirs()[0]


def candidate_dirs() -> list[Path]:
    """Build folders in the order they are tried (the override alone when it is set)."""
    env = os.environ.get(ENV)
    if env:
        return [Path(env)]
    out = []
    root = _checkout_root()
    if root is not None:
        out.append(root / "_build" / "measure")
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    if os.path.isabs(cache):
        out.append(Path(cache) / "queue-depth" / "measure")
    out.append(Path(tempfile.gettempdir()) / f"queue-depth-measure-{os.geteuid()}")
    return out


def check_private_dir(folder: Path) -> Path:
    """Return ``folder`` if only the effective user can write into it; raise :class:`UnsafePath`.

    A real directory (not a symbolic link), owned by the effective user, not writable by group or
    others; its parent not writable by others unless it has the sticky bit (as ``/tmp``).
    """
    try:
        st = os.lstat(folder)
    except OSError as exc:
        raise UnsafePath(f"build folder {folder}: {exc.strerror}") from None
    if not stat.S_ISDIR(st.st_mode):
        raise UnsafePath(f"build folder {folder} is not a directory (a link or a file)")
    if st.st_uid != os.geteuid():
        raise UnsafePath(
            f"build folder {folder} is owned by uid {st.st_uid}, not by this user "
            f"(uid {os.geteuid()}); refusing to run binaries from it"
        )
    if st.st_mode & _GROUP_OTHER_WRITE:
        raise UnsafePath(
            f"build folder {folder} has mode {stat.S_IMODE(st.st_mode):04o}: group or others "
            "may write into it; refusing to run binaries from it"
        )
    parent = os.stat(folder.parent)
    if parent.st_mode & stat.S_IWOTH and not parent.st_mode & stat.S_ISVTX:
        raise UnsafePath(
            f"build folder {folder}: its parent has mode {stat.S_IMODE(parent.st_mode):04o} "
            "(anyone may replace the folder)"
        )
    return folder


def check_own_binary(path: Path) -> Path:
    """Return ``path`` if it is a regular file of the effective user that no one else may write."""
    st = os.lstat(path)
    if not stat.S_ISREG(st.st_mode):
        raise UnsafePath(f"{path} is not a regular file")
    if st.st_uid != os.geteuid():
        raise UnsafePath(f"{path} is owned by uid {st.st_uid}, not by this user")
    if st.st_mode & _GROUP_OTHER_WRITE:
        raise UnsafePath(
            f"{path} has mode {stat.S_IMODE(st.st_mode):04o}: group or others may write"
        )
    return path


def _prepare(folder: Path) -> Path:
    """Create ``folder`` private (mode 0700) if it does not exist, then check it."""
    if not os.path.lexists(folder):
        folder.parent.mkdir(parents=True, exist_ok=True)
        try:
            os.mkdir(folder, 0o700)
        except FileExistsError:
            pass  # a concurrent caller, or someone else: checked below
    return check_private_dir(folder)


def _session_folder() -> Path:
    """A fresh private folder for this process (mkdtemp: mode 0700, unpredictable name)."""
    global _session_dir
    if _session_dir is None:
        _session_dir = Path(tempfile.mkdtemp(prefix="queue-depth-measure-"))
        atexit.register(shutil.rmtree, _session_dir, True)
    return check_private_dir(_session_dir)


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


def binary_name(cc: str, source: Path = SOURCE) -> str:
    """``qdperf-<16 hex digits>`` (``qdcosts-...`` for :data:`COSTS_SOURCE`) for this source,
    compiler (its version line) and flags."""
    flags = CFLAGS + _EXTRA_FLAGS[source.stem]
    key = hashlib.sha256(
        source.read_bytes() + _compiler_version(cc).encode() + " ".join(flags).encode()
    )
    return f"{source.stem}-{key.hexdigest()[:16]}"


def qdcosts_binary(rebuild: bool = False) -> Path:
    """Return the path of a compiled ``qdcosts`` (the microbenchmarks), found or built as
    :func:`qdperf_binary` does (same folders, same checks, same errors)."""
    return _binary(COSTS_SOURCE, rebuild)


def qdperf_binary(rebuild: bool = False) -> Path:
    """Return the path of a compiled ``qdperf`` that only this user could have written.

    Parameters
    ----------
    rebuild
        Compile even if a cached binary for this source and compiler exists.

    Raises
    ------
    BuildError
        No C compiler on ``PATH``, compilation failed (the compiler's message is included), or
        ``$QUEUE_DEPTH_MEASURE_BUILD`` names a folder that is not private to this user
        (:class:`UnsafePath`).
    """
    return _binary(SOURCE, rebuild)


def _binary(source: Path, rebuild: bool) -> Path:
    cc = compiler()
    if cc is None:
        raise BuildError("no C compiler found (set CC, or install gcc: apt-get install gcc)")
    name = binary_name(cc, source)
    override = bool(os.environ.get(ENV))
    for folder in candidate_dirs():
        try:
            folder = _prepare(folder)
        except (UnsafePath, OSError) as exc:
            if override:
                raise UnsafePath(f"{ENV}: {exc}") from None
            continue  # someone else's, shared, or not creatable: try the next
        if not os.access(folder, os.W_OK | os.X_OK):
            if override:
                raise UnsafePath(f"{ENV}: build folder {folder} is not writable")
            continue
        return _cached_or_built(cc, folder, name, rebuild, source)
    return _cached_or_built(cc, _session_folder(), name, rebuild, source)


def _cached_or_built(
    cc: str, folder: Path, name: str, rebuild: bool, source: Path = SOURCE
) -> Path:
    target = folder / name
    if not rebuild and os.path.lexists(target):
        try:
            check_own_binary(target)
            if os.access(target, os.X_OK):
                return target
        except UnsafePath:
            pass  # not ours, or writable by others: compiled again over it
    return check_own_binary(_compile(cc, folder, name, source))


def _compile(cc: str, out_dir: Path, name: str, source: Path = SOURCE) -> Path:
    target = out_dir / name
    fd, tmp = tempfile.mkstemp(prefix=f".{source.stem}-", dir=out_dir)
    os.close(fd)
    flags = [*CFLAGS, *_EXTRA_FLAGS[source.stem]]
    try:
        res = subprocess.run(
            [cc, *flags, "-o", tmp, str(source)], capture_output=True, text=True, timeout=120
        )
        if res.returncode != 0:
            raise BuildError(f"{cc} failed on {source}:\n{res.stderr.strip()}")
        os.chmod(tmp, 0o755)
        # atomic: a concurrent caller sees the old file or the whole new one; a planted file or
        # link at the target is replaced, never followed
        os.replace(tmp, target)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return target
