#!/bin/bash
# Access control over rdma: auth.addr sees the client's real address.
# A brick that allows only the client's address ($GFR_CLIENT_ADDR) admits
# a gfapi client over rdma (a small data check passes); a brick that allows
# only another address, and one that rejects the client's address, refuse
# it: the brick matches the client's address against its list and refuses
# the handshake, and the client is told "Authentication failed".  GlusterFS
# 10.3's glfs_init then never returns (it stops after "sending AUTH_FAILED
# event", over tcp as well: checked), so the refused clients are given
# REFUSED_WAIT seconds and stopped; what matters is that they got no access.
set -u
. "$(dirname "$0")/gluster-lib.sh"
prog=${GFR_BUILDDIR:?}/tests/gluster/gfapi-io
bricks="authok authother authreject"
trap 'for b in $bricks; do brick_stop $b; rm -rf "${GFR_GLUSTER_RUN:?}/$b"; done' EXIT

REFUSED_WAIT=30

# mount_check NAME PORT SECONDS: gfapi-io check against brick NAME; its exit
# status (124 when it ran out of time).
mount_check() {
	client_volfile "$1" rdma "$2" >"$GFR_GLUSTER_RUN/$1/client.vol"
	with_sanitizers timeout "$3" "$prog" check "$GFR_GLUSTER_RUN/$1/client.vol" "$1" --size-mib 4 --files 20 \
		--random-reads 64 --no-fini --log "$GFR_GLUSTER_LOGS/$1-gfapi.log" \
		>"$GFR_GLUSTER_LOGS/$1-gfapi.out" 2>&1
}

# new_lines FILE FROM: FILE from line FROM on (what this run logged).
new_lines() { tail -n +"$2" "$1" 2>/dev/null; }

# refused NAME PORT: the client must not get in, the brick must refuse it
# for its address, and the client must hear why.
refused() {
	local brick_log=$GFR_GLUSTER_LOGS/$1-brick.log client_log=$GFR_GLUSTER_LOGS/$1-gfapi.log
	local from_brick from_client
	from_brick=$(($(wc -l <"$brick_log") + 1))
	from_client=$(($(cat "$client_log" 2>/dev/null | wc -l) + 1))
	if mount_check "$1" "$2" "$REFUSED_WAIT"; then
		echo "t-auth: brick $1 admitted $GFR_CLIENT_ADDR; it should not"
		return 1
	fi
	if ! new_lines "$brick_log" "$from_brick" | grep -q "received addr = \"$GFR_CLIENT_ADDR\"" ||
		! new_lines "$brick_log" "$from_brick" | grep -q "Cannot authenticate client from"; then
		echo "t-auth: brick $1 did not refuse the client for its address $GFR_CLIENT_ADDR:"
		new_lines "$brick_log" "$from_brick" | grep -E '\] [EWI] \[' | tail -5
		return 1
	fi
	if ! new_lines "$client_log" "$from_client" | grep -q "remote-error=Authentication failed"; then
		echo "t-auth: the client of brick $1 was not told that authentication failed:"
		tail -5 "$GFR_GLUSTER_LOGS/$1-gfapi.out"
		return 1
	fi
	echo "t-auth: brick $1 refused $GFR_CLIENT_ADDR, and the client was told so"
}

gluster_setup || exit 1
fail=0
brick_start authok rdma 24140 "auth.addr.authok-posix.allow $GFR_CLIENT_ADDR" || exit 1
brick_start authother rdma 24150 "auth.addr.authother-posix.allow 10.99.0.77" || exit 1
brick_start authreject rdma 24160 "auth.addr.authreject-posix.allow *" \
	"auth.addr.authreject-posix.reject $GFR_CLIENT_ADDR" || exit 1

if mount_check authok 24140 300; then
	echo "t-auth: brick authok admitted $GFR_CLIENT_ADDR and the data check passed"
else
	echo "t-auth: brick authok (allow $GFR_CLIENT_ADDR) did not serve the client:"
	tail -5 "$GFR_GLUSTER_LOGS/authok-gfapi.out"
	fail=1
fi
refused authother 24150 || fail=1
refused authreject 24160 || fail=1
for b in $bricks; do
	if plugin_errors "$GFR_GLUSTER_LOGS/$b-brick.log"; then
		echo "t-auth: $b's log has errors of the plugin"
		fail=1
	fi
done
[ "$fail" = 0 ] && echo "t-auth: passed"
exit "$fail"
