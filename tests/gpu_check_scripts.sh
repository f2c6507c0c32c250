#!/usr/bin/env bash
# The GPU session's tools, checked without a GPU: a session with one gets 15
# minutes, too few to find that bench/interleave.sh or cuda/check-on-gpu.sh
# broke. The GPU programs are stand-ins here (scripts that print what the
# real ones print, and pleat-bench's CPU rows for its CUDA rows), so this
# checks the plumbing: which steps run, what the summary says, the exit
# status. Times are never checked.
#
#   tests/gpu_check_scripts.sh PLEAT-BENCH [FOLDER]
# PLEAT-BENCH: any build (only its CPU rows run); FOLDER: where the
# stand-ins are written and run (default $TMPDIR or /tmp, which may be
# mounted noexec: the test passes its build folder)
set -euo pipefail
bench=$(realpath "$1")
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d "${2:-${TMPDIR:-/tmp}}/gpu-check-scripts.XXXXXX")
trap 'rm -rf "$work"' EXIT
failures=0
expect() { # what, pattern, file
  if grep -qE "$2" "$3"; then
    echo "ok: $1"
  else
    echo "FAIL: $1 (no /$2/ in $3:)"
    sed 's/^/  | /' "$3"
    failures=$((failures + 1))
  fi
}
expect_not() {
  if grep -qE "$2" "$3"; then
    echo "FAIL: $1 (/$2/ in $3)"
    failures=$((failures + 1))
  else
    echo "ok: $1"
  fi
}

# pleat-bench with its CUDA rows swapped for small CPU rows; with a pairs
# offset, it miscounts the folded sheet's pairs by that much (in the table,
# or in --json's rows, as bench/interleave.sh reads them); each run adds its
# path to $work/runs.log
stand_in_bench() { # path, pairs offset
  mkdir -p "$(dirname "$1")"
  cat >"$1" <<EOF
#!/usr/bin/env bash
echo "$1" >>"$work/runs.log"
args=()
while [[ \$# -gt 0 ]]; do
  case \$1 in
    --backend|--sizes|--scenes|--repeats) shift ;;
    *) args+=("\$1") ;;
  esac
  shift
done
"$bench" "\${args[@]}" --backend cpu --sizes 1k --scenes cloud,folded --threads 1 \
  --isa scalar --repeats 1 |
  awk -v d=$2 '\$1 == "folded" && \$2 ~ /^[0-9]+\$/ { \$8 += d }
    /"scene": "folded"/ { json = 1 }
    json && match(\$0, /"pairs": [0-9]+/) {
      n = substr(\$0, RSTART + 9, RLENGTH - 9) + d
      \$0 = substr(\$0, 1, RSTART - 1) "\\"pairs\\": " n substr(\$0, RSTART + RLENGTH)
      json = 0
    }
    { print }'
EOF
  chmod +x "$1"
}
stand_in_check() { # path, last line, exit status
  mkdir -p "$(dirname "$1")"
  printf '#!/usr/bin/env bash\necho "%s"\nexit %s\n' "$2" "$3" >"$1"
  chmod +x "$1"
}

# interleave.sh: three benches, one of which counts other pairs
stand_in_bench "$work/a" 0
stand_in_bench "$work/b" 0
stand_in_bench "$work/c" 1
ROUNDS=2 LABELS="this base odd" "$root/bench/interleave.sh" "$work/a" "$work/b" "$work/c" \
  >"$work/three.txt" 2>&1
expect "two rounds" "^2 interleaved runs each" "$work/three.txt"
printf '%s\n' "$work/a" "$work/b" "$work/c" "$work/c" "$work/b" "$work/a" >"$work/order.txt"
if cmp -s "$work/order.txt" "$work/runs.log"; then echo "ok: each round in reverse order"
else echo "FAIL: the runs' order:"; sed 's/^/  | /' "$work/runs.log"; failures=$((failures + 1))
fi
for l in this base odd; do
  expect "a cloud line for $l" "^cloud +1024 cpu +scalar +1 +$l " "$work/three.txt"
done
expect "the first's ratio is 1" "^folded +1024 cpu +scalar +1 +this .* 1\.00x +1\.00x$" \
  "$work/three.txt"
expect "the odd pair count is said" "^pairs differ in folded 1024 cpu: " "$work/three.txt"
expect_not "the cloud's pairs agree" "^pairs differ in cloud" "$work/three.txt"
if LABELS="a b" "$root/bench/interleave.sh" "$work/a" "$work/b" "$work/c" >"$work/labels.txt" 2>&1
then echo "FAIL: LABELS naming 2 of 3 benches accepted"; failures=$((failures + 1))
else expect "LABELS naming 2 of 3 benches refused" "names 2 benches, not 3" "$work/labels.txt"
fi

# check-on-gpu.sh on stand-ins: a build, a base, a variant that passes, one
# whose check fails and one with nothing built
fake=$work/fake
mkdir -p "$fake/bin"
printf '#!/usr/bin/env bash\necho "Stand-in GPU, 0.0, 1 MiB"\n' >"$fake/bin/nvidia-smi"
chmod +x "$fake/bin/nvidia-smi"
stand_in_check "$fake/build/tests/pleat-check-cuda" "809 passed, 0 failed" 0
stand_in_hash() { # the GPU's result hash (the CPU's is 0123abcd), its run's exit status
  printf '#!/usr/bin/env bash\nif [[ ${1:-} == --cuda ]]; then echo "result hash %s"; exit %s; fi\necho "result hash 0123abcd"\n' \
    "$1" "${2:-0}" >"$fake/build/tests/pleat-check"
  chmod +x "$fake/build/tests/pleat-check"
}
stand_in_hash 0123abcd
stand_in_bench "$fake/build/bench/pleat-bench" 0
stand_in_bench "$fake/base/bench/pleat-bench" 0
stand_in_check "$fake/good/tests/pleat-check-cuda" "809 passed, 0 failed" 0
stand_in_bench "$fake/good/bench/pleat-bench" 0
stand_in_check "$fake/bad/tests/pleat-check-cuda" "800 passed, 9 failed" 1
stand_in_bench "$fake/bad/bench/pleat-bench" 0
gpu_check() { # output file, then VAR=value ...
  local out=$1
  shift
  mkdir -p "$work/out"
  env PATH="$fake/bin:$PATH" OUT="$work/out" BUILD=0 SANITIZE=0 PROFILE=0 STEP_TIMEOUT=120 \
    BASE_ROUNDS=1 "$@" "$root/cuda/check-on-gpu.sh" "$fake/build" >"$out" 2>&1
}
status=0
mkdir -p "$fake/empty"
gpu_check "$work/gpu.txt" BASE="$fake/base" VARIANTS="$fake/good $fake/empty $fake/bad" ||
  status=$?
expect "the GPU check passes" "^same result hash: 1$" "$work/gpu.txt"
((status == 0)) || { echo "FAIL: check-on-gpu.sh exit $status"; failures=$((failures + 1)); }
expect "a passing variant's check" "^good: 809 passed, 0 failed \(exit 0\)$" "$work/gpu.txt"
expect "a failing variant's check" "^bad: 800 passed, 9 failed \(exit 1\)$" "$work/gpu.txt"
expect "a variant without a bench is left out" "^empty: no .*/bench/pleat-bench, not timed$" \
  "$work/gpu.txt"
for l in this base good bad; do
  expect "the summary times $l" "^folded +1024 cpu +scalar +1 +$l " "$work/gpu.txt"
done
expect "the summary's ratios line" "^ratios: the first's \(this\)" "$work/gpu.txt"
expect "the summary's rows with a test limit" "^limit: folded +1024 cpu " "$work/gpu.txt"

# another hash from the GPU fails the check; no BASE nor VARIANTS, no table
stand_in_hash ffff0000
status=0
gpu_check "$work/gpu-differs.txt" || status=$?
expect "other bits are said" "^same result hash: 0$" "$work/gpu-differs.txt"
((status != 0)) || { echo "FAIL: check-on-gpu.sh passed other bits"; failures=$((failures + 1)); }
expect_not "no table without BASE or VARIANTS" "interleaved runs" "$work/gpu-differs.txt"

# each GPU step's failure fails the check, the same hashes or not: the
# check against the CPU, pleat-check --cuda, a sanitizer
fails_with() { # what, the summary's line, then VAR=value ...
  local what=$1 line=$2
  shift 2
  status=0
  gpu_check "$work/fails.txt" "$@" || status=$?
  expect "$what is said" "$line" "$work/fails.txt"
  ((status != 0)) || { echo "FAIL: check-on-gpu.sh passed $what"; failures=$((failures + 1)); }
}
stand_in_hash 0123abcd
stand_in_check "$fake/build/tests/pleat-check-cuda" "800 passed, 9 failed" 1
fails_with "the GPU check's failure" "^GPU against CPU: 800 passed, 9 failed \(exit 1\)$"
stand_in_check "$fake/build/tests/pleat-check-cuda" "809 passed, 0 failed" 0
stand_in_hash 0123abcd 3
fails_with "pleat-check --cuda's failure" "^pleat-check --cuda: result hash 0123abcd \(exit 3\)$"
stand_in_hash 0123abcd
printf '#!/usr/bin/env bash\necho "========= ERROR SUMMARY: 2 errors"\nexit 1\n' \
  >"$fake/bin/compute-sanitizer"
chmod +x "$fake/bin/compute-sanitizer"
fails_with "a sanitizer's finding" "^sanitizers: .*ERROR SUMMARY: 2 errors.*\(exit 1\)$" SANITIZE=1
rm "$fake/bin/compute-sanitizer"

# the experiments waiting for a GPU: each patch still applies to this tree
# (a patch that main's changes broke would fail only in the GPU session),
# each -D flag names a macro that the tree or the patch still reads (else
# the variant would quietly build main), and no name is listed twice.
# git apply checks the tree itself, never a repository above it (where it
# would skip the patch's paths and pass).
names=()
while read -r name patch flags; do
  [[ -z $name || $name == \#* ]] && continue
  names+=("$name")
  sources=("$root/cuda")
  if [[ $patch != - ]]; then
    sources+=("$root/cuda/experiments/$patch")
    if GIT_CEILING_DIRECTORIES=$(dirname "$root") git -C "$root" apply --check \
      "$root/cuda/experiments/$patch" 2>"$work/apply.txt"; then
      echo "ok: $name's $patch applies"
    else
      echo "FAIL: $name's $patch does not apply: rebase it on this tree"
      sed 's/^/  | /' "$work/apply.txt"
      failures=$((failures + 1))
    fi
  fi
  for flag in $flags; do
    macro=${flag#-D}
    macro=${macro%%=*}
    if grep -rqw -- "$macro" "${sources[@]}"; then
      echo "ok: $name's $macro is read"
    else
      echo "FAIL: $name's $macro is read nowhere in cuda/ or its patch"
      failures=$((failures + 1))
    fi
  done
done <"$root/cuda/experiments/variants"
twice=$(printf '%s\n' "${names[@]}" | sort | uniq -d)
if [[ -n $twice ]]; then echo "FAIL: listed twice: $twice"; failures=$((failures + 1))
elif ((${#names[@]} == 0)); then echo "FAIL: no experiment listed"; failures=$((failures + 1))
else echo "ok: ${#names[@]} experiments, each named once"
fi

echo "$failures failed"
((failures == 0))
