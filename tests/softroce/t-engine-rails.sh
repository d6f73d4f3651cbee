#!/bin/bash
# Multi-rail in the engine (docs/multi-rail.md): over the test fabric's two
# rails (fabric_rails_up), a client with rails=auto connects to a server
# that offers both rail addresses; the second rail joins the first's
# bundle, and 2,000 requests with replies (up to 256 KiB, so that replies
# are RDMA-written into offered buffers and requests pulled) are each
# checked byte by byte.  Checked: both rails carry calls, on their own
# devices, and each rail's veth pair carries its traffic; with rails
# naming the device ports (rails=DEV[:PORT],...) on both sides, the same
# two rails, each port named in the log with its interface; a client
# naming one usable port and one that does not exist joins no rail where
# no named port is on the path's subnet, and says why; a server without
# rail addresses keeps the client on one rail, and says so; a server
# bound to one address names the rail address it cannot serve, and the
# client goes on without the refused rail.
set -u
. "$(dirname "$0")/fabric-lib.sh"
prog=${GFR_BUILDDIR:?}/tests/softroce/engine-test
pair_init
trap 'pair_cleanup; fabric_rails_down' EXIT
fail() { echo "t-engine-rails: $*"; cat "$pair_dir/client" "$pair_dir/server"; exit 1; }

fabric_rails_up || exit 1
offer="rail-addresses=$GFR_SERVER_ADDR,$GFR_SERVER_ADDR2"
before=$(fabric_rails_tx)
run_pair t-engine-rails 300 "$prog" server 0.0.0.0 20120 -r -o rails=auto -o "$offer" -- \
	"$prog" client "$GFR_SERVER_ADDR" 20120 "$GFR_CLIENT_ADDR" -r -n 2000 -b 16 -s 262144 \
	-o rails=auto || fail "the calls over two rails failed"
tx=($(fabric_rails_tx "$before"))
cat "$pair_dir/client"
# A reply that came back on another rail than its request's leaves the
# request's offered buffers held until the end: its done says ENOTCONN.
grep -q "ended with" "$pair_dir/client" && fail "requests ended with an error"
rail0=$(grep -o "rail 0 on $fabric_dev1 to [^ ]*: [0-9]* sent" "$pair_dir/client" | awk '{print $(NF-1)}')
rail1=$(grep -o "rail 1 on $fabric_dev3 to [^ ]*: [0-9]* sent" "$pair_dir/client" | awk '{print $(NF-1)}')
[ -n "$rail0" ] && [ -n "$rail1" ] || fail "the client's rails are not rail 0 on $fabric_dev1 and rail 1 on $fabric_dev3"
[ "$rail0" -ge 500 ] && [ "$rail1" -ge 500 ] ||
	fail "the calls were not split: rail 0 sent $rail0, rail 1 sent $rail1"
for i in 0 1 2 3; do
	[ "${tx[i]}" -ge 500 ] || fail "veth$i sent ${tx[i]} packets: its rail carried no share"
done
echo "t-engine-rails: two rails: rail 0 sent $rail0 messages, rail 1 $rail1; veth0..3 sent ${tx[*]} packets"

# rails naming the device ports: the same two rails, each from its port.
run_pair t-engine-rails 300 "$prog" server 0.0.0.0 20123 -r -o "rails=$fabric_dev0:1,$fabric_dev2" -o "$offer" -- \
	"$prog" client "$GFR_SERVER_ADDR" 20123 "$GFR_CLIENT_ADDR" -r -n 400 -b 16 -s 65536 \
	-o "rails=$fabric_dev1,$fabric_dev3:1" || fail "the calls over two named rails failed"
grep -q "ended with" "$pair_dir/client" && fail "requests over named rails ended with an error"
grep -q "rails: $fabric_dev3:1 is on veth3, $GFR_CLIENT_ADDR2/" "$pair_dir/client" ||
	fail "the client did not name its second port's interface and address"
grep -q "rails: $fabric_dev2:1 is on veth2, $GFR_SERVER_ADDR2/" "$pair_dir/server" ||
	fail "the server did not name its second port's interface and address"
grep -q "rail 0 on $fabric_dev1 to [^ ]*: [1-9][0-9]* sent" "$pair_dir/client" &&
	grep -q "rail 1 on $fabric_dev3 to [^ ]*: [1-9][0-9]* sent" "$pair_dir/client" ||
	fail "the named rails are not rail 0 on $fabric_dev1 and rail 1 on $fabric_dev3, each carrying calls"
echo "t-engine-rails: rails=$fabric_dev1,$fabric_dev3:1: two rails, each port named with its address"

# One usable port and one that does not exist: the path to the second
# rail address has no named port on its subnet, so no rail joins there,
# and the log says why; the calls go on over the lead.
run_pair t-engine-rails 120 "$prog" server 0.0.0.0 20124 -r -o rails=auto -o "$offer" -- \
	"$prog" client "$GFR_SERVER_ADDR" 20124 "$GFR_CLIENT_ADDR" -r -n 200 -b 16 -s 65536 \
	-o "rails=$fabric_dev1,gfrnosuch9:2" || fail "the calls with one usable named port failed"
grep -q "rails: gfrnosuch9:2 can carry no rail: no RDMA device gfrnosuch9" "$pair_dir/client" ||
	fail "the client did not say that the port it names does not exist"
grep -q "rails $fabric_dev1:1, gfrnosuch9:2: none has an address on the subnet of $GFR_SERVER_ADDR2" "$pair_dir/client" ||
	fail "the client did not say why it joins no rail to $GFR_SERVER_ADDR2"
grep -q "rail 1 on" "$pair_dir/client" && fail "a rail joined from a port that rails does not name"
grep -q "client: rail port $fabric_dev1:1 up, veth1" "$pair_dir/client" &&
	grep -q "client: rail port gfrnosuch9:2 down: no RDMA device gfrnosuch9" "$pair_dir/client" ||
	fail "the snapshot (gfr-stat) does not show each named port's state"
echo "t-engine-rails: rails=$fabric_dev1,gfrnosuch9:2: one rail, the missing port and the unjoined path named"

run_pair t-engine-rails 120 "$prog" server 0.0.0.0 20121 -r -o rails=auto -- \
	"$prog" client "$GFR_SERVER_ADDR" 20121 "$GFR_CLIENT_ADDR" -r -n 200 -b 16 -s 65536 \
	-o rails=auto || fail "the calls to a server without rail addresses failed"
grep -q "rail 1 on" "$pair_dir/client" && fail "a rail joined a server that offered none"
grep -q "the server offered none" "$pair_dir/client" ||
	fail "the client did not say that it stays on one rail"
grep -q "rail-addresses names no address" "$pair_dir/server" ||
	fail "the server did not say why it offers no rails"
echo "t-engine-rails: a server without rail addresses: one rail, said on both sides"

# A server bound to the first rail's address alone names the rail address
# it cannot serve; the client's second rail is refused, and the calls go
# on over the first.
run_pair t-engine-rails 120 "$prog" server "$GFR_SERVER_ADDR" 20122 -r -o rails=auto -o "$offer" -- \
	"$prog" client "$GFR_SERVER_ADDR" 20122 "$GFR_CLIENT_ADDR" -r -n 200 -b 16 -s 65536 \
	-o rails=auto || fail "the calls to a server bound to one rail failed"
grep -q "rail address $GFR_SERVER_ADDR2 is not its address" "$pair_dir/server" ||
	fail "the server did not name the rail address it does not listen on"
grep -q "rail 1 could not join" "$pair_dir/client" || fail "the refused rail was not reported"
# (the refused rail may still be listed, ending: it must have carried nothing)
grep -q "rail 1 on [^ ]* to [^ ]*: [1-9][0-9]* sent" "$pair_dir/client" && fail "a refused rail carried calls"
echo "t-engine-rails: a server bound to one address: named, the other rail refused, one rail"
