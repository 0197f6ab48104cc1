"""A rank dies: the survivors' torch collectives raise ftcomm.PeerFailed; reconfigure() gives a
default group of the new size that torch's module functions use; the old group raises Revoked;
new_group works again in the new epoch."""

import datetime
import os
import signal

import torch
import torch.distributed as dist

import ftcomm
import ftcomm.torch

dist.init_process_group("ftcomm", init_method="ftcomm://", timeout=datetime.timedelta(seconds=60))
r, n = dist.get_rank(), dist.get_world_size()
victim = n - 1
t = torch.ones(4)
dist.all_reduce(t)
assert (t == n).all()
old = dist.distributed_c10d._get_default_group()
if r == victim:
    os.kill(os.getpid(), signal.SIGKILL)
try:
    dist.all_reduce(torch.ones(4))
    raise AssertionError("an allreduce with a dead member succeeded")
except (ftcomm.PeerFailed, ftcomm.Revoked) as e:
    assert ftcomm.torch.is_failure(e)
    assert isinstance(e, RuntimeError)
new = ftcomm.torch.reconfigure()
info = new.reconfiguration
assert info.left == [victim] and info.admitted == [] and info.size == n - 1, info
assert dist.get_world_size() == n - 1 and dist.get_rank() == r
assert dist.distributed_c10d._get_default_group() is new
t = torch.ones(4)
dist.all_reduce(t)
assert (t == n - 1).all()
try:
    old.allreduce([torch.ones(1)]).wait()
    raise AssertionError("the old group still works")
except ftcomm.Revoked as e:
    assert "reconfigured" in str(e)
g = dist.new_group([0])
if r == 0:
    x = torch.full((2,), 5.0)
    dist.all_reduce(x, group=g)
    assert (x == 5).all()
dist.barrier()
print(f"FAILURE OK rank {r} size {dist.get_world_size()}", flush=True)
dist.destroy_process_group()
