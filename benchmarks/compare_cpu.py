#!/usr/bin/env python3
"""benchmarks/compare_cpu.py: plume's CPU kernels against their peers, on the same inputs.

    /usr/bin/python3 benchmarks/compare_cpu.py [--plume PATH] [--json PATH] [--runs N]
                                               [--workdir DIR] [--only OP[,OP...]] [--quick]
    /usr/bin/python3 benchmarks/compare_cpu.py --check [--plume PATH] [--workdir DIR]

The peers are OpenCV (cv2.filter2D, cv2.sepFilter2D, cv2.Sobel + cv2.magnitude,
cv2.connectedComponents), scikit-image (skimage.filters.rank.entropy) and scipy
(scipy.ndimage.correlate, correlate1d, scipy.ndimage.label). plume runs through its command-line tool on the host backend:
`plume op ... --backend host --repeat N --warmup-ms 50`, which times the operation alone
(enqueue to stream synchronisation, no file I/O) after 50 ms of warm-up runs and prints
`time_ms median=...`.

Inputs are generated once from a fixed seed (a synthetic infrared scene: a smooth
background, hot spots and sensor noise), written as .npy into the work directory, and
read by both sides. Cases (the issue's seed sizes, then 2048x2048 for every op):

  conv2d   f32 image, a random non-separable 3x3 f32 kernel, "same" size with
           REFLECT101 borders: plume --pad 1,1 --border reflect101; cv2.filter2D
           (ddepth CV_32F, BORDER_REFLECT_101); scipy.ndimage.correlate (mode 'mirror').
           And the default preset's large kernel: a 9x9 negated Laplacian of Gaussian
           (sigma 1.5, not separable), "same" size with REPLICATE borders: plume --pad 4,4
           --border replicate; cv2.filter2D (BORDER_REPLICATE); scipy.ndimage.correlate
           (mode 'nearest').
  sepconv2d f32 image, a 9-tap Gaussian (sigma 2) across and down, "same" size with
           REFLECT101 borders: plume sepconv2d against cv2.sepFilter2D,
           scipy.ndimage.correlate1d along each axis (mode 'mirror'), and cv2.filter2D with
           their 9x9 outer product.
  sobel    f32 image; plume's magnitude (one fused pass) against cv2.Sobel dx and dy
           (CV_32F, ksize 3, BORDER_REFLECT_101) and cv2.magnitude: OpenCV's way to the
           same magnitude.
  entropy  u8 image, window 16, each value its own bin; skimage.filters.rank.entropy with
           np.ones((16, 16)).
  label    u8 mask (the scene thresholded), 8- and 4-connectivity; cv2.connectedComponents
           (CV_32S) and scipy.ndimage.label.
  segment  f32 image, thresholded (>= its 85th percentile, made an f32), labelled
           (8-connectivity) and measured in one call: area, bounding box, centroid, and the
           image's sum, max and weighted centroid per region. Against the threshold and
           cv2.connectedComponentsWithStats (area, box and centroid only: OpenCV has no
           intensity terms), and against what scipy takes for the whole table
           (ndimage.label, find_objects, sum_labels, maximum, center_of_mass twice).

Peers are timed in this process with time.perf_counter: 50 ms of warm-up calls (3 at
least; plume warms up as long, in its own process), then the median of
--runs runs (default 20; each call allocates its output, as the peers' Python API does).
Each case runs --rounds rounds (default 3), each timing plume and every peer
in turn; every side keeps its best round's median (load elsewhere only ever slows a
round down), and the JSON keeps every round's median.
OpenCV keeps its default thread count (reported; cv2.getNumThreads()), scipy and
scikit-image run on one thread, plume on its CPU pool (every online core).

Correctness is checked on every case before any figure is reported: conv2d and sobel
within a relative tolerance of the peers (the sums are in f32 on both sides, in other
orders), entropy within 1e-4 of scikit-image, labels equal to scipy's exactly and the
same partition (and count) as OpenCV's; segment's table equal to scipy's in its areas,
boxes and maxima and within 1e-9 in its centroids and sums, and to OpenCV's areas, boxes
and centroids. A mismatch exits 1.

Ratio = peer median / plume median (above 1: plume is faster). Targets (the issue's,
on the 2-core machine): conv2d >= 1 against cv2.filter2D; sobel >= 2 against cv2;
entropy >= 20 against scikit-image; label >= 1 / 1.5 against cv2.connectedComponents
(plume within 1.5x of it). Peers without a target are shown for scale.

Floor: each case's bytes (input read once, output written once) over the memory
bandwidth of a 64 MiB memcpy (np.copyto, one thread, read plus written); of_floor =
plume median / floor. At 256x256 the data sits in the caches and the fixed cost of an
op dominates, so the floor means something at 2048x2048. (Copies of 256 KiB here ran
anywhere from 5 to 40 GB/s from one minute to the next, so no per-size floor.)

Fixed cost: every plume figure includes handing the op to a host stream's worker
thread and waiting for it (two thread wake-ups); a threshold of a 1x1 image measures
that cost alone and is printed with the table.

--check runs tiny inputs for correctness only (no timing; the CTest test
compare_cpu_check). Exit codes: 0 success, 1 a mismatch or a plume failure, 2 bad usage,
77 (skip) when numpy, scipy, scikit-image or OpenCV cannot be imported.
"""

import argparse
import datetime
import json
import os
import platform
import re
import subprocess
import sys
import tempfile
import time

EXIT_SKIP = 77

TARGETS = {
    # op: (peer the target is against, minimum ratio, how the issue words it)
    "conv2d": ("cv2.filter2D", 1.0, "at least as fast as cv2.filter2D"),
    "sepconv2d": ("cv2.sepFilter2D", 1.0,
                  "at least as fast as cv2.sepFilter2D (conv2d's target)"),
    "sobel": ("cv2.Sobel+magnitude", 2.0, "2x faster than cv2"),
    "entropy": ("skimage.rank.entropy", 20.0, "20x faster than scikit-image"),
    "label": ("cv2.connectedComponents", 1.0 / 1.5, "within 1.5x of cv2"),
}
# Ops timed beside their peers for scale, without an issue's target.
UNTARGETED = ("segment",)


def import_peers():
    """numpy, scipy.ndimage, skimage.filters.rank and cv2, or None when one is missing."""
    try:
        import numpy
        import scipy.ndimage
        import skimage.filters.rank
        import cv2
    except ImportError as error:
        print(f"compare_cpu: skipped: {error} (run it with /usr/bin/python3)", file=sys.stderr)
        return None
    return {"np": numpy, "ndimage": scipy.ndimage, "rank": skimage.filters.rank, "cv2": cv2}


def default_plume():
    here = os.path.dirname(os.path.abspath(__file__))
    for build in ("build", "build-nocuda", "build-cuda"):
        path = os.path.join(here, "..", build, "apps", "plume")
        if os.access(path, os.X_OK):
            return os.path.normpath(path)
    return os.path.normpath(os.path.join(here, "..", "build", "apps", "plume"))


# ---- inputs ------------------------------------------------------------------------------


def scene(m, rng, h, w):
    """A synthetic infrared frame in [0, 255] (f32): smooth clutter, hot spots, noise."""
    np, ndimage = m["np"], m["ndimage"]
    clutter = ndimage.gaussian_filter(rng.standard_normal((h, w)), sigma=max(1.0, min(h, w) / 64))
    return scene_over_clutter(np, ndimage, rng, clutter)


def scene_over_clutter(np, ndimage, rng, clutter):
    """The frame over a clutter field (any range, normalised here to [60, 150]): hot
    spots, one per 4096 pixels, and sensor noise, from rng; clipped to [0, 255], f32."""
    h, w = clutter.shape
    clutter = (clutter - clutter.min()) / max(float(np.ptp(clutter)), 1e-12)
    image = 60.0 + 90.0 * clutter
    spots = max(1, h * w // 4096)
    ys, xs = rng.integers(0, h, spots), rng.integers(0, w, spots)
    amplitude, radius = rng.uniform(40, 100, spots), rng.uniform(1.0, 4.0, spots)
    spot_map = np.zeros((h, w))
    spot_map[ys, xs] = amplitude * radius * radius
    image += ndimage.gaussian_filter(spot_map, sigma=2.0)
    image += rng.normal(0.0, 6.0, (h, w))
    return np.clip(image, 0.0, 255.0).astype(np.float32)


class Inputs:
    """Every input file of a run, generated once (seeded) and written as .npy."""

    def __init__(self, m, workdir, seed):
        self.m, self.workdir, self.seed = m, workdir, seed
        self.cache = {}

    def _save(self, name, array):
        path = os.path.join(self.workdir, name + ".npy")
        self.m["np"].save(path, array)
        self.cache[name] = (path, array)
        return path, array

    def image(self, h, w):
        name = f"scene_{h}x{w}_f32"
        if name not in self.cache:
            rng = self.m["np"].random.default_rng([self.seed, h, w])
            self._save(name, scene(self.m, rng, h, w))
        return self.cache[name]

    def image_u8(self, h, w):
        name = f"scene_{h}x{w}_u8"
        if name not in self.cache:
            np = self.m["np"]
            self._save(name, np.rint(self.image(h, w)[1]).astype(np.uint8))
        return self.cache[name]

    def mask(self, h, w):
        """Foreground at or above the 85th percentile: hot spots and specks of bright clutter."""
        name = f"mask_{h}x{w}_u8"
        if name not in self.cache:
            np = self.m["np"]
            image = self.image(h, w)[1]
            self._save(name, (image >= np.percentile(image, 85)).astype(np.uint8))
        return self.cache[name]

    def gauss9(self):
        """The 9-tap Gaussian of sigma 2, normalised to sum 1 (plume's gauss:9:2 in 1-D)."""
        name = "gauss_9_f32"
        if name not in self.cache:
            np = self.m["np"]
            taps = np.exp(-((np.arange(9) - 4.0) ** 2) / (2.0 * 2.0 ** 2))
            self._save(name, (taps / taps.sum()).astype(np.float32))
        return self.cache[name]

    def log9(self):
        """A 9x9 negated Laplacian of Gaussian of sigma 1.5, its mean taken out (a blob
        detector like the default preset's log:9:1.5)."""
        name = "log_9x9_f32"
        if name not in self.cache:
            np = self.m["np"]
            y, x = np.mgrid[-4:5, -4:5].astype(np.float64)
            r2, s2 = x * x + y * y, 1.5 ** 2
            log = (r2 - 2.0 * s2) / (s2 * s2) * np.exp(-r2 / (2.0 * s2))
            self._save(name, (-(log - log.mean())).astype(np.float32))
        return self.cache[name]

    def kernel3(self):
        name = "kernel_3x3_f32"
        if name not in self.cache:
            rng = self.m["np"].random.default_rng([self.seed, 3, 3])
            self._save(name, rng.uniform(-1.0, 1.0, (3, 3)).astype(self.m["np"].float32))
        return self.cache[name]


# ---- timing ------------------------------------------------------------------------------


# Both sides warm up for this long before they are timed (at least 3 calls for a peer,
# 1 for plume): a process's first runs are slower until its threads and caches settle.
WARMUP_MS = 50


def time_peer(fn, runs, warmups=3):
    """Median and min of `runs` calls of fn, in ms, after `warmups` calls and WARMUP_MS."""
    deadline = time.perf_counter() + WARMUP_MS / 1e3
    done = 0
    while done < warmups or time.perf_counter() < deadline:
        fn()
        done += 1
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1e3)
    times.sort()
    n = len(times)
    median = times[n // 2] if n % 2 else 0.5 * (times[n // 2 - 1] + times[n // 2])
    return {"median_ms": median, "min_ms": times[0], "max_ms": times[-1], "runs": n}


TIME_LINE = re.compile(r"time_ms median=([0-9.eE+-]+) min=([0-9.eE+-]+) max=([0-9.eE+-]+)")


class PlumeError(Exception):
    pass


def run_plume(plume, op, arguments, repeat):
    """Run `plume op OP ... --backend host [--repeat N]`; the timing dict, or None
    without repeat (one untimed run, whose output the check reads)."""
    command = [plume, "op", op] + arguments + ["--backend", "host"]
    if repeat:
        command += ["--repeat", str(repeat), "--warmup-ms", str(WARMUP_MS)]
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        raise PlumeError(f"{' '.join(command)}: exit {done.returncode}: {done.stderr.strip()}")
    if not repeat:
        return None
    match = TIME_LINE.search(done.stderr)
    if not match:
        raise PlumeError(f"{' '.join(command)}: no time_ms line in: {done.stderr.strip()}")
    median, low, high = (float(g) for g in match.groups())
    return {"median_ms": median, "min_ms": low, "max_ms": high, "runs": repeat}


def plume_overhead_ms(m, plume, workdir, runs):
    """plume op's fixed cost: a threshold of one pixel, timed as every op is."""
    path = os.path.join(workdir, "one_pixel_f32.npy")
    m["np"].save(path, m["np"].zeros((1, 1), dtype=m["np"].float32))
    out = os.path.join(workdir, "plume_one_pixel.npy")
    return run_plume(plume, "threshold", ["--in", path, "--out", out, "--value", "0"], runs)


def copy_bandwidth_gbps(m, runs):
    """Bytes moved per second (read plus written) by one np.copyto of 64 MiB, one
    thread: the machine's memory bandwidth as a single core sees it."""
    np = m["np"]
    src = np.ones(64 << 20, dtype=np.uint8)
    dst = np.empty_like(src)
    median_ms = time_peer(lambda: np.copyto(dst, src), runs)["median_ms"]
    return 2.0 * src.nbytes / (median_ms * 1e6)


# ---- correctness -------------------------------------------------------------------------


class Mismatch(Exception):
    pass


def check_close(np, name, got, want, tolerance):
    if got.shape != want.shape:
        raise Mismatch(f"{name}: shape {got.shape}, expected {want.shape}")
    error = float(np.max(np.abs(got.astype(np.float64) - want.astype(np.float64))))
    if not error <= tolerance:
        raise Mismatch(f"{name}: max |difference| {error:.3g} above the tolerance {tolerance:.3g}")
    return error


def check_same_partition(np, name, got, want):
    """got and want label the same pixels as the same components (numbering aside)."""
    if got.shape != want.shape:
        raise Mismatch(f"{name}: shape {got.shape}, expected {want.shape}")
    if not np.array_equal(got == 0, want == 0):
        raise Mismatch(f"{name}: the background differs")
    pairs = np.unique(np.stack([got.ravel(), want.ravel()]), axis=1)
    if len(np.unique(pairs[0])) != pairs.shape[1] or len(np.unique(pairs[1])) != pairs.shape[1]:
        raise Mismatch(f"{name}: not the same components")


# ---- the cases ---------------------------------------------------------------------------


def conv2d_case(m, inputs, workdir, size, large=False):
    """The 3x3 case, or with `large` the 9x9 LoG case (see the header)."""
    np, cv2, ndimage = m["np"], m["cv2"], m["ndimage"]
    h, w = size
    image_path, image = inputs.image(h, w)
    kernel_path, kernel = inputs.log9() if large else inputs.kernel3()
    side = kernel.shape[0]
    pad = side // 2
    border, cv2_border, scipy_mode = (("replicate", cv2.BORDER_REPLICATE, "nearest") if large
                                      else ("reflect101", cv2.BORDER_REFLECT_101, "mirror"))
    out = os.path.join(workdir, f"plume_conv2d_{side}x{side}_{h}x{w}.npy")
    plume_args = ["--in", image_path, "--kernel", kernel_path, "--out", out, "--pad",
                  f"{pad},{pad}", "--border", border]
    peers = {
        "cv2.filter2D": lambda: cv2.filter2D(image, cv2.CV_32F, kernel, borderType=cv2_border),
        "scipy.ndimage.correlate": lambda: ndimage.correlate(image, kernel, mode=scipy_mode),
    }

    def check():
        got = np.load(out)
        # f32 sums of side^2 products in any order: within a few ulps of the largest sum
        # times the terms' count.
        tolerance = (1e-5 * side * side / 9.0 * float(np.abs(kernel).sum())
                     * float(np.abs(image).max()))
        for name, fn in peers.items():
            check_close(np, f"conv2d {side}x{side} {h}x{w} vs {name}", got, fn(), tolerance)

    return {"op": "conv2d", "size": f"{h}x{w}", "what": f"{side}x{side} f32 same {border}",
            "plume": ("conv2d", plume_args), "peers": peers, "check": check,
            "bytes": image.nbytes + h * w * 4}


def sobel_case(m, inputs, workdir, size):
    np, cv2 = m["np"], m["cv2"]
    h, w = size
    image_path, image = inputs.image(h, w)
    out = os.path.join(workdir, f"plume_sobel_{h}x{w}.npy")

    def opencv():
        gx = cv2.Sobel(image, cv2.CV_32F, 1, 0, ksize=3, borderType=cv2.BORDER_REFLECT_101)
        gy = cv2.Sobel(image, cv2.CV_32F, 0, 1, ksize=3, borderType=cv2.BORDER_REFLECT_101)
        return cv2.magnitude(gx, gy)

    peers = {"cv2.Sobel+magnitude": opencv}

    def check():
        tolerance = 1e-5 * 8.0 * float(np.abs(image).max())
        check_close(np, f"sobel {h}x{w} vs OpenCV", np.load(out), opencv(), tolerance)

    return {"op": "sobel", "size": f"{h}x{w}", "what": "f32 magnitude reflect101",
            "plume": ("sobel", ["--in", image_path, "--out", out]), "peers": peers,
            "check": check, "bytes": image.nbytes + h * w * 4}


def entropy_case(m, inputs, workdir, size, window=16):
    np, rank = m["np"], m["rank"]
    h, w = size
    image_path, image = inputs.image_u8(h, w)
    out = os.path.join(workdir, f"plume_entropy_{h}x{w}_w{window}.npy")
    footprint = np.ones((window, window), dtype=np.uint8)
    peers = {"skimage.rank.entropy": lambda: rank.entropy(image, footprint)}

    def check():
        check_close(np, f"entropy {h}x{w} w{window} vs scikit-image", np.load(out),
                    peers["skimage.rank.entropy"](), 1e-4)

    return {"op": "entropy", "size": f"{h}x{w}", "what": f"u8 w{window}",
            "plume": ("entropy", ["--in", image_path, "--out", out, "--window", str(window)]),
            "peers": peers, "check": check, "bytes": image.nbytes + h * w * 4}


def label_case(m, inputs, workdir, size, connectivity):
    np, cv2, ndimage = m["np"], m["cv2"], m["ndimage"]
    h, w = size
    mask_path, mask = inputs.mask(h, w)
    out = os.path.join(workdir, f"plume_label_{h}x{w}_c{connectivity}.npy")
    structure = np.ones((3, 3)) if connectivity == 8 else None
    peers = {
        "cv2.connectedComponents": lambda: cv2.connectedComponents(
            mask, connectivity=connectivity, ltype=cv2.CV_32S),
        "scipy.ndimage.label": lambda: ndimage.label(mask, structure=structure),
    }

    def check():
        got = np.load(out)
        want, count = peers["scipy.ndimage.label"]()
        name = f"label {h}x{w} c{connectivity}"
        if got.dtype != np.int32 or not np.array_equal(got, want):
            raise Mismatch(f"{name}: labels differ from scipy.ndimage.label's")
        n, opencv = peers["cv2.connectedComponents"]()
        if n - 1 != count:
            raise Mismatch(f"{name}: {count} components, OpenCV finds {n - 1}")
        check_same_partition(np, f"{name} vs OpenCV", got, opencv)
        return count

    return {"op": "label", "size": f"{h}x{w}", "what": f"u8 mask c{connectivity}",
            "plume": ("label", ["--in", mask_path, "--out", out, "--connectivity",
                                str(connectivity)]),
            "peers": peers, "check": check, "bytes": mask.nbytes + h * w * 4}


def segment_case(m, inputs, workdir, size):
    """segment (threshold at the 85th percentile, made an f32, 8-connected label, and
    regions with the image as intensity, in one call) against OpenCV's labelling with
    statistics (area, bounding box, centroid: no intensity terms) and against
    scipy.ndimage's calls for plume's whole table."""
    np, cv2, ndimage = m["np"], m["cv2"], m["ndimage"]
    h, w = size
    image_path, image = inputs.image(h, w)
    value = float(np.float32(np.percentile(image, 85)))  # the same threshold on every side
    out = os.path.join(workdir, f"plume_segment_{h}x{w}.npy")
    regions = os.path.join(workdir, f"plume_segment_{h}x{w}.csv")
    structure = np.ones((3, 3))

    def scipy_table():
        labels, n = ndimage.label(image >= value, structure=structure)
        index = np.arange(1, n + 1)
        return labels, n, {
            "area": np.bincount(labels.ravel(), minlength=n + 1)[1:],
            "boxes": ndimage.find_objects(labels),
            "centroid": np.array(ndimage.center_of_mass(labels > 0, labels, index)),
            "sum": ndimage.sum_labels(image, labels, index),
            "max": ndimage.maximum(image, labels, index),
            "wcentroid": np.array(ndimage.center_of_mass(image, labels, index))}

    def opencv():
        return cv2.connectedComponentsWithStats((image >= value).astype(np.uint8),
                                                connectivity=8, ltype=cv2.CV_32S)

    peers = {"cv2.connectedComponentsWithStats": opencv,
             "scipy.ndimage label+find_objects+sums": scipy_table}

    def check():
        name = f"segment {h}x{w}"
        got = np.load(out)
        labels, n, want = scipy_table()
        if got.dtype != np.int32 or not np.array_equal(got, labels):
            raise Mismatch(f"{name}: labels differ from scipy.ndimage.label's")
        table = np.loadtxt(regions, delimiter=",", skiprows=1, ndmin=2).reshape(-1, 12)
        if table.shape[0] != n:
            raise Mismatch(f"{name}: {table.shape[0]} regions, scipy finds {n}")
        boxes = np.array([[b[0].start, b[1].start, b[0].stop - 1, b[1].stop - 1]
                          for b in want["boxes"]]).reshape(-1, 4)
        exact = {"label": (table[:, 0], np.arange(1, n + 1)), "area": (table[:, 1], want["area"]),
                 "bounding box": (table[:, 2:6], boxes), "max": (table[:, 9], want["max"])}
        close = {"centroid": (table[:, 6:8], want["centroid"]), "sum": (table[:, 8], want["sum"]),
                 "weighted centroid": (table[:, 10:12], want["wcentroid"])}
        for column, (mine, theirs) in exact.items():
            if not np.array_equal(mine, np.asarray(theirs, dtype=np.float64).reshape(mine.shape)):
                raise Mismatch(f"{name}: {column} differs from scipy.ndimage's")
        for column, (mine, theirs) in close.items():
            theirs = np.asarray(theirs, dtype=np.float64).reshape(mine.shape)
            if not np.allclose(mine, theirs, rtol=1e-9, atol=1e-9):
                raise Mismatch(f"{name}: {column} differs from scipy.ndimage's by more than 1e-9")
        count, theirs, stats, centroids = opencv()
        if count - 1 != n:
            raise Mismatch(f"{name}: {n} components, OpenCV finds {count - 1}")
        check_same_partition(np, f"{name} vs OpenCV", got, theirs)
        mine_of = np.zeros(count, dtype=np.int64)  # OpenCV's label -> plume's
        mine_of[theirs.ravel()] = got.ravel()
        order = mine_of[1:] - 1
        cv_boxes = np.stack([stats[1:, cv2.CC_STAT_TOP], stats[1:, cv2.CC_STAT_LEFT],
                             stats[1:, cv2.CC_STAT_TOP] + stats[1:, cv2.CC_STAT_HEIGHT] - 1,
                             stats[1:, cv2.CC_STAT_LEFT] + stats[1:, cv2.CC_STAT_WIDTH] - 1], 1)
        if not (np.array_equal(table[order, 1], stats[1:, cv2.CC_STAT_AREA]) and
                np.array_equal(table[order, 2:6], cv_boxes) and
                np.allclose(table[order, 6:8], centroids[1:, ::-1], rtol=1e-9, atol=1e-9)):
            raise Mismatch(f"{name}: areas, boxes or centroids differ from OpenCV's")
        return n

    return {"op": "segment", "size": f"{h}x{w}", "what": "f32 >= p85 c8, intensity",
            "plume": ("segment", ["--in", image_path, "--out", out, "--regions", regions,
                                  "--value", repr(value), "--cmp", "ge"]),
            "peers": peers, "check": check, "bytes": image.nbytes + h * w * 4}


def sepconv2d_case(m, inputs, workdir, size):
    np, cv2, ndimage = m["np"], m["cv2"], m["ndimage"]
    h, w = size
    image_path, image = inputs.image(h, w)
    taps_path, taps = inputs.gauss9()
    out = os.path.join(workdir, f"plume_sepconv2d_{h}x{w}.npy")
    plume_args = ["--in", image_path, "--kernel-x", taps_path, "--kernel-y", taps_path,
                  "--out", out, "--pad", "same", "--border", "reflect101"]
    square = np.outer(taps, taps).astype(np.float32)
    peers = {
        "cv2.sepFilter2D": lambda: cv2.sepFilter2D(image, cv2.CV_32F, taps, taps,
                                                   borderType=cv2.BORDER_REFLECT_101),
        "scipy.ndimage.correlate1d x2": lambda: ndimage.correlate1d(
            ndimage.correlate1d(image, taps, axis=1, mode="mirror"), taps, axis=0, mode="mirror"),
        "cv2.filter2D 9x9": lambda: cv2.filter2D(image, cv2.CV_32F, square,
                                                 borderType=cv2.BORDER_REFLECT_101),
    }

    def check():
        got = np.load(out)
        # f32 sums of 9 then 9 terms (81 for filter2D) in other orders.
        tolerance = 1e-5 * float(np.abs(square).sum()) * float(np.abs(image).max())
        for name, fn in peers.items():
            check_close(np, f"sepconv2d {h}x{w} vs {name}", got, fn(), tolerance)

    return {"op": "sepconv2d", "size": f"{h}x{w}", "what": "9+9 Gaussian f32 same reflect101",
            "plume": ("sepconv2d", plume_args), "peers": peers, "check": check,
            "bytes": image.nbytes + h * w * 4}


def build_cases(m, inputs, workdir, check_only, quick, only):
    cases = []
    if check_only:
        plan = [("conv2d", (7, 13)), ("conv2d", (33, 40)), ("conv2d_9x9", (33, 40)),
                ("conv2d_9x9", (3, 5)), ("sepconv2d", (7, 13)),
                ("sepconv2d", (40, 33)), ("sobel", (7, 13)), ("sobel", (1, 9)),
                ("entropy", (7, 13)), ("entropy", (40, 33)), ("label", (33, 40)),
                ("label", (1, 17)), ("segment", (33, 40)), ("segment", (1, 17))]
    else:
        big = [] if quick else [(2048, 2048)]
        plan = [("conv2d", s) for s in [(256, 256)] + big]
        plan += [("conv2d_9x9", s) for s in [(512, 512)] + big]
        plan += [("sepconv2d", s) for s in [(512, 512)] + big]
        plan += [("sobel", s) for s in [(256, 256)] + big]
        plan += [("entropy", s) for s in [(512, 512)] + big]
        plan += [("label", s) for s in [(256, 256)] + big]
        plan += [("segment", s) for s in [(256, 256)] + big]
    for op, size in plan:
        if only and op.split("_")[0] not in only:  # conv2d_9x9 is one of conv2d's
            continue
        if op == "conv2d":
            cases.append(conv2d_case(m, inputs, workdir, size))
        elif op == "conv2d_9x9":
            cases.append(conv2d_case(m, inputs, workdir, size, large=True))
        elif op == "sepconv2d":
            cases.append(sepconv2d_case(m, inputs, workdir, size))
        elif op == "sobel":
            cases.append(sobel_case(m, inputs, workdir, size))
        elif op == "entropy":
            cases.append(entropy_case(m, inputs, workdir, size, 16))
            if check_only:
                cases.append(entropy_case(m, inputs, workdir, size, 5))
        elif op == "segment":
            cases.append(segment_case(m, inputs, workdir, size))
        else:
            cases.append(label_case(m, inputs, workdir, size, 8))
            cases.append(label_case(m, inputs, workdir, size, 4))
    return cases


# ---- report ------------------------------------------------------------------------------


def machine():
    model = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as info:
            for line in info:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return {"cpu": model, "cores": os.cpu_count(), "system": platform.platform()}


def load_average():
    try:
        return list(os.getloadavg())
    except OSError:
        return None


def git_commit():
    here = os.path.dirname(os.path.abspath(__file__))
    try:
        done = subprocess.run(["git", "-C", here, "rev-parse", "--short", "HEAD"],
                              capture_output=True, text=True, timeout=10)
        return done.stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        return None


def print_table(rows):
    header = ("op", "size", "case", "peer", "plume ms", "peer ms", "ratio", "target", "met",
              "of_floor")
    lines = [header]
    for r in rows:
        target = f">= {r['target']:.2f}" if r["target"] is not None else ""
        met = "" if r["met"] is None else ("yes" if r["met"] else "NO")
        lines.append((r["op"], r["size"], r["what"], r["peer"], f"{r['plume_median_ms']:.4f}",
                      f"{r['peer_median_ms']:.4f}", f"{r['ratio']:.2f}", target, met,
                      f"{r['plume_of_floor']:.1f}"))
    widths = [max(len(line[i]) for line in lines) for i in range(len(header))]
    for line in lines:
        print("  ".join(cell.ljust(widths[i]) if i < 4 else cell.rjust(widths[i])
                        for i, cell in enumerate(line)))


def main():
    parser = argparse.ArgumentParser(
        description="plume's CPU kernels against OpenCV, scikit-image and scipy "
                    "(see the header of this file)")
    parser.add_argument("--plume", default=default_plume(), help="the built plume binary")
    parser.add_argument("--json", metavar="PATH", help="write the results as JSON")
    parser.add_argument("--runs", type=int, default=20, help="timed runs per round (>= 20)")
    parser.add_argument("--rounds", type=int, default=3,
                        help="rounds per case, alternating plume and the peers (best kept)")
    parser.add_argument("--workdir", help="where the .npy inputs and outputs go "
                                          "(default: a temporary directory, removed)")
    parser.add_argument("--only", help="comma-separated ops: conv2d,sepconv2d,sobel,entropy,"
                                       "label,segment")
    parser.add_argument("--quick", action="store_true", help="the seed sizes only")
    parser.add_argument("--seed", type=int, default=20261122)
    parser.add_argument("--check", action="store_true",
                        help="tiny inputs, correctness only (no timing)")
    args = parser.parse_args()
    if args.runs < 1 or args.rounds < 1:
        parser.error("--runs and --rounds must be at least 1")
    only = set(args.only.split(",")) if args.only else None
    if only and not only <= set(TARGETS) | set(UNTARGETED):
        parser.error(f"--only: unknown op in {args.only}")
    m = import_peers()
    if m is None:
        return EXIT_SKIP
    if not os.access(args.plume, os.X_OK):
        print(f"compare_cpu: {args.plume} is not an executable (pass --plume)", file=sys.stderr)
        return 2

    temporary = None
    workdir = args.workdir
    if workdir:
        os.makedirs(workdir, exist_ok=True)
    else:
        temporary = tempfile.TemporaryDirectory(prefix="plume-compare-")
        workdir = temporary.name
    try:
        return run(m, args, workdir, only)
    finally:
        if temporary:
            temporary.cleanup()


def run(m, args, workdir, only):
    np, cv2 = m["np"], m["cv2"]
    inputs = Inputs(m, workdir, args.seed)
    cases = build_cases(m, inputs, workdir, args.check, args.quick, only)
    load_before = load_average()
    bandwidth = None if args.check else copy_bandwidth_gbps(m, args.runs)
    rows = []
    for case in cases:
        op, plume_args = case["plume"]
        try:
            run_plume(args.plume, op, plume_args, 0)
            detail = case["check"]()
        except (PlumeError, Mismatch) as error:
            print(f"compare_cpu: {error}", file=sys.stderr)
            return 1
        label = f"{case['op']} {case['size']} {case['what']}"
        if args.check:
            print(f"ok  {label}" + (f" ({detail} components)" if detail is not None else ""))
            continue
        # Rounds alternate the sides, so that a burst of load elsewhere hits one round of
        # each rather than all of one side; each side keeps its best round's median.
        rounds = {"plume": []}
        rounds.update({peer: [] for peer in case["peers"]})
        for _ in range(args.rounds):
            try:
                rounds["plume"].append(run_plume(args.plume, op, plume_args, args.runs))
            except PlumeError as error:
                print(f"compare_cpu: {error}", file=sys.stderr)
                return 1
            for peer, fn in case["peers"].items():
                rounds[peer].append(time_peer(fn, args.runs))
        timing = min(rounds["plume"], key=lambda t: t["median_ms"])
        floor = case["bytes"] / (bandwidth * 1e6)
        for peer in case["peers"]:
            peer_timing = min(rounds[peer], key=lambda t: t["median_ms"])
            target_peer, minimum, _ = TARGETS.get(case["op"], (None, None, None))
            target = minimum if peer == target_peer else None
            ratio = peer_timing["median_ms"] / timing["median_ms"]
            rows.append({
                "op": case["op"], "size": case["size"], "what": case["what"], "peer": peer,
                "plume_median_ms": timing["median_ms"], "plume_min_ms": timing["min_ms"],
                "plume_max_ms": timing["max_ms"], "peer_median_ms": peer_timing["median_ms"],
                "peer_min_ms": peer_timing["min_ms"], "peer_max_ms": peer_timing["max_ms"],
                "plume_round_medians_ms": [t["median_ms"] for t in rounds["plume"]],
                "peer_round_medians_ms": [t["median_ms"] for t in rounds[peer]],
                "runs": args.runs, "rounds": args.rounds, "ratio": ratio, "target": target,
                "met": None if target is None else ratio >= target,
                "bytes": case["bytes"], "floor_ms": floor,
                "plume_of_floor": timing["median_ms"] / floor,
                "components": detail})
            print(f"{label}: plume {timing['median_ms']:.4f} ms, {peer} "
                  f"{peer_timing['median_ms']:.4f} ms", file=sys.stderr)
    if args.check:
        print("compare_cpu --check: every case matches its peers")
        return 0
    overhead = plume_overhead_ms(m, args.plume, workdir, args.runs)

    print()
    print_table(rows)
    print()
    for op, (peer, minimum, words) in TARGETS.items():
        mine = [r for r in rows if r["op"] == op and r["target"] is not None]
        if mine:
            verdict = ", ".join(f"{r['size']} {r['what']}: {r['ratio']:.2f} "
                                f"({'met' if r['met'] else 'NOT met'})" for r in mine)
            print(f"target {op}: {words}: {verdict}")
    info = machine()
    result = {
        "benchmark": "compare_cpu",
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "commit": git_commit(),
        "machine": info,
        "load_average_before": load_before,
        "load_average_after": load_average(),
        "plume": os.path.abspath(args.plume),
        "plume_threads": info["cores"],
        "peers": {"numpy": np.__version__, "scipy": sys.modules["scipy"].__version__,
                  "skimage": sys.modules["skimage"].__version__, "cv2": cv2.__version__,
                  "cv2_threads": cv2.getNumThreads()},
        "runs": args.runs,
        "rounds": args.rounds,
        "seed": args.seed,
        "plume_op_overhead": overhead,
        "copy_bandwidth_gbps": bandwidth,
        "results": rows,
    }
    print(f"\nfloor: memcpy of 64 MiB at {bandwidth:.1f} GB/s (one thread, read plus written)")
    print(f"plume op's fixed cost (threshold of a 1x1 image through a host stream): "
          f"median {overhead['median_ms']:.4f} ms, min {overhead['min_ms']:.4f} ms")
    print(f"{info['cpu']}, {info['cores']} cores; OpenCV {cv2.__version__} on "
          f"{cv2.getNumThreads()} threads; load average before {load_before}, after "
          f"{result['load_average_after']}")
    if args.json:
        with open(args.json, "w") as out:
            json.dump(result, out, indent=1)
            out.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
