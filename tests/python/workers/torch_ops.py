"""Every torch.distributed operation on the "ftcomm" backend, checked against the values it
must produce. --init env: torchrun-style env:// (RANK, WORLD_SIZE, MASTER_ADDR/PORT), where
rank 0 starts the rendezvous; default: ftcomm://."""

import datetime
import math
import os
import sys
import time

import torch
import torch.distributed as dist

import ftcomm
import ftcomm.torch

if "--init-env" in sys.argv:
    os.environ["RANK"] = os.environ["OMPI_COMM_WORLD_RANK"]
    os.environ["WORLD_SIZE"] = os.environ["OMPI_COMM_WORLD_SIZE"]
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    # The same on every rank: ftcomm-run's job name holds its pid.
    job_pid = int(os.environ["FTCOMM_JOB"].rsplit("-", 1)[1])
    os.environ.setdefault("MASTER_PORT", str(20000 + job_pid % 20000))
    for name in ("FTCOMM_RENDEZVOUS", "FTCOMM_JOB"):
        os.environ.pop(name, None)
    dist.init_process_group("ftcomm", timeout=datetime.timedelta(seconds=120))
else:
    dist.init_process_group("ftcomm", init_method="ftcomm://",
                            timeout=datetime.timedelta(seconds=120))

r, n = dist.get_rank(), dist.get_world_size()
assert dist.get_backend() == "ftcomm"
pg = dist.distributed_c10d._get_default_group()
assert isinstance(pg, ftcomm.torch.ProcessGroupFtcomm) and pg.size() == n

# allreduce with every op
for op, expect in [(dist.ReduceOp.SUM, sum(range(1, n + 1))),
                   (dist.ReduceOp.PRODUCT, math.factorial(n)),
                   (dist.ReduceOp.MIN, 1), (dist.ReduceOp.MAX, n),
                   (dist.ReduceOp.AVG, (n + 1) / 2)]:
    t = torch.full((5,), float(r + 1))
    dist.all_reduce(t, op=op)
    assert torch.allclose(t, torch.full((5,), float(expect))), (op, t)
for op, expect in [(dist.ReduceOp.BAND, 0 if n > 1 else 1), (dist.ReduceOp.BOR, (1 << n) - 1),
                   (dist.ReduceOp.BXOR, (1 << n) - 1)]:
    t = torch.full((3,), 1 << r, dtype=torch.int64)
    dist.all_reduce(t, op=op)
    assert (t == expect).all(), (op, t)
b = torch.tensor([r == 0, False])
dist.all_reduce(b)
assert b.tolist() == [True, False]
for dtype in (torch.float16, torch.bfloat16, torch.float64, torch.int8, torch.uint8, torch.int32):
    t = torch.ones(9, dtype=dtype)
    dist.all_reduce(t)
    assert (t == n).all(), dtype
try:
    dist.all_reduce(torch.ones(2, dtype=torch.int32), op=dist.ReduceOp.AVG)
    raise AssertionError("AVG on integers")
except (RuntimeError, ValueError) as e:
    assert "avg" in str(e).lower()
try:
    dist.all_reduce(torch.ones(2), op=dist._make_nccl_premul_sum(2.0))
    raise AssertionError("PREMUL_SUM")
except RuntimeError as e:
    assert "PREMUL_SUM is not supported" in str(e), e
try:
    dist.all_reduce(torch.ones(4, 4).t())
    raise AssertionError("a non-contiguous tensor")
except RuntimeError as e:
    assert "contiguous" in str(e)

# broadcast, reduce
t = torch.arange(4, dtype=torch.float32) * (r + 1)
dist.broadcast(t, src=n - 1)
assert torch.equal(t, torch.arange(4, dtype=torch.float32) * n)
t = torch.full((4,), float(r))
dist.reduce(t, dst=1 % n)
assert r != 1 % n or (t == sum(range(n))).all()

# allgather and _allgather_base
outs = [torch.empty(3, dtype=torch.int64) for _ in range(n)]
dist.all_gather(outs, torch.full((3,), r, dtype=torch.int64))
assert all((o == i).all() for i, o in enumerate(outs))
flat = torch.empty(3 * n)
dist._all_gather_base(flat, torch.full((3,), float(r)))
assert torch.equal(flat, torch.arange(n).repeat_interleave(3).float())

# reduce_scatter and _reduce_scatter_base
out = torch.empty(2)
dist.reduce_scatter(out, [torch.full((2,), float(i + r)) for i in range(n)])
assert (out == n * r + sum(range(n))).all(), out
out = torch.empty(2)
dist._reduce_scatter_base(out, torch.arange(2 * n, dtype=torch.float32))
assert torch.equal(out, torch.arange(2 * r, 2 * r + 2, dtype=torch.float32) * n)

# alltoall_base with and without splits, alltoall
inp = torch.arange(n, dtype=torch.float32) + 10 * r
out = torch.empty(n)
dist.all_to_all_single(out, inp)
assert torch.equal(out, torch.arange(n, dtype=torch.float32) * 10 + r)
in_splits = [d + 1 for d in range(n)]
inp = torch.cat([torch.full((k, 2), float(r)) for k in in_splits])
out = torch.empty((r + 1) * n, 2)
dist.all_to_all_single(out, inp, output_split_sizes=[r + 1] * n, input_split_sizes=in_splits)
assert torch.equal(out[:, 0], torch.arange(n).repeat_interleave(r + 1).float())
outs = [torch.empty(d + 1) for d in range(n)]
dist.all_to_all(outs, [torch.full((r + 1,), float(r)) for _ in range(n)])
assert all((o == d).all() and o.numel() == d + 1 for d, o in enumerate(outs))

# gather, scatter, barrier, send/recv, isend/irecv
g = [torch.empty(2) for _ in range(n)] if r == 0 else None
dist.gather(torch.full((2,), float(r)), g, dst=0)
assert r != 0 or all((x == i).all() for i, x in enumerate(g))
s = torch.empty(3)
dist.scatter(s, [torch.full((3,), float(i)) for i in range(n)] if r == n - 1 else None, src=n - 1)
assert (s == r).all()
dist.barrier()
if n > 1:
    if r == 0:
        dist.send(torch.arange(5, dtype=torch.float32), dst=1, tag=3)
    elif r == 1:
        x = torch.empty(5)
        dist.recv(x, src=0, tag=3)
        assert torch.equal(x, torch.arange(5, dtype=torch.float32))
    req = dist.irecv(x := torch.empty(2), src=(r - 1) % n)
    dist.isend(torch.full((2,), float(r)), dst=(r + 1) % n).wait()
    req.wait()
    assert (x == (r - 1) % n).all()

# works: is_completed, wait, exception, get_future
w = dist.all_reduce(torch.ones(1 << 18), async_op=True)
fut = w.get_future()
w.wait()
# (torch 1.13 cannot return Work.exception() to Python; is_success says it)
assert w.is_completed() and w.is_success()
assert torch.equal(fut.wait()[0], torch.full((1 << 18,), float(n)))

# new_group: only members call the creator; non-members get NON_GROUP_MEMBER
members = list(range(0, n, 2))
grp = dist.new_group(members)
if r in members:
    t = torch.ones(2)
    dist.all_reduce(t, group=grp)
    assert (t == len(members)).all()
    assert dist.get_rank(grp) == members.index(r)
else:
    assert grp == dist.GroupMember.NON_GROUP_MEMBER
dist.barrier()

# object collectives ride on broadcast/allgather
objs = [None] * n
dist.all_gather_object(objs, {"rank": r})
assert [o["rank"] for o in objs] == list(range(n))

print(f"TORCH OK rank {r}", flush=True)
dist.barrier()
if "--init-env" in sys.argv and r == 0:
    # Rank 0 holds torch's TCPStore under env://; it leaves last, so that no other rank's
    # store client outlives its server.
    time.sleep(1)
dist.destroy_process_group()
