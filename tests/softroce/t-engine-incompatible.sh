#!/bin/bash
# An incompatible peer is refused on both sides with a clear reason:
# rc-pingpong (no connection parameters) connecting to the engine is
# rejected, and the engine connecting to rc-pingpong drops the connection.
set -u
. "$(dirname "$0")/fabric-lib.sh"
engine=${GFR_BUILDDIR:?}/tests/softroce/engine-test
raw=${GFR_BUILDDIR:?}/tests/softroce/rc-pingpong
pair_init
fail=0

# The server must log why it rejected; rc-pingpong must fail, told REJECTED.
run_pair --client-status 1 --kill-server t-engine-incompatible 60 \
	"$engine" server "$GFR_SERVER_ADDR" 20092 -- \
	"$raw" -c "$GFR_SERVER_ADDR" -b "$GFR_CLIENT_ADDR" -p 20092 -n 1 || fail=1
cat "$pair_dir/client" "$pair_dir/server"
grep -q "rejecting a connection request from $GFR_CLIENT_ADDR port [0-9]*: peer is not a glusterfs-rdma peer" \
	"$pair_dir/server" || { echo "t-engine-incompatible: the server logged no rejection"; fail=1; }
grep -q "REJECTED" "$pair_dir/client" || { echo "t-engine-incompatible: rc-pingpong was not told REJECTED"; fail=1; }

# The engine client drops a connection whose peer sent no parameters and
# exits 2 (not connected), with the reason -EPROTO.
run_pair --client-status 2 --kill-server t-engine-incompatible 60 \
	"$raw" -s "$GFR_SERVER_ADDR" -p 20093 -n 1 -- \
	"$engine" client "$GFR_SERVER_ADDR" 20093 "$GFR_CLIENT_ADDR" -n 1 || fail=1
cat "$pair_dir/client"
grep -q "dropping a connection the peer accepted" "$pair_dir/client" ||
	{ echo "t-engine-incompatible: no reason logged by the engine client"; fail=1; }
grep -q "reason -71" "$pair_dir/client" || { echo "t-engine-incompatible: reason is not -EPROTO"; fail=1; }
exit "$fail"
