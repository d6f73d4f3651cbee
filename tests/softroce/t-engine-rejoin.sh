#!/bin/bash
# Multi-rail: a rail that comes back joins again (docs/multi-rail.md, "A
# rail coming back").  A client with rails=auto makes calls with replies
# (up to 64 KiB: pulled requests, RDMA-written replies) until told to stop.
# GFR_REJOIN_CYCLES times (default 3), once the second rail's veth pair has
# carried 500 packets more, the client's device on it is cut with
# `rdma link delete` (not `ip link set down`: Linux 6.1 rxe's requester
# loops on a downed link, docs/softroce.md) and made again a second later
# with `rdma link add`; the next cycle waits for the client to say that
# the rail joined again.  After the last, calls must cross the rejoined
# rail (veth3's counter moves) before the client stops.  Checked: every
# call answered with every byte right and none in error, the server ran
# each once, one orderly end, and the client said each time that the rail
# joined again.  Measured, not asserted: the time from the device's return
# to that line.  Each wait is bounded (120 s), and so is the run.
set -u
. "$(dirname "$0")/fabric-lib.sh"
cycles=${GFR_REJOIN_CYCLES:-3}
pair_init
stop=$pair_dir/stop
cycler=
trap 'touch "$stop"; [ -n "$cycler" ] && kill "$cycler" 2>/dev/null; pair_cleanup; fabric_rails_down' EXIT
fail() { echo "t-engine-rejoin: $*"; cat "$pair_dir/client" "$pair_dir/server" "$pair_dir/cycles"; exit 1; }

# The cuts, in the background; stops the client when done or stuck.
cut_and_restore() {
	local i t0 t1 sent
	for ((i = 1; i <= cycles; i++)); do
		fabric_rails_cut_after 500 "$(fabric_rails_tx)" || break
		sleep 1
		rdma link add "$fabric_dev3" type "$fabric_provider" netdev veth3 ||
			{ echo "cycle $i: rdma link add $fabric_dev3 failed"; break; }
		t0=$(date +%s%N)
		if ! wait_lines "$pair_dir/client" "joined again" "$i" 120; then
			echo "cycle $i: the rail did not join again within 120 s of $fabric_dev3's return"
			break
		fi
		t1=$(date +%s%N)
		echo "cycle $i: the rail joined again $(((t1 - t0) / 1000000)) ms after $fabric_dev3 came back"
	done
	if [ "$i" -gt "$cycles" ] && sent=$(fabric_rails_wait_tx 500 "$(fabric_rails_tx)"); then
		echo "after the last: veth3 carried $sent packets"
	fi
	touch "$stop"
}

fabric_rails_up || exit 1
cut_and_restore >"$pair_dir/cycles" 2>&1 &
cycler=$!
rails_call_pair t-engine-rejoin 20150 900 || fail "the calls across the cuts failed"
wait "$cycler"
cycler=
cat "$pair_dir/cycles" "$pair_dir/client"
[ "$(grep -c "^cycle .*: the rail joined again" "$pair_dir/cycles")" = "$cycles" ] ||
	fail "not every cut rail joined again"
grep -q "^after the last: veth3 carried" "$pair_dir/cycles" ||
	fail "calls did not cross the rejoined rail"
n=$(rails_calls_once) || fail "$n"
[ "$(grep -c "rail [0-9]* joined again, to $GFR_SERVER_ADDR2, through $fabric_dev3" "$pair_dir/client")" -ge "$cycles" ] ||
	fail "the client did not say that the rail joined again on its path"
echo "t-engine-rejoin: $n calls across $cycles cuts of $fabric_dev3, each rail back, every byte checked, no error, one orderly end"
