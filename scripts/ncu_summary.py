#!/usr/bin/python3
"""One line a kernel launch from Nsight Compute's CSV (ncu --csv --page details).

usage: scripts/ncu_summary.py FILE.csv ...

scripts/gpu-campaign's kernels step profiles the kernels farthest from their floors and
keeps ncu's CSV as it came (kernels/OP.csv); this reads it back and prints, for each
launch: the op (the file's name), the kernel, its grid and block, its duration, the
registers a thread, achieved and theoretical occupancy, the SM's and memory's
throughput (% of peak), the warp cycles per issued instruction, and the three stall
reasons that cost most cycles per issued instruction (the
smsp__average_warps_issue_stalled_*_per_issue_active ratios the step asks for). A metric
ncu did not give shows as '-'. The CSV's columns are found by their names, so a version
of ncu that adds columns still reads; a file without them is named on stderr and makes
the exit status 1 (the step keeps the CSV either way).
"""
import csv
import os
import re
import sys

# Columns of the details page, and the metrics a line shows (ncu's names).
KERNEL, ID, METRIC, UNIT, VALUE = "Kernel Name", "ID", "Metric Name", "Metric Unit", "Metric Value"
GRID, BLOCK = "Grid Size", "Block Size"
SHOWN = [
    ("regs", "Registers Per Thread"),
    ("occ%", "Achieved Occupancy"),
    ("theor%", "Theoretical Occupancy"),
    ("sm%", "Compute (SM) Throughput"),
    ("mem%", "Memory Throughput"),
    ("dram%", "DRAM Throughput"),
    ("cyc/issue", "Warp Cycles Per Issued Instruction"),
]
STALL = re.compile(r"smsp__average_warps_issue_stalled_(.+)_per_issue_active(\.ratio)?$")
MICROSECONDS = {"nsecond": 1e-3, "ns": 1e-3, "usecond": 1.0, "us": 1.0, "msecond": 1e3,
                "ms": 1e3, "second": 1e6, "s": 1e6}


def number(text):
    """ncu's value as a float ('1,316.02' included), or None."""
    try:
        return float(text.replace(",", ""))
    except ValueError:
        return None


def short_kernel(name):
    """The kernel's name without its return type, its parameters' types and the
    anonymous namespace: window_kernel<DenseCounts<false>,EntropySource,EntropySink>."""
    name = name.replace("(anonymous namespace)::", "")
    name = re.sub(r"^void ", "", name)
    if name.endswith(")"):  # the parameters: the last balanced (...)
        depth = 0
        for i in range(len(name) - 1, -1, -1):
            depth += {")": 1, "(": -1}.get(name[i], 0)
            if depth == 0:
                name = name[:i]
                break
    return name.replace(" ", "")


def launches(path):
    """[(kernel, grid, block, {metric: [(unit, value), ...]})] in the file's order: a
    metric's rows in order (two sections may name one metric: Speed Of Light's "Memory
    Throughput" in %, Memory Workload Analysis's in Gbyte/second)."""
    with open(path, newline="") as f:
        rows = [row for row in csv.reader(f) if row]
    header = next((i for i, row in enumerate(rows) if KERNEL in row and METRIC in row), None)
    if header is None:
        raise ValueError(f"{path}: no header with '{KERNEL}' and '{METRIC}'")
    names = rows[header]
    col = {name: names.index(name) for name in (KERNEL, METRIC, UNIT, VALUE) if name in names}
    if len(col) < 4:
        raise ValueError(f"{path}: the header lacks {sorted({KERNEL, METRIC, UNIT, VALUE} - set(col))}")
    ident = names.index(ID) if ID in names else None
    grid = names.index(GRID) if GRID in names else None
    block = names.index(BLOCK) if BLOCK in names else None
    found, order = {}, []
    for row in rows[header + 1:]:
        if len(row) < len(names):
            continue
        key = (row[ident] if ident is not None else "", row[col[KERNEL]])
        if key not in found:
            found[key] = (short_kernel(row[col[KERNEL]]), row[grid] if grid is not None else "-",
                          row[block] if block is not None else "-", {})
            order.append(key)
        found[key][3].setdefault(row[col[METRIC]], []).append((row[col[UNIT]], row[col[VALUE]]))
    return [found[key] for key in order]


def value_of(metrics, metric, percent):
    """The metric's first value, its first in % for a % column; None when it has none."""
    rows = metrics.get(metric, [])
    if percent:
        rows = [r for r in rows if r[0].strip() == "%"]
    return number(rows[0][1]) if rows else None


def line(op, kernel, grid, block, metrics):
    unit, value = (metrics.get("Duration") or [("", "")])[0]
    duration = number(value)
    scale = MICROSECONDS.get(unit.strip().lower())
    micros = f"{duration * scale:.1f}" if duration is not None and scale else "-"
    cells = [op, kernel, grid, block, micros]
    for short, metric in SHOWN:
        value = value_of(metrics, metric, short.endswith("%"))
        cells.append("-" if value is None else f"{value:g}")
    stalls = sorted(((number(rows[0][1]) or 0.0, m.group(1)) for name, rows in metrics.items()
                     for m in [STALL.match(name)] if m), reverse=True)
    cells.append(", ".join(f"{reason} {cycles:.2f}" for cycles, reason in stalls[:3] if cycles > 0)
                 or "-")
    return cells


def main(paths):
    if not paths:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    table, failed = [], 0
    for path in paths:
        op = os.path.splitext(os.path.basename(path))[0]
        try:
            for kernel, grid, block, metrics in launches(path):
                table.append(line(op, kernel, grid, block, metrics))
        except (OSError, ValueError) as e:
            print(f"ncu_summary: {e}", file=sys.stderr)
            failed = 1
    head = ["op", "kernel", "grid", "block", "us"] + [short for short, _ in SHOWN] + \
           ["top stalls (cycles per issued instruction)"]
    widths = [max(len(str(row[i])) for row in [head] + table) for i in range(len(head) - 1)]
    print("Nsight Compute, one line a launch (a measurement of this GPU; the first launch of "
          "each op includes its warm-up)")
    for row in [head] + table:
        print("  ".join(str(c).ljust(w) for c, w in zip(row, widths)) + "  " + row[-1])
    return failed


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
