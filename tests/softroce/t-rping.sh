#!/bin/bash
# rping (rdmacm-utils) exchanges and verifies data from the second device's
# address to the first's, and the counters show the packets crossed the
# veth pair.
set -u
. "$(dirname "$0")/fabric-lib.sh"
out=$(mktemp)
trap 'rm -f "$out"; kill "$server" 2>/dev/null' EXIT

before=$(fabric_snapshot)
timeout 60 rping -s -a "$GFR_SERVER_ADDR" -p 20080 -C 20 -S 128 -v >"$out" 2>&1 &
server=$!
sleep 1
if ! timeout 60 rping -c -a "$GFR_SERVER_ADDR" -I "$GFR_CLIENT_ADDR" -p 20080 -C 20 -S 128 -v >"$out.client" 2>&1; then
	cat "$out.client"
	echo "t-rping: the rping client failed"
	exit 1
fi
wait "$server" || { cat "$out"; echo "t-rping: the rping server failed"; exit 1; }
lines=$(grep -c "ping data" "$out.client")
echo "t-rping: client saw $lines verified pings"
rm -f "$out.client"
[ "$lines" -eq 20 ] || { echo "t-rping: expected 20 pings"; exit 1; }
fabric_check "$before" 20
