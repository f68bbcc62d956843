/* tests/fuzz/fuzz_dlpack.c: DLPack imports (plm_tensor_from_dlpack and its legacy twin,
 * plume/dlpack.h) of managed tensors whose every field the input chooses, over a buffer
 * of the harness's own (issue 39: shapes of more than INT64_MAX bytes, byte offsets that
 * overflow the address, misaligned data were taken).
 *
 * Feeds: byte 0 the ndim (0..7: outside 1..4 too), bytes 1-3 the dtype's code, bits and
 * lanes, byte 4 flags (bit 0: strides given; bit 1: the legacy import; bit 2: device
 * kDLCUDAHost instead of kDLCPU; bit 3: data at the buffer's byte 1 instead of 0), bytes
 * 5-12 byte_offset, then ndim shapes and ndim strides of 8 bytes each, little-endian;
 * missing bytes read 0.
 * Checks: no crash, leak or undefined behaviour (sanitizers); a refusal has a message; an
 * import describes data + byte_offset, aligned to its elements, with the shape given, at
 * most INT64_MAX bytes that do not run past the address space, and plm_tensor_numel and
 * _bytes agree with it. Where those bytes lie inside the buffer they are read (ASan would
 * see one out of it), and the tensor is exported and imported again to the same.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plume/context.h"
#include "plume/dlpack.h"
#include "plume/tensor.h"

enum { BUFFER_BYTES = 4096, MAX_NDIM = 7 };

static plm_context *ctx;
static _Alignas(64) unsigned char buffer[BUFFER_BYTES];

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc;
  (void)argv;
  if (plm_context_create(&(plm_context_config){.backend = PLM_BACKEND_HOST}, &ctx) != PLM_OK) {
    fprintf(stderr, "fuzz_dlpack: context: %s\n", plm_last_error());
    abort();
  }
  for (int i = 0; i < BUFFER_BYTES; i++) buffer[i] = (unsigned char)(i * 7);
  return 0;
}

/* The input read as a stream of fields; past its end, zeros. */
typedef struct cursor {
  const uint8_t *data;
  size_t size, at;
} cursor;

static uint8_t next_byte(cursor *c) {
  return c->at < c->size ? c->data[c->at++] : 0;
}

static uint64_t next_u64(cursor *c) {
  uint64_t v = 0;
  for (int k = 0; k < 8; k++) v |= (uint64_t)next_byte(c) << (8 * k);
  return v;
}

/* What a successful import must be. */
static void check_import(const plm_dl_tensor *dl, const plm_tensor *t) {
  const char *expected = (const char *)dl->data + dl->byte_offset;
  const size_t item = plm_dtype_size(t->dtype);
  if ((const char *)t->data != expected || item == 0 || (uintptr_t)t->data % item != 0) abort();
  if (t->ndim != dl->ndim) abort();
  uint64_t elements = 1;
  for (int d = 0; d < t->ndim; d++) {
    if (t->dims[d] != dl->shape[d] || t->dims[d] < 1) abort();
    elements *= (uint64_t)t->dims[d];
  }
  const size_t bytes = plm_tensor_bytes(t);
  if (bytes == 0 || bytes > (size_t)INT64_MAX || (uint64_t)plm_tensor_numel(t) != elements ||
      elements * item != bytes || bytes > UINTPTR_MAX - (uintptr_t)t->data)
    abort();
  /* Inside the buffer: read every byte, export and import again. */
  if ((const unsigned char *)t->data < buffer ||
      (const unsigned char *)t->data + bytes > buffer + BUFFER_BYTES)
    return;
  unsigned sum = 0;
  for (size_t k = 0; k < bytes; k++) sum += ((const unsigned char *)t->data)[k];
  if (sum == 0xFFFFFFFFu) abort(); /* keeps the reads */
  plm_dl_managed_tensor_versioned *exported = NULL;
  if (plm_tensor_to_dlpack(t, 0, NULL, NULL, &exported) != PLM_OK) abort();
  plm_tensor back;
  if (plm_tensor_from_dlpack(ctx, exported, &back, NULL) != PLM_OK || back.data != t->data ||
      back.ndim != t->ndim || memcmp(back.dims, t->dims, (size_t)t->ndim * sizeof *t->dims) != 0)
    abort();
  plm_dlpack_release(exported);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (!ctx) LLVMFuzzerInitialize(NULL, NULL);
  cursor c = {data, size, 0};
  const int ndim = next_byte(&c) % (MAX_NDIM + 1);
  const plm_dl_dtype dtype = {.code = next_byte(&c), .bits = next_byte(&c), .lanes = 1};
  const uint8_t lanes = next_byte(&c);
  const uint8_t flags = next_byte(&c);
  int64_t shape[MAX_NDIM], strides[MAX_NDIM];
  plm_dl_tensor dl = {.data = buffer + ((flags & 8) ? 1 : 0),
                      .device = {(flags & 4) ? PLM_DL_CUDA_HOST : PLM_DL_CPU, 0},
                      .ndim = ndim,
                      .dtype = dtype,
                      .shape = shape,
                      .strides = (flags & 1) ? strides : NULL,
                      .byte_offset = next_u64(&c)};
  dl.dtype.lanes = lanes ? lanes : 1;
  for (int d = 0; d < ndim; d++) shape[d] = (int64_t)next_u64(&c);
  for (int d = 0; d < ndim; d++) strides[d] = (int64_t)next_u64(&c);
  plm_tensor t;
  plm_status status;
  if (flags & 2) {
    const plm_dl_managed_tensor legacy = {.dl_tensor = dl};
    status = plm_tensor_from_dlpack_legacy(ctx, &legacy, &t);
  } else {
    const plm_dl_managed_tensor_versioned managed = {.version = {1, 0}, .dl_tensor = dl};
    bool read_only = true;
    status = plm_tensor_from_dlpack(ctx, &managed, &t, &read_only);
    if (status == PLM_OK && read_only) abort();
  }
  if (status != PLM_OK) {
    if (plm_last_error()[0] == '\0') abort();
    return 0;
  }
  check_import(&dl, &t);
  return 0;
}
