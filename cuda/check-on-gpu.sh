#!/usr/bin/env bash
# The GPU check in one command, for a machine with an NVIDIA GPU, CUDA, CMake
# and Ninja (no Criterion needed): configure, build, run the CUDA tests (the
# GPU against the CPU bit for bit, the device-pointer API, bad inputs) and the
# CUDA rows of pleat-bench (1k to 4M, host and device pointers), then print
# one summary. Usage: cuda/check-on-gpu.sh [build-dir]   (ARCH=90 by default)
set -uo pipefail
cd "$(dirname "$0")/.."
build=${1:-build/gpu}
arch=${ARCH:-90}
log=$build/check-on-gpu.log
mkdir -p "$build"

step() { echo "== $*"; }

step "configure ($build, sm_$arch)"
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DPLEAT_CUDA=ON \
  -DPLEAT_CRITERION=OFF -DPLEAT_BUILD_SAMPLES=OFF -DCMAKE_CUDA_ARCHITECTURES="$arch" \
  >"$log" 2>&1 || { tail -30 "$log"; exit 1; }
step "build"
cmake --build "$build" -j >>"$log" 2>&1 || { tail -30 "$log"; exit 1; }

step "tests"
ctest --test-dir "$build" --output-on-failure -R "check|cuda|same_bits" | tee "$build/tests.txt"
tests_rc=${PIPESTATUS[0]}
"$build/tests/pleat-check-cuda" >"$build/cuda-vs-cpu.txt" 2>&1
cuda_rc=$?
"$build/tests/pleat-check" --cuda | tail -2 >"$build/hash-cuda.txt"
"$build/tests/pleat-check" | tail -2 >"$build/hash-cpu.txt"

step "pleat-bench (CUDA rows, no profiling)"
"$build/bench/pleat-bench" --backend cuda,cpu --isa auto --threads 0 --no-profile \
  --scenes cloud,folded --sizes 1k,64k,1m,4m --no-baseline | tee "$build/bench.txt"
step "pleat-bench (CUDA rows, per-stage times)"
"$build/bench/pleat-bench" --backend cuda --scenes cloud --sizes 64k,1m,4m \
  --no-baseline | tee "$build/bench-stages.txt"

step "summary"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null
echo "ctest (check*, cuda*, same_bits*): exit $tests_rc"
echo "GPU against CPU, bit for bit: $(tail -1 "$build/cuda-vs-cpu.txt") (exit $cuda_rc)"
echo "result hash, CUDA: $(head -1 "$build/hash-cuda.txt")"
echo "result hash, CPU:  $(head -1 "$build/hash-cpu.txt")"
grep -E "^(cloud|folded) " "$build/bench.txt"
[[ $tests_rc == 0 && $cuda_rc == 0 ]]
