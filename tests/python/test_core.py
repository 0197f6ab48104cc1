"""The ftcomm Python package on numpy arrays and CPU tensors, across real processes."""

from conftest import run_ranks


def test_every_operation_gives_the_expected_values_and_errors_on_3_ranks() -> None:
    result = run_ranks(3, "core_ops.py")
    assert result.returncode == 0, result.stdout
    assert all(f"CORE OK rank {r}" in result.stdout for r in range(3)), result.stdout


def test_a_single_rank_job_runs_every_operation() -> None:
    result = run_ranks(1, "core_ops.py")
    assert result.returncode == 0, result.stdout
    assert "CORE OK rank 0" in result.stdout
