# Helpers for the soft-RoCE tests (sourced; bash).  The fabric is the one
# fabric-up builds: $fabric_dev0 on veth0 (10.99.0.1), $fabric_dev1 on veth1
# (10.99.0.2), of provider $fabric_provider (GFR_PROVIDER: rxe, the
# default, or siw).
#
# The counters prove that a test's traffic really crossed the veth pair:
# without the policy routing of fabric-up, rdma_cm would resolve the peer as
# local and both ends would use rxe0's internal loopback, and a test would
# pass without ever touching the fabric.

#
# With GFR_HOSTS=1 the benchmarks run on your own fabric instead
# (docs/performance.md, "Running the comparisons on your fabric"): this
# host is the client, on GFR_CLIENT_DEVICE at GFR_CLIENT_ADDR; the servers
# run on GFR_PEER (an ssh destination), on GFR_SERVER_DEVICE at
# GFR_SERVER_ADDR, through GFR_PEER_RUN (default `ssh -o BatchMode=yes
# GFR_PEER`: a command that runs the one shell command line it is given
# there); GFR_GID_INDEX is perftest's -x (empty on InfiniBand).
fabric_lib_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
hosts_mode() { [ "${GFR_HOSTS:-0}" = 1 ]; }
if hosts_mode; then
	: "${GFR_PEER:?GFR_HOSTS=1 needs GFR_PEER, the host of the server side}"
	: "${GFR_SERVER_ADDR:?GFR_HOSTS=1 needs GFR_SERVER_ADDR, the address of the peer on the RDMA network}"
	: "${GFR_CLIENT_ADDR:?GFR_HOSTS=1 needs GFR_CLIENT_ADDR, the address of this host on the RDMA network}"
	: "${GFR_SERVER_DEVICE:?GFR_HOSTS=1 needs GFR_SERVER_DEVICE, the RDMA device of the peer}"
	: "${GFR_CLIENT_DEVICE:?GFR_HOSTS=1 needs GFR_CLIENT_DEVICE, the RDMA device of this host}"
	GFR_PEER_RUN=${GFR_PEER_RUN:-ssh -o BatchMode=yes $GFR_PEER}
	GFR_GID_INDEX=${GFR_GID_INDEX-}
	fabric_dev0=$GFR_SERVER_DEVICE
	fabric_dev1=$GFR_CLIENT_DEVICE
else
	GFR_SERVER_ADDR=10.99.0.1
	GFR_CLIENT_ADDR=10.99.0.2
	GFR_GID_INDEX=1 # the IPv4-mapped GID rxe derives from the veth address (RoCE v2)
	fabric_provider=${GFR_PROVIDER:-rxe}
	fabric_dev0=${fabric_provider}0
	fabric_dev1=${fabric_provider}1
fi

# peer_argv CMD [ARG...]: sets peer_cmd to the words that run CMD on the
# server side: CMD itself in the VM; with GFR_HOSTS=1, GFR_PEER_RUN and
# CMD's words quoted for the remote shell.  Run "${peer_cmd[@]}" (also in
# the background: $! is then the process that stands for CMD, killing it
# ends CMD in the VM, and a remote CMD by its own timeout).
peer_argv() {
	if hosts_mode; then
		read -r -a peer_cmd <<<"$GFR_PEER_RUN"
		peer_cmd+=("$(printf '%q ' "$@")")
	else
		peer_cmd=("$@")
	fi
}

# peer_run CMD [ARG...]: runs CMD on the server side (peer_argv), in the
# foreground, with this call's standard input and output.
peer_run() {
	local peer_cmd
	peer_argv "$@"
	"${peer_cmd[@]}"
}

# fabric_vm_name: where this runs, for a benchmark's header: "2 vCPUs
# under TCG", "1 CPU under User-Mode Linux", or with GFR_HOSTS=1 the two
# hosts and their devices.
fabric_vm_name() {
	if hosts_mode; then
		echo "hosts $(hostname) ($GFR_CLIENT_DEVICE) -> $GFR_PEER ($GFR_SERVER_DEVICE)"
		return
	fi
	case "${GFR_VM:-tcg}" in
	uml) echo "$(nproc) CPU under User-Mode Linux" ;;
	*) echo "$(nproc) vCPUs under TCG" ;;
	esac
}

net_counter() { # IFACE rx_packets|tx_packets
	cat "/sys/class/net/$1/statistics/$2"
}

# rdma_counter DEV sent_pkts|rcvd_pkts: a port counter of DEV, or nothing
# when its provider keeps none (siw has no hw_counters).  Read through
# gfr-stat --port-counters, the one reader of them (lib/stats/port-counters.c),
# of $GFR_BUILDDIR (default: the tree's build).
rdma_counter() {
	"${GFR_BUILDDIR:-$fabric_lib_dir/../../build}/tools/gfr-stat" --port-counters "$1" 2>/dev/null |
		awk -v name="$2" '$2 == 1 && $3 == name { print $4 }'
	return 0
}

# fabric_is_rnic DEV: whether DEV reports itself an iWARP RNIC (its node
# type, not its name), where tests expect iWARP's rules.
fabric_is_rnic() {
	grep -q RNIC "/sys/class/infiniband/$1/node_type"
}

# fabric_has_counters: whether the provider counts packets per port.
fabric_has_counters() {
	[ -n "$(rdma_counter "$fabric_dev0" sent_pkts)" ]
}

# port_sent DEV: packets DEV's port 1 sent, from its provider's counters
# or the standard IB port counters; nothing when it keeps neither.
port_sent() {
	local c=/sys/class/infiniband/$1/ports/1/counters/port_xmit_packets n
	n=$(rdma_counter "$1" sent_pkts)
	if [ -n "$n" ]; then
		echo "$n"
	elif [ -r "$c" ]; then
		cat "$c"
	fi
}

fabric_snapshot() { # prints the counters as one line, for fabric_check
	local devices=""
	if hosts_mode; then
		port_sent "$GFR_CLIENT_DEVICE"
		return
	fi
	fabric_has_counters &&
		devices=" $(rdma_counter "$fabric_dev0" sent_pkts) $(rdma_counter "$fabric_dev1" rcvd_pkts)"
	fabric_has_counters &&
		devices+=" $(rdma_counter "$fabric_dev1" sent_pkts) $(rdma_counter "$fabric_dev0" rcvd_pkts)"
	echo "$(net_counter veth0 tx_packets) $(net_counter veth1 rx_packets)" \
		"$(net_counter veth1 tx_packets) $(net_counter veth0 rx_packets)" \
		"$(net_counter lo tx_packets)$devices"
}

# fabric_check BEFORE MIN_PACKETS [MAX_LO]: fails unless at least MIN_PACKETS
# went each way over the veth pair, and through both devices where the
# provider counts packets (rxe; siw keeps no counters, and its traffic is
# the veth's TCP), since the snapshot BEFORE, and no more than MAX_LO
# packets (default 0) through lo: traffic looped back locally is thousands
# of packets.
fabric_check() {
	local -a before after
	if hosts_mode; then
		# Two hosts: no veth or lo to watch; this host's device must have
		# sent the traffic, where it counts packets.
		local now
		now=$(fabric_snapshot)
		[ -n "$1" ] && [ -n "$now" ] ||
			{ echo "fabric_check: $GFR_CLIENT_DEVICE counts no packets: not checked"; return 0; }
		echo "fabric_check: $GFR_CLIENT_DEVICE sent $((now - $1)) packets"
		[ $((now - $1)) -ge "$2" ] || { echo "fabric_check: expected at least $2"; return 1; }
		return 0
	fi
	read -r -a before <<<"$1"
	read -r -a after <<<"$(fabric_snapshot)"
	local min=$2 max_lo=${3:-0}
	local names=("veth0 tx" "veth1 rx" "veth1 tx" "veth0 rx" "lo tx"
		"$fabric_dev0 sent" "$fabric_dev1 rcvd" "$fabric_dev1 sent" "$fabric_dev0 rcvd")
	local i delta ok=0
	for i in "${!after[@]}"; do
		delta=$((after[i] - before[i]))
		if [ "$i" = 4 ]; then
			if [ "$delta" -gt "$max_lo" ]; then
				echo "fabric_check: $delta packets went through lo: the traffic did not cross the veth pair"
				ok=1
			fi
		elif [ "$delta" -lt "$min" ]; then
			echo "fabric_check: only $delta packets on ${names[i]}, expected at least $min"
			ok=1
		fi
	done
	echo "fabric_check: veth0->veth1 $((after[0] - before[0])) packets," \
		"veth1->veth0 $((after[2] - before[2])), lo $((after[4] - before[4]))"
	return "$ok"
}

# qps_of PID: the QPs process PID holds.  `rdma resource show` tags a
# resource with the thread that created it (an engine's CM thread, not the
# process), so a QP counts when its pid is any thread of PID.
qps_of() {
	local tid n=0
	for tid in $(rdma resource show qp | sed -n 's/.* pid \([0-9][0-9]*\) .*/\1/p'); do
		[ -e "/proc/$1/task/$tid" ] && n=$((n + 1))
	done
	echo "$n"
}

# spawn_logged FILE CMD...: starts CMD in the background with its output in
# FILE ($! is its pid), FILE emptied first by this shell.  CMD's own
# redirection empties it only once the child runs, and a wait_for_output
# before that would read what an earlier process left in FILE (seen: a
# client started against a server not listening yet, and refused, because
# the previous server's "listening" was still there, in t-engine-bulk in a
# loaded VM).
spawn_logged() {
	local file=$1
	shift
	: >"$file"
	"$@" >"$file" 2>&1 &
}

# wait_for_output FILE PATTERN SECONDS: waits until FILE has a line matching
# PATTERN (a server announcing it listens).  Start the process that writes
# FILE with spawn_logged when FILE may hold an earlier process's output.
wait_for_output() {
	local i
	for ((i = 0; i < $3 * 10; i++)); do
		grep -q "$2" "$1" 2>/dev/null && return 0
		sleep 0.1
	done
	echo "wait_for_output: '$2' did not appear in $1 within $3 s"
	return 1
}

# pair_init: the directory run_pair keeps its logs in ($pair_dir), removed
# on exit (trap pair_cleanup EXIT, which also kills a server left running;
# a test with more to clean up calls pair_cleanup from its own trap).
pair_init() {
	pair_dir=$(mktemp -d)
	pair_server=
	trap pair_cleanup EXIT
}

pair_cleanup() {
	[ -z "${pair_server:-}" ] || kill "$pair_server" 2>/dev/null
	rm -rf "$pair_dir"
}

# pair_stuck NAME PID...: says where each process is stuck: every thread's
# kernel wait channel and stack top (a hang inside the provider shows
# there), the QPs the kernel still has, and the kernel's last words.
pair_stuck() {
	local name=$1 pid task
	shift
	for pid in "$@"; do
		[ -d "/proc/$pid" ] || continue
		echo "$name: process $pid ($(cat "/proc/$pid/comm" 2>/dev/null)) is stuck; its threads:"
		for task in /proc/"$pid"/task/*; do
			echo "  $(cat "$task/comm" 2>/dev/null) $(cat "$task/wchan" 2>/dev/null)" \
				"$(head -n 3 "$task/stack" 2>/dev/null | awk '{ printf "%s ", $2 }')"
		done
	done
	echo "$name: QPs the kernel still has:"
	rdma resource show qp 2>&1 | head -n 20
	echo "$name: the kernel's last messages:"
	dmesg | tail -n 15
}

# wait_bounded PID SECONDS: waits for the child PID to end, at most SECONDS;
# its exit status, or 124 when it is still running.  (An ended child stays
# a zombie until waited for: its state, not its existence, says it ended.)
wait_bounded() {
	local pid=$1 i state
	for ((i = 0; i < $2 * 2; i++)); do
		state=$(sed 's/.*) //' "/proc/$pid/stat" 2>/dev/null | cut -d' ' -f1)
		if [ -z "$state" ] || [ "$state" = Z ]; then
			wait "$pid"
			return
		fi
		sleep 0.5
	done
	return 124
}

# rdma_delete_bounded DEVICE SECONDS: rdma link delete DEVICE, which the
# kernel finishes only once every process has closed the device (rxe
# cannot take it away from one), waited for at most SECONDS.  On a
# timeout it says which processes still hold an RDMA device and where
# their threads wait, in the kernel (pair_stuck) and in user space (gdb),
# and returns 1: before the kernel's hung-task watchdog (120 s) stops the
# VM with nothing but the deleting task's name.
rdma_delete_bounded() {
	local pid p holders=
	rdma link delete "$1" &
	pid=$!
	wait_bounded "$pid" "$2"
	case $? in
	0) return 0 ;;
	124) ;;
	*) echo "rdma link delete $1 failed"; return 1 ;;
	esac
	for p in /proc/[0-9]*; do
		ls -l "$p/fd" 2>/dev/null | grep -q /dev/infiniband/uverbs && holders="$holders ${p#/proc/}"
	done
	echo "rdma link delete $1 has not returned after $2 s; what holds an RDMA device:$holders"
	pair_stuck "rdma link delete $1" $pid $holders
	for p in $holders; do
		echo "--- user-space stacks of $p ($(cat "/proc/$p/comm" 2>/dev/null))"
		timeout 60 gdb -p "$p" -batch -ex "thread apply all bt 12" 2>/dev/null |
			grep -E '^(Thread|#)' | head -n 150
	done
	return 1
}

# run_pair [--client-status N] [--kill-server] NAME SECONDS SERVER... -- CLIENT...
# The engine tests' and benchmarks' one way to run a server and a client:
# starts SERVER (its output in $pair_dir/server) and waits until it says
# "listening" (60 s), runs CLIENT for at most SECONDS (its output in
# $pair_dir/client), then waits for the server to end, for at most SECONDS
# again, or kills it with --kill-server (a server that serves on and on, or
# that is refused).  A process that overstays is killed after pair_stuck
# has said where it hung.  The client must exit 0, or N with
# --client-status.  On a failure both logs are printed, then a line that
# starts with NAME and says what failed; returns 1.  The logs stay until
# the next run_pair.  After pair_init.
run_pair() {
	local want=0 kill_server=0 name limit rc client
	local -a server_cmd=() client_cmd=()
	while :; do
		case "$1" in
		--client-status) want=$2; shift 2 ;;
		--kill-server) kill_server=1; shift ;;
		*) break ;;
		esac
	done
	name=$1 limit=$2
	shift 2
	while [ $# -gt 0 ] && [ "$1" != -- ]; do server_cmd+=("$1"); shift; done
	shift
	client_cmd=("$@")
	spawn_logged "$pair_dir/server" "${server_cmd[@]}"
	pair_server=$!
	if ! wait_for_output "$pair_dir/server" listening 60; then
		cat "$pair_dir/server"
		echo "$name: the server did not listen: ${server_cmd[*]}"
		return 1
	fi
	"${client_cmd[@]}" >"$pair_dir/client" 2>&1 &
	client=$!
	wait_bounded "$client" "$limit"
	rc=$?
	if [ "$rc" = 124 ]; then
		pair_stuck "$name" "$client" "$pair_server"
		kill -9 "$client" 2>/dev/null
		wait "$client" 2>/dev/null
	fi
	# A client that timed out may have left the server waiting for
	# connections that never end: stop it, so that both logs are shown.
	if [ "$kill_server" = 1 ] || [ "$rc" = 124 ]; then
		kill "$pair_server" 2>/dev/null
		wait "$pair_server" 2>/dev/null
	elif ! wait_bounded "$pair_server" "$limit"; then
		[ -d "/proc/$pair_server" ] && pair_stuck "$name" "$pair_server"
		kill -9 "$pair_server" 2>/dev/null
		wait "$pair_server" 2>/dev/null
		cat "$pair_dir/client" "$pair_dir/server"
		echo "$name: the server failed or did not end within $limit s: ${server_cmd[*]}"
		return 1
	fi
	pair_server=
	if [ "$rc" != "$want" ]; then
		cat "$pair_dir/client" "$pair_dir/server"
		echo "$name: the client exited $rc$([ "$rc" = 124 ] && echo " (timed out after $limit s)"), expected $want: ${client_cmd[*]}"
		return 1
	fi
}

# fabric_routes: what fabric-up configures on the links and a link flap
# (ip link set down) takes away: the permanent neighbour entries, the
# routes of tables 100 and 101 and the IPv6 addresses.  Idempotent.
#
# Permanent neighbour entries: with ARP left to run, rdma_cm's address
# resolution on this kernel misses the neighbour update and completes only
# when its timeout expires (measured: rdma_resolve_addr with a 10 s timeout
# took the whole 10 s although ARP had resolved at once).
#
# IPv6 addresses (no DAD: usable at once): rdma_cm over IPv6 works on one
# device (fd99::1 to fd99::1); across the veth the server's kernel CM
# rejects the request (status 28, no listener callback): the IPv4 routing
# rests on accept_local, which IPv6 lacks (docs/softroce.md).
fabric_routes() {
	ip neigh replace 10.99.0.2 lladdr "$(cat /sys/class/net/veth1/address)" \
		dev veth0 nud permanent &&
		ip neigh replace 10.99.0.1 lladdr "$(cat /sys/class/net/veth0/address)" \
			dev veth1 nud permanent &&
		ip route replace 10.99.0.2/32 dev veth0 src 10.99.0.1 table 100 &&
		ip route replace 10.99.0.1/32 dev veth1 src 10.99.0.2 table 101 &&
		ip -6 addr replace fd99::1/128 dev veth0 nodad &&
		ip -6 addr replace fd99::2/128 dev veth1 nodad
}

# fabric_port_active DEV: waits up to 5 s for DEV's port 1 to be ACTIVE;
# 0, or 1 with its state said (fabric-up, fabric_rails_up).
fabric_port_active() {
	local state i
	for ((i = 0; i < 50; i++)); do
		state=$(cat "/sys/class/infiniband/$1/ports/1/state" 2>/dev/null)
		case "$state" in *ACTIVE*) return 0 ;; esac
		sleep 0.1
	done
	echo "$1 port 1 is not ACTIVE (state: ${state:-none})"
	return 1
}

# The second rail (docs/multi-rail.md, "Test fabric"): veth2 (10.99.1.1)
# and veth3 (10.99.1.2), device $fabric_dev2 on veth2 and $fabric_dev3 on
# veth3, routed as fabric-up routes the first pair, so that traffic
# between the two addresses crosses veth2/veth3 and no other link.  Only
# the tests of several rails build it (fabric_rails_up), and they take it
# down again on exit (fabric_rails_down): every other test expects one
# device on each end.  Not with GFR_HOSTS=1.
GFR_SERVER_ADDR2=10.99.1.1
GFR_CLIENT_ADDR2=10.99.1.2
fabric_dev2=${fabric_provider:-rxe}2
fabric_dev3=${fabric_provider:-rxe}3

# fabric_rails_routes: the second rail's neighbour entries and its routes
# in tables 102 and 103 (as fabric_routes for the first).  Idempotent.
fabric_rails_routes() {
	ip neigh replace 10.99.1.2 lladdr "$(cat /sys/class/net/veth3/address)" \
		dev veth2 nud permanent &&
		ip neigh replace 10.99.1.1 lladdr "$(cat /sys/class/net/veth2/address)" \
			dev veth3 nud permanent &&
		ip route replace 10.99.1.2/32 dev veth2 src 10.99.1.1 table 102 &&
		ip route replace 10.99.1.1/32 dev veth3 src 10.99.1.2 table 103
}

# fabric_rails_up: builds the second rail and waits for both its ports to
# be ACTIVE (5 s); 0, or 1 with what failed said.
fabric_rails_up() {
	local dev
	if hosts_mode; then
		echo "fabric_rails_up: not with GFR_HOSTS=1 (the hosts' own rails are theirs)"
		return 1
	fi
	ip link show veth2 >/dev/null 2>&1 ||
		ip link add veth2 type veth peer name veth3 || { echo "fabric_rails_up: cannot create veth2/veth3"; return 1; }
	ip addr replace 10.99.1.1/24 dev veth2 && ip addr replace 10.99.1.2/24 dev veth3 ||
		{ echo "fabric_rails_up: cannot address veth2/veth3"; return 1; }
	for dev in veth2 veth3; do
		ip link set "$dev" mtu 9000 && ip link set "$dev" up ||
			{ echo "fabric_rails_up: cannot bring $dev up with MTU 9000"; return 1; }
		echo 1 >"/proc/sys/net/ipv4/conf/$dev/accept_local"
		echo 0 >"/proc/sys/net/ipv4/conf/$dev/rp_filter"
	done
	ip rule show | grep -q "lookup 102" || ip rule add pref 12 iif lo to 10.99.1.2 lookup 102
	ip rule show | grep -q "lookup 103" || ip rule add pref 13 iif lo to 10.99.1.1 lookup 103
	fabric_rails_routes || { echo "fabric_rails_up: cannot set the second rail's routes"; return 1; }
	[ -e "/sys/class/infiniband/$fabric_dev2" ] ||
		rdma link add "$fabric_dev2" type "$fabric_provider" netdev veth2 ||
		{ echo "fabric_rails_up: cannot create $fabric_dev2 on veth2"; return 1; }
	[ -e "/sys/class/infiniband/$fabric_dev3" ] ||
		rdma link add "$fabric_dev3" type "$fabric_provider" netdev veth3 ||
		{ echo "fabric_rails_up: cannot create $fabric_dev3 on veth3"; return 1; }
	for dev in "$fabric_dev2" "$fabric_dev3"; do
		fabric_port_active "$dev" || { echo "fabric_rails_up: $dev is not usable"; return 1; }
	done
}

# fabric_rails_tx [BEFORE]: the packets veth0..veth3 sent, one line; with
# BEFORE (such a line), those sent since.
fabric_rails_tx() {
	local v i=0 before=(${1:-0 0 0 0})
	for v in veth0 veth1 veth2 veth3; do
		printf '%s ' $(($(net_counter "$v" tx_packets) - before[i]))
		i=$((i + 1))
	done
	echo
}

# fabric_rails_counters: "vethN TX_BYTES TX_PACKETS" for veth0..3, and
# fabric_links: "DEVICE/PORT NETDEV" for each RDMA link: perf/rail-split's
# input.
fabric_rails_counters() {
	local v
	for v in veth0 veth1 veth2 veth3; do
		echo "$v $(net_counter "$v" tx_bytes) $(net_counter "$v" tx_packets)"
	done
}
fabric_links() {
	rdma link show | awk '{ for (i = 1; i < NF; i++) if ($i == "netdev") print $2, $(i + 1) }'
}

# fabric_rails_cut_after PACKETS [BEFORE]: cuts the client's second rail,
# deleting its device ($fabric_dev3) with rdma link delete (not ip link set
# down: Linux 6.1 rxe's requester loops on a downed link, docs/softroce.md),
# once its netdev veth3 has sent PACKETS packets more than BEFORE
# (fabric_rails_tx's counts): so the cut comes while the rail carries
# calls, at no set time.  Says when, or that it never came (after about
# 300 s); run it in the background.
fabric_rails_cut_after() {
	local sent
	sent=$(fabric_rails_wait_tx "$@") || { echo "cut: veth3 never carried $1 packets"; return 1; }
	echo "cut: $fabric_dev3 deleted after veth3 sent $sent packets"
	rdma link delete "$fabric_dev3" || echo "cut: rdma link delete $fabric_dev3 failed"
}

# rails_call_pair NAME PORT SECONDS [CLIENT-OPTION...]: run_pair of
# engine-test's server and client, both with rails=auto and the server
# offering both rail addresses of the test fabric: the client makes calls
# with replies (up to 64 KiB, 16 at a time) until $pair_dir/stop exists;
# the server waits as long as the run.  After pair_init and
# fabric_rails_up.
rails_call_pair() {
	local name=$1 port=$2 limit=$3 prog=${GFR_BUILDDIR:?}/tests/softroce/engine-test
	shift 3
	run_pair "$name" "$limit" "$prog" server 0.0.0.0 "$port" -r -t "$limit" -o rails=auto \
		-o "rail-addresses=$GFR_SERVER_ADDR,$GFR_SERVER_ADDR2" -- \
		"$prog" client "$GFR_SERVER_ADDR" "$port" "$GFR_CLIENT_ADDR" -r -n 400000 \
		-S "$pair_dir/stop" -b 16 -s 65536 -o rails=auto "$@"
}

# rails_calls_once: after rails_call_pair (or any run_pair of engine-test's
# server and a client with -r), how many calls the client had
# answered with every byte right, once none ended in error and the server
# ran each once and ended once, in order; otherwise what failed, and 1.
rails_calls_once() {
	local n
	n=$(sed -n 's/.* \([0-9]*\) requests with replies .* verified both ways, 0 bad.*/\1/p' "$pair_dir/client")
	[ -n "$n" ] || { echo "not every request was answered right"; return 1; }
	grep -q "ended with" "$pair_dir/client" && { echo "requests ended with an error"; return 1; }
	grep -q "echoed $n messages, 0 ended badly" "$pair_dir/server" ||
		{ echo "the server did not run each of the $n calls once, or its connection did not end once, in order"; return 1; }
	echo "$n"
}

# fabric_rails_wait_tx PACKETS [BEFORE]: until veth3 has sent PACKETS
# packets more than BEFORE (fabric_rails_tx's counts; default: none), at
# most about 300 s; prints how many it has sent, or fails.
fabric_rails_wait_tx() {
	local before=${2:-0 0 0 0} tx
	for _ in $(seq 1 6000); do
		tx=($(fabric_rails_tx "$before"))
		[ "${tx[3]}" -ge "$1" ] && { echo "${tx[3]}"; return 0; }
		sleep 0.05
	done
	return 1
}

# wait_lines FILE PATTERN N SECONDS: until FILE has N lines matching
# PATTERN (grep -E); fails when it has not within SECONDS.
wait_lines() {
	local i
	for ((i = 0; i < $4 * 10; i++)); do
		[ "$(grep -c -E -- "$2" "$1" 2>/dev/null)" -ge "$3" ] && return 0
		sleep 0.1
	done
	return 1
}

# fabric_rails_down: removes what fabric_rails_up built (whatever of it is
# there), leaving the fabric as fabric-up made it.
fabric_rails_down() {
	rdma link delete "$fabric_dev2" 2>/dev/null
	rdma link delete "$fabric_dev3" 2>/dev/null
	ip rule del pref 12 2>/dev/null
	ip rule del pref 13 2>/dev/null
	ip route flush table 102 2>/dev/null
	ip route flush table 103 2>/dev/null
	ip link del veth2 2>/dev/null
	return 0
}

# fabric_repair: leaves the fabric as fabric-up made it, whatever a fault
# test did to it (for its EXIT trap, and before the tests after it).  A
# test sets fabric_recreate=1 before a link flap: with traffic in flight a
# flap can leave rxe (Linux 6.1) unable to carry CM traffic, so both
# devices are then deleted and made anew.
fabric_recreate=
fabric_repair() {
	if [ -n "$fabric_recreate" ]; then
		rdma link delete "$fabric_dev0"
		rdma link delete "$fabric_dev1"
		fabric_recreate=
	fi
	ip link set veth0 up 2>/dev/null
	ip link set veth1 up 2>/dev/null
	[ -e "/sys/class/infiniband/$fabric_dev0" ] ||
		rdma link add "$fabric_dev0" type "$fabric_provider" netdev veth0
	[ -e "/sys/class/infiniband/$fabric_dev1" ] ||
		rdma link add "$fabric_dev1" type "$fabric_provider" netdev veth1
	fabric_routes
}

# For tests that go on after a failure (set test_name first): fail WHY
# prints and records it; failures_summary repeats them all at the end,
# where CI's excerpt of the log shows them, and returns 1 if there was
# any.  Tests that stop at their first failure define a fail of their own.
failures=()
fail() {
	echo "$test_name: FAILED: $*"
	failures+=("$*")
}
failures_summary() {
	local why
	for why in "${failures[@]}"; do echo "$test_name: FAILED: $why"; done
	echo "$test_name: ${#failures[@]} failure(s)"
	[ ${#failures[@]} = 0 ]
}

# rdma_resources: `rdma resource show`'s per-device counts (PDs, CQs, QPs,
# CM ids, MRs, contexts, SRQs), without the device index, which changes
# when a device is re-created.
rdma_resources() {
	rdma resource show | sed 's/^[0-9]*: //' | sort
}

# wait_port_active DEV: until DEV's port is ACTIVE (it was just created or
# its link came up); 1 if not within 10 s.
wait_port_active() {
	local i
	for ((i = 0; i < 100; i++)); do
		grep -q ACTIVE "/sys/class/infiniband/$1/ports/1/state" 2>/dev/null && return 0
		sleep 0.1
	done
	return 1
}

# sanitized_engine_test: the ASan+UBSan build's engine-test, for servers
# that must show any sanitizer report (LeakSanitizer on): $GFR_BUILDDIR's
# own when it is that build, else $GFR_BUILDDIR-asan's (scripts/check
# builds it beside ./build).  Prints nothing when there is none.
sanitized_engine_test() {
	local prog
	for prog in "$GFR_BUILDDIR/tests/softroce/engine-test" "$GFR_BUILDDIR-asan/tests/softroce/engine-test"; do
		if [ -x "$prog" ] && ldd "$prog" | grep -q libasan; then
			echo "$prog"
			return
		fi
	done
}

# server_log_verdict LOG: an engine-test server's log once it stopped:
# what the engine logged, by count (numbers as N); its summary line, with
# the connections it names as never ended, and no sanitizer report, or a
# failure.
server_log_verdict() {
	echo "$test_name: what $1 logged, by count:"
	grep 'gfr-rdma: ' "$1" | sed 's/^.*gfr-rdma: //; s/[0-9][0-9]*/N/g' | sort | uniq -c
	grep -E '^engine-test: server: (connection [0-9]+ .*never reported|still there)' "$1"
	grep -E '^engine-test: server: stopped' "$1" || { cat "$1"; fail "no summary from the server ($1)"; }
	if grep -q -E 'ERROR: (Address|Leak)Sanitizer|runtime error' "$1"; then
		cat "$1"
		fail "a sanitizer report in $1"
	fi
}

# resources_back_to BASELINE: rdma_resources must come back to BASELINE
# (taken before the test) within 10 s, or a failure shows both.
resources_back_to() {
	local deadline=$((SECONDS + 10))
	while [ "$(rdma_resources)" != "$1" ] && ((SECONDS < deadline)); do
		sleep 0.1
	done
	if [ "$(rdma_resources)" = "$1" ]; then
		echo "$test_name: rdma resource show back to its baseline:" $1
		return 0
	fi
	echo "before:" $1
	echo "after:" $(rdma_resources)
	fail "rdma resource show is not back to what it was before the test"
}
