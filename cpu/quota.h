/* The CPU quota of the process's control group, so that cpu_threads = 0
 * starts no more workers than a container may run at once (docker --cpus,
 * a Kubernetes CPU limit): CPU affinity does not show such a quota. */
#ifndef PLEAT_CPU_QUOTA_H
#define PLEAT_CPU_QUOTA_H

/* The quota in whole cores, rounded up: the smallest of the limits of the
 * process's cgroup and of every cgroup above it up to the hierarchy's
 * mount, in cgroup v2 (cpu.max) and in v1's cpu controller
 * (cpu.cfs_quota_us / cpu.cfs_period_us). 0 when there is none or it cannot
 * be read (not Linux, no cgroup mounted, a path too long). root is put in
 * front of every path read: "" reads the system's, a test gives a folder
 * laid out as / is. Allocates nothing. */
int pleat_cpu_quota_cores(const char *root);

#endif
