#!/bin/bash
# `tcp,rdma` on a node where RDMA cannot listen yet: a brick started while
# no RDMA device has its address (both rxe devices deleted) starts instead
# of failing (stock glusterfsd crashes in server_init when one of several
# listeners fails), serves tcp at once, logs once that its rdma listener
# waits, and serves rdma once the devices are back, logging that once too
# (docs/plugin.md, "Listening before RDMA is there").  Its clients run as
# the GlusterFS programs do under the sanitizers (no leak check: glfs_fini
# leaves GlusterFS's own allocations; t-gfapi judges rdma.so's leaks).
set -u
. "$(dirname "$0")/gluster-lib.sh"
prog=${GFR_BUILDDIR:?}/tests/gluster/gfapi-io
dir=$GFR_GLUSTER_RUN/late
log=$GFR_GLUSTER_LOGS/late-brick.log
port=24400
fail() { echo "t-late-rdma: $*"; exit 1; }
trap 'brick_stop late; fabric_repair' EXIT

# wait_log PATTERN SECONDS: until the brick's log has PATTERN.
wait_log() {
	local i
	for i in $(seq $(($2 * 5))); do
		grep -q "$1" "$log" 2>/dev/null && return 0
		sleep 0.2
	done
	return 1
}
# check TRANSPORT: a small data and metadata check over TRANSPORT.
check() {
	client_volfile late "$1" $port >"$dir/$1.vol"
	timeout 300 env "${gfr_sanitizer_env[@]}" "$prog" check "$dir/$1.vol" late --size-mib 8 --files 50 --random-reads 64 \
		--dir "late-$1" --log "$GFR_GLUSTER_LOGS/late-$1.log" >"$dir/$1.out" 2>&1 ||
		{ cat "$dir/$1.out"; fail "the check over $1 failed"; }
	echo "t-late-rdma: the brick served a check over $1"
}

gluster_setup || exit 1
rdma link delete rxe0 && rdma link delete rxe1 || fail "cannot delete the rxe devices"
mkdir -p "$dir/brick"
rm -f "$log"
brick_volfile late tcp,rdma $port >"$dir/server.vol"
with_sanitizers glusterfsd -f "$dir/server.vol" -p "$dir/brick.pid" -l "$log" -L INFO ||
	{ cat "$log"; fail "glusterfsd did not start"; }
wait_log "cannot listen for RDMA connections on $GFR_SERVER_ADDR:$port yet" 20 ||
	{ cat "$log"; fail "the brick did not log that its rdma listener waits"; }
for i in $(seq 100); do ss -ltn | grep -q "$GFR_SERVER_ADDR:$((port + 1)) " && break; sleep 0.2; done
check tcp
sleep 5 # two retries more: the waiting is logged once, not per attempt
kill -0 "$(brick_pid late)" 2>/dev/null || fail "the brick died while its rdma listener waited"

fabric_repair
wait_log "listening for RDMA connections on $GFR_SERVER_ADDR:$port" 30 ||
	{ cat "$log"; fail "the brick did not listen on rdma once the devices were back"; }
check rdma
[ "$(grep -c "listen for RDMA connections on $GFR_SERVER_ADDR:$port yet" "$log")" = 1 ] ||
	fail "the wait was logged $(grep -c 'yet' "$log") times, not once"
[ "$(grep -c "listening for RDMA connections on $GFR_SERVER_ADDR:$port" "$log")" = 1 ] ||
	fail "the listening was logged more than once"
if plugin_errors "$log"; then fail "the brick's log has errors of the plugin"; fi
echo "t-late-rdma: passed"
