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
  bool *conflict; /* count x count */
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

/* A step may write outputs[0] over inputs[0] when its op allows that (the output slot's
 * in_place, ops/op_desc.h: threshold, vector_add), both are intermediates of the same bytes
 * (threshold: u8 in, u8 out), and no other step reads the input. */
static bool in_place_allowed(const plm__plan *plan, const plm__step *step) {
  if (!(plm__op_get(step->kind)->outputs[0].in_place & 1u)) return false;
  int in = step->inputs[0], out = step->outputs[0];
  if (in < 0 || out < 0 || plan->location[in] != PLM__AT_WORKSPACE ||
      plan->location[out] != PLM__AT_WORKSPACE ||
      plan->tensors[in].bytes != plan->tensors[out].bytes)
    return false;
  for (int s = 0; s < plan->step_count; s++) {
    const plm__step *other = &plan->steps[s];
    if (other != step && plm__step_reads(other, in)) return false;
  }
  return true;
}

static void use(buffer *b, const plm__step *step, int index) {
  if (index > b->last) b->last = index;
  if (step->position > b->last_position[step->stream])
    b->last_position[step->stream] = step->position;
}

/* The buffers, their uses and conflicts; buffer_of[t] for every workspace tensor and
 * scratch_of[s] for every step (-1: none). */
static plm_status make_buffers(plm__plan *plan, bool reuse, memory *m, int *buffer_of,
                               int *scratch_of) {
  m->buffers =
      calloc((size_t)plan->tensor_count + (size_t)plan->step_count + 1, sizeof *m->buffers);
  if (!m->buffers) return plm__fail_raw(PLM_ERR_OUT_OF_MEMORY, "no host memory for the plan");
  for (int t = 0; t < plan->tensor_count; t++) buffer_of[t] = -1;
  plan->in_place = 0;
  for (int s = 0; s < plan->step_count; s++) {
    plm__step *step = &plan->steps[s];
    step->in_place = reuse && in_place_allowed(plan, step);
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
  m->conflict = calloc((size_t)m->count * (size_t)m->count + 1, sizeof *m->conflict);
  if (!m->conflict) return plm__fail_raw(PLM_ERR_OUT_OF_MEMORY, "no host memory for the plan");
  for (int a = 0; a < m->count; a++)
    for (int b = 0; b < m->count; b++)
      m->conflict[(size_t)a * (size_t)m->count + (size_t)b] =
          a != b && (!reuse || !(before(plan, &m->buffers[a], &m->buffers[b]) ||
                                 before(plan, &m->buffers[b], &m->buffers[a])));
  /* The peak of live bytes in plan order. */
  m->peak = 0;
  for (int s = 0; s < plan->step_count; s++) {
    size_t live = 0;
    for (int b = 0; b < m->count; b++)
      if (m->buffers[b].def <= s && s <= m->buffers[b].last) live += m->buffers[b].bytes;
    if (live > m->peak) m->peak = live;
  }
  return PLM_OK;
}

typedef struct interval {
  size_t begin, end;
} interval;

/* The offset for buffer b among the placed buffers it conflicts with: the best-fitting
 * gap (best_fit), else the lowest gap; with `high`, the highest room ending at or below
 * limit when there is one. `taken` is scratch for count intervals. */
static size_t place(const memory *m, int b, const bool *placed, bool best_fit, bool high,
                    size_t limit, interval *taken) {
  int n = 0;
  for (int o = 0; o < m->count; o++)
    if (placed[o] && m->conflict[(size_t)b * (size_t)m->count + (size_t)o])
      taken[n++] = (interval){m->buffers[o].offset, m->buffers[o].offset + m->buffers[o].bytes};
  for (int i = 1; i < n; i++) /* by begin; n is small */
    for (int j = i; j > 0 && taken[j].begin < taken[j - 1].begin; j--) {
      interval swap = taken[j];
      taken[j] = taken[j - 1];
      taken[j - 1] = swap;
    }
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

/* Place every buffer with one placement; returns the workspace it needs. */
static size_t run_placement(memory *m, placement how, int *rank, bool *placed, interval *taken) {
  for (int b = 0; b < m->count; b++) {
    rank[b] = b; /* buffers are numbered by first write already */
    placed[b] = false;
  }
  if (how == BY_SIZE)
    for (int i = 1; i < m->count; i++)
      for (int j = i; j > 0 && m->buffers[rank[j]].bytes > m->buffers[rank[j - 1]].bytes; j--) {
        int swap = rank[j];
        rank[j] = rank[j - 1];
        rank[j - 1] = swap;
      }
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
  if (status == PLM_OK && (!rank || !placed || !taken || !offsets))
    status = plm__fail_raw(PLM_ERR_OUT_OF_MEMORY, "no host memory for the plan");
  if (status == PLM_OK) {
    size_t best = SIZE_MAX;
    for (placement how = BY_SIZE; how < PLACEMENTS; how++) {
      size_t end = run_placement(&m, how, rank, placed, taken);
      if (end >= best) continue;
      best = end;
      for (int b = 0; b < m.count; b++) offsets[b] = m.buffers[b].offset;
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
  free(m.buffers);
  free(m.conflict);
  return status;
}
