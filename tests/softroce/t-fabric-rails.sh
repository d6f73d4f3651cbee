#!/bin/bash
# The second rail of the test fabric (fabric-lib.sh, fabric_rails_up;
# docs/multi-rail.md): rc-pingpong over it runs on its own devices and its
# traffic crosses veth2/veth3, not the first rail's veth pair; both rails
# carry a pingpong at once; and taking the rail down leaves the fabric as
# fabric-up made it, for the tests after this one.
set -u
. "$(dirname "$0")/fabric-lib.sh"
prog=${GFR_BUILDDIR:?}/tests/softroce/rc-pingpong
out=$(mktemp -d)
servers=
trap 'kill $servers 2>/dev/null; rm -rf "$out"; fabric_rails_down' EXIT
fail() { echo "t-fabric-rails: $*"; exit 1; }

# start_server NAME ADDR PORT: an rc-pingpong server in the background
# (its pid appended to $servers, its output in $out/NAME), once listening.
start_server() {
	timeout 120 "$prog" -s "$2" -p "$3" -n 200 -S 65536 >"$out/$1" 2>&1 &
	servers="$servers $!"
	wait_for_output "$out/$1" listening 30
}

# client NAME ADDR BIND PORT: its client, output in $out/NAME.client.
client() {
	timeout 120 "$prog" -c "$2" -b "$3" -p "$4" -n 200 -S 65536 >"$out/$1.client" 2>&1 ||
		{ cat "$out/$1" "$out/$1.client"; fail "the $1 client failed"; }
}

# wait_servers: every server of $servers ended well.
wait_servers() {
	local pid
	for pid in $servers; do wait "$pid" || { cat "$out"/*; fail "an rc-pingpong server failed"; }; done
	servers=
}

fabric_rails_up || exit 1
before=$(fabric_rails_tx)
start_server rail2 "$GFR_SERVER_ADDR2" 20081 || fail "the second rail's server did not listen"
client rail2 "$GFR_SERVER_ADDR2" "$GFR_CLIENT_ADDR2" 20081
wait_servers
sent=($(fabric_rails_tx "$before"))
grep -q "server on $fabric_dev2:" "$out/rail2" || { cat "$out/rail2"; fail "the server did not use $fabric_dev2"; }
for i in 2 3; do
	[ "${sent[i]}" -ge 200 ] || fail "veth$i sent ${sent[i]} packets for 200 messages each way over the second rail"
done
for i in 0 1; do
	[ "${sent[i]}" -lt 20 ] ||
		fail "veth$i (the first rail) sent ${sent[i]} packets while only the second rail was used"
done
echo "t-fabric-rails: the second rail alone: veth0..3 sent ${sent[*]} packets"

before=$(fabric_rails_tx)
start_server both1 "$GFR_SERVER_ADDR" 20082 && start_server both2 "$GFR_SERVER_ADDR2" 20083 ||
	fail "the servers of both rails did not listen"
client both1 "$GFR_SERVER_ADDR" "$GFR_CLIENT_ADDR" 20082 &
c1=$!
client both2 "$GFR_SERVER_ADDR2" "$GFR_CLIENT_ADDR2" 20083 &
c2=$!
wait "$c1" && wait "$c2" || fail "a client with both rails in use failed"
wait_servers
sent=($(fabric_rails_tx "$before"))
grep -q "server on $fabric_dev0:" "$out/both1" && grep -q "server on $fabric_dev2:" "$out/both2" ||
	{ cat "$out/both1" "$out/both2"; fail "the two pingpongs did not use $fabric_dev0 and $fabric_dev2"; }
for i in 0 1 2 3; do
	[ "${sent[i]}" -ge 200 ] || fail "veth$i sent ${sent[i]} packets with both rails in use"
done
echo "t-fabric-rails: both rails at once: veth0..3 sent ${sent[*]} packets"

fabric_rails_down
left=$(ls /sys/class/infiniband | tr '\n' ' ')
[ "$left" = "$fabric_dev0 $fabric_dev1 " ] || fail "after fabric_rails_down the devices are '$left', not $fabric_dev0 $fabric_dev1"
ip link show veth2 >/dev/null 2>&1 && fail "veth2 is still there after fabric_rails_down"
echo "t-fabric-rails: passed"
