#!/bin/bash
# 300 connect / exchange / disconnect cycles against one server: every
# cycle completes, and afterwards the client process holds no QP and no MR
# (rdma resource show): nothing leaks across connections.
set -u
. "$(dirname "$0")/fabric-lib.sh"
prog=${GFR_BUILDDIR:?}/tests/softroce/engine-test
out=$(mktemp)
trap 'rm -f "$out"; kill "$server" 2>/dev/null' EXIT
rounds=${GFR_ENGINE_CYCLES:-300}

"$prog" server "$GFR_SERVER_ADDR" 20097 -c "$rounds" >"$out" 2>&1 &
server=$!
wait_for_output "$out" listening 30 || exit 1
timeout 600 "$prog" cycles "$GFR_SERVER_ADDR" 20097 "$GFR_CLIENT_ADDR" -c "$rounds" |
	grep -v "^engine-test: client: 1 connections" || true
rc=${PIPESTATUS[0]}
wait "$server" || { cat "$out"; echo "t-engine-cycles: the server failed"; exit 1; }
cat "$out"
[ "$rc" = 0 ] || { echo "t-engine-cycles: the cycles failed (exit $rc)"; exit 1; }
