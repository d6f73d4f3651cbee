#!/bin/bash
# A libgfapi client over rdma (glfs_set_volfile, stock GlusterFS 10.3):
# 256 MiB of random data in 128 KiB writes, read back in 1 MiB reads and
# with 4,096 random 4 KiB reads, every byte and the checksums compared;
# 2,000 files created, stat'ed, listed with readdirplus (large replies)
# and unlinked; then glfs_fini.  The traffic must cross the veth, and
# neither log may hold an error of the plugin.  rpcsvc's request-handler
# threads in the brick must not outnumber the threads that can hand it
# requests (the pool's 2 per CPU and a poller): one per worker that ever
# served is the leak plugin-listeners.c prevents.  Under the sanitizers
# LeakSanitizer watches the client: no leak may have a frame in rdma.so.
set -u
. "$(dirname "$0")/gluster-lib.sh"
name=gfapivol
prog=${GFR_BUILDDIR:?}/tests/gluster/gfapi-io
trap 'brick_stop $name; rm -rf "$GFR_GLUSTER_RUN/$name"' EXIT

gluster_setup || exit 1
spawned_before=$(grep -c "spawned a request handler thread" "$GFR_GLUSTER_LOGS/$name-brick.log" 2>/dev/null)
brick_start $name rdma 24130 || exit 1
client_volfile $name rdma 24130 >"$GFR_GLUSTER_RUN/$name/client.vol"
before=$(fabric_snapshot)
with_leak_check "$prog" check "$GFR_GLUSTER_RUN/$name/client.vol" $name --size-mib 256 --files 2000 \
	--random-reads 4096 --log "$GFR_GLUSTER_LOGS/$name-gfapi.log"
rdma_leak_verdict t-gfapi $? || { echo "t-gfapi: gfapi-io check failed"; exit 1; }
fabric_check "$before" 10000 "$GFR_GLUSTER_MAX_LO" || exit 1
handlers=$(cat /proc/"$(brick_pid $name)"/task/*/comm 2>/dev/null | grep -c rpcrqhnd)
spawned=$(($(grep -c "spawned a request handler thread" "$GFR_GLUSTER_LOGS/$name-brick.log") - ${spawned_before:-0}))
echo "t-gfapi: brick request-handler threads: $handlers alive, $spawned spawned"
if [ "$handlers" -gt $((2 * $(nproc) + 1)) ]; then
	echo "t-gfapi: the brick keeps $handlers rpcsvc request-handler threads (at most $((2 * $(nproc) + 1)) may hand it requests)"
	exit 1
fi
for log in "$GFR_GLUSTER_LOGS/$name-brick.log" "$GFR_GLUSTER_LOGS/$name-gfapi.log"; do
	if plugin_errors "$log"; then
		echo "t-gfapi: $log has errors of the plugin"
		exit 1
	fi
done
echo "t-gfapi: passed"
