#!/bin/bash
# Multi-rail through stock GlusterFS (docs/multi-rail.md): over the test
# fabric's two rails (fabric_rails_up), a brick that offers both rail
# addresses (listening on every address, as glusterd's bricks do) and a
# FUSE mount with transport.rdma.rails auto.  64 MiB of random data are
# written in 1 MiB writes and read back whole, compared; then gfr-stat of
# the client shows a bundle of two rails on the client's two devices, and
# perf/rail-split, with the brick's statistics and the veth counters,
# says each rail carried a share of the bytes and of the messages and
# that gfr-stat's bytes per rail match what crossed that rail's veth
# pair.
set -u
. "$(dirname "$0")/gluster-lib.sh"
name=railvol
port=24160
mnt=$GFR_GLUSTER_RUN/$name-mnt
src=$GFR_GLUSTER_RUN/$name-src
dir=$GFR_GLUSTER_RUN/$name-stats
split=$(dirname "$0")/../../perf/rail-split
gfr_stat=${GFR_BUILDDIR:?}/tools/gfr-stat
fail() { echo "t-rails: $*"; exit 1; }
cleanup() {
	umount "$mnt" 2>/dev/null
	brick_stop $name
	rm -rf "$src" "$dir" "$GFR_GLUSTER_RUN/$name"
	fabric_rails_down
}
trap cleanup EXIT

gluster_setup || exit 1
fabric_rails_up || exit 1
mkdir -p "$dir"
rails_brick $name $port || exit 1
rails_mount $name $port "$mnt" "$GFR_GLUSTER_LOGS/$name-fuse.log" || fail "the FUSE mount failed"
fpid=$(pgrep -f "glusterfs -f $GFR_GLUSTER_RUN/$name/client.vol" | head -n 1)
bpid=$(brick_pid $name)
[ -n "$fpid" ] || fail "no FUSE client process"

snap() { # WHEN: both processes' statistics and the veth counters
	"$gfr_stat" --json "$fpid" >"$dir/client-$1.json" &&
		"$gfr_stat" --json "$bpid" >"$dir/brick-$1.json" &&
		fabric_rails_counters >"$dir/veth-$1" || fail "gfr-stat of $fpid or $bpid failed"
}
head -c $((64 << 20)) /dev/urandom >"$src" || fail "cannot make the source data"
snap before
dd if="$src" of="$mnt/data" bs=1M conv=fsync status=none || fail "writing 64 MiB failed"
want=$(md5sum <"$src")
got=$(dd if="$mnt/data" bs=1M status=none | md5sum)
[ "$got" = "$want" ] || fail "reading the file back gave other data ($got, not $want)"
snap after
fabric_links >"$dir/links"
python3 "$split" "$dir"/client-before.json "$dir"/client-after.json "$dir"/brick-before.json \
	"$dir"/brick-after.json "$dir"/veth-before "$dir"/veth-after "$dir"/links >"$dir/split" ||
	fail "perf/rail-split failed"
cat "$dir/split"
grep -q "^rail 0 ($fabric_dev1, veth0+veth1)" "$dir/split" &&
	grep -q "^rail 1 ($fabric_dev3, veth2+veth3)" "$dir/split" ||
	fail "the client's rails are not rail 0 on $fabric_dev1 and rail 1 on $fabric_dev3"
# A share, not a speed: each rail carried at least a third of the larger's
# bytes and messages, and gfr-stat's count of a rail is what its veth pair
# carried to within 5 % (docs/performance.md has the measured figures).
awk '/^ratio rails_(bytes|messages)_smaller_vs_larger/ { if ($3 < 0.33) bad = bad " " $2 "=" $3 }
	/^ratio rail[0-9]_gfr_stat_vs_veth/ { if ($3 < 0.95 || $3 > 1.05) bad = bad " " $2 "=" $3; n++ }
	END { if (bad != "" || n != 2) { print "t-rails: off:" bad; exit 1 } }' "$dir/split" || exit 1
echo "t-rails: 64 MiB written and read back over two rails, split and counted as above"
