#!/bin/bash
# glusterd-managed volumes over rdma (stock glusterd, gluster CLI and
# mount.glusterfs 10.3 or 11.1): `volume create ... transport rdma` and
# `... transport tcp,rdma` start (without a plugin both fail with "Commit
# failed on localhost", and tcp,rdma crashes the brick), the bricks
# register their rdma ports with glusterd's portmap, and
# `mount -t glusterfs -o transport=rdma` mounts each and passes a data check;
# and the node's options file reaches a brick glusterd starts.
#
# glusterd listens on tcp and rdma (transport-type socket,rdma in its
# volfile, as the old transport needed; tools/glusterfs-rdma-setup makes
# that change): a client of an rdma volume asks
# glusterd's portmap for the brick's port over its own transport.  Its
# state, logs and the bricks (ext4 images: volfiles glusterd writes need
# user.* xattrs, which this kernel's tmpfs lacks) live in the VM only.
set -u
. "$(dirname "$0")/gluster-lib.sh"
gd=$GFR_GLUSTER_RUN/glusterd
mnt=$gd/mnt
fail() { echo "t-glusterd: $*"; exit 1; }

# glusterfs_mount OPTIONS VOLUME: mount -t glusterfs -o OPTIONS on $mnt.
# Under the sanitizers it runs the helper mount(8) would, mount.glusterfs,
# itself: mount(8) removes LD_PRELOAD from the environment of its helpers.
glusterfs_mount() {
	if [ -n "$gfr_sanitizer_runtime" ]; then
		with_sanitizers mount.glusterfs "$GFR_SERVER_ADDR:/$2" "$mnt" -o "$1"
	else
		mount -t glusterfs -o "$1" "$GFR_SERVER_ADDR:/$2" "$mnt"
	fi
}
cli() { timeout 120 gluster --mode=script "$@"; }
cleanup() {
	umount "$mnt" 2>/dev/null
	for v in gdrdma gdboth; do cli volume stop $v force >/dev/null 2>&1; done
	[ -f "$gd/glusterd.pid" ] && kill "$(cat "$gd/glusterd.pid")" 2>/dev/null
	pkill -f "glusterfsd.*$gd" 2>/dev/null
	sleep 1
	cp "$gd"/log/*.log "$gd"/log/bricks/*.log "$GFR_GLUSTER_LOGS/" 2>/dev/null
	for d in "$gd"/b1 "$gd"/b2 /var/log/glusterfs /var/lib/glusterd /etc/glusterfs; do
		umount "$d" 2>/dev/null
	done
}
trap cleanup EXIT

gluster_setup || exit 1
mkdir -p "$gd"/lib "$gd"/log "$gd"/etc "$gd"/b1 "$gd"/b2 "$mnt" /run/gluster
cp -a /etc/glusterfs/. "$gd"/etc/
# the administrator's way: glusterfs-rdma-setup (tools/), which also finds
# the fabric's active rxe ports
setup=$(dirname "$0")/../../tools/glusterfs-rdma-setup
"$setup" --glusterd-vol "$gd"/etc/glusterd.vol || fail "glusterfs-rdma-setup failed"
grep -q "transport-type socket,rdma" "$gd"/etc/glusterd.vol || fail "glusterfs-rdma-setup did not make glusterd listen on rdma"
mount --bind "$gd"/lib /var/lib/glusterd && mount --bind "$gd"/log /var/log/glusterfs &&
	mount --bind "$gd"/etc /etc/glusterfs || fail "cannot isolate glusterd's state"
modprobe loop 2>/dev/null
for b in b1 b2; do
	truncate -s 300M "$gd/$b.img" && mkfs.ext4 -q -F "$gd/$b.img" &&
		mount -o loop "$gd/$b.img" "$gd/$b" || fail "cannot make the ext4 brick $b"
done

with_sanitizers glusterd -p "$gd/glusterd.pid" || fail "glusterd did not start"
for i in $(seq 100); do cli volume list >/dev/null 2>&1 && break; sleep 0.3; done
cli volume list >/dev/null || fail "glusterd does not answer the CLI"
grep -q "listening for RDMA connections on .*:24008" "$gd"/log/glusterd.log ||
	fail "glusterd is not listening on rdma (its log: $GFR_GLUSTER_LOGS/glusterd.log)"

# check_volume NAME TRANSPORT BRICK: create, start, mount over rdma, data check.
check_volume() {
	local vol=$1 transport=$2 brick=$GFR_SERVER_ADDR:$gd/$3/brick
	cli volume create "$vol" transport "$transport" "$brick" force || fail "volume create $vol failed"
	cli volume start "$vol" || fail "volume start $vol (transport $transport) failed"
	cli volume status "$vol" || fail "volume status $vol failed"
	cli volume status "$vol" --xml >"$gd/status.xml" || fail "volume status $vol --xml failed"
	grep -q "<rdma>[1-9][0-9]*</rdma>" "$gd/status.xml" && grep -q "<status>1</status>" "$gd/status.xml" ||
		fail "the brick of $vol has no RDMA port in glusterd's portmap or is not online"
	glusterfs_mount transport=rdma,log-file="$GFR_GLUSTER_LOGS/$vol-mount.log" "$vol" ||
		fail "mount -t glusterfs -o transport=rdma $vol failed"
	head -c $((32 << 20)) /dev/urandom >"$gd/src"
	dd if="$gd/src" of="$mnt/data" bs=128k conv=fsync status=none || fail "writing to $vol failed"
	umount "$mnt" && glusterfs_mount transport=rdma "$vol" ||
		fail "remounting $vol failed"
	cmp "$gd/src" "$mnt/data" || fail "$vol returned other data than was written"
	mkdir "$mnt/d" && for i in $(seq 200); do echo "$i" >"$mnt/d/f$i" || fail "create in $vol"; done
	[ "$(ls "$mnt/d" | wc -l)" = 200 ] || fail "$vol lists the wrong number of files"
	rm -r "$mnt/d" "$mnt/data" || fail "removing files from $vol failed"
	umount "$mnt" || fail "umount of $vol failed"
	grep -q "transport-type rdma" /var/lib/glusterd/vols/"$vol"/"$vol".rdma-fuse.vol 2>/dev/null ||
		grep -rq "transport-type rdma" /var/lib/glusterd/vols/"$vol"/ || fail "no rdma client volfile for $vol"
	echo "t-glusterd: $vol (transport $transport) started, mounted over rdma, data checked"
}

# The node's options file (/etc/glusterfs/rdma.conf, glusterd's isolated
# /etc/glusterfs here): what it sets reaches a glusterd-managed brick when
# the volume restarts, and a bad line keeps the brick from starting, with
# the file and the line in the brick's log.
brick_poll_mode() {
	local pid
	pid=$(cli volume status "$1" --xml | sed -n 's:.*<pid>\([0-9]*\)</pid>.*:\1:p' | head -n1)
	[ -n "$pid" ] && [ "$pid" -gt 0 ] || return 1
	"$GFR_BUILDDIR/tools/gfr-stat" --json "$pid" | grep -o '"poll_mode":"[a-z]*"' | head -n1 | cut -d'"' -f4
}
check_node_conf() {
	local vol=$1 mode i blog
	mode=$(brick_poll_mode "$vol") || fail "no brick process of $vol for gfr-stat"
	[ "$mode" = adaptive ] || fail "the brick of $vol polls '$mode' without a node file (default: adaptive)"
	printf '# rdma.so for every GlusterFS process here\ntransport.rdma.poll-mode = event\n' \
		>/etc/glusterfs/rdma.conf
	cli volume stop "$vol" && cli volume start "$vol" || fail "restarting $vol failed"
	mode=$(brick_poll_mode "$vol") || fail "no brick process of $vol after its restart"
	[ "$mode" = event ] || fail "the brick of $vol polls '$mode' after rdma.conf said event"
	cli volume stop "$vol" || fail "stopping $vol failed"
	printf '# a typo\ntransport.rdma.poll-mode = spin\n' >/etc/glusterfs/rdma.conf
	cli volume start "$vol" >/dev/null 2>&1
	blog=$(ls "$gd"/log/bricks/*b1-brick.log)
	for i in $(seq 100); do
		grep -q "rdma.conf line 2: option transport.rdma.poll-mode=spin is not valid" "$blog" && break
		sleep 0.3
	done
	grep "rdma.conf line 2: option transport.rdma.poll-mode=spin is not valid" "$blog" ||
		fail "the brick's log does not name rdma.conf's bad line ($blog)"
	cli volume status "$vol" --xml >"$gd/status.xml"
	grep -q "<status>1</status>" "$gd/status.xml" && fail "the brick of $vol runs despite rdma.conf's bad line"
	# the refusal is this check's; the plugin-error scan below is for the rest
	mv "$blog" "$blog.node-conf"
	rm /etc/glusterfs/rdma.conf
	cli volume stop "$vol" force >/dev/null 2>&1
	echo "t-glusterd: rdma.conf's poll-mode reached the brick of $vol after a restart; its bad line stopped the brick"
}

before=$(fabric_snapshot)
check_volume gdrdma rdma b1
check_node_conf gdrdma
check_volume gdboth tcp,rdma b2
# The CLI talks to glusterd over lo: only the fabric counters are judged.
fabric_check "$before" 2000 1000000 || exit 1
for log in "$gd"/log/glusterd.log "$gd"/log/bricks/*.log; do
	if plugin_errors "$log"; then fail "$log has errors of the plugin"; fi
done
echo "t-glusterd: passed"
