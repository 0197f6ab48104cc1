#!/usr/bin/env python3
"""Turns scripts/bench-report's JSON lines into Markdown tables (stdout) and gnuplot data files.

Each row: busbw of ftcomm, OpenMPI and Gloo (for allreduce the better of Gloo's ring and
halving-doubling), and ftcomm's busbw over each peer's (above 1: ftcomm is faster).
"""
import json
import pathlib
import sys

out = pathlib.Path(sys.argv[1])
NAMES = {"auto": "shared memory (FTCOMM_TRANSPORT=auto)", "ucx": "UCX (FTCOMM_TRANSPORT=ucx)",
         "allocmem": "shared memory, buffers from ftcomm::allocMem (--memory allocmem)",
         "rewrite": "shared memory, inputs rewritten before every call (--rewrite-inputs)"}


def gloo_of(row):
    candidates = [row[k] for k in ("gloo_busbw_gbs", "gloo_ring_busbw_gbs", "gloo_hd_busbw_gbs")
                  if k in row]
    return max(candidates) if candidates else 0.0


def size(b):
    for unit, scale in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if b >= scale and b % scale == 0:
            return f"{b // scale} {unit}"
    return f"{b} B"


for path in sorted(out.glob("*.jsonl")):
    transport, ranks = path.stem.split("-")
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    for op in dict.fromkeys(r["op"] for r in rows):
        mine = [r for r in rows if r["op"] == op]
        print(f"\n#### {op}, {ranks} ranks, {NAMES.get(transport, transport)}\n")
        print("| bytes | ftcomm GB/s | OpenMPI GB/s | Gloo GB/s | vs OpenMPI | vs Gloo | ftcomm us |")
        print("|---:|---:|---:|---:|---:|---:|---:|")
        with open(out / f"{op}-{transport}-{ranks}.dat", "w") as dat:
            for r in mine:
                ft, mpi, gloo = r["ftcomm_busbw_gbs"], r["mpi_busbw_gbs"], gloo_of(r)
                vs_mpi = f"{ft / mpi:.2f}" if mpi else "-"
                vs_gloo = f"{ft / gloo:.2f}" if gloo else "-"
                gloo_text = f"{gloo:.3f}" if gloo else "-"
                print(f"| {size(r['bytes'])} | {ft:.3f} | {mpi:.3f} | {gloo_text} | "
                      f"{vs_mpi} | {vs_gloo} | {r['ftcomm_us']:.1f} |")
                dat.write(f"{r['bytes']} {ft} {mpi} {gloo}\n")
