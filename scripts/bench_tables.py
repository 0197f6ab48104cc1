#!/usr/bin/env python3
"""Turns scripts/bench-report's JSON lines into Markdown tables (stdout), gnuplot data files and
summary.md, the grids of ratios at chosen sizes that docs/BENCHMARKS.md opens with.

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
         "rewrite": "shared memory, inputs rewritten before every call (--rewrite-inputs)",
         "fresh": "shared memory, inputs rewritten outside the timed part (--fresh-inputs)"}
OPS = ["allreduce", "broadcast", "allgather", "reducescatter", "alltoall", "reduce"]
MPI_SIZES = [8, 4 << 10, 64 << 10, 1 << 20, 2 << 20, 4 << 20, 8 << 20, 16 << 20, 64 << 20]
GLOO_SIZES = [8, 4 << 10, 64 << 10, 1 << 20, 16 << 20, 64 << 20]


def gloo_of(row):
    candidates = [row[k] for k in ("gloo_busbw_gbs", "gloo_ring_busbw_gbs", "gloo_hd_busbw_gbs")
                  if k in row]
    return max(candidates) if candidates else 0.0


def size(b):
    for unit, scale in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if b >= scale and b % scale == 0:
            return f"{b // scale} {unit}"
    return f"{b} B"


def median(values):
    return statistics.median(values) if values else 0.0


class Cell:
    """One collective at one size: its runs' rows, and their medians."""

    def __init__(self, rows):
        self.runs = len(rows)
        self.ft = median([r["ftcomm_busbw_gbs"] for r in rows])
        self.mpi = median([r["mpi_busbw_gbs"] for r in rows])
        self.gloo = median([gloo_of(r) for r in rows])
        self.us = median([r["ftcomm_us"] for r in rows])
        self.vs_mpi = median([r["ftcomm_busbw_gbs"] / r["mpi_busbw_gbs"]
                              for r in rows if r["mpi_busbw_gbs"]])
        self.vs_gloo = median([r["ftcomm_busbw_gbs"] / gloo_of(r) for r in rows if gloo_of(r)])


def ratio(value):
    return f"{value:.2f}" if value else "-"


def load(path):
    """{op: {bytes: Cell}}, in the file's order."""
    by_op = {}
    for line in path.read_text().splitlines():
        if line.strip():
            r = json.loads(line)
            by_op.setdefault(r["op"], {}).setdefault(r["bytes"], []).append(r)
    return {op: {b: Cell(rows) for b, rows in sizes.items()} for op, sizes in by_op.items()}


sets = {}  # (transport, ranks) -> load()
for path in sorted(out.glob("*.jsonl")):
    transport, ranks = path.stem.split("-")
    cells = sets[(transport, int(ranks))] = load(path)
    for op, sizes in cells.items():
        runs = max(c.runs for c in sizes.values())
        heading = f"{op}, {ranks} ranks, {NAMES.get(transport, transport)}"
        if runs > 1:
            heading += f", median of {runs} runs"
        print(f"\n#### {heading}\n")
        print("| bytes | ftcomm GB/s | OpenMPI GB/s | Gloo GB/s | vs OpenMPI | vs Gloo | ftcomm us |")
        print("|---:|---:|---:|---:|---:|---:|---:|")
        with open(out / f"{op}-{transport}-{ranks}.dat", "w") as dat:
            for b, c in sizes.items():
                gloo_text = f"{c.gloo:.3f}" if c.gloo else "-"
                print(f"| {size(b)} | {c.ft:.3f} | {c.mpi:.3f} | {gloo_text} | "
                      f"{ratio(c.vs_mpi)} | {ratio(c.vs_gloo)} | {c.us:.1f} |")
                dat.write(f"{b} {c.ft} {c.mpi} {c.gloo}\n")


def grid(transport, peer, sizes):
    lines = ["| | " + " | ".join(size(s) for s in sizes) + " |", "|---" * (len(sizes) + 1) + "|"]
    for ranks in (2, 4):
        cells = sets.get((transport, ranks))
        if cells is None:
            continue
        for op in OPS:
            row = cells.get(op, {})
            values = [ratio(getattr(row[s], "vs_" + peer)) if s in row else "-" for s in sizes]
            name = f"{op}, {ranks} ranks" + (", vs Gloo" if peer == "gloo" else "")
            lines.append(f"| {name} | " + " | ".join(values) + " |")
    return "\n".join(lines)


with open(out / "summary.md", "w") as summary:
    for transport in dict.fromkeys(t for t, _ in sets):
        for peer, label, sizes in (("mpi", "OpenMPI", MPI_SIZES), ("gloo", "Gloo", GLOO_SIZES)):
            summary.write(f"\n#### {NAMES.get(transport, transport)}: ftcomm / {label}\n\n")
            summary.write(grid(transport, peer, sizes) + "\n")
