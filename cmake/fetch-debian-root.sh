#!/usr/bin/env bash
# Unpacks Debian's Criterion for another architecture (arm64 or i386), with
# every library it needs, into DIR, for the cross builds' Criterion suites.
# They are unpacked, not installed: Criterion cannot be installed for two
# architectures at once (libnanomsg5 is not co-installable), and an
# installed foreign libc would be found beside the cross toolchain's own.
# - arm64: the whole C runtime too, libc6 included: the NEON tests run under
#   qemu-user on this root (qemu -L DIR).
# - i386: without libc6: the -m32 tests run natively on the host's 32-bit
#   C runtime (gcc's multilib: its loader must meet its own libc), with
#   DIR's libraries on LD_LIBRARY_PATH (tests/x86_32.cmake).
# Needs ARCH among dpkg's architectures (dpkg --add-architecture ARCH, then
# apt-get update). Usage: fetch-debian-root.sh ARCH DIR (DIR is replaced
# whole, so an interrupted run never leaves a partial root behind).
set -euo pipefail
arch=${1:?usage: $0 ARCH DIR}
dir=$(realpath -m "${2:?usage: $0 ARCH DIR}")
case $arch in
arm64) triplet=aarch64-linux-gnu skip='^$' ;;
i386) triplet=i386-linux-gnu skip='^libc6:i386$' ;;
*) echo "$0: ARCH is arm64 or i386, not $arch" >&2; exit 2 ;;
esac
work=$dir.partial
rm -rf "$work"
mkdir -p "$work/.debs"
cd "$work/.debs"
# libcriterion3 and what it needs at run time
mapfile -t pkgs < <(apt-cache depends --recurse --no-recommends --no-suggests --no-conflicts \
  --no-breaks --no-replaces --no-enhances "libcriterion3:$arch" |
  grep -E "^[a-z0-9].*:$arch\$" | grep -Ev "$skip" | sort -u)
((${#pkgs[@]} > 1)) || {
  echo "apt knows no libcriterion3:$arch: $arch not added, or no apt-get update since" >&2
  exit 1
}
# tried again after a pause: a dropped download would cost CI the suites
for try in 1 2 3; do
  apt-get download -qq "${pkgs[@]}" && break
  ((try < 3)) || exit 1
  sleep 30
done
for deb in *.deb; do dpkg -x "$deb" "$work"; done
test -e "$work/usr/lib/$triplet/libcriterion.so.3"
rm -rf "$work/.debs" "$dir"
mv "$work" "$dir"
echo "$arch Criterion with its libraries in $dir (${#pkgs[@]} packages)"
