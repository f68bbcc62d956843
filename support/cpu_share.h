/* support/cpu_share.h: how much of the machine's CPU time other processes took while this
 * one measured (internal to the tools): `plume tune`'s check that its times, which become
 * the tuning table and the placement model's points, were not measured on a busy machine.
 *
 * From Linux's /proc. The machine's time is that of the CPUs this process may run on (its
 * affinity, sched_getaffinity: a container's cpuset), the "cpuN" lines of /proc/stat
 * summed: busy is user + nice + system + irq + softirq + steal (steal: a virtual
 * machine's time its host gave to other guests), idle is idle + iowait; guest time is
 * already inside user and guest_nice inside nice, so neither is read. This process's time
 * is utime + stime of /proc/self/stat (all its threads: the host backend's workers too).
 * Both count clock ticks. Over an interval, the others' share is
 *
 *     (delta busy - delta own) / delta (busy + idle),   clamped to 0..1,
 *
 * the fraction of those CPUs' time that went to something else: 0.5 on a 2-core machine
 * is one core kept busy elsewhere the whole time. The two files are sampled a few
 * microseconds apart and count ticks separately, so a short interval (under a second or
 * so) is only good to a few ticks. A CPU quota (a container's cpu.max) is not seen: its
 * throttling shows as neither busy nor own time.
 *
 * Parsing is separate from reading so that tests give fixed texts
 * (tests/test_cpu_share.c). Reentrant; a failure leaves *out as it was. */
#ifndef PLUME_SUPPORT_CPU_SHARE_H
#define PLUME_SUPPORT_CPU_SHARE_H

#include <stdbool.h>
#include <stdint.h>

typedef struct cpu_times {
  uint64_t busy;  /* the busy ticks of the CPUs counted */
  uint64_t total; /* their busy + idle ticks */
  uint64_t own;   /* this process's ticks (user + system) */
} cpu_times;

/* From the texts of /proc/stat and /proc/self/stat, counting the lines "cpuN" for which
 * N < cpu_count and counted[N] is true (counted NULL: the summed line "cpu", all CPUs);
 * false when either text is not in the format above (a missing field, a number that is
 * not one) or no CPU counted has a line. */
bool cpu_times_parse(const char *proc_stat, const char *proc_self_stat, const bool *counted,
                     int cpu_count, cpu_times *out);

/* Read them now, over this process's CPUs; false where /proc cannot be read (not Linux,
 * a sandbox without it). */
bool cpu_times_now(cpu_times *out);

/* The others' share between two readings (before, then after), 0..1; 0 when no tick
 * passed. */
double cpu_share_of_others(const cpu_times *before, const cpu_times *after);

#endif /* PLUME_SUPPORT_CPU_SHARE_H */
