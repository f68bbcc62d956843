#!/usr/bin/env python3
"""scripts/check_hard_scene.py: is the hard scene of `plume scene --difficulty hard` solvable?

A NumPy/SciPy model of a temporal detector, run on the files `plume scene` writes, to check
that the hard scene (support/scene.h) is hard for a per-frame spatial detector and solvable
by a temporal one:

  1. calibration: x = gain * raw + offset (plume's nuc), the pixels of bad.npy replaced by
     the median of their 3 x 3 neighbours;
  2. background: a per-pixel exponential moving average B of the frames (alpha 0.05,
     started at frame 0), updated after each frame, at 0.3 alpha within 2 px of that
     frame's detections (so a slow plume does not fade into it), and the residual
     r = x - B (B before this frame's update);
  3. a matched filter: r smoothed by a Gaussian of sigma 1.2 px (zero outside the frame);
  4. CFAR: z = (f - mean) / std, mean and std of the filtered residual over a 21 x 21
     window less its central 7 x 7 guard (the plume stays out of its own reference),
     counting only the pixels inside the frame; pixels with z > k (default 5.5) form
     8-connected regions, each a detection at its centroid weighted by f;
  5. score as support/score.h does: per frame, a detection matches a plume within
     max(3, 2 sigma) px of its centre, closest pairs first, each at most once; frames
     before --skip (default 30, the settling of the background) are left out.

usage:
  build/apps/plume scene --frames 100 --size 256,256 --seed 1 --difficulty hard \\
      --out /tmp/h/f.npy --truth /tmp/h/t.csv --calibration /tmp/h
  scripts/check_hard_scene.py /tmp/h [--skip 30] [--alpha 0.05] [--k 5.5] (see --help)

Its output on that scene (2026-11-26, the scene of commit c391483):
  frames 30..99: truth 300, detections 280, true positives 279, precision 0.9964, recall 0.9300
and on longer scenes (the same commands with --frames 300 at 256x256, --frames 200 at
512x512; each line prefixed with its seed and size):
  seed 1 256: frames 30..299: truth 1348, detections 1209, true positives 1199, precision 0.9917, recall 0.8895
  seed 2 256: frames 30..299: truth 1254, detections 1182, true positives 1173, precision 0.9924, recall 0.9354
  seed 3 256: frames 30..299: truth 1271, detections 1164, true positives 1156, precision 0.9931, recall 0.9095
  seed 4 256: frames 30..299: truth 1352, detections 1278, true positives 1262, precision 0.9875, recall 0.9334
  seed 1 512: frames 30..199: truth 2589, detections 2438, true positives 2419, precision 0.9922, recall 0.9343
  seed 2 512: frames 30..199: truth 2333, detections 2194, true positives 2174, precision 0.9909, recall 0.9318
  seed 3 512: frames 30..199: truth 2484, detections 2528, true positives 2343, precision 0.9268, recall 0.9432
  (all seven: precision 0.978, recall 0.928). On the 100-frame scene above, plume's
  per-frame PLM_PRESET_DEFAULT_PIPELINE scores precision 0.0023, recall 0.557 (frames 30..99,
  and its 1024-row tables overflow in every frame), and `nuc gain=@gain offset=@offset`
  before it precision 0.043, recall 0.643: the hot pixels and the disc's edges are
  blobs to the Laplacian of Gaussian, and faint plumes are below its threshold.
The misses are mostly plumes crossing a disc's edge or the ghost it leaves in the
background; the false alarms single pixels at z just above k. Needs numpy and scipy
(/usr/bin/python3 here).
"""
import argparse
import os
import sys

import numpy as np
from scipy import ndimage

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tune_detection import score  # noqa: E402  (plume score's rule, in NumPy)


MODE = "constant"


def ring_stats(f, window, guard):
    """The mean and variance of f over a window x window box less its central guard x
    guard box, around each pixel (the plume itself stays out of its reference)."""
    def box_sum(v, size):
        return ndimage.uniform_filter(v, size, mode=MODE) * (size * size)
    # Counted over the pixels inside the frame only.
    ones = np.ones_like(f)
    n = box_sum(ones, window) - box_sum(ones, guard)
    s1 = box_sum(f, window) - box_sum(f, guard)
    s2 = box_sum(f * f, window) - box_sum(f * f, guard)
    mean = s1 / n
    return mean, s2 / n - mean * mean


def reference_detections(folder, frames="f.npy", alpha=0.05, masked=0.3, sigma=1.2, window=21,
                         guard=7, k=5.5, mode="constant"):
    """The chain above on the scene in folder: a dict frame -> array of (row, col)."""
    global MODE
    MODE = mode
    raw = np.load(f"{folder}/{frames}", mmap_mode="r")
    gain = np.load(f"{folder}/gain.npy").astype(np.float64)
    offset = np.load(f"{folder}/offset.npy").astype(np.float64)
    bad = np.load(f"{folder}/bad.npy").astype(bool)
    background = None
    detections = {}
    for t in range(raw.shape[0]):
        x = gain * raw[t].astype(np.float64) + offset
        x[bad] = ndimage.median_filter(x, size=3)[bad]
        if background is None:
            background = x.copy()
        r = x - background
        f = ndimage.gaussian_filter(r, sigma, mode=mode)
        mean, var = ring_stats(f, window, guard)
        z = (f - mean) / np.sqrt(np.maximum(var, 1e-6))
        mask = z > k
        labels, n = ndimage.label(mask, structure=np.ones((3, 3)))
        if n:
            w = np.where(mask, np.maximum(f, 0), 0)
            cents = ndimage.center_of_mass(w, labels, range(1, n + 1))
            detections[t] = np.array(cents)
        # The background learns the frame except where it found something.
        rate = np.where(ndimage.binary_dilation(mask, iterations=2), alpha * masked, alpha)
        background += rate * (x - background)
    return detections


def reference_score(folder, skip, frames="f.npy", truth="t.csv", **chain):
    """(tp, fp, fn, precision, recall, mean error) of the chain on the scene in folder,
    frames before skip left out (plume score --skip-frames)."""
    detections = reference_detections(folder, frames, **chain)
    # frame, row, col, amplitude, sigma
    rows = np.loadtxt(f"{folder}/{truth}", delimiter=",", skiprows=1, ndmin=2)
    rows = rows[rows[:, 0] >= skip]
    detections = {f: d for f, d in detections.items() if f >= skip}
    return score(rows, detections)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dir", help="the folder of f.npy, t.csv, gain.npy, offset.npy, bad.npy")
    ap.add_argument("--frames", default="f.npy")
    ap.add_argument("--truth", default="t.csv")
    ap.add_argument("--skip", type=int, default=30)
    ap.add_argument("--alpha", type=float, default=0.05)
    ap.add_argument("--sigma", type=float, default=1.2)
    ap.add_argument("--window", type=int, default=21)
    ap.add_argument("--guard", type=int, default=7)
    ap.add_argument("--mode", default="constant", help="scipy's edge mode of the filters")
    ap.add_argument("--masked", type=float, default=0.3,
                    help="the background's rate near detections, in alphas")
    ap.add_argument("--k", type=float, default=5.5)
    a = ap.parse_args()
    raw = np.load(f"{a.dir}/{a.frames}", mmap_mode="r")
    tp, fp, fn, precision, recall, _ = reference_score(
        a.dir, a.skip, a.frames, a.truth, alpha=a.alpha, masked=a.masked, sigma=a.sigma,
        window=a.window, guard=a.guard, k=a.k, mode=a.mode)
    print(f"frames {a.skip}..{raw.shape[0] - 1}: truth {tp + fn}, detections {tp + fp}, "
          f"true positives {tp}, precision {precision:.4f}, recall {recall:.4f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
