#!/bin/bash
# lib/'s RDMA engine, bulk data: messages of random sizes from 1 B to
# 4 MiB echoed both ways (bodies above the inline threshold are offered as
# read lists and pulled with RDMA READ), every byte checked; again inline
# on an event-mode poller with 64 KiB segments, two in flight; then
# requests that offer reply buffers, answered with replies RDMA-written
# into them when they fit and pulled when they do not.  By default bulk up
# to 128 KiB goes through the connections' staging buffers and larger bulk
# registers the caller's memory per transfer (copy-max); the last two runs
# take one path each: copy-max 4M (all staged) and copy-max 0 (all
# registered).
set -u
. "$(dirname "$0")/fabric-lib.sh"
prog=${GFR_BUILDDIR:?}/tests/softroce/engine-test
pair_init

run() { # PORT SERVER-ARGS -- CLIENT-ARGS...
	local port=$1 sargs=()
	shift
	while [ "$1" != -- ]; do sargs+=("$1"); shift; done
	shift
	run_pair t-engine-bulk 300 "$prog" server "$GFR_SERVER_ADDR" "$port" "${sargs[@]}" -- \
		"$prog" client "$GFR_SERVER_ADDR" "$port" "$GFR_CLIENT_ADDR" "$@" || return 1
	cat "$pair_dir/client" "$pair_dir/server"
	grep -q "bulk: [1-9][0-9]* bytes pulled" "$pair_dir/client" ||
		{ echo "t-engine-bulk: nothing was pulled: the test did not test bulk data"; return 1; }
}

before=$(fabric_snapshot)
run 20110 -- -n 80 -b 4 -s 4194304 || exit 1
seg="-o dispatch=inline -o poll-mode=event -o segment-size=64K -o rdma-depth=2"
run 20111 $seg -- -n 40 -b 2 -s 4194304 $seg || exit 1
run 20112 -r -- -r -n 80 -b 4 -s 4194296 || exit 1
run 20113 -o copy-max=4M -- -n 40 -b 2 -s 4194304 -o copy-max=4M || exit 1
run 20114 -r -o copy-max=0 -- -r -n 40 -b 2 -s 4194296 -o copy-max=0 || exit 1
fabric_check "$before" 10000
