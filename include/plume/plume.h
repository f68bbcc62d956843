/* plume/plume.h: the whole public API in one include.
 *
 * plume is a memory-pooled GPU compute runtime with asynchronous streams. Start
 * with plume/context.h (contexts and backends), then plume/stream.h,
 * plume/event.h and plume/pool.h (stream-ordered device memory, pinned host
 * memory), the operations (plume/ops.h) and pipelines of them (plume/pipeline.h).
 * Every function returns a plm_status (plume/status.h).
 */
#ifndef PLUME_PLUME_H
#define PLUME_PLUME_H

#include "plume/abs_diff.h"
#include "plume/background.h"
#include "plume/badpixel.h"
#include "plume/cfar.h"
#include "plume/clip.h"
#include "plume/context.h"
#include "plume/conv.h"
#include "plume/dendritic.h"
#include "plume/dlpack.h"
#include "plume/entropy.h"
#include "plume/event.h"
#include "plume/forecast.h"
#include "plume/export.h"
#include "plume/fused.h"
#include "plume/label.h"
#include "plume/lstm.h"
#include "plume/matmul.h"
#include "plume/nuc.h"
#include "plume/op_info.h"
#include "plume/op_placement.h"
#include "plume/ops.h"
#include "plume/pipeline.h"
#include "plume/pool.h"
#include "plume/presets.h"
#include "plume/profile.h"
#include "plume/scale_offset.h"
#include "plume/segment.h"
#include "plume/status.h"
#include "plume/stream.h"
#include "plume/tensor.h"
#include "plume/threshold.h"
#include "plume/tuning.h"
#include "plume/vector.h"
#include "plume/version.h"

#endif /* PLUME_PLUME_H */
