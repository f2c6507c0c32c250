/* The CPU quota of the process's control group (Linux) or job object
 * (Windows), so that cpu_threads = 0 starts no more workers than a
 * container may run at once (docker --cpus, a Kubernetes CPU limit): CPU
 * affinity does not show such a quota. */
#ifndef PLEAT_CPU_QUOTA_H
#define PLEAT_CPU_QUOTA_H

#include <stdint.h>

/* The quota in whole cores, rounded up. Linux: the smallest of the limits
 * of the process's cgroup and of every cgroup above it up to the
 * hierarchy's mount, in cgroup v2 (cpu.max) and in v1's cpu controller
 * (cpu.cfs_quota_us / cpu.cfs_period_us); root is put in front of every
 * path read: "" reads the system's, a test gives a folder laid out as / is.
 * Windows: the hard CPU rate cap of the process's job
 * (pleat_cpu_rate_cores; root unused). 0 when there is none or it cannot
 * be read (no cgroup mounted, a path too long, in no job, another system).
 * Allocates nothing. */
int pleat_cpu_quota_cores(const char *root);

/* A Windows job's CPU rate control as whole cores of `processors`, rounded
 * up: flags and rate are JOBOBJECT_CPU_RATE_CONTROL_INFORMATION's
 * ControlFlags and its CpuRate word (MinRate and MaxRate, with
 * MIN_MAX_RATE). A hard cap (HARD_CAP: CpuRate; MIN_MAX_RATE: MaxRate)
 * counts; a weight or a soft rate sets no limit (0). On every system, so
 * that the tests can check it. */
int pleat_cpu_rate_cores(uint32_t flags, uint32_t rate, uint32_t processors);

#endif
