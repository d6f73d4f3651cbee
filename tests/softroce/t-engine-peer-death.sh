#!/bin/bash
# The server is killed (-9) in the middle of a stream: the client's
# connection reports the loss exactly once, within the timeouts, nothing
# hangs; a server restarted on the same port then serves a new client.
set -u
. "$(dirname "$0")/fabric-lib.sh"
prog=${GFR_BUILDDIR:?}/tests/softroce/engine-test
out=$(mktemp)
pair_init
trap 'pair_cleanup; rm -f "$out" "$out.c"; kill -9 "$server" "$client" 2>/dev/null' EXIT

"$prog" server "$GFR_SERVER_ADDR" 20096 >"$out" 2>&1 &
server=$!
wait_for_output "$out" listening 30 || exit 1
timeout 120 "$prog" client "$GFR_SERVER_ADDR" 20096 "$GFR_CLIENT_ADDR" -n 1000000 -b 4 -o qp-timeout=12 -o retry-count=3 >"$out.c" 2>&1 &
client=$!
sleep 3
kill -9 "$server"
wait "$server" 2>/dev/null
start=$(date +%s)
wait "$client"
rc=$?
cat "$out.c"
echo "t-engine-peer-death: the client ended $(($(date +%s) - start)) s after the kill, exit $rc"
[ "$rc" = 3 ] || { echo "t-engine-peer-death: expected exit 3 (peer gone, reported once)"; exit 1; }
grep -q "disconnected 1 time(s)" "$out.c" || exit 1

# A server restarted on the same port serves a new client.
run_pair t-engine-peer-death 120 "$prog" server "$GFR_SERVER_ADDR" 20096 -- \
	"$prog" client "$GFR_SERVER_ADDR" 20096 "$GFR_CLIENT_ADDR" -n 200 -b 4 || exit 1
cat "$pair_dir/client" "$pair_dir/server"
