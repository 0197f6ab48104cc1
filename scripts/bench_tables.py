#!/usr/bin/env python3
"""Turns scripts/bench-report's JSON lines into Markdown tables (stdout) and gnuplot data files.

Each row: busbw of ftcomm, OpenMPI and Gloo (for allreduce the better of Gloo's ring and
halving-doubling), and ftcomm's busbw over each peer's (above 1: ftcomm is faster).

Where a file holds several runs of a collective (bench-report's REPEATS), each figure is the
median over the runs, and each ratio the median of the runs' own ratios: a run compares the
libraries side by side at one moment, and the machine's speed moves between runs.
"""
import json
import pathlib
import statistics
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
        runs = {}  # bytes -> that size's rows, one per run
        for r in rows:
            if r["op"] == op:
                runs.setdefault(r["bytes"], []).append(r)
        count = max(len(v) for v in runs.values())
        heading = f"{op}, {ranks} ranks, {NAMES.get(transport, transport)}"
        if count > 1:
            heading += f", median of {count} runs"
        print(f"\n#### {heading}\n")
        print("| bytes | ftcomm GB/s | OpenMPI GB/s | Gloo GB/s | vs OpenMPI | vs Gloo | ftcomm us |")
        print("|---:|---:|---:|---:|---:|---:|---:|")
        with open(out / f"{op}-{transport}-{ranks}.dat", "w") as dat:
            for b, same in runs.items():
                def median(values):
                    return statistics.median(values) if values else 0.0
                ft = median([r["ftcomm_busbw_gbs"] for r in same])
                mpi = median([r["mpi_busbw_gbs"] for r in same])
                gloo = median([gloo_of(r) for r in same])
                us = median([r["ftcomm_us"] for r in same])
                vs_mpi = median([r["ftcomm_busbw_gbs"] / r["mpi_busbw_gbs"]
                                 for r in same if r["mpi_busbw_gbs"]])
                vs_gloo = median([r["ftcomm_busbw_gbs"] / gloo_of(r) for r in same if gloo_of(r)])
                vs_mpi_text = f"{vs_mpi:.2f}" if vs_mpi else "-"
                vs_gloo_text = f"{vs_gloo:.2f}" if vs_gloo else "-"
                gloo_text = f"{gloo:.3f}" if gloo else "-"
                print(f"| {size(b)} | {ft:.3f} | {mpi:.3f} | {gloo_text} | "
                      f"{vs_mpi_text} | {vs_gloo_text} | {us:.1f} |")
                dat.write(f"{b} {ft} {mpi} {gloo}\n")
