#!/usr/bin/env bash
# Times pleat-bench binaries against each other on this machine: runs them
# one after the other ROUNDS times with the same arguments, each round in
# the reverse order of the one before (so a steady drift favours none of
# them), reads their --json output (ms to 6 decimals), then prints per
# row, one line per bench, the best and the median of its per-run medians
# and its ratios to the first (the first's time over its own: above 1, it
# is the faster). Interleaving and minima matter on shared machines, whose
# speed can drift by 2x within minutes: a single pair of runs compares the
# drift. bench/compare.sh builds two from git revisions; cuda/check-on-gpu.sh
# passes a baseline build's and experimental variants'.
#
#   bench/interleave.sh FIRST-BENCH OTHER-BENCH... [pleat-bench options]
#
# The benches are the arguments before the first option. LABELS names them
# (one word each; default "old new" for two, else b0 b1 ...). ROUNDS
# (default 8) sets the rounds; with SECONDS_MAX, no round starts after that
# many seconds (the table then covers the rounds run). Every run's rows go
# to RUNS (default: a temporary file). A row whose pair count differs
# between the benches is said: they then do not compute the same thing.
# Every run is given --no-profile, --no-baseline and --json: the stages are
# not timed apart and the plain grid is not timed. With no row to compare
# (every run failed, or the benches share none), the exit status is 1.
set -euo pipefail
benches=()
while [[ $# -gt 0 && $1 != -* ]]; do
  benches+=("$1")
  shift
done
[[ ${#benches[@]} -ge 2 ]] || { sed -n '2,20p' "$0"; exit 2; }
for bench in "${benches[@]}"; do
  [[ -x $bench ]] || { echo "interleave.sh: no pleat-bench at $bench" >&2; exit 2; }
done
if [[ -n ${LABELS:-} ]]; then
  read -r -a labels <<<"$LABELS"
elif [[ ${#benches[@]} -eq 2 ]]; then
  labels=(old new)
else
  labels=()
  for i in "${!benches[@]}"; do labels+=("b$i"); done
fi
[[ ${#labels[@]} -eq ${#benches[@]} ]] ||
  { echo "interleave.sh: LABELS names ${#labels[@]} benches, not ${#benches[@]}" >&2; exit 2; }
rounds=${ROUNDS:-8}
if [[ -z ${RUNS:-} ]]; then
  RUNS=$(mktemp)
  trap 'rm -f "$RUNS"' EXIT
fi

args=(--no-profile --no-baseline "$@" --json)
: >"$RUNS"
# One line per row of a run's JSON on stdin: label scene n backend isa
# threads ms pairs. Rows of a run that failed midway still count.
rows_of() {
  python3 -c '
import json, sys
try:
    doc = json.load(sys.stdin)
except ValueError:
    sys.exit(0)  # no JSON: the run failed before its report, said below
for r in doc.get("results", []):
    print(sys.argv[1], r["scene"], r["n"], r["backend"], r["isa"] or "-", r["threads"],
          repr(r["ms_per_call"]), r["pairs"])
' "$1"
}
done_rounds=0
order=("${!benches[@]}")
for ((r = 1; r <= rounds; ++r)); do
  [[ -n ${SECONDS_MAX:-} ]] && ((SECONDS >= SECONDS_MAX)) && break
  for i in "${order[@]}"; do
    "${benches[i]}" "${args[@]}" | rows_of "${labels[i]}" >>"$RUNS" ||
      echo "interleave.sh: the ${labels[i]} bench (${benches[i]}) failed in round $r" >&2
  done
  reversed=()
  for ((k = ${#order[@]} - 1; k >= 0; --k)); do reversed+=("${order[k]}"); done
  order=("${reversed[@]}")
  done_rounds=$r
done

echo "$done_rounds interleaved runs each; ms per call"
python3 - "$RUNS" "${labels[@]}" <<'PY'
import collections, statistics, sys
labels = sys.argv[2:]
rows = collections.defaultdict(lambda: collections.defaultdict(list))
pairs = collections.defaultdict(set)
for line in open(sys.argv[1]):
    v, scene, n, backend, isa, threads, ms, npairs = line.split()
    key = (scene, int(n), backend, isa, threads)
    rows[key][v].append(float(ms))
    pairs[key].add(npairs)
width = max(7, max(len(l) for l in labels))
print("%-9s %8s %-10s %-6s %3s  %-*s %9s %9s  %7s %7s" % (
    "scene", "n", "backend", "isa", "thr", width, "version", "best", "median", "best x", "med x"))
shown = 0
for key in sorted(rows):
    r = rows[key]
    if any(not r[l] for l in labels):
        continue
    shown += 1
    best = [min(r[l]) for l in labels]
    med = [statistics.median(r[l]) for l in labels]
    for l, b, m in zip(labels, best, med):
        print("%-9s %8d %-10s %-6s %3s  %-*s %9.4f %9.4f  %6.2fx %6.2fx" % (
            key + (width, l, b, m, best[0] / b, med[0] / m)))
    if len(pairs[key]) > 1:
        print("pairs differ in %s %d %s: %s" % (key[0], key[1], key[2], " ".join(sorted(pairs[key]))))
print("ratios: the first's (%s) time over each other's; above 1, that one is the faster"
      % labels[0])
if not shown:
    sys.exit("interleave.sh: no row that every bench ran")
PY
