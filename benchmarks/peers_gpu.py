#!/usr/bin/env python3
"""benchmarks/peers_gpu.py: plume's CUDA ops and pool beside their GPU peers, CuPy and PyTorch.

    python3 benchmarks/peers_gpu.py --plume PATH [--traces DIR] [--json PATH] [--runs N]
                                    [--workdir DIR] [--quick] [--only ops|pools]
                                    [--time-limit S] [--commit SHA]
    /usr/bin/python3 benchmarks/peers_gpu.py --rehearse-on-cpu --plume PATH [the same options]

One step of a GPU campaign on a machine lent for minutes (H100 or H200; Python 3.12 with
torch and cupy; no network): it takes about a minute, never waits without a bound, and
writes its JSON whatever fails. plume's own figures come from its benchmark binaries;
this script measures the same work through the peers and checks plume's CUDA outputs
against them.

Ops. Inputs are generated once from a fixed seed (a synthetic infrared scene in the
spirit of compare_cpu.py's), written as .npy into the work directory and read by both
sides, at 256x256, 2048x2048 and 4096x4096 (--quick: the first two), every op at one
size before the next size:

  conv2d  f32 image, a random non-separable 3x3 f32 kernel, "same" size with REFLECT101
          borders: plume op conv2d --pad 1,1 --border reflect101;
          cupyx.scipy.ndimage.correlate (mode 'mirror', scipy's name for REFLECT101), and
          torch.nn.functional.conv2d of a 1x1xHxW tensor after F.pad(mode='reflect')
          (torch's 'reflect' is REFLECT101), cuDNN held to IEEE f32 (no TF32).
  sobel   f32 gradient magnitude, REFLECT101: plume op sobel (its default border);
          cupyx.scipy.ndimage.sobel along each axis (mode 'mirror') and cupy.hypot.
  label   8-connectivity on a u8 mask (the scene at or above its 85th percentile):
          plume op label --connectivity 8; cupyx.scipy.ndimage.label with a 3x3
          structure of ones.

Correctness first: plume runs once per case (--backend cuda, no --repeat) and its output
is compared with every peer's: conv2d and sobel within compare_cpu.py's tolerances (f32
sums in other orders); label exactly equal to scipy.ndimage.label's of the mask on the
host, and the same partition and count as cupyx's. A mismatch fails that case (exit 1,
and the case is not timed); the other cases go on.

Timing. plume: `plume op ... --backend cuda --repeat N --warmup-ms 50`, which times each
run on the host clock between stream synchronisations and prints median, min and max.
The peers, in this process, each call allocating its output as their API does, two ways:
  sync    the host clock (time.perf_counter) around the call and a device synchronize:
          plume's method; 50 ms of warm-up calls first (3 at least).
  events  CUDA events (cupy.cuda.Event, torch.cuda.Event) recorded on the library's
          current stream around the call, each run waited for; 3 warm-up calls first.
Median, min and max of --runs runs (default 50) each. Ratio = peer sync median / plume
median (above 1: plume is faster).

Pools (--traces DIR). Every DIR/*.trace, written by `bench_pool --write-trace DIR` (the
allocation sequences plume's pool is measured on; the format is in bench_pool.c's
header), is replayed, smallest file first, against
  torch_caching  torch.cuda.caching_allocator_alloc(size, device=0, stream=s) and
                 torch.cuda.caching_allocator_delete(ptr), s one non-default
                 torch.cuda.Stream, after empty_cache() and reset_peak_memory_stats();
  cupy_pool      a fresh cupy.cuda.MemoryPool(): pool.malloc(size) with a non-default
                 cupy.cuda.Stream current, freed by dropping the MemoryPointer;
                 free_all_blocks() after.
Each allocation and each free is timed on its own with time.perf_counter_ns(); a block's
pair time is its allocation's plus its free's; median and p99 (nearest rank) ns per
pair. These are PYTHON-LEVEL costs, interpreter included: the same trace replayed
through empty Python functions of the same shapes gives python_call_overhead_ns (the
median per pair), reported beside the raw figures and subtracted only under
"minus_overhead". Peak bytes in use come from the trace; peak reserved from
torch.cuda.memory_stats()['reserved_bytes.all.peak'] and from the largest
pool.total_bytes() after an allocation.

Time. --time-limit S (default 60, counted from the start of the script, imports
included): no case starts after it (the cases not started are listed under "skipped");
a replay still running 5 s before the watchdog stops with an error; the watchdog, 20 s
after the limit, writes the JSON and exits 1. Every plume run has a timeout.

JSON (--json PATH; rewritten after every case): benchmark "peers_gpu", schema 1,
rehearsal, date, commit (git rev-parse, else --commit), device, "ops": [{op, size, what,
plume: {median_ms, min_ms, max_ms, runs}, peers: {name: {sync, events, ratio}}, check:
{ok, detail}}], "pools": [{trace, workload, params, blocks, in_use_peak_bytes,
allocators: {torch_caching, cupy_pool}}], "skipped", "notes", "errors".

--rehearse-on-cpu runs all of it on a machine without a GPU, to catch mistakes before a
scarce GPU window: numpy and scipy.ndimage stand in for cupy and cupyx, small stand-ins
in this file for the torch calls used and for both pools, and plume runs with --backend
host. Its JSON says "rehearsal": true; its figures are NOT results. The CTest test
peers_gpu_rehearsal (tests/peers/test-peers-gpu-rehearsal.sh) runs it on tiny inputs.

Exit codes: 0 every part ran and matched; 1 a part failed (a mismatch, a plume failure,
a peer's or a replay's error, the watchdog); 2 bad usage; 77 (skip) when numpy, scipy,
torch or cupy cannot be imported (the JSON still says so).
"""

import argparse
import datetime
import functools
import gc
import json
import math
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
import types

STARTED = time.monotonic()

sys.dont_write_bytecode = True  # no __pycache__ beside the sources from compare_cpu's import
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from compare_cpu import (EXIT_SKIP, TIME_LINE, WARMUP_MS, Inputs, Mismatch,  # noqa: E402
                         PlumeError, check_close, check_same_partition, git_commit,
                         scene_over_clutter, time_peer)

OPS = ("conv2d", "sobel", "label")
SIZES = [(256, 256), (2048, 2048), (4096, 4096)]
QUICK_SIZES = SIZES[:2]
WATCHDOG_AFTER_LIMIT_S = 20
REPLAY_STOP_BEFORE_WATCHDOG_S = 5
POOLS_NOTE = ("Python-level costs: each allocator call is timed from Python with "
              "time.perf_counter_ns(), the interpreter included; python_call_overhead_ns is "
              "the same replay through empty Python functions of the same shapes (median "
              "per pair); minus_overhead subtracts it.")


# ---- the modules: the GPU's, or the rehearsal's stand-ins -------------------------------


def load_modules(rehearse):
    """Everything the parts use, chosen once: numpy and host scipy.ndimage, and CuPy,
    cupyx.scipy.ndimage and torch, or their CPU stand-ins. Raises ImportError."""
    import numpy
    import scipy.ndimage
    if rehearse:
        cp, ndimage, torch = rehearsal_modules(numpy, scipy.ndimage)
    else:
        import cupy as cp
        import cupyx.scipy.ndimage as ndimage
        import torch
        import torch.nn.functional  # noqa: F401 (torch.nn.functional below)
    return types.SimpleNamespace(np=numpy, host_ndimage=scipy.ndimage, cp=cp, ndimage=ndimage,
                                 torch=torch, F=torch.nn.functional, rehearsal=rehearse,
                                 backend="host" if rehearse else "cuda")


def libraries(g):
    """How to wait for, event-time and read back each peer library's work."""
    cp, torch = g.cp, g.torch
    return {
        "cupy": types.SimpleNamespace(
            sync=lambda: cp.cuda.Device().synchronize(), event=cp.cuda.Event,
            elapsed_ms=cp.cuda.get_elapsed_time, host=cp.asnumpy),
        "torch": types.SimpleNamespace(
            sync=torch.cuda.synchronize, event=lambda: torch.cuda.Event(enable_timing=True),
            elapsed_ms=lambda start, end: start.elapsed_time(end),
            host=lambda tensor: tensor.cpu().numpy()),
    }


def torch_ieee_convolutions(torch):
    """cuDNN convolutions in IEEE f32: torch lets them use TF32 by default, whose 10-bit
    mantissa is far outside the check's tolerance. Returns the setting made."""
    conv = getattr(torch.backends.cudnn, "conv", None)
    if conv is not None and hasattr(conv, "fp32_precision"):  # torch >= 2.9
        conv.fp32_precision = "ieee"
        return "torch.backends.cudnn.conv.fp32_precision = 'ieee'"
    torch.backends.cudnn.allow_tf32 = False
    return "torch.backends.cudnn.allow_tf32 = False"


def device_info(g):
    cp, torch = g.cp, g.torch
    info = {"torch": torch.__version__, "cupy": cp.__version__}
    probes = {
        "name": lambda: torch.cuda.get_device_name(0),
        "memory_bytes": lambda: torch.cuda.mem_get_info()[1],
        "torch_cuda": lambda: torch.version.cuda,
        "cudnn": lambda: torch.backends.cudnn.version(),
        "cuda_runtime": cp.cuda.runtime.runtimeGetVersion,
        "driver": cp.cuda.runtime.driverGetVersion,
    }
    for key, probe in probes.items():
        try:
            info[key] = probe()
        except Exception as error:  # a figure the machine does not give: say why
            info[key] = f"unavailable: {error}"
    return info


# Rehearsal stand-ins: only what this file calls, with the peers' signatures. The math
# is numpy's and scipy's; the pools are a small size-class cache.


class FakeCachingPool:
    """Blocks rounded up to 512 bytes, cached per rounded size, given back on release()."""

    def __init__(self):
        self.cached, self.live = {}, {}
        self.reserved = self.peak = 0
        self.next_ptr = 1 << 20

    def take(self, nbytes):
        size = -(-nbytes // 512) * 512
        bucket = self.cached.get(size)
        if bucket:
            ptr = bucket.pop()
        else:
            ptr, self.next_ptr = self.next_ptr, self.next_ptr + size
            self.reserved += size
            self.peak = max(self.peak, self.reserved)
        self.live[ptr] = size
        return ptr

    def give(self, ptr):
        size = self.live.pop(ptr)  # KeyError: a double or foreign free
        self.cached.setdefault(size, []).append(ptr)

    def release(self):
        self.reserved -= sum(size * len(ptrs) for size, ptrs in self.cached.items())
        self.cached.clear()


class FakeEvent:
    def __init__(self, enable_timing=True, **_):
        self.at = None

    def record(self, stream=None):
        self.at = time.perf_counter()

    def synchronize(self):
        pass

    def elapsed_time(self, end):
        return (end.at - self.at) * 1e3


class FakeStream:
    cuda_stream = ptr = 0

    def __init__(self, *_, **__):
        pass

    def __enter__(self):
        return self

    def __exit__(self, *_):
        return False


class FakeMemoryPointer:
    """Gives its block back when the last reference goes, as cupy's does."""
    __slots__ = ("pool", "ptr")

    def __init__(self, pool, ptr):
        self.pool, self.ptr = pool, ptr

    def __del__(self):
        self.pool.give(self.ptr)


class FakeMemoryPool:
    def __init__(self, allocator=None):
        self.pool = FakeCachingPool()

    def malloc(self, size):
        return FakeMemoryPointer(self.pool, self.pool.take(size))

    def total_bytes(self):
        return self.pool.reserved

    def free_all_blocks(self, stream=None):
        self.pool.release()


def rehearsal_modules(np, ndimage):
    """(cupy, cupyx.scipy.ndimage, torch) stand-ins on the CPU."""

    class Tensor(np.ndarray):
        def cpu(self):
            return self

        def numpy(self):
            return np.asarray(self)

    def as_tensor(data, dtype=None, device=None):
        return np.array(data, dtype=dtype).view(Tensor)

    def pad(input, pad, mode="constant", value=None):
        if mode != "reflect" or len(pad) != 4:
            raise NotImplementedError("the rehearsal's F.pad: mode 'reflect' on H and W only")
        left, right, top, bottom = pad
        widths = [(0, 0)] * (input.ndim - 2) + [(top, bottom), (left, right)]
        return np.pad(input, widths, mode="reflect").view(Tensor)  # numpy's 'reflect' = torch's

    def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
        if weight.shape[:2] != (1, 1) or (bias, stride, padding, dilation, groups) != (
                None, 1, 0, 1, 1):
            raise NotImplementedError("the rehearsal's F.conv2d: one channel, defaults only")
        kh, kw = weight.shape[2:]
        h, w = input.shape[-2] - kh + 1, input.shape[-1] - kw + 1
        out = np.zeros(input.shape[:-2] + (h, w), dtype=np.float32)
        for i in range(kh):
            for j in range(kw):
                out += weight[0, 0, i, j] * input[..., i:i + h, j:j + w]
        return out.view(Tensor)

    torch_pool = FakeCachingPool()

    def caching_allocator_alloc(size, device=None, stream=None):
        return torch_pool.take(size)

    def reset_peak_memory_stats(device=None):
        torch_pool.peak = torch_pool.reserved

    def memory_stats(device=None):
        return {"reserved_bytes.all.current": torch_pool.reserved,
                "reserved_bytes.all.peak": torch_pool.peak}

    torch = types.SimpleNamespace(
        __version__="rehearsal (no torch)", as_tensor=as_tensor,
        version=types.SimpleNamespace(cuda=None),
        backends=types.SimpleNamespace(cudnn=types.SimpleNamespace(
            version=lambda: None, conv=types.SimpleNamespace(fp32_precision="tf32"))),
        nn=types.SimpleNamespace(functional=types.SimpleNamespace(pad=pad, conv2d=conv2d)),
        cuda=types.SimpleNamespace(
            synchronize=lambda device=None: None, Event=FakeEvent, Stream=FakeStream,
            get_device_name=lambda device=None: "rehearsal: numpy and scipy on the CPU",
            mem_get_info=lambda device=None: (0, 0),
            caching_allocator_alloc=caching_allocator_alloc,
            caching_allocator_delete=torch_pool.give, empty_cache=torch_pool.release,
            reset_peak_memory_stats=reset_peak_memory_stats, memory_stats=memory_stats))
    cupy = types.SimpleNamespace(
        __version__="rehearsal (no cupy)", asarray=np.asarray, asnumpy=np.asarray,
        hypot=np.hypot,
        cuda=types.SimpleNamespace(
            Event=FakeEvent, get_elapsed_time=lambda start, end: start.elapsed_time(end),
            Stream=FakeStream, MemoryPool=FakeMemoryPool,
            Device=lambda device=None: types.SimpleNamespace(synchronize=lambda: None),
            runtime=types.SimpleNamespace(runtimeGetVersion=lambda: None,
                                          driverGetVersion=lambda: None)))
    return cupy, ndimage, torch


# ---- inputs ------------------------------------------------------------------------------


def scene(np, ndimage, rng, h, w):
    """compare_cpu's synthetic infrared frame (scene_over_clutter), but with the clutter
    drawn at 1/32 scale and interpolated up, so that 4096x4096 takes a second or two
    rather than a minute of filtering."""
    ch, cw = max(2, h // 32), max(2, w // 32)
    coarse = ndimage.gaussian_filter(rng.standard_normal((ch, cw)), sigma=1.0)
    clutter = ndimage.zoom(coarse, (h / ch, w / cw), order=1)[:h, :w]
    return scene_over_clutter(np, ndimage, rng, clutter)


class SceneInputs(Inputs):
    """compare_cpu.Inputs (the mask and the kernel as there) with this file's scene."""

    def image(self, h, w):
        name = f"scene_{h}x{w}_f32"
        if name not in self.cache:
            np, ndimage = self.m["np"], self.m["ndimage"]
            rng = np.random.default_rng([self.seed, h, w])
            self._save(name, scene(np, ndimage, rng, h, w))
        return self.cache[name]


# ---- timing ------------------------------------------------------------------------------


class Clock:
    """The script's time budget, counted from its start."""

    def __init__(self, limit_s):
        self.limit_s = limit_s
        self.watchdog_s = limit_s + WATCHDOG_AFTER_LIMIT_S

    def elapsed(self):
        return time.monotonic() - STARTED

    def over(self):
        return self.elapsed() > self.limit_s

    def left_before_watchdog(self):
        return self.watchdog_s - self.elapsed()


def summary_ms(times):
    times = sorted(times)
    n = len(times)
    median = times[n // 2] if n % 2 else 0.5 * (times[n // 2 - 1] + times[n // 2])
    return {"median_ms": median, "min_ms": times[0], "max_ms": times[-1], "runs": n}


def time_events(lib, fn, runs, warmups=3):
    """Median, min and max ms between two CUDA events around fn on the current stream."""
    for _ in range(warmups):
        fn()
    lib.sync()
    start, end = lib.event(), lib.event()
    times = []
    for _ in range(runs):
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(lib.elapsed_ms(start, end))
    return summary_ms(times)


plume_child = None  # the plume process running now, for the watchdog to kill


def kill_plume():
    """Ends the plume process running now, with its process group (a wrapper's children)."""
    child = plume_child
    if child is not None and child.poll() is None:
        try:
            os.killpg(child.pid, signal.SIGKILL)
        except OSError:
            pass


def run_plume(plume, op, arguments, backend, repeat, clock):
    """`plume op OP ... --backend B [--repeat N --warmup-ms 50]`: the timing dict with
    repeat, else None (one untimed run whose output the check reads)."""
    command = [plume, "op", op] + arguments + ["--backend", backend]
    if repeat:
        command += ["--repeat", str(repeat), "--warmup-ms", str(WARMUP_MS)]
    timeout = max(1.0, clock.left_before_watchdog() - REPLAY_STOP_BEFORE_WATCHDOG_S)
    global plume_child
    plume_child = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                   text=True, start_new_session=True)
    try:
        stderr = plume_child.communicate(timeout=timeout)[1]
    except subprocess.TimeoutExpired:
        kill_plume()
        plume_child.communicate()
        raise PlumeError(f"{' '.join(command)}: still running after {timeout:.0f} s: killed")
    if plume_child.returncode != 0:
        raise PlumeError(f"{' '.join(command)}: exit {plume_child.returncode}: {stderr.strip()}")
    if not repeat:
        return None
    match = TIME_LINE.search(stderr)
    if not match:
        raise PlumeError(f"{' '.join(command)}: no time_ms line in: {stderr.strip()}")
    median, low, high = (float(v) for v in match.groups())
    return {"median_ms": median, "min_ms": low, "max_ms": high, "runs": repeat}


# ---- the op cases ------------------------------------------------------------------------
# Each returns the plume command, the peers ({name: (library, fn)}, fn allocating its
# output) on inputs already on the device, and check(plume's output) -> detail.


def conv2d_case(g, libs, inputs, workdir, h, w):
    np, cp, torch, F = g.np, g.cp, g.torch, g.F
    image_path, image = inputs.image(h, w)
    kernel_path, kernel = inputs.kernel3()
    out = os.path.join(workdir, f"plume_conv2d_{h}x{w}.npy")
    x, k = cp.asarray(image), cp.asarray(kernel)
    xt = torch.as_tensor(image, device="cuda").reshape(1, 1, h, w)
    kt = torch.as_tensor(kernel, device="cuda").reshape(1, 1, 3, 3)
    peers = {
        "cupyx.ndimage.correlate": (libs["cupy"],
                                    lambda: g.ndimage.correlate(x, k, mode="mirror")),
        "torch.conv2d": (libs["torch"],
                         lambda: F.conv2d(F.pad(xt, (1, 1, 1, 1), mode="reflect"), kt)),
    }

    def check(got):
        # f32 sums of 9 products in any order: within a few ulps of the largest sum.
        tolerance = 1e-5 * float(np.abs(kernel).sum()) * float(np.abs(image).max())
        errors = []
        for name, (lib, fn) in peers.items():
            want = lib.host(fn()).reshape(h, w)
            error = check_close(np, f"conv2d {h}x{w} vs {name}", got, want, tolerance)
            errors.append(f"{name} {error:.3g}")
        return f"max |difference|: {', '.join(errors)} (tolerance {tolerance:.3g})"

    return {"what": "3x3 f32 same reflect101", "out": out, "peers": peers, "check": check,
            "plume": ["--in", image_path, "--kernel", kernel_path, "--out", out,
                      "--pad", "1,1", "--border", "reflect101"]}


def sobel_case(g, libs, inputs, workdir, h, w):
    np, cp = g.np, g.cp
    image_path, image = inputs.image(h, w)
    out = os.path.join(workdir, f"plume_sobel_{h}x{w}.npy")
    x = cp.asarray(image)

    def magnitude():
        return cp.hypot(g.ndimage.sobel(x, axis=1, mode="mirror"),
                        g.ndimage.sobel(x, axis=0, mode="mirror"))

    peers = {"cupyx.ndimage.sobel+hypot": (libs["cupy"], magnitude)}

    def check(got):
        tolerance = 1e-5 * 8.0 * float(np.abs(image).max())
        error = check_close(np, f"sobel {h}x{w} vs cupyx", got, cp.asnumpy(magnitude()),
                            tolerance)
        return f"max |difference|: cupyx {error:.3g} (tolerance {tolerance:.3g})"

    return {"what": "f32 magnitude reflect101", "out": out, "peers": peers, "check": check,
            "plume": ["--in", image_path, "--out", out]}


def label_case(g, libs, inputs, workdir, h, w):
    np, cp = g.np, g.cp
    mask_path, mask = inputs.mask(h, w)
    out = os.path.join(workdir, f"plume_label_{h}x{w}_c8.npy")
    structure = np.ones((3, 3), dtype=bool)
    m = cp.asarray(mask)
    peers = {"cupyx.ndimage.label": (libs["cupy"],
                                     lambda: g.ndimage.label(m, structure=structure))}

    def check(got):
        name = f"label {h}x{w} c8"
        want, count = g.host_ndimage.label(mask, structure=structure)
        if got.dtype != np.int32 or not np.array_equal(got, want):
            raise Mismatch(f"{name}: labels ({got.dtype}) differ from scipy.ndimage.label's "
                           f"(on the host)")
        labels, n = g.ndimage.label(m, structure=structure)
        labels = cp.asnumpy(labels)
        if int(n) != count:
            raise Mismatch(f"{name}: {count} components, cupyx finds {int(n)}")
        if not np.array_equal(labels == 0, got == 0):
            raise Mismatch(f"{name} vs cupyx: the background differs")
        foreground = got != 0  # check_same_partition's sort is slow on the whole image
        check_same_partition(np, f"{name} vs cupyx", got[foreground], labels[foreground])
        return f"{count} components: equal to scipy.ndimage.label, same partition as cupyx"

    return {"what": "u8 mask c8", "out": out, "peers": peers, "check": check,
            "plume": ["--in", mask_path, "--out", out, "--connectivity", "8"]}


CASES = {"conv2d": conv2d_case, "sobel": sobel_case, "label": label_case}


def run_op_case(g, args, clock, report, libs, inputs, workdir, op, h, w):
    entry = {"op": op, "size": f"{h}x{w}", "what": None, "plume": None, "peers": {},
             "check": {"ok": False, "detail": "not checked"}}
    report.data["ops"].append(entry)
    where = f"{op} {h}x{w}"
    try:
        case = CASES[op](g, libs, inputs, workdir, h, w)
        entry["what"] = case["what"]
        run_plume(args.plume, op, case["plume"], g.backend, 0, clock)
        entry["check"] = {"ok": True, "detail": case["check"](g.np.load(case["out"]))}
    except Mismatch as error:
        entry["check"]["detail"] = f"mismatch: {error}"
        return report.fail(where, f"mismatch: {error} (not timed)")
    except Exception as error:
        entry["check"]["detail"] = f"error: {error}"
        return report.fail(where, f"{type(error).__name__}: {error} (not timed)")
    try:
        entry["plume"] = run_plume(args.plume, op, case["plume"], g.backend, args.runs, clock)
    except Exception as error:
        entry["plume"] = {"error": str(error)}
        report.fail(f"{where} plume timing", error)
    plume_ms = (entry["plume"] or {}).get("median_ms")
    for name, (lib, fn) in case["peers"].items():
        try:
            timing = {"sync": time_peer(lambda: (fn(), lib.sync()), args.runs),
                      "events": time_events(lib, fn, args.runs)}
            timing["ratio"] = timing["sync"]["median_ms"] / plume_ms if plume_ms else None
        except Exception as error:
            timing = {"error": f"{type(error).__name__}: {error}"}
            report.fail(f"{where} {name}", error)
        entry["peers"][name] = timing


def run_ops(g, args, clock, report, workdir):
    if not args.plume or not os.access(args.plume, os.X_OK):
        return report.fail("ops", f"--plume {args.plume!r} is not an executable: ops not run")
    report.data["torch_conv_precision"] = torch_ieee_convolutions(g.torch)
    libs = libraries(g)
    inputs = SceneInputs({"np": g.np, "ndimage": g.host_ndimage}, workdir, args.seed)
    for h, w in args.sizes:
        for op in OPS:
            if clock.over():
                report.skip(f"op {op} {h}x{w}", clock)
                continue
            run_op_case(g, args, clock, report, libs, inputs, workdir, op, h, w)
            report.save()
            print(f"peers_gpu: {op} {h}x{w} done at {clock.elapsed():.1f} s", file=sys.stderr)


# ---- pools -------------------------------------------------------------------------------


class TraceError(Exception):
    pass


class TimeLimit(Exception):
    pass


def read_trace(path):
    """The trace's workload, params, events [(block, bytes), bytes 0 for a free] and the
    peak of the bytes its blocks hold at once."""
    with open(path) as trace:
        lines = trace.read().splitlines()
    if not lines or lines[0].strip() != "# plume-pool-trace 1":
        raise TraceError(f"{path}: not a plume-pool-trace 1 file")
    workload, params = os.path.basename(path).split("-")[0], {}
    events, live = [], {}
    in_use = peak = 0
    for number, line in enumerate(lines[1:], 2):
        words = line.split()
        if not words:
            continue
        try:
            if words[0].startswith("#"):
                if words[:2] == ["#", "workload"] and len(words) >= 3:
                    workload = words[2]
                    params = {key: int(value) if value.lstrip("-").isdigit() else value
                              for key, value in zip(words[3::2], words[4::2])}
            elif words[0] == "a" and len(words) == 3:
                block, nbytes = int(words[1]), int(words[2])
                if nbytes < 1 or block in live:
                    raise ValueError("a size below 1 or a block already live")
                live[block] = nbytes
                in_use += nbytes
                peak = max(peak, in_use)
                events.append((block, nbytes))
            elif words[0] == "f" and len(words) == 2:
                block = int(words[1])
                in_use -= live.pop(block)
                events.append((block, 0))
            else:
                raise ValueError("neither 'a ID BYTES' nor 'f ID'")
        except (ValueError, KeyError) as error:
            raise TraceError(f"{path}:{number}: {line!r}: {error}") from None
    if live:
        raise TraceError(f"{path}: {len(live)} blocks are never freed")
    return types.SimpleNamespace(path=path, workload=workload, params=params, events=events,
                                 blocks=len(events) // 2, in_use_peak=peak)


def replay(events, alloc, free, after_alloc=None, deadline=None):
    """Each block's pair time in ns (alloc's plus free's, each call timed on its own).
    free(live.pop(block)) drops the last reference inside the timed call, so a cupy
    MemoryPointer goes back to its pool there; a handle is never held in a local."""
    clock = time.perf_counter_ns
    live, alloc_ns, pairs = {}, {}, []
    try:
        for i, (block, nbytes) in enumerate(events):
            if nbytes:
                t0 = clock()
                live[block] = alloc(nbytes)
                t1 = clock()
                alloc_ns[block] = t1 - t0
                if after_alloc:
                    after_alloc()
            else:
                t0 = clock()
                free(live.pop(block))
                t1 = clock()
                pairs.append(alloc_ns.pop(block) + t1 - t0)
            if deadline is not None and not i & 0xFFF and time.monotonic() > deadline:
                raise TimeLimit(f"stopped after {i} of {len(events)} events: time limit")
    finally:
        for block in list(live):
            free(live.pop(block))
    return pairs


# The empty calls of the overhead replays, shaped as the allocators' calls.
def empty_alloc(size, device=None, stream=None):
    return None


def empty_call(argument):
    return None


def nearest_rank(sorted_values, fraction):
    return sorted_values[max(0, math.ceil(fraction * len(sorted_values)) - 1)]


def pair_summary(pairs, overhead_pairs, peak_reserved, trace):
    pairs, overhead_pairs = sorted(pairs), sorted(overhead_pairs)
    median, p99 = nearest_rank(pairs, 0.5), nearest_rank(pairs, 0.99)
    overhead = nearest_rank(overhead_pairs, 0.5)
    return {"pairs": len(pairs), "median_ns_per_pair": median, "p99_ns_per_pair": p99,
            "python_call_overhead_ns": overhead,
            "minus_overhead": {"median_ns_per_pair": median - overhead,
                               "p99_ns_per_pair": p99 - overhead},
            "peak_reserved_bytes": peak_reserved,
            "reserved_over_in_use":
                peak_reserved / trace.in_use_peak if trace.in_use_peak else None}


def replay_torch(g, trace, deadline):
    torch = g.torch
    torch.cuda.synchronize()
    gc.collect()
    torch.cuda.empty_cache()
    torch.cuda.reset_peak_memory_stats()
    at_start = torch.cuda.memory_stats().get("reserved_bytes.all.current", 0)
    stream = torch.cuda.Stream()
    try:
        pairs = replay(trace.events, functools.partial(torch.cuda.caching_allocator_alloc,
                                                       device=0, stream=stream),
                       torch.cuda.caching_allocator_delete, deadline=deadline)
        peak = torch.cuda.memory_stats()["reserved_bytes.all.peak"] - at_start
        overhead = replay(trace.events, functools.partial(empty_alloc, device=0, stream=stream),
                          empty_call, deadline=deadline)
    finally:
        torch.cuda.synchronize()
        torch.cuda.empty_cache()
    result = pair_summary(pairs, overhead, peak, trace)
    result["reserved_at_start_bytes"] = at_start
    result["calls"] = ("torch.cuda.caching_allocator_alloc(size, device=0, stream=s), "
                       "torch.cuda.caching_allocator_delete(ptr); s = torch.cuda.Stream()")
    return result


def replay_cupy(g, trace, deadline):
    pool = g.cp.cuda.MemoryPool()
    peak = [0]

    def track():
        peak[0] = max(peak[0], pool.total_bytes())

    def drop(pointer):
        return None  # the caller's reference was the last: the block goes back on return

    try:
        with g.cp.cuda.Stream(non_blocking=True):
            pairs = replay(trace.events, pool.malloc, drop, track, deadline)
            overhead = replay(trace.events, empty_call, drop, deadline=deadline)
    finally:
        pool.free_all_blocks()
    result = pair_summary(pairs, overhead, peak[0], trace)
    result["calls"] = ("pool = cupy.cuda.MemoryPool(); pool.malloc(size) under "
                       "cupy.cuda.Stream(non_blocking=True); free: the MemoryPointer dropped")
    return result


ALLOCATORS = {"torch_caching": replay_torch, "cupy_pool": replay_cupy}


def run_pools(g, args, clock, report):
    if not args.traces:
        report.data["notes"].append("pools skipped: no --traces DIR given")
        return
    try:
        names = [n for n in os.listdir(args.traces) if n.endswith(".trace")]
    except OSError as error:
        return report.fail("pools", f"--traces {args.traces}: {error}")
    if not names:
        return report.fail("pools", f"--traces {args.traces}: no *.trace file")
    paths = sorted((os.path.join(args.traces, n) for n in names), key=os.path.getsize)
    for path in paths:
        name = os.path.basename(path)
        if clock.over():
            report.skip(f"trace {name}", clock)
            continue
        try:
            trace = read_trace(path)
        except (OSError, TraceError) as error:
            report.fail(f"trace {name}", error)
            continue
        entry = {"trace": name, "workload": trace.workload, "params": trace.params,
                 "blocks": trace.blocks, "in_use_peak_bytes": trace.in_use_peak,
                 "allocators": {}}
        report.data["pools"].append(entry)
        deadline = time.monotonic() + clock.left_before_watchdog() - REPLAY_STOP_BEFORE_WATCHDOG_S
        for allocator, replay_with in ALLOCATORS.items():
            try:
                entry["allocators"][allocator] = replay_with(g, trace, deadline)
            except Exception as error:
                entry["allocators"][allocator] = {"error": f"{type(error).__name__}: {error}"}
                report.fail(f"trace {name} {allocator}", error)
        report.save()
        print(f"peers_gpu: {name} done at {clock.elapsed():.1f} s", file=sys.stderr)


# ---- report ------------------------------------------------------------------------------


class Report:
    """The JSON document, written (atomically) after every case and by the watchdog."""

    def __init__(self, path, data):
        self.path, self.data = path, data
        self.lock = threading.Lock()

    def fail(self, where, error):
        with self.lock:
            self.data["errors"].append({"where": where, "error": str(error)})
        print(f"peers_gpu: {where}: {error}", file=sys.stderr)

    def skip(self, what, clock):
        self.data["skipped"].append({"case": what, "why": f"time limit {clock.limit_s:g} s "
                                                          f"reached ({clock.elapsed():.1f} s)"})

    def save(self):
        if not self.path:
            return
        with self.lock:
            self.data["elapsed_s"] = round(time.monotonic() - STARTED, 3)
            text = json.dumps(self.data, indent=1)
            partial = f"{self.path}.tmp-{os.getpid()}"
            with open(partial, "w") as out:
                out.write(text + "\n")
            os.replace(partial, self.path)


def start_watchdog(report, clock, cleanups):
    """After clock.watchdog_s: kill plume, record the error, write the JSON, run cleanups
    (the temporary work directory), exit 1."""

    def expire():
        kill_plume()
        report.fail("watchdog", f"still running {clock.watchdog_s:g} s after the start "
                                f"(time limit {clock.limit_s:g} s): stopped")
        for _ in range(3):  # the main thread may change the document while it is written
            try:
                report.save()
                break
            except Exception:
                time.sleep(0.01)
        for cleanup in cleanups:
            cleanup()
        os._exit(1)

    timer = threading.Timer(max(0.0, clock.left_before_watchdog()), expire)
    timer.daemon = True
    timer.start()
    return timer


def table(header, rows, text_columns):
    lines = [header] + rows
    widths = [max(len(line[i]) for line in lines) for i in range(len(header))]
    for line in lines:
        print("  ".join(cell.ljust(widths[i]) if i < text_columns else cell.rjust(widths[i])
                        for i, cell in enumerate(line)))


def print_tables(data):
    def ms(timing, key="median_ms"):
        return f"{timing[key]:.4f}" if timing and key in timing else "-"

    rows = []
    for entry in data["ops"]:
        peers = entry["peers"] or {"-": {}}
        for name, timing in peers.items():
            ratio = timing.get("ratio")
            rows.append((entry["op"], entry["size"], name, ms(entry["plume"]),
                         ms(timing.get("sync")), ms(timing.get("events")),
                         f"{ratio:.2f}" if ratio else "-",
                         "ok" if entry["check"]["ok"] else "FAILED"))
    if rows:
        table(("op", "size", "peer", "plume ms", "sync ms", "events ms", "ratio", "check"), rows, 3)
    rows = []
    for entry in data["pools"]:
        for name, result in entry["allocators"].items():
            if "error" in result:
                rows.append((entry["trace"], name, "error") + ("-",) * 4)
                continue
            ratio = result["reserved_over_in_use"]
            rows.append((entry["trace"], name, str(result["median_ns_per_pair"]),
                         str(result["p99_ns_per_pair"]), str(result["python_call_overhead_ns"]),
                         f"{result['peak_reserved_bytes'] / 2**20:.1f}",
                         f"{ratio:.2f}" if ratio else "-"))
    if rows:
        print()
        table(("trace", "allocator", "median ns/pair", "p99 ns/pair", "python ns/pair",
               "peak reserved MiB", "reserved/in use"), rows, 2)
        print("(pool figures are Python-level costs; python ns/pair: the same replay "
              "through empty Python functions)")


def parse_sizes(text):
    try:
        sizes = [tuple(int(v) for v in item.split("x")) for item in text.split(",")]
    except ValueError:
        sizes = []
    if not sizes or any(len(s) != 2 or min(s) < 1 for s in sizes):
        raise argparse.ArgumentTypeError(f"expected HxW[,HxW...], got {text!r}")
    return sizes


def main():
    parser = argparse.ArgumentParser(
        description="plume's CUDA ops and pool beside CuPy and PyTorch "
                    "(see the header of this file)")
    parser.add_argument("--plume", help="the built plume binary (needed for the ops)")
    parser.add_argument("--traces", metavar="DIR",
                        help="bench_pool --write-trace's directory (without it: no pools)")
    parser.add_argument("--json", metavar="PATH", help="write the results as JSON")
    parser.add_argument("--workdir", help="where the .npy inputs and outputs go "
                                          "(default: a temporary directory, removed)")
    parser.add_argument("--runs", type=int, default=50, help="timed runs per side (default 50)")
    parser.add_argument("--quick", action="store_true", help="256x256 and 2048x2048 only")
    parser.add_argument("--only", choices=("ops", "pools"), help="run one part only")
    parser.add_argument("--time-limit", type=float, default=60.0, metavar="S",
                        help="start no case after S seconds (default 60)")
    parser.add_argument("--commit", help="the commit, when git cannot tell")
    parser.add_argument("--seed", type=int, default=20261122)
    parser.add_argument("--rehearse-on-cpu", action="store_true",
                        help="run everything on the CPU with stand-ins: not results")
    parser.add_argument("--sizes", type=parse_sizes, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.runs < 1 or args.time_limit <= 0:
        parser.error("--runs and --time-limit must be positive")
    args.sizes = args.sizes or (QUICK_SIZES if args.quick else SIZES)

    clock = Clock(args.time_limit)
    report = Report(args.json, {
        "benchmark": "peers_gpu", "schema": 1, "rehearsal": args.rehearse_on_cpu,
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "commit": git_commit() or args.commit, "device": None,
        "plume": os.path.abspath(args.plume) if args.plume else None,
        "runs": args.runs, "seed": args.seed, "warmup_ms": WARMUP_MS,
        "time_limit_s": args.time_limit, "pools_note": POOLS_NOTE,
        "ops": [], "pools": [], "skipped": [], "notes": [], "errors": []})
    if args.rehearse_on_cpu:
        report.data["notes"].append("REHEARSAL on the CPU with stand-ins for cupy, cupyx, "
                                    "torch and the pools: these figures are not results")
        print("peers_gpu: REHEARSAL on the CPU: the figures below are not results",
              file=sys.stderr)
    cleanups = []
    watchdog = start_watchdog(report, clock, cleanups)
    try:
        g = load_modules(args.rehearse_on_cpu)
    except ImportError as error:
        report.data["skipped_reason"] = f"cannot import: {error}"
        report.fail("imports", f"{error} (skipped)")
        watchdog.cancel()
        report.save()
        return EXIT_SKIP
    report.data["device"] = device_info(g)
    report.data["backend"] = g.backend
    report.data["imported_at_s"] = round(clock.elapsed(), 3)
    report.save()

    temporary = None
    workdir = args.workdir
    if workdir:
        os.makedirs(workdir, exist_ok=True)
    else:
        temporary = tempfile.TemporaryDirectory(prefix="plume-peers-gpu-")
        workdir = temporary.name
        cleanups.append(temporary.cleanup)
    try:
        for part, run_part in (("ops", lambda: run_ops(g, args, clock, report, workdir)),
                               ("pools", lambda: run_pools(g, args, clock, report))):
            if args.only in (None, part):
                try:
                    run_part()
                except Exception as error:
                    report.fail(part, f"{type(error).__name__}: {error}")
    finally:
        if temporary:
            temporary.cleanup()
    watchdog.cancel()
    report.save()

    print()
    if args.rehearse_on_cpu:
        print("REHEARSAL (CPU stand-ins, plume --backend host): not results")
    print_tables(report.data)
    for skipped in report.data["skipped"]:
        print(f"skipped: {skipped['case']}: {skipped['why']}")
    for note in report.data["notes"]:
        print(f"note: {note}")
    failures = report.data["errors"]
    print(f"{report.data['device'].get('name')}; {clock.elapsed():.1f} s; "
          f"{len(failures)} error(s)" + (f"; JSON: {args.json}" if args.json else ""))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
