#!/usr/bin/env bash
# Compares the speed of two versions of pleat on this machine with
# pleat-bench: builds REV (a git revision, in a worktree) and the working
# tree, then times them against each other with bench/interleave.sh
# (interleaved runs, best and median of each, their ratio).
#
#   bench/compare.sh REV [pleat-bench options]
#   e.g. bench/compare.sh HEAD~3 --scenes cloud,folded --sizes 64k --threads 1 --isa avx2
#
# ROUNDS (default 8) and WORK (default /tmp/pleat-compare) set the rounds
# and where the builds go. Every run is given --no-profile and
# --no-baseline (bench/interleave.sh).
set -euo pipefail
[[ $# -ge 1 ]] || { sed -n '2,12p' "$0"; exit 2; }
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
git -C "$root" worktree add --detach "$work/old" "$rev" >/dev/null
build "$work/old" "$work/old-build"
build "$root" "$work/new-build"
git -C "$root" worktree remove --force "$work/old"

echo "old = $rev, new = working tree"
ROUNDS=$rounds RUNS="$work/runs.txt" "$root/bench/interleave.sh" \
  "$work/old-build/bench/pleat-bench" "$work/new-build/bench/pleat-bench" "$@"
