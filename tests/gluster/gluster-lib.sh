# Helpers for the end-to-end tests with stock GlusterFS (sourced; bash),
# inside the soft-RoCE VM: bricks run from hand-written volfiles on a tmpfs
# (9p cannot hold trusted.* xattrs; the VM kernel's tmpfs lacks user.*, so
# posix runs with mandate-attribute off), and GlusterFS loads the rdma.so
# of the build tree through a VM-local bind mount over its rpc-transport
# directory (GlusterFS has no search path for transports).
. "$(dirname "${BASH_SOURCE[0]}")/../softroce/fabric-lib.sh"

GFR_GLUSTER_RUN=${GFR_GLUSTER_RUN:-/run/gfr-gluster}
# Logs go to the build tree (the host's disk, through 9p), to outlive the VM.
GFR_GLUSTER_LOGS=${GFR_GLUSTER_LOGS:-${GFR_BUILDDIR:?}/gluster-logs}
# Packets a GlusterFS test may send through lo (fabric_check): glusterfsd
# and gfapi send a handful of local packets of their own (4 per process
# here, none UDP); traffic that rxe loops back locally is thousands.
GFR_GLUSTER_MAX_LO=20

# A build configured with --enable-asan (and --enable-ubsan) makes an
# rdma.so that needs the sanitizers' runtime loaded first in the stock
# GlusterFS programs that load it.  with_sanitizers CMD [ARG...] runs CMD
# with it preloaded when rdma.so needs it (plainly otherwise), reports
# going to $GFR_GLUSTER_LOGS/sanitizer.PID (ASan) and ubsan.PID (UBSan,
# which rdma.so carries inside, see configure.ac; a file of its own, as both
# runtimes would truncate the same one): glusterfsd, glusterfs and glusterd
# daemonize with stderr on /dev/null.  run-suite fails a test that leaves
# an error in either.  LeakSanitizer
# stays off in them: it dies in glusterfsd ("Tracer caught signal 11":
# GlusterFS's synctasks switch stacks); a gfapi client can have it with
# with_leak_check.  The engine's VM tests and the host tests look for our
# leaks too (docs/reliability.md).  gfr_sanitizer_env holds
# that environment as env(1) arguments: `env "${gfr_sanitizer_env[@]}" CMD &`
# leaves CMD's own pid in $! (a backgrounded function would leave a
# subshell's).
gfr_sanitizer_runtime=$(ldd "${GFR_BUILDDIR:?}/rpc-transport-rdma/.libs/rdma.so" 2>/dev/null |
	awk '/libasan/ { print $3 }')
gfr_sanitizer_env=()
[ -z "$gfr_sanitizer_runtime" ] || gfr_sanitizer_env=(LD_PRELOAD="$gfr_sanitizer_runtime"
	ASAN_OPTIONS="log_path=$GFR_GLUSTER_LOGS/sanitizer:detect_leaks=0:fast_unwind_on_malloc=0"
	UBSAN_OPTIONS="log_path=$GFR_GLUSTER_LOGS/ubsan:print_stacktrace=1")
with_sanitizers() {
	env "${gfr_sanitizer_env[@]}" "$@"
}

# rails_brick NAME PORT: brick NAME on PORT offering both rails of the
# test fabric (transport.rdma.rails auto and both rail addresses),
# listening on every address as glusterd's bricks do.  After gluster_setup
# and fabric_rails_up.
rails_brick() {
	brick_bind=0.0.0.0 brick_start "$1" rdma "$2" "transport.rdma.rails auto" \
		"transport.rdma.rail-addresses $GFR_SERVER_ADDR,$GFR_SERVER_ADDR2"
}

# rails_mount NAME PORT MOUNTPOINT LOG: a FUSE mount of brick NAME with
# transport.rdma.rails auto (its volfile NAME/client.vol), logging to LOG.
rails_mount() {
	client_volfile "$1" rdma "$2" "transport.rdma.rails auto" >"$GFR_GLUSTER_RUN/$1/client.vol" &&
		fuse_mount "$3" "$4" "$GFR_GLUSTER_RUN/$1/client.vol"
}

# rails_start NAME PORT MOUNTPOINT LOG: the setup of a multi-rail test
# through FUSE: GlusterFS's run directories, the fabric's second rail,
# brick NAME on PORT offering both rails (rails_brick), and a FUSE mount
# of it at MOUNTPOINT with rails, logging to LOG (emptied first, so that
# its lines are this run's alone); rails_pid is the mount's process.  1,
# with what failed said, on any failure.
rails_start() {
	rails_pid=
	gluster_setup && fabric_rails_up && rails_brick "$1" "$2" || return 1
	rm -f "$4"
	rails_mount "$1" "$2" "$3" "$4" || { echo "gluster-lib: the FUSE mount of $1 failed"; return 1; }
	rails_pid=$(pgrep -f "glusterfs -f $GFR_GLUSTER_RUN/$1/client.vol" | head -n 1)
}

# rails_diagnose NAME LOG PID: what a multi-rail test shows when it
# fails: the end of the FUSE mount's LOG and of brick NAME's log, and
# gfr-stat of the mount's process PID ("": none yet).
rails_diagnose() {
	tail -n 60 "$2"
	tail -n 30 "$GFR_GLUSTER_LOGS/$1-brick.log"
	[ -z "$3" ] || "${GFR_BUILDDIR:?}/tools/gfr-stat" "$3"
}

# rails_teardown NAME MOUNTPOINT: unmounts MOUNTPOINT (lazily when it is
# busy) and stops brick NAME, whatever state a test left them in.
rails_teardown() {
	umount "$2" 2>/dev/null || umount -l "$2" 2>/dev/null
	brick_stop "$1"
}

# fuse_mount MOUNTPOINT LOG VOLFILE [OPTION...]: stock glusterfs mounts
# VOLFILE at MOUNTPOINT (made if need be) with --direct-io-mode=enable, so
# that every read reaches the brick, and the OPTIONs, logging to LOG; then
# waits up to 20 s for the mount to answer.  1, with a message naming LOG,
# when it does not.
fuse_mount() {
	local mnt=$1 log=$2 vol=$3 i
	shift 3
	mkdir -p "$mnt"
	with_sanitizers glusterfs -f "$vol" --direct-io-mode=enable "$@" -l "$log" "$mnt" ||
		{ echo "gluster-lib: glusterfs could not mount $vol (log: $log)"; return 1; }
	for i in $(seq 100); do
		mountpoint -q "$mnt" && stat "$mnt" >/dev/null 2>&1 &&
			grep -q "^glusterfs.* $mnt fuse.glusterfs" /proc/mounts && return 0
		sleep 0.2
	done
	echo "gluster-lib: no glusterfs mount at $mnt after 20 s (log: $log)"
	return 1
}

# with_leak_check CMD [ARG...]: with_sanitizers with LeakSanitizer on, for
# a gfapi program that ends with glfs_fini; its reports go to
# $GFR_GLUSTER_LOGS/lsan.PID and it exits 23 when it wrote one.  Judge them
# with rdma_leak_verdict.  GlusterFS leaves allocations of its own to exit
# (under glfs_new, glfs_set_volfile and glfs_init; figures in
# docs/reliability.md), and rdma.so's init runs inside glfs_init, so a
# suppression could not hide them without hiding ours.
with_leak_check() {
	rm -f "$GFR_GLUSTER_LOGS"/lsan.*
	[ -n "$gfr_sanitizer_runtime" ] || { "$@"; return; }
	env "${gfr_sanitizer_env[@]}" \
		ASAN_OPTIONS="log_path=$GFR_GLUSTER_LOGS/lsan:detect_leaks=1:exitcode=23:fast_unwind_on_malloc=0:malloc_context_size=40" \
		"$@"
}

# rdma_leak_verdict WHO RC: fails (returns 1, printing why) when the
# program with_leak_check ran exited with RC for a sanitizer report that
# is not only GlusterFS's own leaks: an ASan error, or a leak with a frame
# in rdma.so (its sources, or rdma.so itself when unsymbolized).
rdma_leak_verdict() {
	local who=$1 rc=$2 top reports
	top=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
	reports=$(ls "$GFR_GLUSTER_LOGS"/lsan.* 2>/dev/null)
	[ "$rc" = 0 ] && [ -z "$reports" ] && return 0
	if [ "$rc" != 23 ] && [ "$rc" != 0 ]; then
		echo "$who: exit status $rc"
		return 1
	fi
	[ -n "$reports" ] || { echo "$who: exit status 23 without a sanitizer report"; return 1; }
	if grep -q -E 'ERROR: AddressSanitizer|runtime error' $reports; then
		cat $reports
		echo "$who: a sanitizer error (above)"
		return 1
	fi
	awk -v src1="$top/lib/" -v src2="$top/rpc-transport-rdma/" '
		/^(Direct|Indirect) leak of/ { block = $0 "\n"; ours = 0; inblock = 1; next }
		inblock && /^$/ { if (ours) { printf "%s", block; found++ } inblock = 0; next }
		inblock { block = block $0 "\n"
			if (index($0, src1) || index($0, src2) || index($0, "/rdma.so+")) ours = 1 }
		/^SUMMARY/ { summary = $0 }
		END { if (inblock && ours) { printf "%s", block; found++ }
			print "leaks with a frame in rdma.so: " found + 0 "; " summary
			exit found > 0 }' $reports | sed "s/^/$who: /"
	[ "${PIPESTATUS[0]}" = 0 ] || { echo "$who: rdma.so leaked (above)"; return 1; }
}

gluster_transportdir() {
	sed -n 's/^glusterfs_transportdir = //p' "${GFR_BUILDDIR:?}/Makefile"
}

# With GFR_HOSTS=1 (fabric-lib.sh: perf/compare-gluster --hosts) the
# bricks run on GFR_PEER, their directories, volfiles, pid files and logs
# under GFR_PEER_GLUSTER_RUN there (default /var/tmp/gfr-gluster-peer, on a
# filesystem that holds trusted.* xattrs), and GlusterFS on both hosts has
# rdma.so installed (the glusterfs-rdma package) in place of the VM's
# overlay.
GFR_PEER_GLUSTER_RUN=${GFR_PEER_GLUSTER_RUN:-/var/tmp/gfr-gluster-peer}
# brick_root: where the bricks' directories are, on the host that runs them.
brick_root() { if hosts_mode; then echo "$GFR_PEER_GLUSTER_RUN"; else echo "$GFR_GLUSTER_RUN"; fi; }

# gluster_setup: the tmpfs and the plugin overlay (idempotent); with
# GFR_HOSTS=1, a check that both hosts have rdma.so.
gluster_setup() {
	local tdir plugin=${GFR_BUILDDIR:?}/rpc-transport-rdma/.libs/rdma.so
	tdir=$(gluster_transportdir)
	[ -n "$tdir" ] && [ -f "$tdir/socket.so" ] ||
		{ echo "gluster-lib: no GlusterFS transport directory with socket.so ('$tdir')"; return 1; }
	if hosts_mode; then
		[ -f "$tdir/rdma.so" ] ||
			{ echo "gluster-lib: no $tdir/rdma.so on this host: install the glusterfs-rdma package"; return 1; }
		peer_run test -f "$tdir/rdma.so" ||
			{ echo "gluster-lib: no $tdir/rdma.so on $GFR_PEER: install the glusterfs-rdma package there"; return 1; }
		mkdir -p "$GFR_GLUSTER_RUN" "$GFR_GLUSTER_LOGS"
		return
	fi
	[ -f "$plugin" ] || { echo "gluster-lib: $plugin is not built"; return 1; }
	if ! mountpoint -q "$GFR_GLUSTER_RUN"; then
		mkdir -p "$GFR_GLUSTER_RUN" && mount -t tmpfs -o size=2g tmpfs "$GFR_GLUSTER_RUN" || return 1
	fi
	mkdir -p "$GFR_GLUSTER_RUN/transports" "$GFR_GLUSTER_LOGS"
	if ! cmp -s "$plugin" "$GFR_GLUSTER_RUN/transports/rdma.so"; then
		cp "$tdir"/socket.so "$plugin" "$GFR_GLUSTER_RUN/transports/" || return 1
	fi
	if ! mountpoint -q "$tdir"; then
		mount --bind "$GFR_GLUSTER_RUN/transports" "$tdir" || return 1
	fi
	modprobe fuse 2>/dev/null
	return 0
}

# brick_volfile NAME TRANSPORT PORT [OPTION-LINE...]: the server volfile of
# brick NAME (volume name NAME, subvolume NAME-posix) on stdout.  It admits
# every address (auth.addr.NAME-posix.allow *) unless an OPTION-LINE sets
# an auth.addr option itself.  With brick_iot=N set, performance/io-threads
# (thread-count N) sits between posix and the server, as in every brick
# graph glusterd makes: it takes the name NAME-posix that clients ask for,
# and posix becomes NAME-store.
# With brick_bind=ADDR set, the rdma listener binds ADDR (0.0.0.0: every
# address, as a brick of glusterd's does) instead of GFR_SERVER_ADDR.
brick_volfile() {
	local name=$1 transport=$2 port=$3 line allow="    option auth.addr.$1-posix.allow *"
	local store=$1-posix
	shift 3
	for line in "$@"; do case $line in auth.addr.*) allow="" ;; esac; done
	[ -z "${brick_iot:-}" ] || store=$name-store
	cat <<VOL
volume $store
    type storage/posix
    option directory $(brick_root)/$name/brick
    option mandate-attribute off
end-volume

VOL
	[ -z "${brick_iot:-}" ] || cat <<VOL
volume $name-posix
    type performance/io-threads
    option thread-count $brick_iot
    subvolumes $store
end-volume

VOL
	cat <<VOL
volume $name-server
    type protocol/server
    option transport-type $transport
    option transport.rdma.listen-port $port
    option transport.rdma.bind-address ${brick_bind:-$GFR_SERVER_ADDR}
    option transport.socket.listen-port $((port + 1))
    option transport.socket.bind-address $GFR_SERVER_ADDR
    option transport.address-family inet
VOL
	[ -n "$allow" ] && echo "$allow"
	for line in "$@"; do echo "    option $line"; done
	cat <<VOL
    subvolumes $name-posix
end-volume
VOL
}

# client_volfile NAME TRANSPORT PORT [OPTION-LINE...]: a client volfile for
# brick NAME (tcp uses PORT + 1, see brick_volfile).
client_volfile() {
	local name=$1 transport=$2 port=$3 line
	shift 3
	[ "$transport" = tcp ] && port=$((port + 1))
	cat <<VOL
volume $name-client
    type protocol/client
    option transport-type $transport
    option remote-host $GFR_SERVER_ADDR
    option remote-port $port
    option remote-subvolume $name-posix
VOL
	for line in "$@"; do echo "    option $line"; done
	echo "end-volume"
}

# serve_with_write_behind NAME TRANSPORT PORT [OPTION-LINE...]: brick_start,
# then NAME's client volfile with performance/write-behind on top in
# $GFR_GLUSTER_RUN/NAME/client.vol: every client graph glusterd makes has
# it, so sequential writes are in flight together as they are for a user.
serve_with_write_behind() {
	brick_start "$@" || return 1
	{
		client_volfile "$@"
		cat <<VOL
volume $1-write-behind
    type performance/write-behind
    subvolumes $1-client
end-volume
VOL
	} >"$GFR_GLUSTER_RUN/$1/client.vol"
}

# brick_start NAME TRANSPORT PORT [OPTION-LINE...]: starts glusterfsd for
# brick NAME and waits until it listens.  Log: $GFR_GLUSTER_LOGS/NAME-brick.log
brick_start() {
	hosts_mode && { peer_brick_start "$@"; return; }
	local name=$1 transport=$2 port=$3 dir=$GFR_GLUSTER_RUN/$1 i
	local log=$GFR_GLUSTER_LOGS/$1-brick.log seen
	local listening="listening for RDMA connections on ${brick_bind:-$GFR_SERVER_ADDR}:$port"
	mkdir -p "$dir/brick"
	brick_volfile "$@" >"$dir/server.vol"
	# what an earlier brick of this name logged (the log is appended to)
	seen=$(grep -c "$listening" "$log" 2>/dev/null)
	with_sanitizers glusterfsd -f "$dir/server.vol" -p "$dir/brick.pid" -l "$log" -L INFO || {
		echo "gluster-lib: glusterfsd for $name failed to start"
		cat "$log"
		return 1
	}
	for i in $(seq 100); do
		case $transport in
		tcp) ss -ltn | grep -q "$GFR_SERVER_ADDR:$((port + 1)) " && return 0 ;;
		*) [ "$(grep -c "$listening" "$log" 2>/dev/null)" -gt "${seen:-0}" ] && return 0 ;;
		esac
		sleep 0.2
	done
	echo "gluster-lib: brick $name is not listening after 20 s"
	cat "$GFR_GLUSTER_LOGS/$name-brick.log"
	return 1
}

# peer_brick_start NAME TRANSPORT PORT [OPTION-LINE...]: brick_start on the
# peer (GFR_HOSTS=1); its log stays there, and is shown when it fails.
peer_brick_start() {
	local name=$1 transport=$2 port=$3 dir=$GFR_PEER_GLUSTER_RUN/$1 i
	mkdir -p "$GFR_GLUSTER_RUN/$name" # the client's volfile, here
	brick_volfile "$@" | peer_run sh -c "mkdir -p $dir/brick && cat >$dir/server.vol" &&
		peer_run glusterfsd -f "$dir/server.vol" -p "$dir/brick.pid" -l "$dir/brick.log" -L INFO || {
		echo "gluster-lib: glusterfsd for $name failed to start on $GFR_PEER"
		peer_run cat "$dir/brick.log"
		return 1
	}
	for i in $(seq 100); do
		case $transport in
		tcp) peer_run ss -ltn | grep -q "$GFR_SERVER_ADDR:$((port + 1)) " && return 0 ;;
		*) peer_run grep -q "listening for RDMA connections on $GFR_SERVER_ADDR:$port" "$dir/brick.log" &&
			return 0 ;;
		esac
		sleep 0.2
	done
	echo "gluster-lib: brick $name on $GFR_PEER is not listening after 20 s"
	peer_run cat "$dir/brick.log"
	return 1
}

brick_pid() {
	if hosts_mode; then
		peer_run cat "$GFR_PEER_GLUSTER_RUN/$1/brick.pid" 2>/dev/null
	else
		cat "$GFR_GLUSTER_RUN/$1/brick.pid" 2>/dev/null
	fi
}

# brick_stop NAME [SIGNAL]: stops the brick and waits for it to exit.
brick_stop() {
	local pid i
	pid=$(brick_pid "$1") || return 0
	if hosts_mode; then
		peer_run kill -"${2:-TERM}" "$pid" 2>/dev/null
		for i in $(seq 150); do
			peer_run kill -0 "$pid" 2>/dev/null || return 0
			sleep 0.2
		done
		echo "gluster-lib: brick $1 (pid $pid) on $GFR_PEER did not exit; killing it"
		peer_run kill -KILL "$pid" 2>/dev/null
		return
	fi
	kill -"${2:-TERM}" "$pid" 2>/dev/null
	for i in $(seq 150); do
		kill -0 "$pid" 2>/dev/null || return 0
		sleep 0.2
	done
	echo "gluster-lib: brick $1 (pid $pid) did not exit; killing it"
	kill -KILL "$pid" 2>/dev/null
}

# brick_remove NAME: brick_stop, then its directory goes, where the brick
# ran (the peer with GFR_HOSTS=1) and here.
brick_remove() {
	brick_stop "$1"
	hosts_mode && peer_run rm -rf "$GFR_PEER_GLUSTER_RUN/$1"
	rm -rf "${GFR_GLUSTER_RUN:?}/$1"
}

# A gfapi-io hold client (tests/gluster/gfapi-io.c) driven step by step, for
# measurements around its step: hold_start DIR VOLFILE VOLNAME [OPTION...]
# mounts it with DIR as its sync directory and sets hold_pid once it is
# ready; hold_step DIR lets it do its step and waits until it is done;
# hold_finish DIR stops it and fails if it failed.  Output: DIR/out.
# Each wait gives up after 300 s.  From an ASan build it runs as the
# GlusterFS programs do (with_sanitizers: no leak check, since glfs_fini
# leaves GlusterFS's own allocations; t-gfapi judges the gfapi client's
# leaks with rdma_leak_verdict).
hold_wait_for() {
	local i
	for i in $(seq 3000); do
		[ -e "$1" ] && return 0
		kill -0 "$hold_pid" 2>/dev/null || break
		sleep 0.1
	done
	echo "gluster-lib: the hold client (pid $hold_pid) did not create $1:"
	cat "$(dirname "$1")/out"
	return 1
}
hold_start() {
	local dir=$1
	shift
	rm -rf "$dir"
	mkdir -p "$dir"
	env "${gfr_sanitizer_env[@]}" "$GFR_BUILDDIR/tests/gluster/gfapi-io" hold "$1" "$2" \
		--sync-dir "$dir" "${@:3}" >"$dir/out" 2>&1 &
	hold_pid=$!
	hold_wait_for "$dir/ready"
}
hold_step() { touch "$1/go" && hold_wait_for "$1/done"; }
# hold_stat_snap DIR WHEN BRICK TRANSPORT: over rdma, gfr-stat --json of
# the hold client and of brick BRICK into DIR/client-WHEN.json and
# DIR/brick-WHEN.json (perf/stage-breakdown reads them); nothing over tcp.
hold_stat_snap() {
	[ "$4" = rdma ] || return 0
	"$GFR_BUILDDIR/tools/gfr-stat" --json "$hold_pid" >"$1/client-$2.json" &&
		"$GFR_BUILDDIR/tools/gfr-stat" --json "$(brick_pid "$3")" >"$1/brick-$2.json"
}
hold_finish() {
	touch "$1/stop"
	wait "$hold_pid" || { echo "gluster-lib: the hold client failed:"; cat "$1/out"; return 1; }
}

# hold_traced_step DIR VOLFILE NAME TRANSPORT LOG [OPTION...]: one step of a
# fresh hold client of brick NAME (hold_start with --no-fini, OPTIONs and
# --log LOG), with hold_stat_snap's snapshots before and after it over
# rdma; stopped either way, and failing with the step named when any part
# failed.  Its output stays in DIR (DIR/out, DIR/*.json).
hold_traced_step() {
	local d=$1 vol=$2 name=$3 t=$4 log=$5 ok=0
	shift 5
	hold_start "$d" "$vol" "$name" --no-fini "$@" --log "$log" || return 1
	hold_stat_snap "$d" before "$name" "$t" && hold_step "$d" &&
		hold_stat_snap "$d" after "$name" "$t" || ok=1
	hold_finish "$d" || return 1
	[ $ok = 0 ] || { echo "gluster-lib: the $t hold step in $d or its gfr-stat failed"; return 1; }
}

# plugin_errors LOGFILE: prints the plugin's error lines (its message ids).
plugin_errors() {
	grep -E '\] E \[MSGID: 1030[0-9][0-9]\]' "$1"
}
