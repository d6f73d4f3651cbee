#!/bin/bash
# Multi-rail: a rail that stalls without an error (docs/multi-rail.md,
# "Failover without loss": no progress on it for rail-timeout-ms while
# another rail makes some).  A client with rails=auto and
# rail-timeout-ms=1500 makes calls with replies (up to 64 KiB) until told
# to stop.  Once the second rail's veth pair has carried 500 packets, the
# server's netdev on that rail (veth2) takes another MAC address: the
# client's permanent neighbour entry still names the old one, so veth2
# drops every frame veth3 sends it (not for this host), without a word:
# no port goes down, no neighbour entry changes on the client (a changed
# one makes Linux 6.1's rdma_cm report UNREACHABLE, which is no stall),
# nothing fails; the client's sends there, and the server's, stop being
# acknowledged.  The client must end the rail for its stall (before the
# adapter's retries, about 4.3 s, would) and go on over the first; once
# veth2 has its address back, the rail must join again and carry calls.
# Checked: every call answered with every byte right and none in error,
# the server ran each once, one orderly end, and the client named the
# stall.  Measured, not asserted: the time from the stall to the rail's
# end and from the repair to the rejoin.  Each wait is bounded (120 s).
set -u
. "$(dirname "$0")/fabric-lib.sh"
pair_init
stop=$pair_dir/stop
staller=
trap 'touch "$stop"; [ -n "$staller" ] && kill "$staller" 2>/dev/null; pair_cleanup; fabric_rails_down' EXIT
fail() { echo "t-engine-stall: $*"; cat "$pair_dir/client" "$pair_dir/server" "$pair_dir/stall"; exit 1; }
now_ms() { date +%s%3N; }

# The stall and its repair, in the background; stops the client when
# done or stuck.
stall_and_repair() {
	local t0 t1 mac sent
	fabric_rails_wait_tx 500 "$(fabric_rails_tx)" >/dev/null ||
		{ echo "stall: veth3 never carried 500 packets"; touch "$stop"; return; }
	t0=$(now_ms)
	mac=$(cat /sys/class/net/veth2/address)
	ip link set veth2 address 02:00:00:00:00:99 ||
		{ echo "stall: cannot change veth2's MAC address"; touch "$stop"; return; }
	echo "stall: veth2's MAC address is 02:00:00:00:00:99, not $mac: the frames veth3 sends it are dropped"
	if ! wait_lines "$pair_dir/client" "made no progress for rail-timeout-ms" 1 120; then
		echo "stall: the client did not end the rail within 120 s"
		touch "$stop"
		return
	fi
	t1=$(now_ms)
	echo "stall: the client ended the rail $((t1 - t0)) ms after the stall began"
	sleep 1
	ip link set veth2 address "$mac"
	t0=$(now_ms)
	if ! wait_lines "$pair_dir/client" "joined again" 1 120; then
		echo "stall: the rail did not join again within 120 s of the repair"
		touch "$stop"
		return
	fi
	t1=$(now_ms)
	echo "stall: the rail joined again $((t1 - t0)) ms after the repair"
	sent=$(fabric_rails_wait_tx 500 "$(fabric_rails_tx)") &&
		echo "after the repair: veth3 carried $sent packets"
	touch "$stop"
}

fabric_rails_up || exit 1
stall_and_repair >"$pair_dir/stall" 2>&1 &
staller=$!
rails_call_pair t-engine-stall 20160 600 -o rail-timeout-ms=1500 ||
	fail "the calls across the stall failed"
wait "$staller"
staller=
cat "$pair_dir/stall" "$pair_dir/client"
grep -q "^stall: the client ended the rail" "$pair_dir/stall" || fail "the stalled rail was not ended"
grep -q "^after the repair: veth3 carried" "$pair_dir/stall" || fail "calls did not cross the rail after its repair"
grep -q "rail 1: its sends made no progress for rail-timeout-ms (1500 ms) while rail 0's did: ending it" \
	"$pair_dir/client" || fail "the client did not name the stall"
n=$(rails_calls_once) || fail "$n"
echo "t-engine-stall: $n calls across a silent stall of the second rail: ended for it, joined again, every byte checked, no error, one orderly end"
