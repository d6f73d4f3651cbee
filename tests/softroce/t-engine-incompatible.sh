#!/bin/bash
# An incompatible peer is refused on both sides with a clear reason:
# rc-pingpong (no connection parameters) connecting to the engine is
# rejected, and the engine connecting to rc-pingpong drops the connection.
set -u
. "$(dirname "$0")/fabric-lib.sh"
engine=${GFR_BUILDDIR:?}/tests/softroce/engine-test
raw=${GFR_BUILDDIR:?}/tests/softroce/rc-pingpong
out=$(mktemp)
trap 'rm -f "$out" "$out.c"; kill "$server" 2>/dev/null' EXIT
fail=0

"$engine" server "$GFR_SERVER_ADDR" 20092 >"$out" 2>&1 &
server=$!
wait_for_output "$out" listening 30 || exit 1
if timeout 60 "$raw" -c "$GFR_SERVER_ADDR" -b "$GFR_CLIENT_ADDR" -p 20092 -n 1 >"$out.c" 2>&1; then
	echo "t-engine-incompatible: a peer without parameters was accepted"
	fail=1
fi
cat "$out.c"
wait_for_output "$out" "rejecting a connection request from $GFR_CLIENT_ADDR port [0-9]*: peer is not a glusterfs-rdma peer" 10 || fail=1
grep -q "REJECTED" "$out.c" || { echo "t-engine-incompatible: rc-pingpong was not told REJECTED"; fail=1; }
kill "$server"
wait "$server" 2>/dev/null
cat "$out"

"$raw" -s "$GFR_SERVER_ADDR" -p 20093 -n 1 >"$out" 2>&1 &
server=$!
wait_for_output "$out" listening 30 || exit 1
timeout 60 "$engine" client "$GFR_SERVER_ADDR" 20093 "$GFR_CLIENT_ADDR" -n 1 >"$out.c" 2>&1
rc=$?
cat "$out.c"
if [ "$rc" != 2 ]; then
	echo "t-engine-incompatible: the engine client exited $rc, expected 2 (not connected)"
	fail=1
fi
grep -q "dropping a connection the peer accepted" "$out.c" ||
	{ echo "t-engine-incompatible: no reason logged by the engine client"; fail=1; }
grep -q "reason -71" "$out.c" || { echo "t-engine-incompatible: reason is not -EPROTO"; fail=1; }
exit "$fail"
