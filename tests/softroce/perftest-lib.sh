# perftest helpers (sourced; bash, after fabric-lib.sh).  Every run pairs a
# server on $fabric_dev0 with a client on $fabric_dev1: in the VM rxe0 and
# rxe1, so the traffic crosses the veth pair like the project's own tests;
# with GFR_HOSTS=1 the server runs on the peer (peer_run).  perftest's GID
# index is GFR_GID_INDEX.

# perftest_run TOOL PORT ARGS...: runs TOOL as server and client with ARGS,
# prints the client's result line (the line under the "#bytes" header).
perftest_run() {
	local tool=$1 port=$2
	shift 2
	local out server rc i gid=() peer_cmd
	[ -n "$GFR_GID_INDEX" ] && gid=(-x "$GFR_GID_INDEX")
	out=$(mktemp)
	peer_argv timeout 120 "$tool" -d "$fabric_dev0" "${gid[@]}" -F -p "$port" "$@"
	"${peer_cmd[@]}" >"$out.server" 2>&1 &
	server=$!
	# The client tries to connect once: wait for the server's listener
	# (a fixed second was not always enough under TCG), up to 30 s.
	for ((i = 0; i < 300; i++)); do
		kill -0 "$server" 2>/dev/null || break
		[ -n "$(peer_run ss -Hltn "sport = :$port")" ] && break
		sleep 0.1
	done
	timeout 120 "$tool" -d "$fabric_dev1" "${gid[@]}" -F -p "$port" "$@" "$GFR_SERVER_ADDR" >"$out" 2>&1
	rc=$?
	# a server whose client failed would wait for it until its timeout
	[ "$rc" = 0 ] || kill "$server" 2>/dev/null
	wait "$server" || rc=1
	if [ "$rc" != 0 ]; then
		echo "perftest_run: $tool $* failed (exit $rc):" >&2
		cat "$out" "$out.server" >&2
		rm -f "$out" "$out.server"
		return 1
	fi
	awk '/#bytes/ { getline; print; exit }' "$out"
	rm -f "$out" "$out.server"
}

# perftest_lat_typical LINE: t_typical (µs) of a latency result line.
perftest_lat_typical() { awk '{ print $5 }' <<<"$1"; }

# perftest_bw_average LINE: average bandwidth (MB/s) of a bandwidth result line.
perftest_bw_average() { awk '{ print $4 }' <<<"$1"; }
