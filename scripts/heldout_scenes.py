#!/usr/bin/python3
"""Score plume's detection presets against a NumPy reference on a family of hard scenes.

    /usr/bin/python3 scripts/heldout_scenes.py [--plume build/apps/plume] [--frames 150]
        [--size 256,256] [--skip 40] [--presets robust,calibrated] [--split all|tuning|held-out]
        [--scenes DIR]

The family (FAMILY below) is the hard scene of `plume scene --difficulty hard` with its
knobs (support/scene.h, scene_knobs): the number of bright discs (--clutter), their speed
(--clutter-speed), the plumes' strength in noise sigmas (--plume-sigmas, 2..8 over the
family) and the density of dead and hot pixels (--defects), each scene with its own seed.
The scenes are split once: scripts/tune_presets.py chooses the presets on the tuning scenes
alone, and the held-out scenes, other seeds with other mixtures of the knobs, judge them.

For every scene it runs each preset with plume itself (`plume detect --preset P`, host
backend, with the scene's calibration as the tensors gain, offset and bad when the preset
names them) scored by `plume score --skip-frames SKIP --json`, and the reference chain of
scripts/check_hard_scene.py (calibration, a background masked near its detections, a
Gaussian matched filter, cell-averaging CFAR, connected components; its fixed defaults,
never tuned on this family) scored by the same rule. It prints one row per scene with
precision / recall (false positives, misses) of each and, per preset, whether it matches or
beats the reference in both ("short P", "short R": the figure that falls short), then the
totals of each split. The figures of a run are kept in docs/records/heldout_scenes.txt.

About 8 s per scene of 150 frames of 256x256, most of it the NumPy reference's: under 2
minutes for the family on the 2-core VM. --scenes DIR keeps the scenes in
DIR (made when missing, reused when there) for repeated runs.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from check_hard_scene import reference_score  # noqa: E402

# name, split, seed, knobs (plume scene's options). The held-out scenes mix the knobs in
# ways the tuning scenes do not (other strengths, more clutter, faster drift, more defects).
FAMILY = [
    ("base-1", "tuning", 1, {}),
    ("faint-2", "tuning", 2, {"plume-sigmas": "2,5"}),
    ("clutter-3", "tuning", 3, {"clutter": "3"}),
    ("drift-4", "tuning", 4, {"clutter-speed": "3"}),
    ("defects-5", "tuning", 5, {"defects": "10"}),
    ("mixed-6", "tuning", 6, {"clutter": "2", "clutter-speed": "2", "plume-sigmas": "2,8",
                              "defects": "5"}),
    ("base-101", "held-out", 101, {}),
    ("faint-102", "held-out", 102, {"plume-sigmas": "2,4"}),
    ("bright-103", "held-out", 103, {"plume-sigmas": "4,8"}),
    ("clutter-104", "held-out", 104, {"clutter": "4"}),
    ("drift-105", "held-out", 105, {"clutter-speed": "4"}),
    ("defects-106", "held-out", 106, {"defects": "20"}),
    ("mixed-107", "held-out", 107, {"clutter": "3", "clutter-speed": "2", "plume-sigmas": "2,8",
                                    "defects": "10"}),
]

CALIBRATION = ("gain", "offset", "bad")


def run(cmd):
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit("failed: %s\n%s" % (" ".join(cmd), done.stderr))
    return done.stdout


def knob_text(knobs):
    return " ".join("--%s %s" % kv for kv in knobs.items()) or "(defaults)"


def make_scene(plume, folder, seed, knobs, frames, size):
    """The scene's files in folder: f.npy, t.csv and its calibration (kept when there)."""
    if os.path.exists(os.path.join(folder, "t.csv")):
        return
    os.makedirs(folder, exist_ok=True)
    cmd = [plume, "scene", "--frames", str(frames), "--size", size, "--seed", str(seed),
           "--difficulty", "hard", "--calibration", folder, "-q",
           "--out", os.path.join(folder, "f.npy"), "--truth", os.path.join(folder, "t.csv")]
    for key, value in knobs.items():
        cmd += ["--" + key, value]
    run(cmd)


def plume_score(plume, folder, skip, preset):
    """(tp, fp, fn) of `plume detect --preset P` on one scene."""
    detections = os.path.join(folder, "d.csv")
    tensors = []
    for name in listed_presets(plume)[preset]["tensors"]:
        tensors += ["--tensor", "%s=%s" % (name, os.path.join(folder, name + ".npy"))]
    run([plume, "detect", "--frames", os.path.join(folder, "f.npy"), "--backend", "host", "-q",
         "--preset", preset, "--out", detections] + tensors)
    scored = json.loads(run([plume, "score", "--truth", os.path.join(folder, "t.csv"),
                             "--detections", detections, "--skip-frames", str(skip),
                             "--json"]))
    return scored["true_positives"], scored["false_positives"], scored["false_negatives"]


_PRESETS = {}


def listed_presets(plume):
    """name -> {"pipeline": text, "tensors": [names]}, from `plume detect --list-presets`."""
    if not _PRESETS:
        current = None
        for line in run([plume, "detect", "--list-presets"]).splitlines():
            if not line.startswith(" "):
                current = _PRESETS.setdefault(line.partition(":")[0],
                                              {"pipeline": "", "tensors": []})
                continue
            key, _, value = line.strip().partition(": ")
            if key == "pipeline":
                current["pipeline"] = value
            elif key == "tensors":
                current["tensors"] = value.partition(" (")[0].split()
    return _PRESETS


def figures(counts):
    tp, fp, fn = counts
    precision = tp / (tp + fp) if tp + fp else 1.0
    recall = tp / (tp + fn) if tp + fn else 1.0
    return precision, recall


def cell(counts):
    """precision / recall (false positives, misses)."""
    return "%.3f / %.3f (%d, %d)" % (figures(counts) + (counts[1], counts[2]))


def verdict(mine, reference):
    """'meets' when both figures are at least the reference's, else the short ones."""
    short = [name for name, a, b in zip(("P", "R"), figures(mine), figures(reference))
             if a < b - 1e-12]
    return "meets" if not short else "short " + "".join(short)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--plume", default="build/apps/plume")
    parser.add_argument("--frames", type=int, default=150)
    parser.add_argument("--size", default="256,256")
    parser.add_argument("--skip", type=int, default=40)
    parser.add_argument("--presets", default="robust,calibrated")
    parser.add_argument("--split", default="all", choices=("all", "tuning", "held-out"))
    parser.add_argument("--scenes", help="keep the scenes in this folder")
    args = parser.parse_args()
    presets = args.presets.split(",")
    started = time.time()
    family = [f for f in FAMILY if args.split in ("all", f[1])]
    print("hard scenes of %d frames of %s; scored after %d frames (plume score --skip-frames); "
          "precision / recall" % (args.frames, args.size, args.skip))
    for name in presets:
        print("  %s: %s" % (name, listed_presets(args.plume)[name]["pipeline"]))
    print("  reference: scripts/check_hard_scene.py (its defaults)\n")
    header = "%-12s %-8s %-6s" % ("scene", "split", "truths")
    for name in presets:
        header += " %-22s %-8s" % (name, "")
    header += " %-22s knobs" % "reference"
    print(header)
    totals = {}
    with tempfile.TemporaryDirectory() as tmp:
        root = args.scenes or tmp
        for name, split, seed, knobs in family:
            folder = os.path.join(root, name)
            make_scene(args.plume, folder, seed, knobs, args.frames, args.size)
            reference = reference_score(folder, args.skip)[:3]
            row = "%-12s %-8s %-6d" % (name, split, reference[0] + reference[2])
            for preset in presets:
                mine = plume_score(args.plume, folder, args.skip, preset=preset)
                row += " %-22s %-8s" % (cell(mine), verdict(mine, reference))
                total = totals.setdefault((split, preset), [0, 0, 0])
                for i in range(3):
                    total[i] += mine[i]
            total = totals.setdefault((split, "reference"), [0, 0, 0])
            for i in range(3):
                total[i] += reference[i]
            row += " %-22s %s" % (cell(reference), knob_text(knobs))
            print(row, flush=True)
    print("\ntotals (TP FP FN, precision / recall):")
    for (split, name), counts in totals.items():
        print("  %-8s %-10s %5d %5d %5d  %.4f / %.4f" % ((split, name) + tuple(counts) +
                                                        figures(counts)))
    print("(%.0f s)" % (time.time() - started))
    return 0


if __name__ == "__main__":
    sys.exit(main())
