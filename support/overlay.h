/* support/overlay.h: detections drawn on their frames, as PNG pictures a person looks at
 * (`plume detect --overlay DIR`; internal to the tools).
 *
 * A frame (u8, u16 or f32) becomes 8-bit gray, stretched between its 0.5th and 99.5th
 * percentiles (a few hot or dead pixels of an infrared sensor do not wash the rest out;
 * NaN is black), then in colour:
 *   - each detection's bounding box, one pixel outside the region, in red;
 *   - its centroid (the intensity-weighted one where the CSV has it, as plume score takes
 *     it) as a 5-pixel cross in yellow;
 *   - each truth plume, when a truth CSV is given, as a circle of the radius plume score
 *     matches within (max(3, 2 sigma)) in green, so a missed plume is a green circle with
 *     no red box, a false alarm a red box with no circle.
 * Everything drawn is clipped to the frame; each frame is drawn at its own size (a
 * folder's frames may differ after frame_reader_allow_shapes). overlay_write_frames writes frame k
 * as DIR/frame_NNNNNN.png (k zero-padded to 6 digits), 8-bit RGB through libpng, each file written
 * atomically (support/output_file.h) as soon as it is drawn.
 *
 * Reentrant; no global state.
 */
#ifndef PLUME_SUPPORT_OVERLAY_H
#define PLUME_SUPPORT_OVERLAY_H

#include <stddef.h>
#include <stdint.h>

#include "support/frame_reader.h"
#include "support/image_io.h"
#include "plume/status.h"

/* Room for any message of this module. */
enum { OVERLAY_ERROR_SIZE = FRAME_READER_ERROR_SIZE + 512 };

typedef struct overlay_colour {
  uint8_t r, g, b;
} overlay_colour;

#define OVERLAY_DETECTION ((overlay_colour){255, 48, 48})
#define OVERLAY_CENTROID ((overlay_colour){255, 230, 0})
#define OVERLAY_TRUTH ((overlay_colour){0, 220, 60})

/* An RGB picture, 3 bytes a pixel, rows of width pixels, top row first. */
typedef struct overlay_picture {
  int64_t height, width;
  uint8_t *rgb;
} overlay_picture;

/* Gray of frame (2-D, u8/u16/f32) into pic (its height and width, rgb of 3 x H x W bytes),
 * stretched as above. Errors: PLM_ERR_INVALID_ARG (another dtype or shape),
 * PLM_ERR_OUT_OF_MEMORY. */
plm_status overlay_render(const image *frame, overlay_picture *pic, char *err, size_t err_size);

/* The outline of rows top..bottom, columns left..right (inclusive; clipped). */
void overlay_draw_box(overlay_picture *pic, int64_t top, int64_t left, int64_t bottom,
                      int64_t right, overlay_colour colour);

/* A cross of arm pixels each way about (row, col), rounded to the nearest pixel. */
void overlay_draw_cross(overlay_picture *pic, double row, double col, int arm,
                        overlay_colour colour);

/* A circle of radius pixels about (row, col). */
void overlay_draw_circle(overlay_picture *pic, double row, double col, double radius,
                         overlay_colour colour);

/* Every frame of r (info as frame_reader_open gave it; not a stream, which plume detect
 * has read already; a video whose container does not count its frames is read to its end)
 * with the rows of
 * detections_csv (as plume detect writes it) and, unless NULL, the plumes of truth_csv (as
 * plume scene writes it) drawn on it, into folder dir (which must exist); *written is the
 * pictures written. Errors: those of the readers (PLM_ERR_IO, PLM_ERR_UNSUPPORTED,
 * "PATH: ..."), PLM_ERR_INVALID_ARG (a row whose frame is past the frames),
 * PLM_ERR_IO (a picture not written), PLM_ERR_OUT_OF_MEMORY. The pictures written before
 * a failure stay. */
plm_status overlay_write_frames(frame_reader *r, const frame_reader_info *info,
                                const char *detections_csv, const char *truth_csv,
                                const char *dir, int64_t *written, char *err, size_t err_size);

#endif /* PLUME_SUPPORT_OVERLAY_H */
