#!/usr/bin/env bash
# Unpacks Debian's arm64 C runtime and Criterion (with every library it
# needs) into DIR, for the NEON tests under qemu-user (qemu -L DIR). They are
# unpacked, not installed: Criterion cannot be installed for two
# architectures at once (libnanomsg5 is not co-installable), and an
# installed arm64 libc would be found beside the cross toolchain's own.
# Needs arm64 among dpkg's architectures (dpkg --add-architecture arm64,
# then apt-get update). Usage: fetch-aarch64-root.sh DIR (replaced whole,
# so an interrupted run never leaves a partial root behind).
set -euo pipefail
dir=$(realpath -m "${1:?usage: $0 DIR}")
work=$dir.partial
rm -rf "$work"
mkdir -p "$work/.debs"
cd "$work/.debs"
# libcriterion3:arm64 and what it needs at run time, libc6 included
mapfile -t pkgs < <(apt-cache depends --recurse --no-recommends --no-suggests --no-conflicts \
  --no-breaks --no-replaces --no-enhances libcriterion3:arm64 | grep -E '^[a-z0-9].*:arm64$' | sort -u)
((${#pkgs[@]} > 1)) || { echo "apt knows no libcriterion3:arm64: arm64 not added, or no apt-get update since" >&2; exit 1; }
apt-get download -qq "${pkgs[@]}"
for deb in *.deb; do dpkg -x "$deb" "$work"; done
test -e "$work/usr/lib/aarch64-linux-gnu/libcriterion.so.3"
rm -rf "$work/.debs" "$dir"
mv "$work" "$dir"
echo "arm64 runtime with Criterion in $dir (${#pkgs[@]} packages)"
