#!/bin/bash
# Faults injected into a running fabric, against one long-lived server
# (-c 0; the ASan+UBSan build's engine-test when there is one, see
# sanitized_engine_test):
#
#  - kill -9 at a random moment, GFR_FAULT_CYCLES times (default 20; the
#    long run in docs/reliability.md used 100),
#    alternately of a client of that server (4 connections, bulk in flight)
#    and of a second server under a client (qp-timeout=12, retry-count=3),
#    whose connections must report the loss and end within the timeout;
#  - the client's rxe device deleted (rdma link delete) and re-added;
#  - the server's rxe device deleted and re-added: the deletion must
#    complete while the server runs, and its listener must serve again.
#
#  - last, the veth link under a client set down for 3 s and up again:
#    the client must end (reporting the loss, or by its own 60 s limit
#    on echoes, see below), the server must survive and release every QP.
#
# After each fault a new client must be served.  The server then has ended
# every connection exactly once, holds no QP, logged no sanitizer report,
# and `rdma resource show` is back to what it was before the test.
#
# The link flap comes last and has a server of its own: on this kernel
# (6.1) rxe passes no more CM traffic after a flap with traffic in flight
# (rping fails too; packets reach veth1 and UDP, rxe1 counts none), so
# after it the test checks what our side controls (the client reports the
# loss within its timeouts, the server survives), then re-creates both rxe
# devices and checks that a new server and client work
# (docs/reliability.md).
set -u
. "$(dirname "$0")/fabric-lib.sh"
here=${GFR_BUILDDIR:?}/tests/softroce
client_prog=$here/engine-test
server_prog=$(sanitized_engine_test)
if [ -n "$server_prog" ]; then
	echo "t-engine-faults: servers built with the sanitizers ($server_prog)"
else
	server_prog=$here/engine-test
fi
cycles=${GFR_FAULT_CYCLES:-20}
port=20130
victim_port=20131
dir=$(mktemp -d)
trap 'kill -9 $server $victim $client 2>/dev/null; fabric_repair; rm -rf "$dir"' EXIT
server= victim= client=
test_name=t-engine-faults

wait_active() { # DEV
	wait_port_active "$1" || { fail "$1 did not come back ACTIVE"; return 1; }
}
served() { # WHAT [SECONDS]: a new client must be served, at once or by retrying for SECONDS
	local deadline=$((SECONDS + ${2:-0})) attempts=0
	while :; do
		attempts=$((attempts + 1))
		timeout 120 "$client_prog" client "$GFR_SERVER_ADDR" $port "$GFR_CLIENT_ADDR" \
			-c 2 -n 200 -b 8 -s 262144 >"$dir/check" 2>&1 && break
		if ((SECONDS >= deadline)); then
			cat "$dir/check"
			fail "no client served $1 ($attempts attempt(s))"
			return 1
		fi
		sed 's/^/t-engine-faults:   refused: /' "$dir/check" | grep -v ': [0-9]* connections'
		sleep 1
	done
	echo "t-engine-faults: a new client was served $1 (attempt $attempts)"
}
long_client() { # starts a client that runs until a fault ends it
	spawn_logged "$dir/long" timeout 300 "$client_prog" client "$GFR_SERVER_ADDR" "$1" "$GFR_CLIENT_ADDR" \
		-c "$2" -n 1000000 -b 8 -s 262144 -o qp-timeout=12 -o retry-count=3
	client=$!
}
# ended_by_fault WHAT START [CODES]: the long client ended by the fault,
# with the loss reported (exit 3) or no connection made (exit 2), or with
# another of CODES; not by its timeout
ended_by_fault() {
	local rc
	wait "$client"
	rc=$?
	client=
	echo "t-engine-faults: $1: the client ended $(($(date +%s) - $2)) s after the fault, exit $rc:" \
		"$(grep -E 'disconnected|not established' "$dir/long" | head -n 1)"
	[[ " 2 3 ${3:-} " == *" $rc "* ]] && return 0
	cat "$dir/long"
	fail "$1: the client exited $rc"
}

baseline=$(rdma_resources)
spawn_logged "$dir/srv" "$server_prog" server "$GFR_SERVER_ADDR" $port -c 0
server=$!
wait_for_output "$dir/srv" listening 60 || exit 1

# --- kill -9 at random moments
slowest=0
kills=0
for ((i = 0; i < cycles; i++)); do
	delay=$(printf '0.%03d' $((RANDOM % 1000)))
	if ((i % 2 == 0)); then
		# Not under timeout(1): $! must be the client itself, which the
		# kill ends (a SIGKILL of timeout leaves its child running).
		"$client_prog" client "$GFR_SERVER_ADDR" $port "$GFR_CLIENT_ADDR" \
			-c 4 -n 1000000 -b 8 -s 262144 >/dev/null 2>&1 &
		client=$!
		sleep "$delay"
		kill -9 $client 2>/dev/null # it may have ended: refused, exit 2
		wait $client 2>/dev/null
		client=
	else
		spawn_logged "$dir/victim" "$server_prog" server "$GFR_SERVER_ADDR" $victim_port -c 0
		victim=$!
		wait_for_output "$dir/victim" listening 60 || { fail "cycle $i: no victim server"; break; }
		long_client $victim_port 2
		sleep "$delay"
		kill -9 $victim
		wait $victim 2>/dev/null
		victim=
		start=$(date +%s)
		wait "$client"
		rc=$?
		client=
		took=$(($(date +%s) - start))
		((took > slowest)) && slowest=$took
		case $rc in
		2 | 3) ;;
		*)
			cat "$dir/long"
			fail "cycle $i: the victim server's client exited $rc"
			;;
		esac
	fi
	kills=$((kills + 1))
	((kills % 10 == 0)) && echo "t-engine-faults: $kills kill -9 cycles done"
	kill -0 $server 2>/dev/null || { fail "the server died in cycle $i"; cat "$dir/srv"; exit 1; }
done
echo "t-engine-faults: $kills kill -9 cycles ($((kills - kills / 2)) clients, $((kills / 2)) servers);" \
	"the slowest client of a killed server ended $slowest s after the kill"
# By the clock: each count runs rdma(8), slow in the VM.
deadline=$((SECONDS + 30))
while [ "$(qps_of $server)" != 0 ] && ((SECONDS < deadline)); do
	sleep 0.1
done
[ "$(qps_of $server)" = 0 ] || fail "the server still holds $(qps_of $server) QPs 30 s after the last kill"
served "after the kills"

# --- the client's device deleted
long_client $port 2
# connected before the fault, not a fixed time: under TCG in the full
# check 2 s were once not enough, and the fault met no connection
wait_for_output "$dir/long" "client: connected from" 60 || fail "the long client did not connect"
start=$(date +%s%N)
timeout -s KILL 60 rdma link delete rxe1 || fail "rdma link delete rxe1 failed or hung"
echo "t-engine-faults: rdma link delete rxe1 took $((($(date +%s%N) - start) / 1000000)) ms"
ended_by_fault "client device deleted" "$((start / 1000000000))"
# The removal reaches the client by two roads that race: the CM event
# (ENODEV) and, when rxe fails a send to the vanishing netdev first, a work
# completion error (EIO).  Either is a reported loss; a clean end is not.
grep 'gfr-rdma: ' "$dir/long" | sed 's/^.*gfr-rdma: /t-engine-faults:   client: /' | sort | uniq -c
grep -q -E 'reason -(19|5),' "$dir/long" || fail "the client's connections did not end with ENODEV or EIO"
rdma link add rxe1 type rxe netdev veth1 || fail "re-adding rxe1"
wait_active rxe1
served "after rxe1 came back"

# --- the server's device deleted under its connections and its listener
long_client $port 2
# connected before the fault, not a fixed time: under TCG in the full
# check 2 s were once not enough, and the fault met no connection
wait_for_output "$dir/long" "client: connected from" 60 || fail "the long client did not connect"
start=$(date +%s%N)
timeout -s KILL 60 rdma link delete rxe0 || fail "rdma link delete rxe0 failed or hung"
echo "t-engine-faults: rdma link delete rxe0 under the running server took" \
	"$((($(date +%s%N) - start) / 1000000)) ms"
ended_by_fault "server device deleted" "$((start / 1000000000))"
rdma link add rxe0 type rxe netdev veth0 || fail "re-adding rxe0"
wait_active rxe0
wait_for_output "$dir/srv" 'listening again' 30 || fail "the listener did not come back"
# Retried, as a GlusterFS client reconnects: once, in a coverage build,
# the first two connections right after "listening again" were rejected
# as if nothing listened (docs/reliability.md).
served "after rxe0 came back" 30

kill -TERM $server
wait $server || fail "the server exited $?"
server=
server_log_verdict "$dir/srv"
resources_back_to "$baseline"
# --- the client's link down for 3 s, under a server of its own
spawn_logged "$dir/victim" "$server_prog" server "$GFR_SERVER_ADDR" $victim_port -c 0
victim=$!
wait_for_output "$dir/victim" listening 60 || exit 1
long_client $victim_port 2
# The count must see the server's QPs before the fault, or its zero below
# would prove nothing.  Waited for, not slept for: a sanitized client on
# a slow VM (Linux 6.12's took 1.7 times as long over the suite) had not
# connected after 2 s.  Then a second of echoes, so that the flap
# catches traffic in flight.
deadline=$((SECONDS + 30))
until [ "$(qps_of $victim)" -ge 2 ] || ((SECONDS >= deadline)); do
	sleep 0.1
done
sleep 1
held=$(qps_of $victim)
[ "$held" -gt 0 ] || fail "link down: the server holds none of its client's QPs 30 s after the client started"
fabric_recreate=1
ip link set veth1 down
start=$(date +%s)
sleep 3
ip link set veth1 up
fabric_routes || fail "restoring the routes after the link flap"
wait_active rxe1
# Exit 1 (echoes stopped coming, found by the client's own 60 s limit):
# on this rxe a connection can come out of the flap with both QPs in RTS,
# in PSN sync and answering keepalives, and a burst's echoes never
# arriving (docs/reliability.md).
ended_by_fault "link down" "$start" 1
grep 'gfr-rdma: ' "$dir/long" | sort | uniq -c
grep -E 'disconnected [0-9]' "$dir/long"
grep -q -E '\([1-9][0-9]* bad\)' "$dir/long" && fail "link down: echoes that differ from what was sent"
kill -0 $victim 2>/dev/null || fail "the server died in the link flap"
# Its half of the connections ends through its keepalive (keepalive-ms).
deadline=$((SECONDS + 120))
while [ "$(qps_of $victim)" != 0 ] && ((SECONDS < deadline)); do
	sleep 0.1
done
echo "t-engine-faults: link down: the server holds $(qps_of $victim) QPs $(($(date +%s) - start)) s after the fault"
[ "$(qps_of $victim)" = 0 ] || fail "the link flap's server still holds QPs"
grep -q -E 'ERROR: (Address|Leak)Sanitizer|runtime error' "$dir/victim" &&
	{ cat "$dir/victim"; fail "a sanitizer report from the link flap's server"; }
kill -9 $victim
wait $victim 2>/dev/null
victim=
for dev in rxe0 rxe1; do
	timeout -s KILL 60 rdma link delete $dev || fail "rdma link delete $dev failed or hung"
done
fabric_recreate=
fabric_repair
wait_active rxe0
wait_active rxe1
spawn_logged "$dir/srv" "$server_prog" server "$GFR_SERVER_ADDR" $port -c 0
server=$!
wait_for_output "$dir/srv" listening 60 || exit 1
served "after the link flap, by a new server on re-created devices"
kill -TERM $server
wait $server || { cat "$dir/srv"; fail "the server after the link flap exited $?"; }
server=

failures_summary
