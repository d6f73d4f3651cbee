#!/bin/bash
# kill -9 of the brick (glusterfsd) during I/O over rdma: the gfapi client
# must see errors, not a hang (no call may take 60 s), and once the brick
# is restarted it must reconnect by itself and its I/O resume with correct
# data (gfapi-io io).
set -u
. "$(dirname "$0")/gluster-lib.sh"
name=killvol
prog=${GFR_BUILDDIR:?}/tests/gluster/gfapi-io
out=$GFR_GLUSTER_LOGS/$name-io.out
trap 'kill "$io" 2>/dev/null; brick_stop $name; rm -rf "$GFR_GLUSTER_RUN/$name"' EXIT

gluster_setup || exit 1
brick_start $name rdma 24140 || exit 1
client_volfile $name rdma 24140 >"$GFR_GLUSTER_RUN/$name/client.vol"
with_sanitizers "$prog" io "$GFR_GLUSTER_RUN/$name/client.vol" $name --seconds 70 --max-op-seconds 60 \
	--log "$GFR_GLUSTER_LOGS/$name-gfapi.log" >"$out" 2>&1 &
io=$!
wait_for_output "$out" glfs_init: 60 || { cat "$out"; echo "t-brick-kill: gfapi-io did not start"; exit 1; }
sleep 10
echo "t-brick-kill: kill -9 of the brick (pid $(brick_pid $name))"
brick_stop $name KILL
sleep 10
echo "t-brick-kill: restarting the brick"
brick_start $name rdma 24140 || exit 1
wait "$io"
rc=$?
cat "$out"
[ "$rc" = 0 ] || { echo "t-brick-kill: gfapi-io io exited $rc"; exit 1; }
grep -q "errors begin" "$out" ||
	{ echo "t-brick-kill: the client never saw an error: the brick was not killed under it"; exit 1; }
grep -Eq "^ok=[1-9][0-9]* errors=[1-9][0-9]* outages=[1-9][0-9]* resumed=1" "$out" ||
	{ echo "t-brick-kill: I/O did not resume after the restart"; exit 1; }
echo "t-brick-kill: passed"
