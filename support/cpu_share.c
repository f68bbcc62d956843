/* support/cpu_share.c: the others' share of this process's CPUs (support/cpu_share.h). */
#define _GNU_SOURCE /* sched_getaffinity */
#include "support/cpu_share.h"

#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "streams/file.h"
#include "support/count_parse.h"

/* The next space-separated decimal field after *text; *text moves past it. */
static bool next_field(const char **text, uint64_t *value) {
  const char *p = *text;
  while (*p == ' ') p++;
  if (!count_parse(p, &p, 0, UINT64_MAX, value) || (*p != ' ' && *p != '\n' && *p != '\0'))
    return false;
  *text = p;
  return true;
}

/* After a line's name: "user nice system idle iowait irq softirq steal [guest guest_nice]"
 * added to *busy and *total. */
static bool add_line(const char *p, uint64_t *busy, uint64_t *total) {
  enum { USER, NICE, SYSTEM, IDLE, IOWAIT, IRQ, SOFTIRQ, STEAL, FIELDS };
  uint64_t field[FIELDS];
  for (int k = 0; k < FIELDS; k++)
    if (!next_field(&p, &field[k])) return false;
  const uint64_t line_busy =
      field[USER] + field[NICE] + field[SYSTEM] + field[IRQ] + field[SOFTIRQ] + field[STEAL];
  *busy += line_busy;
  *total += line_busy + field[IDLE] + field[IOWAIT];
  return true;
}

/* The lines "cpu" (counted NULL) or "cpuN" of the CPUs counted. */
static bool machine_times(const char *proc_stat, const bool *counted, int cpu_count, uint64_t *busy,
                          uint64_t *total) {
  *busy = *total = 0;
  int lines = 0;
  for (const char *line = proc_stat; *line;) {
    const char *end = strchr(line, '\n');
    const char *p = line;
    uint64_t cpu = 0;
    bool take = false;
    if (strncmp(line, "cpu", 3) == 0) {
      p += 3;
      if (*p == ' ') /* the sum of all */
        take = !counted;
      else
        take = counted && count_parse(p, &p, 0, (uint64_t)cpu_count - 1, &cpu) && *p == ' ' &&
               counted[cpu];
    }
    if (take && !add_line(p, busy, total)) return false;
    lines += take;
    if (!end) break;
    line = end + 1;
  }
  return lines > 0;
}

/* "pid (comm) state ppid pgrp session tty_nr tpgid flags minflt cminflt majflt cmajflt
 * utime stime ...": comm may hold spaces and parentheses, so the fields start after the
 * last ')'. */
static bool own_time(const char *proc_self_stat, uint64_t *own) {
  enum { TPGID = 5, UTIME = 11, STIME = 12 }; /* counted from state, 0 */
  const char *p = strrchr(proc_self_stat, ')');
  if (!p || p[1] != ' ' || p[2] == '\0') return false;
  p += 3; /* past ") " and the one-letter state */
  if (*p != ' ') return false;
  uint64_t field[STIME + 1] = {0};
  for (int k = 1; k <= STIME; k++) {
    /* ppid .. tpgid are signed (tpgid is -1 without a terminal): a sign before digits. */
    while (*p == ' ') p++;
    if (*p == '-' && k <= TPGID && p[1] >= '0' && p[1] <= '9') p++;
    if (!next_field(&p, &field[k])) return false;
  }
  *own = field[UTIME] + field[STIME];
  return true;
}

bool cpu_times_parse(const char *proc_stat, const char *proc_self_stat, const bool *counted,
                     int cpu_count, cpu_times *out) {
  if (!proc_stat || !proc_self_stat || !out || (counted && cpu_count <= 0)) return false;
  cpu_times t;
  if (!machine_times(proc_stat, counted, cpu_count, &t.busy, &t.total) ||
      !own_time(proc_self_stat, &t.own))
    return false;
  *out = t;
  return true;
}

/* /proc/stat's "cpu" lines (they come first; the rest, "intr" above all, can be long). */
static char *cpu_lines(void) {
  char why[160];
  FILE *f = plm__file_open_regular("/proc/stat", PLM__FILE_READ, NULL, why, sizeof why);
  if (!f) return NULL;
  size_t size = 0, capacity = 4096;
  char *text = malloc(capacity), line[512];
  while (text && fgets(line, sizeof line, f) && strncmp(line, "cpu", 3) == 0) {
    const size_t n = strlen(line);
    if (size + n + 1 > capacity) {
      capacity *= 2;
      char *grown = realloc(text, capacity);
      if (!grown) {
        free(text);
        text = NULL;
        break;
      }
      text = grown;
    }
    memcpy(text + size, line, n + 1);
    size += n;
  }
  fclose(f);
  if (text && size == 0) {
    free(text);
    text = NULL;
  }
  return text;
}

bool cpu_times_now(cpu_times *out) {
  char own[1024];
  char why[160];
  FILE *f = plm__file_open_regular("/proc/self/stat", PLM__FILE_READ, NULL, why, sizeof why);
  if (!f) return false;
  const size_t n = fread(own, 1, sizeof own - 1, f);
  fclose(f);
  own[n] = '\0';
  char *machine = cpu_lines();
  if (!machine) return false;
  cpu_set_t mask;
  bool counted[CPU_SETSIZE];
  const bool affinity = sched_getaffinity(0, sizeof mask, &mask) == 0;
  for (int cpu = 0; cpu < CPU_SETSIZE; cpu++) counted[cpu] = affinity && CPU_ISSET(cpu, &mask);
  /* Without the affinity (or past CPU_SETSIZE CPUs): all of them, the summed line. */
  const bool parsed = cpu_times_parse(machine, own, affinity ? counted : NULL, CPU_SETSIZE, out);
  free(machine);
  return parsed;
}

double cpu_share_of_others(const cpu_times *before, const cpu_times *after) {
  if (after->total <= before->total) return 0.0;
  const double total = (double)(after->total - before->total);
  const double busy = (double)after->busy - (double)before->busy;
  const double own = (double)after->own - (double)before->own;
  const double share = (busy - own) / total;
  return share < 0.0 ? 0.0 : share > 1.0 ? 1.0 : share;
}
