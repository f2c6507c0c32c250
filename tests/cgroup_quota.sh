#!/bin/bash
# End to end: a process in a cgroup v1 CPU quota of half a core gets one
# worker thread from cpu_threads = 0, 1.5 cores two, and a quota of more
# cores than it has, or none, as many as it gets outside the new cgroup. Usage: cgroup_quota.sh
# PLEAT_MINIMAL (samples/minimal.c, which prints the context's description).
# It makes a cgroup under v1's cpu mount and removes it again; where none can
# be made (no v1 cpu controller, not root, a read-only cgroup file system) it
# is skipped (77): tests/test_cores.c reads v1 and v2 layouts from files.
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
# mountinfo: fields 5 (mount point), then after "-": type and super options
mount=$(awk '{ for (i = 7; $i != "-"; ++i); if ($(i + 1) == "cgroup" && \
        ("," $(i + 3) ",") ~ /,cpu,/) { print $5; exit } }' /proc/self/mountinfo)
group=${mount:+$mount/pleat-quota-test-$$}
if [ -z "$mount" ] || ! mkdir "$group" 2> /dev/null; then
    echo "skipped: no cgroup v1 cpu controller this process can make a cgroup in"
    exit 77
fi
trap 'rmdir "$group"' EXIT

# The thread count pleat-minimal gets in the cgroup with quota $1 (us per
# 100000 us).
threads_with_quota() {
    echo 100000 > "$group/cpu.cfs_period_us" && echo "$1" > "$group/cpu.cfs_quota_us" ||
        { echo "FAIL: cannot set the quota $1" >&2; exit 1; }
    local line
    line=$(echo "$BASHPID" > "$group/cgroup.procs" && exec "$minimal") ||
        { echo "FAIL: pleat-minimal in the cgroup" >&2; exit 1; }
    echo "quota $1 us per 100000 us: $line" >&2
    threads "$line"
}

check() { # quota, expected thread count
    local got
    got=$(threads_with_quota "$1") || exit
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
