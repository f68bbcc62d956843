/* emu/count/emu_count.h: the CUDA emulator's counters of memory traffic, and the emulated
 * cost they give (C API; only a -DPLUME_CUDA=EMU build has it).
 *
 * What is counted. Every global and shared access of every lane already comes to the
 * emulator's hooks (emu/check/hooks.cpp). While counting is on, each access of a kernel's
 * lane to registered device memory (cudaMalloc, a memory pool, a mapping) or to its
 * block's shared memory is recorded, and grouped as a GPU issues it: the k-th execution
 * of one access site (the instrumented access's code address and its size) by the lanes
 * of one warp is one warp request. Lanes are fibres, not lockstep, so the grouping is by
 * what each lane did, not by when; a block's barrier ends the grouping (the k counts start
 * again after it), as the warps reconverge there. For each launch:
 *   - global loads and stores: requests, bytes the lanes asked for, and the 32-byte
 *     sectors each request touches (coalescing: 4 per request for 32 lanes reading
 *     consecutive floats, 32 for a stride of 32 floats);
 *   - distinct sectors the launch touched (a lower bound on its DRAM traffic), and the
 *     sectors a 50 MB L2 would fetch again: an LRU of 32-byte sectors, empty when the
 *     launch starts, fed in the order the emulator ran the blocks (not a GPU's order);
 *   - shared memory: requests and wavefronts, 32 banks of 4 bytes: a request takes as many
 *     wavefronts as the most distinct words any one bank must deliver (lanes reading one
 *     word share it: a broadcast is 1), so the replay factor is wavefronts / requests;
 *   - atomics, global and shared: requests, lanes' operations, and their serialisation:
 *     each request costs as many steps as the most lanes that hit one address; for global
 *     atomics also the most operations of the launch on any one address;
 *   - block barriers released (summed over blocks), and warp collectives with the lanes
 *     each one named; of them, the shuffles as the 32-bit SHFL instructions a GPU issues
 *     (a double's shuffle is two), which the estimate charges to the shared-memory pipe.
 * Off by default; free when off (one test of a pointer per access). On through these
 * calls, or for a whole process with PLUME_EMU_COUNT=1 (emu/config.h), which prints the
 * text report on stderr when the process exits.
 *
 * Sections. Launches are counted into the section open when they run: a name the caller
 * gives (an op call, a pipeline frame). Open one, enqueue the work, synchronise, close it.
 *
 * Thread safety: every call may come from any thread; sections are global to the process. */
#ifndef PLUME_EMU_COUNT_EMU_COUNT_H
#define PLUME_EMU_COUNT_EMU_COUNT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The counters of one launch, or the sum over several (then global_atomic_hottest is the
 * largest of theirs). */
struct plm_emu_counts {
  uint64_t launches, blocks, threads;
  uint64_t load_requests, load_bytes, load_sectors;    /* global loads */
  uint64_t store_requests, store_bytes, store_sectors; /* global stores */
  uint64_t distinct_sectors;  /* 32-byte sectors each launch touched (summed over launches) */
  uint64_t l2_refetch_sectors; /* sectors a 50 MB LRU L2 fetched again within a launch */
  uint64_t shared_requests, shared_wavefronts;
  uint64_t global_atomic_requests, global_atomic_ops, global_atomic_steps, global_atomic_hottest;
  uint64_t shared_atomic_requests, shared_atomic_ops, shared_atomic_steps;
  uint64_t barriers;                       /* __syncthreads released, summed over blocks */
  uint64_t collectives, collective_lanes;  /* warp collectives and the lanes they named */
  uint64_t shuffles; /* 32-bit shuffle instructions (warp-wide), among the collectives */
};

/* A device's figures for the estimate (emu/count/report.cpp has the table and sources). */
struct plm_emu_device_model {
  const char *name;
  double dram_bytes_per_s, l2_bytes_per_s, l2_bytes;
  int sms;
  double clock_hz;
  double shared_wavefronts_per_clock_per_sm; /* 32 banks x 4 bytes: one wavefront a clock;
                                                a shuffle instruction takes one such clock */
  double global_atomic_steps_per_clock;      /* assumed: see the table */
  double launch_s, graph_node_s;
};

/* The estimate of some counted work on a device: each bound in seconds, the largest, the
 * launch overhead, and the floor (distinct sectors' bytes over DRAM bandwidth). */
struct plm_emu_estimate {
  double dram_s, l2_s, shared_s, atomics_s;
  double bound_s;          /* the largest of the four */
  const char *bound;       /* "dram", "l2", "shared", "atomics" */
  double launch_s;         /* launches x the device's launch cost */
  double estimate_s;       /* bound_s + launch_s */
  double graph_estimate_s; /* bound_s + launches x the graph-node cost */
  double floor_s;          /* distinct sectors x 32 bytes / DRAM bandwidth */
};

/* The device named ("H100" or "H100 SXM", "H200"; case does not matter), or NULL. */
const struct plm_emu_device_model *plm_emu_device_model_find(const char *name);

/* Open a section named `label` (copied): launches that run from now until
 * plm_emu_count_end are counted into it. A label used before adds to that section.
 * Returns 0, or -1 (label NULL or empty, or a section already open; message on stderr). */
int plm_emu_count_begin(const char *label);
/* Close the open section (nothing if none is open). */
void plm_emu_count_end(void);
/* The L2 the counts model for launches that start after the call: `bytes` (at least 32)
 * of 32-byte sectors, fully associative, least recently used out. Default 50 MB (an H100's
 * and an H200's). Returns 0, or -1 (message on stderr). */
int plm_emu_count_set_l2_bytes(size_t bytes);

/* Forget every section (after synchronising: a launch still running is dropped). Nothing
 * while a section is open (message on stderr). */
void plm_emu_count_clear(void);

/* The sum of the launches of `kernel` (as named at its launch; NULL: every kernel) in
 * section `label`: the number of launches (0 when none; counts zeroed). */
uint64_t plm_emu_count_get(const char *label, const char *kernel, struct plm_emu_counts *out);

/* The estimate of `counts` on `device`, launch by launch being what the report does;
 * this one treats the counts as one launch's (counts->launches launches of overhead). */
void plm_emu_count_estimate(const struct plm_emu_counts *counts,
                            const struct plm_emu_device_model *device,
                            struct plm_emu_estimate *out);

/* Write the report of every section, per kernel and per section, estimated for `device`:
 * as text to `text` (may be NULL) and as JSON to the file `json_path` (may be NULL;
 * written to json_path.tmp, then renamed: whole or not at all).
 * Returns 0, or -1 (unknown device, a file that cannot be written; message on stderr). */
int plm_emu_count_report(const char *device, FILE *text, const char *json_path);

#ifdef __cplusplus
}
#endif

#endif /* PLUME_EMU_COUNT_EMU_COUNT_H */
