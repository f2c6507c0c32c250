#!/usr/bin/env bash
# Builds the pleat-bench of one version for a GPU machine, on any machine
# with nvcc (no GPU needed: cudart is linked statically), into
# build/variants/NAME/bench/pleat-bench, with its GPU-against-CPU check
# (tests/pleat-check-cuda), for cuda/check-on-gpu.sh's BASE= and VARIANTS=
# (bench/README.md, "Experiments waiting for a GPU").
#
#   cuda/build-variant.sh NAME REV [nvcc flags]
#   e.g. cuda/build-variant.sh sweep-4blocks HEAD -DPLEAT_CUDA_SWEEP_BLOCKS_PER_SM=4
#        cuda/build-variant.sh sweep-balanced exp/sweep-balanced
#
# REV is a git revision, built from a worktree of its own (so nothing
# uncommitted leaks in); the nvcc flags go to CMAKE_CUDA_FLAGS. ARCH (default
# 90) is the GPU architecture; WORK (default /tmp/pleat-variants) is where
# the worktree and the build go, both removed afterwards.
set -euo pipefail
[[ $# -ge 2 ]] || { sed -n '2,15p' "$0"; exit 2; }
name=$1 rev=$2
shift 2
root=$(cd "$(dirname "$0")/.." && pwd)
work=${WORK:-/tmp/pleat-variants}/$name
out=$root/build/variants/$name
# a failed build leaves no folder: an older build under the name would be
# timed as this version
rm -rf "$work" "$out"
mkdir -p "$work"
trap 'git -C "$root" worktree remove --force "$work/src" 2>/dev/null || true; rm -rf "$work"' EXIT
git -C "$root" worktree add --quiet --detach "$work/src" "$rev"
cmake -S "$work/src" -B "$work/build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DPLEAT_CUDA=ON \
  -DPLEAT_CRITERION=OFF -DPLEAT_BUILD_SAMPLES=OFF -DPLEAT_CUDA_EMULATOR=OFF \
  -DCMAKE_CUDA_ARCHITECTURES="${ARCH:-90}" -DCMAKE_CUDA_FLAGS="$*" >"$work/build.log" 2>&1 &&
  cmake --build "$work/build" --target pleat-bench pleat-check-cuda >>"$work/build.log" 2>&1 ||
  { tail -30 "$work/build.log"; exit 1; }
mkdir -p "$out/bench" "$out/tests"
cp "$work/build/bench/pleat-bench" "$out/bench/"
cp "$work/build/tests/pleat-check-cuda" "$out/tests/"
echo "$name: $(git -C "$root" rev-parse --short "$rev")${*:+ with $*} -> ${out#"$root"/}"
# it is timed against this checkout's build: a change of HEAD's to the
# library's code or its build that it lacks is a difference too
code=('cuda/*.cu' 'cuda/*.cuh' 'cuda/*.h' core include CMakeLists.txt)
lacks=$(git -C "$root" rev-list --count "$rev..HEAD" -- "${code[@]}")
if [[ $lacks != 0 ]]; then
  echo "  it lacks $lacks of HEAD's commits to the code or the build" \
    "(git log $rev..HEAD -- ${code[*]}): rebase it unless that is the question"
fi
