#!/usr/bin/python3
"""tests/fuzz/make_seeds.py: writes the seed corpora of the fuzz harnesses into
tests/fuzz/corpus/<harness>/ (committed; run again after changing a seed here).

Each seed is the harness's input: its first byte(s) pick what the harness does (the
harness's header comment says how), the rest is the file or text. numpy writes the .npy
files; PNG and PGM are written by hand (zlib, struct), so nothing else is needed.
"""
import io
import os
import struct
import zlib

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
PLUME_DEFAULT_PIPELINE = (  # PLM_PRESET_DEFAULT_PIPELINE, include/plume/presets.h
    "conv2d kernel=log:9:1.5 pad=same border=replicate ! threshold value=25 ! "
    "label connectivity=8 ! regions capacity=1024")


def write(harness, name, data):
    folder = os.path.join(HERE, "corpus", harness)
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, name), "wb") as f:
        f.write(data)


def npy(array):
    buf = io.BytesIO()
    np.save(buf, array)
    return buf.getvalue()


def pgm(array, maxval):
    h, w = array.shape
    dtype = ">u2" if maxval > 255 else "u1"
    return b"P5\n%d %d\n%d\n" % (w, h, maxval) + array.astype(dtype).tobytes()


def png(array, bits):
    h, w = array.shape

    def chunk(kind, body):
        return struct.pack(">I", len(body)) + kind + body + struct.pack(
            ">I", zlib.crc32(kind + body) & 0xFFFFFFFF)

    dtype = ">u2" if bits == 16 else "u1"
    rows = b"".join(b"\0" + row.astype(dtype).tobytes() for row in array)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, bits, 0, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b""))


def image_seeds():
    # fuzz_image.c: 0 image_read, 1 keep_f64, 2 array, 3 frames, 4 a folder.
    ramp = np.arange(16).reshape(4, 4)
    write("image", "npy_u8", b"\0" + npy(ramp.astype(np.uint8)))
    write("image", "npy_u16", b"\0" + npy((ramp * 1000).astype(np.uint16).reshape(2, 8)))
    write("image", "npy_f32_stack", b"\3" + npy(np.linspace(0, 1, 18, dtype=np.float32).reshape(2, 3, 3)))
    write("image", "npy_f64", b"\1" + npy(np.array([[0.1, -2.5], [1e300, 3.0]])))
    write("image", "npy_i32_1d", b"\2" + npy(np.array([1, -2, 3, 4, 5], dtype=np.int32)))
    write("image", "pgm_u8", b"\0" + pgm(ramp, 255))
    write("image", "pgm_u16", b"\3" + pgm(ramp * 60, 1000))
    write("image", "png_u8", b"\0" + png(ramp * 16, 8))
    write("image", "png_u16", b"\0" + png(ramp * 4000, 16))
    write("image", "folder", b"\4" + npy(ramp.astype(np.uint8)) + b"PLUMEPART" + pgm(ramp, 255)
          + b"PLUMEPART" + png(ramp, 8))


def pipeline_seeds():
    # fuzz_pipeline.c: byte % 3 the dtype (u8, u16, f32), byte / 3 % 4 the plan flags.
    def seed(name, dtype, flags, text):
        write("pipeline", name, bytes([dtype + 3 * flags]) + text.encode())

    # As plume demo runs it: its 1024 rows are more than a 16 x 16 frame can have (refused),
    # so also with 64.
    seed("default_u16", 1, 0, PLUME_DEFAULT_PIPELINE)
    seed("default_64_rows_u16", 1, 0, PLUME_DEFAULT_PIPELINE.replace("1024", "64"))
    seed("sobel_entropy_u8", 0, 0, "sobel ! entropy window=5 bins=16 range=auto ! threshold value=2 ! label ! regions")
    seed("fused_f32", 2, 0, "sobel border=replicate ! entropy window=3 bins=8 range=0,64 ! threshold value=1")
    seed("inline_kernel_u8", 0, 1,
         "conv2d kernel=1,0,-1,2,0,-2,1,0,-1 size=3x3 stride=2,1 ! threshold value=0 cmp=lt ! "
         "label connectivity=4 ! regions intensity=none")
    seed("segment_u8", 0, 1, "conv2d kernel=@k3 pad=same border=reflect101 ! segment value=1 cmp=ge connectivity=4")
    seed("lstm_f32", 2, 2, "matmul b=@m16 bias=@v16 act=tanh precision=fp32 ! "
         "lstm_cell h=@h4 c=@h4 w_ih=@m16 w_hh=@h4 b_ih=@v16 b_hh=@v16")
    seed("vector_dot_f32", 2, 3, "vector_add b=@m16 alpha=0.5 beta=2 ! dot b=@m16")
    seed("dendritic_f32", 2, 0, "dendritic w=@w3 mode=active_bp k=2 theta=0.5 beta=1")
    seed("forecast_f32", 2, 2, "ar_forecast lags=2 horizon=3")
    # Feedback: the previous frame's CFAR mask holds the background (read before it is named).
    seed("feedback_u16", 1, 2, "background alpha=0.2 gate=2 hold=~det hold_radius=1 ! "
         "cfar window=9 guard=3 k=3 name=det ! label ! regions capacity=16")


def score_seeds():
    # fuzz_score.c: 0 truth, 1 detections, 2 any table.
    write("score", "truth", b"\0frame,row,col,sigma,amplitude\n0,5.5,6.25,1.5,100\n0,40,12,3,80\n1,10,3,2,50\n")
    write("score", "detections",
          b"\1frame,label,area,min_row,min_col,max_row,max_col,centroid_row,centroid_col,"
          b"sum,max,wcentroid_row,wcentroid_col\n"
          b"0,1,9,4,5,6,7,5,6,900,120,5.4,6.3\n0,2,1,30,30,30,30,30,30,0,0,nan,nan\n"
          b"1,1,4,9,2,10,3,9.5,2.5,200,60,9.6,2.6\n")
    write("score", "detections_plain", b"\1frame,centroid_row,centroid_col\r\n2,1e-400,-0\r\n3, 7 ,8")
    write("score", "table", b"\2a,b_2,C3\n1,-3.5e2,inf\n0x10,nan,+4\n")


def number_seeds():
    # fuzz_numbers.c: byte 0 picks an op parameter, byte 1 the kernel size, then the text.
    for pick, kernel, text in [(0, 2, b"2,1"), (1, 4, b"same"), (2, 0, b"reflect101"),
                               (6, 0, b"0,255"), (7, 0, b"4.5"), (8, 0, b"ge"), (12, 0, b"1024"),
                               (20, 0, b"1e-400"), (5, 0, b"auto"), (3, 0, b"512,512"),
                               (9, 0, b"18446744073709551615")]:
        write("numbers", "seed_%d_%s" % (pick, text.decode().replace(",", "_")[:16]),
              bytes([pick, kernel]) + text)


def dlpack_seeds():
    # fuzz_dlpack.c: ndim, dtype code, bits, lanes, flags, byte_offset, shapes, strides.
    def seed(ndim, code, bits, flags, offset, shape, strides=()):
        data = bytes([ndim, code, bits, 1, flags]) + struct.pack("<Q", offset)
        data += b"".join(struct.pack("<q", v) for v in shape)
        return data + b"".join(struct.pack("<q", v) for v in strides)
    write("dlpack", "u8_2d", seed(2, 1, 8, 0, 0, (16, 16)))
    write("dlpack", "f32_strided", seed(2, 2, 32, 1, 16, (8, 8), (8, 1)))
    write("dlpack", "f32_misaligned", seed(1, 2, 32, 0, 2, (4,)))
    write("dlpack", "f32_odd_data", seed(1, 2, 32, 8, 0, (4,)))
    write("dlpack", "u8_2_pow_62", seed(2, 1, 8, 0, 0, (1 << 62, 2)))
    write("dlpack", "offset_2_pow_63", seed(1, 1, 8, 2, 1 << 63, (4,)))
    write("dlpack", "f64_legacy_host", seed(3, 2, 64, 6, 8, (2, 4, 8)))


def tuning_table_seeds():
    # fuzz_tuning_table.c: byte 0 the kind (0 a file, 1 a FIFO, 2 a folder), then the file.
    table = (b'{"schema": "plume-tuning", "version": 1, "key": "@KEY@", "backend": "host", '
             b'"entries": [{"op": "entropy", "tunable": "bands_per_thread", '
             b'"size_class": "small", "value": 1, "default": 4, "best": 1, '
             b'"default_ms": 1.0, "best_ms": 0.5, "cv": 0.01, "kept": true, "model_ms": 0}, '
             b'{"op": "threshold", "tunable": "", "size_class": "small", "value": 0, '
             b'"default_ms": 0.1, "best_ms": 0.1, "model_ms": 0.05}, '
             b'{"op": "entropy", "tunable": "bands_per_thread", "size_class": "large", '
             b'"value": 3}, {"op": "nope", "tunable": "x", "size_class": "medium", "value": 1}]}')
    write("tuning_table", "table", bytes([0]) + table)
    write("tuning_table", "other_key", bytes([0]) + table.replace(b"@KEY@", b"host|x"))
    write("tuning_table", "cut", bytes([0]) + table[:90])
    write("tuning_table", "fifo", bytes([1]))
    write("tuning_table", "folder", bytes([2]))


def raw_seeds():
    # fuzz_raw.c: byte 0 what (0 file, 1 stdin, 2 the option texts); for 0 and 1, byte 1
    # the dtype (value % 3: u8, u16, f32; bit 2 big-endian), bytes 2 and 3 height and width
    # (1 + value % 16), byte 4 the header (value % 32), then the input.
    ramp = np.arange(12).reshape(3, 4)
    frames = np.stack([ramp, ramp + 7]).astype(">u2").tobytes()
    write("raw", "file_u16_be", bytes([0, 1 | 4, 2, 3, 5]) + b"HEAD!" + frames)
    write("raw", "stdin_f32", bytes([1, 2, 2, 3, 0]) + np.linspace(-1, 1, 24, dtype="<f4").tobytes())
    write("raw", "stdin_short", bytes([1, 0, 3, 3, 0]) + bytes(range(20)))
    write("raw", "options", b"\2" + b"512x640\0u16\0big\0128")
    write("raw", "options_bad", b"\2" + b"65536,65537\0i16")


def tiff_seeds():
    # fuzz_tiff.c: byte 0 the reader (0 whole, 1 page by page), then the file: the small
    # fixtures tifffile wrote (tests/fixtures/tiff/make.py), so that nothing else is needed.
    fixtures = os.path.join(HERE, "..", "fixtures", "tiff")
    for name in ("u8-strips", "u16-stack-strips-deflate", "f32-tiled",
                 "u16-stack-tiled-big-endian", "mixed-shapes", "rgb"):
        with open(os.path.join(fixtures, name + ".tif"), "rb") as f:
            tiff = f.read()
        write("tiff", name + "-whole", b"\0" + tiff)
        write("tiff", name + "-pages", b"\1" + tiff)


def video_seeds():
    # fuzz_video.c: byte 0 the order frames are read in (0 in order, 1 out of order, 2 again
    # and past the end), then the file: the fixtures the ffmpeg program made for
    # tests/test_video_io.c (tests/fixtures/video/make.py), and one small file per decoder of
    # support/video_io.h's list that they do not use, made here by the ffmpeg program.
    fixtures = os.path.join(HERE, "..", "fixtures", "video")
    names = ("gray16-ffv1.mkv", "gray10-ffv1.mkv", "gray8-ffv1.avi", "gray8-raw.nut",
             "gray8-mpeg4.mp4", "rgb-raw.nut", "size-change.mkv", "damaged-packet.avi",
             "audio-only.mkv", "cinepak.avi", "rgb-narrow.nut")
    for i, name in enumerate(names):
        with open(os.path.join(fixtures, name), "rb") as f:
            write("video", name, bytes([i % 3]) + f.read())
    import subprocess
    import tempfile
    codecs = (("huffyuv", "yuv422p", "avi"), ("ffvhuff", "gray", "mkv"),
              ("utvideo", "gbrp", "mkv"), ("magicyuv", "gray", "mkv"),
              ("mjpeg", "yuvj420p", "avi"), ("libx264", "yuv420p", "mp4"),
              ("png", "gray16be", "mov"), ("libx265", "yuv420p", "mkv"),
              ("libvpx", "yuv420p", "mkv"), ("libvpx-vp9", "yuv420p", "mkv"))
    y, x = np.mgrid[0:16, 0:16]
    frames = np.stack([(x * 16 + y * 3 + 40 * k) % 256 for k in range(2)]).astype(np.uint8)
    with tempfile.TemporaryDirectory() as tmp:
        for i, (codec, pix_fmt, container) in enumerate(codecs):
            out = os.path.join(tmp, "seed." + container)
            subprocess.run(["ffmpeg", "-v", "error", "-y", "-f", "rawvideo", "-pix_fmt", "gray",
                            "-s", "16x16", "-r", "10", "-i", "-", "-c:v", codec, "-pix_fmt",
                            pix_fmt, "-bitexact", "-fflags", "+bitexact", "-flags",
                            "+bitexact", out], input=frames.tobytes(), check=True)
            with open(out, "rb") as f:
                write("video", codec + "." + container, bytes([i % 3]) + f.read())


if __name__ == "__main__":
    image_seeds()
    pipeline_seeds()
    score_seeds()
    number_seeds()
    dlpack_seeds()
    tuning_table_seeds()
    raw_seeds()
    tiff_seeds()
    video_seeds()
