#!/bin/bash
# The Debian package (debian/, scripts/build-deb) in a fresh root: the VM's
# root (the host's Debian 12, or softroce-run --root's Debian 13) under an
# overlay whose upper layer is VM-local, so that the root itself is never
# changed.  There the package installs with dpkg, glusterfs-rdma-setup makes
# that root's glusterd listen on rdma, glusterd creates and starts a volume
# over rdma, which is mounted over rdma and passes a data check, with the
# package's own rdma.so (no build tree in sight); `glusterfs-rdma-setup
# --undo` restores glusterd.vol byte for byte; then the package is purged
# (saying how to undo a setup still in place), and nothing of it may
# remain: none of its files, directories it created, conffiles or dpkg
# records.
#
# The package comes from ${GFR_BUILDDIR}-deb (scripts/check builds it
# there); GFR_DEB names another .deb.  Skipped (77) in a sanitizer
# build's suite unless GFR_DEB is set.
set -u
. "$(dirname "$0")/gluster-lib.sh"
fail() { echo "t-package: $*"; exit 1; }

# The package is built without sanitizers, so a sanitizer build's suite has
# nothing of its own to check here: the plain suite runs this test.
if [ -n "$gfr_sanitizer_runtime" ] && [ -z "${GFR_DEB:-}" ]; then
	echo "t-package: skipped: $GFR_BUILDDIR is a sanitizer build and the package has no sanitizers (GFR_DEB=FILE runs it here)"
	exit 77
fi
deb=${GFR_DEB:-$(ls "${GFR_BUILDDIR}-deb"/glusterfs-rdma_*_"$(dpkg --print-architecture)".deb 2>/dev/null | tail -n1)}
[ -n "$deb" ] && [ -f "$deb" ] ||
	fail "no package in ${GFR_BUILDDIR}-deb: scripts/build-deb ${GFR_BUILDDIR}-deb makes one"

run=/run/gfr-package
root=$run/root
cli() { in_root timeout 120 gluster --mode=script "$@"; }
in_root() { chroot "$root" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin DEBIAN_FRONTEND=noninteractive "$@" </dev/null; }
cleanup() {
	local p
	in_root umount /run/mnt 2>/dev/null
	for p in /proc/[0-9]*; do
		[ "$(readlink "$p/root" 2>/dev/null)" = "$root" ] && kill -9 "${p#/proc/}" 2>/dev/null
	done
	sleep 1
	mkdir -p "$GFR_GLUSTER_LOGS/package"
	cp -r "$root"/var/log/glusterfs/. "$GFR_GLUSTER_LOGS/package/" 2>/dev/null
	cp "$run"/*.log "$GFR_GLUSTER_LOGS/package/" 2>/dev/null
	umount -R "$root" 2>/dev/null
	umount "$run" 2>/dev/null
}
trap cleanup EXIT

modprobe overlay 2>/dev/null
modprobe loop 2>/dev/null
modprobe fuse 2>/dev/null
mkdir -p "$run" && mount -t tmpfs -o size=1g tmpfs "$run" || fail "cannot mount a tmpfs on $run"
mkdir -p "$run"/upper "$run"/work "$root"
mount -t overlay overlay -o lowerdir=/,upperdir="$run"/upper,workdir="$run"/work "$root" ||
	fail "cannot put an overlay over the VM's root (modprobe overlay?)"
mount -t proc proc "$root"/proc && mount -t sysfs sysfs "$root"/sys &&
	mount --rbind /dev "$root"/dev && mount -t tmpfs -o mode=755 tmpfs "$root"/run ||
	fail "cannot mount /proc, /sys, /dev and /run in the overlay root"
mkdir -p "$root"/run/pkg "$root"/run/mnt "$root"/run/brick "$root"/run/gluster
cp "$deb" "$root"/run/pkg/ || fail "cannot copy $deb into the root"
pkg=/run/pkg/$(basename "$deb")

# What the package holds, and which of its directories the root lacks
# (dpkg must remove those on purge, and only those).
dpkg-deb -c "$deb" | awk '{ print $6 }' | sed 's:^\./:/:; s:/$::; /^$/d' >"$run/contents"
while read -r path; do
	if [ -d "$root$path" ] && [ ! -L "$root$path" ]; then
		echo "$path" >>"$run/dirs-before"
	elif [ -e "$root$path" ] || [ -L "$root$path" ]; then
		fail "the root is not fresh: $path is there before the package"
	fi
done <"$run/contents"
in_root dpkg-query -W glusterfs-rdma >/dev/null 2>&1 && fail "the root already knows the package glusterfs-rdma"

# --- install
# man-db's trigger would re-index every man page of the root through 9p,
# a minute or two in the emulated VM at install and again at purge; what
# the test asks of man(1) needs no index.  (Debian's container images turn
# it off the same way.)
rm -f "$root"/var/lib/man-db/auto-update
in_root dpkg -i "$pkg" >"$run/dpkg-install.log" 2>&1 ||
	{ cat "$run/dpkg-install.log"; fail "dpkg -i $(basename "$deb") failed in the $(. "$root"/etc/os-release; echo "$PRETTY_NAME") root"; }
[ "$(in_root dpkg-query -W -f='${db:Status-Abbrev}' glusterfs-rdma)" = "ii " ] ||
	fail "dpkg does not list glusterfs-rdma as installed"
tdir=$(in_root dpkg -L glusterfs-rdma | grep '/rpc-transport/rdma\.so$')
[ -n "$tdir" ] && [ -f "$root${tdir%/rdma.so}/socket.so" ] ||
	fail "the package put rdma.so ('$tdir') elsewhere than beside this GlusterFS's socket.so"
for page in glusterfs-rdma.7 gfr-stat.1 gfr-perf.1 glusterfs-rdma-setup.8; do
	in_root man -w "${page##*.}" "${page%.*}" >/dev/null || fail "man ${page##*.} ${page%.*} finds no page"
done
in_root gfr-perf --help >/dev/null 2>&1 || fail "the installed gfr-perf does not run"
echo "t-package: $(basename "$deb") installed ($tdir; ${SECONDS}s)"

# --- a glusterd-managed volume over rdma, with what the package installed
cp -p "$root/etc/glusterfs/glusterd.vol" "$run/glusterd.vol.original" ||
	fail "the root has no /etc/glusterfs/glusterd.vol"
in_root glusterfs-rdma-setup >"$run/setup.log" 2>&1 ||
	{ cat "$run/setup.log"; fail "glusterfs-rdma-setup failed"; }
truncate -s 200M "$run/brick.img" && mkfs.ext4 -q -F "$run/brick.img" &&
	mount -o loop "$run/brick.img" "$root/run/brick" || fail "cannot make the ext4 brick"
before=$(fabric_snapshot)
in_root glusterd -p /run/glusterd.pid || fail "glusterd did not start"
for i in $(seq 100); do cli volume list >/dev/null 2>&1 && break; sleep 0.3; done
cli volume list >/dev/null || fail "glusterd does not answer the CLI"
glog=$root/var/log/glusterfs/glusterd.log
grep -q "listening for RDMA connections on .*:24008" "$glog" ||
	fail "glusterd is not listening on rdma with the package's rdma.so"
cli volume create pkgvol transport rdma "$GFR_SERVER_ADDR:/run/brick/b" force || fail "volume create failed"
cli volume start pkgvol || fail "volume start failed"
cli volume status pkgvol --xml >"$run/status.xml" || fail "volume status failed"
grep -q "<rdma>[1-9][0-9]*</rdma>" "$run/status.xml" && grep -q "<status>1</status>" "$run/status.xml" ||
	fail "the brick has no RDMA port in glusterd's portmap or is not online"
in_root mount -t glusterfs -o transport=rdma "$GFR_SERVER_ADDR:/pkgvol" /run/mnt || fail "mount -o transport=rdma failed"
head -c $((8 << 20)) /dev/urandom >"$root/run/src"
in_root dd if=/run/src of=/run/mnt/data bs=128k conv=fsync status=none || fail "writing to the volume failed"
in_root umount /run/mnt && in_root mount -t glusterfs -o transport=rdma "$GFR_SERVER_ADDR:/pkgvol" /run/mnt ||
	fail "remounting the volume failed"
in_root cmp /run/src /run/mnt/data || fail "the volume returned other data than was written"
in_root umount /run/mnt || fail "umount failed"
fabric_check "$before" 500 1000000 || fail "the volume's traffic did not cross the fabric"
cli volume stop pkgvol force >/dev/null && cli volume delete pkgvol >/dev/null || fail "stopping and deleting the volume failed"
kill "$(cat "$root/run/glusterd.pid")" 2>/dev/null
for log in "$glog" "$root"/var/log/glusterfs/bricks/*.log; do
	if plugin_errors "$log"; then fail "$log has errors of the plugin"; fi
done
echo "t-package: a glusterd-managed volume over rdma was created, mounted over rdma and data-checked (${SECONDS}s)"

# --- --undo: glusterd.vol as it was, byte for byte
in_root glusterfs-rdma-setup --undo >"$run/undo.log" 2>&1 ||
	{ cat "$run/undo.log"; fail "glusterfs-rdma-setup --undo failed"; }
cmp "$run/glusterd.vol.original" "$root/etc/glusterfs/glusterd.vol" ||
	fail "glusterfs-rdma-setup --undo did not restore glusterd.vol byte for byte"
[ ! -e "$root/etc/glusterfs/glusterd.vol.before-rdma" ] || fail "--undo left its backup behind"
# Set up again, so that the purge below has an edit to tell about.
in_root glusterfs-rdma-setup >>"$run/setup.log" 2>&1 || fail "glusterfs-rdma-setup after --undo failed"
echo "t-package: glusterfs-rdma-setup --undo restored glusterd.vol byte for byte (${SECONDS}s)"

# --- purge: nothing of the package remains
in_root dpkg --purge glusterfs-rdma >"$run/dpkg-purge.log" 2>&1 ||
	{ cat "$run/dpkg-purge.log"; fail "dpkg --purge glusterfs-rdma failed"; }
grep -q "mv /etc/glusterfs/glusterd.vol.before-rdma /etc/glusterfs/glusterd.vol" "$run/dpkg-purge.log" ||
	{ cat "$run/dpkg-purge.log"; fail "the purge did not say how to undo glusterfs-rdma-setup's edit"; }
[ -z "$(in_root dpkg-query -W -f='${db:Status-Abbrev}' glusterfs-rdma 2>/dev/null)" ] ||
	fail "dpkg still has a record of glusterfs-rdma after the purge"
left=$(ls "$root"/var/lib/dpkg/info/glusterfs-rdma.* 2>/dev/null)
[ -z "$left" ] || fail "dpkg's files of the package remain: $left"
while read -r path; do
	grep -qxF "$path" "$run/dirs-before" 2>/dev/null && continue
	if [ -e "$root$path" ] || [ -L "$root$path" ]; then
		fail "$path remains after the purge"
	fi
done <"$run/contents"
echo "t-package: purged; none of its $(wc -l <"$run/contents") paths, conffiles or dpkg records remain (${SECONDS}s)"
echo "t-package: passed"
