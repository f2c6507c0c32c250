#!/usr/bin/env bash
# wine-run.sh WINE PROGRAM [ARGUMENT...]: runs PROGRAM under the Wine loader
# WINE, passing its output, error output and status through as they come.
#
# Debian's Wine 8 (wine64 8.0) now and then quits at start-up, within
# milliseconds, with status 1 and no output, before the program's main()
# runs: pleat-check --help, whose main() prints its usage first thing, did so
# 3 times in 17,500 starts here, and a CI run lost its Windows test to it
# (check.sse2 "Failed 0.00 sec", nothing printed). Another CI run, on a
# loaded machine, lost one to the Wine server dropping the program's
# connection: status 1, nothing on stdout and only "wine client error:0:
# recvmsg: Connection reset by peer" on stderr. A start that ends so,
# status 1 with nothing written but Wine's own client errors, is made
# again, at most twice, with a note on stderr. pleat's programs print what
# went wrong before they fail, so a real failure is never run twice.
set -u
wine=$1
shift
dir=$(mktemp -d) || exit 1
trap 'rm -rf "$dir"' EXIT
for try in 1 2 3; do
  # stdout through fd 3 to the outer tee, stderr to the inner one
  (
    "$wine" "$@" 2>&1 >&3 3>&- | tee "$dir/err" >&2
    exit "${PIPESTATUS[0]}"
  ) 3>&1 | tee "$dir/out"
  rc=${PIPESTATUS[0]}
  if ((rc != 1)) || [[ -s $dir/out ]] || grep -qv '^wine client error:' "$dir/err"; then
    exit "$rc"
  fi
  echo "wine-run.sh: Wine quit before the program ran (status 1, no output of its own)," \
    "try $try of 3: $1" >&2
done
exit "$rc"
