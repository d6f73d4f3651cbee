#!/bin/bash
# The project's own librdmacm program connects an RC QP from the second
# device's address to the first's and checks every byte of 200 messages
# (1 B to 64 KiB) each way.
set -u
. "$(dirname "$0")/fabric-lib.sh"
prog=${GFR_BUILDDIR:?}/tests/softroce/rc-pingpong
out=$(mktemp)
trap 'rm -f "$out"; kill "$server" 2>/dev/null' EXIT

before=$(fabric_snapshot)
timeout 120 "$prog" -s "$GFR_SERVER_ADDR" -p 20079 -n 200 -S 65536 >"$out" 2>&1 &
server=$!
wait_for_output "$out" listening 30 || exit 1
timeout 120 "$prog" -c "$GFR_SERVER_ADDR" -b "$GFR_CLIENT_ADDR" -p 20079 -n 200 -S 65536 || {
	cat "$out"
	echo "t-rc-pingpong: the client failed"
	exit 1
}
wait "$server" || { cat "$out"; echo "t-rc-pingpong: the server failed"; exit 1; }
cat "$out"
grep -q "server on $fabric_dev0:" "$out" || { echo "t-rc-pingpong: the server did not use $fabric_dev0"; exit 1; }
fabric_check "$before" 200
