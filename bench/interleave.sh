#!/usr/bin/env bash
# Times two pleat-bench binaries against each other on this machine: runs
# them one after the other ROUNDS times with the same arguments, then prints
# per row the best and the median of each one's per-run medians, and their
# ratio (old / new: above 1, new is the faster). Interleaving and minima
# matter on shared machines, whose speed can drift by 2x within minutes: a
# single pair of runs compares the drift. bench/compare.sh builds the two
# from git revisions; cuda/check-on-gpu.sh passes a baseline build's.
#
#   bench/interleave.sh OLD-BENCH NEW-BENCH [pleat-bench options]
#
# ROUNDS (default 8) sets the rounds; with SECONDS_MAX, no round starts
# after that many seconds (the table then covers the rounds run). Every
# run's rows go to RUNS (default: a temporary file). Profiling is off
# (--no-profile) and the baseline is not timed (--no-baseline) unless asked
# for.
set -euo pipefail
[[ $# -ge 2 ]] || { sed -n '2,16p' "$0"; exit 2; }
old=$1 new=$2
shift 2
for bench in "$old" "$new"; do
  [[ -x $bench ]] || { echo "interleave.sh: no pleat-bench at $bench" >&2; exit 2; }
done
rounds=${ROUNDS:-8}
if [[ -z ${RUNS:-} ]]; then
  RUNS=$(mktemp)
  trap 'rm -f "$RUNS"' EXIT
fi

args=(--no-profile --no-baseline "$@")
: >"$RUNS"
done_rounds=0
for ((r = 1; r <= rounds; ++r)); do
  [[ -n ${SECONDS_MAX:-} ]] && ((SECONDS >= SECONDS_MAX)) && break
  for v in old new; do
    # a failed run is said, and its rows (if any) still count
    "${!v}" "${args[@]}" |
      awk -v v="$v" '$2 ~ /^[0-9]+$/ { print v, $1, $2, $3, $4, $5, $6 }' >>"$RUNS" ||
      echo "interleave.sh: the $v bench (${!v}) failed in round $r" >&2
  done
  done_rounds=$r
done

echo "$done_rounds interleaved runs each; ms per call"
python3 - "$RUNS" <<'PY'
import collections, statistics, sys
rows = collections.defaultdict(lambda: collections.defaultdict(list))
for line in open(sys.argv[1]):
    v, scene, n, backend, isa, threads, ms = line.split()
    rows[(scene, int(n), backend, isa, threads)][v].append(float(ms))
print("%-9s %8s %-10s %-6s %3s  %9s %9s  %9s %9s  %7s %7s" % (
    "scene", "n", "backend", "isa", "thr", "old best", "new best", "old med", "new med",
    "best x", "med x"))
for key in sorted(rows):
    r = rows[key]
    if not r["old"] or not r["new"]:
        continue
    ob, nb = min(r["old"]), min(r["new"])
    om, nm = statistics.median(r["old"]), statistics.median(r["new"])
    print("%-9s %8d %-10s %-6s %3s  %9.3f %9.3f  %9.3f %9.3f  %6.2fx %6.2fx" % (
        key + (ob, nb, om, nm, ob / nb, om / nm)))
PY
