"""python/tests/test_plume.py: the Python module against numpy and against the command line.

    PLUME_LIBRARY=build/libplume.so PLUME_CLI=build/apps/plume PYTHONPATH=python \
    python3 -m unittest python/tests/test_plume.py

(CTest runs it so: the test `python`.) Ops on numpy arrays equal numpy's own results and
`plume op`'s files byte for byte; a preset streamed over a hard scene equals `plume detect`'s
CSV; errors carry plume's message. Other libraries' arrays: CPU producers through __dlpack__
(the keywords they are called with, the versioned and the legacy capsule, each deleter
called once), device arrays refused by a host context with what was given, the
__cuda_array_interface__ parsed and refused field by field; results as plume.Tensor that
np.from_dlpack takes; the ops made from the library's descriptors; streams made and
wrapped. The CUDA paths (kDLCUDA capsules, interface pointers, streams as integers) need a
GPU and are not run here.
"""
import ctypes
import gc
import inspect
import json
import os
import subprocess
import sys
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
        self.assertIn("unexpected keyword argument 'valeu'", str(caught.exception))
        self.assertIsInstance(caught.exception, TypeError)
        with self.assertRaises(plume.Error):
            plume.Pipeline("threshold value=1", "u16", (4, 5), preset="robust")


class Producer:
    """A CPU tensor of another library: DLPack only, recording how it is asked. legacy:
    it knows no max_version (as NumPy 1.x) and makes a "dltensor" capsule."""

    def __init__(self, array, legacy=False, device=(1, 0)):
        self.array, self.legacy, self.device, self.calls = array, legacy, device, []

    def __dlpack__(self, **kwargs):
        self.calls.append(kwargs)
        if self.legacy and "max_version" in kwargs:
            raise TypeError("__dlpack__() got an unexpected keyword argument 'max_version'")
        return self.array.__dlpack__()

    def __dlpack_device__(self):
        return self.device


class CudaArray:
    """An object with a __cuda_array_interface__ and nothing else."""

    def __init__(self, **interface):
        self.__cuda_array_interface__ = dict(
            {"version": 3, "shape": (4, 5), "typestr": "<u2", "data": (0x10000, False),
             "strides": None}, **interface)


def capsule_name(capsule):
    return repr(capsule).split('"')[1]


class DLTensor(ctypes.Structure):  # DLPack's DLTensor, as plume/dlpack.h declares it
    _fields_ = [("data", ctypes.c_void_p), ("device_type", ctypes.c_int32),
                ("device_id", ctypes.c_int32), ("ndim", ctypes.c_int32),
                ("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16),
                ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


class DLManagedTensor(ctypes.Structure):  # legacy DLPack's, without a deleter here
    _fields_ = [("dl_tensor", DLTensor), ("manager_ctx", ctypes.c_void_p),
                ("deleter", ctypes.c_void_p)]


class LyingProducer:
    """Says kDLCPU but hands over a legacy capsule of kDLCUDA memory (no destructor)."""

    def __init__(self):
        self.shape = (ctypes.c_int64 * 2)(4, 5)
        self.managed = DLManagedTensor(DLTensor(data=0x10000, device_type=2, ndim=2, code=1,
                                                bits=16, lanes=1, shape=self.shape))
        new = ctypes.pythonapi.PyCapsule_New
        new.restype, new.argtypes = ctypes.py_object, [ctypes.c_void_p, ctypes.c_char_p,
                                                       ctypes.c_void_p]
        self.capsule = new(ctypes.addressof(self.managed), b"dltensor", None)

    def __dlpack__(self, **kwargs):
        return self.capsule

    def __dlpack_device__(self):
        return (1, 0)


class Interop(unittest.TestCase):
    def setUp(self):
        self.ctx = plume.Context("host")
        self.frame = np.arange(20, dtype=np.uint16).reshape(4, 5) * 100

    def tearDown(self):
        self.ctx.close()

    def threshold(self, array, **kwargs):
        return plume.op("threshold", array, value=900, context=self.ctx, **kwargs)

    def test_a_cpu_producer_is_asked_for_dlpack_1_1_with_no_stream(self):
        expected = (self.frame > 900).astype(np.uint8)
        legacy = Producer(self.frame, legacy=True)
        np.testing.assert_array_equal(self.threshold(legacy), expected)
        self.assertEqual(legacy.calls, [{"stream": None, "max_version": (1, 1)},
                                        {"stream": None}])
        # plume's own Tensor gives a versioned capsule when asked so: read as one.
        tensor = plume.op("threshold", self.frame, value=0, context=self.ctx, as_tensor=True)
        calls = []
        original = tensor.__dlpack__

        def recorded(**kwargs):
            calls.append(kwargs)
            capsule = original(**kwargs)
            calls.append(capsule_name(capsule))
            return capsule

        tensor.__dlpack__ = recorded
        again = plume.op("threshold", tensor, value=0, context=self.ctx)
        np.testing.assert_array_equal(again, (self.frame > 0).astype(np.uint8))
        self.assertEqual(calls, [{"stream": None, "max_version": (1, 1)}, "dltensor_versioned"])

    def test_every_export_is_released_once(self):
        owners = len(plume._capsule._owners)
        tensor = self.threshold(self.frame, as_tensor=True)
        used = tensor.__dlpack__(max_version=(1, 1))
        unused = tensor.__dlpack__()
        self.assertEqual(len(plume._capsule._owners), owners + 2)

        class Given:  # hands the capsule over once
            def __dlpack__(self, **kwargs):
                return used

            def __dlpack_device__(self):
                return (1, 0)

        self.threshold(Given())
        self.assertEqual(capsule_name(used), "used_dltensor_versioned")
        self.assertEqual(len(plume._capsule._owners), owners + 1)  # the consumer released it
        with self.assertRaises(plume.Error) as caught:
            self.threshold(Given())  # the same capsule again: spent
        self.assertIn("capsule named b'used_dltensor_versioned'", str(caught.exception))
        self.assertEqual(capsule_name(unused), "dltensor")
        used = None
        del unused  # collected unused: its destructor calls the deleter
        gc.collect()
        self.assertEqual(len(plume._capsule._owners), owners)  # the unused one's destructor

    def test_device_arrays_are_refused_by_a_host_context_with_what_was_given(self):
        on_gpu = Producer(self.frame, device=(2, 0))
        with self.assertRaises(plume.Error) as caught:
            self.threshold(on_gpu)
        self.assertEqual(caught.exception.status, "PLM_ERR_UNSUPPORTED")
        self.assertIn("DLPack device (2, 0) (kDLCUDA, GPU memory) given to a host context",
                      str(caught.exception))
        self.assertEqual(on_gpu.calls, [])  # refused before the producer did anything
        with self.assertRaises(plume.Error) as caught:
            self.threshold(Producer(self.frame, device=(4, 0)))
        self.assertIn("(4, 0) (an unknown device type)", str(caught.exception))
        with self.assertRaises(plume.Error) as caught:
            self.threshold(CudaArray())
        self.assertIn("a CUDA array (__cuda_array_interface__, uint16 (4, 5), of CudaArray) "
                      "given to a host context", str(caught.exception))

    def test_a_capsule_plume_refuses_stays_the_producer_s(self):
        lying = LyingProducer()
        with self.assertRaises(plume.Error) as caught:
            self.threshold(lying)
        self.assertIn("managed->dl_tensor.device is kDLCUDA but "
                      "the context is host", str(caught.exception))
        self.assertEqual(capsule_name(lying.capsule), "dltensor")  # not taken

    def test_a_stack_through_dlpack_runs_frame_by_frame_in_place(self):
        stack = np.stack([self.frame, self.frame + 50, self.frame + 150]).astype(np.uint16)
        ours = self.threshold(Producer(stack, legacy=True))
        np.testing.assert_array_equal(ours, (stack > 900).astype(np.uint8))
        tensors = self.threshold(stack, as_tensor=True)
        self.assertEqual(tensors.shape, (3, 4, 5))  # one Tensor, the stack of results

    def test_the_cuda_array_interface_is_read_field_by_field(self):
        read = plume._interop.CudaArrayInterface
        parsed = read(CudaArray(typestr="<f4", shape=(2, 3), strides=(12, 4), data=(64, True),
                                stream=7).__cuda_array_interface__)
        self.assertEqual((parsed.dtype, parsed.shape, parsed.strides), (np.float32, (2, 3),
                                                                         (3, 1)))
        self.assertEqual((parsed.pointer, parsed.readonly, parsed.stream), (64, True, 7))
        self.assertIsNone(read(CudaArray().__cuda_array_interface__).strides)
        self.assertEqual(read(CudaArray(typestr="|u1").__cuda_array_interface__).dtype, np.uint8)
        refusals = [({"version": 2}, "version 2: plume reads version 3"),
                    ({"typestr": ">u2"}, "typestr '>u2' is not a little-endian"),
                    ({"typestr": "<i8"}, "typestr '<i8'"),
                    ({"strides": (10, 3)}, "strides (10, 3) (bytes) are not multiples of the "
                                           "item size 2"),
                    ({"strides": (10,)}, "do not match shape"),
                    ({"stream": 0}, "stream 0: the protocol gives None or a nonzero int"),
                    ({"mask": object()}, "has a mask"),
                    ({"data": (0, False)}, "data pointer is 0")]
        for change, message in refusals:
            with self.assertRaises(plume.Error, msg=change) as caught:
                read(CudaArray(**change).__cuda_array_interface__)
            self.assertIn(message, str(caught.exception))
        with self.assertRaises(plume.Error) as caught:
            read({"shape": (1,)})
        self.assertIn("version None", str(caught.exception))

    def test_results_are_tensors_numpy_takes_through_dlpack(self):
        tensor = self.threshold(self.frame, as_tensor=True)
        expected = (self.frame > 900).astype(np.uint8)
        self.assertIsInstance(tensor, plume.Tensor)
        self.assertEqual((tensor.shape, tensor.dtype, tensor.device), ((4, 5), np.uint8, "host"))
        self.assertEqual(tensor.__dlpack_device__(), (1, 0))
        np.testing.assert_array_equal(tensor.numpy(), expected)
        np.testing.assert_array_equal(np.asarray(tensor), expected)
        taken = np.from_dlpack(tensor)  # NumPy 1.x asks for the legacy capsule
        np.testing.assert_array_equal(taken, expected)
        self.assertEqual(taken.ctypes.data, tensor.numpy().ctypes.data)  # no copy
        self.assertEqual(capsule_name(tensor.__dlpack__()), "dltensor")
        self.assertEqual(capsule_name(tensor.__dlpack__(max_version=(1, 0))),
                         "dltensor_versioned")
        self.assertEqual(capsule_name(tensor.__dlpack__(max_version=(0, 8))), "dltensor")
        del tensor
        gc.collect()
        np.testing.assert_array_equal(taken, expected)  # the export holds the memory

        class Copied:
            def __init__(self, tensor):
                self.tensor = tensor

            def __dlpack__(self, **kwargs):
                return self.tensor.__dlpack__(copy=True)

            def __dlpack_device__(self):
                return self.tensor.__dlpack_device__()

        tensor = self.threshold(self.frame, as_tensor=True)
        copy = np.from_dlpack(Copied(tensor))
        np.testing.assert_array_equal(copy, expected)
        self.assertNotEqual(copy.ctypes.data, tensor.numpy().ctypes.data)
        with self.assertRaises(BufferError) as caught:
            tensor.__dlpack__(stream=1)
        self.assertIn("the protocol's stream is None for CPU memory", str(caught.exception))
        with self.assertRaises(BufferError):
            tensor.__dlpack__(dl_device=(2, 0))

    def test_pipeline_run_gives_tensors_on_request(self):
        with plume.Pipeline("threshold value=900", "u16", (4, 5), context=self.ctx) as pl:
            as_array = pl.run(self.frame)
            as_tensor = pl.run(self.frame, as_tensor=True)
        self.assertIsInstance(as_array, np.ndarray)
        np.testing.assert_array_equal(np.from_dlpack(as_tensor), as_array)

    def test_streams_made_and_wrapped(self):
        stream = self.ctx.stream()
        wrapped = plume.Stream.wrap(self.ctx, stream)  # shares its worker (host)
        for s in (stream, wrapped, self.ctx.default_stream):
            np.testing.assert_array_equal(self.threshold(self.frame, stream=s),
                                          (self.frame > 900).astype(np.uint8))
        wrapped.synchronize()
        with self.assertRaises(plume.Error) as caught:
            stream.close()  # its wrapper is open
        self.assertIn("destroy them first", str(caught.exception))
        with self.assertRaises(plume.Error) as caught:
            stream.native_handle
        self.assertEqual(caught.exception.status, "PLM_ERR_UNSUPPORTED")
        with self.assertRaises(plume.Error) as caught:
            plume.Stream.wrap(self.ctx, 12345)
        self.assertIn("takes a plume Stream of the context", str(caught.exception))
        other = plume.Context("host")
        with self.assertRaises(plume.Error) as caught:
            self.threshold(self.frame, stream=other.default_stream)
        self.assertIn("is not a plume Stream of this context", str(caught.exception))
        other.close()
        # The context closes the wrapper before the stream it wraps (tearDown).


class GeneratedOps(unittest.TestCase):
    def test_every_text_op_is_a_function_with_the_library_s_parameters(self):
        for name in ("conv2d", "sobel", "entropy", "threshold", "label", "nuc", "badpixel",
                     "background", "cfar"):
            self.assertIn(name, plume.ops.__all__)
        self.assertNotIn("regions", plume.ops.__all__)
        self.assertNotIn("sobel_entropy_threshold", plume.ops.__all__)
        params = inspect.signature(plume.ops.threshold).parameters
        self.assertEqual(list(params), ["array", "value", "cmp", "out", "context", "stream",
                                        "as_tensor"])
        # plume.ops holds the functions and nothing else (no helper, no module).
        self.assertEqual([n for n in dir(plume.ops) if not n.startswith("__")],
                         sorted(plume.ops.__all__))
        self.assertIn("cmp (one of gt, ge, lt, le, default gt)", plume.ops.threshold.__doc__)
        self.assertIn("gain (array of", plume.ops.nuc.__doc__)

    def test_a_generated_op_equals_plume_op_on_the_command_line(self):
        frame = np.random.default_rng(3).integers(0, 4000, (24, 32), dtype=np.uint16)
        with tempfile.TemporaryDirectory() as d:
            np.save(os.path.join(d, "in.npy"), frame)
            cli("op", "threshold", "--in", os.path.join(d, "in.npy"), "--value", "2500",
                "--cmp", "ge", "--out", os.path.join(d, "out.npy"), "--backend", "host")
            theirs = np.load(os.path.join(d, "out.npy"))
        ours = plume.ops.threshold(frame, value=2500, cmp="ge")
        self.assertEqual(ours.tobytes(), theirs.tobytes())
        with self.assertRaises(plume.Error) as caught:
            plume.ops.threshold(frame)
        self.assertIn("value", str(caught.exception))


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
            # robust's background keeps its gate's spread v beside b: (2, H, W).
            self.assertIn("state s0 f32 2x64x80", pl.describe())
        theirs = self.detect_rows("robust")
        self.assertEqual(ours.shape, theirs.shape)
        self.assertGreater(len(theirs), 0)
        np.testing.assert_allclose(ours, theirs, rtol=1e-12, atol=1e-9)

    # A background's state without feedback (robust's hysteresis, hold=~det, feeds each
    # frame's mask to the next, which the frames of a batch could not see).
    HELD = ("background alpha=0.05 gate=2 gate_rate=0 ! conv2d kernel=gauss:5:1 pad=same "
            "border=zero ! cfar window=21 guard=7 k=5.3 ! label connectivity=8 ! "
            "regions capacity=1024")

    def test_a_batched_stream_equals_one_frame_at_a_time(self):
        with plume.Pipeline(self.HELD, dtype="u16", shape=self.frames.shape[1:]) as pl:
            single = self.streamed_rows(pl)
        batch = 4  # and a short last batch unless the frames divide by 4
        with plume.Pipeline(self.HELD, dtype="u16",
                            shape=(batch,) + self.frames.shape[1:]) as pl:
            rows = []
            for frame, (table, count) in enumerate(pl.run_stream(self.frames, batch=batch)):
                self.assertEqual(table.ndim, 2)  # one frame's table, not the batch's
                rows += [[frame, *row] for row in table[:int(count.reshape(-1)[0])]]
            with self.assertRaises(plume.Error) as caught:
                list(pl.run_stream(self.frames, batch=batch + 1))
        batched = np.array(rows).reshape(-1, 13)
        self.assertGreater(len(single), 0)
        np.testing.assert_array_equal(batched, single)
        self.assertIn("batch", str(caught.exception))

    def test_tuned_batch_is_the_tuning_table_s(self):
        # plume tune writes the table (run_stream batch_bytes); a table of 64 KiB gives 64x64
        # u16 frames (8 KiB) a batch of 8, 128x128 a batch of 2, larger frames 1. A new
        # process reads it, as the table is read once per device and process.
        with tempfile.TemporaryDirectory() as cache:
            env = dict(os.environ, XDG_CACHE_HOME=cache, PLUME_TUNING="on")
            done = subprocess.run([CLI, "tune", "--quick", "--op", "run_stream", "--runs", "1",
                                   "-q"], env=env, capture_output=True, text=True)
            self.assertEqual(done.returncode, 0, done.stderr)
            [name] = os.listdir(os.path.join(cache, "plume"))
            path = os.path.join(cache, "plume", name)
            with open(path) as f:
                table = json.load(f)
            [entry] = [e for e in table["entries"] if e["op"] == "run_stream"]
            entry["value"] = 65536
            with open(path, "w") as f:
                json.dump(table, f)
            code = ("import plume; c = plume.Context('host'); "
                    "print(c.tuned_batch((64, 64)), c.tuned_batch((128, 128)), "
                    "c.tuned_batch((64, 64), 'float32'), c.tuned_batch((2048, 2048)))")
            done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                                  text=True)
            self.assertEqual(done.returncode, 0, done.stderr)
            self.assertEqual(done.stdout.split(), ["8", "2", "4", "1"])
        with plume.Context("host") as ctx:
            with self.assertRaises(plume.Error):
                ctx.tuned_batch((64, 0))

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
            self.assertIn("(a run_stream generator is open): one run at a time",
                          str(caught.exception))
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


try:
    import torch
except ImportError:  # python3-torch is an optional test dependency
    torch = None


class LikeNumpy(unittest.TestCase):
    """plume.ops as numpy users expect: a repeated call is cached, other dtypes converted
    by the documented rule, out=, results of the caller's kind, errors as ValueError and
    TypeError naming the argument."""

    def setUp(self):
        self.ctx = plume.Context("host")
        rng = np.random.default_rng(3)
        self.frame = rng.random((24, 32)).astype(np.float32)

    def tearDown(self):
        self.ctx.close()

    def threshold(self, array, **kwargs):
        return plume.ops.threshold(array, value=0.5, context=self.ctx, **kwargs)

    def test_a_repeated_call_reuses_its_compiled_pipeline(self):
        expected = (self.frame > 0.5).astype(np.uint8)
        for _ in range(3):
            np.testing.assert_array_equal(self.threshold(self.frame), expected)
        self.assertEqual(len(self.ctx._op_cache), 1)
        self.threshold(self.frame[:10])  # another shape: another pipeline
        plume.ops.threshold(self.frame, value=0.25, context=self.ctx)  # other parameters
        self.assertEqual(len(self.ctx._op_cache), 3)
        # The fast path still reads each call's data: another array of the same shape.
        other = 1 - self.frame
        np.testing.assert_array_equal(self.threshold(other), (other > 0.5).astype(np.uint8))
        # A stateful op starts again on every call, cached or not.
        stack = np.stack([self.frame * 100, self.frame * 200]).astype(np.uint16)
        first = plume.ops.background(stack, alpha=0.5, context=self.ctx)
        np.testing.assert_array_equal(plume.ops.background(stack, alpha=0.5, context=self.ctx),
                                      first)

    def test_threshold_compares_in_double_precision_at_the_edges(self):
        # The CPU kernel compares floats against a float bound (kernels/common/threshold.h):
        # the answers must be the doubles' for values between two floats, on them, beyond
        # float's range, and for u16.
        x = np.float32([0.1, np.nextafter(np.float32(0.1), 0), np.nextafter(np.float32(0.1), 1),
                        -0.0, 3.4e38, np.inf, -np.inf, np.nan, 1e-45, 16777217.0])
        ops = {"gt": np.greater, "ge": np.greater_equal, "lt": np.less, "le": np.less_equal}
        for value in (0.1, float(np.float32(0.1)), 0.0, 3.5e38, 1e300, -1e300, 1e-46,
                      16777217.0):
            for cmp, fn in ops.items():
                got = plume.ops.threshold(x, value=value, cmp=cmp, context=self.ctx)
                want = fn(x.astype(np.float64), value).astype(np.uint8)
                np.testing.assert_array_equal(got, want, err_msg="%r %s" % (value, cmp))
        u16 = np.arange(0, 65536, 7, dtype=np.uint16)
        for value in (99.5, 100.0, 65534.9999999):
            np.testing.assert_array_equal(plume.ops.threshold(u16, value=value, context=self.ctx),
                                          (u16 > value).astype(np.uint8))

    def test_other_dtypes_are_converted_by_the_rule(self):
        expected = (self.frame > 0.5).astype(np.uint8)
        np.testing.assert_array_equal(self.threshold(self.frame.astype(np.float64)), expected)
        ints = (self.frame * 1000).astype(np.int64)  # numpy's default integers: values fit u16
        np.testing.assert_array_equal(
            plume.ops.threshold(ints, value=500, context=self.ctx), (ints > 500).astype(np.uint8))
        np.testing.assert_array_equal(self.threshold(self.frame > 0.5), expected)  # bool: u8
        with self.assertRaises(ValueError) as caught:  # int64 values no dtype it takes holds
            plume.ops.threshold(ints + 2**40, value=0, context=self.ctx)
        self.assertIn("plume.ops.threshold: array is int64", str(caught.exception))
        self.assertIn("in the order u8, u16, i32, f32, f64", str(caught.exception))
        with self.assertRaises(TypeError) as caught:
            self.threshold(self.frame.astype(np.complex64))
        self.assertIsInstance(caught.exception, plume.InvalidType)
        # Strided views are copied, as numpy's ascontiguousarray does.
        np.testing.assert_array_equal(self.threshold(self.frame.T), expected.T)
        # Named tensors too: f64 calibrations become f32.
        gain = np.full(self.frame.shape, 2.0)
        np.testing.assert_array_equal(
            plume.ops.nuc(self.frame, gain=gain, offset=np.zeros_like(gain), context=self.ctx),
            self.frame * 2)

    def test_out_is_written_and_returned(self):
        out = np.zeros(self.frame.shape, np.uint8)
        self.assertIs(self.threshold(self.frame, out=out), out)
        np.testing.assert_array_equal(out, (self.frame > 0.5).astype(np.uint8))
        stack = np.stack([self.frame, 1 - self.frame])
        outs = np.zeros(stack.shape, np.uint8)
        self.assertIs(self.threshold(stack, out=outs), outs)
        np.testing.assert_array_equal(outs, (stack > 0.5).astype(np.uint8))
        with self.assertRaises(ValueError) as caught:
            self.threshold(self.frame, out=np.zeros(self.frame.shape, np.float32))
        self.assertIn("plume.ops.threshold: out is float32 (24, 32); the result is uint8",
                      str(caught.exception))
        with self.assertRaises(ValueError):
            self.threshold(self.frame, out=np.zeros((32, 24), np.uint8).T)  # strided
        with self.assertRaises(TypeError):
            self.threshold(self.frame, out=[0])

    def test_errors_are_value_and_type_errors_naming_the_argument(self):
        with self.assertRaises(ValueError) as caught:
            plume.ops.threshold(self.frame, context=self.ctx)
        self.assertEqual(str(caught.exception),
                         "plume.ops.threshold: missing argument 'value'")
        self.assertNotIn("plm_", str(caught.exception))
        with self.assertRaises(TypeError) as caught:
            plume.ops.threshold(self.frame, value="high", context=self.ctx)
        self.assertIn("value='high' (str): not a number", str(caught.exception))
        with self.assertRaises(ValueError):
            plume.ops.threshold(self.frame, value=0.5, cmp="above", context=self.ctx)
        with self.assertRaises(TypeError):
            plume.ops.threshold(self.frame, value=0.5, nope=1, context=self.ctx)
        with self.assertRaises(TypeError):
            plume.Context(device=1.5)
        with plume.Pipeline("threshold value=3", "u16", (8, 8), context=self.ctx) as pl:
            with self.assertRaises(ValueError) as caught:
                pl.run(np.zeros((8, 9), np.uint16))
        self.assertEqual(str(caught.exception),
                         "frames[0] is u16 8x9 but the pipeline's input 0 is u16 8x8")

    def test_the_public_api_has_type_information(self):
        import typing
        here = os.path.dirname(plume.__file__)
        for name in ("py.typed", "ops.pyi"):  # PEP 561: the package is typed; plume.ops's stub
            self.assertTrue(os.path.exists(os.path.join(here, name)), name)
        self.assertEqual(typing.get_type_hints(plume.Pipeline.describe)["return"], str)
        self.assertIn("context", typing.get_type_hints(plume.op))
        self.assertRegex(plume.__version__, r"^\d+\.\d+\.\d+$")

    def test_a_regions_table_has_named_fields(self):
        frame = np.zeros((32, 40), np.uint16)
        frame[10:14, 20:25] = 4000
        frame[1:3, 1:3] = 4000
        with plume.Pipeline("threshold value=3500 ! label ! regions", "u16", frame.shape,
                            context=self.ctx) as pl:
            table, count = pl.run(frame)
            raw, _ = pl.run(frame, as_tensor=True)
        self.assertEqual(table.dtype, plume.REGION)
        self.assertEqual(plume.REGION.names[:2], ("label", "area"))
        self.assertEqual(len(table), int(count[0]))  # the regions found, not the capacity
        np.testing.assert_array_equal(table["area"], [4, 20])
        np.testing.assert_array_equal(table["centroid_row"], [1.5, 11.5])
        # A view of the table plume wrote, its columns the fields.
        np.testing.assert_array_equal(raw.numpy()[:2].reshape(-1), table.view(np.float64))
        segmented, _ = plume.ops.segment(frame, value=3500, context=self.ctx)
        np.testing.assert_array_equal(segmented["area"], [4, 20])

    @unittest.skipIf(torch is None, "no torch for this python3 (Debian: python3-torch, optional)")
    def test_torch_tensors_in_and_out_without_a_copy(self):
        t = torch.from_numpy(self.frame.copy())
        operand = plume._interop.operand(self.ctx, t, self.ctx.default_stream,
                                         plume._ops.Call("threshold", {"value": 0.5}).convert)
        self.assertEqual(operand.tensor.data, t.data_ptr())  # read in place
        operand.release()
        mask = self.threshold(t)
        self.assertIsInstance(mask, torch.Tensor)
        self.assertTrue(torch.equal(mask, (t > 0.5).to(torch.uint8)))
        tensor = self.threshold(t, as_tensor=True)
        self.assertEqual(torch.from_dlpack(tensor).data_ptr(), tensor.tensor.data)  # no copy
        out = torch.zeros(t.shape, dtype=torch.uint8)
        pointer = out.data_ptr()
        self.assertIs(self.threshold(t, out=out), out)
        self.assertEqual(out.data_ptr(), pointer)
        self.assertTrue(torch.equal(out, (t > 0.5).to(torch.uint8)))
        # Strided and of other dtypes: as numpy arrays are.
        np.testing.assert_array_equal(self.threshold(t.T).numpy(),
                                      (self.frame.T > 0.5).astype(np.uint8))
        np.testing.assert_array_equal(self.threshold(t.double()).numpy(),
                                      (self.frame > 0.5).astype(np.uint8))
        counted = plume.ops.label(self.threshold(t), context=self.ctx)
        self.assertIsInstance(counted[0], torch.Tensor)
        self.assertIsInstance(counted[1], torch.Tensor)


if __name__ == "__main__":
    unittest.main()
