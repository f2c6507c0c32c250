#!/usr/bin/env bash
# Compares the speed of two versions of pleat on this machine with
# pleat-bench, interleaved: builds REV (a git revision, in a worktree) and
# the working tree, then runs the two pleat-bench binaries one after the
# other ROUNDS times with the same arguments, and prints per row the best
# and the median of the per-run medians of each, and their ratio.
# Interleaving and minima matter on shared machines, whose speed can drift
# by 2x within minutes: a single pair of runs compares the drift.
#
#   bench/compare.sh REV [pleat-bench options]
#   e.g. bench/compare.sh HEAD~3 --scenes cloud,folded --sizes 64k --threads 1 --isa avx2
#
# ROUNDS (default 8) and WORK (default /tmp/pleat-compare) set the rounds
# and where the builds go. Profiling is off (--no-profile) and the baseline
# is not timed (--no-baseline) unless asked for.
set -euo pipefail
[[ $# -ge 1 ]] || { sed -n '2,15p' "$0"; exit 2; }
rev=$1
shift
root=$(cd "$(dirname "$0")/.." && pwd)
work=${WORK:-/tmp/pleat-compare}
rounds=${ROUNDS:-8}
mkdir -p "$work"

build() { # source-dir build-dir
  cmake -S "$1" -B "$2" -G Ninja -DCMAKE_BUILD_TYPE=Release -DPLEAT_CUDA=OFF \
    -DPLEAT_CRITERION=OFF -DPLEAT_BUILD_SAMPLES=OFF >/dev/null
  cmake --build "$2" --target pleat-bench >/dev/null
}

git -C "$root" worktree remove --force "$work/old" 2>/dev/null || true
git -C "$root" worktree add --detach "$work/old" "$rev" >/dev/null 2>&1
build "$work/old" "$work/old-build"
build "$root" "$work/new-build"
git -C "$root" worktree remove --force "$work/old"

args=(--no-profile --no-baseline "$@")
: >"$work/runs.txt"
for ((r = 1; r <= rounds; ++r)); do
  for v in old new; do
    "$work/$v-build/bench/pleat-bench" "${args[@]}" 2>/dev/null |
      awk -v v="$v" '$2 ~ /^[0-9]+$/ { print v, $1, $2, $3, $4, $5, $6 }' \
        >>"$work/runs.txt"
  done
done

echo "old = $rev, new = working tree; $rounds interleaved runs each; ms per call"
python3 - "$work/runs.txt" <<'EOF'
import collections, statistics, sys
rows = collections.defaultdict(lambda: collections.defaultdict(list))
for line in open(sys.argv[1]):
    v, scene, n, backend, isa, threads, ms = line.split()
    rows[(scene, int(n), backend, isa, threads)][v].append(float(ms))
print("%-9s %8s %-5s %-6s %3s  %9s %9s  %9s %9s  %7s %7s" % (
    "scene", "n", "back", "isa", "thr", "old best", "new best", "old med", "new med",
    "best x", "med x"))
for key in sorted(rows):
    r = rows[key]
    if not r["old"] or not r["new"]:
        continue
    ob, nb = min(r["old"]), min(r["new"])
    om, nm = statistics.median(r["old"]), statistics.median(r["new"])
    print("%-9s %8d %-5s %-6s %3s  %9.3f %9.3f  %9.3f %9.3f  %6.2fx %6.2fx" % (
        key + (ob, nb, om, nm, ob / nb, om / nm)))
EOF
