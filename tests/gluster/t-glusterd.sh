#!/bin/bash
# glusterd-managed volumes over rdma (stock glusterd, gluster CLI and
# mount.glusterfs 10.3 or 11.1): `volume create ... transport rdma` and
# `... transport tcp,rdma` start (without a plugin both fail with "Commit
# failed on localhost", and tcp,rdma crashes the brick), the bricks
# register their rdma ports with glusterd's portmap, and
# `mount -t glusterfs -o transport=rdma` mounts each and passes a data check;
# the node's options file reaches a brick glusterd starts, and a
# [volume NAME] section of it reaches that volume's brick and FUSE client
# only, and in the self-heal daemon, which serves two volumes in one
# process, that volume's connections only.
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
mnt2=$gd/mnt2
fail() { echo "t-glusterd: $*"; exit 1; }

# glusterfs_mount OPTIONS VOLUME [DIR]: mount -t glusterfs -o OPTIONS on DIR
# (default $mnt).
# Under the sanitizers it runs the helper mount(8) would, mount.glusterfs,
# itself: mount(8) removes LD_PRELOAD from the environment of its helpers.
glusterfs_mount() {
	local at=${3:-$mnt}
	if [ -n "$gfr_sanitizer_runtime" ]; then
		with_sanitizers mount.glusterfs "$GFR_SERVER_ADDR:/$2" "$at" -o "$1"
	else
		mount -t glusterfs -o "$1" "$GFR_SERVER_ADDR:/$2" "$at"
	fi
}
cli() { timeout 120 gluster --mode=script "$@"; }
cleanup() {
	umount "$mnt" 2>/dev/null
	umount "$mnt2" 2>/dev/null
	for v in gdrdma gdboth gdrep gdrep2; do cli volume stop $v force >/dev/null 2>&1; done
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
mkdir -p "$gd"/lib "$gd"/log "$gd"/etc "$gd"/b1 "$gd"/b2 "$mnt" "$mnt2" /run/gluster
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
	pid=$(gd_brick_pid "$1")
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

# A [volume NAME] section: credits = 128 for gdrdma (the node's default is
# 64).  The window both sides agree on is the smaller of theirs, so 128 on
# gdrdma's brick and FUSE client shows that each side took the section; 64
# on gdboth's, that no other did.  A
# section that sets an option the whole process shares (pollers) stops
# the brick, with the file and the line in its log.
gd_brick_pid() {
	cli volume status "$1" --xml | sed -n 's:.*<pid>\([0-9]*\)</pid>.*:\1:p' | head -n1
}
# The glusterfs process mounted on DIR.
fuse_pid() {
	local p
	for p in $(pgrep -x glusterfs); do
		[ "$(tr '\0' '\n' </proc/"$p"/cmdline | tail -n1)" = "$1" ] && echo "$p"
	done
}
# "PEER=WINDOW ..." of every connection in gfr-stat's JSON of PID.
windows() {
	"$GFR_BUILDDIR/tools/gfr-stat" --json "$1" | /usr/bin/python3 -c '
import json, sys
found = []
def walk(x):
    if isinstance(x, dict):
        if "credits" in x and "peer" in x:
            found.append("%s=%d" % (x["peer"], x["credits"]["window"]))
        for v in x.values():
            walk(v)
    elif isinstance(x, list):
        for v in x:
            walk(v)
walk(json.load(sys.stdin))
print(" ".join(found))'
}
# expect_windows WHAT PID WANT: PID has RDMA connections, each with window WANT.
expect_windows() {
	local what=$1 pid=$2 want=$3 got w n=0
	got=$(windows "$pid") || fail "gfr-stat --json of $what ($pid) failed"
	for w in $got; do
		n=$((n + 1))
		[ "${w#*=}" = "$want" ] || fail "$what: window ${w#*=} to ${w%=*}, not $want ($got)"
	done
	[ $n -gt 0 ] || fail "$what has no RDMA connection"
	echo "t-glusterd: $what: $got"
}
check_volume_sections() {
	local i blog
	cli volume stop gdboth || fail "stopping gdboth failed"
	printf '%s\n' '# the node' 'transport.rdma.keepalive-ms = 10000' '' \
		'[volume gdrdma]' 'transport.rdma.credits = 128' >/etc/glusterfs/rdma.conf
	cli volume start gdrdma && cli volume start gdboth || fail "starting the volumes under sections failed"
	glusterfs_mount transport=rdma,log-file="$GFR_GLUSTER_LOGS/gdrdma-section-mount.log" gdrdma &&
		glusterfs_mount transport=rdma,log-file="$GFR_GLUSTER_LOGS/gdboth-section-mount.log" gdboth "$mnt2" ||
		fail "mounting both volumes over rdma failed"
	echo one >"$mnt/f" && echo two >"$mnt2/f" && [ "$(cat "$mnt/f")" = one ] && [ "$(cat "$mnt2/f")" = two ] ||
		fail "the volumes under sections do not keep data"
	grep -q "the options of \[volume gdrdma\] in .*rdma.conf (line 4) apply" "$GFR_GLUSTER_LOGS/gdrdma-section-mount.log" ||
		fail "the FUSE client of gdrdma does not log its section"
	expect_windows "the brick of gdrdma" "$(gd_brick_pid gdrdma)" 128
	expect_windows "the FUSE client of gdrdma" "$(fuse_pid "$mnt")" 128
	expect_windows "the brick of gdboth" "$(gd_brick_pid gdboth)" 64
	expect_windows "the FUSE client of gdboth" "$(fuse_pid "$mnt2")" 64
	rm "$mnt/f" "$mnt2/f"
	umount "$mnt" && umount "$mnt2" || fail "umount after the section check failed"
	cli volume stop gdboth || fail "stopping gdboth failed"
	printf '%s\n' '[volume gdboth]' 'transport.rdma.pollers = 2' >>/etc/glusterfs/rdma.conf
	cli volume start gdboth >/dev/null 2>&1
	blog=$(ls "$gd"/log/bricks/*b2-brick.log)
	want="rdma.conf line 7: \[volume gdboth\] sets transport.rdma.pollers = 2, but it is 1 for the node"
	for i in $(seq 100); do
		grep -q "$want" "$blog" && break
		sleep 0.3
	done
	grep "$want" "$blog" || fail "the brick's log does not name the section's bad line ($blog)"
	cli volume status gdboth --xml >"$gd/status.xml"
	grep -q "<status>1</status>" "$gd/status.xml" && fail "the brick of gdboth runs despite its bad section"
	mv "$blog" "$blog.node-conf"
	rm /etc/glusterfs/rdma.conf
	cli volume stop gdboth force >/dev/null 2>&1
	cli volume stop gdrdma >/dev/null 2>&1
	echo "t-glusterd: [volume gdrdma] reached its brick and FUSE client only; a section setting pollers stopped gdboth's brick"
}

# The self-heal daemon serves every replicated volume of the node from one
# process: [volume gdrep] (credits = 128) reaches its connections to
# gdrep's two bricks, and not those to gdrep2's.
check_shd_sections() {
	local a=$GFR_SERVER_ADDR v shd got w peer i ports n=0
	printf '%s\n' '[volume gdrep]' 'transport.rdma.credits = 128' >/etc/glusterfs/rdma.conf
	for v in gdrep gdrep2; do
		cli volume create $v replica 2 transport rdma "$a:$gd/b1/$v" "$a:$gd/b2/$v" force >/dev/null &&
			cli volume start $v >/dev/null || fail "creating or starting the replicated volume $v failed"
	done
	ports=" $(cli volume status gdrep --xml | sed -n 's:.*<rdma>\([0-9]*\)</rdma>.*:\1:p' | tr '\n' ' ')"
	for i in $(seq 120); do
		shd=$(pgrep -f -- "--process-name glustershd" | head -n1)
		[ -n "$shd" ] && got=$(windows "$shd") && [ "$(echo "$got" | wc -w)" -ge 4 ] && break
		sleep 0.5
	done
	[ "$(echo "$got" | wc -w)" = 4 ] || fail "the self-heal daemon has not one connection to each of 4 bricks: '$got'"
	for w in $got; do
		peer=${w%=*}
		case "$ports " in
		*" ${peer##*:} "*)
			[ "${w#*=}" = 128 ] || fail "the self-heal daemon's connection to gdrep's brick ${w%=*} has window ${w#*=}, not 128 ($got)"
			n=$((n + 1)) ;;
		*) [ "${w#*=}" = 64 ] || fail "the self-heal daemon's connection to gdrep2's brick ${w%=*} has window ${w#*=}, not 64 ($got)" ;;
		esac
	done
	[ $n = 2 ] || fail "the self-heal daemon has $n connections to gdrep's bricks (rdma ports$ports), not 2 ($got)"
	for v in gdrep gdrep2; do cli volume stop $v >/dev/null || fail "stopping $v failed"; done
	rm /etc/glusterfs/rdma.conf
	echo "t-glusterd: the self-heal daemon of gdrep and gdrep2: $got (gdrep's rdma ports:$ports)"
}

before=$(fabric_snapshot)
check_volume gdrdma rdma b1
check_node_conf gdrdma
check_volume gdboth tcp,rdma b2
check_volume_sections
check_shd_sections
# The CLI talks to glusterd over lo: only the fabric counters are judged.
fabric_check "$before" 2000 1000000 || exit 1
for log in "$gd"/log/glusterd.log "$gd"/log/bricks/*.log; do
	if plugin_errors "$log"; then fail "$log has errors of the plugin"; fi
done
echo "t-glusterd: passed"
