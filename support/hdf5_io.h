/* support/hdf5_io.h: HDF5 and NetCDF-4 datasets through libhdf5, frame by frame (internal to
 * the tools; used by support/image_io.c, which recognises an HDF5 file by its first bytes).
 *
 * The dataset read is the one named after the file ("in.h5:/radiance/band7": the name is
 * taken from the root group when it has no leading '/'), or, when none is named, the only
 * dataset of 2 or 3 dimensions and integer or floating-point elements in the file (a NetCDF-4
 * file's variables are such datasets; its dimension scales are 1-D and never chosen); a file
 * holding several is refused, naming them. A dataset (H, W) is one frame; (N, H, W) is N
 * frames. A frame is read only when it is asked for, as a hyperslab of the dataset into the
 * caller's buffer, a band of rows at a time, so a long dataset is never held in memory.
 * Chunked datasets and the filters this libhdf5 decodes (deflate, shuffle, fletcher32, and
 * whatever else it was built with) are read; each chunk that a frame touches is decompressed
 * once per frame (the chunk cache holds one frame's chunks, up to 64 MiB).
 *
 * Element types and values, when the values are physical (stored_values false, the default):
 *   - a dataset with none of the CF attributes scale_factor, add_offset, _FillValue and
 *     missing_value reads as FITS and .npy files do: unsigned 8-bit as u8, unsigned 16-bit
 *     as u16, signed 8- and 16-bit as f32 (exact), 32- and 64-bit floats as f32 (a 64-bit
 *     value beyond f32's range becomes +-inf, as a '<f8' .npy's does);
 *   - a dataset with any of them reads as f32: scale_factor x stored + add_offset (a missing
 *     one counts as 1 or 0), computed in double and rounded once to f32, as FITS's BSCALE
 *     and BZERO are; a stored value equal to _FillValue or to one of missing_value's (up to
 *     16) is NaN. Each attribute must be numeric; scale_factor and add_offset one value each.
 *     valid_min, valid_max, valid_range and _Unsigned are not applied.
 * With stored_values true (plume's --h5-values stored) the attributes are ignored and every
 * dataset reads as one without them. Integers of 32 or 64 bits, strings, compounds and
 * other classes are refused (PLM_ERR_UNSUPPORTED), as FITS's 32-bit images are, and so are
 * integers and floats of a layout other than HDF5's standard ones (H5T_STD_U8LE ...
 * H5T_IEEE_F64BE: bits unused, an offset, padding, another exponent), for libhdf5 1.10
 * converts those bit by bit, and fuzz_hdf5 found a damaged one on which that conversion
 * overran libhdf5's stack (tests/fuzz/corpus/hdf5/integer-layout-stack-smash); as are
 * datasets whose data lies in other files (external storage, virtual datasets) and datasets
 * needing a filter this libhdf5 lacks. A superblock (version 0 or 1) that gives a driver
 * information block is refused before libhdf5 reads it: only the family and multi drivers
 * write one, and libhdf5 1.10.8 allocated 2.8 GB for a damaged one's length (fuzz_hdf5).
 *
 * libhdf5 prints its error stack to stderr by default. Every call here runs with the
 * automatic printing turned off and the previous handler put back after it (H5Eget_auto2 /
 * H5Eset_auto2 on the default stack, which is per-thread in a thread-safe libhdf5, such as
 * Debian's, and process-wide otherwise): a host application's own handler is left as it
 * was. The stack's outermost entry (the API call's complaint) and innermost one (where the
 * fault was found) become the one-line message ("in.h5: dataset /frames: frame 2: can't
 * read data (...)"). File locking is off for these read-only opens
 * (a lock would fail on some network file systems and protect nothing here). The file is
 * the descriptor given, opened again through /proc/self/fd, so it is the file image_io
 * checked. An hdf5_frames is used by one thread at a time.
 *
 * Damaged files: libhdf5 checks what it reads (checksums, addresses past the end of the
 * file), and every failure is a message here. Debian 12's libhdf5 1.10.8 leaks a few hundred
 * bytes of its own on some of them (a group whose links fail their checksum) and then prints
 * "HDF5: infinite loop closing library" when the process exits: its bug, left to it
 * (tests/lsan-libhdf5.supp); and it reads up to 16 bytes past its buffer decoding a damaged
 * attribute message (fuzz_hdf5's tests/fuzz/asan-libhdf5.supp), which happens inside any
 * attribute call, before plume can look: a reader of untrusted files may prefer
 * --h5-values stored, which reads no attribute. Not guarded: fuzz_hdf5 found a 2.8 KB file
 * (tests/fuzz/known-crashes/hdf5-local-heap-segv, not among the replayed seeds) whose damaged
 * old-style group makes libhdf5 1.10.8 crash (a NULL read in H5F__accum_read under
 * H5HL_protect, walking the root group), and a 2.4 KB one whose local heap declares 3.8 GB,
 * which libhdf5 asks malloc for before its read fails (known-crashes/hdf5-local-heap-oom);
 * old-style groups are what most files use, so they cannot be refused (the fuzz stage lets a
 * SEGV on a read inside libhdf5 itself pass, and an allocation libhdf5 asks for past
 * libFuzzer's limit, and nothing else: tests/fuzz/fuzz-tolerating-library-crashes.sh).
 * Groups are walked with H5Literate, hard links only, 32 deep and 100000 links at most, never
 * following a link into another file.
 *
 * Writing: hdf5_encode makes an HDF5 file of one dataset of an array of any dtype, in memory
 * (libhdf5's core driver: nothing touches the disk until the caller writes the bytes), below.
 */
#ifndef PLUME_SUPPORT_HDF5_IO_H
#define PLUME_SUPPORT_HDF5_IO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "plume/status.h"
#include "plume/tensor.h"

/* Whether the first bytes (at least 8) are an HDF5 superblock's signature at offset 0 (an
 * HDF5 file, a NetCDF-4 file). A user block before the superblock is not looked for. */
bool hdf5_magic(const unsigned char *bytes, size_t length);

/* Whether the first bytes (at least 4) begin a NetCDF classic or 64-bit offset file ("CDF"
 * and version 1, 2 or 5): not HDF5, refused with a hint (nccopy -k nc4 converts it). */
bool netcdf_classic_magic(const unsigned char *bytes, size_t length);

typedef struct hdf5_frames hdf5_frames;

/* Open dataset (NULL: the only candidate, above) of the HDF5 file on descriptor fd (taken:
 * held while the frames are open, to refuse reading a file cut short since;
 * closed by hdf5_frames_close, or here on failure), named path in messages. *dtype, *height and
 * *width are a frame's, *ndim the dataset's (2 or 3) and *count its frames (1 for 2 dimensions).
 * Errors: PLM_ERR_IO (a file libhdf5 cannot open, a damaged or truncated file, no such dataset, a
 * name that is a group, no candidate or several, a dimension of 0, more than
 * IMAGE_MAX_ELEMENTS samples in a frame, an attribute that is not a number),
 * PLM_ERR_UNSUPPORTED (the rank, element type, storage or filter, above),
 * PLM_ERR_OUT_OF_MEMORY; *out is NULL on failure. */
plm_status hdf5_frames_open(int fd, const char *path, const char *dataset, bool stored_values,
                            plm_dtype *dtype, int *ndim, int64_t *height, int64_t *width,
                            int64_t *count, hdf5_frames **out, char *err, size_t err_size);

/* Read frame k (0..count-1) into dst (height * width samples of dtype). Errors:
 * PLM_ERR_INVALID_ARG (k out of range), PLM_ERR_IO (data libhdf5 cannot read or decode:
 * "in.h5: dataset /frames: frame 2: ..."), PLM_ERR_OUT_OF_MEMORY. */
plm_status hdf5_frames_read(hdf5_frames *f, int64_t k, void *dst, char *err, size_t err_size);

/* Close; NULL is a no-op. */
void hdf5_frames_close(hdf5_frames *f);

/* The dataset hdf5_encode writes when none is named. */
#define HDF5_DEFAULT_DATASET "/data"

/* Encode an array of 1 to 4 dimensions as an HDF5 file of one dataset, in memory (*bytes
 * malloc'd, *length bytes; the caller frees it and writes them where it likes: an
 * image_writer, atomically, or stdout), as h5py writes a numpy array: the dimensions as
 * given, C order, contiguous, no compression, no attributes. The dataset is named dataset
 * from the root group as the reader names them ("radiance/band7" is "/radiance/band7"; runs
 * of '/' count as one), its groups made; NULL is HDF5_DEFAULT_DATASET. Elements by dtype,
 * little-endian: u8 H5T_STD_U8LE, u16 H5T_STD_U16LE, i32 H5T_STD_I32LE, f32 H5T_IEEE_F32LE,
 * f64 H5T_IEEE_F64LE, the values stored exactly. libhdf5's earliest format (superblock
 * version 0, old-style groups), which every libhdf5 since 1.8 and h5py read; netCDF4-python
 * reads it too, as a variable of dimensions phony_dim_0, ... (no dimension scales are
 * written: it is not a NetCDF-4 file by that format's conventions, so plume names it .h5 or
 * .hdf5, never .nc). No object records a time (H5Pset_obj_track_times off), so the same array
 * always gives the same bytes. libhdf5 prints nothing (as for reading, above). path only names the
 * file in messages. Errors: PLM_ERR_INVALID_ARG (ndim outside 1..4, a dimension < 1, a dataset
 * named
 * "/"), PLM_ERR_OUT_OF_MEMORY, PLM_ERR_IO (libhdf5's account: "out.h5: dataset /a/b: ..."). */
plm_status hdf5_encode(plm_dtype dtype, int ndim, const int64_t *dims, const void *data,
                       const char *dataset, void **bytes, size_t *length, const char *path,
                       char *err, size_t err_size);

#endif /* PLUME_SUPPORT_HDF5_IO_H */
