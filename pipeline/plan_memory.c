/* pipeline/plan_memory.c: offsets of the intermediates and the steps' scratch in a
 * frame's workspace.
 *
 * A buffer is an intermediate tensor, a group of them that share memory because a step
 * writes its output over its input (in place), or a step's scratch, written and used by
 * that step alone (numbered after the step's outputs). Two buffers conflict (may not share
 * bytes) unless every use of one happens before the other is first written; on one
 * stream that is "their step intervals do not overlap", on several it follows the
 * plan's vector clocks. Placing buffers of given sizes under such conflicts is
 * dynamic storage allocation (NP-hard in general), so three placements are tried and
 * the smallest workspace kept:
 *   by size   largest first, each at the best-fitting gap among the buffers it
 *             conflicts with (TFLite's greedy-by-size);
 *   in order  by first write, best fit;
 *   ends      by first write, a step's outputs (then its scratch) at the lowest free
 *             offset when the step index is even and at the highest one below the peak
 *             of live bytes when it is odd. On a chain on one stream, where each buffer
 *             conflicts only with its neighbours (a scratch only with its step's input
 *             and outputs), this reaches the peak, the least any placement needs.
 * The peak counts scratch: a step's scratch is live with its inputs and outputs.
 *
 * Cost: near-linear in the steps when each buffer conflicts with few others. The
 * conflicts are kept as lists, found by a sweep in first-write order that checks each
 * new buffer against the active ones only: a buffer leaves the active set once every
 * later step is ordered after all its uses (the per-stream minimum of the later steps'
 * clocks covers its last uses), so it can conflict with no later buffer. Placing a
 * buffer looks at its conflicts alone; without reuse every buffer conflicts with every
 * other, and the buffers are stacked, largest first, with no lists.
 */
#include <stdlib.h>
#include <string.h>

#include "pipeline/pipeline_internal.h"

typedef struct buffer {
  size_t bytes;                                /* rounded up to PLM__PIPE_ALIGN */
  int def;                                     /* the step that first writes it */
  int last;                                    /* the last step that uses it (in plan order) */
  int last_position[PLM_PIPELINE_MAX_STREAMS]; /* per stream, its last use there (0: none) */
  size_t offset;
} buffer;

typedef enum placement { BY_SIZE, IN_ORDER, ENDS, PLACEMENTS } placement;

typedef struct memory {
  const plm__plan *plan;
  buffer *buffers;
  int count;
  int *first_conflict; /* count + 1 offsets into conflicts: buffer b's are */
  int *conflicts;      /* conflicts[first_conflict[b] .. first_conflict[b + 1]) */
  size_t peak;
} memory;

static size_t aligned(size_t bytes) {
  return (bytes + PLM__PIPE_ALIGN - 1) / PLM__PIPE_ALIGN * PLM__PIPE_ALIGN;
}

/* Every use of a happens before b's first write. */
static bool before(const plm__plan *plan, const buffer *a, const buffer *b) {
  const int *clock = &plan->clock[(size_t)b->def * PLM_PIPELINE_MAX_STREAMS];
  for (int s = 0; s < PLM_PIPELINE_MAX_STREAMS; s++)
    if (a->last_position[s] > clock[s]) return false;
  return true;
}

/* Two buffers conflict unless one's uses all happen before the other's first write. */
static bool conflict(const memory *m, bool reuse, int a, int b) {
  return a != b && (!reuse || !(before(m->plan, &m->buffers[a], &m->buffers[b]) ||
                                before(m->plan, &m->buffers[b], &m->buffers[a])));
}

/* A step may write outputs[0] over inputs[0] when its op allows that (the output slot's
 * in_place, ops/op_desc.h: threshold, vector_add), both are intermediates of the same bytes
 * (threshold: u8 in, u8 out), and no other step reads the input (readers[t]: the steps
 * that read t). */
static bool in_place_allowed(const plm__plan *plan, const plm__step *step, const int *readers) {
  if (!(plm__op_get(step->kind)->outputs[0].in_place & 1u)) return false;
  int in = step->inputs[0], out = step->outputs[0];
  if (in < 0 || out < 0 || plan->location[in] != PLM__AT_WORKSPACE ||
      plan->location[out] != PLM__AT_WORKSPACE ||
      plan->tensors[in].bytes != plan->tensors[out].bytes)
    return false;
  return readers[in] == 1;
}

static void use(buffer *b, const plm__step *step, int index) {
  if (index > b->last) b->last = index;
  if (step->position > b->last_position[step->stream])
    b->last_position[step->stream] = step->position;
}

/* The conflict lists of the buffers (with reuse; memory's comment says how). */
static plm_status find_conflicts(memory *m) {
  const plm__plan *plan = m->plan;
  const int n = m->count, steps = plan->step_count;
  /* later_clock[s * MAX + k]: the least clock of stream k among steps s.. (suffix minima) */
  int *later_clock = malloc(((size_t)steps + 1) * PLM_PIPELINE_MAX_STREAMS * sizeof *later_clock);
  int *active = malloc(((size_t)n + 1) * sizeof *active);
  int *pairs = NULL; /* (a, b) pairs found, 2 ints each */
  size_t pair_count = 0, pair_capacity = 0;
  plm_status status = later_clock && active
                          ? PLM_OK
                          : plm__fail_raw(PLM_ERR_OUT_OF_MEMORY, "no host memory for the plan");
  if (status == PLM_OK) {
    for (int k = 0; k < PLM_PIPELINE_MAX_STREAMS; k++)
      later_clock[(size_t)steps * PLM_PIPELINE_MAX_STREAMS + (size_t)k] = -1; /* no later step */
    for (int s = steps - 1; s >= 0; s--)
      for (int k = 0; k < PLM_PIPELINE_MAX_STREAMS; k++) {
        const int own = plan->clock[(size_t)s * PLM_PIPELINE_MAX_STREAMS + (size_t)k];
        const int after = later_clock[(size_t)(s + 1) * PLM_PIPELINE_MAX_STREAMS + (size_t)k];
        later_clock[(size_t)s * PLM_PIPELINE_MAX_STREAMS + (size_t)k] =
            after >= 0 && after < own ? after : own;
      }
  }
  int active_count = 0;
  for (int b = 0; status == PLM_OK && b < n; b++) {
    /* Retire the buffers every step from b's first write on is ordered after. */
    const int *horizon = &later_clock[(size_t)m->buffers[b].def * PLM_PIPELINE_MAX_STREAMS];
    int kept = 0;
    for (int i = 0; i < active_count; i++) {
      const buffer *a = &m->buffers[active[i]];
      bool retired = a->last < m->buffers[b].def;
      for (int k = 0; retired && k < PLM_PIPELINE_MAX_STREAMS; k++)
        retired = a->last_position[k] <= horizon[k];
      if (!retired) active[kept++] = active[i];
    }
    active_count = kept;
    for (int i = 0; i < active_count && status == PLM_OK; i++) {
      if (!conflict(m, true, active[i], b)) continue;
      if (pair_count == pair_capacity) {
        pair_capacity = pair_capacity ? 2 * pair_capacity : 64;
        int *grown = realloc(pairs, pair_capacity * 2 * sizeof *pairs);
        if (!grown) {
          status = plm__fail_raw(PLM_ERR_OUT_OF_MEMORY, "no host memory for the plan");
          break;
        }
        pairs = grown;
      }
      pairs[2 * pair_count] = active[i];
      pairs[2 * pair_count + 1] = b;
      pair_count++;
    }
    active[active_count++] = b;
  }
  if (status == PLM_OK) {
    m->first_conflict = calloc((size_t)n + 2, sizeof *m->first_conflict);
    m->conflicts = malloc(2 * pair_count * sizeof *m->conflicts + 1);
    if (!m->first_conflict || !m->conflicts)
      status = plm__fail_raw(PLM_ERR_OUT_OF_MEMORY, "no host memory for the plan");
  }
  if (status == PLM_OK) { /* counting sort of both directions of each pair */
    for (size_t p = 0; p < 2 * pair_count; p++) m->first_conflict[pairs[p] + 2]++;
    for (int b = 0; b < n; b++) m->first_conflict[b + 2] += m->first_conflict[b + 1];
    for (size_t p = 0; p < pair_count; p++) {
      const int a = pairs[2 * p], b = pairs[2 * p + 1];
      m->conflicts[m->first_conflict[a + 1]++] = b;
      m->conflicts[m->first_conflict[b + 1]++] = a;
    }
  }
  free(later_clock);
  free(active);
  free(pairs);
  return status;
}

/* The buffers, their uses and (with reuse) conflicts; buffer_of[t] for every workspace
 * tensor and scratch_of[s] for every step (-1: none). */
static plm_status make_buffers(plm__plan *plan, bool reuse, memory *m, int *buffer_of,
                               int *scratch_of) {
  m->buffers =
      calloc((size_t)plan->tensor_count + (size_t)plan->step_count + 1, sizeof *m->buffers);
  int *readers = plm__plan_readers(plan);
  if (!m->buffers || !readers) {
    free(readers);
    return plm__fail_raw(PLM_ERR_OUT_OF_MEMORY, "no host memory for the plan");
  }
  for (int t = 0; t < plan->tensor_count; t++) buffer_of[t] = -1;
  plan->in_place = 0;
  for (int s = 0; s < plan->step_count; s++) {
    plm__step *step = &plan->steps[s];
    step->in_place = reuse && in_place_allowed(plan, step, readers);
    plan->in_place += step->in_place;
    for (int k = 0; k < PLM__PIPE_MAX_IO; k++) {
      int t = step->outputs[k];
      if (t < 0 || plan->location[t] != PLM__AT_WORKSPACE) continue;
      if (k == 0 && step->in_place) {
        buffer_of[t] = buffer_of[step->inputs[0]];
      } else {
        buffer_of[t] = m->count++;
        m->buffers[buffer_of[t]] =
            (buffer){.bytes = aligned(plan->tensors[t].bytes), .def = s, .last = s};
      }
      use(&m->buffers[buffer_of[t]], step, s);
    }
    scratch_of[s] = -1;
    if (step->scratch_bytes > 0) {
      scratch_of[s] = m->count++;
      m->buffers[scratch_of[s]] =
          (buffer){.bytes = aligned(step->scratch_bytes), .def = s, .last = s};
      use(&m->buffers[scratch_of[s]], step, s);
    }
    for (int k = 0; k < PLM__PIPE_MAX_IO; k++)
      if (step->inputs[k] >= 0 && buffer_of[step->inputs[k]] >= 0)
        use(&m->buffers[buffer_of[step->inputs[k]]], step, s);
  }
  free(readers);
  /* The peak of live bytes in plan order: each buffer's bytes from its first write to its
   * last use, summed as differences. */
  size_t *change = calloc((size_t)plan->step_count + 2, sizeof *change);
  size_t *ended = calloc((size_t)plan->step_count + 2, sizeof *ended);
  plm_status status = change && ended
                          ? PLM_OK
                          : plm__fail_raw(PLM_ERR_OUT_OF_MEMORY, "no host memory for the plan");
  m->peak = 0;
  if (status == PLM_OK) {
    for (int b = 0; b < m->count; b++) {
      change[m->buffers[b].def] += m->buffers[b].bytes;
      ended[m->buffers[b].last + 1] += m->buffers[b].bytes;
    }
    size_t live = 0;
    for (int s = 0; s < plan->step_count; s++) {
      live = live + change[s] - ended[s];
      if (live > m->peak) m->peak = live;
    }
  }
  free(change);
  free(ended);
  if (status == PLM_OK && reuse) status = find_conflicts(m);
  return status;
}

typedef struct interval {
  size_t begin, end;
} interval;

static int by_begin(const void *x, const void *y) {
  const interval *a = x, *b = y;
  return (a->begin > b->begin) - (a->begin < b->begin);
}

/* The offset for buffer b among the placed buffers it conflicts with: the best-fitting
 * gap (best_fit), else the lowest gap; with `high`, the highest room ending at or below
 * limit when there is one. `taken` is scratch for count intervals. */
static size_t place(const memory *m, int b, const bool *placed, bool best_fit, bool high,
                    size_t limit, interval *taken) {
  int n = 0;
  for (int i = m->first_conflict[b]; i < m->first_conflict[b + 1]; i++) {
    const int o = m->conflicts[i];
    if (placed[o])
      taken[n++] = (interval){m->buffers[o].offset, m->buffers[o].offset + m->buffers[o].bytes};
  }
  qsort(taken, (size_t)n, sizeof *taken, by_begin); /* the gaps do not depend on ties' order */
  const size_t bytes = m->buffers[b].bytes;
  size_t cursor = 0, best = SIZE_MAX, best_room = SIZE_MAX, first = SIZE_MAX, highest = SIZE_MAX;
  for (int i = 0; i <= n; i++) {
    size_t gap_end = i < n ? taken[i].begin : SIZE_MAX;
    if (gap_end > cursor && gap_end - cursor >= bytes) {
      size_t room = gap_end - cursor;
      if (first == SIZE_MAX) first = cursor;
      if (i < n && room < best_room) {
        best_room = room;
        best = cursor;
      }
      size_t top = gap_end < limit ? gap_end : limit;
      if (top > cursor && top - cursor >= bytes) highest = top - bytes;
    }
    if (i < n && taken[i].end > cursor) cursor = taken[i].end;
  }
  if (high && highest != SIZE_MAX) return highest;
  if (best_fit && best != SIZE_MAX) return best;
  return first;
}

/* A buffer's size and number, sorted largest first, then by first write (a stable sort
 * by size). */
typedef struct sized {
  size_t bytes;
  int buffer;
} sized;

static int by_size(const void *x, const void *y) {
  const sized *a = x, *b = y;
  if (a->bytes != b->bytes) return (a->bytes < b->bytes) - (a->bytes > b->bytes);
  return (a->buffer > b->buffer) - (a->buffer < b->buffer);
}

/* rank[]: the buffers largest first (`sizes` is scratch for count of them). */
static void rank_by_size(const memory *m, int *rank, sized *sizes) {
  for (int b = 0; b < m->count; b++) sizes[b] = (sized){m->buffers[b].bytes, b};
  qsort(sizes, (size_t)m->count, sizeof *sizes, by_size);
  for (int i = 0; i < m->count; i++) rank[i] = sizes[i].buffer;
}

/* Place every buffer with one placement; returns the workspace it needs. */
static size_t run_placement(memory *m, placement how, int *rank, bool *placed, interval *taken,
                            sized *sizes) {
  for (int b = 0; b < m->count; b++) {
    rank[b] = b; /* buffers are numbered by first write already */
    placed[b] = false;
  }
  if (how == BY_SIZE) rank_by_size(m, rank, sizes);
  size_t end = 0;
  for (int i = 0; i < m->count; i++) {
    int b = rank[i];
    bool high = how == ENDS && m->buffers[b].def % 2 == 1;
    m->buffers[b].offset = place(m, b, placed, how != ENDS, high, m->peak, taken);
    placed[b] = true;
    if (m->buffers[b].offset + m->buffers[b].bytes > end)
      end = m->buffers[b].offset + m->buffers[b].bytes;
  }
  return end;
}

plm_status plm__plan_memory(plm__plan *plan, bool reuse) {
  memory m = {.plan = plan};
  int *buffer_of = malloc(((size_t)plan->tensor_count + 1) * sizeof *buffer_of);
  int *scratch_of = malloc(((size_t)plan->step_count + 1) * sizeof *scratch_of);
  plm_status status = buffer_of && scratch_of
                          ? make_buffers(plan, reuse, &m, buffer_of, scratch_of)
                          : plm__fail_raw(PLM_ERR_OUT_OF_MEMORY, "no host memory for the plan");
  int *rank = malloc(((size_t)m.count + 1) * sizeof *rank);
  bool *placed = malloc(((size_t)m.count + 1) * sizeof *placed);
  interval *taken = malloc(((size_t)m.count + 1) * sizeof *taken);
  size_t *offsets = malloc(((size_t)m.count + 1) * sizeof *offsets);
  sized *sizes = malloc(((size_t)m.count + 1) * sizeof *sizes);
  if (status == PLM_OK && (!rank || !placed || !taken || !offsets || !sizes))
    status = plm__fail_raw(PLM_ERR_OUT_OF_MEMORY, "no host memory for the plan");
  if (status == PLM_OK) {
    size_t best = SIZE_MAX;
    if (reuse) {
      for (placement how = BY_SIZE; how < PLACEMENTS; how++) {
        size_t end = run_placement(&m, how, rank, placed, taken, sizes);
        if (end >= best) continue;
        best = end;
        for (int b = 0; b < m.count; b++) offsets[b] = m.buffers[b].offset;
      }
    } else { /* all conflict: stacked largest first, as every placement would end */
      rank_by_size(&m, rank, sizes);
      best = 0;
      for (int i = 0; i < m.count; i++) {
        offsets[rank[i]] = best;
        best += m.buffers[rank[i]].bytes;
      }
    }
    plan->workspace_bytes = m.count ? best : 0;
    plan->peak_live_bytes = m.peak;
    plan->intermediate_bytes = 0;
    for (int t = 0; t < plan->tensor_count; t++) {
      if (buffer_of[t] < 0) continue;
      plan->offset[t] = offsets[buffer_of[t]];
      plan->intermediate_bytes += aligned(plan->tensors[t].bytes);
    }
    plan->scratch_bytes = 0;
    for (int s = 0; s < plan->step_count; s++) {
      plm__step *step = &plan->steps[s];
      step->scratch_offset = 0;
      if (scratch_of[s] < 0) continue;
      step->scratch_offset = offsets[scratch_of[s]];
      plan->scratch_bytes += m.buffers[scratch_of[s]].bytes;
    }
  }
  free(buffer_of);
  free(scratch_of);
  free(rank);
  free(placed);
  free(taken);
  free(offsets);
  free(sizes);
  free(m.buffers);
  free(m.first_conflict);
  free(m.conflicts);
  return status;
}
