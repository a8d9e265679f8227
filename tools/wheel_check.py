"""Build the wheel, install it into an empty virtual environment, and use it from outside the checkout.

Usage: python tools/wheel_check.py [--keep]        (``make wheel-check``, part of ``make test``)

1. Copies what the wheel is built from (``pyproject.toml``, ``README.md``, ``models/``, ``figures/``,
   ``data/``, ``tools/qd_build_py.py``) to a temporary folder, so the build leaves no ``build/`` or
   ``*.egg-info`` in the checkout, and builds the wheel there with ``pip wheel --no-deps`` (setuptools
   comes from the pip cache or PyPI).
2. Checks the wheel's contents: the datasets under ``models/_bundled_data/`` (every CSV of ``data/``,
   its sidecar and ``datapackage.json``), the harness's C source, and nothing compiled or built (no
   ``.so``/``.o``/executables, no ``_build/``): the harness compiles at run time, outside the package.
3. Creates an empty venv, installs the wheel alone (the ``sim`` extra needs nothing), and from a
   folder outside the checkout runs ``python -m models.sim --qd 1 --response-writes 48,512 --json``
   (Nagle and two sends: about 25 IOPS) and the ``queue-depth-sim`` script.
4. Installs the ``data`` extra (pandas, from the pip cache or PyPI) and loads ``flory2001_trace``
   with ``models.data.load``, which must find the installed copy of the datasets.
5. Checks that the kernel harness would compile its C client/server outside the environment
   (``models.measure.build.build_dir()``), and that none of this wrote a file into the installed
   package (site-packages).

Exit status 0 if every step passed; the failing step's output otherwise.  Takes about half a minute
with a warm pip cache.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: What the wheel is built from (paths relative to the repository root).
SOURCES = ("pyproject.toml", "README.md", "models", "figures", "data", "tools/qd_build_py.py")
_IGNORE = shutil.ignore_patterns("__pycache__", "*.pyc", ".ipynb_checkpoints", "*.egg-info")

DATASET = "flory2001_trace"
SIM_ARGS = ["-m", "models.sim", "--qd", "1", "--response-writes", "48,512", "--json"]


class CheckFailed(RuntimeError):
    pass


def run(cmd: list[str], cwd: Path, env: dict[str, str] | None = None) -> str:
    """Run ``cmd``; return its stdout, or raise :class:`CheckFailed` with its output."""
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=600)
    if proc.returncode != 0:
        raise CheckFailed(
            f"{' '.join(cmd)} (in {cwd}) exited {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
        )
    return proc.stdout


def copy_sources(dest: Path) -> Path:
    src = dest / "src"
    for rel in SOURCES:
        a, b = ROOT / rel, src / rel
        b.parent.mkdir(parents=True, exist_ok=True)
        if a.is_dir():
            shutil.copytree(a, b, ignore=_IGNORE)
        else:
            shutil.copy2(a, b)
    return src


def check_wheel_contents(wheel: Path) -> list[str]:
    """Problems with the wheel's file list (empty if none)."""
    names = zipfile.ZipFile(wheel).namelist()
    problems = []
    data = ROOT / "data"
    for csv in sorted(data.glob("*.csv")):
        for f in (csv.name, csv.with_suffix(".json").name):
            if f"models/_bundled_data/{f}" not in names:
                problems.append(f"dataset file missing from the wheel: models/_bundled_data/{f}")
    if "models/_bundled_data/datapackage.json" not in names:
        problems.append("models/_bundled_data/datapackage.json missing from the wheel")
    if "models/measure/csrc/qdperf.c" not in names:
        problems.append("the harness's C source (models/measure/csrc/qdperf.c) is missing")
    for n in names:
        base = n.rsplit("/", 1)[-1]
        if (
            n.startswith("_build/")
            or "/_build/" in n
            or base.endswith((".so", ".o", ".a", ".pyc"))
        ):
            problems.append(f"built file in the wheel: {n}")
        elif base.startswith("qdperf") and not base.endswith(".c"):
            problems.append(f"compiled harness in the wheel: {n}")
    return problems


def site_files(python: Path) -> set[str]:
    """Files of the installed ``models`` and ``figures`` packages (bytecode caches aside)."""
    out = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    site = Path(out)
    return {
        str(p.relative_to(site))
        for top in ("models", "figures")
        for p in (site / top).rglob("*")
        if p.is_file() and "__pycache__" not in p.parts
    }


def main(argv: list[str]) -> int:
    keep = "--keep" in argv
    tmp = Path(tempfile.mkdtemp(prefix="qd-wheel-check-"))
    t0 = time.monotonic()
    steps: list[str] = []

    def step(msg: str) -> None:
        steps.append(f"{time.monotonic() - t0:5.1f} s  {msg}")
        print(steps[-1], flush=True)

    # A clean environment: no PYTHONPATH pointing at the checkout, no virtualenv of ours, no
    # simulation cache of the checkout's build (models.kernel.simcache).
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("PYTHONPATH", "VIRTUAL_ENV", "QUEUE_DEPTH_SIM_CACHE")
    }
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    try:
        src = copy_sources(tmp)
        dist = tmp / "dist"
        run(
            [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(dist), str(src)],
            tmp,
            env,
        )
        (wheel,) = dist.glob("*.whl")
        size = wheel.stat().st_size
        step(f"built {wheel.name} ({size / 1024:.0f} KiB)")
        problems = check_wheel_contents(wheel)
        if problems:
            raise CheckFailed("\n".join(problems))
        step("wheel holds the datasets and the harness source, nothing compiled")

        venv = tmp / "venv"
        run([sys.executable, "-m", "venv", str(venv)], tmp, env)
        py = venv / "bin" / "python"
        run([str(py), "-m", "pip", "install", "-q", "--no-deps", str(wheel)], tmp, env)
        installed = json.loads(run([str(py), "-m", "pip", "list", "--format", "json"], tmp, env))
        extra = sorted(p["name"] for p in installed if p["name"] not in ("pip", "setuptools"))
        if extra != ["queue-depth-models"]:
            raise CheckFailed(f"the empty venv holds more than the wheel: {extra}")
        before = site_files(py)
        step("installed into an empty venv (no dependencies)")

        away = tmp / "elsewhere"  # not the checkout: nothing can be imported from it by accident
        away.mkdir()
        result = json.loads(run([str(py), *SIM_ARGS], away, env))
        if not 20 < result["iops"] < 30:
            raise CheckFailed(f"python -m models.sim: {result['iops']} IOPS, expected about 25")
        script = venv / "bin" / "queue-depth-sim"
        again = json.loads(run([str(script), *SIM_ARGS[2:]], away, env))
        if again["iops"] != result["iops"]:
            raise CheckFailed("queue-depth-sim and python -m models.sim disagree")
        step(
            f"python -m models.sim from {away.name}/: {result['iops']:.2f} IOPS (sim: stdlib only)"
        )

        where = run(
            [
                str(py),
                "-c",
                "from models._paths import bundled_data_dir; print(bundled_data_dir())",
            ],
            away,
            env,
        ).strip()
        if str(venv) not in where:
            raise CheckFailed(f"bundled_data_dir() is {where}, not the installed copy in {venv}")
        run([str(py), "-m", "pip", "install", "-q", f"{wheel}[data]"], tmp, env)
        code = (
            "from models.data import load; "
            f"df = load({DATASET!r}); print(len(df), ','.join(map(str, df.columns)))"
        )
        loaded = run([str(py), "-c", code], away, env).strip()
        step(f"models.data.load({DATASET!r}) from the installed copy: {loaded} (data: pandas)")

        harness = run(
            [str(py), "-c", "from models.measure.build import build_dir; print(build_dir())"],
            away,
            env,
        ).strip()
        if Path(harness).resolve().is_relative_to(venv.resolve()):
            raise CheckFailed(f"the harness would compile into the environment: {harness}")
        step(f"the harness would compile into {harness}, outside the environment")

        written = site_files(py) - before
        if written:
            raise CheckFailed(f"files written into the installed package: {sorted(written)}")
        step("nothing was written into site-packages")
        print(f"wheel check passed in {time.monotonic() - t0:.0f} s")
        return 0
    except CheckFailed as exc:
        print(f"wheel check FAILED: {exc}", file=sys.stderr)
        return 1
    finally:
        if keep:
            print(f"kept {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
