#!/usr/bin/env python3
"""scripts/gpu_campaign_tables.py: the GPU tables of the docs (docs/benchmarks.md,
docs/gpu-campaign.md) from one campaign's results.

    python3 scripts/gpu_campaign_tables.py [--estimates DIR] benchmarks/results/<date>-<gpu>-<commit>

The folder is what `scripts/gpu-campaign import` made (or a run's build-gpu-run/results):
core/ (device.log, suites/status, bench_ops/<op>.json, bench_pipeline.json,
bench_pool.json, bench_matmul.json, peers.json) and sanitize/ (sanitize/status). Each
table is printed as Markdown, ready to paste, from the JSON alone: the docs' GPU
figures come from these files and nothing else. A part that is missing (a step that
failed or never ran) is said to be missing, never filled in. Standard library only.

Beside bench_ops' measured times go the CUDA emulator's estimates of the same workloads
on the same device and size, from DIR (default benchmarks/estimates/, which
scripts/emulated-estimates writes): the measured time over the estimate is how far the
model (emu/count/report.cpp) is off, workload by workload.
"""

import functools
import glob
import json
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError) as error:
        print(f"(missing or unreadable: {os.path.basename(path)}: {error})\n")
        return None


def table(header, rows):
    print("| " + " | ".join(header) + " |")
    print("| " + " | ".join("---" if i == 0 else "---:" for i in range(len(header))) + " |")
    for row in rows:
        print("| " + " | ".join(str(cell) for cell in row) + " |")
    print()


def fmt(value, digits=3):
    if value is None:
        return "n/a"
    if isinstance(value, float):
        return f"{value:.{digits}g}" if abs(value) < 10 ** digits else f"{value:,.0f}"
    return str(value)


def lines_of(path):
    try:
        with open(path) as f:
            return [line.rstrip("\n") for line in f]
    except OSError:
        return None


def device(core):
    log = lines_of(os.path.join(core, "device.log")) or []
    picked = [l for l in log if l.startswith(("date:", "name,")) or ", " in l and "MiB" in l
              or l.startswith(("Cuda compilation", "Build cuda", "python", "torch", "cupy"))]
    print("### Device\n")
    if any("on the CUDA emulator" in l for l in log):
        # scripts/gpu-campaign's rehearsal on the emulator: import refuses it; say it here too.
        print("**A rehearsal on the CUDA emulator, on a CPU: no figure below is a GPU's; none "
              "goes into the docs or benchmarks/results.**\n")
    print("\n".join(f"    {l}" for l in picked) or "    (no device.log)")
    print()


def statuses(path, what):
    lines = lines_of(path)
    if lines is None:
        print(f"{what}: no status file (the step did not run)\n")
        return
    verdicts = {}
    for line in lines:
        verdicts.setdefault(line.split(" ", 1)[0], []).append(line)
    counts = ", ".join(f"{len(v)} {k.lower()}" for k, v in sorted(verdicts.items()))
    print(f"{what}: {counts}\n")
    for key, items in sorted(verdicts.items()):
        if key not in ("PASS", "CLEAN"):
            for item in items:
                print(f"- {item}")
    print()


def bench_ops(core):
    files = sorted(glob.glob(os.path.join(core, "bench_ops", "*.json")))
    print("### bench_ops (event-timed means; floor from the device's bandwidth and FMA rate)\n")
    if not files:
        print("(no bench_ops JSON)\n")
        return
    rows, fusion = [], []
    for path in files:
        doc = load(path)
        if not doc:
            continue
        for r in doc.get("results", []):
            rows.append((f"{r['op']} {r.get('dtype', '')} {r.get('params', '')}".strip(), r["size"],
                         fmt(r.get("mean_us")), fmt(r.get("cv"), 2), fmt(r.get("gbps")),
                         fmt(r.get("gflop_per_s")), fmt(r.get("of_floor"), 3), r.get("bound", "")))
        for f in doc.get("fusion", []) or []:
            if all(f.get("size") != seen.get("size") for seen in fusion):
                fusion.append(f)  # --op fused and --op unfused both measure the pairs
    table(("op", "size", "mean µs", "CV", "GB/s", "GFLOP/s", "of_floor", "bound"), rows)
    if fusion:
        print("fusion (median of unfused / fused pairs):\n")
        table(("size", "fused µs", "unfused µs", "speedup"),
              [(f.get("size"), fmt(f.get("fused_median_us")), fmt(f.get("unfused_median_us")),
                fmt(f.get("speedup"))) for f in fusion])


def estimates_for(folder, device_name):
    """The emulated estimates for the device measured, by (workload, size): the section of
    every OUT/<device>-<size>.json whose device is the one named, with the commit it was
    counted at (the section's own, else the file's); and those commits. A device is matched by its model (H100, H200) in the
    measured name."""
    by_workload, commits = {}, set()
    for path in sorted(glob.glob(os.path.join(folder, "*.json"))):
        try:
            with open(path) as f:
                document = json.load(f)
            model = document["device"]["name"].split()[0]
        except (OSError, ValueError, KeyError, IndexError, AttributeError):
            continue
        if model.lower() not in device_name.lower():
            continue
        for section in document.get("sections", []):
            commit = section.get("commit", document.get("commit", "unknown"))[:12]
            commits.add(commit)
            workload, _, size = section["label"].rpartition(" ")
            by_workload[(workload, size)] = (section, commit)
    return by_workload, commits


# What every kernel's estimate depends on besides its own source and the headers it
# includes: the emulator's counting model.
COUNTING_MODEL = "emu/count"
INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]+"([^"]+)"', re.M)


@functools.lru_cache(maxsize=None)
def git_text(commit, path):
    """path's text at commit, or None where the commit does not have it."""
    run = subprocess.run(["git", "-C", ROOT, "show", f"{commit}:{path}"], capture_output=True)
    return run.stdout.decode("utf-8", "replace") if run.returncode == 0 else None


def with_includes(commit, paths):
    """paths and the repository's files they include at commit, transitively (a quoted
    include is looked for from the root, include/ and the including file's folder)."""
    seen, pending = set(), list(paths)
    while pending:
        path = os.path.normpath(pending.pop())
        if path in seen:
            continue
        seen.add(path)
        text = git_text(commit, path)
        for name in INCLUDE.findall(text or ""):
            for candidate in (name, os.path.join("include", name),
                              os.path.join(os.path.dirname(path), name)):
                if git_text(commit, os.path.normpath(candidate)) is not None:
                    pending.append(candidate)
                    break
    return seen


def kernels_changed(estimated, measured, section, cache={}):
    """Whether a section's kernels (their sources, the files those include, the counting
    model) differ between the estimate's commit and the measured one: "same", "changed",
    or "unknown" (no git, or a commit it does not have). A header that another kernel
    includes, changed, leaves this one "same"."""
    sources = sorted({k["site"].split(":")[0] for k in section.get("kernels", [])})
    key = (estimated, measured, tuple(sources))
    if key not in cache:
        a, b = estimated.removesuffix("-dirty"), measured.removesuffix("-dirty")
        try:
            files = sorted(with_includes(a, sources) | with_includes(b, sources))
            run = subprocess.run(["git", "-C", ROOT, "diff", "--quiet", a, b, "--", *files,
                                  COUNTING_MODEL], capture_output=True)
            cache[key] = {0: "same", 1: "changed"}.get(run.returncode, "unknown")
        except OSError:
            cache[key] = "unknown"
    return cache[key]


def measured_beside_estimates(core, folder):
    """bench_ops' measured means beside the emulated estimates of the same workloads."""
    print("### Measured beside the emulated estimate (bench_ops; estimates from "
          f"{os.path.relpath(folder, ROOT)})\n")
    documents = [d for d in (load(p) for p in sorted(glob.glob(os.path.join(core, "bench_ops",
                                                                               "*.json")))) if d]
    if not documents:
        print("(no bench_ops JSON)\n")
        return
    measured_device = documents[0].get("device", "")
    measured_commit = documents[0].get("commit", "unknown")
    by_workload, commits = estimates_for(folder, measured_device)
    if not by_workload:
        print(f"(no estimate for {measured_device or 'this device'}: scripts/emulated-estimates "
              "counts H100 and H200)\n")
        return
    rows = []
    for document in documents:
        for r in document.get("results", []):
            found = by_workload.get((r["op"], r["size"]))
            if not found or not r.get("mean_us"):
                continue
            section, commit = found
            e = section["estimate"]
            estimate_us = e["estimate_s"] * 1e6
            rows.append((r["op"], r["size"], fmt(r["mean_us"]), fmt(r.get("min_us")),
                         fmt(estimate_us), e["bound"], fmt(e["floor_s"] * 1e6),
                         fmt(r["mean_us"] / estimate_us, 2),
                         kernels_changed(commit, measured_commit, section)))
    if not rows:
        print("(no measured workload and size has an estimate)\n")
        return
    print(f"Estimates counted at {', '.join(sorted(commits))}; measured at {measured_commit}. "
          "The estimate is the largest of the DRAM, L2, shared-memory and atomic bounds plus "
          "one launch each (emu/README.md); measured / estimate above 1 is what it does not "
          "model (latency, occupancy, instruction issue).\n")
    changed = sum(row[-1] == "changed" for row in rows)
    if changed:
        print(f"**{changed} of these rows compare kernels that changed between the estimate's "
              "commit and the measured one (their sources, the files those include or the "
              "counting model): run scripts/emulated-estimates again for them.**\n")
    table(("workload", "size", "measured mean µs", "min µs", "estimate µs", "bound",
           "floor µs", "measured / estimate", "kernels since"), rows)


def bench_pipeline(core):
    doc = load(os.path.join(core, "bench_pipeline.json"))
    print("### bench_pipeline --quick\n")
    if not doc:
        return
    rows = [(r["config"], r["streams"], r["frame"], r["dtype"], fmt(r.get("frames_per_s")),
             fmt(r.get("latency_p50_ms")), fmt(r.get("latency_p99_ms")),
             fmt(r.get("speedup_vs_naive")), fmt(r.get("pool_hit_rate"), 2),
             fmt(r.get("overlap"), 2), r.get("graph_replays", ""), r.get("note", ""))
            for r in doc.get("results", []) if not r.get("skipped")]
    table(("config", "K", "frame", "dtype", "frames/s", "p50 ms", "p99 ms", "× naive", "hit rate",
           "overlap", "graph replays", "note"), rows)
    for g in doc.get("goals", []):
        print(f"- {g.get('goal')} ({g.get('case', '')}): {g.get('verdict')}; {g.get('detail', '')}")
    print()


def bench_pool(core):
    doc = load(os.path.join(core, "bench_pool.json"))
    peers = load(os.path.join(core, "peers.json")) or {}
    print("### bench_pool --quick (median ns per alloc+free pair; reserved over in use)\n")
    if not doc:
        return
    by_case = {}
    for r in doc.get("results", []):
        key = (r["workload"], r.get("max_size"), r.get("n"), r.get("threads", 0),
               r.get("stream_waits", -1))
        by_case.setdefault(key, {})[r["mode"]] = r
    peer_by_trace = {}
    for p in peers.get("pools", []) or []:
        params = p.get("params", {}) or {}
        if p.get("workload") == "steady_state":
            peer_by_trace[("steady_state", int(params.get("frames", 0)))] = p
        else:
            peer_by_trace[(p.get("workload"), int(params.get("max_size", 0)),
                           int(params.get("n", 0)))] = p
    rows = []
    for (workload, max_size, n, threads, waits), modes in by_case.items():
        params = f"max {max_size}, n {n}" if workload == "random_allocations" else f"n {n}"
        if threads:
            params += f", {threads} threads"
        if waits in (0, 1):
            params += ", waits" if waits else ", no waits"
        cells = [workload, params]
        for mode in ("pooled", "passthrough", "cuda_async"):
            r = modes.get(mode)
            cells.append(fmt(r["ns_per_pair_median"]) if r else "")
        pooled = modes.get("pooled")
        cells.append(fmt(pooled.get("peak_reserved_over_in_use"), 3) if pooled else "")
        key = (("steady_state", n) if workload == "steady_state"
               else (workload, max_size or 0, n or 0))
        peer = peer_by_trace.get(key)
        for name in ("torch_caching", "cupy_pool"):
            a = (peer or {}).get("allocators", {}).get(name) if peer else None
            cells.append(f"{fmt(a.get('median_ns_per_pair'))} "
                         f"({fmt((a.get('minus_overhead') or {}).get('median_ns_per_pair'))}); "
                         f"{fmt(a.get('reserved_over_in_use'), 3)}" if a else "")
        rows.append(cells)
    table(("workload", "parameters", "pooled", "passthrough", "cuda_async", "pooled reserved/in use",
           "torch caching: ns (less Python); reserved/in use",
           "CuPy pool: ns (less Python); reserved/in use"), rows)
    for g in doc.get("goals", []):
        print(f"- {g.get('goal')}: {g.get('measured')} ({'met' if g.get('met') else 'NOT met'})")
    print()


def bench_matmul(core):
    doc = load(os.path.join(core, "bench_matmul.json"))
    print("### bench_matmul --quick (median µs)\n")
    if not doc:
        return
    names = []
    for r in doc.get("results", []):
        for v in r.get("variants", {}):
            if v not in names:
                names.append(v)
    rows = [[f"{r['m']}×{r['n']}×{r['k']}"] + [fmt(r["variants"].get(v, {}).get("median_us"))
                                              for v in names] for r in doc.get("results", [])]
    table(["shape"] + names, rows)
    print(f"crossover: {json.dumps(doc.get('crossover'))}\n")


def peers_ops(core):
    doc = load(os.path.join(core, "peers.json"))
    print("### plume against the peers on the GPU (same inputs; ms, host-timed with a sync)\n")
    if not doc:
        return
    rows = []
    for case in doc.get("ops", []):
        plume = (case.get("plume") or {}).get("median_ms")
        check = case.get("check", {})
        for name, peer in (case.get("peers") or {}).items():
            sync = (peer or {}).get("sync", {}).get("median_ms")
            events = (peer or {}).get("events", {}).get("median_ms")
            ratio = sync / plume if sync and plume else None
            rows.append((case.get("op"), case.get("size"), name, fmt(plume), fmt(sync), fmt(events),
                         fmt(ratio), "ok" if check.get("ok") else f"MISMATCH {check.get('detail', '')}"))
    table(("op", "size", "peer", "plume ms", "peer ms", "peer ms (events)", "peer / plume", "results"),
          rows)
    for error in doc.get("errors", []) or []:
        print(f"- error: {error}")
    print()


def main(argv):
    estimates = os.path.join(ROOT, "benchmarks", "estimates")
    if len(argv) == 3 and argv[0] == "--estimates":
        estimates, argv = argv[1], argv[2:]
    if len(argv) != 1 or not os.path.isdir(argv[0]):
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    folder = argv[0]
    core, sanitize = os.path.join(folder, "core"), os.path.join(folder, "sanitize")
    if os.path.isdir(core):
        device(core)
        statuses(os.path.join(core, "suites", "status"), "suites on cuda")
        bench_ops(core)
        measured_beside_estimates(core, estimates)
        peers_ops(core)
        bench_pipeline(core)
        bench_pool(core)
        bench_matmul(core)
    if os.path.isdir(sanitize):
        statuses(os.path.join(sanitize, "sanitize", "status"), "compute-sanitizer runs")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
