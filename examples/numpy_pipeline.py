"""examples/numpy_pipeline.py: plume from Python on numpy arrays.

    PYTHONPATH=<plume>/python python3 examples/numpy_pipeline.py

Three things a numpy user does with plume, each checked against numpy itself:
  1. one op on one array (plume.ops.threshold), the result a numpy array;
  2. an op with an array parameter (plume.ops.conv2d, the kernel a numpy array);
  3. a pipeline (plume's default detection preset) streamed over a stack of frames with
     Pipeline.run_stream, which keeps several frames in flight and yields each frame's
     outputs in order: the regions table (a structured array of the hot spots found) and
     their count.

The frames are a small synthetic infrared scene: 96 x 128 u16 pixels, a background of
1000 with a little noise, and one plume (a Gaussian blob) moving diagonally. The backend
is plume's default (cuda with a GPU, else host; PLUME_BACKEND=host|cuda overrides). The
program prints what it found and exits 1 if anything differs from numpy or the plume is
missed in any frame.
"""

import sys

import numpy as np

import plume

HEIGHT, WIDTH, FRAMES = 96, 128, 12


def plume_position(k):
    """Where the plume is drawn in frame k: (row, column)."""
    return 20.0 + 4.0 * k, 30.0 + 6.0 * k


def make_frames():
    """The stack of frames, (FRAMES, HEIGHT, WIDTH) u16."""
    rng = np.random.default_rng(7)
    rows, cols = np.mgrid[0:HEIGHT, 0:WIDTH]
    frames = np.empty((FRAMES, HEIGHT, WIDTH), np.uint16)
    for k in range(FRAMES):
        row, col = plume_position(k)
        blob = 600.0 * np.exp(-((rows - row) ** 2 + (cols - col) ** 2) / (2 * 1.2 ** 2))
        noise = rng.integers(-8, 9, size=(HEIGHT, WIDTH))
        frames[k] = np.round(1000.0 + blob + noise)
    return frames


def main():
    frames = make_frames()
    ok = True
    print("plume %s, backend %s" % (plume.version(), plume.default_context().backend))

    # 1. One op, one array: threshold gives a u8 mask (1 where frame > value).
    mask = plume.ops.threshold(frames[0], value=1300)
    same = np.array_equal(mask, (frames[0] > 1300).astype(np.uint8))
    print("threshold: %s %s, %d pixels above 1300, equal to numpy: %s"
          % (mask.dtype, mask.shape, int(mask.sum()), same))
    ok &= same

    # 2. An array as a parameter: conv2d with a 3 x 3 box kernel and one pixel of zero
    # padding on each side ("same" size), against the same sums in numpy.
    box = np.full((3, 3), 1.0 / 9.0, np.float32)
    smooth = plume.ops.conv2d(frames[0], kernel=box, pad=(1, 1), border="zero")
    padded = np.pad(frames[0].astype(np.float64), 1)
    expected = sum(padded[dy:dy + HEIGHT, dx:dx + WIDTH] for dy in range(3)
                   for dx in range(3)) / 9.0
    close = np.allclose(smooth, expected, rtol=1e-5)
    print("conv2d: %s %s, equal to numpy within 1e-5: %s" % (smooth.dtype, smooth.shape, close))
    ok &= close

    # 3. The default detection pipeline over the stack, frame by frame, in order.
    found = 0
    with plume.Pipeline(preset="default", dtype="u16", shape=(HEIGHT, WIDTH)) as pipeline:
        for k, (table, count) in enumerate(pipeline.run_stream(frames)):
            # The regions found, a structured array (plume.REGION's fields): here their
            # intensity-weighted centroids (row, column).
            spots = np.stack([table["wcentroid_row"], table["wcentroid_col"]], axis=1)
            row, col = plume_position(k)
            hit = len(spots) == 1 and np.hypot(*(spots[0] - (row, col))) <= 1.0
            found += hit
            print("frame %d: %d hot spot(s) %s, plume drawn at (%.1f, %.1f)%s"
                  % (k, len(spots), " ".join("(%.1f, %.1f)" % tuple(s) for s in spots),
                     row, col, "" if hit else "  MISSED"))
    print("the plume found in %d of %d frames" % (found, FRAMES))
    ok &= found == FRAMES
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
