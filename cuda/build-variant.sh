#!/usr/bin/env bash
# Builds the pleat-bench of one version for a GPU machine, on any machine
# with nvcc (no GPU needed: cudart is linked statically), into
# build/variants/NAME/bench/pleat-bench, with its GPU-against-CPU check
# (tests/pleat-check-cuda), for cuda/check-on-gpu.sh's BASE= and VARIANTS=
# (bench/README.md, "Experiments waiting for a GPU").
#
#   cuda/build-variant.sh NAME            an experiment of cuda/experiments/variants:
#                                         HEAD with its patch and flags
#   cuda/build-variant.sh --all           every experiment listed there
#   cuda/build-variant.sh NAME REV [nvcc flags]   any other version
#   e.g. cuda/build-variant.sh sweep-balanced
#        cuda/build-variant.sh old-sweep 83ca6a6 -DPLEAT_CUDA_SWEEP_BLOCKS_PER_SM=4
#
# The version is built from a worktree of its own (so nothing uncommitted
# leaks in); the nvcc flags go to CMAKE_CUDA_FLAGS. ARCH (default 90) is the
# GPU architecture; WORK (default /tmp/pleat-variants) is where the worktree
# and the build go, both removed afterwards.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
experiments=$root/cuda/experiments
# the library's code and its build, as git pathspecs
code=('cuda/*.cu' 'cuda/*.cuh' 'cuda/*.h' core include CMakeLists.txt)

usage() { sed -n '2,18p' "$0"; exit 2; }

# name, rev, patch file or -, nvcc flags... (a subshell: its worktree and
# build go when it ends, however it ends)
build() (
  local name=$1 rev=$2 patch=$3
  shift 3
  local work=${WORK:-/tmp/pleat-variants}/$name out=$root/build/variants/$name
  # a failed build leaves no folder: an older build under the name would be
  # timed as this version
  rm -rf "$work" "$out"
  mkdir -p "$work"
  trap 'git -C "$root" worktree remove --force "$work/src" 2>/dev/null || true; rm -rf "$work"' EXIT
  git -C "$root" worktree add --quiet --detach "$work/src" "$rev"
  if [[ $patch != - ]]; then
    git -C "$work/src" apply "$experiments/$patch" ||
      { echo "$name: $patch does not apply to $rev: rebase it"; exit 1; }
  fi
  cmake -S "$work/src" -B "$work/build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DPLEAT_CUDA=ON \
    -DPLEAT_CRITERION=OFF -DPLEAT_BUILD_SAMPLES=OFF -DPLEAT_CUDA_EMULATOR=OFF \
    -DCMAKE_CUDA_ARCHITECTURES="${ARCH:-90}" -DCMAKE_CUDA_FLAGS="$*" >"$work/build.log" 2>&1 &&
    cmake --build "$work/build" --target pleat-bench pleat-check-cuda >>"$work/build.log" 2>&1 ||
    { tail -30 "$work/build.log"; exit 1; }
  mkdir -p "$out/bench" "$out/tests"
  cp "$work/build/bench/pleat-bench" "$out/bench/"
  cp "$work/build/tests/pleat-check-cuda" "$out/tests/"
  local with=${patch#-}${*:+ $*}
  echo "$name: $(git -C "$root" rev-parse --short "$rev")${with:+ with ${with# }} -> ${out#"$root"/}"
  # it is timed against this checkout's build: a change of HEAD's to the
  # library's code or its build that it lacks is a difference too
  local lacks
  lacks=$(git -C "$root" rev-list --count "$rev..HEAD" -- "${code[@]}")
  if [[ $lacks != 0 ]]; then
    echo "  it lacks $lacks of HEAD's commits to the code or the build" \
      "(git log $rev..HEAD -- ${code[*]}): rebase it unless that is the question"
  fi
)

# the lines of the list: name patch flags... (tests/gpu_check_scripts.sh
# reads it the same way)
listed() { grep -v -e '^[[:space:]]*#' -e '^[[:space:]]*$' "$experiments/variants"; }

experiment() { # name
  local line
  line=$(listed | awk -v n="$1" '$1 == n { print; exit }') || true
  [[ -n $line ]] || { echo "$1: not in cuda/experiments/variants"; return 2; }
  # the flags are words, never patterns
  set -f
  # shellcheck disable=SC2086
  set -- $line
  set +f
  local name=$1 patch=$2
  shift 2
  # HEAD is what is built: the tree's changes to the code are not in it
  git -C "$root" diff --quiet HEAD -- "${code[@]}" ||
    echo "$name: uncommitted changes to the code are left out (HEAD is built)"
  build "$name" HEAD "$patch" "$@"
}

case $# in
  0) usage ;;
  1) if [[ $1 == --all ]]; then
       # each in a process of its own: under `||` a function runs without
       # set -e, which its build relies on
       failed=0
       for name in $(listed | awk '{ print $1 }'); do "$0" "$name" || failed=1; done
       exit $failed
     fi
     experiment "$1" ;;
  *) name=$1 rev=$2
     shift 2
     build "$name" "$rev" - "$@" ;;
esac
