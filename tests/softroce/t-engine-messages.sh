#!/bin/bash
# lib/'s RDMA engine: 500 echoed messages of 4 B to the largest inline
# payload, every byte checked both ways, handled in the worker pool and
# then inline on the poller; then 2000 messages in bursts of 64 with 4
# credits, so that senders run out of credits, queue, and are released by
# credit updates without overrunning or dropping anything; then 64
# connections at once, 50 messages each.
set -u
. "$(dirname "$0")/fabric-lib.sh"
prog=${GFR_BUILDDIR:?}/tests/softroce/engine-test
pair_init

run() { # PORT ARGS...: the same ARGS to the server and the client
	local port=$1
	shift
	run_pair t-engine-messages 120 "$prog" server "$GFR_SERVER_ADDR" "$port" "$@" -- \
		"$prog" client "$GFR_SERVER_ADDR" "$port" "$GFR_CLIENT_ADDR" "$@" || return 1
	cat "$pair_dir/client" "$pair_dir/server"
}

before=$(fabric_snapshot)
run 20090 -n 500 -b 1 || exit 1
# Both ends report the addresses rdma_cm used.
grep -q "client: connected from 10.99.0.2 port [1-9][0-9]* to 10.99.0.1 port 20090" "$pair_dir/client" &&
	grep -q "the first from 10.99.0.2 port [1-9]" "$pair_dir/server" ||
	{ echo "t-engine-messages: the connection's addresses are not the ones used"; exit 1; }
run 20094 -n 500 -b 8 -o dispatch=inline -o poll-mode=event || exit 1
run 20091 -n 2000 -b 64 -o credits=4 || exit 1
grep -q "[1-9][0-9]* sends waited for credits" "$pair_dir/client" ||
	{ echo "t-engine-messages: no send ever waited for credits: the test did not test them"; exit 1; }
run 20095 -c 64 -n 50 -b 10 -o credits=16 || exit 1
fabric_check "$before" 6000
