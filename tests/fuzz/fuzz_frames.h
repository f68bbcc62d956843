/* tests/fuzz/fuzz_frames.h: the checks of a harness whose input is an image file of frames
 * decoded by a library (fuzz_tiff: libtiff's pages, fuzz_fits: cfitsio's images and cubes),
 * read through support/image_io.h as plume detect and plume op read it.
 *
 * fuzz_frames_read(path, whole, round_trip): the file is opened with image_frames_open (a
 * failure checked as below); then, when whole, image_read reads every frame into one array
 * and, when that succeeds and round_trip is not NULL, round_trip(image) checks what plume
 * writes of it; else frames are read one by one (the first 8 and the last) into a buffer of
 * one frame's bytes and 256 guard bytes after them, which must stay as they were (the
 * libraries are not instrumented: ASan sees none of their stores). A file whose frames
 * declare more than 2^20 samples in all (a few KB can claim 10^8 samples with no data) is
 * opened only: reading it costs seconds of zeroed memory and no new path, and would slow the
 * fuzzer to a few inputs a second.
 * Checks (abort() on a breach): a failure is a status with a message and nothing allocated;
 * a success is u8, u16 or f32 of 2 or 3 dimensions, each >= 1, read to its last byte.
 */
#ifndef PLUME_TESTS_FUZZ_FRAMES_H
#define PLUME_TESTS_FUZZ_FRAMES_H

#include <stdbool.h>

#include "support/image_io.h"

void fuzz_frames_read(const char *path, bool whole, void (*round_trip)(const image *img));

#endif /* PLUME_TESTS_FUZZ_FRAMES_H */
