/* tests/test_interop.c: tensors and streams across library borders (plume/dlpack.h,
 * plm_tensor_wrap_strided, plm_stream_wrap).
 *
 * DLPack: an export's every field as the specification lays it out, its deleter called
 * exactly once with the release callback after it (ASan sees any double free or leak), a
 * round trip back to the same memory, imports with byte offsets, NULL strides and a read-only
 * flag, every refusal with its message, an op run on an imported tensor, and the stream
 * rule (the consumer's stream waits on the device for the producer's work). Streams: a
 * wrapped stream shares the order of the one it wraps (on host its worker, whose
 * destruction it refuses; on cuda an adopted cudaStream_t, the legacy default stream too,
 * cudaStreamPerThread refused), and a context destroyed with wrappers left frees each once
 * (on cuda forgetting, never destroying, another's stream). Legacy DLPack (0.x, NumPy
 * 1.x's): the same export and import over the unversioned struct, its deleter once. The
 * stream rule with native streams is refused on host. The cuda paths (an adopted
 * cudaStream_t, kDLCUDA, native streams) run in the .cuda variant, on a GPU or the CUDA
 * emulator. */
#define _POSIX_C_SOURCE 200809L

#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gate.h"
#include "harness.h"

/* ---- plm_tensor_wrap_strided -------------------------------------------------------------- */

START_TEST(test_wrap_strided_takes_compact_row_major_only) {
  float data[24];
  const int64_t dims[3] = {2, 3, 4};
  plm_tensor t;
  const int64_t compact[3] = {12, 4, 1};
  PLM_CHECK_OK(plm_tensor_wrap_strided(plm_test_ctx, data, PLM_DTYPE_F32, 3, dims, compact, &t));
  ck_assert(t.data == data && t.strides[0] == 12 && t.strides[2] == 1);
  PLM_CHECK_OK(plm_tensor_wrap_strided(plm_test_ctx, data, PLM_DTYPE_F32, 3, dims, NULL, &t));
  /* A dimension of 1 is never stepped over: any stride. */
  const int64_t one[3] = {1, 3, 4}, one_strides[3] = {999, 4, 1};
  PLM_CHECK_OK(plm_tensor_wrap_strided(plm_test_ctx, data, PLM_DTYPE_F32, 3, one, one_strides, &t));
  ck_assert_int_eq(t.strides[0], 12);
  const int64_t transposed[3] = {12, 1, 3};
  PLM_CHECK_FAILS(
      plm_tensor_wrap_strided(plm_test_ctx, data, PLM_DTYPE_F32, 3, dims, transposed, &t),
      PLM_ERR_UNSUPPORTED, "strides [12, 1, 3] (in elements) are not compact row-major [12, 4, 1]");
  const int64_t padded[3] = {16, 4, 1};
  PLM_CHECK_FAILS(plm_tensor_wrap_strided(plm_test_ctx, data, PLM_DTYPE_F32, 3, dims, padded, &t),
                  PLM_ERR_UNSUPPORTED, "copy the tensor first");
  PLM_CHECK_FAILS(plm_tensor_wrap_strided(plm_test_ctx, NULL, PLM_DTYPE_F32, 3, dims, NULL, &t),
                  PLM_ERR_INVALID_ARG, "data is NULL");
  PLM_CHECK_FAILS(plm_tensor_wrap_strided(plm_test_ctx, data, (plm_dtype)9, 3, dims, NULL, &t),
                  PLM_ERR_INVALID_ARG, "dtype 9 is not a plm_dtype");
}
END_TEST

/* ---- export ----------------------------------------------------------------------------- */

static atomic_int released;

static void count_release(void *user) {
  ck_assert_ptr_eq(user, &released);
  atomic_fetch_add(&released, 1);
}

START_TEST(test_an_export_lays_out_the_specification_and_releases_once) {
  static const struct {
    plm_dtype dtype;
    uint8_t code, bits;
  } expected[] = {{PLM_DTYPE_U8, 1, 8},
                  {PLM_DTYPE_U16, 1, 16},
                  {PLM_DTYPE_I32, 0, 32},
                  {PLM_DTYPE_F32, 2, 32},
                  {PLM_DTYPE_F64, 2, 64}};
  double data[6 * 5];
  const int64_t dims[2] = {6, 5};
  for (size_t i = 0; i < sizeof expected / sizeof expected[0]; i++) {
    plm_tensor t;
    PLM_CHECK_OK(plm_tensor_wrap(plm_test_ctx, data, expected[i].dtype, 2, dims, &t));
    plm_dl_managed_tensor_versioned *m = NULL;
    atomic_store(&released, 0);
    PLM_CHECK_OK(plm_tensor_to_dlpack(&t, PLM_DLPACK_FLAG_READ_ONLY, count_release, &released, &m));
    ck_assert_uint_eq(m->version.major, 1);
    ck_assert_uint_eq(m->version.minor, 1);
    ck_assert(m->deleter != NULL);
    ck_assert(m->flags == PLM_DLPACK_FLAG_READ_ONLY);
    const plm_dl_tensor *dl = &m->dl_tensor;
    ck_assert_ptr_eq(dl->data, data);
    ck_assert_int_eq(dl->device.device_type, plm_test_backend == PLM_BACKEND_CUDA ? 2 : 1);
    ck_assert_int_eq(dl->ndim, 2);
    ck_assert_uint_eq(dl->dtype.code, expected[i].code);
    ck_assert_uint_eq(dl->dtype.bits, expected[i].bits);
    ck_assert_uint_eq(dl->dtype.lanes, 1);
    ck_assert(dl->shape[0] == 6 && dl->shape[1] == 5);
    ck_assert(dl->strides[0] == 5 && dl->strides[1] == 1);
    ck_assert(dl->byte_offset == 0);
    /* The round trip sees the same memory. */
    plm_tensor back;
    bool read_only = false;
    PLM_CHECK_OK(plm_tensor_from_dlpack(plm_test_ctx, m, &back, &read_only));
    ck_assert(read_only && back.data == data && back.dtype == expected[i].dtype);
    ck_assert(back.ndim == 2 && back.dims[0] == 6 && back.dims[1] == 5 && back.strides[0] == 5);
    ck_assert_int_eq(atomic_load(&released), 0);
    plm_dlpack_release(m);
    ck_assert_int_eq(atomic_load(&released), 1);
  }
  /* Without a callback the deleter frees plume's part alone. */
  plm_tensor t;
  PLM_CHECK_OK(plm_tensor_wrap(plm_test_ctx, data, PLM_DTYPE_F32, 2, dims, &t));
  plm_dl_managed_tensor_versioned *m = NULL;
  PLM_CHECK_OK(plm_tensor_to_dlpack(&t, 0, NULL, NULL, &m));
  plm_dlpack_release(m);
  plm_dlpack_release(NULL);
}
END_TEST

/* The context's pinned host memory (plm_host_alloc) is kDLCUDAHost on cuda, so that a CPU
 * consumer (NumPy) reads it in place and no consumer takes it for device memory; kDLCPU on
 * host. A view inside the block too, legacy as versioned. The pool's tensors stay the
 * device's. */
START_TEST(test_pinned_host_memory_exports_as_what_it_is) {
  const bool cuda = plm_test_backend == PLM_BACKEND_CUDA;
  void *pinned = NULL;
  PLM_CHECK_OK(plm_host_alloc(plm_test_ctx, 4096, &pinned));
  const int64_t dims[2] = {8, 16};
  for (int offset = 0; offset <= 1024; offset += 1024) {
    plm_tensor t;
    PLM_CHECK_OK(
        plm_tensor_wrap(plm_test_ctx, (char *)pinned + offset, PLM_DTYPE_F32, 2, dims, &t));
    plm_dl_managed_tensor_versioned *m = NULL;
    PLM_CHECK_OK(plm_tensor_to_dlpack(&t, 0, NULL, NULL, &m));
    ck_assert_int_eq(m->dl_tensor.device.device_type, cuda ? PLM_DL_CUDA_HOST : PLM_DL_CPU);
    ck_assert_int_eq(m->dl_tensor.device.device_id, 0);
    plm_tensor back;
    PLM_CHECK_OK(plm_tensor_from_dlpack(plm_test_ctx, m, &back, NULL)); /* and back */
    ck_assert_ptr_eq(back.data, t.data);
    plm_dlpack_release(m);
    plm_dl_managed_tensor *legacy = NULL;
    PLM_CHECK_OK(plm_tensor_to_dlpack_legacy(&t, NULL, NULL, &legacy));
    ck_assert_int_eq(legacy->dl_tensor.device.device_type, cuda ? PLM_DL_CUDA_HOST : PLM_DL_CPU);
    plm_dlpack_release_legacy(legacy);
  }
  plm_tensor dev;
  PLM_CHECK_OK(plm_tensor_alloc(plm_test_pool, plm_test_stream, PLM_DTYPE_F32, 2, dims, &dev));
  plm_dl_managed_tensor_versioned *m = NULL;
  PLM_CHECK_OK(plm_tensor_to_dlpack(&dev, 0, NULL, NULL, &m));
  ck_assert_int_eq(m->dl_tensor.device.device_type, cuda ? PLM_DL_CUDA : PLM_DL_CPU);
  plm_dlpack_release(m);
  PLM_CHECK_OK(plm_tensor_free(plm_test_pool, plm_test_stream, &dev));
  PLM_CHECK_OK(plm_host_free(plm_test_ctx, pinned));
}
END_TEST

START_TEST(test_an_export_refuses_what_dlpack_cannot_say) {
  float data[12];
  const int64_t dims[2] = {3, 4};
  plm_tensor t;
  PLM_CHECK_OK(plm_tensor_wrap(plm_test_ctx, data, PLM_DTYPE_F32, 2, dims, &t));
  plm_dl_managed_tensor_versioned *m = (plm_dl_managed_tensor_versioned *)1;
  atomic_store(&released, 0);
  PLM_CHECK_FAILS(plm_tensor_to_dlpack(&t, 1u << 5, count_release, &released, &m),
                  PLM_ERR_INVALID_ARG, "flags 0x20 has bits other than READ_ONLY and IS_COPIED");
  ck_assert_ptr_null(m);
  plm_tensor strided = t;
  strided.strides[0] = 8;
  PLM_CHECK_FAILS(plm_tensor_to_dlpack(&strided, 0, count_release, &released, &m),
                  PLM_ERR_UNSUPPORTED, "plm_tensor_to_dlpack: tensor: strides [8, 1]");
  plm_tensor empty = t;
  empty.data = NULL;
  PLM_CHECK_FAILS(plm_tensor_to_dlpack(&empty, 0, NULL, NULL, &m), PLM_ERR_INVALID_ARG,
                  "tensor->data is NULL");
  PLM_CHECK_FAILS(plm_tensor_to_dlpack(NULL, 0, NULL, NULL, &m), PLM_ERR_INVALID_ARG,
                  "tensor is NULL");
  PLM_CHECK_FAILS(plm_tensor_to_dlpack(&t, 0, NULL, NULL, NULL), PLM_ERR_INVALID_ARG,
                  "out is NULL");
  ck_assert_int_eq(atomic_load(&released), 0); /* never called on a failure */
}
END_TEST

/* ---- import ----------------------------------------------------------------------------- */

/* A managed tensor of another library: on the stack, with a deleter that counts. */
typedef struct foreign {
  plm_dl_managed_tensor_versioned managed;
  int64_t shape[8], strides[8];
  int deleted;
} foreign;

static void foreign_deleter(plm_dl_managed_tensor_versioned *self) {
  ((foreign *)self->manager_ctx)->deleted++;
}

static void make_foreign(foreign *f, void *data, uint8_t code, uint8_t bits, int ndim,
                         const int64_t *shape) {
  memset(f, 0, sizeof *f);
  for (int d = 0; d < ndim; d++) f->shape[d] = shape[d];
  int device = plm_test_backend == PLM_BACKEND_CUDA ? PLM_DL_CUDA : PLM_DL_CPU;
  f->managed = (plm_dl_managed_tensor_versioned){.version = {1, 0},
                                                 .manager_ctx = f,
                                                 .deleter = foreign_deleter,
                                                 .dl_tensor = {.data = data,
                                                               .device = {device, 0},
                                                               .ndim = ndim,
                                                               .dtype = {code, bits, 1},
                                                               .shape = f->shape,
                                                               .strides = NULL}};
}

START_TEST(test_an_import_describes_the_memory_and_refuses_what_ops_cannot_use) {
  const int64_t shape[2] = {4, 6};
  plm_tensor dev;
  PLM_CHECK_OK(plm_tensor_alloc(plm_test_pool, plm_test_stream, PLM_DTYPE_U16, 2, shape, &dev));
  foreign f;
  make_foreign(&f, dev.data, PLM_DL_UINT, 16, 2, shape);
  plm_tensor t;
  bool read_only = true;
  PLM_CHECK_OK(plm_tensor_from_dlpack(plm_test_ctx, &f.managed, &t, &read_only));
  ck_assert(!read_only && t.data == dev.data && t.dtype == PLM_DTYPE_U16 && t.dims[1] == 6);
  /* byte_offset moves the data; compact strides given explicitly are taken too. */
  f.managed.dl_tensor.byte_offset = 2 * 6 * sizeof(uint16_t);
  f.shape[0] = 2;
  f.strides[0] = 6;
  f.strides[1] = 1;
  f.managed.dl_tensor.strides = f.strides;
  PLM_CHECK_OK(plm_tensor_from_dlpack(plm_test_ctx, &f.managed, &t, NULL));
  ck_assert(t.data == (char *)dev.data + 24 && t.dims[0] == 2);
  /* Refusals, each naming the field. */
  f.strides[0] = 1;
  f.strides[1] = 2;
  PLM_CHECK_FAILS(plm_tensor_from_dlpack(plm_test_ctx, &f.managed, &t, NULL), PLM_ERR_UNSUPPORTED,
                  "managed->dl_tensor (shape [2, 6]): strides [1, 2] (in elements) are not "
                  "compact row-major [6, 1]");
  make_foreign(&f, dev.data, PLM_DL_FLOAT, 16, 2, shape);
  PLM_CHECK_FAILS(plm_tensor_from_dlpack(plm_test_ctx, &f.managed, &t, NULL), PLM_ERR_INVALID_ARG,
                  "dtype (code 2, 16 bits, 1 lanes) is not uint8");
  make_foreign(&f, dev.data, PLM_DL_UINT, 16, 2, shape);
  f.managed.dl_tensor.dtype.lanes = 2;
  PLM_CHECK_FAILS(plm_tensor_from_dlpack(plm_test_ctx, &f.managed, &t, NULL), PLM_ERR_INVALID_ARG,
                  "2 lanes");
  make_foreign(&f, dev.data, PLM_DL_UINT, 16, 2, shape);
  f.managed.version.major = 2;
  PLM_CHECK_FAILS(plm_tensor_from_dlpack(plm_test_ctx, &f.managed, &t, NULL), PLM_ERR_INVALID_ARG,
                  "managed->version is 2.0; plume reads DLPack 1.x");
  make_foreign(&f, dev.data, PLM_DL_UINT, 16, 5, (const int64_t[5]){1, 1, 1, 4, 6});
  PLM_CHECK_FAILS(plm_tensor_from_dlpack(plm_test_ctx, &f.managed, &t, NULL), PLM_ERR_INVALID_ARG,
                  "ndim 5 is not in 1..4");
  make_foreign(&f, dev.data, PLM_DL_UINT, 16, 2, (const int64_t[2]){4, 0});
  PLM_CHECK_FAILS(plm_tensor_from_dlpack(plm_test_ctx, &f.managed, &t, NULL), PLM_ERR_INVALID_ARG,
                  "dims[1] is 0");
  make_foreign(&f, NULL, PLM_DL_UINT, 16, 2, shape);
  PLM_CHECK_FAILS(plm_tensor_from_dlpack(plm_test_ctx, &f.managed, &t, NULL), PLM_ERR_INVALID_ARG,
                  "data is NULL");
  make_foreign(&f, dev.data, PLM_DL_UINT, 16, 2, shape);
  f.managed.dl_tensor.shape = NULL;
  PLM_CHECK_FAILS(plm_tensor_from_dlpack(plm_test_ctx, &f.managed, &t, NULL), PLM_ERR_INVALID_ARG,
                  "shape is NULL");
  make_foreign(&f, dev.data, PLM_DL_UINT, 16, 2, shape);
  f.managed.dl_tensor.device.device_type = plm_test_backend == PLM_BACKEND_CUDA ? 1 : 2;
  PLM_CHECK_FAILS(plm_tensor_from_dlpack(plm_test_ctx, &f.managed, &t, NULL), PLM_ERR_INVALID_ARG,
                  plm_test_backend == PLM_BACKEND_CUDA ? "is kDLCPU but the context is cuda"
                                                       : "is kDLCUDA but the context is host");
  f.managed.dl_tensor.device.device_type = 7;
  PLM_CHECK_FAILS(plm_tensor_from_dlpack(plm_test_ctx, &f.managed, &t, NULL), PLM_ERR_INVALID_ARG,
                  "device type 7 is not kDLCPU (1), kDLCUDA (2) or kDLCUDAHost (3)");
  /* kDLCUDAHost: pinned host memory both backends reach. */
  f.managed.dl_tensor.device.device_type = PLM_DL_CUDA_HOST;
  PLM_CHECK_OK(plm_tensor_from_dlpack(plm_test_ctx, &f.managed, &t, NULL));
  /* The import never called the deleter: the caller owns the managed tensor. */
  ck_assert_int_eq(f.deleted, 0);
  plm_dlpack_release(&f.managed);
  ck_assert_int_eq(f.deleted, 1);
  PLM_CHECK_OK(plm_tensor_free(plm_test_pool, plm_test_stream, &dev));
}
END_TEST

/* Shapes of more than INT64_MAX bytes, byte offsets that overflow the address and data not
 * aligned to its elements are refused, each naming what was wrong (issue 39: they were
 * taken, then overflowed in plm_tensor_bytes, the pointer arithmetic and the kernels). */
START_TEST(test_an_import_refuses_impossible_sizes_offsets_and_alignment) {
  const int64_t shape[2] = {4, 6};
  plm_tensor dev, t;
  PLM_CHECK_OK(plm_tensor_alloc(plm_test_pool, plm_test_stream, PLM_DTYPE_F32, 2, shape, &dev));
  foreign f;
  make_foreign(&f, dev.data, PLM_DL_UINT, 8, 2, (const int64_t[2]){INT64_C(1) << 62, 2});
  PLM_CHECK_FAILS(plm_tensor_from_dlpack(plm_test_ctx, &f.managed, &t, NULL), PLM_ERR_INVALID_ARG,
                  "managed->dl_tensor (shape [4611686018427387904, 2]): the shape "
                  "4611686018427387904x2 of u8 is more than INT64_MAX (2^63 - 1) bytes");
  make_foreign(&f, dev.data, PLM_DL_UINT, 8, 2, shape);
  f.managed.dl_tensor.byte_offset = UINT64_C(1) << 63;
  PLM_CHECK_FAILS(plm_tensor_from_dlpack(plm_test_ctx, &f.managed, &t, NULL), PLM_ERR_INVALID_ARG,
                  "managed->dl_tensor.byte_offset 9223372036854775808 overflows the address");
  f.managed.dl_tensor.byte_offset = UINT64_MAX;
  PLM_CHECK_FAILS(plm_tensor_from_dlpack(plm_test_ctx, &f.managed, &t, NULL), PLM_ERR_INVALID_ARG,
                  "byte_offset 18446744073709551615 overflows");
  /* An offset that fits, and a shape that fits, but not together. */
  make_foreign(&f, dev.data, PLM_DL_UINT, 8, 1, (const int64_t[1]){INT64_MAX});
  f.managed.dl_tensor.byte_offset = (uint64_t)INT64_MAX - 1;
  PLM_CHECK_FAILS(plm_tensor_from_dlpack(plm_test_ctx, &f.managed, &t, NULL), PLM_ERR_INVALID_ARG,
                  "run past the end of the address space");
  /* float32 at +2 bytes, as np.frombuffer(..., offset=2) gives. */
  make_foreign(&f, dev.data, PLM_DL_FLOAT, 32, 1, (const int64_t[1]){5});
  f.managed.dl_tensor.byte_offset = 2;
  PLM_CHECK_FAILS(plm_tensor_from_dlpack(plm_test_ctx, &f.managed, &t, NULL), PLM_ERR_INVALID_ARG,
                  "managed->dl_tensor (shape [5]): data 0x");
  ck_assert_ptr_nonnull(strstr(plm_last_error(), "is not aligned to its f32 elements' 4 bytes"));
  plm_dl_managed_tensor legacy = {.dl_tensor = f.managed.dl_tensor};
  PLM_CHECK_FAILS(plm_tensor_from_dlpack_legacy(plm_test_ctx, &legacy, &t), PLM_ERR_INVALID_ARG,
                  "plm_tensor_from_dlpack_legacy: managed->dl_tensor (shape [5]): data 0x");
  f.managed.dl_tensor.byte_offset = 4; /* aligned: taken */
  PLM_CHECK_OK(plm_tensor_from_dlpack(plm_test_ctx, &f.managed, &t, NULL));
  ck_assert(t.data == (char *)dev.data + 4);
  PLM_CHECK_OK(plm_tensor_free(plm_test_pool, plm_test_stream, &dev));
}
END_TEST

/* threshold on an imported tensor, its result exported and read through DLPack. */
START_TEST(test_an_op_runs_on_an_import_and_its_result_exports) {
  const int64_t shape[2] = {3, 5};
  uint16_t host[15];
  for (int i = 0; i < 15; i++) host[i] = (uint16_t)(i * 10);
  plm_tensor in = plm_test_upload(PLM_DTYPE_U16, 2, shape, host), out;
  foreign f;
  make_foreign(&f, in.data, PLM_DL_UINT, 16, 2, shape);
  plm_tensor imported;
  PLM_CHECK_OK(plm_tensor_from_dlpack(plm_test_ctx, &f.managed, &imported, NULL));
  PLM_CHECK_OK(plm_tensor_alloc(plm_test_pool, plm_test_stream, PLM_DTYPE_U8, 2, shape, &out));
  const plm_threshold_params params = {.value = 65, .compare = PLM_COMPARE_GT};
  PLM_CHECK_OK(plm_threshold(plm_test_stream, &imported, &params, &out));
  plm_dl_managed_tensor_versioned *m = NULL;
  PLM_CHECK_OK(plm_tensor_to_dlpack(&out, 0, NULL, NULL, &m));
  uint8_t mask[15];
  PLM_CHECK_OK(plm_stream_memcpy(plm_test_stream, mask, m->dl_tensor.data, sizeof mask,
                                 PLM_COPY_DEVICE_TO_HOST));
  PLM_CHECK_OK(plm_stream_synchronize(plm_test_stream));
  for (int i = 0; i < 15; i++) ck_assert_int_eq(mask[i], i * 10 > 65);
  plm_dlpack_release(m);
  plm_dlpack_release(&f.managed);
  PLM_CHECK_OK(plm_tensor_free(plm_test_pool, plm_test_stream, &in));
  PLM_CHECK_OK(plm_tensor_free(plm_test_pool, plm_test_stream, &out));
}
END_TEST

/* ---- legacy DLPack (0.x) ------------------------------------------------------------------ */

typedef struct legacy_foreign {
  plm_dl_managed_tensor managed;
  int64_t shape[2];
  int deleted;
} legacy_foreign;

static void legacy_foreign_deleter(plm_dl_managed_tensor *self) {
  ((legacy_foreign *)self->manager_ctx)->deleted++;
}

START_TEST(test_legacy_dlpack_exports_and_imports_as_the_versioned_does) {
  const int64_t shape[2] = {4, 6};
  plm_tensor dev;
  PLM_CHECK_OK(plm_tensor_alloc(plm_test_pool, plm_test_stream, PLM_DTYPE_F32, 2, shape, &dev));
  plm_dl_managed_tensor *m = NULL;
  atomic_store(&released, 0);
  PLM_CHECK_OK(plm_tensor_to_dlpack_legacy(&dev, count_release, &released, &m));
  ck_assert_ptr_eq(m->dl_tensor.data, dev.data);
  ck_assert_int_eq(m->dl_tensor.device.device_type,
                   plm_test_backend == PLM_BACKEND_CUDA ? PLM_DL_CUDA : PLM_DL_CPU);
  ck_assert(m->dl_tensor.dtype.code == PLM_DL_FLOAT && m->dl_tensor.dtype.bits == 32);
  ck_assert(m->dl_tensor.shape[0] == 4 && m->dl_tensor.strides[0] == 6);
  ck_assert_ptr_nonnull(m->manager_ctx);
  plm_tensor back;
  PLM_CHECK_OK(plm_tensor_from_dlpack_legacy(plm_test_ctx, m, &back));
  ck_assert(back.data == dev.data && back.dtype == PLM_DTYPE_F32 && back.dims[1] == 6);
  ck_assert_int_eq(atomic_load(&released), 0);
  plm_dlpack_release_legacy(m);
  ck_assert_int_eq(atomic_load(&released), 1);
  plm_dlpack_release_legacy(NULL);
  /* Refusals: the export's and the import's, named as the versioned ones are. */
  plm_tensor strided = dev;
  strided.strides[0] = 8;
  PLM_CHECK_FAILS(plm_tensor_to_dlpack_legacy(&strided, count_release, &released, &m),
                  PLM_ERR_UNSUPPORTED, "plm_tensor_to_dlpack_legacy: tensor: strides [8, 1]");
  ck_assert_ptr_null(m);
  PLM_CHECK_FAILS(plm_tensor_to_dlpack_legacy(NULL, NULL, NULL, &m), PLM_ERR_INVALID_ARG,
                  "plm_tensor_to_dlpack_legacy: tensor is NULL");
  ck_assert_int_eq(atomic_load(&released), 1); /* never called on a failure */
  legacy_foreign f = {.shape = {4, 6}};
  f.managed = (plm_dl_managed_tensor){
      .dl_tensor = {.data = dev.data,
                    .device = {plm_test_backend == PLM_BACKEND_CUDA ? PLM_DL_CUDA : PLM_DL_CPU, 0},
                    .ndim = 2,
                    .dtype = {PLM_DL_UINT, 16, 1},
                    .shape = f.shape},
      .manager_ctx = &f,
      .deleter = legacy_foreign_deleter};
  PLM_CHECK_OK(plm_tensor_from_dlpack_legacy(plm_test_ctx, &f.managed, &back));
  ck_assert(back.dtype == PLM_DTYPE_U16 && back.data == dev.data);
  f.managed.dl_tensor.dtype.bits = 12;
  PLM_CHECK_FAILS(plm_tensor_from_dlpack_legacy(plm_test_ctx, &f.managed, &back),
                  PLM_ERR_INVALID_ARG,
                  "plm_tensor_from_dlpack_legacy: managed->dl_tensor.dtype (code 1, 12 bits");
  f.managed.dl_tensor.dtype.bits = 16;
  f.managed.dl_tensor.device.device_type = 7;
  PLM_CHECK_FAILS(plm_tensor_from_dlpack_legacy(plm_test_ctx, &f.managed, &back),
                  PLM_ERR_INVALID_ARG,
                  "plm_tensor_from_dlpack_legacy: managed->dl_tensor.device type 7");
  PLM_CHECK_FAILS(plm_tensor_from_dlpack_legacy(plm_test_ctx, NULL, &back), PLM_ERR_INVALID_ARG,
                  "managed is NULL");
  ck_assert_int_eq(f.deleted, 0); /* the import never owns it */
  plm_dlpack_release_legacy(&f.managed);
  ck_assert_int_eq(f.deleted, 1);
  PLM_CHECK_OK(plm_tensor_free(plm_test_pool, plm_test_stream, &dev));
}
END_TEST

/* ---- the stream rule and wrapped streams ---------------------------------------------- */

typedef struct ordering {
  atomic_int written; /* set late by the producer */
  atomic_int seen;    /* what the consumer saw */
} ordering;

/* A write late enough that a read not ordered after it would see 0. */
static void slow_write(void *user) {
  plm_test_sleep_ms(60);
  atomic_store(&((ordering *)user)->written, 1);
}

static void read_it(void *user) {
  ordering *o = user;
  atomic_store(&o->seen, atomic_load(&o->written) ? 1 : -1);
}

START_TEST(test_the_consumer_waits_for_the_producer_on_the_device) {
  plm_stream *producer = NULL, *consumer = NULL;
  PLM_CHECK_OK(plm_stream_create(plm_test_ctx, 0, &producer));
  PLM_CHECK_OK(plm_stream_create(plm_test_ctx, 0, &consumer));
  ordering o = {0};
  /* The producer is held at a gate that only this thread opens: were order_after to wait
   * on the host, it would wait for the gate's 10 s deadline. After the gate its write
   * comes late (slow_write), so that a read not ordered after it sees 0. */
  gate held;
  gate_init(&held, 10000.0);
  PLM_CHECK_OK(plm_stream_enqueue_host(producer, gate_wait_task, &held));
  PLM_CHECK_OK(plm_stream_enqueue_host(producer, slow_write, &o));
  PLM_CHECK_OK(plm_dlpack_order_after(consumer, producer));
  PLM_CHECK_OK(plm_stream_enqueue_host(consumer, read_it, &o));
  const bool waited_on_host = held.timed_out;
  bool finished = true;
  const plm_status queried = plm_stream_query(consumer, &finished);
  /* Open before any check can fail: the streams must not be left waiting on this stack. */
  gate_open(&held);
  PLM_CHECK_OK(plm_stream_synchronize(consumer));
  PLM_CHECK_OK(plm_stream_synchronize(producer));
  gate_destroy(&held);
  ck_assert_msg(!waited_on_host, "order_after waited for the producer on the host");
  PLM_CHECK_OK(queried);
  ck_assert_msg(!finished, "the consumer finished while the producer was held");
  const int seen = atomic_load(&o.seen);
  ck_assert_msg(seen == 1, "the consumer read before the producer wrote (seen %d)", seen);
  PLM_CHECK_OK(plm_dlpack_order_after(consumer, consumer)); /* a no-op */
  PLM_CHECK_FAILS(plm_dlpack_order_after(NULL, producer), PLM_ERR_INVALID_ARG, "consumer is NULL");
  plm_context *other = NULL;
  plm_stream *elsewhere = NULL;
  plm_context_config config = {.backend = plm_test_backend};
  PLM_CHECK_OK(plm_context_create(&config, &other));
  PLM_CHECK_OK(plm_stream_create(other, 0, &elsewhere));
  PLM_CHECK_FAILS(plm_dlpack_order_after(elsewhere, producer), PLM_ERR_INVALID_ARG,
                  "consumer and producer are streams of two contexts");
  PLM_CHECK_OK(plm_stream_destroy(elsewhere));
  PLM_CHECK_OK(plm_context_destroy(other));
  PLM_CHECK_OK(plm_stream_destroy(producer));
  PLM_CHECK_OK(plm_stream_destroy(consumer));
}
END_TEST

/* A slow write on producer, order(plm_test_stream, native), a read on consumer: the read
 * sees the write (the host did not wait for it). */
static void check_native_ordering(plm_stream *producer, plm_stream *consumer,
                                  plm_status (*order)(plm_stream *, void *), void *native) {
  ordering o = {0};
  PLM_CHECK_OK(plm_stream_enqueue_host(producer, slow_write, &o));
  PLM_CHECK_OK(order(plm_test_stream, native));
  PLM_CHECK_OK(plm_stream_enqueue_host(consumer, read_it, &o));
  PLM_CHECK_OK(plm_stream_synchronize(consumer));
  ck_assert_int_eq(atomic_load(&o.seen), 1);
}

/* The native forms: on host there is no native stream to give; on cuda a stream plume made
 * stands in for another library's (its cudaStream_t). */
START_TEST(test_the_stream_rule_with_native_streams) {
  plm_stream *other = NULL;
  PLM_CHECK_OK(plm_stream_create(plm_test_ctx, 0, &other));
  PLM_CHECK_FAILS(plm_dlpack_order_before_native(NULL, NULL), PLM_ERR_INVALID_ARG,
                  "producer is NULL");
  PLM_CHECK_FAILS(plm_dlpack_order_after_native(NULL, NULL), PLM_ERR_INVALID_ARG,
                  "consumer is NULL");
  if (plm_test_backend != PLM_BACKEND_CUDA) {
    PLM_CHECK_FAILS(plm_dlpack_order_before_native(plm_test_stream, other), PLM_ERR_UNSUPPORTED,
                    "plm_dlpack_order_before_native: the host backend's streams are plume's own");
    PLM_CHECK_FAILS(plm_dlpack_order_after_native(plm_test_stream, other), PLM_ERR_UNSUPPORTED,
                    "have no native handle");
  } else {
    void *native = NULL;
    PLM_CHECK_OK(plm_stream_native_handle(other, &native));
    check_native_ordering(plm_test_stream, other, plm_dlpack_order_before_native, native);
    check_native_ordering(other, plm_test_stream, plm_dlpack_order_after_native, native);
  }
  PLM_CHECK_OK(plm_stream_destroy(other));
}
END_TEST

/* plm_stream_wrap over a stream of this context (host: the plm_stream itself; cuda: its
 * cudaStream_t, as another library would hand it over): the wrappers share its order. */
static void *native_of(plm_stream *stream) {
  if (plm_test_backend == PLM_BACKEND_HOST) return stream;
  void *native = NULL;
  PLM_CHECK_OK(plm_stream_native_handle(stream, &native));
  return native;
}

START_TEST(test_a_wrapped_stream_shares_the_order_of_the_one_it_wraps) {
  plm_stream *own = NULL, *wrapped = NULL, *again = NULL;
  PLM_CHECK_OK(plm_stream_create(plm_test_ctx, 0, &own));
  PLM_CHECK_OK(plm_stream_wrap(plm_test_ctx, native_of(own), &wrapped));
  /* A second wrapper: of the wrapper on host (it shares `own` too), of the same
   * cudaStream_t on cuda. */
  PLM_CHECK_OK(plm_stream_wrap(
      plm_test_ctx, native_of(plm_test_backend == PLM_BACKEND_HOST ? wrapped : own), &again));
  ordering o = {0};
  PLM_CHECK_OK(plm_stream_enqueue_host(own, slow_write, &o));
  PLM_CHECK_OK(plm_stream_enqueue_host(again, read_it, &o)); /* after it: one queue */
  PLM_CHECK_OK(plm_stream_synchronize(wrapped));
  ck_assert_int_eq(atomic_load(&o.seen), 1);
  /* The pool serves a wrapped stream as any other. */
  plm_tensor t;
  const int64_t dims[1] = {1000};
  PLM_CHECK_OK(plm_tensor_alloc(plm_test_pool, wrapped, PLM_DTYPE_F32, 1, dims, &t));
  PLM_CHECK_OK(plm_tensor_free(plm_test_pool, wrapped, &t));
  if (plm_test_backend == PLM_BACKEND_HOST)
    PLM_CHECK_FAILS(plm_stream_destroy(own), PLM_ERR_INVALID_STATE,
                    "2 plm_stream_wrap stream(s) share this stream; destroy them first");
  /* On cuda the wrappers only forget the cudaStream_t: its owner destroys it after them. */
  PLM_CHECK_OK(plm_stream_destroy(wrapped));
  PLM_CHECK_OK(plm_stream_destroy(again));
  PLM_CHECK_OK(plm_stream_destroy(own));
  if (plm_test_backend == PLM_BACKEND_HOST) {
    int not_a_stream = 0;
    PLM_CHECK_FAILS(plm_stream_wrap(plm_test_ctx, &not_a_stream, &wrapped), PLM_ERR_INVALID_ARG,
                    "native is not a stream of this context");
    PLM_CHECK_FAILS(plm_stream_wrap(plm_test_ctx, NULL, &wrapped), PLM_ERR_INVALID_ARG,
                    "native is NULL: on the host backend it must be a plm_stream *");
  } else {
    /* NULL is the legacy default stream; cudaStreamPerThread ((cudaStream_t)0x2) is
     * another stream on each thread, refused. */
    PLM_CHECK_OK(plm_stream_wrap(plm_test_ctx, NULL, &wrapped));
    PLM_CHECK_OK(plm_stream_enqueue_host(wrapped, read_it, &o));
    PLM_CHECK_OK(plm_stream_synchronize(wrapped));
    PLM_CHECK_OK(plm_stream_destroy(wrapped));
    PLM_CHECK_FAILS(plm_stream_wrap(plm_test_ctx, (void *)(uintptr_t)2, &wrapped),
                    PLM_ERR_INVALID_ARG, "native is cudaStreamPerThread");
  }
  PLM_CHECK_FAILS(plm_stream_wrap(NULL, own, &wrapped), PLM_ERR_INVALID_ARG, "ctx is NULL");
}
END_TEST

/* A context destroyed with wrappers left reports them and frees each once (ASan would see
 * more): on host a stream and its wrapper; on cuda a wrapper of another context's stream
 * (another library's, as plume sees it), which is forgotten and never destroyed: that
 * stream still works after. */
START_TEST(test_a_context_destroyed_with_wrappers_left_frees_each_once) {
  plm_context *ctx = NULL;
  plm_context_config config = {.backend = plm_test_backend};
  PLM_CHECK_OK(plm_context_create(&config, &ctx));
  plm_stream *own = NULL, *wrapped = NULL;
  if (plm_test_backend == PLM_BACKEND_HOST) {
    PLM_CHECK_OK(plm_stream_create(ctx, 0, &own));
    PLM_CHECK_OK(plm_stream_wrap(ctx, own, &wrapped));
    PLM_CHECK_FAILS(plm_context_destroy(ctx), PLM_ERR_INVALID_STATE, "2 stream");
    return;
  }
  PLM_CHECK_OK(plm_stream_wrap(ctx, native_of(plm_test_stream), &wrapped));
  PLM_CHECK_FAILS(plm_context_destroy(ctx), PLM_ERR_INVALID_STATE, "1 stream");
  ordering o = {.written = 1};
  PLM_CHECK_OK(plm_stream_enqueue_host(plm_test_stream, read_it, &o));
  PLM_CHECK_OK(plm_stream_synchronize(plm_test_stream));
  ck_assert_int_eq(atomic_load(&o.seen), 1);
}
END_TEST

static Suite *interop_suite(void) {
  Suite *suite = suite_create("interop");
  TCase *tcase = tcase_create("interop");
  plm_test_add_fixture(tcase);
  plm_test_add_stream_fixture(tcase);
  tcase_add_test(tcase, test_wrap_strided_takes_compact_row_major_only);
  tcase_add_test(tcase, test_an_export_lays_out_the_specification_and_releases_once);
  tcase_add_test(tcase, test_pinned_host_memory_exports_as_what_it_is);
  tcase_add_test(tcase, test_an_export_refuses_what_dlpack_cannot_say);
  tcase_add_test(tcase, test_an_import_describes_the_memory_and_refuses_what_ops_cannot_use);
  tcase_add_test(tcase, test_an_import_refuses_impossible_sizes_offsets_and_alignment);
  tcase_add_test(tcase, test_an_op_runs_on_an_import_and_its_result_exports);
  tcase_add_test(tcase, test_legacy_dlpack_exports_and_imports_as_the_versioned_does);
  tcase_add_test(tcase, test_the_consumer_waits_for_the_producer_on_the_device);
  tcase_add_test(tcase, test_the_stream_rule_with_native_streams);
  tcase_add_test(tcase, test_a_wrapped_stream_shares_the_order_of_the_one_it_wraps);
  tcase_add_test(tcase, test_a_context_destroyed_with_wrappers_left_frees_each_once);
  suite_add_tcase(suite, tcase);
  return suite;
}

int main(void) {
  return plm_test_main(interop_suite);
}
