#!/usr/bin/env bash
# The GPU check in one command, for a machine with an NVIDIA GPU: the GPU
# against the CPU bit for bit (every scene kind, the device-pointer API, bad
# inputs), the result hashes of both, the CUDA rows of pleat-bench (host
# and device pointers, a CUDA graph, 1k to 4M; 64k to 4M again with a test
# limit, params.max_tests, for the limit kernel's cost) and
# compute-sanitizer, then one summary.
#
#   cuda/check-on-gpu.sh [build-dir]        configure + build (needs CMake,
#                                           Ninja, nvcc; ARCH=90 by default),
#                                           then run
#   BUILD=0 cuda/check-on-gpu.sh [build-dir]  run a build made elsewhere, e.g.
#                                           made on a machine without a GPU and
#                                           copied over: nvcc and the static
#                                           CUDA runtime need no GPU to build
#
# Where compute-sanitizer is found (SANITIZE=0 skips it), memcheck runs the
# GPU check, and racecheck and synccheck a small benchmark; the failed CUDA
# calls that the pending-error check makes on purpose are not reported.
#
# Where Nsight Systems (nsys) and Nsight Compute (ncu) are found (PROFILE=0
# skips them), the 1M cloud is profiled: every kernel's and copy's GPU time
# (nsys.txt), and each kernel's speed-of-light, occupancy and memory
# figures for one call (ncu.txt): what a tuning session with little device
# time needs first.
#
# BASE=<build folder of another version> and VARIANTS="<build folder> ..."
# (experimental versions; relative to the repository root, as the build
# folder is; their bench/pleat-bench is what is timed) time those versions
# against this one in the same run, interleaved (bench/interleave.sh:
# BASE_ROUNDS rounds, default 3, none started after BASE_SECONDS, default
# twice STEP_TIMEOUT): the cloud and the folded sheet at 64k, 1M and 4M,
# every CUDA row, and each one's ratio to this build (this build's time
# over its: above 1, that version is the faster). Timings of two
# sessions' GPUs do not compare; these do. It runs last. A variant's folder
# may also hold its tests/pleat-check-cuda (cuda/build-variant.sh puts it
# there), which then runs before the timing: the summary says whether the
# variant got the CPU's bits.
#
# Each step has a time limit (STEP_TIMEOUT seconds, default 150), so a hung
# kernel cannot take the whole session; after a GPU step runs out of time
# the benchmarks are skipped. Logs go to $OUT when set (the device tool
# brings that folder back), else to the build folder.
set -uo pipefail
cd "$(dirname "$0")/.."
build=${1:-build/gpu}
arch=${ARCH:-90}
limit=${STEP_TIMEOUT:-150}
mkdir -p "$build"
# logs where the device tool brings files back ($OUT), else into the build
logs=${OUT:-$build}
mkdir -p "$logs"
log=$logs/check-on-gpu.log
# nvcc is often installed but not on PATH
if [[ -z ${CUDACXX:-} ]] && ! command -v nvcc >/dev/null && [[ -x /usr/local/cuda/bin/nvcc ]]; then
  export CUDACXX=/usr/local/cuda/bin/nvcc
fi

step() { echo "== $*"; }

step "device"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1 | head -4

if [[ ${BUILD:-1} != 0 ]]; then
  step "configure + build ($build, sm_$arch)"
  # a build dir configured from another checkout path (e.g. one carried over)
  # makes CMake refuse to configure: start it afresh
  if [[ -f $build/CMakeCache.txt ]] &&
     ! grep -qx "CMAKE_HOME_DIRECTORY:INTERNAL=$(pwd -P)" "$build/CMakeCache.txt"; then
    rm -rf "$build/CMakeCache.txt" "$build/CMakeFiles"
  fi
  # no CUDA emulator: a GPU is there, and its build would only cost time
  cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DPLEAT_CUDA=ON \
    -DPLEAT_CRITERION=OFF -DPLEAT_BUILD_SAMPLES=OFF -DPLEAT_CUDA_EMULATOR=OFF \
    -DCMAKE_CUDA_ARCHITECTURES="$arch" \
    >"$log" 2>&1 &&
    cmake --build "$build" --target pleat-check pleat-check-cuda pleat-bench >>"$log" 2>&1 ||
    { tail -30 "$log"; exit 1; }
fi

run() { timeout "$limit" "$@"; }

step "GPU against CPU, bit for bit"
run "$build/tests/pleat-check-cuda" 2>&1 | tee "$logs/cuda-vs-cpu.txt"
cuda_rc=${PIPESTATUS[0]}

# a GPU step that ran out of time most likely hangs: do not spend more on it
hung() { [[ $1 == 124 || $1 == 137 ]]; }

step "result hashes"
if hung "$cuda_rc"; then
  echo "skipped: the GPU check ran out of time" >"$logs/hash-cuda.txt"
  check_rc=124
else
  run "$build/tests/pleat-check" --cuda >"$logs/hash-cuda.txt" 2>&1
  check_rc=$?
fi
tail -2 "$logs/hash-cuda.txt"
run "$build/tests/pleat-check" >"$logs/hash-cpu.txt" 2>&1
tail -2 "$logs/hash-cpu.txt"
hash() { grep -o "result hash [0-9a-f]*" "$1" | head -1; }
# whether both GPU checks ran through: the later GPU steps run only then
gpu_ran=0
! hung "$cuda_rc" && ! hung "$check_rc" && gpu_ran=1

: >"$logs/bench.txt"
: >"$logs/bench-limit.txt"
if ((gpu_ran)); then
  step "pleat-bench: CUDA rows, no profiling"
  run "$build/bench/pleat-bench" --backend cuda --no-profile --no-baseline \
    --scenes cloud,folded --sizes 1k,16k,64k,1m,4m 2>&1 | tee "$logs/bench.txt"
  step "pleat-bench: CUDA rows, per-stage times"
  run "$build/bench/pleat-bench" --backend cuda --no-baseline --scenes cloud --sizes 1m \
    2>&1 | tee "$logs/bench-stages.txt"
  step "pleat-bench: CUDA rows with a test limit of 1000 a particle, no profiling"
  run "$build/bench/pleat-bench" --backend cuda --no-profile --no-baseline \
    --scenes cloud,folded --sizes 64k,1m,4m --max-tests 1000 2>&1 | tee "$logs/bench-limit.txt"
fi

# a CUDA tool on PATH or in the toolkit's bin
tool() { command -v "$1" || ls "/usr/local/cuda/bin/$1" 2>/dev/null; }

: >"$logs/nsys.txt"
: >"$logs/ncu.txt"
nsys=$(tool nsys)
ncu=$(tool ncu)
bench_1m=("$build/bench/pleat-bench" --backend cuda --no-profile --no-baseline --scenes cloud
  --sizes 1m)
if [[ ${PROFILE:-1} == 0 ]] || ((!gpu_ran)); then
  echo "skipped: PROFILE=${PROFILE:-1}, GPU check exit $cuda_rc" | tee "$logs/nsys.txt" >"$logs/ncu.txt"
else
  step "profiles of the 1M cloud: ${nsys:-no nsys}, ${ncu:-no ncu}"
  # the report itself stays in the build folder: only its tables come back
  [[ -n $nsys ]] && run "$nsys" profile --trace=cuda --stats=true --force-overwrite=true \
    -o "$build/nsys-1m" "${bench_1m[@]}" --repeats 5 >"$logs/nsys.txt" 2>&1
  # a call's kernels (11: 2 for the checks and keys, 6 of CUB's sort,
  # gather, sweep, apply), after those of the first calls
  [[ -n $ncu ]] && run "$ncu" --launch-skip 30 --launch-count 15 --section SpeedOfLight \
    --section Occupancy --section MemoryWorkloadAnalysis "${bench_1m[@]}" --repeats 3 \
    >"$logs/ncu.txt" 2>&1
  grep -A 20 "cuda_gpu_kern_sum" "$logs/nsys.txt" | head -24
fi

sanitizer=$(tool compute-sanitizer)
san_rc=0
# the lines of sanitizers.txt that say how each tool ended
san_ends() { grep -hE "ERROR SUMMARY|RACECHECK SUMMARY|skipped|incomplete" "$logs/sanitizers.txt"; }
if [[ ${SANITIZE:-1} == 0 || -z $sanitizer ]]; then
  echo "skipped: ${sanitizer:-no compute-sanitizer}, SANITIZE=${SANITIZE:-1}" >"$logs/sanitizers.txt"
elif [[ $cuda_rc != 0 && $cuda_rc != 1 ]]; then
  echo "skipped: the GPU check did not run through (exit $cuda_rc)" >"$logs/sanitizers.txt"
else
  step "compute-sanitizer: memcheck on the GPU check, racecheck and synccheck on a small bench"
  : >"$logs/sanitizers.txt"
  # one tool on one command; a run stopped by the step limit found nothing
  # yet, which is no pass: it fails the check, and says so
  sanitize() {
    local t=$1
    shift
    run "$sanitizer" --tool "$t" --error-exitcode 1 "$@" >>"$logs/sanitizers.txt" 2>&1
    local rc=$?
    hung $rc && echo "$t: incomplete, stopped at the ${limit} s step limit" >>"$logs/sanitizers.txt"
    [[ $rc == 0 ]] || san_rc=1
  }
  sanitize memcheck --report-api-errors no "$build/tests/pleat-check-cuda"
  # shared memory races, then barriers and warp syncs not reached by the
  # threads they name: what the CUDA emulator checks too, here on the GPU
  for t in racecheck synccheck; do
    sanitize $t "$build/bench/pleat-bench" --backend cuda --no-baseline --no-profile \
      --scenes cloud,folded --sizes 1k,16k --repeats 1
  done
  san_ends
fi

# The versions timed against this build: BASE and the variants that have a
# bench (one without is said and left out, not the whole table). Each
# variant's own check against the CPU, where its folder holds one, runs
# first: a faster variant that gets other bits is no candidate.
versus=() labels=(this)
add_version() { # folder, label
  if [[ -x $1/bench/pleat-bench ]]; then
    versus+=("$1")
    labels+=("$2")
  else
    echo "$2: no $1/bench/pleat-bench, not timed"
  fi
}
check_variant() { # folder, label
  if [[ ! -x $1/tests/pleat-check-cuda ]]; then
    echo "$2: no tests/pleat-check-cuda, not checked"
    return
  fi
  run "$1/tests/pleat-check-cuda" >"$logs/variant-$2.txt" 2>&1
  local rc=$?
  echo "$2: $(tail -1 "$logs/variant-$2.txt") (exit $rc)"
}
((gpu_ran)) && [[ -n ${VARIANTS:-} ]] && step "variants against the CPU, bit for bit"
# into the file, not through a pipe: a pipe's subshell would keep versus
{
  [[ -n ${BASE:-} ]] && add_version "$BASE" base
  for v in ${VARIANTS:-}; do
    name=$(basename "$v")
    ((gpu_ran)) && check_variant "$v" "$name"
    add_version "$v" "$name"
  done
} >"$logs/variants.txt"
cat "$logs/variants.txt"

: >"$logs/versus-base.txt"
if [[ ${#versus[@]} -gt 0 ]] && ((gpu_ran)); then
  step "pleat-bench: this build against ${versus[*]}, interleaved"
  # last, so that it can take no other step's time: rounds stop starting
  # after BASE_SECONDS, and the timeout only catches a hung run
  base_s=${BASE_SECONDS:-$((2 * limit))}
  ROUNDS=${BASE_ROUNDS:-3} SECONDS_MAX=$base_s RUNS="$logs/versus-base-runs.txt" \
    LABELS="${labels[*]}" timeout $((base_s + limit)) bench/interleave.sh \
    "$build/bench/pleat-bench" "${versus[@]/%//bench/pleat-bench}" \
    --backend cuda --scenes cloud,folded --sizes 64k,1m,4m 2>&1 | tee "$logs/versus-base.txt"
fi

step "summary"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null
echo "GPU against CPU: $(tail -1 "$logs/cuda-vs-cpu.txt") (exit $cuda_rc)"
echo "pleat-check --cuda: $(tail -1 "$logs/hash-cuda.txt") (exit $check_rc)"
grep "^FAIL" "$logs/cuda-vs-cpu.txt" "$logs/hash-cuda.txt" | head -20
cuda_hash=$(hash "$logs/hash-cuda.txt")
cpu_hash=$(hash "$logs/hash-cpu.txt")
echo "CUDA: $cuda_hash"
echo "CPU:  $cpu_hash"
same=0
[[ -n $cpu_hash && $cuda_hash == "$cpu_hash" ]] && same=1
echo "same result hash: $same"
echo "sanitizers: $(san_ends | tr -s ' =' ' ' | paste -sd';') (exit $san_rc)"
grep -E "^(cloud|folded) " "$logs/bench.txt"
grep -E "^(cloud|folded) " "$logs/bench-limit.txt" | sed 's/^/limit: /'
[[ -s $logs/variants.txt ]] && echo "variants:" && cat "$logs/variants.txt"
[[ -s $logs/versus-base.txt ]] && echo "against ${versus[*]} in the same run:" &&
  grep -E "^(scene|cloud|folded|pairs differ) |^ratios:|interleave.sh|interleaved runs" \
    "$logs/versus-base.txt"
echo "profiles: nsys.txt $(wc -l <"$logs/nsys.txt") lines, ncu.txt $(wc -l <"$logs/ncu.txt") lines"
[[ $cuda_rc == 0 && $check_rc == 0 && $same == 1 && $san_rc == 0 ]]
