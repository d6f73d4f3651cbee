#!/bin/bash
# Connect / exchange / disconnect cycles against one server, with the
# device's shared receive queue (the default) and with receive buffers per
# connection: every cycle completes, and afterwards the client process
# holds no QP and no more MRs than after the first cycle (rdma resource
# show; with per-connection buffers, none at all): nothing leaks across
# connections.  The count must see our QP while connected, or it fails.
set -u
. "$(dirname "$0")/fabric-lib.sh"
prog=${GFR_BUILDDIR:?}/tests/softroce/engine-test
out=$(mktemp)
trap 'rm -f "$out" "$out.cycles"; kill "$server" 2>/dev/null' EXIT
rounds=${GFR_ENGINE_CYCLES:-150}

cycles() { # PORT CLIENT-OPTIONS...
	local port=$1
	shift
	"$prog" server "$GFR_SERVER_ADDR" "$port" -c "$rounds" >"$out" 2>&1 &
	server=$!
	wait_for_output "$out" listening 30 || return 1
	timeout 600 "$prog" cycles "$GFR_SERVER_ADDR" "$port" "$GFR_CLIENT_ADDR" -c "$rounds" "$@" \
		>"$out.cycles" 2>&1
	local rc=$?
	grep -v "^engine-test: client: 1 connections" "$out.cycles"
	wait "$server" || { cat "$out"; echo "t-engine-cycles: the server failed"; return 1; }
	cat "$out"
	[ "$rc" = 0 ] || { echo "t-engine-cycles: the cycles failed (exit $rc, $*)"; return 1; }
}

cycles 20097 || exit 1
cycles 20098 -o receive-queue=per-connection || exit 1
grep -q "holds 0 QPs and 0 MRs (0 after the first round)" "$out.cycles" ||
	{ echo "t-engine-cycles: per-connection buffers left MRs behind"; exit 1; }
