#!/usr/bin/env python3
"""benchmarks/python_ops_bench.py: what a repeated plume.ops call costs from Python, beside
numpy and OpenCV doing the same thing on the same array, in one run.

    PYTHONPATH=python PLUME_LIBRARY=build/libplume.so python3 benchmarks/python_ops_bench.py
    python3 benchmarks/python_ops_bench.py --size 1024 --repeat 15   # a pip-installed plume

For each op, the median over --repeat rounds of the time per call (each round times as
many calls as fill about --round-ms; the three libraries' rounds interleaved, so that the
machine's load falls on all alike), for plume.ops on the default context (a repeated
call reuses its compiled pipeline), numpy (or scipy where numpy has no such function) and
cv2; "first" is plume's first call, which parses and compiles the one-op pipeline. The
results are checked to agree before anything is timed. It never fails on timing; a library
that is missing gets "-". Prints the machine, the backend and the command, then the table
(Markdown: docs/python.md records one).
"""

import argparse
import os
import platform
import statistics
import sys
import time

import numpy as np

import plume

try:
    import cv2
except ImportError:
    cv2 = None
try:
    from scipy import ndimage
except ImportError:
    ndimage = None


def calls_per_round(fn, round_ms):
    """How many calls of fn fill about round_ms."""
    fn()
    calls = 1
    while calls < 1 << 20:
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        if time.perf_counter() - start >= round_ms / 1e3:
            break
        calls *= 2
    return calls


def per_call_us(fns, repeat, round_ms):
    """The median time of one call of each of fns (None: not timed), in microseconds, their
    rounds interleaved (plume's, numpy's, cv2's, plume's, ...) so that a change in the
    machine's load falls on all of them alike."""
    calls = [calls_per_round(fn, round_ms) if fn else 0 for fn in fns]
    rounds = [[] for _ in fns]
    for _ in range(repeat):
        for fn, count, times in zip(fns, calls, rounds):
            if fn:
                start = time.perf_counter()
                for _ in range(count):
                    fn()
                times.append((time.perf_counter() - start) / count * 1e6)
    return [statistics.median(times) if times else None for times in rounds]


def first_call_us(name, frame, params):
    """plume's first call of an op on a fresh context: parse, compile, run."""
    ctx = plume.Context()
    start = time.perf_counter()
    getattr(plume.ops, name)(frame, context=ctx, **params)
    spent = (time.perf_counter() - start) * 1e6
    ctx.close()
    return spent


def cases(size):
    """(op, plume's parameters, input, numpy's call, cv2's call, check) per op."""
    rng = np.random.default_rng(1)
    image = rng.random((size, size)).astype(np.float32)
    mask = (image > 0.7).astype(np.uint8)
    gain = rng.random((size, size)).astype(np.float32) + 0.5
    offset = rng.random((size, size)).astype(np.float32)
    box = np.full((3, 3), 1 / 9, np.float32)

    def same(a, b, tol=0):
        np.testing.assert_allclose(np.asarray(a, np.float64), np.asarray(b, np.float64),
                                   rtol=tol, atol=tol)

    def same_labels(a, b):  # one labelling of the same components, numbered alike
        a, b = np.asarray(a), np.asarray(b)
        assert a.max() == b.max() and np.array_equal(a > 0, b > 0)

    yield ("threshold", {"value": 0.5}, image,
           lambda: (image > 0.5).astype(np.uint8),
           cv2 and (lambda: cv2.threshold(image, 0.5, 1, cv2.THRESH_BINARY)[1]), same)
    yield ("nuc", {"gain": gain, "offset": offset}, image,
           lambda: image * gain + offset,
           cv2 and (lambda: cv2.add(cv2.multiply(image, gain), offset)),
           lambda a, b: same(a, b, 1e-6))
    yield ("conv2d", {"kernel": box, "border": "replicate", "pad": "same"}, image,
           ndimage and (lambda: ndimage.correlate(image, box, mode="nearest")),
           cv2 and (lambda: cv2.filter2D(image, -1, box, borderType=cv2.BORDER_REPLICATE)),
           lambda a, b: same(a, b, 1e-5))
    yield ("label", {"connectivity": 8}, mask,
           ndimage and (lambda: ndimage.label(mask, np.ones((3, 3)))[0]),
           cv2 and (lambda: cv2.connectedComponents(mask, connectivity=8)[1]),
           same_labels)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=256, help="frames of SIZE x SIZE")
    parser.add_argument("--repeat", type=int, default=9, help="rounds timed per op")
    parser.add_argument("--round-ms", type=float, default=50, help="length of one round")
    args = parser.parse_args()

    ctx = plume.default_context()
    print("machine: %s, %d cores, %s; Python %s, numpy %s, cv2 %s, plume %s on %s" % (
        platform.processor() or platform.machine(), os.cpu_count(), platform.platform(),
        platform.python_version(), np.__version__, cv2.__version__ if cv2 else "-",
        plume.__version__, ctx.backend))
    print("command: %s" % " ".join(["python3"] + sys.argv))
    print("median microseconds per call, %dx%d float32 (label: its u8 mask), %d rounds"
          % (args.size, args.size, args.repeat))
    print()
    print("| op | plume first | plume | numpy | cv2 | plume / numpy | plume / cv2 |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for name, params, frame, numpy_fn, cv2_fn, check in cases(args.size):
        fn = getattr(plume.ops, name)
        ours = fn(frame, **params)
        ours = ours[0] if isinstance(ours, tuple) else ours  # label: (labels, count)
        for other in (numpy_fn, cv2_fn):
            if other:
                check(ours, other())
        first = first_call_us(name, frame, params)
        plume_us, *times = per_call_us([lambda: fn(frame, **params), numpy_fn, cv2_fn],
                                       args.repeat, args.round_ms)

        def cell(value, form="%.1f"):
            return form % value if value is not None else "-"

        print("| %s | %s | %s | %s | %s | %s | %s |" % (
            name, cell(first), cell(plume_us), cell(times[0]), cell(times[1]),
            cell(plume_us / times[0] if times[0] else None, "%.1fx"),
            cell(plume_us / times[1] if times[1] else None, "%.1fx")))


if __name__ == "__main__":
    main()
