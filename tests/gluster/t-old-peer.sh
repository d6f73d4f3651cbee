#!/bin/bash
# An old peer and a new one (issue 35; docs/multi-rail.md, "Peers without
# rails"): the build in GFR_OLD_BUILDDIR, from before rails existed
# (tests/old-peer makes it), against this one with rails on, both ways
# round, over the test fabric's two rails (fabric_rails_up):
#  - engine-test: an old server and a new client with rails=auto, then a
#    new server offering both rail addresses and an old client; 500
#    requests with replies up to 256 KiB (RDMA-written replies, pulled
#    requests), each checked byte by byte;
#  - GlusterFS: an old brick (its rdma.so loaded as transport ib-verbs,
#    as perf/compare-builds does) and a FUSE mount with rails auto, then a
#    brick offering both rails and a mount of the old build; 16 MiB of
#    random data written in 1 MiB writes and read back, compared.
# Checked each time: every call or byte right, no "bailing out frame", the
# new side says the peer keeps it on one rail where it can tell, and the
# second rail's veth pair carried nothing of it.
set -u
. "$(dirname "$0")/gluster-lib.sh"
old=${GFR_OLD_BUILDDIR:-}
new_prog=${GFR_BUILDDIR:?}/tests/softroce/engine-test
old_prog=$old/tests/softroce/engine-test
old_plugin=$old/rpc-transport-rdma/.libs/rdma.so
name=oldpeer
port=24180
mnt=$GFR_GLUSTER_RUN/$name-mnt
src=$GFR_GLUSTER_RUN/$name-src
pair_init
fail() { echo "t-old-peer: $*"; exit 1; }
cleanup() {
	umount "$mnt" 2>/dev/null || umount -l "$mnt" 2>/dev/null
	brick_stop $name
	rm -rf "$src" "$GFR_GLUSTER_RUN/$name" "$GFR_GLUSTER_RUN/transports/ib-verbs.so"
	pair_cleanup
	fabric_rails_down
}
trap cleanup EXIT

[ -n "$old" ] || fail "GFR_OLD_BUILDDIR names no build of an older version (tests/old-peer makes one)"
[ -x "$old_prog" ] && [ -f "$old_plugin" ] ||
	fail "$old has no engine-test or rdma.so: build it with tests/old-peer"
[ -x "$new_prog" ] || fail "$new_prog is not built"
gluster_setup || exit 1
fabric_rails_up || exit 1
offer="rail-addresses=$GFR_SERVER_ADDR,$GFR_SERVER_ADDR2"

# second_rail_quiet WHAT BEFORE: the second rail's veth pair sent (almost)
# nothing since BEFORE (fabric_rails_tx): a few packets of the kernel's own
# (IPv6 router solicitations) at most.
second_rail_quiet() {
	local tx=($(fabric_rails_tx "$2"))
	[ "${tx[2]}" -lt 20 ] && [ "${tx[3]}" -lt 20 ] ||
		fail "$1: the second rail's veth2 and veth3 sent ${tx[2]} and ${tx[3]} packets"
	echo "t-old-peer: $1: veth0..3 sent ${tx[*]} packets"
}

# calls_checked WHAT: the last run_pair's 500 calls were each answered
# right and run once by the server (rails_calls_once).
calls_checked() {
	local n
	n=$(rails_calls_once) || { cat "$pair_dir/client" "$pair_dir/server"; fail "$1: $n"; }
	[ "$n" = 500 ] && grep -q " requests with replies of 1..262144 bytes " "$pair_dir/client" ||
		fail "$1: $n calls of up to 256 KiB answered, not 500"
}

before=$(fabric_rails_tx)
run_pair t-old-peer 120 "$old_prog" server 0.0.0.0 20130 -r -- \
	"$new_prog" client "$GFR_SERVER_ADDR" 20130 "$GFR_CLIENT_ADDR" -r -n 500 -b 16 -s 262144 \
	-o rails=auto || fail "a new client with rails and an old server: the calls failed"
calls_checked "old server, new client"
grep -q "the server offered none" "$pair_dir/client" ||
	fail "old server, new client: the client did not say it stays on one rail"
grep -q "bundle .* rail 1 on" "$pair_dir/client" && fail "old server, new client: a second rail joined"
second_rail_quiet "old server, new client with rails" "$before"

before=$(fabric_rails_tx)
run_pair t-old-peer 120 "$new_prog" server 0.0.0.0 20131 -r -o rails=auto -o "$offer" -- \
	"$old_prog" client "$GFR_SERVER_ADDR" 20131 "$GFR_CLIENT_ADDR" -r -n 500 -b 16 -s 262144 ||
	fail "a new server with rails and an old client: the calls failed"
calls_checked "new server, old client"
second_rail_quiet "new server with rails, old client" "$before"

# GlusterFS: the old build's plugin is transport ib-verbs (rpc_transport_load
# maps the name to ib-verbs.so), the new one rdma.
cp "$old_plugin" "$GFR_GLUSTER_RUN/transports/ib-verbs.so" || fail "cannot install $old_plugin as ib-verbs.so"
head -c $((16 << 20)) /dev/urandom >"$src" || fail "cannot make the source data"
want=$(md5sum <"$src")

# round_trip WHAT LOG CLIENT-TRANSPORT [OPTION-LINE...]: a FUSE mount of the
# running brick, logging to LOG; the data written and read back, compared;
# unmounted.
round_trip() {
	local what=$1 log=$2 transport=$3 got
	shift 3
	rm -f "$log"
	client_volfile $name "$transport" $port "$@" >"$GFR_GLUSTER_RUN/$name/client.vol"
	fuse_mount "$mnt" "$log" "$GFR_GLUSTER_RUN/$name/client.vol" || fail "$what: the FUSE mount failed"
	grep -q " $(gluster_transportdir)/$transport.so$" \
		"/proc/$(pgrep -f "glusterfs -f $GFR_GLUSTER_RUN/$name/client.vol" | head -n 1)/maps" ||
		fail "$what: the mount did not load $transport.so"
	dd if="$src" of="$mnt/data" bs=1M conv=fsync status=none || fail "$what: writing 16 MiB failed"
	got=$(dd if="$mnt/data" bs=1M status=none | md5sum)
	[ "$got" = "$want" ] || fail "$what: reading the file back gave other data ($got, not $want)"
	umount "$mnt" || fail "$what: cannot unmount"
	grep -q "bailing out frame" "$log" "$GFR_GLUSTER_LOGS/$name-brick.log" &&
		fail "$what: a call bailed out"
	echo "t-old-peer: $what: 16 MiB written and read back"
}

before=$(fabric_rails_tx)
brick_start $name ib-verbs $port || fail "the old build's brick did not start"
grep -q " $(gluster_transportdir)/ib-verbs.so$" "/proc/$(brick_pid $name)/maps" ||
	fail "the old brick did not load ib-verbs.so"
round_trip "old brick, new mount with rails" "$GFR_GLUSTER_LOGS/$name-new.log" rdma \
	"transport.rdma.rails auto"
grep -q "the server offered none" "$GFR_GLUSTER_LOGS/$name-new.log" ||
	fail "old brick, new mount: the mount did not say it stays on one rail"
second_rail_quiet "old brick, new mount with rails" "$before"
brick_stop $name

before=$(fabric_rails_tx)
rails_brick $name $port || fail "the brick with rails did not start"
round_trip "new brick with rails, old mount" "$GFR_GLUSTER_LOGS/$name-old.log" ib-verbs
second_rail_quiet "new brick with rails, old mount" "$before"
echo "t-old-peer: the builds in $old and $GFR_BUILDDIR work together both ways round, on one rail"
