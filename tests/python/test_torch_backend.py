"""torch.distributed's "ftcomm" backend: every c10d operation, both init methods, and a
failure with reconfiguration, across real processes."""

from conftest import run_ranks


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
    assert "rank 3 killed by signal 9" in result.stdout, result.stdout


def test_the_groups_timeout_applies_to_its_collectives() -> None:
    result = run_ranks(2, "torch_timeout.py")
    assert "TIMEOUT OK" in result.stdout, result.stdout
