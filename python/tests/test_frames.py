"""python/tests/test_frames.py: plume.open_frames and plume.read (libplume_io) against the
libraries that wrote the files.

    PLUME_LIBRARY=build/libplume.so PYTHONPATH=python python3 python/tests/test_frames.py

(CTest runs it so: the test `python_frames`; libplume_io is found beside libplume.) Each
fixture of tests/fixtures (TIFF by tifffile, FITS by astropy, HDF5 by h5py, NetCDF-4 by
netCDF4-python, video by the ffmpeg program) is read through plume and compared value by
value with what that library (or program) reads from the same file, where this python3 has
it (Debian: python3-tifffile, python3-astropy, python3-h5py, python3-netcdf4, ffmpeg), and
always with the .npy its generator saved. plume op's HDF5 outputs of every dtype (PLUME_CLI)
are read by h5py and netCDF4-python as the same op's .npy output. Raw frames from a file and from a pipe (a
python3 started with the bytes on its standard input); a pipeline run over open_frames
equals the same run over the stack; every failure raises the exception of its status with
the C library's message.
"""
import os
import shutil
import subprocess
import sys
import tempfile
import unittest
import warnings

import numpy as np

import plume

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.join(os.path.dirname(os.path.dirname(HERE)), "tests", "fixtures")


def fixture(name):
    return os.path.join(FIXTURES, name)


def optional(module):
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return __import__(module)
    except ImportError:
        return None


tifffile = optional("tifffile")
h5py = optional("h5py")
netCDF4 = optional("netCDF4")
astropy = optional("astropy.io.fits")
fits = astropy.io.fits if astropy else None
FFMPEG = shutil.which("ffmpeg")
CLI = os.environ.get("PLUME_CLI", "build/apps/plume")


def assert_same(test, got, want, what):
    """Equal in dtype, shape and every value (NaN equal to NaN)."""
    want = np.asarray(want)
    test.assertEqual((got.dtype, got.shape), (want.dtype, want.shape), what)
    test.assertTrue(np.array_equal(got, want, equal_nan=want.dtype.kind == "f"),
                    "%s: %d values differ" % (what, np.count_nonzero(~((got == want) | (
                        np.isnan(got) & np.isnan(want) if want.dtype.kind == "f" else False)))))


class Formats(unittest.TestCase):
    """Each format equal to its writer's reading and to the generator's .npy."""

    def check(self, name, want=None, **options):
        """plume.read(fixture name) equals the .npy beside it (NAME.npy, or `want`), and
        open_frames gives the same frames one at a time, in and out of order."""
        path = fixture(name)
        base = os.path.splitext(path.split(".h5:")[0].split(".nc:")[0])[0]
        expected = np.load(want or base + ".npy")
        got = plume.read(path, **options)
        assert_same(self, got, expected, name)
        stack = expected if expected.ndim == 3 else expected[None]
        with plume.open_frames(path, **options) as frames:
            self.assertEqual((frames.dtype, frames.shape), (stack.dtype, stack.shape[1:]))
            if frames.count is not None:
                self.assertEqual(len(frames), len(stack))
                assert_same(self, frames[-1], stack[-1], name + "[-1]")
                assert_same(self, frames[::-1], stack[::-1], name + "[::-1]")
            assert_same(self, np.stack(list(frames)), stack, name + " iterated")
            self.assertEqual(frames.file(0), path)
        return got

    @unittest.skipIf(tifffile is None, "no tifffile for this python3 (Debian: python3-tifffile)")
    def test_tiff_as_tifffile_reads_it(self):
        for name in ("u8-strips", "u16-stack-strips-deflate", "u16-stack-tiled-big-endian",
                     "f32-stack-strips-big-endian", "f32-tiled"):
            got = self.check("tiff/%s.tif" % name)
            want = tifffile.imread(fixture("tiff/%s.tif" % name))
            assert_same(self, got, want.astype(want.dtype.newbyteorder("=")), name)

    def test_tiff_as_numpy_saved_it(self):
        for name in ("u8-strips", "u16-stack-strips-deflate", "f32-tiled"):
            self.check("tiff/%s.tif" % name)

    @unittest.skipIf(fits is None, "no astropy for this python3 (Debian: python3-astropy)")
    def test_fits_as_astropy_reads_it(self):
        for name in ("u8-image", "u16-cube", "i16-image", "i16-scaled-blank",
                     "f32-cube-extension"):
            got = self.check("fits/%s.fits" % name)
            with warnings.catch_warnings(), fits.open(fixture("fits/%s.fits" % name)) as hdus:
                warnings.simplefilter("ignore")
                image = next(h.data for h in hdus if h.data is not None and h.data.ndim >= 2)
                # BZERO/BSCALE and BLANK applied by astropy; plume gives i16 images as f32.
                assert_same(self, got, image.astype(got.dtype), name)

    def test_fits_as_numpy_saved_it(self):
        for name in ("u8-image", "u16-cube", "i16-scaled-blank"):
            self.check("fits/%s.fits" % name)

    @unittest.skipIf(h5py is None, "no h5py for this python3 (Debian: python3-h5py)")
    def test_hdf5_as_h5py_reads_it(self):
        for name, dataset in (("u8-image", "image"), ("u16-cube", "frames"),
                              ("f32-chunked-gzip", "group/radiance")):
            got = self.check("hdf5/%s.h5:/%s" % (name, dataset))
            with h5py.File(fixture("hdf5/%s.h5" % name), "r") as f:
                assert_same(self, got, f[dataset][()].astype(got.dtype), name)
        # missing_value: NaN where h5py's stored values are one of them, f64 narrowed to f32.
        with h5py.File(fixture("hdf5/f64-missing.h5"), "r") as f:
            stored = f["temperature"][()]
            missing = f["temperature"].attrs["missing_value"]
        with np.errstate(over="ignore"):
            narrowed = stored.astype(np.float32)
        physical = narrowed.copy()
        physical[np.isin(stored, missing)] = np.nan
        assert_same(self, self.check("hdf5/f64-missing.h5"), physical, "f64-missing")
        assert_same(self, self.check("hdf5/f64-missing.h5", stored_values=True,
                                     want=fixture("hdf5/f64-missing-stored.npy")),
                    narrowed, "f64-missing stored")

    @unittest.skipIf(netCDF4 is None, "no netCDF4 for this python3 (Debian: python3-netcdf4)")
    def test_netcdf4_as_netcdf4_python_reads_it(self):
        with netCDF4.Dataset(fixture("hdf5/i16-packed.nc")) as nc:
            variable = nc["radiance"]
            variable.set_auto_maskandscale(True)
            physical = np.ma.filled(variable[:].astype(np.float32), np.nan)
            variable.set_auto_maskandscale(False)
            stored = np.asarray(variable[:]).astype(np.float32)
        # (Read after the Dataset is closed: libhdf5 refuses a file another handle holds
        # with other locking flags.)
        assert_same(self, self.check("hdf5/i16-packed.nc:/radiance"), physical, "physical")
        assert_same(self, self.check("hdf5/i16-packed.nc:/radiance", stored_values=True,
                                     want=fixture("hdf5/i16-packed-stored.npy")),
                    stored, "stored")

    def test_hdf5_as_numpy_saved_it(self):
        self.check("hdf5/u16-cube.h5:/frames")
        self.check("hdf5/i16-packed.nc:/radiance")
        self.check("hdf5/i16-packed.nc:/radiance", stored_values=True,
                   want=fixture("hdf5/i16-packed-stored.npy"))

    @unittest.skipIf(FFMPEG is None, "no ffmpeg program (Debian: ffmpeg)")
    def test_video_as_ffmpeg_decodes_it(self):
        for name, pix_fmt, dtype in (("gray8-ffv1.avi", "gray", np.uint8),
                                     ("gray10-ffv1.mkv", "gray10le", "<u2"),
                                     ("gray16-ffv1.mkv", "gray16le", "<u2"),
                                     ("gray8-raw.nut", "gray", np.uint8)):
            got = self.check("video/" + name)
            decoded = subprocess.run([FFMPEG, "-v", "error", "-i", fixture("video/" + name),
                                      "-f", "rawvideo", "-pix_fmt", pix_fmt, "-"],
                                     capture_output=True, check=True).stdout
            want = np.frombuffer(decoded, dtype).reshape(got.shape).astype(got.dtype)
            assert_same(self, got, want, name)

    def test_video_as_numpy_saved_it(self):
        got = self.check("video/gray16-ffv1.mkv")
        self.assertGreater(int(got.max()), 1023)  # all 16 bits kept
        with plume.open_frames(fixture("video/gray16-ffv1.mkv")) as frames:
            self.assertIsNone(frames.count)  # Matroska does not say; known at the end
            with self.assertRaises(TypeError):
                len(frames)
            self.assertEqual(len(list(frames)), 4)
            self.assertEqual(len(frames), 4)


class Written(unittest.TestCase):
    """plume op's HDF5 outputs (--out x.h5, x.h5:/name) as h5py and netCDF4-python read them:
    the dtype, shape and values of the same op's .npy output, in the dataset named."""

    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()

    def tearDown(self):
        self.dir.cleanup()

    def path(self, name):
        return os.path.join(self.dir.name, name)

    def op(self, name, *args):
        """plume op NAME ARGS... writing OUT.npy and OUT.h5:/out/NAME; the .npy's array."""
        for out in ("%s.npy" % name, "%s.h5:/out/%s" % (name, name)):
            subprocess.run([CLI, "op", name, *args, "--out", self.path(out)], check=True,
                           capture_output=True)
        return np.load(self.path(name + ".npy"))

    def outputs(self):
        """Every dtype plume writes: (op, the .npy output) for u8, u16, i32, f32 and f64 in
        1 to 3 dimensions."""
        cube = fixture("hdf5/u16-cube.h5:/frames")
        ref = self.path("ref.npy")
        np.save(ref, np.full((3, 9, 14), 1000, np.uint16))
        a, b = self.path("a.npy"), self.path("b.npy")
        np.save(a, np.arange(12, dtype=np.float32).reshape(3, 4) / 7)
        np.save(b, np.linspace(-2, 2, 12, dtype=np.float32).reshape(3, 4))
        return [("threshold", self.op("threshold", "--in", cube, "--value", "30000")),
                ("abs_diff", self.op("abs_diff", "--in", cube, "--ref", ref)),
                ("label", self.op("label", "--in", self.path("threshold.npy"))),
                ("entropy", self.op("entropy", "--in", cube, "--window", "3", "--bins", "8",
                                    "--range", "0,65535")),
                ("dot", self.op("dot", "--a", a, "--b", b))]

    @unittest.skipIf(h5py is None, "no h5py for this python3 (Debian: python3-h5py)")
    def test_hdf5_as_h5py_reads_it(self):
        want_dtypes = {"threshold": "|u1", "abs_diff": "<u2", "label": "<i4", "entropy": "<f4",
                       "dot": "<f8"}
        for name, want in self.outputs():
            self.assertEqual(want.dtype.str, want_dtypes[name], name)
            with h5py.File(self.path(name + ".h5"), "r") as f:
                self.assertEqual(list(f), ["out"], name)
                self.assertEqual(list(f["out"]), [name], name)
                dataset = f["out/" + name]
                self.assertIsNone(dataset.chunks, name)  # contiguous
                self.assertEqual(dict(dataset.attrs), {}, name)
                assert_same(self, dataset[...], want, name)
                self.assertEqual(dataset.dtype.str, want.dtype.str, name)
        # Unnamed: /data.
        subprocess.run([CLI, "op", "threshold", "--in", self.path("threshold.npy"), "--value",
                        "0", "--out", self.path("plain.hdf5")], check=True, capture_output=True)
        with h5py.File(self.path("plain.hdf5"), "r") as f:
            self.assertEqual(list(f), ["data"])
            assert_same(self, f["data"][...], np.load(self.path("threshold.npy")), "/data")

    @unittest.skipIf(netCDF4 is None, "no netCDF4 for this python3 (Debian: python3-netcdf4)")
    def test_hdf5_as_netcdf4_python_reads_it(self):
        """Not NetCDF-4 by its conventions (no dimension scales: plume names it .h5), but
        netCDF4-python opens it, with dimensions phony_dim_0, ..."""
        for name, want in self.outputs():
            with netCDF4.Dataset(self.path(name + ".h5")) as nc:
                variable = nc["out"][name]
                variable.set_auto_mask(False)
                self.assertTrue(all(d.startswith("phony_dim_") for d in variable.dimensions))
                got = variable[...]
            assert_same(self, np.asarray(got), want, name)


class Raw(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        rng = np.random.default_rng(38)
        self.frames = rng.integers(0, 65536, (5, 6, 7), dtype=np.uint16)
        self.header = b"sensor header 32 bytes long.... "
        self.bytes = self.header + self.frames.astype(">u2").tobytes()
        self.format = plume.RawFormat((6, 7), "u16", "big", len(self.header))

    def tearDown(self):
        self.dir.cleanup()

    def path(self, name, data):
        path = os.path.join(self.dir.name, name)
        with open(path, "wb") as f:
            f.write(data)
        return path

    def test_a_file_in_any_order(self):
        path = self.path("frames.raw", self.bytes)
        with plume.open_frames(path, raw=self.format) as frames:
            self.assertEqual(len(frames), 5)
            assert_same(self, frames[3], self.frames[3], "frame 3")
            assert_same(self, frames[1:4], self.frames[1:4], "1:4")
        assert_same(self, plume.read(path, raw=self.format), self.frames, "read")
        # A dict of RawFormat's fields; f32 little-endian without a header.
        floats = self.frames.astype(np.float32) / 7
        path = self.path("floats.raw", floats.astype("<f4").tobytes())
        assert_same(self, plume.read(path, raw={"shape": (6, 7), "dtype": np.float32}), floats,
                    "f32")

    def test_a_pipe_is_read_in_order_to_its_end(self):
        script = ("import sys, numpy as np, plume\n"
                  "frames = plume.open_frames('-', raw=plume.RawFormat((6, 7), 'u16', 'big', %d))\n"
                  "assert frames.count is None\n"
                  "stack = np.stack(list(frames))\n"
                  "assert len(frames) == len(stack)\n"
                  "sys.stdout.buffer.write(stack.tobytes())\n" % len(self.header))
        done = subprocess.run([sys.executable, "-c", script], input=self.bytes,
                              capture_output=True)
        self.assertEqual(done.returncode, 0, done.stderr.decode())
        got = np.frombuffer(done.stdout, np.uint16).reshape(self.frames.shape)
        assert_same(self, got, self.frames, "stdin")
        # Cut inside frame 3: the frames before it, then the C library's message.
        script = ("import plume\n"
                  "frames = plume.open_frames('-', raw=plume.RawFormat((6, 7), 'u16', 'big', %d))\n"
                  "try:\n"
                  "    for frame in frames: print('frame')\n"
                  "except plume.FileError as failure: print(failure)\n" % len(self.header))
        cut = len(self.header) + 3 * 84 + 50
        done = subprocess.run([sys.executable, "-c", script], input=self.bytes[:cut],
                              capture_output=True)
        self.assertEqual(done.returncode, 0, done.stderr.decode())
        self.assertEqual(done.stdout.decode(), "frame\nframe\nframe\n"
                         "stdin: frame 3 is short: 50 of 84 bytes, 34 missing (is the raw "
                         "format's shape, dtype or header right?)\n")

    def test_a_wrong_size_names_the_short_frame(self):
        path = self.path("short.raw", self.bytes[:-3])
        with self.assertRaises(plume.FileError) as caught:
            plume.open_frames(path, raw=self.format)
        self.assertIn("short.raw", str(caught.exception))
        self.assertIn("frame 4", str(caught.exception))
        self.assertEqual(caught.exception.status, "PLM_ERR_IO")

    def test_bad_formats_are_refused_by_name(self):
        path = self.path("frames.raw", self.bytes)
        for raw, needle in (((6, 7, 1), "raw shape"), ("6x7", "raw shape"),
                            (plume.RawFormat((6, 7), "i32"), "raw dtype"),
                            (plume.RawFormat((6, 0)), "raw width is 0"),
                            (plume.RawFormat((6, 7), byteorder="middle"), "byteorder"),
                            (plume.RawFormat((6, 7), header=-1), "raw header is -1")):
            with self.assertRaises((plume.InvalidArgument, plume.InvalidType)) as caught:
                plume.open_frames(path, raw=raw if isinstance(raw, plume.RawFormat)
                                  else plume.RawFormat(raw))
            self.assertIn(needle, str(caught.exception))
        with self.assertRaises(plume.InvalidType):
            plume.open_frames(path, raw=[6, 7])


class Behaviour(unittest.TestCase):
    def test_failures_carry_the_c_message(self):
        with self.assertRaises(plume.FileError) as caught:
            plume.open_frames("/nonexistent/scan.tif")
        self.assertIsInstance(caught.exception, OSError)
        self.assertEqual(str(caught.exception),
                         "/nonexistent/scan.tif: cannot open: No such file or directory")
        with self.assertRaises(plume.FileError) as caught:
            plume.read(fixture("hdf5/u16-cube.h5:/nothing"))
        self.assertIn("/nothing", str(caught.exception))
        with self.assertRaises(plume.Unsupported) as caught:
            plume.read(fixture("tiff/rgb.tif"))
        self.assertIn("rgb.tif: page 0", str(caught.exception))
        self.assertNotIn("plm_frames", str(caught.exception))
        with self.assertRaises(plume.InvalidArgument):
            plume.open_frames("a\0b")
        with self.assertRaises(IndexError):
            plume.open_frames(fixture("tiff/u8-strips.tif"))[1]

    def test_closed_frames_refuse_to_read(self):
        frames = plume.open_frames(fixture("tiff/u16-stack-strips-deflate.tif"))
        frames.close()
        frames.close()
        with self.assertRaises(plume.InvalidState):
            frames[0]
        self.assertIn("closed", repr(frames))

    def test_a_folder_of_mixed_shapes(self):
        with tempfile.TemporaryDirectory() as folder:
            np.save(os.path.join(folder, "a.npy"), np.arange(12, dtype=np.uint8).reshape(3, 4))
            np.save(os.path.join(folder, "b.npy"), np.arange(10, dtype=np.uint8).reshape(5, 2))
            with plume.open_frames(folder, mixed_shapes=True) as frames:
                self.assertTrue(frames.folder)
                self.assertEqual([f.shape for f in frames], [(3, 4), (5, 2)])
                self.assertEqual(frames.frame_shape(1), (5, 2))
                self.assertEqual(os.path.basename(frames.file(-1)), "b.npy")
            with self.assertRaises(plume.FileError) as caught:
                plume.read(folder)
            self.assertIn("b.npy", str(caught.exception))

    def test_a_pipeline_runs_over_open_frames(self):
        path = fixture("tiff/u16-stack-strips-deflate.tif")
        stack = np.load(fixture("tiff/u16-stack-strips-deflate.npy"))
        with plume.open_frames(path) as frames:
            with plume.Pipeline("threshold value=30000", frames.dtype, frames.shape) as pl:
                from_file = list(pl.run_stream(frames))
                from_stack = list(pl.run_stream(stack))
        self.assertEqual(len(from_file), 3)
        for a, b, frame in zip(from_file, from_stack, stack):
            assert_same(self, a, b, "run_stream")
            assert_same(self, a, (frame > 30000).astype(np.uint8), "threshold")
        radiance = plume.read(fixture("hdf5/f32-chunked-gzip.h5:/group/radiance"))
        mask = plume.ops.threshold(radiance[0], value=300.0)
        self.assertEqual(mask.shape, (16, 20))

    def test_the_process_s_ffmpeg_and_libtiff_settings_are_left_alone(self):
        # In a fresh python3: the log level set before plume reads a video and a TIFF is
        # the level after, libtiff's error handler too; damage FFmpeg conceals (a slice's
        # CRC) is still named, through plume's callback.
        script = """
import ctypes, ctypes.util, plume
avutil = ctypes.CDLL(ctypes.util.find_library("avutil"))
tiff = ctypes.CDLL(ctypes.util.find_library("tiff"))
tiff.TIFFSetErrorHandler.restype = ctypes.c_void_p
tiff.TIFFSetErrorHandler.argtypes = [ctypes.c_void_p]
avutil.av_log_set_level(24)  # AV_LOG_WARNING
handler = tiff.TIFFSetErrorHandler(None)
tiff.TIFFSetErrorHandler(handler)
assert handler, "libtiff has a default error handler"
plume.read(%r)
plume.read(%r)
try:
    plume.read(%r)
    raise SystemExit("the damaged video was read")
except plume.FileError as failure:
    print(failure)
assert avutil.av_log_get_level() == 24, avutil.av_log_get_level()
assert tiff.TIFFSetErrorHandler(handler) == handler, "libtiff's handler was changed"
""" % (fixture("video/gray16-ffv1.mkv"), fixture("tiff/u8-strips.tif"),
       fixture("video/damaged-packet.avi"))
        done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertIn("damaged-packet.avi: frame 2", done.stdout)

    @unittest.skipIf(os.environ.get("PLUME_IO_LIBRARY"), "PLUME_IO_LIBRARY names it")
    def test_the_library_is_found_beside_libplume(self):
        io = plume._frames.library()
        here = os.path.dirname(os.path.realpath(plume._native.loaded_from()))
        self.assertEqual(os.path.dirname(os.path.realpath(io._name)), here)

    def test_the_library_is_found_where_plume_io_library_says(self):
        env = dict(os.environ, PLUME_IO_LIBRARY="/nonexistent/libplume_io.so")
        done = subprocess.run([sys.executable, "-c", "import plume; plume.read('x.tif')"],
                              env=env, capture_output=True, text=True)
        self.assertNotEqual(done.returncode, 0)
        self.assertIn("libplume_io (frames from files) not found", done.stderr)
        self.assertIn("/nonexistent/libplume_io.so", done.stderr)


if __name__ == "__main__":
    unittest.main()
