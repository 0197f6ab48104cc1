"""torch.distributed's "ftcomm" backend: every c10d operation, both init methods, and a
failure with reconfiguration, across real processes."""

import subprocess
import sys
import time
from pathlib import Path

from conftest import BUILD, WORKERS, python_env, run_command, run_ranks


def test_every_c10d_operation_over_ftcomm_init() -> None:
    result = run_ranks(3, "torch_ops.py")
    assert result.returncode == 0, result.stdout
    assert all(f"TORCH OK rank {r}" in result.stdout for r in range(3)), result.stdout


def test_env_init_starts_the_rendezvous_beside_rank_0() -> None:
    result = run_ranks(4, "torch_ops.py", "--init-env")
    assert result.returncode == 0, result.stdout
    assert all(f"TORCH OK rank {r}" in result.stdout for r in range(4)), result.stdout


def test_a_dead_rank_raises_peer_failed_and_reconfigure_shrinks_the_default_group() -> None:
    result = run_ranks(4, "torch_failure.py")
    assert all(f"FAILURE OK rank {r} size 3" in result.stdout for r in range(3)), result.stdout
    assert " 3:signal 9" in result.stdout, result.stdout


def test_the_groups_timeout_applies_to_its_collectives() -> None:
    result = run_ranks(2, "torch_timeout.py")
    assert "TIMEOUT OK" in result.stdout, result.stdout


def test_plain_mpirun_with_a_rendezvous_server_runs_every_operation(tmp_path: Path) -> None:
    """Launched by mpirun itself (no ftcomm-run): the job names its rendezvous server through
    FTCOMM_RENDEZVOUS and FTCOMM_JOB, and ranks come from mpirun's environment."""
    port_file = tmp_path / "port"
    server = subprocess.Popen([str(BUILD / "bin" / "ftcomm-rendezvous"), "--listen",
                               "127.0.0.1:0", "--port-file", str(port_file)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 30
        while not (port_file.exists() and port_file.read_text().strip()):
            assert time.monotonic() < deadline, "the rendezvous server did not start"
            time.sleep(0.05)
        env = python_env({"FTCOMM_RENDEZVOUS": f"127.0.0.1:{port_file.read_text().strip()}",
                          "FTCOMM_JOB": "plain-mpirun"})
        cmd = ["mpirun", "--allow-run-as-root", "--oversubscribe", "-np", "2",
               "-x", "FTCOMM_RENDEZVOUS", "-x", "FTCOMM_JOB", "-x", "PYTHONPATH",
               "-x", "UCX_LOG_LEVEL", sys.executable, str(WORKERS / "torch_ops.py")]
        result = run_command(cmd, env, timeout=240)
    finally:
        server.terminate()
        server.wait(timeout=30)
    assert result.returncode == 0, result.stdout
    assert "TORCH OK rank 0" in result.stdout and "TORCH OK rank 1" in result.stdout
