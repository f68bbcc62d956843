/* pool/pool_snapshot_json.c: a pool snapshot as JSON (plume/pool.h; schema
 * "plume-pool-snapshot", version 1). Built with jansson; each helper returns NULL
 * when memory runs out, and a NULL anywhere makes the whole value NULL. */
#include <stdlib.h>

#include "pool/pool_snapshot_json.h"
#include "streams/error.h"

static const int SNAPSHOT_SCHEMA_VERSION = 1;

static json_t *integer(uint64_t x) {
  return json_integer((json_int_t)x);
}

/* A time in monotonic seconds, or null for 0 (never). */
static json_t *time_or_null(double seconds) {
  return seconds > 0 ? json_real(seconds) : json_null();
}

static json_t *totals_json(const plm_pool_snapshot *s) {
  return json_pack("{s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:f, s:f}", "bytes_reserved",
                   integer(s->bytes_reserved), "bytes_in_use", integer(s->bytes_in_use),
                   "bytes_free", integer(s->bytes_free), "bytes_pending", integer(s->bytes_pending),
                   "bytes_released", integer(s->bytes_released), "largest_free_block", integer(s->largest_free_block), "free_blocks",
                   integer(s->free_blocks), "fragmentation", s->fragmentation,
                   "reserved_per_in_use", s->reserved_per_in_use);
}

static json_t *segment_json(const plm_pool_snapshot *s, size_t i) {
  const plm_pool_segment *segment = &s->segments[i];
  return json_pack("{s:o, s:o, s:b, s:o, s:o}", "base", integer(segment->base), "size",
                   integer(segment->size), "huge", segment->huge, "first_block",
                   integer(segment->first_block), "block_count", integer(segment->block_count));
}

static json_t *block_json(const plm_pool_snapshot *s, size_t i) {
  const plm_pool_block_info *b = &s->blocks[i];
  json_t *stream = b->stream_index >= 0 ? json_integer(b->stream_index) : json_null();
  return json_pack("{s:o, s:o, s:o, s:o, s:s, s:o, s:i, s:o}", "segment", integer(b->segment),
                   "offset", integer(b->offset), "size", integer(b->size), "requested",
                   integer(b->requested), "state", plm_pool_block_state_name(b->state), "stream",
                   stream, "size_class", b->size_class, "freed_at", time_or_null(b->freed_at));
}

/* An array of item(s, i) for i in [0, count); NULL when memory ran out. */
static json_t *array_json(const plm_pool_snapshot *s, size_t count,
                          json_t *(*item)(const plm_pool_snapshot *, size_t)) {
  json_t *array = json_array();
  for (size_t i = 0; array && i < count; i++)
    if (json_array_append_new(array, item(s, i)) != 0) { /* takes the item, even NULL */
      json_decref(array);
      array = NULL;
    }
  return array;
}

json_t *plm__pool_snapshot_json(const plm_pool_snapshot *s) {
  /* json_pack's "o" takes each value even when packing fails, so nothing leaks. */
  return json_pack("{s:s, s:i, s:f, s:o, s:o, s:o}", "schema", "plume-pool-snapshot", "version",
                   SNAPSHOT_SCHEMA_VERSION, "taken_at", s->taken_at, "totals", totals_json(s),
                   "segments", array_json(s, s->segment_count, segment_json), "blocks",
                   array_json(s, s->block_count, block_json));
}

plm_status plm_pool_snapshot_to_json(const plm_pool_snapshot *snapshot, char **json) {
  PLM__REQUIRE_NOT_NULL(json);
  *json = NULL;
  PLM__REQUIRE_NOT_NULL(snapshot);
  json_t *root = plm__pool_snapshot_json(snapshot);
  char *text = root ? json_dumps(root, JSON_INDENT(1) | JSON_PRESERVE_ORDER) : NULL;
  json_decref(root);
  if (!text) return plm__fail(PLM_ERR_OUT_OF_MEMORY, "no host memory for the snapshot's JSON");
  *json = text;
  return PLM_OK;
}

plm_status plm_pool_snapshot_write_json(const plm_pool_snapshot *snapshot, FILE *file) {
  PLM__REQUIRE_NOT_NULL(snapshot);
  PLM__REQUIRE_NOT_NULL(file);
  json_t *root = plm__pool_snapshot_json(snapshot);
  if (!root) return plm__fail(PLM_ERR_OUT_OF_MEMORY, "no host memory for the snapshot's JSON");
  int written = json_dumpf(root, file, JSON_INDENT(1) | JSON_PRESERVE_ORDER);
  json_decref(root);
  if (written != 0 || fputc('\n', file) == EOF || ferror(file))
    return plm__fail(PLM_ERR_IO, "writing the snapshot's JSON to the file failed");
  return PLM_OK;
}
