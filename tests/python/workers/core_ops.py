"""Every operation of ftcomm.Communicator on numpy arrays and CPU tensors, checked against the
values it must produce; errors must come as the right exception classes."""

import os

import numpy as np
import torch

import ftcomm

c = ftcomm.Communicator.create()
r, n = c.rank, c.size
assert c.epoch == 1 and c.name == "world" and c.healthy

# all_reduce, out of place and in place, every op of float and int types
a = np.arange(10, dtype=np.float32) + r
out = np.empty_like(a)
c.all_reduce(a, out)
assert np.array_equal(out, n * np.arange(10, dtype=np.float32) + sum(range(n)))
for op, expect in [("max", n - 1), ("min", 0), ("prod", 0), ("sum", sum(range(n)))]:
    x = np.full(7, r, dtype=np.int64)
    c.all_reduce(x, op=op)
    assert (x == expect).all(), (op, x)
x = np.full(3, r + 1.0)
c.all_reduce(x, op="avg")
assert np.allclose(x, (n + 1) / 2)
x = np.full(5, 1 << r, dtype=np.int32)
c.all_reduce(x, op="bor")
assert (x == (1 << n) - 1).all()

# broadcast, reduce, all_gather, reduce_scatter, all_to_all(_v), gather, scatter
t = torch.full((6,), float(r))
c.broadcast(t, root=n - 1)
assert (t == n - 1).all()
s = np.full(4, r + 1, dtype=np.float64)
rv = np.zeros(4)
c.reduce(s, rv, root=0)
assert r != 0 or (rv == n * (n + 1) / 2).all()
g = np.empty(3 * n, dtype=np.int32)
c.all_gather(np.full(3, r, dtype=np.int32), g)
assert np.array_equal(g, np.repeat(np.arange(n, dtype=np.int32), 3))
rs = np.empty(2, dtype=np.float32)
c.reduce_scatter(np.ones(2 * n, dtype=np.float32) * (r + 1), rs)
assert (rs == n * (n + 1) / 2).all()
send = np.arange(n, dtype=np.int64) + 100 * r
recv = np.empty(n, dtype=np.int64)
c.all_to_all(send, recv)
assert np.array_equal(recv, np.arange(n) * 100 + r)
send_counts = [d + 1 for d in range(n)]  # d+1 elements to rank d
recv_counts = [r + 1] * n
sv = np.concatenate([np.full(k, r, dtype=np.int32) for k in send_counts])
rv2 = np.empty(sum(recv_counts), dtype=np.int32)
c.all_to_all_v(sv, send_counts, rv2, recv_counts)
assert np.array_equal(rv2, np.repeat(np.arange(n, dtype=np.int32), r + 1))
groot = 1 % n
gathered = np.empty(2 * n, dtype=np.float32) if r == groot else None
c.gather(np.full(2, r, dtype=np.float32), gathered, root=groot)
assert r != groot or np.array_equal(gathered, np.repeat(np.arange(n, dtype=np.float32), 2))
piece = np.empty(2, dtype=np.float32)
c.scatter(np.repeat(np.arange(n, dtype=np.float32), 2) if r == 0 else None, piece, root=0)
assert (piece == r).all()
c.barrier()

# send/recv in a ring, async, with the received byte count
buf = np.empty(8, dtype=np.uint8)
w_recv = c.recv(buf, (r - 1) % n, tag=7, async_op=True)
c.send(np.full(5, r, dtype=np.uint8), (r + 1) % n, tag=7)
w_recv.wait(timeout=60)
assert w_recv.bytes == 5 and (buf[:5] == (r - 1) % n).all()

# async work: is_completed and wait
w = c.all_reduce(np.ones(1 << 20, dtype=np.float32), async_op=True)
w.wait()
assert w.is_completed() and w.status == "OK"

# errors are exception classes
for call, cls in [
    (lambda: c.all_reduce(np.ones(3, np.float32), np.ones(4, np.float32)), ftcomm.InvalidArgument),
    (lambda: c.all_reduce(np.ones(3, np.float32), op="avg-ish"), ftcomm.InvalidArgument),
    (lambda: c.all_reduce(np.ones(4)[::2]), ftcomm.InvalidArgument),
    (lambda: c.all_reduce([1, 2, 3]), ftcomm.InvalidArgument),
    (lambda: c.all_reduce(np.ones(3, np.complex64)), ftcomm.InvalidArgument),
    (lambda: c.broadcast(np.ones(3), root=n + 5), ftcomm.InvalidArgument),
    (lambda: c.all_reduce(np.ones(2, np.int32), op="avg"), ftcomm.InvalidArgument),
]:
    try:
        call()
    except cls:
        pass
    else:
        raise AssertionError(f"expected {cls.__name__}")
ro = np.ones(3)
ro.flags.writeable = False
try:
    c.all_reduce(ro)
    raise AssertionError("a read-only array was written")
except ftcomm.InvalidArgument:
    pass
assert c.healthy, "argument errors must not break the communicator"

# the job's store: set/get/wait/add/compare_set/remove/count
st = c.store()
st.set(f"py/{r}", b"v%d" % r)
vals = st.wait([f"py/{i}" for i in range(n)], timeout=60)
assert vals == [b"v%d" % i for i in range(n)]
assert st.get("py/missing") is None
c.barrier()
total = st.add("py/counter", r + 1)
c.barrier()
assert st.add("py/counter", 0) == n * (n + 1) // 2
if r == 0:
    assert st.compare_set("py/cas", b"", b"one") == b"one"
    assert st.compare_set("py/cas", b"two", b"three") == b"one"
    assert st.compare_set("py/cas", b"one", b"two") == b"two"
    assert st.count("py/") == n + 2
    assert st.remove("py/cas") and not st.remove("py/cas")
    try:
        st.add("py/0", 1)
        raise AssertionError("add on a non-integer value")
    except ftcomm.InvalidArgument:
        pass
c.barrier()

# split, split_ranks and create_group (members only)
half = c.split(color=r % 2, key=-r)
assert half.size == (n + 1 - r % 2) // 2 and half.rank == (half.size - 1 - r // 2)
evens = c.split_ranks(list(range(0, n, 2)))
assert (evens is None) == (r % 2 == 1)
if n > 1 and r in (0, n - 1):
    pair = c.create_group([n - 1, 0], "pair")
    assert pair.size == 2 and pair.rank == (0 if r == n - 1 else 1)
    v = np.full(2, r, dtype=np.int64)
    pair.all_reduce(v)
    assert (v == n - 1).all()
try:
    c.create_group([0, 0], "bad")
    raise AssertionError("a repeated rank")
except ftcomm.InvalidArgument:
    pass
c.barrier()

# RMA window: put into the right neighbour, fence, read
with ftcomm.Window.allocate(c, 64) as win:
    win.put(np.full(8, r, dtype=np.uint8), (r + 1) % n, 8 * r % 56)
    win.fence()
    left = (r - 1) % n
    assert (win.memory[8 * left % 56: 8 * left % 56 + 8] == left).all()
    prev = win.atomic_add(0, 56, 1)
    win.fence()
    if r == 0:
        assert int(win.memory[56:64].view(np.int64)[0]) == n
    assert 0 <= prev < n

path = c.dump_flight_recorder("python test")
assert os.path.isfile(path) and os.path.getsize(path) > 0, path
print(f"CORE OK rank {r}", flush=True)
