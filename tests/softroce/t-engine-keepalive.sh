#!/bin/bash
# The liveness probe under traffic: a probe every 20 ms on both sides
# (-o keepalive-ms=20) while 4 connections keep 16 messages of up to
# 1 MiB in flight each for 20 s, so that probes meet bulk being pulled by
# RDMA READ; every echoed byte checked, every connection ends in order,
# and the peer answered probes.  On InfiniBand and RoCE a probe is a
# zero-length RDMA WRITE; on iWARP a one-byte RDMA READ of the byte the
# peer offered in its CM private data (docs/wire-protocol.md): siw ended
# healthy QPs on the zero-length READ it replaces (docs/providers.md).
set -u
. "$(dirname "$0")/fabric-lib.sh"
prog=${GFR_BUILDDIR:?}/tests/softroce/engine-test
pair_init
ka="-o keepalive-ms=20"

before=$(fabric_snapshot)
run_pair t-engine-keepalive 100 "$prog" server "$GFR_SERVER_ADDR" 20150 -c 4 $ka -- \
	"$prog" client "$GFR_SERVER_ADDR" 20150 "$GFR_CLIENT_ADDR" -c 4 -b 16 -s 1048576 -t 20 $ka ||
	exit 1
cat "$pair_dir/client" "$pair_dir/server"
grep -q "bulk: [1-9][0-9]* bytes pulled" "$pair_dir/client" ||
	{ echo "t-engine-keepalive: nothing was pulled: no probe met a READ"; exit 1; }
grep -q " [1-9][0-9]* liveness probes answered" "$pair_dir/client" ||
	{ echo "t-engine-keepalive: no probe was answered: the test did not test the probe"; exit 1; }
fabric_check "$before" 10000
