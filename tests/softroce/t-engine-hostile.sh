#!/bin/bash
# A hostile peer (hostile-peer.c, raw verbs) breaks the protocol in each way
# docs/wire-protocol.md guards against, one connection per violation, while
# honest engine-test clients keep running against the same two servers (an
# echo server and a request/reply one).  Each violating connection must be
# torn down with its reason in the server's log; the honest clients must
# verify every byte; at the end each server has ended every connection
# exactly once and holds no QP.  The servers are the ASan+UBSan build's
# engine-test when there is one (sanitized_engine_test), with LeakSanitizer
# on: any sanitizer report fails the test.
set -u
. "$(dirname "$0")/fabric-lib.sh"
here=${GFR_BUILDDIR:?}/tests/softroce
server_prog=$(sanitized_engine_test)
if [ -n "$server_prog" ]; then
	echo "t-engine-hostile: servers built with the sanitizers ($server_prog)"
else
	server_prog=$here/engine-test
	echo "t-engine-hostile: no sanitizer build of engine-test; plain servers"
fi
dir=$(mktemp -d)
echo_srv="" rr_srv="" honest=""
trap 'touch "$dir/stop"; kill -9 $echo_srv $rr_srv $honest 2>/dev/null; rm -rf "$dir"' EXIT
echo_port=20110
rr_port=20111

"$server_prog" server "$GFR_SERVER_ADDR" $echo_port -c 0 >"$dir/echo" 2>&1 &
echo_srv=$!
"$server_prog" server "$GFR_SERVER_ADDR" $rr_port -c 0 -r >"$dir/rr" 2>&1 &
rr_srv=$!
wait_for_output "$dir/echo" listening 60 || { cat "$dir/echo"; exit 1; }
wait_for_output "$dir/rr" listening 60 || { cat "$dir/rr"; exit 1; }

# Honest clients, one after the other, until the hostile cases are done
# (paused while $dir/pause exists; see flood).  Each verified run adds a
# line to $dir/runs.
(
	runs=0
	while [ ! -e "$dir/stop" ]; do
		if [ -e "$dir/pause" ]; then
			touch "$dir/paused"
			sleep 0.2
			continue
		fi
		if "$here/engine-test" client "$GFR_SERVER_ADDR" $echo_port "$GFR_CLIENT_ADDR" \
			-c 4 -n 200 -b 8 -s 262144 >>"$dir/honest" 2>&1 &&
			"$here/engine-test" client "$GFR_SERVER_ADDR" $rr_port "$GFR_CLIENT_ADDR" \
				-r -n 100 -b 4 -s 131072 >>"$dir/honest" 2>&1; then
			echo ok >>"$dir/runs"
		else
			echo "honest run $runs failed" >>"$dir/honest-failed"
		fi
		runs=$((runs + 1))
	done
	echo "t-engine-hostile: $runs honest runs (4 echo connections and 1 request/reply each)" >>"$dir/honest"
) &
honest=$!

test_name=t-engine-hostile
# hostile CASE PORT LOG-PATTERN: runs one violation; the server's log must
# gain a line matching the pattern (none when it is "-") that names the
# hostile peer's address (a server has many peers; the flood aside).  The
# hostile peer stays to the end and answers its CM, so the server must end
# the connection by itself (hostile-peer waits for that), not at a
# connect-timeout-ms deadline (except in the flood, which abandons
# handshakes).  GFR_HOSTILE_CASES="CASE..." runs only those.
deadline='did not answer the disconnect|failed during its handshake'
hostile() {
	local case=$1 port=$2 pattern=$3 log=$dir/echo before i rc deadlines
	[ -z "${GFR_HOSTILE_CASES:-}" ] || [[ " $GFR_HOSTILE_CASES " == *" $case "* ]] || return 0
	[ "$port" = $rr_port ] && log=$dir/rr
	# The flood's requests can also be refused for the device (its CQs
	# full), which names no peer.
	[ "$case" = flood ] ||
		pattern="(connection with|connection request from) ${GFR_CLIENT_ADDR//./\\.} port [0-9]+: ($pattern)"
	before=$(grep -c -E -- "$pattern" "$log")
	deadlines=$(grep -c -E -- "$deadline" "$log")
	timeout 120 "$here/hostile-peer" "$GFR_SERVER_ADDR" "$port" "$GFR_CLIENT_ADDR" "$case"
	rc=$?
	if [ "$rc" = 77 ]; then # the case does not apply to this provider; it said why
		return
	fi
	if [ "$rc" != 0 ]; then
		fail "$case (hostile-peer exit $rc)"
		return
	fi
	if [ "$3" = - ]; then
		echo "t-engine-hostile: $case: ended by the server (no log line required on this provider)"
		return
	fi
	for ((i = 0; i < 100; i++)); do
		[ "$(grep -c -E -- "$pattern" "$log")" -gt "$before" ] && break
		sleep 0.1
	done
	if [ "$i" = 100 ]; then
		fail "$case: the server logged no '$pattern'"
		return
	fi
	if [ "$case" != flood ] && [ "$(grep -c -E -- "$deadline" "$log")" -gt "$deadlines" ]; then
		fail "$case: the server ended the connection only at its deadline: $(grep -E -- "$deadline" "$log" | tail -n 1)"
		return
	fi
	echo "t-engine-hostile: $case: server log: $(grep -E -- "$pattern" "$log" | tail -n 1)"
}

violation='peer broke the protocol'
# siw reports a SEND too long for its receive buffer twice, by the
# receive's failed completion and by a fatal QP event, in either order:
# whichever comes first ends the connection and is logged against it.
oversize='a receive work request failed'
fabric_is_rnic "$fabric_dev0" &&
	oversize="$oversize|[a-z0-9_]+: local work queue catastrophic error on QP [0-9]+: disconnecting"
hostile oversize $echo_port "$oversize"
# An iWARP peer refuses an RDMA READ or WRITE with a TERMINATE, which only
# the kernel log shows: the server sees its connection close under it.
refused='an RDMA READ/WRITE work request failed|the connection closed under [0-9]+ RDMA READ\(s\) of ours in flight'
hostile bad-rkey $echo_port "$refused"
hostile bad-offset $echo_port "$refused"
hostile bad-length $echo_port "$refused"
# An iWARP RDMA WRITE completes at its sender once TCP has taken it, so a
# peer's refusal of one (its TERMINATE) reaches the server, if the WRITE
# completed, only as the close that follows: no reason to log.
refused_write=$refused
fabric_is_rnic "$fabric_dev0" && refused_write=-
hostile bad-write-rkey $rr_port "$refused_write"
hostile too-many-segments $echo_port "$violation \(more segments than negotiated\)"
hostile read-len-mismatch $echo_port "$violation \(read segments do not add up to read_len\)"
hostile too-large $echo_port "$violation \(message larger than negotiated\)"
hostile credit-overflow $echo_port "$violation \(peer sent without a credit, or granted more"
# iWARP has no RNR: a SEND beyond the credits that finds no receive buffer
# makes the server's RNIC terminate the connection before the engine sees
# the violation (siw raises no event and fails no receive for it), where
# one that arrives after the engine reposted a receive is caught as a
# violation: which comes first is a race, so on iWARP only the end is
# asked for.
overrun="$violation \(peer sent without a credit, or granted more"
fabric_is_rnic "$fabric_dev0" && overrun=-
hostile credit-overrun $echo_port "$overrun"
hostile unknown-type $echo_port "$violation \(unknown message type\)"
hostile bad-version $echo_port "$violation \(unknown protocol version\)"
hostile truncated $echo_port "$violation \(message shorter than the header\)"
hostile short-payload $echo_port "$violation \(length does not match the header\)"
hostile stray-done $echo_port "$violation \(DONE or ERROR for a message that offered no read list\)"
hostile stray-reply $echo_port "$violation \(reply claims more written bytes"
# The IB CM pads absent private data with zeros (a bad magic); iWARP's MPA
# carries none at all (too short).
hostile pdata-none $echo_port 'peer is not a glusterfs-rdma peer|connection private data missing or shorter than 20 bytes'
hostile pdata-version $echo_port 'peer speaks another'
hostile pdata-magic $echo_port 'peer is not a glusterfs-rdma peer'
hostile pdata-credits $echo_port 'peer.s connection parameters out of range'
hostile early $echo_port 'connection rejected by the peer|connecting failed'
hostile early-violation $echo_port "$violation \(unknown message type\)"

# A flood of connection requests can take every connection the server has
# room for (refused beyond that, with the reason logged): new honest
# connections pause meanwhile, but one connected before the flood must go on
# being served through it, and new ones must succeed again afterwards.
flood() {
	local runs_before long rc i
	[ -z "${GFR_HOSTILE_CASES:-}" ] || [[ " $GFR_HOSTILE_CASES " == *" flood "* ]] || return 0
	touch "$dir/pause"
	for ((i = 0; i < 600; i++)); do
		[ -e "$dir/paused" ] && break
		sleep 0.1
	done
	"$here/engine-test" client "$GFR_SERVER_ADDR" $echo_port "$GFR_CLIENT_ADDR" \
		-c 2 -n 3000 -b 8 -s 65536 >"$dir/long" 2>&1 &
	long=$!
	sleep 2
	hostile flood $echo_port 'cannot accept a connection|handshake took longer|rejected by the peer|rdma_create_qp failed|every completion queue is full|disconnecting'
	wait $long
	rc=$?
	grep '^engine-test: client: [0-9]' "$dir/long"
	if [ "$rc" != 0 ]; then
		cat "$dir/long"
		fail "a connection made before the flood was not served through it"
	fi
	runs_before=$(wc -l <"$dir/runs" 2>/dev/null || echo 0)
	rm -f "$dir/pause" "$dir/paused"
	for ((i = 0; i < 1200; i++)); do
		[ "$(wc -l <"$dir/runs" 2>/dev/null || echo 0)" -gt "$runs_before" ] && break
		sleep 0.1
	done
	if [ "$i" = 1200 ]; then
		fail "no honest run completed after the flood"
	else
		echo "t-engine-hostile: flood: an honest run completed after it"
	fi
}
flood

touch "$dir/stop"
wait "$honest"
cat "$dir/honest" | grep -v '^engine-test: client: [0-9]* connections' | tail -n 20
grep '^engine-test: client: ' "$dir/honest" | tail -n 2
if [ -e "$dir/honest-failed" ]; then
	cat "$dir/honest-failed"
	fail "an honest client failed while the hostile peer ran ($(wc -l <"$dir/honest-failed") runs)"
fi
kill -TERM $echo_srv $rr_srv
wait $echo_srv || fail "the echo server exited $?"
wait $rr_srv || fail "the request/reply server exited $?"
server_log_verdict "$dir/echo"
server_log_verdict "$dir/rr"
failures_summary
