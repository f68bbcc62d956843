#!/usr/bin/env bash
# tests/peers/test-peers-gpu-rehearsal.sh PLUME WORKDIR: benchmarks/peers_gpu.py's
# --rehearse-on-cpu end to end, so that a mistake in it shows here and not in a scarce
# GPU window. Two tiny traces in bench_pool --write-trace's format go into WORKDIR/traces;
# the script runs on the host (numpy and scipy standing in for cupy and cupyx, its own
# stand-ins for torch and the pools, PLUME with --backend host) on 64x64 and 128x96
# inputs and must exit 0; its JSON must say "rehearsal": true, hold every op at every
# size with its check ok, and both allocators' figures for each trace. Exit 77 (skip)
# when /usr/bin/python3 lacks numpy or scipy.
set -u
python=/usr/bin/python3
script="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)/benchmarks/peers_gpu.py"
plume=$1
work=$2

if ! "$python" -c 'import numpy, scipy.ndimage' 2>/dev/null; then
  echo "peers_gpu_rehearsal: skipped: $python lacks numpy or scipy"
  exit 77
fi
rm -rf "$work"
mkdir -p "$work/traces"

# A steady state of three buffers per frame, and random sizes freed out of order.
{
  echo "# plume-pool-trace 1"
  echo "# workload steady_state frames 4"
  id=0
  for _ in 1 2 3 4; do
    echo "a $((id + 1)) 1048576"
    echo "a $((id + 2)) 262144"
    echo "f $((id + 1))"
    echo "a $((id + 3)) 4096"
    echo "f $((id + 3))"
    echo "f $((id + 2))"
    id=$((id + 3))
  done
} >"$work/traces/steady_state-frames4.trace"
cat >"$work/traces/random_allocations-max4096-n6.trace" <<'TRACE'
# plume-pool-trace 1
# workload random_allocations max_size 4096 n 6 live_cap 4294967296 seed 7
a 1 17
a 2 4096
f 1
a 3 1
a 4 1000
f 3
a 5 513
f 2
f 5
a 6 4095
f 6
f 4
TRACE

export PYTHONPYCACHEPREFIX=$work/pycache # py_compile's output, not beside the sources
"$python" -m py_compile "$script" || { echo "FAIL: $script does not compile" >&2; exit 1; }
"$python" "$script" --rehearse-on-cpu --quick --runs 3 --sizes 64x64,128x96 \
  --plume "$plume" --traces "$work/traces" --json "$work/out.json" --workdir "$work/npy" \
  >"$work/stdout.txt" 2>"$work/stderr.txt"
rc=$?
cat "$work/stdout.txt"
if [[ $rc != 0 ]]; then
  echo "FAIL: peers_gpu.py --rehearse-on-cpu: exit $rc; stderr:" >&2
  cat "$work/stderr.txt" >&2
  exit 1
fi

"$python" - "$work/out.json" <<'CHECK'
import json
import sys

with open(sys.argv[1]) as f:
    data = json.load(f)
problems = []
if data.get("benchmark") != "peers_gpu" or data.get("schema") != 1:
    problems.append(f"benchmark/schema: {data.get('benchmark')!r}/{data.get('schema')!r}")
if data.get("rehearsal") is not True:
    problems.append("rehearsal is not true")
if data.get("errors"):
    problems.append(f"errors: {data['errors']}")
if data.get("skipped"):
    problems.append(f"skipped: {data['skipped']}")
cases = {(e["op"], e["size"]) for e in data["ops"]}
wanted = {(op, size) for op in ("conv2d", "sobel", "label") for size in ("64x64", "128x96")}
if cases != wanted:
    problems.append(f"op cases {sorted(cases)}, expected {sorted(wanted)}")
for e in data["ops"]:
    name = f"{e['op']} {e['size']}"
    if not e["check"]["ok"]:
        problems.append(f"{name}: check not ok: {e['check']['detail']}")
    if not e["plume"] or e["plume"].get("runs") != 3:
        problems.append(f"{name}: no plume timing of 3 runs: {e['plume']}")
    for peer, timing in e["peers"].items():
        if any(timing.get(way, {}).get("runs") != 3 for way in ("sync", "events")):
            problems.append(f"{name} {peer}: sync and events timings missing: {timing}")
traces = {p["trace"]: p for p in data["pools"]}
if set(traces) != {"steady_state-frames4.trace", "random_allocations-max4096-n6.trace"}:
    problems.append(f"traces: {sorted(traces)}")
expect = {"steady_state-frames4.trace": (12, 1048576 + 262144),
          "random_allocations-max4096-n6.trace": (6, 4096 + 1000 + 513)}
for name, p in traces.items():
    blocks, peak = expect.get(name, (None, None))
    if (p["blocks"], p["in_use_peak_bytes"]) != (blocks, peak):
        problems.append(f"{name}: blocks {p['blocks']}, peak {p['in_use_peak_bytes']}, "
                        f"expected {blocks}, {peak}")
    for allocator in ("torch_caching", "cupy_pool"):
        result = p["allocators"].get(allocator)
        if not result or "error" in result or result.get("pairs") != blocks:
            problems.append(f"{name} {allocator}: {result}")
        elif not result["peak_reserved_bytes"] >= peak:
            problems.append(f"{name} {allocator}: reserved {result['peak_reserved_bytes']} "
                            f"below the peak in use {peak}")
for problem in problems:
    print(f"FAIL: {problem}", file=sys.stderr)
print(f"peers_gpu_rehearsal: {len(data['ops'])} op cases, {len(traces)} traces, "
      f"{len(problems)} problems")
sys.exit(1 if problems else 0)
CHECK
