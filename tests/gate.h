/* tests/gate.h: a one-shot gate for holding a stream's worker in a test.
 *
 * gate_wait_task (as a host callback) blocks its stream until the test opens the
 * gate, or until a deadline passes, so that a broken backend makes the test fail
 * instead of hang. A gate records whether its waiter timed out.
 */
#ifndef PLUME_TESTS_GATE_H
#define PLUME_TESTS_GATE_H

#include <pthread.h>
#include <stdbool.h>
#include <time.h>

typedef struct gate {
  pthread_mutex_t lock;
  pthread_cond_t changed;
  bool open;
  bool timed_out;
  double timeout_ms;
} gate;

static inline void gate_init(gate *g, double timeout_ms) {
  pthread_mutex_init(&g->lock, NULL);
  pthread_cond_init(&g->changed, NULL);
  g->open = false;
  g->timed_out = false;
  g->timeout_ms = timeout_ms;
}

static inline void gate_destroy(gate *g) {
  pthread_cond_destroy(&g->changed);
  pthread_mutex_destroy(&g->lock);
}

static inline void gate_open(gate *g) {
  pthread_mutex_lock(&g->lock);
  g->open = true;
  pthread_cond_broadcast(&g->changed);
  pthread_mutex_unlock(&g->lock);
}

/* Wait until the gate opens; false when the deadline passed first. */
static inline bool gate_wait(gate *g) {
  struct timespec deadline;
  clock_gettime(CLOCK_REALTIME, &deadline);
  long long ns = (long long)deadline.tv_nsec + (long long)(g->timeout_ms * 1e6);
  deadline.tv_sec += (time_t)(ns / 1000000000LL);
  deadline.tv_nsec = (long)(ns % 1000000000LL);
  pthread_mutex_lock(&g->lock);
  while (!g->open && !g->timed_out) {
    if (pthread_cond_timedwait(&g->changed, &g->lock, &deadline) != 0) g->timed_out = !g->open;
  }
  bool opened = g->open;
  pthread_mutex_unlock(&g->lock);
  return opened;
}

/* A plm_host_fn: wait at the gate given as user. */
static inline void gate_wait_task(void *user) {
  (void)gate_wait((gate *)user);
}

#endif /* PLUME_TESTS_GATE_H */
