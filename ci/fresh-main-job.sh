#!/usr/bin/env bash
# Times the README's main job on a fresh Debian 12, as a new user meets it:
# a minimal Debian root made by debootstrap (no compiler, no Python, no
# git), a fresh clone of this repository's HEAD in it, and `ci/bench.sh`
# run there as root, installing every package itself (README, "Quick
# start"). The root shares this machine's kernel and CPUs, so run it on a
# quiet machine; CUDA is absent there, and meson leaves it out. Prints the
# elapsed seconds, the install times and the bench's summary line. As root;
# needs debootstrap (installed from Debian when missing) and network access
# to deb.debian.org. A person runs it (about 10 minutes); the tests never
# do.
#
#   ci/fresh-main-job.sh [ROOT_DIR]     (default /var/tmp/sluice-fresh-debian)
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
root=${1:-/var/tmp/sluice-fresh-debian}
if [ "$(id -u)" -ne 0 ]; then
  echo "ci/fresh-main-job.sh: run it as root (it makes a Debian root and chroots into it)" >&2
  exit 2
fi
command -v debootstrap >/dev/null || DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap >&2
unmount() { umount -R "$root/proc" "$root/sys" "$root/dev" 2>/dev/null || true; }
trap unmount EXIT
unmount
rm -rf "$root"
debootstrap --variant=minbase bookworm "$root" http://deb.debian.org/debian >"$root.debootstrap.log" 2>&1
git clone -q "$here" "$root/root/sluice"
cp /etc/resolv.conf "$root/etc/resolv.conf"
mount -t proc proc "$root/proc"
mount --rbind /sys "$root/sys"
mount --rbind /dev "$root/dev"
echo "fresh-main-job: $(git -C "$here" rev-parse --short HEAD), load $(cut -d' ' -f1-3 /proc/loadavg)" >&2
start=$(date +%s)
status=0
chroot "$root" /usr/bin/env -i HOME=/root PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
  /bin/bash -c 'cd /root/sluice && ci/bench.sh' >"$root.out" 2>"$root.err" || status=$?
elapsed=$(($(date +%s) - start))
grep -h 'installed in' "$root.err" >&2 || true
tail -2 "$root.out" >&2
echo "fresh-main-job: ci/bench.sh exited $status after $elapsed s, load $(cut -d' ' -f1-3 /proc/loadavg); output in $root.out and $root.err" >&2
exit "$status"
