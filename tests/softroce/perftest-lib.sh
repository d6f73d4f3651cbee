# perftest helpers (sourced; bash, after fabric-lib.sh).  Every run pairs a
# server on $fabric_dev0 with a client on $fabric_dev1: in the VM rxe0 and
# rxe1, so the traffic crosses the veth pair like the project's own tests;
# with GFR_HOSTS=1 the server runs on the peer (peer_run).  perftest's GID
# index is GFR_GID_INDEX.

# perftest_run TOOL PORT ARGS...: runs TOOL as server and client with ARGS,
# prints the client's result line (the first line of figures under the
# "#bytes" header).
# perftest times its run in CPU cycles, calibrated against gettimeofday
# when it starts; when the calibration's fit is poor (r^2 < 0.9, seen
# under TCG and User-Mode Linux on a busy host) it takes 0 MHz and prints a
# bandwidth of 0.00 or a latency of inf, which measures nothing (under
# User-Mode Linux, more often than not).  Such a run is made again, up to
# five runs in all, on ports of its own (11000, 12000, 13000 and 14000 plus
# PORT's last three digits), and says so on stderr; the fifth one's line
# is printed whatever it holds.
perftest_run() {
	local tool=$1 port=$2 try line rc
	shift 2
	for try in 1 2 3 4 5; do
		line=$(perftest_once "$tool" "$port" "$@")
		rc=$?
		[ "$rc" = 3 ] || break
		echo "perftest_run: $tool $*: its cycle clock did not calibrate (r^2 < 0.9), run $try of 5" >&2
		port=$((10000 + try * 1000 + port % 1000))
	done
	[ "$rc" = 0 ] || [ "$rc" = 3 ] || return 1
	echo "$line"
}

# perftest_once TOOL PORT ARGS...: perftest_run's single run: prints the
# result line; returns 1 when the run failed, 3 when its clock did not
# calibrate.
perftest_once() {
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
	# perftest's stderr shares the file: the first figures under the header
	awk '/#bytes/ { under = 1; next } under && $1 ~ /^[0-9]/ { print; exit }' "$out"
	rc=0
	grep -qF 'Correlation coefficient r^2' "$out" && rc=3
	rm -f "$out" "$out.server"
	return "$rc"
}

# perftest_lat_typical LINE: t_typical (µs) of a latency result line.
perftest_lat_typical() { awk '{ print $5 }' <<<"$1"; }

# perftest_bw_average LINE: average bandwidth (MB/s) of a bandwidth result line.
perftest_bw_average() { awk '{ print $4 }' <<<"$1"; }
