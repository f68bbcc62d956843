"""plume._frames: frames from files, through libplume_io (include/plume/io.h).

    with plume.open_frames("scan.h5:/radiance") as frames:     # HDF5, TIFF, FITS, video, ...
        print(frames.dtype, frames.shape, len(frames))         # float32 (16, 20) 5
        for frame in frames:                                   # numpy arrays, one at a time
            ...
        last = frames[-1]                                      # where the count is known
    stack = plume.read("stack.tif")                            # a small file as one array
    raw = plume.open_frames("-", raw=plume.RawFormat((512, 640), "u16"))  # a sensor's pipe

Frames are read from the file one at a time, never the whole file at once (plume.read
excepted, which stacks them). What is read: .npy, PGM, PNG, TIFF, FITS, HDF5/NetCDF-4
("file.h5:/path/to/dataset"), video (FFmpeg; "-" a video on standard input), folders of
such files, and raw frames of a format the caller gives (RawFormat), from a file, a FIFO or
"-". The frames are u8, u16 or f32 numpy arrays of shape (H, W).

libplume_io is a library beside libplume (it needs libtiff, cfitsio, libhdf5 and FFmpeg,
which libplume does not), loaded on the first call: the file PLUME_IO_LIBRARY names, else a
libplume_io.so* in the folder libplume was loaded from, else where plume._native looks for
libplume (the package's folder, PREFIX/lib, the system's search path). A failure raises
plume.Error with the library's message naming the file, the frame and what was wrong:
plume.FileError (also an OSError) for a file that cannot be read, InvalidArgument
(ValueError) for a bad argument.

Threads: a Frames is used by one thread at a time (a lock refuses nothing, it serialises);
a Pipeline's run_stream reads it on its feeder thread, which is that one thread.
"""

import ctypes
import glob
import os
import threading
from typing import Any, Iterator, Mapping, NamedTuple, Optional, Sequence, Tuple, Union

import numpy as np
from numpy.typing import DTypeLike

from . import _native
from ._common import (DTYPES, _C_FUNCTION, dtype_code, error, integer, invalid, numpy_dtype,
                      wrong_type)

STORED_VALUES = 1 << 0  # PLM_FRAMES_STORED_VALUES
MIXED_SHAPES = 1 << 1   # PLM_FRAMES_MIXED_SHAPES


class FramesInfo(ctypes.Structure):  # plm_frames_info (plume/io.h)
    _fields_ = [("dtype", ctypes.c_int), ("height", ctypes.c_int64), ("width", ctypes.c_int64),
                ("count", ctypes.c_int64), ("folder", ctypes.c_bool)]


class RawFormatStruct(ctypes.Structure):  # plm_raw_format
    _fields_ = [("dtype", ctypes.c_int), ("height", ctypes.c_int64), ("width", ctypes.c_int64),
                ("big_endian", ctypes.c_bool), ("header_bytes", ctypes.c_int64)]


P, PP = ctypes.c_void_p, ctypes.POINTER(ctypes.c_void_p)
I64P = ctypes.POINTER(ctypes.c_int64)
SIGNATURES = {
    "plm_frames_open": (ctypes.c_int, [ctypes.c_char_p, ctypes.c_uint, PP]),
    "plm_frames_open_raw": (ctypes.c_int, [ctypes.c_char_p, ctypes.POINTER(RawFormatStruct), PP]),
    "plm_frames_info_get": (ctypes.c_int, [P, ctypes.POINTER(FramesInfo)]),
    "plm_frames_shape": (ctypes.c_int, [P, ctypes.c_int64, I64P, I64P]),
    "plm_frames_read": (ctypes.c_int, [P, ctypes.c_int64, P, ctypes.c_size_t]),
    "plm_frames_next": (ctypes.c_int, [P, P, ctypes.c_size_t, ctypes.POINTER(ctypes.c_bool)]),
    "plm_frames_position": (ctypes.c_int64, [P]),
    "plm_frames_file": (ctypes.c_char_p, [P, ctypes.c_int64]),
    "plm_frames_close": (None, [P]),
    "plm_frames_last_error": (ctypes.c_char_p, []),
}


def _candidates():
    named = os.environ.get("PLUME_IO_LIBRARY")
    if named:
        return [os.path.abspath(named)]
    found = []
    loaded = _native.loaded_from()
    if loaded:
        found += sorted(glob.glob(os.path.join(os.path.dirname(loaded), "libplume_io.so*")))
    found += _native.candidates("plume_io")
    return found


_loaded = []
_loading = threading.Lock()


def library():
    """libplume_io, its functions declared; plume.Error naming where it looked when it is
    not there (the rest of the module works without it)."""
    with _loading:
        if _loaded:
            return _loaded[0]
        tried, reasons = _candidates(), []
        for path in tried:
            try:
                lib = ctypes.CDLL(path)
            except OSError as failure:
                reasons.append(str(failure))
                continue
            for name, (restype, argtypes) in SIGNATURES.items():
                fn = getattr(lib, name)
                fn.restype = restype
                fn.argtypes = argtypes
            _loaded.append(lib)
            return lib
        raise error("PLM_ERR_UNSUPPORTED", "plume: libplume_io (frames from files) not found "
                    "(%s); set PLUME_IO_LIBRARY to its path"
                    % ("; ".join(reasons) if reasons else "looked in PLUME_IO_LIBRARY, libplume's "
                       "folder, the package's folder, PREFIX/lib and the system's search path"))


def _check(status):
    """Raise libplume_io's failure (plm_frames_last_error, its C function names taken off)."""
    if status != 0:
        message = _C_FUNCTION.sub("", library().plm_frames_last_error().decode(errors="replace"))
        raise error(_native.lib.plm_status_str(status).decode(), message)


class RawFormat(NamedTuple):
    """Raw frames' format, which nothing in the input says: `shape` (H, W), `dtype` (u8,
    u16 or f32, as a name or a numpy dtype), the samples' `byteorder` ("little" or
    "big"), and `header` bytes skipped before frame 0."""
    shape: Sequence[int]
    dtype: DTypeLike = "u8"
    byteorder: str = "little"
    header: int = 0

    def struct(self):
        try:
            height, width = self.shape
        except (TypeError, ValueError):
            raise invalid("raw shape %r is not (height, width)" % (self.shape,)) from None
        code = dtype_code(self.dtype)
        if code not in (DTYPES["u8"][0], DTYPES["u16"][0], DTYPES["f32"][0]):
            raise invalid("raw dtype %r: u8, u16 or f32" % (self.dtype,))
        if self.byteorder not in ("little", "big"):
            raise invalid("raw byteorder %r: 'little' or 'big'" % (self.byteorder,))
        return RawFormatStruct(code, integer("raw height", height, 1, 2**63 - 1),
                               integer("raw width", width, 1, 2**63 - 1),
                               self.byteorder == "big",
                               integer("raw header", self.header, 0, 2**63 - 1))


def _path(path):
    path = os.fspath(path)
    if isinstance(path, bytes):
        path = os.fsdecode(path)
    if not isinstance(path, str):
        raise wrong_type("path %r is not a str or os.PathLike" % (path,))
    if "\0" in path:
        raise invalid("path %r has a NUL character: C would end it there" % (path,))
    return os.fsencode(path)


class Frames:
    """Frames of one file, folder or stream (plume.open_frames makes them): an iterable of
    (H, W) numpy arrays of `dtype`, with len() where the count is known (not a stream),
    frames[k] (negative k from the end) and frames[a:b] (a stack) where the frames may be
    read in any order, file(k) the file of frame k, and a context manager that closes."""

    def __init__(self, path: Union[str, "os.PathLike[str]"], *, stored_values: bool = False,
                 mixed_shapes: bool = False,
                 raw: Optional[Union[RawFormat, Mapping[str, Any]]] = None) -> None:
        lib = library()
        self.path = os.fsdecode(_path(path))
        handle = ctypes.c_void_p()
        if raw is not None:
            if stored_values or mixed_shapes:
                raise invalid("raw frames have no stored values and one shape")
            if isinstance(raw, Mapping):
                raw = RawFormat(**raw)
            if not isinstance(raw, RawFormat):
                raise wrong_type("raw is %r (%s), not a plume.RawFormat or a dict of its "
                                 "fields" % (raw, type(raw).__name__))
            fmt = raw.struct()
            _check(lib.plm_frames_open_raw(_path(path), ctypes.byref(fmt), ctypes.byref(handle)))
        else:
            flags = (STORED_VALUES if stored_values else 0) | (MIXED_SHAPES if mixed_shapes else 0)
            _check(lib.plm_frames_open(_path(path), flags, ctypes.byref(handle)))
        self._lib, self._handle = lib, handle
        self._lock = threading.Lock()
        info = self._info()
        self.dtype = numpy_dtype(info.dtype)
        self.shape: Tuple[int, int] = (info.height, info.width)  # a mixed folder's: frame 0's
        self.folder = bool(info.folder)
        self.mixed_shapes = bool(mixed_shapes) and self.folder

    def _info(self):
        info = FramesInfo()
        _check(self._lib.plm_frames_info_get(self.handle, ctypes.byref(info)))
        return info

    @property
    def handle(self):
        if self._handle is None:
            raise error("PLM_ERR_INVALID_STATE", "the frames of %s are closed" % self.path)
        return self._handle

    @property
    def count(self) -> Optional[int]:
        """The number of frames, or None for a stream until it has ended."""
        with self._lock:
            count = self._info().count
        return None if count < 0 else count

    @property
    def random_access(self) -> bool:
        """Whether frames may be read in any order (the count is known)."""
        return self.count is not None

    def __len__(self):
        count = self.count
        if count is None:
            raise TypeError("%s is a stream: its count is known once it has been read to its "
                            "end" % self.path)
        return count

    def frame_shape(self, k: int) -> Tuple[int, int]:
        """Frame k's (H, W): shape, or its own file's in a folder opened with
        mixed_shapes=True."""
        with self._lock:
            return self._shape(self._index(k))

    def _shape(self, k):
        height, width = ctypes.c_int64(), ctypes.c_int64()
        _check(self._lib.plm_frames_shape(self.handle, k, ctypes.byref(height),
                                          ctypes.byref(width)))
        return height.value, width.value

    def _index(self, k):
        k = integer("frame", k, -2**63, 2**63 - 1)
        count = self._info().count
        if k < 0 and count >= 0:
            k += count
        if k < 0 or (count >= 0 and k >= count):
            raise IndexError("frame %d is not in 0..%d of %s" % (k, count - 1, self.path)
                             if count >= 0 else "frame %d of the stream %s" % (k, self.path))
        return k

    def read(self, k: int) -> np.ndarray:
        """Frame k (negative: from the end) as a new (H, W) array. A stream's frames only in
        order: k is the next one."""
        with self._lock:
            k = self._index(k)
            out = np.empty(self._shape(k) if self.mixed_shapes else self.shape, self.dtype)
            _check(self._lib.plm_frames_read(self.handle, k, out.ctypes.data, out.nbytes))
            return out

    def next(self) -> Optional[np.ndarray]:
        """The frame after the last one read (frame 0 first), or None at the end."""
        with self._lock:
            k = self._lib.plm_frames_position(self.handle)
            count = self._info().count
            if 0 <= count <= k:
                return None
            out = np.empty(self._shape(k) if self.mixed_shapes else self.shape, self.dtype)
            end = ctypes.c_bool()
            _check(self._lib.plm_frames_next(self.handle, out.ctypes.data, out.nbytes,
                                             ctypes.byref(end)))
            return None if end.value else out

    def __getitem__(self, index: Union[int, slice]) -> np.ndarray:
        if isinstance(index, slice):
            return self._stack([self.read(k) for k in range(*index.indices(len(self)))])
        if self.count is None:
            raise TypeError("%s is a stream: its frames are read in order (iterate, or next())"
                            % self.path)
        return self.read(index)

    def __iter__(self) -> Iterator[np.ndarray]:
        """Every frame from frame 0, in order; a stream's from where it is (once)."""
        if self.count is None:
            while True:
                frame = self.next()
                if frame is None:
                    return
                yield frame
        else:
            for k in range(len(self)):
                yield self.read(k)

    def _stack(self, frames):
        shapes = {frame.shape for frame in frames}
        if len(shapes) > 1:
            raise invalid("the frames of %s differ in shape (%s): read them one at a time"
                          % (self.path, ", ".join("%dx%d" % s for s in sorted(shapes))))
        return np.stack(frames) if frames else np.empty((0,) + self.shape, self.dtype)

    def file(self, k: int) -> str:
        """The file that holds frame k (the path itself for a file; "stdin" for "-")."""
        with self._lock:
            name = self._lib.plm_frames_file(self.handle, self._index(k))
        return os.fsdecode(name)

    def close(self) -> None:
        """Close the file (standard input is left open); a second close does nothing."""
        with self._lock:
            if self._handle is not None:
                self._lib.plm_frames_close(self._handle)
                self._handle = None

    def __enter__(self) -> "Frames":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __del__(self):
        if getattr(self, "_handle", None) is not None:
            self._lib.plm_frames_close(self._handle)
            self._handle = None

    def __repr__(self):
        count = self.count if self._handle is not None else "closed"
        return "<plume.Frames %r: %s %dx%d, %s frames>" % (
            self.path, self.dtype, self.shape[0], self.shape[1],
            "unknown" if count is None else count)


def open_frames(path: Union[str, "os.PathLike[str]"], *, stored_values: bool = False,
                mixed_shapes: bool = False,
                raw: Optional[Union[RawFormat, Mapping[str, Any]]] = None) -> Frames:
    """The frames of `path`: a file (.npy, PGM, PNG, TIFF, FITS, HDF5/NetCDF-4 as
    "file.h5:/dataset", video), a folder of such files, or "-" (a video on standard input);
    with raw=RawFormat(shape, dtype, byteorder, header), raw frames from a file, a FIFO or
    "-". stored_values=True keeps an HDF5 dataset's stored values (no scale_factor,
    add_offset or fill values applied); mixed_shapes=True lets a folder's files differ in
    shape. Read one at a time as they are asked for; close() (or `with`) closes."""
    return Frames(path, stored_values=stored_values, mixed_shapes=mixed_shapes, raw=raw)


def read(path: Union[str, "os.PathLike[str]"], *, stored_values: bool = False,
         raw: Optional[Union[RawFormat, Mapping[str, Any]]] = None) -> np.ndarray:
    """Every frame of `path` (as open_frames reads it) as one array: (H, W) when it holds
    one frame, (N, H, W) otherwise. For files that fit in memory: open_frames streams."""
    with open_frames(path, stored_values=stored_values, raw=raw) as frames:
        stack = frames._stack(list(frames))
    return stack[0] if stack.shape[0] == 1 else stack
