#!/usr/bin/env bash
# The GPU check in one command, for a machine with an NVIDIA GPU: the GPU
# against the CPU bit for bit (every scene kind, the device-pointer API, bad
# inputs), the result hashes of both, and the CUDA rows of pleat-bench (host
# and device pointers, 64k to 4M), then one summary.
#
#   cuda/check-on-gpu.sh [build-dir]        configure + build (needs CMake,
#                                           Ninja, nvcc; ARCH=90 by default),
#                                           then run
#   BUILD=0 cuda/check-on-gpu.sh [build-dir]  run a build made elsewhere, e.g.
#                                           made on a machine without a GPU and
#                                           copied over: nvcc and the static
#                                           CUDA runtime need no GPU to build
#
# Each step has a time limit (STEP_TIMEOUT seconds, default 240), so a hung
# kernel cannot take the whole session.
set -uo pipefail
cd "$(dirname "$0")/.."
build=${1:-build/gpu}
arch=${ARCH:-90}
limit=${STEP_TIMEOUT:-240}
mkdir -p "$build"
log=$build/check-on-gpu.log

step() { echo "== $*"; }

if [[ ${BUILD:-1} != 0 ]]; then
  step "configure + build ($build, sm_$arch)"
  cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DPLEAT_CUDA=ON \
    -DPLEAT_CRITERION=OFF -DPLEAT_BUILD_SAMPLES=OFF -DCMAKE_CUDA_ARCHITECTURES="$arch" \
    >"$log" 2>&1 &&
    cmake --build "$build" --target pleat-check pleat-check-cuda pleat-bench >>"$log" 2>&1 ||
    { tail -30 "$log"; exit 1; }
fi

run() { timeout "$limit" "$@"; }

step "GPU against CPU, bit for bit"
run "$build/tests/pleat-check-cuda" 2>&1 | tee "$build/cuda-vs-cpu.txt"
cuda_rc=${PIPESTATUS[0]}

step "result hashes"
run "$build/tests/pleat-check" --cuda 2>&1 | tail -2 | tee "$build/hash-cuda.txt"
run "$build/tests/pleat-check" 2>&1 | tail -2 | tee "$build/hash-cpu.txt"
hash() { grep -o "result hash [0-9a-f]*" "$1" | head -1; }

step "pleat-bench: CUDA rows, no profiling"
run "$build/bench/pleat-bench" --backend cuda --no-profile --no-baseline \
  --scenes cloud,folded --sizes 64k,1m,4m 2>&1 | tee "$build/bench.txt"
step "pleat-bench: CUDA rows, per-stage times"
run "$build/bench/pleat-bench" --backend cuda --no-baseline --scenes cloud --sizes 1m \
  2>&1 | tee "$build/bench-stages.txt"

step "summary"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null
echo "GPU against CPU: $(tail -1 "$build/cuda-vs-cpu.txt") (exit $cuda_rc)"
echo "CUDA: $(hash "$build/hash-cuda.txt")"
echo "CPU:  $(hash "$build/hash-cpu.txt")"
same=0
[[ -n "$(hash "$build/hash-cpu.txt")" && "$(hash "$build/hash-cuda.txt")" == "$(hash "$build/hash-cpu.txt")" ]] && same=1
echo "same result hash: $same"
grep -E "^(cloud|folded) " "$build/bench.txt"
[[ $cuda_rc == 0 && $same == 1 ]]
