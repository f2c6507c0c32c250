/*
 * The CPU quota (quota.h): on Linux the cgroup's. Two files say where the
 * limits are: /proc/self/cgroup gives the process's cgroup in each hierarchy
 * ("0::/a/b" in v2, "4:cpu,cpuacct:/a/b" for v1's cpu controller), and
 * /proc/self/mountinfo where each hierarchy is mounted and which of its
 * cgroups the mount shows at its top (its root field: "/" inside a cgroup
 * namespace, the container's own cgroup in a v1 container without one). The
 * cgroup's folder is the mount point followed by the path past that root,
 * through the last mount whose root holds the cgroup: a later mount on the
 * same point hides an earlier one. A limit set higher up binds too, so the
 * walk reads every folder up to the mount point and keeps the smallest;
 * those above the mount's root, a cgroup namespace's, cannot be seen. A
 * cgroup outside the process's namespace ("/../x") has no folder to read.
 *
 * Files are read with open and read into buffers on the stack, so the
 * caller's heap (pleat_set_allocator) sees no block; a line or a path too
 * long for its buffer counts as unreadable.
 *
 * On Windows a container's limit is its job object's CPU rate (docker
 * --cpus with process isolation sets a hard cap), asked of the system.
 */
#include "quota.h"

#include <limits.h>
#include <stdint.h>

/* quota / period in cores, rounded up and capped at INT_MAX; 0 for none. */
static int cores(uint64_t quota, uint64_t period)
{
    if (!quota || !period)
        return 0;
    uint64_t c = quota / period + (quota % period != 0);
    return c > INT_MAX ? INT_MAX : (int)c;
}

/* JOB_OBJECT_CPU_RATE_CONTROL_* (Windows 8 on; MinGW-w64's headers lack the
 * last), and the rates' unit: cycles per 10,000 of every processor's. */
enum { RATE_ENABLE = 0x1, RATE_WEIGHT_BASED = 0x2, RATE_HARD_CAP = 0x4, RATE_MIN_MAX = 0x10 };
#define RATE_CYCLES 10000u

int pleat_cpu_rate_cores(uint32_t flags, uint32_t rate, uint32_t processors)
{
    if (!(flags & RATE_ENABLE) || (flags & RATE_WEIGHT_BASED))
        return 0;
    if (flags & RATE_MIN_MAX)
        rate >>= 16; /* MaxRate, the upper half of the word (MinRate the lower) */
    else if (!(flags & RATE_HARD_CAP))
        return 0; /* a soft rate: the job may run on past it while cores are idle */
    return cores((uint64_t)rate * processors, RATE_CYCLES);
}

#ifdef _WIN32
#include "win32.h"

int pleat_cpu_quota_cores(const char *root)
{
    (void)root; /* no cgroups */
    /* NULL: the process's own job, the innermost where jobs nest. Its rate
     * is a share of the whole system's only when no job above it has one:
     * else it is a share of that job's, which cannot be asked for, so
     * nested rates count too many cores (never too few) */
    JOBOBJECT_CPU_RATE_CONTROL_INFORMATION info;
    if (!QueryInformationJobObject(NULL, JobObjectCpuRateControlInformation, &info, sizeof info,
                                   NULL))
        return 0; /* in no job, or before Windows 8 */
    return pleat_cpu_rate_cores(info.ControlFlags, info.CpuRate,
                                GetActiveProcessorCount(ALL_PROCESSOR_GROUPS));
}
#else
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

enum { PATH_BYTES = 512, LINE_BYTES = 1024, FILE_NAME_BYTES = 32 };

/* A hierarchy that can hold a CPU limit: v2's, or v1's cpu controller. */
typedef struct hierarchy {
    int v1;
    int have_cgroup, have_mount;
    char cgroup[PATH_BYTES]; /* the process's cgroup in it */
    char mount[PATH_BYTES];  /* the mount point of a mount that shows it */
    char below[PATH_BYTES];  /* and the cgroup's path under that mount */
} hierarchy;

/* The hierarchies of a process: [0] v2, [1] v1's cpu controller. */
typedef hierarchy hierarchies[2];

/* dst gets src, when it fits; 0 then. */
static int copy(char dst[PATH_BYTES], const char *src)
{
    size_t n = strlen(src);
    if (n >= PATH_BYTES)
        return -1;
    memcpy(dst, src, n + 1);
    return 0;
}

/* Whether word is one of the comma-separated items of list. */
static int has_item(const char *list, const char *word)
{
    size_t n = strlen(word);
    for (const char *p = list; p; p = strchr(p, ',')) {
        p += *p == ',';
        if (strncmp(p, word, n) == 0 && (p[n] == ',' || p[n] == '\0'))
            return 1;
    }
    return 0;
}

/* Calls line_fn on each line of the file, its newline removed; a line
 * longer than the buffer is skipped. -1 when the file cannot be opened. */
static int each_line(const char *path, void (*line_fn)(char *line, hierarchies h), hierarchies h)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    char buf[LINE_BYTES];
    size_t len = 0;
    int skipping = 0; /* in a line that did not fit */
    for (;;) {
        ssize_t got = read(fd, buf + len, sizeof buf - 1 - len);
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0)
            break;
        char *start = buf, *end = buf + len + (size_t)got, *nl;
        while ((nl = memchr(start, '\n', (size_t)(end - start)))) {
            *nl = '\0';
            if (!skipping)
                line_fn(start, h);
            skipping = 0;
            start = nl + 1;
        }
        len = (size_t)(end - start);
        memmove(buf, start, len);
        if (len == sizeof buf - 1) {
            skipping = 1;
            len = 0;
        }
    }
    if (len && !skipping) { /* a last line without a newline */
        buf[len] = '\0';
        line_fn(buf, h);
    }
    close(fd);
    return 0;
}

/* "id:controllers:path": v2's has no controllers and id 0. */
static void cgroup_line(char *line, hierarchies h)
{
    char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
    if (!c2)
        return;
    int v2 = strncmp(line, "0::", 3) == 0;
    *c2 = '\0'; /* ends the controllers */
    hierarchy *which = NULL;
    if (v2)
        which = &h[0];
    else if (has_item(c1 + 1, "cpu"))
        which = &h[1];
    const char *path = c2 + 1;
    int outside = strncmp(path, "/..", 3) == 0 && (path[3] == '/' || !path[3]);
    if (which)
        which->have_cgroup = !outside && copy(which->cgroup, path) == 0;
}

/* The part of cgroup under a mount whose root is `root`, or NULL when the
 * mount does not show it. */
static const char *under(const char *cgroup, const char *root)
{
    size_t r = strlen(root);
    if (strcmp(root, "/") == 0)
        return cgroup;
    return strncmp(cgroup, root, r) == 0 && (cgroup[r] == '/' || !cgroup[r]) ? cgroup + r : NULL;
}

/* The next space-separated field, or NULL. */
static char *next_field(char **cursor)
{
    char *f = *cursor;
    if (!f || !*f)
        return NULL;
    char *sp = strchr(f, ' ');
    if (sp)
        *sp++ = '\0';
    *cursor = sp;
    return f;
}

/* Undoes mountinfo's octal escapes (\040 for a space, ...). */
static void unescape(char *s)
{
    char *out = s;
    for (; *s; ++s) {
        int octal = s[0] == '\\';
        for (int i = 1; octal && i <= 3; ++i)
            octal = s[i] >= '0' && s[i] <= '7';
        if (octal) {
            *out++ = (char)((s[1] - '0') * 64 + (s[2] - '0') * 8 + (s[3] - '0'));
            s += 3;
        } else {
            *out++ = *s;
        }
    }
    *out = '\0';
}

/* "id parent major:minor root mount-point options [optional...] - type
 * source super-options": the last mount that shows the process's cgroup
 * counts. */
static void mount_line(char *line, hierarchies h)
{
    char *cursor = line, *field[6], *f;
    for (int i = 0; i < 6; ++i)
        if (!(field[i] = next_field(&cursor)))
            return;
    while ((f = next_field(&cursor)) && strcmp(f, "-") != 0)
        ;
    char *type = f ? next_field(&cursor) : NULL;
    char *super = type && next_field(&cursor) ? next_field(&cursor) : NULL;
    if (!super)
        return;
    hierarchy *which = NULL;
    if (strcmp(type, "cgroup2") == 0)
        which = &h[0];
    else if (strcmp(type, "cgroup") == 0 && has_item(super, "cpu"))
        which = &h[1];
    if (!which || !which->have_cgroup)
        return;
    unescape(field[3]);
    unescape(field[4]);
    const char *below = under(which->cgroup, field[3]);
    if (below && strlen(field[4]) < PATH_BYTES) { /* below is no longer than cgroup */
        copy(which->mount, field[4]);
        copy(which->below, below);
        which->have_mount = 1;
    }
}

/* Reads a small file whole into buf, NUL-terminated; 0 on success. */
static int read_small(const char *folder, size_t len, const char *name, char *buf, size_t size)
{
    char path[PATH_BYTES + FILE_NAME_BYTES];
    snprintf(path, sizeof path, "%.*s/%s", (int)len, folder, name);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    ssize_t got;
    do
        got = read(fd, buf, size - 1);
    while (got < 0 && errno == EINTR);
    close(fd);
    if (got < 0)
        return -1;
    buf[got] = '\0';
    return 0;
}

/* A decimal number at *s, moving *s past it; 0 on success. */
static int parse_u64(const char **s, uint64_t *v)
{
    const char *p = *s;
    uint64_t x = 0;
    if (*p < '0' || *p > '9')
        return -1;
    for (; *p >= '0' && *p <= '9'; ++p) {
        if (x > (UINT64_MAX - (uint64_t)(*p - '0')) / 10)
            return -1;
        x = x * 10 + (uint64_t)(*p - '0');
    }
    *s = p;
    *v = x;
    return 0;
}

/* The limit set on one cgroup folder, in cores; 0 for none. v2: cpu.max
 * holds "max 100000" or "quota period"; v1: cpu.cfs_quota_us holds -1 or
 * the quota, cpu.cfs_period_us the period. */
static int folder_limit(const char *folder, size_t len, int v1)
{
    char text[64];
    uint64_t quota, period;
    const char *p = text;
    if (!v1)
        return read_small(folder, len, "cpu.max", text, sizeof text) == 0 &&
                       parse_u64(&p, &quota) == 0 && *p++ == ' ' &&
                       parse_u64(&p, &period) == 0
                   ? cores(quota, period)
                   : 0;
    if (read_small(folder, len, "cpu.cfs_quota_us", text, sizeof text) != 0 ||
        parse_u64(&p, &quota) != 0)
        return 0;
    p = text;
    return read_small(folder, len, "cpu.cfs_period_us", text, sizeof text) == 0 &&
                   parse_u64(&p, &period) == 0
               ? cores(quota, period)
               : 0;
}

/* The tighter of two limits in cores, 0 meaning none. */
static int tighter(int a, int b)
{
    return a && (!b || a < b) ? a : b;
}

/* The smallest limit from the process's cgroup in h up to the mount point. */
static int hierarchy_limit(const char *root, const hierarchy *h)
{
    char folder[PATH_BYTES];
    int top = snprintf(folder, sizeof folder, "%s%s", root, h->mount);
    int n = snprintf(folder, sizeof folder, "%s%s%s", root, h->mount, h->below);
    if (top < 0 || n < 0 || n >= (int)sizeof folder)
        return 0;
    size_t len = (size_t)n;
    int best = 0;
    for (;;) {
        while (len > (size_t)top && folder[len - 1] == '/')
            --len;
        best = tighter(folder_limit(folder, len, h->v1), best);
        if (len <= (size_t)top)
            return best;
        while (len > (size_t)top && folder[len - 1] != '/')
            --len;
    }
}

int pleat_cpu_quota_cores(const char *root)
{
    hierarchies h = {{.v1 = 0}, {.v1 = 1}};
    char path[PATH_BYTES];
    if (snprintf(path, sizeof path, "%s/proc/self/cgroup", root) >= (int)sizeof path ||
        each_line(path, cgroup_line, h) != 0)
        return 0;
    if (snprintf(path, sizeof path, "%s/proc/self/mountinfo", root) >= (int)sizeof path ||
        each_line(path, mount_line, h) != 0)
        return 0;
    int best = 0;
    for (int i = 0; i < 2; ++i)
        if (h[i].have_mount)
            best = tighter(hierarchy_limit(root, &h[i]), best);
    return best;
}
#endif
