"""The group's timeout applies: a collective that a member joins too late fails with
ftcomm.Timeout after the timeout given to init_process_group, not after torch's 30 minutes."""

import datetime
import time

import torch
import torch.distributed as dist

import ftcomm
import ftcomm.torch

dist.init_process_group("ftcomm", init_method="ftcomm://", timeout=datetime.timedelta(seconds=3))
r = dist.get_rank()
dist.barrier()
if r == 0:
    start = time.monotonic()
    try:
        dist.all_reduce(torch.ones(4))
        raise AssertionError("an allreduce without its peer succeeded")
    except ftcomm.Timeout:
        took = time.monotonic() - start
    assert 2.5 < took < 20, took
    print(f"TIMEOUT OK after {took:.1f} s", flush=True)
else:
    time.sleep(8)
    try:
        dist.all_reduce(torch.ones(4))
    except ftcomm.Error:
        pass
