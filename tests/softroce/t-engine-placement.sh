#!/bin/bash
# The engine's placement options: gid-index=1 (the IPv4 GID rxe derives
# from the veth address) is accepted; gid-index=0 (the link-local GID) and
# a device the address does not resolve to are refused with a message
# naming what was configured; pollers=4 spreads 8 connections over four
# poller threads, which are seen running.
set -u
. "$(dirname "$0")/fabric-lib.sh"
prog=${GFR_BUILDDIR:?}/tests/softroce/engine-test
out=$(mktemp)
pair_init
trap 'pair_cleanup; rm -f "$out" "$out.client"; kill "$server" 2>/dev/null' EXIT

pair() { # PORT SERVER-ARGS -- CLIENT-ARGS...: a client that must succeed
	local port=$1 sargs=()
	shift
	while [ "$1" != -- ]; do sargs+=("$1"); shift; done
	shift
	run_pair t-engine-placement 60 "$prog" server "$GFR_SERVER_ADDR" "$port" "${sargs[@]}" -- \
		"$prog" client "$GFR_SERVER_ADDR" "$port" "$GFR_CLIENT_ADDR" "$@" || return 1
	cat "$pair_dir/client"
}

refused() { # PORT MESSAGE ARGS...: the client must fail to connect, saying MESSAGE
	local port=$1 message=$2
	shift 2
	run_pair --client-status 2 --kill-server t-engine-placement 60 \
		"$prog" server "$GFR_SERVER_ADDR" "$port" -c 1 -- \
		"$prog" client "$GFR_SERVER_ADDR" "$port" "$GFR_CLIENT_ADDR" -n 10 "$@" || return 1
	cat "$pair_dir/client"
	grep -q "$message" "$pair_dir/client" || { echo "t-engine-placement: no message '$message'"; return 1; }
}

pair 20130 -o gid-index=1 -- -n 100 -o gid-index=1 || { echo "t-engine-placement: gid-index=1 failed"; exit 1; }

refused 20131 "does not use GID 0" -o gid-index=0 || exit 1
refused 20132 "resolves to device rxe1, but device=rxe0" -o device=rxe0 || exit 1

# Port 0: the listener reports the port it bound, and a client reaches it.
spawn_logged "$out" "$prog" server "$GFR_SERVER_ADDR" 0 -c 1
server=$!
wait_for_output "$out" listening 30 || { cat "$out"; exit 1; }
port=$(sed -n 's/.*listening on 10.99.0.1 port \([0-9]*\)$/\1/p' "$out")
[ -n "$port" ] && [ "$port" != 0 ] || { cat "$out"; echo "t-engine-placement: no bound port reported"; exit 1; }
timeout 60 "$prog" client "$GFR_SERVER_ADDR" "$port" "$GFR_CLIENT_ADDR" -n 20 >"$out.client" 2>&1 ||
	{ cat "$out.client"; echo "t-engine-placement: connecting to the bound port $port failed"; exit 1; }
wait "$server" || { cat "$out"; exit 1; }

spawn_logged "$out" "$prog" server "$GFR_SERVER_ADDR" 20133 -c 8 -o pollers=4
server=$!
wait_for_output "$out" listening 30 || { cat "$out"; exit 1; }
"$prog" client "$GFR_SERVER_ADDR" 20133 "$GFR_CLIENT_ADDR" -c 8 -n 400 -b 4 -o pollers=4 >"$out.client" 2>&1 &
client_pid=$!
threads=""
for _ in $(seq 100); do
	threads=$(cat /proc/"$client_pid"/task/*/comm 2>/dev/null | grep -c '^gfr-p[0-9]/rxe1')
	[ "$threads" -ge 4 ] && break
	sleep 0.1
done
wait "$client_pid" || { cat "$out.client" "$out"; echo "t-engine-placement: the pollers=4 client failed"; exit 1; }
wait "$server" || { cat "$out"; exit 1; }
cat "$out.client" "$out"
[ "$threads" = 4 ] || { echo "t-engine-placement: saw $threads poller threads on rxe1, expected 4"; exit 1; }
echo "t-engine-placement: 4 poller threads on rxe1 carried 8 connections"
