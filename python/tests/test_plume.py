"""python/tests/test_plume.py: the Python module against numpy and against the command line.

    PLUME_LIBRARY=build/libplume.so PLUME_CLI=build/apps/plume PYTHONPATH=python \
    GLIBC_TUNABLES=glibc.rtld.optional_static_tls=65536 python3 -m unittest python/tests/test_plume.py

(CTest runs it so: the test `python`.) Ops on numpy arrays equal numpy's own results and
`plume op`'s files byte for byte; a preset streamed over a hard scene equals `plume detect`'s
CSV; errors carry plume's message.
"""
import os
import subprocess
import tempfile
import unittest

import numpy as np

import plume

CLI = os.environ.get("PLUME_CLI", "build/apps/plume")


def cli(*args):
    done = subprocess.run([CLI, *args], capture_output=True, text=True)
    if done.returncode != 0:
        raise AssertionError("plume %s: %s" % (" ".join(args), done.stderr))
    return done.stdout


class Ops(unittest.TestCase):
    def setUp(self):
        rng = np.random.default_rng(7)
        self.frame = rng.integers(0, 4000, (40, 56), dtype=np.uint16)
        self.dir = tempfile.TemporaryDirectory()

    def tearDown(self):
        self.dir.cleanup()

    def path(self, name):
        return os.path.join(self.dir.name, name)

    def test_threshold_is_numpy_s_comparison(self):
        mask = plume.op("threshold", self.frame, value=3500)
        self.assertEqual(mask.dtype, np.uint8)
        np.testing.assert_array_equal(mask, (self.frame > 3500).astype(np.uint8))

    def test_nuc_and_a_stack_of_background_equal_plume_op(self):
        gain = np.full(self.frame.shape, 1.5, np.float32)
        offset = np.full(self.frame.shape, -7.25, np.float32)
        corrected = plume.op("nuc", self.frame, gain=gain, offset=offset)
        np.testing.assert_array_equal(corrected, self.frame.astype(np.float32) * 1.5 - 7.25)
        stack = np.stack([self.frame, self.frame + 5, self.frame + 9]).astype(np.uint16)
        np.save(self.path("stack.npy"), stack)
        cli("op", "background", "--in", self.path("stack.npy"), "--alpha", "0.25", "--out",
            self.path("bg.npy"), "--backend", "host")
        ours = plume.op("background", stack, alpha=0.25)
        self.assertEqual(ours.tobytes(), np.load(self.path("bg.npy")).tobytes())

    def test_another_library_s_cpu_tensor_comes_in_through_dlpack(self):
        class Foreign:  # a CPU tensor of another library: DLPack only, no __array__
            def __init__(self, array):
                self._array = array

            def __dlpack__(self, stream=None):
                return self._array.__dlpack__()

            def __dlpack_device__(self):
                return self._array.__dlpack_device__()

        mask = plume.op("threshold", Foreign(self.frame), value=2000)
        np.testing.assert_array_equal(mask, (self.frame > 2000).astype(np.uint8))

        class OnTheGpu(Foreign):
            def __dlpack_device__(self):
                return (2, 0)

        with self.assertRaises(plume.Error) as caught:
            plume.op("threshold", OnTheGpu(self.frame), value=1)
        self.assertIn("DLPack device (2, 0)", str(caught.exception))

    def test_a_bad_parameter_raises_plume_s_message(self):
        with self.assertRaises(plume.Error) as caught:
            plume.op("threshold", self.frame, valeu=3)
        self.assertEqual(caught.exception.status, "PLM_ERR_INVALID_ARG")
        self.assertIn("unknown key 'valeu'", str(caught.exception))
        with self.assertRaises(plume.Error):
            plume.Pipeline("threshold value=1", "u16", (4, 5), preset="robust")


class Pipelines(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.TemporaryDirectory()
        d = cls.dir.name
        cli("scene", "--frames", "70", "--size", "64,80", "--seed", "5", "--difficulty", "hard",
            "--out", os.path.join(d, "f.npy"), "--truth", os.path.join(d, "t.csv"),
            "--calibration", d)
        cls.frames = np.load(os.path.join(d, "f.npy"))

    @classmethod
    def tearDownClass(cls):
        cls.dir.cleanup()

    def detect_rows(self, preset, *tensors):
        out = os.path.join(self.dir.name, "d.csv")
        cli("detect", "--frames", os.path.join(self.dir.name, "f.npy"), "--preset", preset,
            "--backend", "host", "--out", out, *tensors)
        rows = np.loadtxt(out, delimiter=",", skiprows=1, ndmin=2)
        return rows

    def streamed_rows(self, pipeline):
        rows = []
        for frame, (table, count) in enumerate(pipeline.run_stream(self.frames)):
            n = int(count.reshape(-1)[0])
            for row in table[:n]:
                rows.append([frame, *row])
        return np.array(rows).reshape(-1, 13)

    def test_the_presets_are_the_library_s(self):
        names = [p["name"] for p in plume.presets()]
        self.assertEqual(names, ["default", "robust", "calibrated"])
        listed = cli("detect", "--list-presets")
        for p in plume.presets():
            self.assertIn("pipeline: " + p["pipeline"], listed)
        self.assertEqual(plume.presets()[2]["tensors"], ["gain", "offset", "bad"])

    def test_a_streamed_preset_equals_plume_detect(self):
        with plume.Pipeline(preset="robust", dtype="u16", shape=self.frames.shape[1:]) as pl:
            ours = self.streamed_rows(pl)
            self.assertIn("state s0 f32 64x80", pl.describe())
        theirs = self.detect_rows("robust")
        self.assertEqual(ours.shape, theirs.shape)
        self.assertGreater(len(theirs), 0)
        np.testing.assert_allclose(ours, theirs, rtol=1e-12, atol=1e-9)

    def test_calibrated_takes_its_tensors_and_equals_plume_detect(self):
        d = self.dir.name
        tensors = {name: np.load(os.path.join(d, name + ".npy")) for name in ("gain", "offset",
                                                                             "bad")}
        with plume.Pipeline(preset="calibrated", dtype=np.uint16, shape=(64, 80),
                            tensors=tensors, frames_in_flight=2) as pl:
            ours = self.streamed_rows(pl)
        theirs = self.detect_rows("calibrated", *sum(
            (["--tensor", "%s=%s" % (n, os.path.join(d, n + ".npy"))] for n in tensors), []))
        np.testing.assert_allclose(ours, theirs, rtol=1e-12, atol=1e-9)

    def test_run_continues_the_state_and_reset_starts_it_again(self):
        with plume.Pipeline("background alpha=0.5", "u16", (64, 80)) as pl:
            first = [pl.run(f) for f in self.frames[:3]]
            pl.reset_state()
            again = pl.run(self.frames[0])
        np.testing.assert_array_equal(first[0], np.zeros((64, 80), np.float32))
        np.testing.assert_array_equal(again, first[0])
        b = self.frames[0].astype(np.float32)
        np.testing.assert_array_equal(first[1], self.frames[1].astype(np.float32) - b)

    def test_runs_one_at_a_time_and_failures_come_back(self):
        with plume.Pipeline("background alpha=0.5", "u16", (64, 80)) as pl:
            first = pl.run_stream(self.frames, depth=1)
            next(first)
            second = pl.run_stream(self.frames)
            with self.assertRaises(plume.Error) as caught:
                next(second)
            self.assertIn("one at a time", str(caught.exception))
            with self.assertRaises(plume.Error):
                pl.run(self.frames[0])
            first.close()  # ends its run; the pipeline is free again
            pl.run(self.frames[0])
            bad = [self.frames[0], self.frames[1].astype(np.float32)]
            with self.assertRaises(plume.Error) as caught:
                list(pl.run_stream(bad))
            self.assertIn("frame 1 is float32 (64, 80), the pipeline's input uint16",
                          str(caught.exception))

            def broken():
                yield self.frames[0]
                raise KeyError("the camera went away")

            with self.assertRaises(KeyError):
                list(pl.run_stream(broken()))

    def test_closing_in_any_order_is_safe(self):
        ctx = plume.Context("host")
        pl = plume.Pipeline("background", "u16", (64, 80), context=ctx)
        paused = pl.run_stream(self.frames, depth=1)
        next(paused)
        pl.close()  # ends the paused run first
        ctx.close()
        ctx = plume.Context("host")
        pl = plume.Pipeline("threshold value=3", "u16", (64, 80), context=ctx)
        ctx.close()  # closes the pipeline first
        pl.close()
        with self.assertRaises(plume.Error):
            pl.describe()

    def test_the_default_context_and_its_pool(self):
        ctx = plume.default_context()
        self.assertIn(ctx.backend, ("host", "cuda"))
        stats = ctx.pool_stats()
        self.assertGreaterEqual(stats["peak_bytes_reserved"], stats["peak_bytes_in_use"])


if __name__ == "__main__":
    unittest.main()
