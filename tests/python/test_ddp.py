"""examples/torch_ddp_ft.py: DistributedDataParallel on "ftcomm" agrees with "gloo" step by
step, and survives a killed rank (rank 0 included) with a replacement joining."""

import re
from pathlib import Path

import pytest

from conftest import ROOT, run_ranks

EXAMPLE = str(ROOT / "examples" / "torch_ddp_ft.py")


def losses(path: Path) -> list:
    return [float(line.split()[1]) for line in path.read_text().splitlines()]


def test_ddp_losses_on_ftcomm_match_gloo_step_by_step(tmp_path: Path) -> None:
    runs = {}
    for backend in ("gloo", "ftcomm"):
        out = tmp_path / f"{backend}.txt"
        result = run_ranks(4, EXAMPLE, "--backend", backend, "--steps", "25", "--losses", str(out))
        assert result.returncode == 0, result.stdout
        assert "world_sizes=4 replicas_identical=yes" in result.stdout, result.stdout
        runs[backend] = losses(out)
    assert len(runs["gloo"]) == len(runs["ftcomm"]) == 25
    assert runs["ftcomm"] == pytest.approx(runs["gloo"], rel=1e-5, abs=1e-7)
    assert runs["ftcomm"][-1] < runs["ftcomm"][0], "training did not reduce the loss"


@pytest.mark.parametrize("victim", [2, 0])
def test_ddp_survives_a_killed_rank_and_admits_a_replacement(victim: int) -> None:
    result = run_ranks(4, EXAMPLE, "--steps", "30", "--fault", "--fault-rank", str(victim),
                       "--replace")
    final = re.search(r"^FINAL .*$", result.stdout, re.M)
    assert final, result.stdout
    assert "world_sizes=4>3>4 replicas_identical=yes" in final.group(0), result.stdout
    assert "steps=30" in final.group(0)
    # ftcomm-run's summary line: "ranks 0:exit 0 1:exit 0 2:signal 9 3:exit 0"
    assert f" {victim}:signal 9" in result.stdout, result.stdout


def test_ddp_under_one_agent_per_host_survives_a_killed_rank() -> None:
    """ftcomm-run --launch agents: the ranks get FTCOMM_RANK (and torchrun's RANK), not mpirun's
    variables, and the backend finds its rank and size there."""
    result = run_ranks(4, EXAMPLE, "--steps", "30", "--fault", "--fault-rank", "1", "--replace",
                       run_flags=["--launch", "agents"])
    final = re.search(r"^FINAL .*$", result.stdout, re.M)
    assert final, result.stdout
    assert "world_sizes=4>3>4 replicas_identical=yes" in final.group(0), result.stdout
    assert "agents ended; ranks 0:exit 0 1:signal 9 2:exit 0 3:exit 0" in result.stdout, \
        result.stdout
