"""Shared helpers: run a worker script on N ranks under the real ftcomm-run (mpirun and a
rendezvous server), with build/python on PYTHONPATH."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import List, Optional

import pytest

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
BUILD = Path(os.environ.get("FTCOMM_BUILD_DIR", ROOT / "build"))
WORKERS = HERE / "workers"


def python_env(extra: Optional[dict] = None) -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(BUILD / "python"),
                                                      env.get("PYTHONPATH", "")]))
    env.setdefault("UCX_LOG_LEVEL", "error")
    env.setdefault("GLOO_SOCKET_IFNAME", "lo")  # gloo beside ftcomm, on this host only
    env.update(extra or {})
    return env


def descendants(root: int) -> List[int]:
    """Every process below `root`, from /proc's parent links."""
    children: dict = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(ppid, []).append(int(entry))
    found, todo = [], [root]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def run_command(cmd: List[str], env: dict, timeout: float) -> subprocess.CompletedProcess:
    """Runs `cmd`; a run past its timeout is killed with every process it started. The output
    is stdout and stderr together, without OpenMPI's PMIx noise."""
    with subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True) as proc:
        try:
            out, _ = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            # mpirun puts its ranks in process groups of their own: kill every descendant.
            for pid in [proc.pid, *descendants(proc.pid)]:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            out, _ = proc.communicate()
            pytest.fail(f"{' '.join(cmd)} ran past {timeout} s:\n{out}")
    out = "\n".join(line for line in out.splitlines() if "PMIX ERROR: BAD-PARAM" not in line)
    return subprocess.CompletedProcess(cmd, proc.returncode, out)


def run_ranks(n: int, script: str, *args: str, run_flags: List[str] = (),
              timeout: float = 240, env: Optional[dict] = None) -> subprocess.CompletedProcess:
    """ftcomm-run -np N -- python3 SCRIPT ARGS."""
    path = script if os.path.isabs(script) else str(WORKERS / script)
    cmd = [str(BUILD / "bin" / "ftcomm-run"), "-np", str(n), *run_flags, "--",
           sys.executable, path, *args]
    return run_command(cmd, python_env(env), timeout)


@pytest.fixture(scope="session", autouse=True)
def built() -> None:
    if not (BUILD / "python" / "ftcomm" / "__init__.py").exists():
        pytest.fail(f"build the project first (scripts/build): no {BUILD}/python/ftcomm")
