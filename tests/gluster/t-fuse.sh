#!/bin/bash
# A FUSE mount (stock glusterfs) over rdma, page cache bypassed
# (--direct-io-mode=enable) so every read reaches the brick: 256 MiB of
# random data written in 128 KiB writes, read back whole and with random
# 4 KiB reads, compared; 2,000 files created, listed, stat'ed and removed.
# The traffic must cross the veth, and the brick log must hold no error of
# the plugin.
set -u
. "$(dirname "$0")/gluster-lib.sh"
name=fusevol
mnt=$GFR_GLUSTER_RUN/$name-mnt
src=$GFR_GLUSTER_RUN/$name-src
fail() { echo "t-fuse: $*"; exit 1; }
cleanup() {
	umount "$mnt" 2>/dev/null
	brick_stop $name
	rm -rf "$src" "$GFR_GLUSTER_RUN/$name" "$GFR_GLUSTER_RUN/$name-got" "$GFR_GLUSTER_RUN/$name-want"
}
trap cleanup EXIT

gluster_setup || exit 1
brick_start $name rdma 24120 || exit 1
client_volfile $name rdma 24120 >"$GFR_GLUSTER_RUN/$name/client.vol"
before=$(fabric_snapshot)
fuse_mount "$mnt" "$GFR_GLUSTER_LOGS/$name-fuse.log" "$GFR_GLUSTER_RUN/$name/client.vol" ||
	fail "the FUSE mount failed"

head -c $((256 << 20)) /dev/urandom >"$src" || fail "cannot make the source data"
start=$(date +%s%N)
dd if="$src" of="$mnt/data" bs=128k conv=fsync status=none || fail "writing 256 MiB through FUSE failed"
echo "t-fuse: wrote 256 MiB in 128 KiB writes in $((($(date +%s%N) - start) / 1000000)) ms"
[ "$(stat -c %s "$GFR_GLUSTER_RUN/$name/brick/data")" = $((256 << 20)) ] ||
	fail "the brick's copy has the wrong size"
want=$(md5sum <"$src")
got=$(dd if="$mnt/data" bs=1M status=none | md5sum)
[ "$got" = "$want" ] || fail "reading the file back in 1 MiB reads gave other data ($got, not $want)"
echo "t-fuse: read back in 1 MiB reads, checksum matches"
got=$GFR_GLUSTER_RUN/$name-got want=$GFR_GLUSTER_RUN/$name-want
for i in $(seq 32); do
	block=$((RANDOM * 2 % 65536))
	dd if="$mnt/data" of="$got" bs=4k skip=$block count=1 status=none &&
		dd if="$src" of="$want" bs=4k skip=$block count=1 status=none ||
		fail "reading 4 KiB block $block failed"
	cmp "$got" "$want" || fail "4 KiB block $block read through FUSE differs from what was written"
done
echo "t-fuse: 32 random 4 KiB reads match (each costs three process starts in this VM)"

mkdir "$mnt/files" || fail "mkdir failed"
for i in $(seq 2000); do echo "file $i" >"$mnt/files/f$i" || fail "creating f$i failed"; done
[ "$(ls "$mnt/files" | wc -l)" = 2000 ] || fail "listing shows $(ls "$mnt/files" | wc -l) files, not 2000"
want_bytes=0
for i in $(seq 2000); do want_bytes=$((want_bytes + ${#i} + 6)); done
got_bytes=$(stat -c %s "$mnt"/files/* | awk '{ s += $1 } END { print s }')
[ "$got_bytes" = "$want_bytes" ] || fail "stat gives $got_bytes bytes in all, not $want_bytes"
[ "$(cat "$mnt/files/f1234")" = "file 1234" ] || fail "f1234 has the wrong content"
rm -r "$mnt/files" || fail "removing the files failed"
[ ! -e "$GFR_GLUSTER_RUN/$name/brick/files" ] || fail "the files are still on the brick"
echo "t-fuse: 2,000 files created, listed, stat'ed and removed"

umount "$mnt" || fail "umount failed"
fabric_check "$before" 10000 "$GFR_GLUSTER_MAX_LO" || exit 1
if plugin_errors "$GFR_GLUSTER_LOGS/$name-brick.log"; then
	fail "the brick log has errors of the plugin"
fi
echo "t-fuse: passed"
