#!/usr/bin/env python3
"""dist.all_reduce on CPU float32 tensors from 8 B to 64 MiB: torch on the "ftcomm" backend and
on "gloo" in the same launch (the same processes, alternating within each round), with the C++
ftcomm-bench figures of the same sizes beside them.

    python3 bench/torch_allreduce.py --np 2 [--max-bytes 64M] [--rounds 5]

It launches itself under ftcomm-run (build/bin, else PATH) with build/python on PYTHONPATH,
then ftcomm-bench. Times are per call, medians over rounds; "binding" is torch+ftcomm over the
C++ figure (microseconds at small sizes, percent from 1 MiB), and "vs gloo" is gloo's time over
torch+ftcomm's.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Dict, List

ROOT = Path(__file__).resolve().parents[1]
UNITS = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}


def parse_bytes(text: str) -> int:
    text = text.upper().removesuffix("IB").removesuffix("B")
    return int(text[:-1]) * UNITS[text[-1]] if text[-1] in UNITS else int(text)


def sizes(lo: int, hi: int) -> List[int]:
    out, size = [], lo
    while size <= hi:
        out.append(size)
        size *= 8 if size < (1 << 20) else 4
    return out


def iterations(size: int) -> int:
    return max(5, min(2000, (64 << 20) // max(size, 1) // 4))


def worker(args: argparse.Namespace) -> None:
    import torch
    import torch.distributed as dist

    import ftcomm.torch  # noqa: F401 - registers the backend

    dist.init_process_group("ftcomm", init_method="ftcomm://")
    groups = {"ftcomm": dist.distributed_c10d._get_default_group(),
              "gloo": dist.new_group(backend="gloo")}
    for size in sizes(args.min_bytes, args.max_bytes):
        tensor = torch.ones(max(1, size // 4))
        n = iterations(size)
        times: Dict[str, List[float]] = {name: [] for name in groups}
        for _ in range(args.rounds):
            for name, group in groups.items():
                for _ in range(max(1, n // 10)):
                    dist.all_reduce(tensor, group=group)
                dist.barrier(group=group)
                start = time.perf_counter()
                for _ in range(n):
                    dist.all_reduce(tensor, group=group)
                times[name].append((time.perf_counter() - start) / n * 1e6)
        if dist.get_rank() == 0:
            row = {"bytes": size, **{f"{k}_us": statistics.median(v) for k, v in times.items()}}
            print("ROW " + json.dumps(row), flush=True)
    dist.destroy_process_group()


def tool(name: str) -> str:
    built = ROOT / "build" / "bin" / name
    return str(built) if built.exists() else (shutil.which(name) or name)


def driver(args: argparse.Namespace) -> None:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT / "build" / "python"),
                                                      env.get("PYTHONPATH", "")]))
    env.setdefault("GLOO_SOCKET_IFNAME", "lo")
    span = ["--min-bytes", str(args.min_bytes), "--max-bytes", str(args.max_bytes)]
    torch_run = subprocess.run(
        [tool("ftcomm-run"), "-np", str(args.np), "--", sys.executable, __file__, "--worker",
         "--rounds", str(args.rounds), *span],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, check=False)
    rows = [json.loads(line[4:]) for line in torch_run.stdout.splitlines()
            if line.startswith("ROW ")]
    if torch_run.returncode != 0 or not rows:
        sys.exit(f"the torch run failed:\n{torch_run.stdout}")
    bench = subprocess.run(
        [tool("ftcomm-run"), "-np", str(args.np), "--", tool("ftcomm-bench"), "--op", "allreduce",
         "--json", *span], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        check=False)
    cpp = {}
    for line in bench.stdout.splitlines():
        if line.startswith("{"):
            entry = json.loads(line)
            cpp[entry["bytes"]] = entry["ftcomm_us"]
    print(f"# {args.np} ranks, float32 sum, medians of {args.rounds} rounds; "
          f"ftcomm-bench: {next((l for l in bench.stdout.splitlines() if 'tuning' in l), '?')}")
    print(f"{'bytes':>10} {'torch+ftcomm us':>16} {'C++ ftcomm us':>14} {'binding':>10} "
          f"{'torch+gloo us':>14} {'vs gloo':>8}")
    for row in rows:
        size, ours, gloo = row["bytes"], row["ftcomm_us"], row["gloo_us"]
        base = cpp.get(size)
        if base is None:
            binding = "-"
        elif size >= (1 << 20):
            binding = f"{(ours / base - 1) * 100:+.1f}%"
        else:
            binding = f"{ours - base:+.1f} us"
        print(f"{size:>10} {ours:>16.2f} {base if base is not None else float('nan'):>14.2f} "
              f"{binding:>10} {gloo:>14.2f} {gloo / ours:>7.2f}x")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--np", type=int, default=2)
    p.add_argument("--min-bytes", type=parse_bytes, default=8)
    p.add_argument("--max-bytes", type=parse_bytes, default=64 << 20)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args()
    worker(args) if args.worker else driver(args)


if __name__ == "__main__":
    main()
