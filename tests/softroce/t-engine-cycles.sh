#!/bin/bash
# Connect / exchange / disconnect cycles against one server, with the
# device's shared receive queue (receive-queue=srq, asked for: on iWARP
# the default, auto, gives per-connection buffers) and with receive buffers
# per connection: every cycle completes, and afterwards the client process
# holds no QP and no more MRs than after the first cycle (rdma resource
# show; with per-connection buffers, none but the iWARP probe's two):
# nothing leaks across connections.  The count must see our QP while
# connected, or it fails.
set -u
. "$(dirname "$0")/fabric-lib.sh"
prog=${GFR_BUILDDIR:?}/tests/softroce/engine-test
rounds=${GFR_ENGINE_CYCLES:-150}
pair_init

cycles() { # PORT CLIENT-OPTIONS...
	local port=$1
	shift
	run_pair t-engine-cycles 600 "$prog" server "$GFR_SERVER_ADDR" "$port" -c "$rounds" -- \
		"$prog" cycles "$GFR_SERVER_ADDR" "$port" "$GFR_CLIENT_ADDR" -c "$rounds" "$@" || return 1
	grep -v "^engine-test: client: 1 connections" "$pair_dir/client"
	cat "$pair_dir/server"
}

cycles 20097 -o receive-queue=srq || exit 1
cycles 20098 -o receive-queue=per-connection || exit 1
# With per-connection buffers a device keeps no MR of its own, except, on
# iWARP (node type RNIC), the liveness probe's two: its byte and its sink.
device_mrs=0
fabric_is_rnic "$fabric_dev1" && device_mrs=2
grep -q "holds 0 QPs and $device_mrs MRs ($device_mrs after the first round)" "$pair_dir/client" ||
	{ echo "t-engine-cycles: per-connection buffers left MRs behind (the device's own: $device_mrs)"; exit 1; }
