#!/usr/bin/python3
"""Choose plume's default detection pipeline on the synthetic infrared scene.

    /usr/bin/python3 scripts/tune_detection.py [--plume build/apps/plume]
        [--frames 50] [--sizes 256x256,512x512] [--seeds 1,2,3] [--quick]

Writes scenes with the C generator (`plume scene`, so what is scored is exactly what
`plume demo` will see), runs candidate pipelines through a NumPy/SciPy model of plume's
operations, scores their detections against the truth with the rule of support/score.h, and
prints, for each candidate chain, the threshold sweep and the best operating point, and
for comparison a naive threshold on raw intensity. The chosen chain is the one whose
range of thresholds with precision and recall >= 0.95 is widest (then the best F1), at
its best F1. It is then scored on held-out seeds (each seed + 100), its detections are
written as `plume detect` CSVs and scored by `plume score`, which must agree, and the
chain is run once more by plume's own ops (`plume op conv2d`, `threshold`, `label
--regions --intensity`) and scored. The output of a run is kept in docs/records/tune_detection.txt;
the result is the default preset, PLM_PRESET_DEFAULT_PIPELINE in include/plume/presets.h.

The model of each op follows plume's headers (include/plume/*.h):
  conv2d    cross-correlation (no flip), f32; `pad=same` with a border mode: reflect101 is
            scipy's 'mirror', replicate 'nearest', zero 'constant'.
  kernels   as plm_pipeline_parse makes them (include/plume/pipeline.h): box:K = 1/K^2;
            gauss:K:S = exp(-r^2/2S^2) scaled to sum 1; log:K:S = the NEGATED Laplacian of
            Gaussian (1/(pi S^4)) (1 - r^2/2S^2) exp(-r^2/2S^2), less its mean (sum 0).
  sobel     OpenCV's 3x3 Sobel, magnitude sqrt(gx^2 + gy^2) in f32.
  entropy   f32 binned as floor((v - lo) B / (hi - lo)) clipped to [0, B-1] (auto: the
            frame's min and max), then skimage.filters.rank.entropy over a W x W window,
            in bits (pixels outside the image left out), which plume matches exactly.
  threshold compared in double precision.
  label     scipy.ndimage.label, 8-connectivity.
  regions   the intensity is the input frame; wcentroid = sum(I * coord) / sum(I).

Scoring (support/score.h): per frame, pairs (truth, detection) within max(3, 2 sigma) px,
closest first, each used once; precision = TP / (TP + FP), recall = TP / (TP + FN),
centroid error = mean distance of the matched pairs.
"""
import argparse
import os
import subprocess
import sys
import tempfile
import time

import numpy as np
import scipy.ndimage as ndi

# ---- plume's ops -------------------------------------------------------------------------


def kernel(spec):
    """A conv2d kernel of the pipeline text form (box:K, gauss:K:S, log:K:S), as f32."""
    parts = spec.split(":")
    k = int(parts[1])
    c = (k - 1) / 2.0
    i = np.arange(k, dtype=np.float64) - c
    r2 = i[:, None] ** 2 + i[None, :] ** 2
    if parts[0] == "box":
        taps = np.full((k, k), 1.0 / (k * k))
    elif parts[0] == "gauss":
        s = float(parts[2])
        taps = np.exp(-r2 / (2 * s * s))
        taps /= taps.sum()
    elif parts[0] == "log":
        s = float(parts[2])
        taps = (1.0 / (np.pi * s**4)) * (1 - r2 / (2 * s * s)) * np.exp(-r2 / (2 * s * s))
        taps -= taps.mean()
    else:
        raise ValueError("unknown kernel " + spec)
    return taps.astype(np.float32)


BORDERS = {"reflect101": "mirror", "replicate": "nearest", "zero": "constant"}


def op_conv2d(frame, params):
    k = kernel(params["kernel"])
    assert params.get("pad") == "same", "the model does 'same' convolutions only"
    mode = BORDERS[params.get("border", "zero")]
    return ndi.correlate(frame.astype(np.float32), k, mode=mode, cval=0.0).astype(np.float32)


def op_sobel(frame, params):
    import cv2

    border = {
        "reflect101": cv2.BORDER_REFLECT_101,
        "replicate": cv2.BORDER_REPLICATE,
        "zero": cv2.BORDER_CONSTANT,
    }[params.get("border", "reflect101")]
    f = frame.astype(np.float32)
    gx = cv2.Sobel(f, cv2.CV_32F, 1, 0, ksize=3, borderType=border)
    gy = cv2.Sobel(f, cv2.CV_32F, 0, 1, ksize=3, borderType=border)
    return np.sqrt(gx * gx + gy * gy).astype(np.float32)


def box_sum(x, w):
    """Sum of x over the w x w window of plume's entropy (rows y - w//2 .. y - w//2 + w - 1,
    columns likewise), pixels outside the image left out."""
    return ndi.uniform_filter(x, w, mode="constant", cval=0.0) * (w * w)


def local_entropy(bins, nbins, w):
    """Local Shannon entropy in bits of an integer bin image, as plume's entropy op
    (and skimage.filters.rank.entropy with a w x w footprint)."""
    n = box_sum(np.ones(bins.shape), w)
    acc = np.zeros(bins.shape)
    for b in np.unique(bins):
        c = np.rint(box_sum((bins == b).astype(np.float64), w))
        acc += np.where(c > 0, c * np.log2(np.maximum(c, 1)), 0.0)
    return np.log2(n) - acc / n


def op_entropy(frame, params):
    w = int(params["window"])
    bins = int(params["bins"])
    v = frame.astype(np.float64)
    if params["range"] == "auto":
        finite = v[np.isfinite(v)]
        lo, hi = float(finite.min()), float(finite.max())
        if lo == hi:
            return np.zeros(frame.shape, np.float32)
    else:
        lo, hi = (float(x) for x in params["range"].split(","))
    b = np.floor((v - lo) * bins / (hi - lo))
    b = np.clip(np.nan_to_num(b, nan=0.0), 0, bins - 1).astype(np.int64)
    return local_entropy(b, bins, w).astype(np.float32)


def check_entropy_model():
    """The entropy model against scikit-image's on a small random image."""
    from skimage.filters.rank import entropy

    rng = np.random.default_rng(1)
    b = rng.integers(0, 7, (23, 31)).astype(np.uint8)
    for w in (1, 4, 5, 16):
        ours = local_entropy(b.astype(np.int64), 7, w)
        theirs = entropy(b, np.ones((w, w), bool))
        assert np.allclose(ours, theirs, atol=1e-9), (w, np.abs(ours - theirs).max())


def op_threshold(frame, params):
    v = float(params["value"])
    x = frame.astype(np.float64)
    cmp = params.get("cmp", "gt")
    return {"gt": x > v, "ge": x >= v, "lt": x < v, "le": x <= v}[cmp]


_coordinates = {}


def pixel_coordinates(shape):
    if shape not in _coordinates:
        rows, cols = np.indices(shape, dtype=np.float64)
        _coordinates[shape] = (rows.ravel(), cols.ravel())
    return _coordinates[shape]


def op_label_regions(mask, intensity, connectivity=8):
    """Rows (centroid_row, centroid_col, wcentroid_row, wcentroid_col, area, sum, max) per
    region, as plume's label + regions with the input frame as intensity."""
    structure = np.ones((3, 3), bool) if connectivity == 8 else None
    labels, n = ndi.label(mask, structure=structure)
    if n == 0:
        return np.zeros((0, 7))
    flat = labels.ravel()
    inten = intensity.astype(np.float64).ravel()
    rows, cols = pixel_coordinates(mask.shape)
    area = np.bincount(flat, minlength=n + 1)[1:].astype(np.float64)
    c_r = np.bincount(flat, rows, n + 1)[1:] / area
    c_c = np.bincount(flat, cols, n + 1)[1:] / area
    s = np.bincount(flat, inten, n + 1)[1:]
    w_r = np.bincount(flat, inten * rows, n + 1)[1:] / s
    w_c = np.bincount(flat, inten * cols, n + 1)[1:] / s
    mx = ndi.maximum(intensity, labels, np.arange(1, n + 1))
    return np.stack([c_r, c_c, w_r, w_c, area, s, mx], axis=1)


def parse_pipeline(text):
    elements = []
    for part in text.split("!"):
        words = part.split()
        params = dict(w.split("=", 1) for w in words[1:])
        elements.append((words[0], params))
    return elements


def run_pipeline(elements, frame, upto_threshold=None):
    """Run the chain on one frame. With upto_threshold, stop before the threshold and
    return the filtered image (so that a threshold sweep reuses it)."""
    x = frame
    for name, params in elements:
        if name == "threshold" and upto_threshold:
            return x
        if name == "conv2d":
            x = op_conv2d(x, params)
        elif name == "sobel":
            x = op_sobel(x, params)
        elif name == "entropy":
            x = op_entropy(x, params)
        elif name == "threshold":
            x = op_threshold(x, params)
        elif name == "label":
            connectivity = int(params.get("connectivity", 8))
        elif name == "regions":
            return op_label_regions(x, frame, connectivity)
        else:
            raise ValueError("unknown element " + name)
    raise ValueError("the chain does not end in label ! regions")


# ---- scoring (support/score.h) --------------------------------------------------------------


def score(truth, detections, radius=None):
    """truth: rows (frame, row, col, amplitude, sigma); detections: dict frame -> array of
    (row, col). Returns (tp, fp, fn, precision, recall, mean_error)."""
    tp = fp = fn = 0
    errors = []
    frames = set(int(f) for f in truth[:, 0]) | set(detections)
    for f in sorted(frames):
        t = truth[truth[:, 0] == f]
        d = detections.get(f, np.zeros((0, 2)))
        pairs = []
        for i, row in enumerate(t):
            r = radius if radius else max(3.0, 2.0 * row[4])
            dist = np.hypot(d[:, 0] - row[1], d[:, 1] - row[2]) if len(d) else np.zeros(0)
            for j in np.nonzero(dist <= r)[0]:
                pairs.append((dist[j], i, j))
        pairs.sort()
        used_t, used_d = set(), set()
        for dist, i, j in pairs:
            if i in used_t or j in used_d:
                continue
            used_t.add(i)
            used_d.add(j)
            errors.append(dist)
        tp += len(used_t)
        fn += len(t) - len(used_t)
        fp += len(d) - len(used_d)
    precision = tp / (tp + fp) if tp + fp else 1.0
    recall = tp / (tp + fn) if tp + fn else 1.0
    return tp, fp, fn, precision, recall, float(np.mean(errors)) if errors else float("nan")


def f1(s):
    p, r = s[3], s[4]
    return 2 * p * r / (p + r) if p + r else 0.0


# ---- scenes ------------------------------------------------------------------------------


def make_scene(plume, frames, size, seed, directory):
    out = os.path.join(directory, "frames-%s-%d.npy" % (size, seed))
    truth = os.path.join(directory, "truth-%s-%d.csv" % (size, seed))
    h, w = size.split("x")
    subprocess.run(
        [plume, "scene", "--frames", str(frames), "--size", "%s,%s" % (h, w), "--seed", str(seed),
         "--out", out, "--truth", truth],
        check=True, stdout=subprocess.DEVNULL)
    return np.load(out), np.loadtxt(truth, delimiter=",", skiprows=1, ndmin=2), truth


def detections_of(per_frame_rows, weighted=True):
    cols = (2, 3) if weighted else (0, 1)
    return {f: rows[:, cols] for f, rows in per_frame_rows.items()}


def sweep(chain, scenes, thresholds, cmp="gt"):
    """Score chain ('... ! threshold value={T} ...') at each T over all scenes."""
    elements = parse_pipeline(chain.format(T=0))
    before = [e for e in elements if e[0] not in ("threshold", "label", "regions")]
    filtered = []
    for frames, truth, _ in scenes:
        filtered.append([run_pipeline(before + [("threshold", {})], f, upto_threshold=True)
                         if before else f for f in frames])
    results = []
    for t in thresholds:
        total = np.zeros(3)
        errs = []
        for (frames, truth, _), images in zip(scenes, filtered):
            rows = {}
            for k, (img, frame) in enumerate(zip(images, frames)):
                mask = op_threshold(img, {"value": t, "cmp": cmp})
                rows[k] = op_label_regions(mask, frame)
            s = score(truth, detections_of(rows))
            total += s[:3]
            if s[0]:
                errs.append((s[5], s[0]))
        tp, fp, fn = total
        p = tp / (tp + fp) if tp + fp else 1.0
        r = tp / (tp + fn) if tp + fn else 1.0
        err = sum(e * n for e, n in errs) / sum(n for _, n in errs) if errs else float("nan")
        results.append((t, int(tp), int(fp), int(fn), p, r, err))
    return results


def print_sweep(name, results):
    print("\n%s" % name)
    print("  %10s %6s %6s %6s %9s %7s %8s %6s" % ("threshold", "TP", "FP", "FN", "precision",
                                                   "recall", "error_px", "F1"))
    for t, tp, fp, fn, p, r, err in results:
        f = 2 * p * r / (p + r) if p + r else 0
        print("  %10g %6d %6d %6d %9.4f %7.4f %8.3f %6.4f" % (t, tp, fp, fn, p, r, err, f))
    best = max(results, key=lambda x: 2 * x[4] * x[5] / (x[4] + x[5]) if x[4] + x[5] else 0)
    ok = [x for x in results if x[4] >= 0.95 and x[5] >= 0.95]
    print("  best F1 at %g: precision %.4f recall %.4f error %.3f px; thresholds with both "
          ">= 0.95: %s" % (best[0], best[4], best[5], best[6],
                           ", ".join("%g" % x[0] for x in ok) if ok else "none"))
    return best, ok


def write_detections_csv(path, per_frame_rows):
    """The `plume detect` format: frame, then the REGIONS.csv columns with intensity."""
    with open(path, "w") as out:
        out.write("frame,label,area,min_row,min_col,max_row,max_col,centroid_row,centroid_col,"
                  "sum,max,wcentroid_row,wcentroid_col\n")
        for f in sorted(per_frame_rows):
            for i, (c_r, c_c, w_r, w_c, area, s, mx) in enumerate(per_frame_rows[f]):
                out.write("%d,%d,%d,0,0,0,0,%.17g,%.17g,%.17g,%.17g,%.17g,%.17g\n" %
                          (f, i + 1, area, c_r, c_c, s, mx, w_r, w_c))


def plume_score(plume, truth_path, rows):
    """Write rows as a `plume detect` CSV and score it with `plume score`."""
    det = truth_path.replace("truth", "detections")
    write_detections_csv(det, rows)
    return run_plume_score(plume, truth_path, det)


def run_plume_score(plume, truth_path, det):
    """`plume score`'s figures as a dict."""
    out = subprocess.run([plume, "score", "--truth", truth_path, "--detections", det],
                         check=True, capture_output=True, text=True).stdout
    fields = dict(line.split(":", 1) for line in out.strip().split("\n"))
    result = {k: int(fields[k]) for k in ("true positives", "false positives", "false negatives")}
    result["precision"] = float(fields["precision"])
    result["recall"] = float(fields["recall"])
    result["mean error"] = float(fields["centroid error"].split()[1])
    return result


def plume_op_chain(plume, elements, truth_path, directory):
    """Run a conv2d ! threshold ! label ! regions chain with `plume op` over the stack
    (the kernel from the model, written as .npy) and score it with `plume score`."""
    (_, conv), (_, thr), (_, lab), _ = elements
    frames = truth_path.replace("truth", "frames").replace(".csv", ".npy")
    k = kernel(conv["kernel"])
    kpath = os.path.join(directory, "kernel.npy")
    np.save(kpath, k)
    pad = "%d,%d" % ((k.shape[0] - 1) // 2, (k.shape[1] - 1) // 2)
    filtered, mask = (os.path.join(directory, n) for n in ("filtered.npy", "mask.npy"))
    det = os.path.join(directory, "op-detections.csv")
    for cmd in (["conv2d", "--in", frames, "--kernel", kpath, "--pad", pad, "--border",
                 conv.get("border", "zero"), "--out", filtered],
                ["threshold", "--in", filtered, "--value", thr["value"], "--cmp",
                 thr.get("cmp", "gt"), "--out", mask],
                ["label", "--in", mask, "--connectivity", lab.get("connectivity", "8"),
                 "--regions", det, "--intensity", frames, "--out",
                 os.path.join(directory, "labels.npy")]):
        subprocess.run([plume, "op"] + cmd + ["--backend", "host"], check=True)
    return run_plume_score(plume, truth_path, det)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--plume", default=os.path.join(os.path.dirname(__file__), "..",
                                                   "build", "apps", "plume"))
    ap.add_argument("--frames", type=int, default=50)
    ap.add_argument("--sizes", default="256x256,512x512")
    ap.add_argument("--seeds", default="1,2,3")
    ap.add_argument("--quick", action="store_true", help="fewer candidates and thresholds")
    args = ap.parse_args()
    started = time.time()
    check_entropy_model()

    with tempfile.TemporaryDirectory() as directory:
        scenes = {}
        for size in args.sizes.split(","):
            scenes[size] = [make_scene(args.plume, args.frames, size, int(seed), directory)
                            for seed in args.seeds.split(",")]
        everything = [s for group in scenes.values() for s in group]
        n_truth = sum(len(t) for _, t, _ in everything)
        print("scenes: %d frames each, sizes %s, seeds %s: %d truth plumes" %
              (args.frames, args.sizes, args.seeds, n_truth))
        lo = np.mean([np.percentile(f, 1) for f, _, _ in everything])
        hi = np.mean([np.percentile(f, 99) for f, _, _ in everything])
        amps = np.concatenate([t[:, 3] for _, t, _ in everything])
        print("raw counts: 1st..99th percentile %.0f..%.0f; plume peaks above the background "
              "%.0f..%.0f" % (lo, hi, amps.min(), amps.max()))

        # The naive baseline: a global threshold on the raw frame.
        raw = sweep("threshold value={T} ! label connectivity=8 ! regions", everything,
                    list(range(3000, 9001, 500)))
        naive_best, _ = print_sweep("naive: threshold on raw intensity ! label ! regions", raw)

        candidates = []
        thresholds = [10, 12, 14, 16, 18, 20, 22, 25, 28, 32, 36, 40]
        logs = [(7, 1.5)] if args.quick else [(7, 1.5), (9, 1.5), (9, 2.0), (11, 2.0), (13, 2.5)]
        for k, s in logs:
            candidates.append(("conv2d kernel=log:%d:%g pad=same border=replicate ! threshold "
                               "value={T} ! label connectivity=8 ! regions" % (k, s), thresholds))
        if not args.quick:
            # The border matters: reflect101 mirrors a background slope into a ridge.
            candidates.append(("conv2d kernel=log:7:1.5 pad=same border=reflect101 ! threshold "
                               "value={T} ! label connectivity=8 ! regions", thresholds))
            # The PWSA chain: gradient, then local entropy of the gradient.
            entropy_thresholds = [2.5, 3.0, 3.5, 4.0, 4.5, 5.0]
            candidates.append(("sobel ! entropy window=16 bins=64 range=auto ! threshold "
                               "value={T} ! label connectivity=8 ! regions", entropy_thresholds))
            candidates.append(("sobel ! entropy window=9 bins=32 range=0,2000 ! threshold "
                               "value={T} ! label connectivity=8 ! regions", entropy_thresholds))
        chosen = None
        for chain, thresholds in candidates:
            res = sweep(chain, everything, thresholds)
            best, ok = print_sweep(chain.replace("{T}", "T"), res)
            if ok:
                # The chain whose working range (precision and recall >= 0.95) is widest,
                # then the best F1; within it, the threshold of the best F1.
                point = max(ok, key=lambda x: 2 * x[4] * x[5] / (x[4] + x[5]))
                rank = (len(ok), 2 * point[4] * point[5] / (point[4] + point[5]))
                if chosen is None or rank > chosen[2]:
                    chosen = (chain, point, rank)

        print("\n---- summary (%.0f s) ----" % (time.time() - started))
        print("naive raw threshold, best F1 at %g: precision %.4f recall %.4f error %.3f px" %
              (naive_best[0], naive_best[4], naive_best[5], naive_best[6]))
        if not chosen:
            print("no candidate reaches precision and recall >= 0.95")
            return 1
        chain, point, _ = chosen
        pipeline = chain.format(T="%g" % point[0])
        print("chosen: %s" % pipeline)
        elements = parse_pipeline(pipeline)
        held_out = [s + 100 for s in (int(x) for x in args.seeds.split(","))]
        for size, group in scenes.items():
            group = group + [make_scene(args.plume, args.frames, size, seed, directory)
                             for seed in held_out]
            for label, part in (("tuned on", group[:len(group) - len(held_out)]),
                                ("held out", group[len(group) - len(held_out):])):
                tot = np.zeros(3)
                errs = []
                for frames, truth, truth_path in part:
                    rows = {k: run_pipeline(elements, f) for k, f in enumerate(frames)}
                    s = score(truth, detections_of(rows))
                    tot += s[:3]
                    errs.append((s[5], s[0]))
                    c = plume_score(args.plume, truth_path, rows)
                    assert (c["true positives"], c["false positives"], c["false negatives"]) \
                        == s[:3], (c, s)
                tp, fp, fn = tot
                err = sum(e * n for e, n in errs) / sum(n for _, n in errs)
                print("  %s, %s seeds %s: TP %d FP %d FN %d precision %.4f recall %.4f "
                      "mean error %.3f px (plume score agrees)" %
                      (size, label, ",".join(str(x) for x in (
                          args.seeds.split(",") if label == "tuned on" else held_out)),
                       tp, fp, fn, tp / (tp + fp), tp / (tp + fn), err))
        # The same chain run by plume's own ops (conv2d, threshold, label with the frames
        # as intensity), scored by plume score, on the first scene.
        frames, truth, truth_path = everything[0]
        c = plume_op_chain(args.plume, elements, truth_path, directory)
        print("  plume op conv2d ! threshold ! label --intensity, %s seed %s: TP %d FP %d FN %d "
              "precision %.4f recall %.4f mean error %.3f px" %
              (args.sizes.split(",")[0], args.seeds.split(",")[0], c["true positives"],
               c["false positives"], c["false negatives"], c["precision"], c["recall"],
               c["mean error"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
