#!/bin/bash
# End to end: in a cgroup v1 CPU quota of half a core or one core a process
# gets one worker thread from cpu_threads = 0, with 1.5 cores two, and with a
# quota of more cores than it has, or none, as many as it gets outside.
# Usage: cgroup_quota.sh PLEAT_MINIMAL (samples/minimal.c, which prints the
# context's description).
#
# The cgroup is made under the process's own in v1's cpu hierarchy, so the
# limits above it still bind, and removed again. Where none can be made (no
# v1 cpu controller, not root, a read-only cgroup file system) the test is
# skipped (77): tests/test_cores.c reads v1 and v2 layouts from files.
set -u
minimal=$1

# "cpu <isa>, N thread(s): ..." -> N
threads() {
    case $1 in
    cpu*) ;;
    *) echo "skipped: the context is not on the CPU: $1" >&2; exit 77 ;;
    esac
    local n=${1#*, }
    echo "${n%% thread*}"
}

# What the process gets where it is: the most any quota can leave it.
outside=$("$minimal") || { echo "FAIL: pleat-minimal"; exit 1; }
cores=$(threads "$outside") || exit
if [ "$cores" -lt 2 ]; then
    echo "skipped: one thread already ($outside), which no quota can lower"
    exit 77
fi

# The process's folder in v1's cpu hierarchy: its cgroup's path past the
# root of the last mount that shows it.
own=$(awk -F: '$2 ~ /(^|,)cpu(,|$)/ { sub(/^[^:]*:[^:]*:/, ""); print; exit }' /proc/self/cgroup)
folder=$(awk -v cg="$own" '{
    for (i = 7; $i != "-"; ++i);
    if ($(i + 1) != "cgroup" || ("," $(i + 3) ",") !~ /,cpu,/) next
    if ($4 == "/") { f = $5 cg; next }
    n = length($4)
    if (substr(cg, 1, n) == $4 && (length(cg) == n || substr(cg, n + 1, 1) == "/"))
        f = $5 substr(cg, n + 1)
} END { if (f != "") print f }' /proc/self/mountinfo)

# Groups left by a run that was killed while pleat-minimal ran in them
# (named after the run's process, no longer alive).
for stale in "${folder:-/nonexistent}"/pleat-quota-test-*; do
    [ -d "$stale" ] && ! kill -0 "${stale##*-}" 2> /dev/null && rmdir "$stale" 2> /dev/null
done
group=${folder:+$folder/pleat-quota-test-$$}
if [ -z "$group" ] || [[ $own == /..* ]] || ! mkdir "$group" 2> /dev/null; then
    echo "skipped: no cgroup v1 cpu controller this process can make a cgroup in"
    exit 77
fi
trap 'rmdir "$group"' EXIT
trap 'exit 1' INT TERM

# The thread count pleat-minimal gets in the cgroup with quota $1 (us per
# 100000 us); exits 2 when the quota cannot be set.
threads_with_quota() {
    { echo 100000 > "$group/cpu.cfs_period_us" && echo "$1" > "$group/cpu.cfs_quota_us"; } \
        2> /dev/null || exit 2
    local line
    line=$(echo "$BASHPID" > "$group/cgroup.procs" && exec "$minimal") ||
        { echo "FAIL: pleat-minimal in the cgroup" >&2; exit 1; }
    echo "quota $1 us per 100000 us: $line" >&2
    threads "$line"
}

check() { # quota, expected thread count
    local got rc
    got=$(threads_with_quota "$1")
    rc=$?
    if [ $rc = 2 ] && [ "$1" -gt 100000 ]; then
        # v1 refuses a quota above the one of a cgroup over it (EINVAL)
        echo "quota $1 us per 100000 us: left out, a cgroup above allows less"
        return
    fi
    [ $rc = 2 ] && { echo "FAIL: cannot set the quota $1"; exit 1; }
    [ $rc = 0 ] || exit $rc
    if [ "$got" != "$2" ]; then
        echo "FAIL: quota $1 us per 100000 us: want $2 threads, got $got"
        exit 1
    fi
}

check 50000 1
check 100000 1
check 150000 2
check $((100000 * (cores + 1))) "$cores"
check -1 "$cores"
echo "ok: the quota bounds the default thread count ($cores without one)"
