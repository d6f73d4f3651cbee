#!/bin/bash
# Multi-rail failover in the engine (docs/multi-rail.md, "Failover without
# loss"): a client with rails=auto sends 6,000 requests with replies (up to
# 64 KiB, so that requests are pulled and replies RDMA-written into offered
# buffers) over both rails of the test fabric; once the second rail has
# carried calls (its veth pair's counter moved), its client device is cut
# with `rdma link delete` (not `ip link set down`: Linux 6.1 rxe's
# requester loops on a downed link, docs/softroce.md).  Checked: every
# request is answered with every byte right and none ends in error, the
# connection ends once, in order, when the client is done; the client says
# it went on over the other rail and sent that rail's calls again, and the
# server that the rail ended (or that the client gave it up: the FENCE may
# come first).  No time is asserted: the cut
# comes whenever the counter moves, and the run is bounded.
set -u
. "$(dirname "$0")/fabric-lib.sh"
prog=${GFR_BUILDDIR:?}/tests/softroce/engine-test
pair_init
cutter=
trap '[ -n "$cutter" ] && kill "$cutter" 2>/dev/null; pair_cleanup; fabric_rails_down' EXIT
fail() { echo "t-engine-failover: $*"; cat "$pair_dir/client" "$pair_dir/server" "$pair_dir/cut"; exit 1; }

fabric_rails_up || exit 1
offer="rail-addresses=$GFR_SERVER_ADDR,$GFR_SERVER_ADDR2"
fabric_rails_cut_after 500 "$(fabric_rails_tx)" >"$pair_dir/cut" 2>&1 &
cutter=$!
run_pair t-engine-failover 600 "$prog" server 0.0.0.0 20130 -r -o rails=auto -o "$offer" -- \
	"$prog" client "$GFR_SERVER_ADDR" 20130 "$GFR_CLIENT_ADDR" -r -n 6000 -b 16 -s 65536 \
	-o rails=auto || fail "the calls across the cut failed"
wait "$cutter"
cutter=
cat "$pair_dir/cut" "$pair_dir/client"
grep -q "^cut: $fabric_dev3 deleted" "$pair_dir/cut" || fail "the rail was not cut during the run"
grep -q "6000 requests with replies .* verified both ways, 0 bad" "$pair_dir/client" ||
	fail "not every request was answered right"
grep -q "ended with" "$pair_dir/client" && fail "requests ended with an error"
grep -q "rail 1 ended (.*): the connection goes on over the other rails, its unanswered calls sent again there" \
	"$pair_dir/client" || fail "the client did not say that it failed over"
grep -Eq "the client gave up rail 1|rail 1 ended \(.*\): the connection goes on over the other rails" \
	"$pair_dir/server" || fail "the server did not say that rail 1 ended, or was given up"
grep -q "echoed 6000 messages, 0 ended badly" "$pair_dir/server" ||
	fail "the server's connection did not end once, in order, after every call"
echo "t-engine-failover: 6000 calls across a cut of $fabric_dev3, every byte checked, no error, one orderly end"
