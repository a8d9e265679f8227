"""Where the harness builds and finds its C binary: never a file another user could have planted.

The binary runs as the caller, often root.  A folder is used only when it is private to the effective
user, a cached binary only when the user owns it and no one else may write it; the old predictable
fallback (``<tmp>/queue-depth-measure-<uid>/qdperf-<hash>``) planted by someone else is never run.
Ownership tests give files to another uid with ``os.chown``, so they need root.
"""

from __future__ import annotations

import os
import stat
import subprocess
from pathlib import Path

import pytest

from models.measure import build

pytestmark = pytest.mark.timeout(300)

OTHER_UID = 4242  # a uid no test process runs as
needs_root = pytest.mark.skipif(
    os.geteuid() != 0, reason="giving a file to another user (os.chown) needs root"
)


@pytest.fixture
def cc() -> str:
    cc = build.compiler()
    if cc is None:
        pytest.skip("no C compiler: nothing is built")
    return cc


@pytest.fixture
def isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """No override, no checkout build folder, the per-user cache and the temporary folder in tmp_path."""
    monkeypatch.delenv(build.ENV, raising=False)
    monkeypatch.setattr(build, "_checkout_root", lambda: None)
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    os.chmod(tmp, 0o1777)  # like /tmp: anyone may create, only the owner may remove
    monkeypatch.setattr("tempfile.tempdir", str(tmp))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setattr(build, "_session_dir", None)
    return tmp


def _plant(folder: Path, name: str, marker: Path, uid: int, mode: int) -> Path:
    """A 'binary' that would leave ``marker`` behind if it ever ran."""
    folder.mkdir(parents=True, exist_ok=True)
    planted = folder / name
    planted.write_text(f"#!/bin/sh\ntouch {marker}\n")
    os.chmod(planted, 0o755)
    os.chown(planted, uid, uid)
    os.chown(folder, uid, uid)
    os.chmod(folder, mode)
    return planted


def _is_qdperf(path: Path) -> bool:
    res = subprocess.run([str(path)], capture_output=True, text=True, timeout=10)
    return "usage: qdperf" in res.stderr + res.stdout


def _old_location(tmp: Path) -> Path:
    return tmp / f"queue-depth-measure-{os.geteuid()}"


@needs_root
@pytest.mark.parametrize("mode", [0o777, 0o755])
def test_a_binary_planted_at_the_old_predictable_path_is_never_run(cc, isolated, tmp_path, mode):
    # The per-user cache is someone else's too, so the old temporary location would be next.
    cache = tmp_path / "cache" / "queue-depth" / "measure"
    marker = tmp_path / "planted-binary-ran"
    _plant(cache, build.binary_name(cc), marker, OTHER_UID, mode)
    planted = _plant(_old_location(isolated), build.binary_name(cc), marker, OTHER_UID, mode)
    got = build.qdperf_binary()
    assert got != planted and planted.parent not in got.parents
    assert got.parent == build._session_dir  # a fresh mkdtemp folder of this process
    assert stat.S_IMODE(os.stat(got.parent).st_mode) == 0o700
    assert os.stat(got).st_uid == os.geteuid()
    assert _is_qdperf(got) and not marker.exists()
    assert planted.read_text().startswith("#!/bin/sh")  # left alone, never replaced or run


@needs_root
def test_a_foreign_binary_in_our_own_folder_is_rebuilt_not_run(cc, isolated, tmp_path):
    folder = tmp_path / "cache" / "queue-depth" / "measure"
    marker = tmp_path / "planted-binary-ran"
    planted = _plant(folder, build.binary_name(cc), marker, OTHER_UID, 0o700)
    os.chown(folder, os.geteuid(), os.getegid())  # the folder is ours; the file is not
    got = build.qdperf_binary()
    assert got == planted  # same name, compiled again over it
    assert os.stat(got).st_uid == os.geteuid() and _is_qdperf(got) and not marker.exists()


def test_a_group_writable_binary_is_rebuilt(cc, isolated, tmp_path):
    first = build.qdperf_binary()
    os.chmod(first, 0o777)
    again = build.qdperf_binary()
    assert again == first and not os.stat(again).st_mode & 0o022 and _is_qdperf(again)


def test_the_per_user_folder_is_created_private(cc, isolated, tmp_path):
    got = build.qdperf_binary()
    assert got.parent == tmp_path / "cache" / "queue-depth" / "measure"
    assert stat.S_IMODE(os.stat(got.parent).st_mode) == 0o700


@needs_root
def test_a_folder_owned_by_someone_else_is_refused(tmp_path):
    folder = tmp_path / "theirs"
    folder.mkdir(mode=0o700)
    os.chown(folder, OTHER_UID, OTHER_UID)
    with pytest.raises(build.UnsafePath, match=f"owned by uid {OTHER_UID}"):
        build.check_private_dir(folder)


def test_a_folder_anyone_may_write_is_refused(tmp_path):
    folder = tmp_path / "shared"
    folder.mkdir()
    os.chmod(folder, 0o777)
    with pytest.raises(build.UnsafePath, match="mode 0777"):
        build.check_private_dir(folder)
    os.chmod(folder, 0o775)
    with pytest.raises(build.UnsafePath, match="group or others"):
        build.check_private_dir(folder)
    os.chmod(folder, 0o755)
    assert build.check_private_dir(folder) == folder


def test_a_link_is_not_a_build_folder(tmp_path):
    real = tmp_path / "real"
    real.mkdir(mode=0o700)
    (tmp_path / "link").symlink_to(real)
    with pytest.raises(build.UnsafePath, match="not a directory"):
        build.check_private_dir(tmp_path / "link")


@needs_root
@pytest.mark.parametrize("owner, mode", [(OTHER_UID, 0o700), (0, 0o777)])
def test_the_override_folder_is_checked_too(cc, tmp_path, monkeypatch, owner, mode):
    folder = tmp_path / "override"
    folder.mkdir()
    os.chown(folder, owner, owner)
    os.chmod(folder, mode)
    monkeypatch.setenv(build.ENV, str(folder))
    with pytest.raises(build.BuildError, match=build.ENV):
        build.qdperf_binary()
    assert list(folder.iterdir()) == []


def test_the_override_is_used_and_created_private(cc, tmp_path, monkeypatch):
    folder = tmp_path / "new" / "build"
    monkeypatch.setenv(build.ENV, str(folder))
    assert build.candidate_dirs() == [folder]
    got = build.qdperf_binary()
    assert got.parent == folder and _is_qdperf(got)
    assert stat.S_IMODE(os.stat(folder).st_mode) == 0o700


def test_an_installed_package_never_builds_inside_itself(monkeypatch):
    """Outside a checkout (a wheel in site-packages) no candidate lies inside the package's tree."""
    monkeypatch.delenv(build.ENV, raising=False)
    monkeypatch.setattr(build, "_checkout_root", lambda: None)
    site = Path(build.__file__).resolve().parents[2]
    for folder in build.candidate_dirs():
        assert not folder.is_relative_to(site), folder


def test_a_checkout_builds_in_its_build_folder(monkeypatch):
    monkeypatch.delenv(build.ENV, raising=False)
    root = Path(build.__file__).resolve().parents[2]
    assert build.candidate_dirs()[0] == root / "_build" / "measure"
