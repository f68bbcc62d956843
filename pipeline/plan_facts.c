/* pipeline/plan_facts.c: what the passes ask of a built plan, without changing it: how many
 * steps read each tensor (fusion, memory placement) and whether one step happens before
 * another (the previous values' check, when a per-run intermediate may be freed). Declared in
 * pipeline_internal.h; nothing here calls a pass. */
#include <stdlib.h>

#include "pipeline/pipeline_internal.h"

int *plm__plan_readers(const plm__plan *plan) {
  int *readers = calloc((size_t)plan->tensor_count + 1, sizeof *readers);
  if (!readers) return NULL;
  for (int s = 0; s < plan->step_count; s++)
    for (int k = 0; k < PLM__PIPE_MAX_IO; k++) {
      const int t = plan->steps[s].inputs[k];
      bool again = false;
      for (int j = 0; j < k; j++) again |= plan->steps[s].inputs[j] == t;
      if (t >= 0 && !again) readers[t]++;
    }
  return readers;
}

bool plm__plan_happens_before(const plm__plan *plan, int u, int v) {
  if (u == v) return false;
  const plm__step *first = &plan->steps[u];
  return plan->clock[(size_t)v * PLM_PIPELINE_MAX_STREAMS + first->stream] >= first->position;
}
