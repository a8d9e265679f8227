"""A disk cache of simulated row summaries, shared by the processes of one build (opt-in).

Chapter 9 and its tests simulate the same kernel rows many times: the notebook under the test run,
the test modules that hold its evaluations (``tests/test_apart.py`` and others) and the notebook
again in the strict book build, each in its own process.  A simulation is a pure function of its
scenario and of the code that runs it, so its summary (:class:`models.kernel.runs.SimSummary`) can be
kept on disk and read back by the next process that asks for it.

Two other pure results that several processes of a build compute are kept beside the summaries,
as JSON values (:func:`store_json`, :func:`load_json`), under keys of their own that hold the same
fingerprint: chapter 9's calibration fit (``models.kernel.tables``: the training rows and the tick
rate) and the live figures' precomputed grids (``figures.live.runtime``: the declaration and the
``figures`` package's code).

The cache is off unless the environment variable :data:`CACHE_ENV` names a folder (the Makefile
sets it to ``_build/sim_cache``).  A summary's key is a SHA-256 of

* the source of every module of the ``models`` package (:func:`code_fingerprint`): any change to the
  simulator, a rule, a kernel profile or the summary's definition makes every entry unreachable;
* the scenario's ``repr`` (every part and parameter, floats written exactly);
* the kernel profile the scenario names and its congestion control's class, since a profile may be
  registered at run time (:func:`models.sim.kernels.register_profile`).

A scenario whose kernel profile uses a rule class defined outside ``models`` (a reader's own rule,
chapter 6's exercise) has no key (:func:`key` returns ``None``) and is always simulated: its code is
not in the fingerprint.  An entry that cannot be read is simulated again and rewritten; entries are
written to a temporary file and renamed, so a reader never sees half of one.  Entries live in a
folder per version of ``models`` (a prefix of the fingerprint); the first entry a process writes
deletes the other versions' folders (:func:`prune`), so an edited checkout keeps one version's.

Two processes that miss the same entry at once (the two workers of ``make test``, a notebook and
the test module of its evaluation) would both simulate it.  :func:`claim` prevents that: the first
takes a lock file beside the entry (its process id inside) while it simulates, and the other waits
for the entry instead of simulating it again, its CPU left to the one that works.  A lock whose
process has died, or a wait longer than :data:`WAIT_LIMIT_S`, is passed over, so nothing hangs; at
worst a scenario is simulated twice, to the same summary.  The lock saves time only: no number
depends on it.

>>> from models.sim import Scenario
>>> a = key(Scenario(), where="x")
>>> len(a), a == key(Scenario(workload={"qd": 2}), where="x")
(64, False)
>>> key(Scenario(), where=None) is None      # no folder: the cache is off
True
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from models.sim import Scenario

__all__ = [
    "CACHE_ENV",
    "WAIT_LIMIT_S",
    "folder",
    "fingerprint",
    "code_fingerprint",
    "key",
    "key_of",
    "load",
    "store",
    "load_json",
    "store_json",
    "prune",
    "claim",
    "once",
]

#: Environment variable naming the cache's folder; the cache is off when it is unset or empty.
CACHE_ENV = "QUEUE_DEPTH_SIM_CACHE"

#: Longest wait (seconds) for an entry another live process is simulating; then it is simulated
#: here too.  A row of the bundled evaluations simulates in well under a minute.
WAIT_LIMIT_S = 600.0

#: Seconds between looks at an entry another process is simulating.
POLL_S = 0.05

_MODELS = Path(__file__).resolve().parents[1]  # the models package's folder


def folder() -> str | None:
    """The cache's folder from :data:`CACHE_ENV`, or ``None`` when it is off."""
    return os.environ.get(CACHE_ENV) or None


@functools.lru_cache(maxsize=4)
def fingerprint(root: Path) -> str:
    """SHA-256 of the path (below ``root``) and the bytes of every ``.py`` file under ``root``."""
    h = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        h.update(path.relative_to(root).as_posix().encode())
        h.update(b"\0")
        h.update(path.read_bytes())
        h.update(b"\0")
    return h.hexdigest()


def code_fingerprint() -> str:
    """:func:`fingerprint` of the ``models`` package."""
    return fingerprint(_MODELS)


def key_of(*parts: str) -> str:
    """A cache key: SHA-256 of :func:`code_fingerprint` and ``parts`` (what else the value is a
    function of), one per line."""
    return hashlib.sha256("\n".join([code_fingerprint(), *parts]).encode()).hexdigest()


def _own_code(cls: Any) -> bool:
    """Whether class ``cls`` is defined in the ``models`` package (its source is fingerprinted)."""
    module = getattr(cls, "__module__", "") or ""
    return module == "models" or module.startswith("models.")


def key(scenario: Scenario, where: str | None = "") -> str | None:
    """The cache key of ``scenario``'s summary, or ``None`` when there is none: the cache is off
    (``where`` is ``None``, or ``""`` and :data:`CACHE_ENV` is unset) or the scenario's kernel runs
    a rule class from outside ``models``."""
    if where == "":
        where = folder()
    if where is None:
        return None
    from models.sim.kernels import get_profile
    from models.sim.rules import CONGESTION_CONTROLS

    profile = get_profile(scenario.kernel.profile)
    classes = [v for v in vars(profile).values() if isinstance(v, type)]
    cc_name = scenario.kernel.congestion_control
    cc = profile.congestion_control if cc_name == "profile" else cc_name
    if cc in CONGESTION_CONTROLS:
        classes.append(CONGESTION_CONTROLS[cc])
    if not all(_own_code(c) for c in classes):
        return None
    return key_of(
        repr(scenario), repr(profile), *(f"{c.__module__}.{c.__qualname__}" for c in classes)
    )


def _version() -> str:
    """The folder of this version of ``models``' entries (a prefix of its fingerprint)."""
    return code_fingerprint()[:16]


def _path(where: str, k: str) -> Path:
    return Path(where) / _version() / k[:2] / f"{k}.json"


_pruned: set[str] = set()  # the cache folders this process has pruned


def prune(where: str) -> int:
    """Delete the entries of every other version of ``models`` under ``where`` (no key of this
    version can reach them, and an edited checkout would otherwise keep them all); the number of
    version folders deleted.  Done once per folder and process, before its first entry is
    written."""
    gone = 0
    try:
        for sub in Path(where).iterdir():
            if sub.is_dir() and sub.name != _version():
                shutil.rmtree(sub, ignore_errors=True)
                gone += 1
    except OSError:
        pass
    return gone


def load(k: str, where: str | None = None) -> dict[str, float] | None:
    """The entry stored under key ``k`` (a dict of numbers), or ``None`` when there is none or it
    cannot be read."""
    got = load_json(k, where)
    if not isinstance(got, dict) or not all(_number(v) for v in got.values()):
        return None
    return {str(n): float(v) for n, v in got.items()}


def load_json(k: str, where: str | None = None) -> Any:
    """The JSON value stored under key ``k`` (:func:`store`, :func:`store_json`), or ``None``
    when there is none or it cannot be read."""
    where = where or folder()
    if where is None:
        return None
    try:
        return json.loads(_path(where, k).read_text())
    except (OSError, ValueError):
        return None


def _number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def store(k: str, values: dict[str, float], where: str | None = None) -> None:
    """Write ``values`` (numbers; NaN allowed) under key ``k`` (:func:`store_json`)."""
    if not all(_number(v) for v in values.values()):
        raise ValueError(f"a cache entry holds numbers only, got {values!r}")
    store_json(k, values, where)


def store_json(k: str, value: Any, where: str | None = None) -> None:
    """Write ``value`` (what JSON holds; NaN allowed) under key ``k``: to a temporary file in the
    same folder, then renamed over the entry.  A folder that cannot be written leaves the cache
    unused, silently: it only saves time."""
    where = where or folder()
    if where is None:
        return
    text = json.dumps(value)  # NaN is written as NaN, and read back
    if where not in _pruned:
        _pruned.add(where)
        prune(where)
    path = _path(where, k)
    tmp = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
        with os.fdopen(fd, "w") as f:
            f.write(text)
        os.replace(tmp, path)
    except OSError:
        if tmp is not None:  # (a half-written temporary file is not left behind)
            with contextlib.suppress(OSError):
                Path(tmp).unlink()


def _alive(pid: int) -> bool:
    """Whether a process with id ``pid`` exists (one of another user counts as alive)."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)  # signal 0: the existence check, nothing is sent
    except ProcessLookupError:
        return False
    except OSError:  # (EPERM: it exists)
        return True
    return True


#: Seconds after which a lock file with no process id in it is taken as left by a process that
#: died between creating it and writing its id (both take microseconds).
EMPTY_LOCK_S = 10.0


def _stale(lock: Path) -> bool:
    """Whether ``lock`` was left by a process that no longer runs: its id names no process, or
    it has stayed without one for :data:`EMPTY_LOCK_S`."""
    try:
        text = lock.read_text().strip()
        if text:
            return not _alive(int(text))
        return time.time() - lock.stat().st_mtime > EMPTY_LOCK_S
    except (OSError, ValueError):  # gone already, or unreadable: look again
        return False


@contextlib.contextmanager
def claim(k: str, where: str | None = None, limit_s: float | None = None) -> Iterator[bool]:
    """Hold the right to simulate entry ``k`` while the ``with`` block runs; yields ``True`` when
    this process should simulate it, ``False`` when the entry is there to :func:`load` or
    :func:`load_json` (another process wrote it while this one waited).

    The lock is a file beside the entry holding this process's id, created only if absent.  While
    another live process holds it, this one waits (up to ``limit_s`` seconds, default
    :data:`WAIT_LIMIT_S`) for the entry; a lock whose process has died is removed.  Past the
    limit, or when the folder cannot be written, it yields ``True`` without the lock.

    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as where:
    ...     locks = lambda: len(list(Path(where).rglob("*.lock")))
    ...     with claim("ab" * 32, where) as mine:
    ...         during = mine, locks()
    ...     after = locks()  # released when the block ends
    >>> during, after
    ((True, 1), 0)
    """
    where = where or folder()
    if where is None:
        yield True
        return
    limit = WAIT_LIMIT_S if limit_s is None else limit_s
    lock = _path(where, k).with_suffix(".lock")
    deadline = time.monotonic() + limit
    held = False
    while True:
        try:
            lock.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        except FileExistsError:
            if _stale(lock):
                with contextlib.suppress(OSError):  # (another waiter may remove it first)
                    lock.unlink()
                continue
            if load_json(k, where) is not None:
                yield False
                return
            if time.monotonic() >= deadline:
                break
            time.sleep(POLL_S)
            continue
        except OSError:  # the folder cannot be written: simulate without the lock
            break
        with os.fdopen(fd, "w") as f:
            f.write(str(os.getpid()))
        held = True
        if load_json(k, where) is not None:  # written by the holder this process waited for
            lock.unlink()
            yield False
            return
        break
    try:
        yield True
    finally:
        if held:
            with contextlib.suppress(OSError):
                lock.unlink()


T = TypeVar("T")


def once(
    k: str,
    read: Callable[[str], T | None],
    compute: Callable[[], T],
    write: Callable[[str, T], None],
) -> T:
    """The value under key ``k``: ``read(k)`` when the cache holds it, else ``compute()``, given to
    ``write(k, value)`` to keep; one process computes it while another that asks at the same time
    waits for it and reads it (:func:`claim`).  ``read`` returns ``None`` for no entry (or one
    it cannot use); with the cache off, ``read`` finds nothing and ``write`` keeps nothing.

    >>> import tempfile
    >>> made = []
    >>> def make():
    ...     made.append(1)
    ...     return {"x": 2.0}
    >>> with tempfile.TemporaryDirectory() as where:
    ...     ask = lambda: once("cd" * 32, lambda k: load(k, where), make,
    ...                        lambda k, v: store(k, v, where))
    ...     values = ask(), ask()
    >>> values, len(made)
    (({'x': 2.0}, {'x': 2.0}), 1)
    """
    got = read(k)
    if got is not None:
        return got
    with claim(k) as mine:
        got = None if mine else read(k)
        if got is not None:
            return got
        value = compute()
        write(k, value)
    return value
