"""python/tests/test_faults.py: the module against a hostile or careless caller (issue 39).

    PLUME_LIBRARY=build/libplume.so PYTHONPATH=python python3 python/tests/test_faults.py

(CTest runs it so: the test `python_faults`.) Values are never pasted into pipeline text:
what is not of a parameter's type is refused with the key named, and no value adds an
element or cuts the text. Python values that ctypes would truncate (2**40 taken as 0, 64.7
as 64) are refused with the argument named; 0-d and empty arrays and a garbage
__dlpack_device__ get messages that say what they are. Every object (context, pipeline,
stream, tensor, generator) is closed in every order, the others used after each close: each
call works or raises plume.Error, never a crash (CTest sets MALLOC_PERTURB_, so a use after
free shows). Ctrl-C during run_stream over a blocked source comes out at once and leaves the
pipeline usable; two threads in run() and a close from another thread get true messages.
"""
import gc
import itertools
import os
import subprocess
import signal
import sys
import threading
import time
import unittest

import numpy as np

import plume

try:
    import torch
except ImportError:  # python3-torch is optional
    torch = None


class Injection(unittest.TestCase):
    def setUp(self):
        self.ctx = plume.Context("host")
        self.frame = np.arange(20, dtype=np.uint16).reshape(4, 5)

    def tearDown(self):
        self.ctx.close()

    def refused(self, message, fn, *args, **kwargs):
        with self.assertRaises(plume.Error) as caught:
            fn(*args, **kwargs)
        self.assertEqual(caught.exception.status, "PLM_ERR_INVALID_ARG")
        self.assertIn(message, str(caught.exception))

    def test_a_value_never_adds_an_element_or_a_key(self):
        threshold = plume.ops.threshold
        self.refused("threshold: value='5 ! label' (str): not a number", threshold,
                     self.frame, value="5 ! label", context=self.ctx)
        self.refused("not a number", threshold, self.frame, value="5\0 ! label",
                     context=self.ctx)
        self.refused("cmp='gt ! label' (str): not one of gt, ge, lt, le", threshold,
                     self.frame, value=5, cmp="gt ! label", context=self.ctx)
        self.refused("unexpected keyword argument 'value=1 ! label x'", plume.op, "threshold",
                     self.frame, context=self.ctx, **{"value=1 ! label x": 1})
        self.refused("unknown op 'threshold value=1 ! label'", plume.op,
                     "threshold value=1 ! label", self.frame, context=self.ctx)
        self.refused("unknown op 'regions'", plume.op, "regions", self.frame, context=self.ctx)
        self.refused("not two integers (SY,SX) or a word", plume.ops.conv2d,
                     self.frame.astype(np.float32), kernel="box:3", stride="1,1 ! label",
                     context=self.ctx)
        self.refused("conv2d: kernel='box:3 ! label'", plume.ops.conv2d,
                     self.frame.astype(np.float32), kernel="box:3 ! label", context=self.ctx)
        self.refused("range='auto ! label' (str)", plume.ops.entropy,
                     self.frame.astype(np.float32), window=3, bins=8, range="auto ! label",
                     context=self.ctx)
        self.refused("value=nan (float): not finite", threshold, self.frame,
                     value=float("nan"), context=self.ctx)
        self.refused("value=True (bool): not a number", threshold, self.frame, value=True,
                     context=self.ctx)
        self.refused("window=3.5 (float): not an integer", plume.ops.entropy, self.frame,
                     window=3.5, context=self.ctx)
        self.refused("alpha is a parameter, not an input", plume.ops.background, self.frame,
                     alpha=np.ones(3), context=self.ctx)
        self.refused("gain is an input: give an array", plume.ops.nuc, self.frame, gain=2,
                     offset=np.zeros((4, 5), np.float32), context=self.ctx)
        with self.assertRaises(plume.Error) as caught:  # the library: gain takes no spec
            plume.ops.nuc(self.frame, gain="box:3", offset=np.zeros((4, 5), np.float32),
                          context=self.ctx)
        self.assertIn("gain", str(caught.exception))

    def test_values_of_their_types_run_as_the_text_form_would(self):
        expected = (self.frame >= 7).astype(np.uint8)
        for value in (7, np.int64(7), 7.0, np.float32(7.0)):
            np.testing.assert_array_equal(
                plume.ops.threshold(self.frame, value=value, cmp="ge", context=self.ctx),
                expected)
        labels, _ = plume.ops.label(expected, connectivity=4, context=self.ctx)
        again, _ = plume.ops.label(expected, connectivity="4", context=self.ctx)
        np.testing.assert_array_equal(labels, again)
        image = self.frame.astype(np.float32)
        spec = plume.ops.conv2d(image, kernel="box:3", pad=(1, 1), context=self.ctx)
        taps = plume.ops.conv2d(image, kernel=[1 / 9] * 9, pad="same", context=self.ctx)
        array = plume.ops.conv2d(image, kernel=np.full((3, 3), 1 / 9, np.float32), pad=(1, 1),
                                 stride=[1, 1], context=self.ctx)
        np.testing.assert_allclose(spec, taps, rtol=1e-6)
        np.testing.assert_allclose(spec, array, rtol=1e-6)
        fixed = plume.ops.entropy(image, window=3, bins=8, range=(0.0, 20), context=self.ctx)
        self.assertEqual(fixed.shape, (4, 5))

    def test_pipeline_text_and_tensor_names_keep_no_nul(self):
        self.refused("has a NUL character at 17", plume.Pipeline, "threshold value=1\0 ! label",
                     "u16", (4, 5), context=self.ctx)
        self.refused("is not a str without NUL", plume.Pipeline, "nuc gain=@g offset=@o", "u16",
                     (4, 5), context=self.ctx, tensors={"g\0x": np.ones((4, 5), np.float32)})

    def test_integers_ctypes_would_truncate_are_refused_with_their_name(self):
        text = "threshold value=1"
        self.refused("frames_in_flight is 1099511627776, outside", plume.Pipeline, text, "u16",
                     (4, 5), context=self.ctx, frames_in_flight=2**40)
        self.refused("frames_in_flight is 2.0 (float), not an integer", plume.Pipeline, text,
                     "u16", (4, 5), context=self.ctx, frames_in_flight=2.0)
        self.refused("device is 1099511627776, outside 0..2147483647", plume.Context, "host",
                     device=2**40)
        self.refused("device is -1, outside", plume.Context, "host", device=-1)
        self.refused("shape[0] of (1180591620717411303424, 64) is 1180591620717411303424, "
                     "outside", plume.Pipeline, text, "u16", (2**70, 64), context=self.ctx)
        self.refused("shape[1] of (4, 64.7) is 64.7 (float), not an integer", plume.Pipeline,
                     text, "u16", (4, 64.7), context=self.ctx)
        self.refused("shape is 64 (int), not a sequence", plume.Pipeline, text, "u16", 64,
                     context=self.ctx)
        with plume.Pipeline(text, "u16", (4, 5), context=self.ctx) as pl:
            self.refused("depth is 0, outside 1..", pl.run_stream, [self.frame], depth=0)
            self.refused("depth is '2**40' (str), not an integer", lambda: pl.run_stream([self.frame], depth="2**40"))

    def test_degenerate_arrays_say_what_they_are(self):
        self.refused("a 0-d array (a scalar: ndarray of uint16, shape ())", plume.ops.threshold,
                     np.array(5, np.uint16), value=1, context=self.ctx)
        self.refused("an empty array (ndarray of uint16, shape (0, 5))", plume.ops.threshold,
                     np.zeros((0, 5), np.uint16), value=1, context=self.ctx)
        self.refused("a 0-d array", plume.ops.threshold, 5, value=1, context=self.ctx)
        if torch is not None:
            self.refused("an empty array (Tensor of torch.float32, shape (0,))",
                         plume.ops.threshold, torch.empty(0), value=1, context=self.ctx)
        frame = self.frame

        class Garbage:
            def __dlpack__(self, **kwargs):
                return frame.__dlpack__()

            def __dlpack_device__(self):
                return "garbage"

        self.refused("Garbage.__dlpack_device__() returned 'garbage', not (device_type, "
                     "device_id)", plume.ops.threshold, Garbage(), value=1, context=self.ctx)


def attempt(fn):
    """fn's result, or the plume.Error it raised (anything else fails the test)."""
    try:
        return fn()
    except plume.Error as error:
        return error


class Lifetimes(unittest.TestCase):
    FRAME = np.arange(20, dtype=np.uint16).reshape(4, 5)

    def test_a_tensor_of_a_closed_context_raises_instead_of_a_use_after_free(self):
        script = ("import numpy as np, plume\n"
                  "ctx = plume.Context('host')\n"
                  "t = plume.ops.threshold(np.arange(20, dtype=np.uint16).reshape(4, 5), "
                  "value=5, context=ctx, as_tensor=True)\n"
                  "ctx.close()\n"
                  "try:\n"
                  "    np.from_dlpack(t)\n"
                  "except plume.Error as error:\n"
                  "    print(error.status, error)\n"
                  "print(t.numpy().sum())\n")
        env = dict(os.environ, MALLOC_PERTURB_="165")
        done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                              env=env, timeout=120)
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertIn("PLM_ERR_INVALID_STATE the tensor's context is closed", done.stdout)
        self.assertIn("14", done.stdout)  # 6..19 are above 5: the host array is still there

    def objects(self):
        ctx = plume.Context("host")
        pl = plume.Pipeline("threshold value=5", "u16", (4, 5), context=ctx)
        stream = ctx.stream()
        tensor = pl.run(self.FRAME, stream=stream, as_tensor=True)
        export = tensor.__dlpack__()  # taken before anything closes, consumed at the end
        generator = pl.run_stream([self.FRAME] * 4, depth=1)
        next(generator)
        return {"context": ctx, "pipeline": pl, "stream": stream, "tensor": tensor,
                "generator": generator}, export

    @staticmethod
    def close(name, live):
        thing = live.pop(name)
        if name == "tensor":
            del thing
            gc.collect()
        else:
            thing.close()

    def use(self, live):
        """Every call of every object still held: a result or plume.Error."""
        expected = (self.FRAME > 5).astype(np.uint8)
        ctx_open = "context" not in live or live["context"]._handle is not None
        if "tensor" in live:
            tensor = live["tensor"]
            np.testing.assert_array_equal(tensor.numpy(), expected)  # host: Python's array
            taken = attempt(lambda: np.from_dlpack(tensor))
            if isinstance(taken, plume.Error):
                self.assertIn("the tensor's context is closed", str(taken))
            else:
                np.testing.assert_array_equal(taken, expected)
        if "pipeline" in live:
            pl = live["pipeline"]
            attempt(pl.describe)
            attempt(lambda: pl.run(self.FRAME))
            attempt(pl.reset_state)
        if "stream" in live:
            attempt(live["stream"].synchronize)
        if "generator" in live:
            attempt(lambda: next(live["generator"], None))
        if "context" in live:
            attempt(live["context"].pool_stats)
            attempt(live["context"].synchronize)
        return ctx_open

    def test_every_close_order_is_safe(self):
        names = ["context", "pipeline", "stream", "tensor", "generator"]
        for order in itertools.permutations(names):
            with self.subTest(order=order):
                live, export = self.objects()
                self.use(live)
                for name in order:
                    self.close(name, live)
                    self.use(live)
                np.testing.assert_array_equal(np.from_dlpack(_Capsule(export)),
                                              (self.FRAME > 5).astype(np.uint8))


BLOCKED_CAMERA = """
import sys, threading, time, numpy as np, plume
frame = np.arange(20, dtype=np.uint16).reshape(4, 5)
arrived = threading.Event()

def camera():  # one frame, then waits for the next for ever
    yield frame
    arrived.wait()
    yield frame

pl = plume.Pipeline("threshold value=5", "u16", (4, 5), context=plume.Context("host"))
print("streaming", flush=True)
started = time.monotonic()
try:
    for out in pl.run_stream(camera()):  # the camera blocks before plume gives frame 0
        started = time.monotonic()
except KeyboardInterrupt:
    print("interrupted after %.1f s" % (time.monotonic() - started), flush=True)
print("run after it:", int(pl.run(frame).sum()), flush=True)
print("streamed after it:", len(list(pl.run_stream([frame] * 3))), flush=True)
arrived.set()
pl.close()
print("closed", flush=True)
"""


class Interrupts(unittest.TestCase):
    FRAME = np.arange(20, dtype=np.uint16).reshape(4, 5)

    def test_ctrl_c_with_a_blocked_source_comes_out_and_the_pipeline_stays_usable(self):
        proc = subprocess.Popen([sys.executable, "-c", BLOCKED_CAMERA], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        try:
            self.assertEqual(proc.stdout.readline(), "streaming\n")
            time.sleep(0.5)  # the consumer waits on plume, plume on the camera
            proc.send_signal(signal.SIGINT)
            out, err = proc.communicate(timeout=30)
        finally:
            proc.kill()
        self.assertEqual(proc.returncode, 0, err)
        lines = out.splitlines()
        self.assertRegex(lines[0], r"^interrupted after [0-9.]+ s$")
        # 0.5 s of it the wait before the signal; a loaded machine may add some.
        self.assertLess(float(lines[0].split()[2]), 5.0)
        self.assertEqual(lines[1:], ["run after it: 14", "streamed after it: 3", "closed"])

    def test_two_threads_in_run_are_told_so(self):
        with plume.Context("host") as ctx, \
                plume.Pipeline("threshold value=5", "u16", (4, 5), context=ctx) as pl:
            inside, leave = threading.Event(), threading.Event()
            frame = self.FRAME

            class Slow:  # a producer that holds the first run while it is asked
                def __dlpack__(self, **kwargs):
                    inside.set()
                    leave.wait()
                    return frame.__dlpack__()

                def __dlpack_device__(self):
                    return (1, 0)

            first = threading.Thread(target=pl.run, args=(Slow(),))
            first.start()
            inside.wait()
            with self.assertRaises(plume.Error) as caught:
                pl.run(frame)
            self.assertIn("the pipeline is running (run() on another thread): one run at a "
                          "time", str(caught.exception))
            with self.assertRaises(plume.Error) as caught:
                next(pl.run_stream([frame]))
            self.assertIn("(run() on another thread)", str(caught.exception))
            leave.set()
            first.join()
            np.testing.assert_array_equal(pl.run(frame), (frame > 5).astype(np.uint8))

    def test_closing_the_context_from_another_thread_during_run_stream(self):
        ctx = plume.Context("host")
        pl = plume.Pipeline("threshold value=5", "u16", (4, 5), context=ctx)
        first, caught = threading.Event(), []

        def consume():
            try:
                for _ in pl.run_stream(itertools.repeat(self.FRAME), depth=1):
                    first.set()
            except plume.Error as error:
                caught.append(error)

        consumer = threading.Thread(target=consume)
        consumer.start()
        first.wait()
        ctx.close()  # stops the run, waits for plume to return, destroys
        consumer.join(30)
        self.assertFalse(consumer.is_alive())
        self.assertEqual([str(e) for e in caught], ["the pipeline was closed during run_stream"])
        with self.assertRaises(plume.Error):
            pl.run(self.FRAME)


class _Capsule:
    """A capsule taken earlier, handed to a consumer."""

    def __init__(self, capsule):
        self.capsule = capsule

    def __dlpack__(self, **kwargs):
        return self.capsule

    def __dlpack_device__(self):
        return (1, 0)


if __name__ == "__main__":
    unittest.main()
