#!/usr/bin/env python3
"""Fault-tolerant DDP training on the "ftcomm" torch.distributed backend.

An ordinary torch.nn model wrapped in DistributedDataParallel trains on synthetic data. With
--fault, one rank SIGKILLs itself in the middle of a step; the survivors' collectives raise
PeerFailed, they reconfigure the process group in place, share the model and optimizer state,
wrap the model in DDP again and go on. With --replace, rank 0 then starts a replacement
process, which joins through ftcomm:// (no rank holds the store), receives the state and
trains with the others. The last line (rank 0) gives the final loss, the world-size history
and whether every replica ended identical.

    ftcomm-run -np 4 -- python3 examples/torch_ddp_ft.py --fault --replace

--backend gloo runs the same training on torch's gloo backend (no faults), for comparison.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import time
from typing import List, Optional, Tuple

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel

import ftcomm
import ftcomm.torch

GLOBAL_BATCH = 96
FEATURES = 16


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--backend", choices=["ftcomm", "gloo"], default="ftcomm")
    p.add_argument("--steps", type=int, default=40)
    p.add_argument("--fault", action="store_true", help="kill a rank during training")
    p.add_argument("--fault-rank", type=int, default=2)
    p.add_argument("--fault-step", type=int, default=10)
    p.add_argument("--replace", action="store_true", help="start a replacement after recovery")
    p.add_argument("--losses", help="rank 0 writes 'STEP LOSS' lines here")
    p.add_argument("--replacement", action="store_true", help=argparse.SUPPRESS)
    return p.parse_args()


def make_model() -> torch.nn.Module:
    torch.manual_seed(0)
    return torch.nn.Sequential(
        torch.nn.Linear(FEATURES, 32), torch.nn.Tanh(), torch.nn.Linear(32, 1)
    )


def batch(step: int, rank: int, size: int) -> Tuple[torch.Tensor, torch.Tensor]:
    """This rank's shard of step's global batch (the same global batch at any world size)."""
    g = torch.Generator().manual_seed(1000 + step)
    x = torch.randn(GLOBAL_BATCH, FEATURES, generator=g)
    y = torch.sin(x[:, :1]) + 0.1 * x.sum(dim=1, keepdim=True)
    return x.chunk(size)[rank], y.chunk(size)[rank]


def init(args: argparse.Namespace) -> None:
    if args.backend == "ftcomm":
        # Rank and size come from ftcomm-run's or mpirun's environment; a replacement
        # (FTCOMM_REPLACEMENT=1) gets them from the reconfiguration that admits it.
        dist.init_process_group("ftcomm", init_method="ftcomm://")
        return
    # gloo bootstraps through the same store on the rendezvous, so no rank holds it.
    dist.init_process_group("gloo", init_method="ftcomm://")


def train_step(
    ddp: torch.nn.Module, opt: torch.optim.Optimizer, step: int, args: argparse.Namespace,
    launch_rank: int,
) -> float:
    x, y = batch(step, dist.get_rank(), dist.get_world_size())
    opt.zero_grad()
    loss = F.mse_loss(ddp(x), y)
    if args.fault and not args.replacement and launch_rank == args.fault_rank \
            and step == args.fault_step:
        os.kill(os.getpid(), signal.SIGKILL)  # dies before its gradients reach the others
    loss.backward()
    opt.step()
    total = loss.detach().clone()
    dist.all_reduce(total)
    return total.item() / dist.get_world_size()


def rejoin(model: torch.nn.Module, opt: torch.optim.Optimizer, step: int) -> Tuple[
        torch.nn.Module, int]:
    """After a reconfiguration: everyone adopts rank 0's state and step, and wraps DDP anew."""
    ftcomm.torch.share_state(model, opt)
    box = torch.tensor([step])
    dist.broadcast(box, 0)
    return DistributedDataParallel(model), int(box.item())


def replicas_identical(model: torch.nn.Module) -> bool:
    flat = torch.cat([p.detach().reshape(-1) for p in model.parameters()])
    gathered = [torch.empty_like(flat) for _ in range(dist.get_world_size())]
    dist.all_gather(gathered, flat)
    return all(torch.equal(gathered[0], g) for g in gathered)


def start_replacement() -> subprocess.Popen:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("OMPI_", "PMIX_", "FTCOMM_FAULT"))
           and k not in ("FTCOMM_RANK", "FTCOMM_WORLD_SIZE")}
    env["FTCOMM_REPLACEMENT"] = "1"
    argv = [a for a in sys.argv[1:] if a not in ("--fault", "--replace")]
    return subprocess.Popen([sys.executable, os.path.abspath(__file__), *argv, "--replacement"],
                            env=env)


def replacements_waiting() -> bool:
    """All survivors agree at the same step whether a replacement waits."""
    waiting = torch.tensor([ftcomm.torch.world().replacements_waiting])
    dist.all_reduce(waiting, op=dist.ReduceOp.MAX)
    return bool(waiting.item())


def admit_replacement(sizes: List[int]) -> Optional[subprocess.Popen]:
    """Rank 0 starts a replacement; once it waits at the rendezvous, the survivors reconfigure
    again to admit it. Rank 0 returns the process."""
    process = start_replacement() if dist.get_rank() == 0 else None
    deadline = time.monotonic() + 120
    while not replacements_waiting():
        if time.monotonic() > deadline:
            raise ftcomm.Timeout("the replacement did not reach the rendezvous within 120 s")
        time.sleep(0.1)
    ftcomm.torch.reconfigure()
    sizes.append(dist.get_world_size())
    return process


def main() -> int:
    args = parse_args()
    init(args)
    launch_rank = dist.get_rank()
    model = make_model()
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    sizes: List[int] = [dist.get_world_size()]
    step = 0
    if args.replacement:
        ddp, step = rejoin(model, opt, step)
    else:
        ddp = DistributedDataParallel(model)
    replacement: Optional[subprocess.Popen] = None  # rank 0's
    replaced = False
    losses: List[Tuple[int, float]] = []
    loss = float("nan")
    while step < args.steps:
        try:
            loss = train_step(ddp, opt, step, args, launch_rank)
            losses.append((step, loss))
            step += 1
        except Exception as error:  # noqa: BLE001 - only the failures below are recovered
            if args.backend != "ftcomm" or not ftcomm.torch.is_failure(error):
                raise
            new_pg = ftcomm.torch.reconfigure()
            sizes.append(new_pg.size())
            print(f"rank {dist.get_rank()}: step {step}: {type(error).__name__}; reconfigured: "
                  f"left {new_pg.reconfiguration.left}, size {new_pg.size()}", flush=True)
            ddp, step = rejoin(model, opt, step)
            if args.replace and not replaced:
                replacement, replaced = admit_replacement(sizes), True
                ddp, step = rejoin(model, opt, step)
    identical = replicas_identical(model)
    if dist.get_rank() == 0:
        if args.losses:
            with open(args.losses, "w") as f:
                f.writelines(f"{s} {v:.9g}\n" for s, v in losses)
        if replacement is not None:
            replacement.wait(timeout=120)
        print(f"FINAL loss={loss:.6f} steps={step} "
              f"world_sizes={'>'.join(map(str, sizes))} "
              f"replicas_identical={'yes' if identical else 'no'}", flush=True)
    if args.backend == "gloo":
        # torch 1.13's ProcessGroupGloo can deadlock at teardown: DDP's Reducer destroys it
        # holding the GIL, and its destructor joins a worker that waits for the GIL to drop a
        # tensor. Once every rank is past a barrier, the process ends without that teardown.
        dist.barrier()
        sys.stdout.flush()
        os._exit(0 if identical else 1)
    dist.destroy_process_group()
    return 0 if identical else 1


if __name__ == "__main__":
    sys.exit(main())
