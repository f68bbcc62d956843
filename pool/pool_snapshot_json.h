/* pool/pool_snapshot_json.h: a pool snapshot as a jansson value (internal), for
 * plm_pool_snapshot_to_json / _write_json and for the profiler, which puts snapshots
 * into its own files. The schema is documented at plm_pool_snapshot_to_json
 * (plume/pool.h). */
#ifndef PLUME_POOL_SNAPSHOT_JSON_H
#define PLUME_POOL_SNAPSHOT_JSON_H

#include <jansson.h>

#include "plume/pool.h"

/* A new JSON object (reference owned by the caller), or NULL when memory ran out. */
json_t *plm__pool_snapshot_json(const plm_pool_snapshot *snapshot);

#endif /* PLUME_POOL_SNAPSHOT_JSON_H */
