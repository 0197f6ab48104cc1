"""How an ftcomm process group comes to be: the ``ftcomm://`` init method and the backend's
creator, which torch calls for the default group and for every ``new_group``."""

from __future__ import annotations

import atexit
import datetime
import os
import secrets
import shutil
import socket
import subprocess
import tempfile
import time
import urllib.parse
from pathlib import Path
from typing import Iterator, Optional, Tuple

import torch.distributed as dist
import torch.distributed.distributed_c10d as c10d

import ftcomm
from ftcomm._torch import FtcommStore, ProcessGroupFtcomm

BACKEND = "ftcomm"

# The world communicator of this process: joined by the ftcomm:// init method, or by the
# creator of the default group under another init method.
_world: Optional[ftcomm.Communicator] = None
# Under env:// without FTCOMM_RENDEZVOUS, rank 0's own rendezvous server.
_server: Optional[subprocess.Popen] = None


def seconds(timeout: datetime.timedelta) -> float:
    return timeout.total_seconds()


def store_for(comm: ftcomm.Communicator, timeout: datetime.timedelta) -> FtcommStore:
    """The torch store of the communicator's current epoch (an empty namespace per epoch)."""
    return FtcommStore(comm, f"torch/{comm.epoch}/", timeout)


def world() -> ftcomm.Communicator:
    if _world is None:
        raise ftcomm.FailedPrecondition(
            "no ftcomm process group: call torch.distributed.init_process_group('ftcomm') first"
        )
    return _world


def ftcomm_handler(
    url: str, timeout: datetime.timedelta = c10d.default_pg_timeout, **kwargs
) -> Iterator[Tuple[dist.Store, int, int]]:
    """``ftcomm://[HOST:PORT][?rank=R&world_size=N]``: joins the job on the rendezvous (the
    address in the URL, else FTCOMM_RENDEZVOUS; rank and size from the URL, else FTCOMM_RANK /
    FTCOMM_WORLD_SIZE, else mpirun's). A replacement (FTCOMM_REPLACEMENT=1) waits here until the
    survivors' reconfigure admits it, and gets its rank and size from there. The store is the
    job's key-value store on the rendezvous, so no rank holds it."""
    global _world
    parsed = urllib.parse.urlparse(url)
    query = dict(urllib.parse.parse_qsl(parsed.query))
    comm = ftcomm.Communicator.create(
        rank=int(query.get("rank", -1)),
        size=int(query.get("world_size", -1)),
        rendezvous=parsed.netloc,
        op_timeout=seconds(timeout),
    )
    _world = comm
    yield store_for(comm, timeout), comm.rank, comm.size
    raise RuntimeError("the ftcomm:// init method cannot rendezvous a second time; reconfigure")


def _server_binary() -> str:
    candidates = [
        os.environ.get("FTCOMM_RENDEZVOUS_BIN", ""),
        # build/python/ftcomm/torch/_setup.py -> build/bin
        str(Path(__file__).resolve().parents[3] / "bin" / "ftcomm-rendezvous"),
        shutil.which("ftcomm-rendezvous") or "",
    ]
    for candidate in candidates:
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    raise ftcomm.NotFound(
        "ftcomm-rendezvous was not found (FTCOMM_RENDEZVOUS_BIN, build/bin, PATH); set "
        "FTCOMM_RENDEZVOUS to a running server instead"
    )


def _start_server(host: str, timeout: float) -> str:
    """Starts a rendezvous server beside rank 0 and returns the port it serves on."""
    global _server
    port_file = Path(tempfile.mkdtemp(prefix="ftcomm-rdzv-")) / "port"
    _server = subprocess.Popen(
        [_server_binary(), "--listen", f"{host}:0", "--port-file", str(port_file)],
        stdin=subprocess.DEVNULL,
    )
    atexit.register(_stop_server)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if port_file.exists() and port_file.read_text().strip():
            return port_file.read_text().strip()
        if _server.poll() is not None:
            break
        time.sleep(0.02)
    _stop_server()
    raise ftcomm.Unavailable(
        f"the rendezvous server beside rank 0 did not start within {timeout} s"
    )


def _stop_server() -> None:
    if _server is not None and _server.poll() is None:
        _server.terminate()
        try:
            _server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            _server.kill()


def _join_world(store: dist.Store, rank: int, size: int, timeout: datetime.timedelta) -> None:
    """The default group under env:// (or a store given to init_process_group): the ranks meet
    through torch's store. FTCOMM_RENDEZVOUS names the server; without it rank 0 starts one and
    publishes its address, which then dies with rank 0, like the TCPStore (use ftcomm:// for a
    job that survives rank 0)."""
    global _world
    address = os.environ.get("FTCOMM_RENDEZVOUS", "")
    job = os.environ.get("FTCOMM_JOB", "")
    if not address:
        if rank == 0:
            host = os.environ.get("MASTER_ADDR", "127.0.0.1")
            host_ip = socket.gethostbyname(host)
            port = _start_server(host_ip, seconds(timeout))
            store.set("ftcomm/rendezvous", f"{host_ip}:{port} torch-{secrets.token_hex(8)}")
        address, job = store.get("ftcomm/rendezvous").decode().split(" ")
    _world = ftcomm.Communicator.create(
        rank=rank, size=size, rendezvous=address, job=job, op_timeout=seconds(timeout)
    )


def create_process_group(
    opts: "dist.distributed_c10d._DistributedBackendOptions", pg_options: object
) -> ProcessGroupFtcomm:
    """torch's creator (extended API): the default group wraps the world communicator; a
    new_group's members make a child of it among themselves (the others never call here)."""
    if pg_options is not None:
        raise ftcomm.InvalidArgument("the ftcomm backend takes no pg_options")
    timeout = opts.timeout
    if not isinstance(timeout, datetime.timedelta):
        timeout = datetime.timedelta(seconds=float(timeout))
    ranks = list(opts.global_ranks_in_group)
    if not ranks:
        if _world is None or _world.size != opts.group_size or _world.rank != opts.group_rank:
            _join_world(opts.store, opts.group_rank, opts.group_size, timeout)
        return ProcessGroupFtcomm(world(), timeout)
    comm = world().create_group(ranks, f"torch.{opts.group_id}", timeout=seconds(timeout))
    return ProcessGroupFtcomm(comm, timeout)
