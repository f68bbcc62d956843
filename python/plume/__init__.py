"""plume from Python: contexts and streams, pipelines from text and presets, every op of
the table, on numpy arrays and on other libraries' arrays; docs/python.md is the guide.

    import numpy as np, plume
    frames = np.load("frames.npy")                          # (N, H, W) u16
    with plume.Pipeline(preset="default", dtype="u16", shape=frames.shape[1:]) as pl:
        for regions, count in pl.run_stream(frames):        # in frame order
            print(regions[["centroid_row", "centroid_col"]])  # a structured array
    mask = plume.ops.threshold(frames[0], value=3500)       # any op of the table
    mask = plume.op("threshold", frames[0], value=3500)     # the same, by name
    with plume.open_frames("scan.tif") as tif:              # TIFF, FITS, HDF5, video, raw...
        with plume.Pipeline(preset="default", dtype=tif.dtype, shape=tif.shape) as pl:
            results = list(pl.run_stream(tif))              # read frame by frame

ctypes over libplume (plume._native says where it is looked for: `pip install` puts it in
the package): no compiler, any CPython >= 3.9 with numpy. Everything plume does happens in
the C library; this module moves arrays in and out. The parts:
  plume._context   Context (backend, device, pool statistics), Stream (made or wrapped);
  plume._interop   the inputs: numpy arrays, __dlpack__ (CPU, CUDA, CUDA host) and
                   __cuda_array_interface__ v3 objects, with the protocols' stream rules,
                   and the rule that converts other dtypes (RULE);
  plume._tensor    plume.Tensor, a result with numpy() and __dlpack__ / __dlpack_device__;
  plume._pipeline  Pipeline (run, run_stream, describe, reset_state), presets() and the
                   regions table's fields (REGION);
  plume._ops       plume.op(name, ...), its cache of compiled one-op pipelines, and
                   plume.ops, one function per op of the table;
  plume._frames    open_frames(path) and read(path): frames from TIFF, FITS, HDF5/NetCDF-4,
                   video, raw, .npy, PGM and PNG files through libplume_io.
A call that fails raises plume.Error (its .status the library's), as one of its subclasses
that are also ValueError, TypeError, MemoryError or RuntimeError (plume._common).

Thread safety: a Context and what it made may be used from one thread at a time; a
pipeline refuses a second run from any thread with what holds it, and close() from another
thread during run_stream is defined (plume._pipeline). Ctrl-C comes out of run_stream at
once, even over a source that blocks. Objects may be closed in any order: what is used
after its context was closed raises plume.InvalidState.
"""

from ._common import (Error, FileError, InvalidArgument, InvalidState, InvalidType, OutOfMemory,
                      Unsupported)
from ._context import Context, Stream, default_context
from ._frames import Frames, RawFormat, open_frames, read
from ._native import lib
from ._ops import op, ops
from ._pipeline import REGION, Pipeline, presets
from ._tensor import Tensor

__all__ = ["__version__", "Error", "InvalidArgument", "InvalidType", "OutOfMemory",
           "Unsupported", "InvalidState", "FileError", "Context", "Stream", "Tensor",
           "Pipeline", "REGION", "op", "ops", "presets", "version", "default_context",
           "open_frames", "read", "Frames", "RawFormat"]


def version() -> str:
    """The library's version ("0.1.0"), plm_version_string."""
    return lib.plm_version_string().decode()


__version__ = version()  # the package's is the library's (python/setup.py reads version.h)
