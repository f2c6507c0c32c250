/*
 * The cgroup CPU quota that cpu_threads = 0 counts (cpu/quota.c), read from
 * folders laid out as a Linux root is: /proc/self/cgroup,
 * /proc/self/mountinfo and the cgroup files, in the layouts docker,
 * Kubernetes and systemd make with cgroup v2, v1 and both. Each expected
 * count is worked out by hand from the files the test writes.
 */
#define _GNU_SOURCE /* sched_getaffinity */
#include <criterion/criterion.h>
#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cpu/quota.h"
#include "cpu/thread.h"

static char root[64];

static void make_root(void)
{
    strcpy(root, "/tmp/pleat-cores-XXXXXX");
    cr_assert(mkdtemp(root), "mkdtemp: %s", strerror(errno));
}

static void remove_root(void)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
    cr_assert(system(cmd) == 0);
}

/* Writes text to root/path, making the folders on the way. */
static void put(const char *path, const char *text)
{
    char full[1024];
    snprintf(full, sizeof full, "%s/%s", root, path);
    char *slash = full + strlen(root);
    while ((slash = strchr(slash + 1, '/'))) {
        *slash = '\0';
        cr_assert(mkdir(full, 0755) == 0 || errno == EEXIST, "mkdir %s: %s", full, strerror(errno));
        *slash = '/';
    }
    FILE *f = fopen(full, "w");
    cr_assert(f, "%s: %s", full, strerror(errno));
    cr_assert(fputs(text, f) >= 0);
    cr_assert(fclose(f) == 0);
}

TestSuite(cores, .init = make_root, .fini = remove_root);

/* A mountinfo line for a cgroup mount. */
#define V2_MOUNT(root, at) "30 24 0:26 " root " " at " rw,nosuid - cgroup2 cgroup2 rw,nsdelegate\n"
#define V1_MOUNT(root, at, ctl)                                                                    \
    "35 25 0:30 " root " " at " rw,relatime shared:14 - cgroup cgroup rw," ctl "\n"
#define OTHER_MOUNTS                                                                               \
    "22 1 8:1 / / rw,relatime - ext4 /dev/sda1 rw\n"                                               \
    "23 22 0:5 / /proc rw,nosuid - proc proc rw\n"

Test(cores, a_v2_container_with_a_fractional_limit_rounds_up)
{
    put("proc/self/cgroup", "0::/\n");
    put("proc/self/mountinfo", OTHER_MOUNTS V2_MOUNT("/", "/sys/fs/cgroup"));
    put("sys/fs/cgroup/cpu.max", "150000 100000\n");
    cr_expect_eq(pleat_cpu_quota_cores(root), 2);
    put("sys/fs/cgroup/cpu.max", "200000 100000\n");
    cr_expect_eq(pleat_cpu_quota_cores(root), 2);
    put("sys/fs/cgroup/cpu.max", "50000 100000\n");
    cr_expect_eq(pleat_cpu_quota_cores(root), 1, "half a core is one thread");
    put("sys/fs/cgroup/cpu.max", "1 1000000\n");
    cr_expect_eq(pleat_cpu_quota_cores(root), 1);
}

Test(cores, a_v2_limit_of_max_is_none)
{
    put("proc/self/cgroup", "0::/\n");
    put("proc/self/mountinfo", V2_MOUNT("/", "/sys/fs/cgroup"));
    put("sys/fs/cgroup/cpu.max", "max 100000\n");
    cr_expect_eq(pleat_cpu_quota_cores(root), 0);
}

/* systemd on the host: the process's cgroup is a few levels down, and the
 * tightest limit is on a slice above it. */
Test(cores, v2_limits_bind_from_every_level_up_to_the_mount)
{
    put("proc/self/cgroup", "0::/user.slice/app.slice/job.scope\n");
    put("proc/self/mountinfo", V2_MOUNT("/", "/sys/fs/cgroup"));
    put("sys/fs/cgroup/cpu.max", "max 100000\n");
    put("sys/fs/cgroup/user.slice/cpu.max", "800000 100000\n");
    put("sys/fs/cgroup/user.slice/app.slice/cpu.max", "300000 100000\n");
    put("sys/fs/cgroup/user.slice/app.slice/job.scope/cpu.max", "max 100000\n");
    cr_expect_eq(pleat_cpu_quota_cores(root), 3);
    put("sys/fs/cgroup/user.slice/app.slice/job.scope/cpu.max", "25000 10000\n");
    cr_expect_eq(pleat_cpu_quota_cores(root), 3, "2.5 cores, rounded up");
    put("sys/fs/cgroup/user.slice/app.slice/job.scope/cpu.max", "5000 10000\n");
    cr_expect_eq(pleat_cpu_quota_cores(root), 1);
    put("sys/fs/cgroup/cpu.max", "100 1000\n");
    cr_expect_eq(pleat_cpu_quota_cores(root), 1, "the top one binds too");
}

/* Docker on cgroup v1 without a cgroup namespace: the mount shows the
 * container's own cgroup at its top. */
Test(cores, a_v1_container_reads_its_cgroup_at_the_mount_point)
{
    put("proc/self/cgroup", "12:pids:/docker/abc\n"
                            "5:cpuset:/docker/abc\n"
                            "4:cpu,cpuacct:/docker/abc\n"
                            "1:name=systemd:/docker/abc\n");
    put("proc/self/mountinfo",
        OTHER_MOUNTS V1_MOUNT("/docker/abc", "/sys/fs/cgroup/cpuset", "cpuset")
            V1_MOUNT("/docker/abc", "/sys/fs/cgroup/cpu,cpuacct", "cpu,cpuacct"));
    put("sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us", "300000\n");
    put("sys/fs/cgroup/cpu,cpuacct/cpu.cfs_period_us", "100000\n");
    cr_expect_eq(pleat_cpu_quota_cores(root), 3);
    /* the host's whole hierarchy bound in too: the last mount that shows
     * the cgroup counts, here with a limit on the cgroup above */
    put("proc/self/mountinfo",
        OTHER_MOUNTS V1_MOUNT("/docker/abc", "/sys/fs/cgroup/cpu,cpuacct", "cpu,cpuacct")
            V1_MOUNT("/", "/host/cpu", "cpu,cpuacct"));
    put("host/cpu/docker/abc/cpu.cfs_quota_us", "300000\n");
    put("host/cpu/docker/abc/cpu.cfs_period_us", "100000\n");
    put("host/cpu/docker/cpu.cfs_quota_us", "200000\n");
    put("host/cpu/docker/cpu.cfs_period_us", "100000\n");
    cr_expect_eq(pleat_cpu_quota_cores(root), 2);
    put("proc/self/mountinfo",
        OTHER_MOUNTS V1_MOUNT("/docker/abc", "/sys/fs/cgroup/cpu,cpuacct", "cpu,cpuacct"));
    put("sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us", "-1\n");
    cr_expect_eq(pleat_cpu_quota_cores(root), 0, "-1 is no quota");
}

/* The cpu controller alone, listed after cpuacct, with cpuset beside it:
 * only the "cpu" item counts. */
Test(cores, the_v1_cpu_controller_is_found_among_the_others)
{
    put("proc/self/cgroup", "3:cpuset:/a\n2:cpuacct,cpu:/a/b\n");
    put("proc/self/mountinfo", V1_MOUNT("/", "/cg/cpuset", "cpuset")
                                   V1_MOUNT("/", "/cg/cpu", "cpuacct,cpu"));
    put("cg/cpuset/a/cpu.cfs_quota_us", "100000\n");
    put("cg/cpuset/a/cpu.cfs_period_us", "100000\n");
    put("cg/cpu/a/b/cpu.cfs_quota_us", "-1\n");
    put("cg/cpu/a/b/cpu.cfs_period_us", "100000\n");
    put("cg/cpu/a/cpu.cfs_quota_us", "700000\n");
    put("cg/cpu/a/cpu.cfs_period_us", "100000\n");
    cr_expect_eq(pleat_cpu_quota_cores(root), 7);
}

/* Hybrid: v1 holds the cpu controller, v2 is mounted beside it without it;
 * with a limit in both, the smaller binds. A v1 mount of another
 * controller is neither. */
Test(cores, with_v1_and_v2_both_mounted_the_smaller_limit_binds)
{
    put("proc/self/cgroup", "4:cpu:/job\n3:cpuset:/job\n0::/job\n");
    put("proc/self/mountinfo", V1_MOUNT("/", "/sys/fs/cgroup/cpu", "cpu") V2_MOUNT(
                                   "/", "/sys/fs/cgroup/unified") V1_MOUNT("/", "/cs", "cpuset"));
    put("cs/job/cpu.max", "100000 100000\n");
    put("cs/job/cpu.cfs_quota_us", "100000\n");
    put("cs/job/cpu.cfs_period_us", "100000\n");
    put("sys/fs/cgroup/cpu/job/cpu.cfs_quota_us", "400000\n");
    put("sys/fs/cgroup/cpu/job/cpu.cfs_period_us", "100000\n");
    put("sys/fs/cgroup/unified/job/cgroup.procs", "1\n");
    cr_expect_eq(pleat_cpu_quota_cores(root), 4);
    put("sys/fs/cgroup/unified/job/cpu.max", "600000 100000\n");
    cr_expect_eq(pleat_cpu_quota_cores(root), 4);
    put("sys/fs/cgroup/unified/job/cpu.max", "200000 100000\n");
    cr_expect_eq(pleat_cpu_quota_cores(root), 2);
}

/* mountinfo writes a space in a path as \040; /proc/self/cgroup writes a
 * path as it is, colons included. */
Test(cores, escaped_mount_paths_and_colons_in_paths_are_read)
{
    put("proc/self/cgroup", "0::/my job:1\n");
    put("proc/self/mountinfo", V2_MOUNT("/", "/cgroup\\040fs"));
    put("cgroup fs/my job:1/cpu.max", "200000 100000\n");
    cr_expect_eq(pleat_cpu_quota_cores(root), 2);
}

/* Kubernetes with the systemd driver, seen from the host (no cgroup
 * namespace): the pod's slice holds the limit of 2.5 cores. */
Test(cores, a_kubernetes_pod_limit_binds_its_containers)
{
    const char *pod = "sys/fs/cgroup/kubepods.slice/kubepods-burstable.slice/"
                      "kubepods-burstable-pod1a2b_3c4d.slice";
    put("proc/self/cgroup", "0::/kubepods.slice/kubepods-burstable.slice/"
                            "kubepods-burstable-pod1a2b_3c4d.slice/cri-containerd-9f8e.scope\n");
    put("proc/self/mountinfo", OTHER_MOUNTS V2_MOUNT("/", "/sys/fs/cgroup"));
    char path[512];
    snprintf(path, sizeof path, "%s/cpu.max", pod);
    put(path, "250000 100000\n");
    snprintf(path, sizeof path, "%s/cri-containerd-9f8e.scope/cpu.max", pod);
    put(path, "max 100000\n");
    put("sys/fs/cgroup/kubepods.slice/cpu.max", "max 100000\n");
    cr_expect_eq(pleat_cpu_quota_cores(root), 3);
}

/* Two mounts of the hierarchy on one point: the later hides the earlier,
 * and its root is where the folders start. */
Test(cores, a_later_mount_on_the_same_point_hides_the_earlier)
{
    put("proc/self/cgroup", "4:cpu,cpuacct:/docker/abc\n");
    put("proc/self/mountinfo", V1_MOUNT("/", "/sys/fs/cgroup/cpu", "cpu,cpuacct")
                                   V1_MOUNT("/docker/abc", "/sys/fs/cgroup/cpu", "cpu,cpuacct"));
    put("sys/fs/cgroup/cpu/cpu.cfs_quota_us", "200000\n");
    put("sys/fs/cgroup/cpu/cpu.cfs_period_us", "100000\n");
    put("sys/fs/cgroup/cpu/docker/abc/cpu.cfs_quota_us", "600000\n");
    put("sys/fs/cgroup/cpu/docker/abc/cpu.cfs_period_us", "100000\n");
    cr_expect_eq(pleat_cpu_quota_cores(root), 2);
    put("proc/self/mountinfo", V1_MOUNT("/docker/abc", "/sys/fs/cgroup/cpu", "cpu,cpuacct")
                                   V1_MOUNT("/", "/sys/fs/cgroup/cpu", "cpu,cpuacct"));
    put("sys/fs/cgroup/cpu/cpu.cfs_quota_us", "-1\n");
    cr_expect_eq(pleat_cpu_quota_cores(root), 6);
}

/* A mount whose root does not hold the process's cgroup shows other
 * cgroups: "/ab" is not under "/a". And a cgroup outside the process's
 * cgroup namespace ("/../x", as after nsenter) has no folder in its mounts. */
Test(cores, cgroups_no_mount_shows_have_no_limit)
{
    put("proc/self/cgroup", "0::/ab/c\n");
    put("proc/self/mountinfo", V2_MOUNT("/a", "/sys/fs/cgroup"));
    put("sys/fs/cgroup/cpu.max", "500000 100000\n");
    put("sys/fs/cgroup/c/cpu.max", "100000 100000\n");
    put("sys/fs/cgroup/ab/c/cpu.max", "100000 100000\n");
    cr_expect_eq(pleat_cpu_quota_cores(root), 0);
    put("proc/self/cgroup", "0::/../out\n");
    put("proc/self/mountinfo", V2_MOUNT("/", "/sys/fs/cgroup"));
    put("sys/fs/cgroup/out/cpu.max", "100000 100000\n");
    put("out/cpu.max", "100000 100000\n");
    cr_expect_eq(pleat_cpu_quota_cores(root), 0);
    put("proc/self/cgroup", "0::/..x\n"); /* a name that starts with two dots */
    put("sys/fs/cgroup/..x/cpu.max", "300000 100000\n");
    cr_expect_eq(pleat_cpu_quota_cores(root), 3);
}

Test(cores, unreadable_or_malformed_files_mean_no_quota)
{
    cr_expect_eq(pleat_cpu_quota_cores(root), 0, "no /proc");
    put("proc/self/cgroup", "0::/\n");
    cr_expect_eq(pleat_cpu_quota_cores(root), 0, "no mountinfo");
    put("proc/self/mountinfo", OTHER_MOUNTS);
    cr_expect_eq(pleat_cpu_quota_cores(root), 0, "no cgroup mount");
    put("proc/self/mountinfo", V2_MOUNT("/", "/sys/fs/cgroup"));
    cr_expect_eq(pleat_cpu_quota_cores(root), 0, "no cpu.max");
    const char *bad[] = {"",           "abc 100000\n",     "100000\n",
                         "100000 abc\n", "100000 0\n",       "100000x100000\n",
                         "0 100000\n",   "-5 100000\n",      "100000  100000\n",
                         "99999999999999999999999 1\n"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; ++i) {
        put("sys/fs/cgroup/cpu.max", bad[i]);
        cr_expect_eq(pleat_cpu_quota_cores(root), 0, "cpu.max \"%s\"", bad[i]);
    }
    put("proc/self/mountinfo", "30 24 0:26 / /sys/fs/cgroup rw - cgroup2\n");
    put("sys/fs/cgroup/cpu.max", "100000 100000\n");
    cr_expect_eq(pleat_cpu_quota_cores(root), 0, "a mount line cut short");
}

Test(cores, a_huge_quota_is_capped_not_wrapped)
{
    put("proc/self/cgroup", "0::/\n");
    put("proc/self/mountinfo", V2_MOUNT("/", "/sys/fs/cgroup"));
    put("sys/fs/cgroup/cpu.max", "18446744073709551615 1\n");
    cr_expect_eq(pleat_cpu_quota_cores(root), INT_MAX);
    put("sys/fs/cgroup/cpu.max", "18446744073709551615 18446744073709551615\n");
    cr_expect_eq(pleat_cpu_quota_cores(root), 1);
}

/* Lines longer than the reader's 1 KiB buffer are skipped, not cut: a long
 * overlay mount line before the cgroup one, whose part past the first 1023
 * bytes reads as a cgroup mount, and the cgroup line last without a
 * newline. */
Test(cores, long_lines_are_skipped_and_the_last_line_needs_no_newline)
{
    char mounts[8192] = "22 1 0:40 / / rw - overlay overlay rw,lowerdir=";
    size_t n = strlen(mounts);
    memset(mounts + n, 'x', 1023 - n);
    strcpy(mounts + 1023, V2_MOUNT("/", "/elsewhere") V2_MOUNT("/", "/sys/fs/cgroup"));
    put("elsewhere/cpu.max", "100000 100000\n");
    mounts[strlen(mounts) - 1] = '\0';
    put("proc/self/cgroup", "0::/\n");
    put("proc/self/mountinfo", mounts);
    put("sys/fs/cgroup/cpu.max", "300000 100000");
    cr_expect_eq(pleat_cpu_quota_cores(root), 3);
    /* a cgroup path past the reader's 512 bytes: unreadable, so none */
    char cgroup[700] = "0::/";
    memset(cgroup + 4, 'a', 600);
    put("proc/self/cgroup", cgroup);
    cr_expect_eq(pleat_cpu_quota_cores(root), 0);
}

/* The process's own count: its affinity, or the quota where that is
 * fewer. */
Test(cores, usable_cores_are_the_affinity_within_the_quota)
{
    cpu_set_t *set = CPU_ALLOC(8192); /* as many CPUs as Linux supports */
    size_t bytes = CPU_ALLOC_SIZE(8192);
    cr_assert(set && sched_getaffinity(0, bytes, set) == 0, "%s", strerror(errno));
    int affinity = CPU_COUNT_S(bytes, set), quota = pleat_cpu_quota_cores("");
    CPU_FREE(set);
    cr_expect_eq(pleat_usable_cores(), quota && quota < affinity ? quota : affinity,
                 "affinity %d, quota %d", affinity, quota);
}

/* A Windows job's CPU rate (pleat_cpu_rate_cores, which the Windows build
 * asks the system for): cycles per 10,000 of all the processors', rounded
 * up to whole cores; only a hard cap counts. Flags as winnt.h has them. */
enum { ENABLE = 0x1, WEIGHT_BASED = 0x2, HARD_CAP = 0x4, NOTIFY = 0x8, MIN_MAX = 0x10 };

Test(cores, a_windows_job_hard_cap_counts_its_share_of_the_processors)
{
    cr_expect_eq(pleat_cpu_rate_cores(ENABLE | HARD_CAP, 5000, 8), 4, "half of 8");
    cr_expect_eq(pleat_cpu_rate_cores(ENABLE | HARD_CAP, 1250, 8), 1, "one of 8 exactly");
    cr_expect_eq(pleat_cpu_rate_cores(ENABLE | HARD_CAP, 1251, 8), 2, "a little more, rounded up");
    cr_expect_eq(pleat_cpu_rate_cores(ENABLE | HARD_CAP, 1, 4), 1, "a sliver is one thread");
    cr_expect_eq(pleat_cpu_rate_cores(ENABLE | HARD_CAP | NOTIFY, 10000, 64), 64, "all of them");
    cr_expect_eq(pleat_cpu_rate_cores(ENABLE | HARD_CAP, 312, 64), 2, "docker --cpus 2 of 64");
    /* MinRate 1000 in the lower half of the word, MaxRate 2500 in the upper */
    cr_expect_eq(pleat_cpu_rate_cores(ENABLE | MIN_MAX, 2500u << 16 | 1000u, 16), 4);
}

Test(cores, a_windows_job_without_a_hard_cap_sets_no_limit)
{
    cr_expect_eq(pleat_cpu_rate_cores(0, 0, 8), 0, "no job, or no rate control");
    cr_expect_eq(pleat_cpu_rate_cores(HARD_CAP, 5000, 8), 0, "not enabled");
    cr_expect_eq(pleat_cpu_rate_cores(ENABLE, 5000, 8), 0, "a soft rate");
    cr_expect_eq(pleat_cpu_rate_cores(ENABLE | WEIGHT_BASED, 5, 8), 0, "a weight");
    cr_expect_eq(pleat_cpu_rate_cores(ENABLE | HARD_CAP, 5000, 0), 0, "no processor count");
}
