/* tools/cpu_share.c: the others' share of the machine's CPU time (tools/cpu_share.h). */
#include "tools/cpu_share.h"

#include <stdio.h>
#include <string.h>

#include "tools/count_parse.h"

/* The next space-separated decimal field after *text; *text moves past it. */
static bool next_field(const char **text, uint64_t *value) {
  const char *p = *text;
  while (*p == ' ') p++;
  if (!count_parse(p, &p, 0, UINT64_MAX, value) || (*p != ' ' && *p != '\n' && *p != '\0'))
    return false;
  *text = p;
  return true;
}

/* "cpu  user nice system idle iowait irq softirq steal [guest guest_nice]" */
static bool machine_times(const char *proc_stat, uint64_t *busy, uint64_t *total) {
  enum { USER, NICE, SYSTEM, IDLE, IOWAIT, IRQ, SOFTIRQ, STEAL, FIELDS };
  if (strncmp(proc_stat, "cpu ", 4) != 0) return false;
  const char *p = proc_stat + 4;
  uint64_t field[FIELDS];
  for (int k = 0; k < FIELDS; k++)
    if (!next_field(&p, &field[k])) return false;
  *busy = field[USER] + field[NICE] + field[SYSTEM] + field[IRQ] + field[SOFTIRQ] + field[STEAL];
  *total = *busy + field[IDLE] + field[IOWAIT];
  return true;
}

/* "pid (comm) state ppid pgrp session tty_nr tpgid flags minflt cminflt majflt cmajflt
 * utime stime ...": comm may hold spaces and parentheses, so the fields start after the
 * last ')'. */
static bool own_time(const char *proc_self_stat, uint64_t *own) {
  enum { UTIME = 11, STIME = 12 }; /* counted from state, 0 */
  const char *p = strrchr(proc_self_stat, ')');
  if (!p || p[1] != ' ' || p[2] == '\0') return false;
  p += 3; /* past ") " and the one-letter state */
  if (*p != ' ') return false;
  uint64_t field[STIME + 1] = {0};
  for (int k = 1; k <= STIME; k++) {
    /* ppid .. tpgid may be -1 (tty_nr 0, tpgid -1 without a terminal): skip a sign. */
    while (*p == ' ') p++;
    if (*p == '-' && k < UTIME) p++;
    if (!next_field(&p, &field[k])) return false;
  }
  *own = field[UTIME] + field[STIME];
  return true;
}

bool cpu_times_parse(const char *proc_stat, const char *proc_self_stat, cpu_times *out) {
  if (!proc_stat || !proc_self_stat || !out) return false;
  cpu_times t;
  if (!machine_times(proc_stat, &t.busy, &t.total) || !own_time(proc_self_stat, &t.own))
    return false;
  *out = t;
  return true;
}

/* The start of a /proc file (a first line, or a whole short file) into text. */
static bool read_start(const char *path, char *text, size_t size) {
  FILE *f = fopen(path, "r");
  if (!f) return false;
  const size_t n = fread(text, 1, size - 1, f);
  fclose(f);
  text[n] = '\0';
  return n > 0;
}

bool cpu_times_now(cpu_times *out) {
  char machine[1024], own[1024];
  return read_start("/proc/stat", machine, sizeof machine) &&
         read_start("/proc/self/stat", own, sizeof own) && cpu_times_parse(machine, own, out);
}

double cpu_share_of_others(const cpu_times *before, const cpu_times *after) {
  if (after->total <= before->total) return 0.0;
  const double total = (double)(after->total - before->total);
  const double busy = (double)after->busy - (double)before->busy;
  const double own = (double)after->own - (double)before->own;
  const double share = (busy - own) / total;
  return share < 0.0 ? 0.0 : share > 1.0 ? 1.0 : share;
}
